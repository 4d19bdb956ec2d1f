package simulate

import (
	"container/heap"
	"context"
	"fmt"
	"log/slog"
	"time"

	"github.com/matchgate/matchgate/matcher"
	"github.com/matchgate/matchgate/matcher/engine"
	"github.com/matchgate/matchgate/matcher/ledger"
	"github.com/matchgate/matchgate/matcher/pool"
)

// passes are what every kind of run shares: the virtual clock, the memory
// record and what it publishes, the engines of the partitions and when
// each is woken, the players' and providers' timed actions, and the
// figures every run keeps. collect reads what a pass or an action
// published (the run's own take).
type passes struct {
	ctx     context.Context
	sc      *Scenario
	clock   *vclock
	led     *ledger.Memory
	box     *inbox
	acc     *accum
	collect func() error
	// outboxed counts the events published since the outbox was last
	// emptied; nextForget is when the record next forgets (zero: never).
	outboxed   int
	nextForget time.Time
	engines    []*engine.Engine
	// byPart is each partition's engine, by index; wakeAt when each is to
	// pass for a wake (unix ns, 0: none), the earliest of them nextWake.
	byPart   map[matcher.Partition]int
	wakeAt   []int64
	nextWake int64
	// began is when each engine's last pass began (unix ns).
	began []int64
	timed timedHeap
	seq   int64
	// live are the tickets not resolved yet, by id.
	live map[string]*live
}

func newPasses(ctx context.Context, sc *Scenario) passes {
	clock := &vclock{now: sc.Start}
	return passes{ctx: ctx, sc: sc, clock: clock, led: ledger.NewMemoryAt(clock.Now), box: &inbox{}, acc: newAccum(),
		nextForget: sc.Start.Add(forgetEvery), byPart: map[matcher.Partition]int{}, live: map[string]*live{}}
}

// deps are the stores of a run: the memory pool and record, the run's
// clock, every player present.
func (s *passes) deps() engine.Deps {
	return engine.Deps{
		Pool: statsless{pool.NewMemory(s.clock.Now, 0)}, Ledger: s.led, Notifier: s.box, Presence: present{s.clock},
		Now: s.clock.Now, Logger: slog.New(slog.DiscardHandler),
	}
}

// start builds the Service of q on deps, its wakes the run's, and an
// engine for each of q's partitions.
func (s *passes) start(q matcher.QueueConfig, deps engine.Deps) (*engine.Service, error) {
	svc, err := engine.NewService(engine.ServiceConfig{Queues: matcher.Config{Queues: []matcher.QueueConfig{q}}, Deps: deps, Wake: s.woken})
	if err != nil {
		return nil, err
	}
	noSleep := func(context.Context, time.Duration) error { return nil }
	for _, region := range q.Regions {
		for _, p := range q.Pools(region) {
			e, err := engine.NewEngine(engine.EngineConfig{Queue: q, Region: region, Shard: p.Shard, Deps: deps, Sleep: noSleep})
			if err != nil {
				return nil, err
			}
			s.add(p, e)
		}
	}
	return svc, nil
}

// A run has the record forget, every forgetEvery of virtual time, the
// tickets and matches that became final forgetAfter before: without it the
// record holds every ticket of the stream, most of a long run's memory.
const (
	forgetEvery = time.Minute
	forgetAfter = 5 * time.Minute
)

// forget has the record forget, once every forgetEvery of virtual time,
// what became final forgetAfter before t: the run's figures were taken
// from the events as they came, and the record needs to keep only what is
// live and what a late player's action may still name.
func (s *passes) forget(t time.Time) {
	if !s.nextForget.IsZero() && !t.Before(s.nextForget) {
		s.led.Forget(t.Add(-forgetAfter))
		s.nextForget = t.Add(forgetEvery)
	}
}

// outboxBatch is how many events the record's outbox gathers before a run
// empties it.
const outboxBatch = 1 << 14

// emptyOutbox counts n events published and empties the record's outbox,
// as the relay would, once it holds outboxBatch, so that the run's memory
// does not grow with it.
func (s *passes) emptyOutbox(n int) error {
	s.outboxed += n
	if s.outboxed < outboxBatch {
		return nil
	}
	s.outboxed = 0
	if _, err := s.led.DrainOutbox(s.ctx, 0, 1<<30, func([]matcher.Event) error { return nil }); err != nil {
		return fmt.Errorf("empty the outbox: %w", err)
	}
	return nil
}

// add is the engine of one partition.
func (s *passes) add(partition matcher.Partition, e *engine.Engine) {
	s.byPart[partition] = len(s.engines)
	s.engines = append(s.engines, e)
	s.wakeAt = append(s.wakeAt, 0)
	s.began = append(s.began, 0)
}

// woken is the Service's Wake: the partition's engine passes after the
// scenario's wake delay, unless a pass for a wake is due by then.
func (s *passes) woken(p matcher.Partition) {
	if i, ok := s.byPart[p]; ok && !s.sc.Wake.Off {
		s.wakeEngine(i)
	}
}

// wakeEngine asks engine i for a pass after the wake delay, and, as the
// engine's Run, no sooner than its queue's passGap after its last pass
// began unless that pass left a backlog.
func (s *passes) wakeEngine(i int) {
	at := s.clock.now.Add(s.sc.Wake.Delay).UnixNano()
	if e := s.engines[i]; !e.Backlog() {
		at = max(at, s.began[i]+int64(e.Queue().PassGap))
	}
	if s.wakeAt[i] == 0 || at < s.wakeAt[i] {
		s.wakeAt[i] = at
	}
	if s.nextWake == 0 || at < s.nextWake {
		s.nextWake = at
	}
}

// wakePass runs the passes of the engines woken for now.
func (s *passes) wakePass() error {
	now := s.clock.now.UnixNano()
	s.nextWake = 0
	for i, at := range s.wakeAt {
		if at == 0 {
			continue
		}
		if at <= now {
			s.wakeAt[i] = 0
			if err := s.passOne(i); err != nil {
				return err
			}
			continue
		}
		if s.nextWake == 0 || at < s.nextWake {
			s.nextWake = at
		}
	}
	// The passes may have woken engines again (a requeue): keep the
	// earliest.
	for _, at := range s.wakeAt {
		if at != 0 && (s.nextWake == 0 || at < s.nextWake) {
			s.nextWake = at
		}
	}
	return nil
}

// joined books a join the Service took: its ticket live, the hour's
// count, the player's cancel to come.
func (s *passes) joined(t matcher.Ticket, a *arrival) {
	hr := t.EnqueuedAt.Hour()
	s.live[t.ID] = &live{user: a.user, enq: t.EnqueuedAt, joinHr: hr, arrival: a}
	s.acc.joined(hr)
	if a.cancelAfter > 0 {
		s.schedule(timed{at: t.EnqueuedAt.Add(a.cancelAfter).UnixNano(), kind: evCancel, user: a.user, ticket: t.ID})
	}
}

func (s *passes) schedule(t timed) {
	s.seq++
	t.seq = s.seq
	heap.Push(&s.timed, t)
}

// pass is every engine's Tick at one instant, in partition order.
func (s *passes) pass() error {
	for i := range s.engines {
		if err := s.passOne(i); err != nil {
			return err
		}
	}
	return nil
}

// passOne is one engine's pass. As the engine's Run, a pass that formed
// matches wakes the engine again: its next pass comes after the wake
// delay, which stands for the time a pass takes; with wakes off, at once
// (a bounded number of times).
func (s *passes) passOne(i int) error {
	for range maxRepeats {
		s.began[i] = s.clock.now.UnixNano()
		res, err := s.engines[i].Tick(s.ctx)
		s.acc.passes++
		if err != nil {
			// The stores are in memory: a failed pass is a fault of the
			// run, counted and reported.
			s.acc.passErrors++
		}
		if err := s.collect(); err != nil {
			return err
		}
		if err != nil || res.Matches == 0 {
			return nil
		}
		if !s.sc.Wake.Off {
			s.wakeEngine(i)
			return nil
		}
	}
	return nil
}
