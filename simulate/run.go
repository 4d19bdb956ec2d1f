package simulate

import (
	"container/heap"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"time"

	"github.com/google/uuid"

	"github.com/matchgate/matchgate/matcher"
	"github.com/matchgate/matchgate/matcher/engine"
	"github.com/matchgate/matchgate/matcher/pool"
)

// Options are what a run reports while it goes.
type Options struct {
	// Progress, when set, is told of each config's progress now and then
	// (about every virtual minute) and once at its end.
	Progress func(Progress)
	// Played, when set, is told of every match played (READY), in the
	// order the run sees them.
	Played func(config string, m matcher.Match)
}

// Progress is where a run is.
type Progress struct {
	Config       string
	Index, Of    int           // this config's place among the scenario's, from 0
	Virtual, End time.Duration // virtual time run of the config, and its stream's duration
	Joins        int64
	Done         bool // the config's run ended
}

// runMu serializes runs: the ticket and match ids are drawn from the
// process-wide uuid source, seeded for the run so that its output is the
// same byte for byte (the pool breaks ties of equal enqueue times by
// ticket id, and a pass closes the accept windows of one instant in match
// id order).
var runMu sync.Mutex

// Run simulates every config of the scenario, one after the other, on the
// same arrival stream, and reports each. sc must be normalized
// (ReadScenario, ParseScenario or Normalize). It sets the process's uuid source
// for its duration (and gives crypto/rand back after): nothing else in
// the process should draw uuids meanwhile.
func Run(ctx context.Context, sc *Scenario, opt Options) (*Report, error) {
	runMu.Lock()
	defer runMu.Unlock()
	defer uuid.SetRand(nil)
	rep := &Report{Scenario: summarize(sc)}
	for i := range sc.Configs {
		r, err := runConfig(ctx, sc, i, opt)
		if err != nil {
			return nil, fmt.Errorf("simulate %s: %w", sc.Configs[i].Name, err)
		}
		rep.Configs = append(rep.Configs, *r)
	}
	return rep, nil
}

// vclock is the virtual clock every store, the Service and the engines
// read (ARCHITECTURE.md §7.6): it moves only when the run moves it.
type vclock struct{ now time.Time }

func (c *vclock) Now() time.Time { return c.now }

// present is the Presence of a run: every waiting player has a live
// socket (no ghosts are simulated yet).
type present struct{ c *vclock }

func (p present) LastSeen(_ context.Context, users []string) (map[string]time.Time, error) {
	out := make(map[string]time.Time, len(users))
	for _, u := range users {
		out[u] = p.c.now
	}
	return out, nil
}

// statsless is the memory pool without its recent-wait statistics: they
// feed only the Service's explain and estimates, which a run never asks.
// The run keeps figures of its own.
type statsless struct{ *pool.Memory }

func (statsless) RecordOutcomes(context.Context, string, []time.Time, []pool.Outcome) error {
	return nil
}

// inbox is the Notifier: the events the Service and the engines publish,
// taken after each step of the run. A pass closes accept windows
// concurrently, so their events come in no fixed order; what the run
// counts from them does not depend on it.
type inbox struct {
	mu     sync.Mutex
	events []matcher.Event
	spare  []matcher.Event
}

func (b *inbox) Deliver(_ context.Context, events []matcher.Event) {
	b.mu.Lock()
	b.events = append(b.events, events...)
	b.mu.Unlock()
}

// take returns the events delivered since the last take; they are valid
// until the next.
func (b *inbox) take() []matcher.Event {
	b.mu.Lock()
	defer b.mu.Unlock()
	evs := b.events
	b.events, b.spare = b.spare[:0], evs
	return evs
}

// live is a ticket not resolved yet: waiting, or seated in a match
// waiting for its accepts.
type live struct {
	user    string
	enq     time.Time
	joinHr  int
	arrival *arrival
}

// Kinds of timed events.
const (
	evCancel uint8 = iota
	evAccept
	evDecline
)

// timed is a player's action at a virtual instant.
type timed struct {
	at     int64 // unix ns
	seq    int64 // scheduling order, for a stable order of one instant
	kind   uint8
	user   string
	ticket string
	match  string
}

type timedHeap []timed

func (h timedHeap) Len() int { return len(h) }
func (h timedHeap) Less(i, j int) bool {
	if h[i].at != h[j].at {
		return h[i].at < h[j].at
	}
	return h[i].seq < h[j].seq
}
func (h timedHeap) Swap(i, j int) { h[i], h[j] = h[j], h[i] }
func (h *timedHeap) Push(x any)   { *h = append(*h, x.(timed)) }
func (h *timedHeap) Pop() any {
	old := *h
	x := old[len(old)-1]
	*h = old[:len(old)-1]
	return x
}

// maxRepeats bounds the passes of one engine at one instant with wakes
// off (see passOne).
const maxRepeats = 16

// sim is the run of one config.
type sim struct {
	q   matcher.QueueConfig
	svc *engine.Service
	passes
	pending  int // matches waiting for accepts
	onPlayed func(matcher.Match)
}

func runConfig(ctx context.Context, sc *Scenario, idx int, opt Options) (*ConfigReport, error) {
	c := sc.Configs[idx]
	q := c.Queue
	// The same ids for every config's run of one seed: a config's report
	// does not depend on which configs ran before it.
	var seed [32]byte
	for i := range 8 {
		seed[i] = byte(sc.Seed >> (8 * i))
	}
	uuid.SetRand(rand.NewChaCha8(seed))
	if q.Kind == matcher.KindProvider {
		return runProviderConfig(ctx, sc, idx, opt) // providers.go
	}

	s := &sim{passes: newPasses(ctx, sc), q: q}
	s.collect = s.take
	svc, err := s.start(q, s.deps())
	if err != nil {
		return nil, err
	}
	s.svc = svc
	if opt.Played != nil {
		s.onPlayed = func(m matcher.Match) { opt.Played(c.Name, m) }
	}
	if err := s.loop(opt, idx); err != nil {
		return nil, err
	}
	return s.acc.report(c.Name, sc), nil
}

// loop moves the clock from event to event: the next arrival, the next
// player's action, the next pass (every Tick of the queue, as the engine's
// Run passes; skipped while nothing waits and no match waits for accepts,
// when a pass has nothing to do). Joins arrive during Duration; after it,
// passes go on until every ticket is resolved, which its deadline bounds.
func (s *sim) loop(opt Options, idx int) error {
	st := newStream(s.sc)
	start, tick := s.sc.Start, s.q.Tick
	end := start.Add(s.sc.Duration)
	// Every ticket is resolved by its deadline (a dissolved match puts its
	// players back with theirs), a pending match by its accept window.
	hardEnd := end.Add(s.q.Deadline + 2*s.q.AcceptWindow + 10*tick)
	nextPass := start.Add(tick)
	reportEvery := time.Minute
	nextReport := start.Add(reportEvery)
	cfg := s.sc.Configs[idx].Name
	progress := func(at time.Time, done bool) {
		if opt.Progress != nil {
			opt.Progress(Progress{Config: cfg, Index: idx, Of: len(s.sc.Configs), Virtual: min(at.Sub(start), s.sc.Duration),
				End: s.sc.Duration, Joins: s.acc.joins, Done: done})
		}
	}
	for {
		if err := s.ctx.Err(); err != nil {
			return err
		}
		a := st.peek()
		idle := len(s.live) == 0 && s.pending == 0
		if a == nil && idle {
			break // the stream ended and everything is resolved
		}
		if idle {
			// Nothing for a pass to do until the next arrival or action:
			// the next pass is the first of the tick grid after it.
			next := a.at
			if len(s.timed) > 0 && s.timed[0].at < next.UnixNano() {
				next = time.Unix(0, s.timed[0].at).UTC()
			}
			if next.After(nextPass) {
				k := (next.Sub(start) + tick - 1) / tick
				nextPass = start.Add(k * tick)
			}
		}
		// Of one instant: arrivals, then players' actions, then the passes
		// of wakes, then the tick's.
		t := nextPass
		kind := 3
		if s.nextWake != 0 && s.nextWake <= t.UnixNano() {
			t, kind = time.Unix(0, s.nextWake).UTC(), 2
		}
		if len(s.timed) > 0 && s.timed[0].at <= t.UnixNano() {
			t, kind = time.Unix(0, s.timed[0].at).UTC(), 1
		}
		if a != nil && !a.at.After(t) {
			t, kind = a.at, 0
		}
		if t.After(hardEnd) {
			break
		}
		for !t.Before(nextReport) && !nextReport.After(end) {
			progress(nextReport, false)
			nextReport = nextReport.Add(reportEvery)
		}
		s.forget(t)
		s.clock.now = t
		var err error
		switch kind {
		case 0:
			err = s.join(st.take())
		case 1:
			err = s.act(heap.Pop(&s.timed).(timed))
		case 2:
			err = s.wakePass()
		default:
			err = s.pass()
			nextPass = nextPass.Add(tick)
		}
		if err != nil {
			return err
		}
	}
	s.acc.waitingAtEnd = int64(len(s.live))
	progress(end, true)
	return nil
}

// join is an arrival: a join through the Service, as the gateway makes it.
func (s *sim) join(a *arrival) error {
	skill := a.skill
	t, err := s.svc.Join(s.ctx, matcher.JoinRequest{UserID: a.user, Queue: s.q.Name, Region: a.region, Skill: &skill})
	if err != nil {
		return fmt.Errorf("join %s at %s: %w", a.user, s.clock.now.Format(time.RFC3339Nano), err)
	}
	s.joined(t, a)
	return s.take()
}

// act is a player's cancel, accept or decline through the Service. One
// that comes too late (the ticket matched or resolved, the window closed)
// is refused by the Service as the gateway's would be, and changes
// nothing.
func (s *sim) act(t timed) error {
	var err error
	switch t.kind {
	case evCancel:
		if s.live[t.ticket] == nil {
			return nil // resolved already
		}
		_, err = s.svc.Cancel(s.ctx, t.user, t.ticket)
	case evAccept:
		_, err = s.svc.Accept(s.ctx, t.user, t.match)
	case evDecline:
		_, err = s.svc.Decline(s.ctx, t.user, t.match)
	}
	var me *matcher.Error
	if err != nil && !errors.As(err, &me) {
		return fmt.Errorf("player %s at %s: %w", t.user, s.clock.now.Format(time.RFC3339Nano), err)
	}
	if me != nil && me.Code == matcher.CodeUnavailable {
		return fmt.Errorf("player %s at %s: %w", t.user, s.clock.now.Format(time.RFC3339Nano), err)
	}
	return s.take()
}

// take reads what the last step published: matches formed, accepted and
// dissolved, tickets resolved. The record's outbox is emptied as the relay
// would, so that the run's memory does not grow with it.
func (s *sim) take() error {
	evs := s.box.take()
	for i := range evs {
		e := &evs[i]
		switch e.Kind {
		case matcher.EventTicketUpdated:
			s.ticketUpdated(e.Ticket)
		case matcher.EventMatchFound:
			if e.Match.State == matcher.MatchPendingAccept {
				s.pending++
				s.askAccepts(e.Match)
			} else {
				s.played(e.Match)
			}
		case matcher.EventMatchReady:
			s.pending--
			s.played(e.Match)
		case matcher.EventMatchDissolved:
			s.pending--
			s.acc.dissolved++
		}
	}
	return s.emptyOutbox(len(evs))
}

func (s *sim) ticketUpdated(t matcher.Ticket) {
	l := s.live[t.ID]
	if l == nil {
		return
	}
	switch t.Status {
	case matcher.StatusExpired:
		s.acc.resolved(l.joinHr, outExpired)
	case matcher.StatusCancelled:
		switch t.CancelReason {
		case matcher.ReasonUser:
			s.acc.resolved(l.joinHr, outCancelled)
		case matcher.ReasonDeclined:
			s.acc.resolved(l.joinHr, outDeclined)
		case matcher.ReasonAcceptTimeout:
			s.acc.resolved(l.joinHr, outAcceptTimeout)
		default: // heartbeat: none are simulated; counted if any
			s.acc.resolved(l.joinHr, outOther)
		}
	default:
		return // WAITING again, after a dissolved match
	}
	delete(s.live, t.ID)
}

// askAccepts schedules each player's answer to a match waiting for accepts.
func (s *sim) askAccepts(m matcher.Match) {
	for _, p := range m.Players {
		l := s.live[p.TicketID]
		if l == nil {
			continue
		}
		a := l.arrival
		ev := timed{at: m.CreatedAt.Add(a.replyAfter).UnixNano(), user: p.UserID, match: m.ID}
		switch a.reply {
		case replyAccept:
			ev.kind = evAccept
		case replyDecline:
			ev.kind = evDecline
		default:
			continue // silent: the window closes on them
		}
		s.schedule(ev)
	}
}

// played is a match that will be played: READY at once, or accepted by
// all.
func (s *sim) played(m matcher.Match) {
	s.acc.match(m)
	if s.onPlayed != nil {
		s.onPlayed(m)
	}
	for _, p := range m.Players {
		l := s.live[p.TicketID]
		if l == nil {
			continue
		}
		s.acc.seated(l.joinHr, m.CreatedAt.Sub(l.enq))
		delete(s.live, p.TicketID)
	}
}
