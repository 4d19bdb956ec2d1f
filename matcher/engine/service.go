package engine

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/google/uuid"
	"github.com/matchgate/matchgate/matcher"
	"github.com/matchgate/matchgate/provider"
)

// ServiceConfig configures the Service.
type ServiceConfig struct {
	Queues matcher.Config // normalized
	Deps
	// Wake asks the partition's engine (in this process or another) for a
	// pass now; nil waits for the next tick.
	Wake func(matcher.Partition)
	// History is how far back resolved tickets are included in UserState, so
	// a client that reconnects learns the outcome it missed. Default 10m.
	History time.Duration
	// CatchUp bounds UserState: at most this many live tickets and this
	// many resolved ones (the newest); TicketHistory pages the rest.
	// Default 10.
	CatchUp int
	// DefaultSkill is used (with estimated=true) when the caller has no
	// skill claim, and the skill service neither answers nor knows a last
	// skill. Default 50.
	DefaultSkill float64
	// Skill is asked, once at join, for the skill of a caller whose token
	// has none; nil: no skill service. The engine never asks it.
	Skill SkillSource
	// SkillTimeout bounds that question: slow counts as down. Default 300ms.
	SkillTimeout time.Duration
	// Reads, when set, answers the read-only questions, a ticket's GET and
	// the ticket history, from a replica of the record
	// (--postgres-replica-url); writes and the hello's catch-up stay on
	// Ledger. What the replica does not know (yet: it lags) or cannot
	// answer (it is down) is asked of Ledger.
	Reads RecordReads
	// Available, when set, is asked before a join writes anything: a
	// non-nil answer (Redis or the record is unreachable) refuses the join at
	// once with UNAVAILABLE instead of letting it hang or half-succeed.
	Available func() error
	// Banned, when set, is asked (without I/O: the process's ban list)
	// once a join's ticket is recorded: a user banned by then has the
	// ticket cancelled at once and is answered FORBIDDEN, so a join racing
	// a ban survives neither this check nor the ban's sweep (see
	// control.BanList).
	Banned func(userID string) bool
	// Admission admits the joins of the queues behind an admission queue
	// (gate.go); nil refuses them all with ADMISSION_REQUIRED.
	Admission AdmissionGate
}

// Service joins, cancels and answers status. It talks to the ledger and the
// pool directly: no extra hop between the edge and the matcher.
type Service struct {
	cfg   ServiceConfig
	qs    atomic.Pointer[queueSet]
	log   *slog.Logger
	stats statsCache
	// reads answers the read-only questions: the replica falling back to
	// the record, or the record.
	reads RecordReads
}

// queueSet is one configuration in force, swapped whole by SetQueues so a
// request sees either the old or the new queues, never a mix.
type queueSet struct {
	list   []matcher.QueueConfig
	byName map[string]*matcher.QueueConfig
}

// newQueueSet holds the matched queues of c; admission queues are the
// admission package's.
func newQueueSet(c matcher.Config) *queueSet {
	qs := &queueSet{byName: map[string]*matcher.QueueConfig{}}
	for _, q := range c.Queues {
		if q.Matched() {
			qs.list = append(qs.list, q)
		}
	}
	for i := range qs.list {
		qs.byName[qs.list[i].Name] = &qs.list[i]
	}
	return qs
}

// QueueList returns the queues in force.
func (s *Service) QueueList() []matcher.QueueConfig { return s.qs.Load().list }

// SetQueues puts a new (normalized) queue configuration in force at once:
// joins to a queue that is gone answer UNKNOWN_QUEUE, while tickets already
// waiting in it keep being served until they are resolved.
func (s *Service) SetQueues(c matcher.Config) { s.qs.Store(newQueueSet(c)) }

// NewService validates the configuration; it starts nothing.
// RecordReads is what the Service reads from a replica of the record: a
// matcher.Ledger on the replica's pool is one.
type RecordReads interface {
	Ticket(ctx context.Context, id string) (matcher.Ticket, error)
	Match(ctx context.Context, id string) (matcher.Match, error)
	UserTickets(ctx context.Context, userID string, before matcher.TicketCursor, limit int) (matcher.TicketPage, error)
}

func NewService(cfg ServiceConfig) (*Service, error) {
	if cfg.Pool == nil || cfg.Ledger == nil {
		return nil, errors.New("service: Pool and Ledger are required")
	}
	if len(cfg.Queues.Queues) == 0 {
		return nil, errors.New("service: no queues")
	}
	if cfg.CatchUp <= 0 {
		cfg.CatchUp = DefaultCatchUp
	}
	if cfg.History == 0 {
		cfg.History = 10 * time.Minute
	}
	if cfg.DefaultSkill == 0 {
		cfg.DefaultSkill = 50
	}
	if cfg.SkillTimeout == 0 {
		cfg.SkillTimeout = 300 * time.Millisecond
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.Wake == nil {
		cfg.Wake = func(matcher.Partition) {}
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	s := &Service{cfg: cfg, log: cfg.Logger, reads: cfg.Ledger}
	if cfg.Reads != nil {
		s.reads = replicaReads{replica: cfg.Reads, primary: cfg.Ledger, log: cfg.Logger}
	}
	s.SetQueues(cfg.Queues)
	return s, nil
}

// SkillSource is the external skill service (seed 001: "the skill API owns
// that"), asked once per join.
type SkillSource interface {
	Skill(ctx context.Context, userID string) (float64, error)
}

// Queue returns a queue's configuration.
func (s *Service) Queue(name string) (*matcher.QueueConfig, bool) {
	q, ok := s.qs.Load().byName[name]
	return q, ok
}

// Join records a WAITING ticket (the record first, then the pool) and wakes
// the partition's engine. A queue behind an admission queue first takes
// the user's token there (gate.go).
func (s *Service) Join(ctx context.Context, req matcher.JoinRequest) (matcher.Ticket, error) {
	q, ok := s.qs.Load().byName[req.Queue]
	if !ok {
		return matcher.Ticket{}, &matcher.Error{Code: matcher.CodeUnknownQueue, Message: fmt.Sprintf("no queue named %q", req.Queue)}
	}
	region := req.Region
	if region == "" && len(q.Regions) == 1 {
		region = q.Regions[0]
	}
	if !q.HasRegion(region) {
		return matcher.Ticket{}, matcher.Errorf(matcher.CodeBadRequest, "queue %s runs in regions %v, not %q", q.Name, q.Regions, region)
	}
	if req.UserID == "" {
		return matcher.Ticket{}, matcher.Errorf(matcher.CodeUnauthorized, "no user")
	}
	if s.cfg.Available != nil {
		if err := s.cfg.Available(); err != nil {
			return matcher.Ticket{}, matcher.WithCause(matcher.CodeUnavailable, "matchmaking is temporarily unavailable; retry shortly", err)
		}
	}
	activity := 0.0
	if req.Activity != nil {
		activity = *req.Activity
	}
	if (req.Skill != nil && (math.IsNaN(*req.Skill) || math.IsInf(*req.Skill, 0))) || math.IsNaN(activity) || math.IsInf(activity, 0) {
		return matcher.Ticket{}, matcher.Errorf(matcher.CodeBadRequest, "skill and activity must be finite numbers")
	}
	if q.Kind == matcher.KindProvider {
		if _, err := provider.PreferencesOf(req.Attributes); err != nil {
			return matcher.Ticket{}, matcher.Errorf(matcher.CodeBadRequest, "%v", err)
		}
	}
	// Only a queue with an accept step hands out cooldowns; the others skip
	// the read, a Redis round trip on every join.
	if q.AcceptWindow > 0 && q.DeclineCooldown > 0 {
		if wait, err := s.cfg.Pool.Cooldown(ctx, q.Name, req.UserID, s.cfg.Now()); err != nil {
			// A cooldown is a penalty, not a safety property: unknown is none.
			s.log.Warn("read join cooldown", "user", req.UserID, "err", err)
		} else if wait > 0 {
			return matcher.Ticket{}, &matcher.Error{Code: matcher.CodeCooldown, Retry: wait,
				Message: fmt.Sprintf("a match of %s was declined or not accepted; join again in %ds", q.Name, int(math.Ceil(wait.Seconds())))}
		}
	}
	if q.Admission != "" {
		return s.joinAdmitted(ctx, q, region, req, activity)
	}
	t, _, err := s.recordJoin(ctx, q, region, req, activity)
	return t, err
}

// recordJoin is the join once it is checked: the ticket recorded, then put in
// the pool. recorded reports that the record holds the ticket, whatever
// happened after.
func (s *Service) recordJoin(ctx context.Context, q *matcher.QueueConfig, region string, req matcher.JoinRequest, activity float64) (_ matcher.Ticket, recorded bool, _ error) {
	skill, estimated := s.cfg.DefaultSkill, true
	if req.Skill != nil {
		skill, estimated = *req.Skill, false
	} else if s.cfg.Skill != nil {
		skill, estimated = s.lookupSkill(ctx, req.UserID)
	}
	headStart := min(max(req.Priority, 0), q.PriorityCap).Truncate(time.Millisecond)
	// Millisecond precision: the pool keeps milliseconds, and the record and
	// the pool must agree on the original enqueue time.
	now := s.cfg.Now().UTC().Truncate(time.Millisecond)
	t := matcher.Ticket{
		ID: uuid.NewString(), UserID: req.UserID, Name: matcher.CleanName(req.Name), Queue: q.Name, Region: region,
		Status: matcher.StatusWaiting, Skill: skill, Estimated: estimated, Activity: activity, Attributes: req.Attributes,
		EnqueuedAt: now, HeadStart: headStart, Deadline: now.Add(q.Deadline), UpdatedAt: now, Version: 1,
	}
	t, err := s.cfg.Ledger.CreateTicket(ctx, t)
	if err != nil {
		var aq *matcher.AlreadyQueuedError
		if errors.As(err, &aq) {
			return aq.Existing, false, alreadyQueued(aq.Existing)
		}
		var am *matcher.AlreadyMatchedError
		if errors.As(err, &am) {
			// One live match at a time (README): accept or decline it first.
			return matcher.Ticket{}, false, &matcher.Error{Code: matcher.CodeAlreadyMatched, Message: "a match is waiting for your accept", MatchID: am.MatchID}
		}
		return matcher.Ticket{}, false, matcher.Unavailable(fmt.Errorf("join %s: record ticket: %w", q.Name, err))
	}
	if s.cfg.Banned != nil && s.cfg.Banned(t.UserID) {
		return matcher.Ticket{}, true, s.refuseBanned(ctx, t)
	}
	s.cfg.Metrics.joined(q.Name)
	part := q.PoolOf(t.UserID, t.Region)
	if _, err := s.cfg.Pool.Enqueue(ctx, part.String(), matcher.EntryOf(t), matcher.EntryTTL(now, t.Deadline), q.HeartbeatTimeout); err != nil {
		// The ticket is recorded; the reconciler adds it to the pool from the
		// record, so the join stands.
		s.log.Warn("enqueue after record failed; left to the reconciler", "ticket", t.ID, "err", err)
		return t, true, nil
	}
	s.cfg.Wake(part)
	return t, true, nil
}

// alreadyQueued answers the join of a user who already waits, with that
// ticket.
func alreadyQueued(t matcher.Ticket) error {
	return &matcher.Error{Code: matcher.CodeAlreadyQueued, Message: "already waiting in queue " + t.Queue, TicketID: t.ID}
}

// errBanned answers the join of a banned user.
var errBanned = matcher.Errorf(matcher.CodeForbidden, "this account is banned")

// refuseBanned cancels the ticket just recorded for a user banned since
// the gateway's check. It never entered the pool.
func (s *Service) refuseBanned(ctx context.Context, t matcher.Ticket) error {
	_, events, err := s.cfg.Ledger.Resolve(ctx, t.ID, matcher.StatusCancelled, matcher.ReasonBanned, s.cfg.Now())
	var nw *matcher.NotWaitingError
	if err != nil && !errors.As(err, &nw) {
		// Left waiting (the record failed just now): the reconciler puts it
		// in the pool, where its player, disconnected by the ban, sends no
		// heartbeat and is cancelled as a ghost unless matched first.
		s.log.Error("cancel the ticket of a banned user", "ticket", t.ID, "err", err)
		return errBanned
	}
	if s.cfg.Notifier != nil && len(events) > 0 {
		s.cfg.Notifier.Deliver(ctx, events)
	}
	return errBanned
}

// lookupSkill asks the skill service, within SkillTimeout, and remembers
// the answer. Slow or down, the join goes on with the last skill the service
// gave for this user, else DefaultSkill, marked estimated: a soft dependency
// degrades match quality, never the join.
func (s *Service) lookupSkill(ctx context.Context, userID string) (float64, bool) {
	sctx, cancel := context.WithTimeout(ctx, s.cfg.SkillTimeout)
	skill, err := s.cfg.Skill.Skill(sctx, userID)
	cancel()
	if err == nil && !math.IsNaN(skill) && !math.IsInf(skill, 0) {
		if err := s.cfg.Pool.RememberSkill(ctx, userID, skill); err != nil {
			s.log.Debug("remember skill", "user", userID, "err", err)
		}
		s.cfg.Metrics.skillLookup("ok")
		return skill, false
	}
	if err == nil {
		err = fmt.Errorf("skill %v is not a number", skill)
	}
	s.log.Debug("skill service failed; the skill is estimated", "user", userID, "err", err)
	if last, ok, lerr := s.cfg.Pool.LastSkill(ctx, userID); lerr == nil && ok {
		s.cfg.Metrics.skillLookup("last_known")
		return last, true
	}
	s.cfg.Metrics.skillLookup("default")
	return s.cfg.DefaultSkill, true
}

// own loads a ticket and checks it belongs to userID; another user's ticket
// is NOT_FOUND so ids cannot be probed.
func (s *Service) own(ctx context.Context, userID, ticketID string) (matcher.Ticket, error) {
	return ownIn(ctx, s.cfg.Ledger, userID, ticketID)
}

func ownIn(ctx context.Context, rec RecordReads, userID, ticketID string) (matcher.Ticket, error) {
	t, err := rec.Ticket(ctx, ticketID)
	if errors.Is(err, matcher.ErrNotFound) || (err == nil && t.UserID != userID) {
		return matcher.Ticket{}, matcher.Errorf(matcher.CodeNotFound, "no ticket %s", ticketID)
	}
	if err != nil {
		return matcher.Ticket{}, matcher.Unavailable(fmt.Errorf("load ticket %s: %w", ticketID, err))
	}
	return t, nil
}

// Cancel is a compare-and-set on WAITING in the record: if the matcher
// committed first the caller learns ALREADY_MATCHED with the match id, and
// what it is told always agrees with the record.
func (s *Service) Cancel(ctx context.Context, userID, ticketID string) (matcher.Ticket, error) {
	if _, err := s.own(ctx, userID, ticketID); err != nil {
		return matcher.Ticket{}, err
	}
	t, events, err := s.cfg.Ledger.Resolve(ctx, ticketID, matcher.StatusCancelled, matcher.ReasonUser, s.cfg.Now())
	if err != nil {
		var nw *matcher.NotWaitingError
		if errors.As(err, &nw) {
			return nw.Ticket, notWaiting(nw.Ticket)
		}
		return matcher.Ticket{}, matcher.Unavailable(fmt.Errorf("cancel %s: %w", ticketID, err))
	}
	s.cfg.Metrics.Outcome(t.Queue, string(matcher.StatusCancelled))
	// By the entry the join wrote, so that it goes even if its hash went.
	if _, err := s.cfg.Pool.RemoveEntry(ctx, s.pools(t), matcher.EntryOf(t)); err != nil {
		// The record says CANCELLED: a claim that still finds it in the pool
		// fails its row count, and the reconciler removes the entry.
		s.log.Warn("remove cancelled ticket from pool", "ticket", t.ID, "err", err)
	}
	if s.cfg.Notifier != nil {
		s.cfg.Notifier.Deliver(ctx, events)
	}
	return t, nil
}

func notWaiting(t matcher.Ticket) error {
	if t.Status == matcher.StatusMatched {
		return &matcher.Error{Code: matcher.CodeAlreadyMatched, Message: "ticket was matched first", TicketID: t.ID, MatchID: t.MatchID}
	}
	return &matcher.Error{Code: matcher.CodeAlreadyCancelled, Message: "ticket is already " + string(t.Status), TicketID: t.ID}
}

// pools lists every pool the ticket may wait in.
func (s *Service) pools(t matcher.Ticket) []string {
	q, ok := s.qs.Load().byName[t.Queue]
	if !ok { // a queue removed from the configuration
		return []string{t.Partition().String()}
	}
	var out []string
	for _, p := range q.Pools(t.Region) {
		out = append(out, p.String())
	}
	return out
}

// Ticket returns the caller's ticket with its match, and while it is
// WAITING an explanation of why no match has formed yet.
func (s *Service) Ticket(ctx context.Context, userID, ticketID string) (matcher.TicketView, error) {
	t, err := ownIn(ctx, s.reads, userID, ticketID)
	if err != nil {
		return matcher.TicketView{}, err
	}
	v := matcher.TicketView{Ticket: t}
	if q, ok := s.qs.Load().byName[t.Queue]; ok && t.Status == matcher.StatusWaiting {
		// Best effort: the ticket is the answer; the explanation is extra.
		if v.Explain, err = s.explain(ctx, q, t); err != nil {
			s.log.Warn("explain ticket", "ticket", t.ID, "err", err)
			v.Explain = nil
		}
	}
	if t.MatchID != "" {
		// The replica that gave the ticket has its match: both are written
		// in one transaction.
		m, err := s.reads.Match(ctx, t.MatchID)
		if err != nil {
			return matcher.TicketView{}, matcher.Unavailable(fmt.Errorf("load match %s: %w", t.MatchID, err))
		}
		v.Match = &m
	}
	return v, nil
}

// Heartbeat records that the ticket's player is still there. It touches only
// the pool.
func (s *Service) Heartbeat(ctx context.Context, userID, ticketID string) error {
	t, err := s.own(ctx, userID, ticketID)
	if err != nil {
		return err
	}
	if t.Status != matcher.StatusWaiting {
		return notWaiting(t)
	}
	q := s.qs.Load().byName[t.Queue] // nil for a queue removed from the configuration
	if _, err := s.cfg.Pool.HeartbeatAny(ctx, s.pools(t), t.ID, s.cfg.Now(), matcher.HeartbeatTimeoutOf(q)); err != nil {
		return matcher.Unavailable(fmt.Errorf("heartbeat %s: %w", t.ID, err))
	}
	return nil
}

// Accept accepts a match the user is seated in. A match with an accept step
// becomes READY when the last player accepts, and everyone is pushed
// match.ready with the server. Accepting a READY match (one without an
// accept step, or accepted by all) is a harmless no-op.
func (s *Service) Accept(ctx context.Context, userID, matchID string) (matcher.Match, error) {
	m, events, err := s.cfg.Ledger.Accept(ctx, matchID, userID, s.cfg.Now())
	var se *matcher.MatchStateError
	switch {
	case errors.Is(err, matcher.ErrNotFound):
		return matcher.Match{}, matcher.Errorf(matcher.CodeNotFound, "no match %s", matchID)
	case errors.As(err, &se):
		return s.closedMatch(se.Match, "accept")
	case err != nil:
		return matcher.Match{}, matcher.Unavailable(fmt.Errorf("accept match %s: %w", matchID, err))
	}
	if m.State == matcher.MatchReady {
		if m.Provider != nil {
			s.acceptAssignment(ctx, m)
		}
		s.cfg.Metrics.acceptOutcome(m.Queue, "ready")
		if err := s.cfg.Pool.RemovePending(ctx, matcher.Partition{Queue: m.Queue, Region: m.Region}.String(), m.ID); err != nil {
			s.log.Debug("remove ready match from the pending index", "match", m.ID, "err", err)
		}
	}
	if s.cfg.Notifier != nil && len(events) > 0 {
		s.cfg.Notifier.Deliver(ctx, events)
	}
	return m, nil
}

// Decline refuses a PENDING_ACCEPT match: it dissolves at once, the
// decliner's ticket ends CANCELLED (declined, with the queue's join
// cooldown) and every other player goes back to waiting with their place.
func (s *Service) Decline(ctx context.Context, userID, matchID string) (matcher.Match, error) {
	now := s.cfg.Now()
	d, events, err := s.cfg.Ledger.Dissolve(ctx, matcher.DissolveRequest{MatchID: matchID, Decliner: userID, At: now})
	var se *matcher.MatchStateError
	switch {
	case errors.Is(err, matcher.ErrNotFound):
		return matcher.Match{}, matcher.Errorf(matcher.CodeNotFound, "no match %s", matchID)
	case errors.As(err, &se):
		if se.Match.State == matcher.MatchReady {
			return se.Match, &matcher.Error{Code: matcher.CodeBadRequest, MatchID: se.Match.ID,
				Message: fmt.Sprintf("match %s is READY; it can no longer be declined", se.Match.ID)}
		}
		return s.closedMatch(se.Match, "decline")
	case err != nil:
		return matcher.Match{}, matcher.Unavailable(fmt.Errorf("decline match %s: %w", matchID, err))
	}
	q, ok := s.qs.Load().byName[d.Match.Queue]
	if !ok {
		q = &matcher.QueueConfig{Name: d.Match.Queue}
	}
	for _, part := range s.cfg.afterDissolve(ctx, s.log, q, d, events, matcher.ReasonDeclined, now) {
		s.cfg.Wake(part)
	}
	return d.Match, nil
}

// closedMatch answers an accept or a decline of a match that no longer
// takes one; READY is only reached here by Accept, for which it is a no-op.
func (s *Service) closedMatch(m matcher.Match, what string) (matcher.Match, error) {
	switch m.State {
	case matcher.MatchReady:
		return m, nil
	case matcher.MatchDissolved:
		return m, &matcher.Error{Code: matcher.CodeAlreadyCancelled, MatchID: m.ID, Message: fmt.Sprintf("match %s was dissolved", m.ID)}
	}
	// PENDING_ACCEPT past its window: the engine dissolves it on its next
	// pass; ask for that pass now.
	q := s.queueOr(m.Queue)
	s.cfg.Wake(q.Pools(m.Region)[len(q.Pools(m.Region))-1]) // the only pool, or the overflow pool
	return m, &matcher.Error{Code: matcher.CodeAlreadyCancelled, MatchID: m.ID, Message: fmt.Sprintf("the accept window of match %s has closed; too late to %s", m.ID, what)}
}

// queueOr returns a queue's configuration, or a bare one for a queue no
// longer configured.
func (s *Service) queueOr(name string) *matcher.QueueConfig {
	if q, ok := s.qs.Load().byName[name]; ok {
		return q
	}
	return &matcher.QueueConfig{Name: name, Sharding: matcher.Sharding{Shards: 1}}
}

// Bounds of the catch-up and of TicketHistory's pages.
const (
	DefaultCatchUp     = 10
	DefaultHistoryPage = 20
	MaxHistoryPage     = 100
)

// UserState is the catch-up a (re)connecting client gets first, bounded by
// CatchUp (see Ledger.UserState); More and Next point TicketHistory at the
// resolved tickets left out.
func (s *Service) UserState(ctx context.Context, userID string) (matcher.UserState, error) {
	page, err := s.cfg.Ledger.UserState(ctx, userID, s.cfg.Now().Add(-s.cfg.History), s.cfg.CatchUp)
	if err != nil {
		return matcher.UserState{}, matcher.Unavailable(fmt.Errorf("user state %s: %w", userID, err))
	}
	return stateOf(page), nil
}

// TicketHistory pages the user's resolved tickets newest first: before is
// a Next of UserState or of an earlier page ("" for the newest), limit is
// 1..MaxHistoryPage (0: DefaultHistoryPage). A cursor that is not one is
// BAD_REQUEST.
func (s *Service) TicketHistory(ctx context.Context, userID, before string, limit int) (matcher.UserState, error) {
	switch {
	case limit == 0:
		limit = DefaultHistoryPage
	case limit < 0 || limit > MaxHistoryPage:
		return matcher.UserState{}, matcher.Errorf(matcher.CodeBadRequest, "limit must be 1..%d", MaxHistoryPage)
	}
	cur, err := decodeCursor(before)
	if err != nil {
		return matcher.UserState{}, err
	}
	page, err := s.reads.UserTickets(ctx, userID, cur, limit)
	if err != nil {
		return matcher.UserState{}, matcher.Unavailable(fmt.Errorf("tickets of %s: %w", userID, err))
	}
	return stateOf(page), nil
}

func stateOf(page matcher.TicketPage) matcher.UserState {
	st := matcher.UserState{Tickets: page.Tickets, Matches: page.Matches, More: page.More}
	if page.More {
		st.Next = encodeCursor(page.Next)
	}
	if st.Tickets == nil {
		st.Tickets = []matcher.Ticket{}
	}
	if st.Matches == nil {
		st.Matches = []matcher.Match{}
	}
	return st
}

// encodeCursor renders a cursor as opaque URL-safe text: the client only
// hands it back.
func encodeCursor(c matcher.TicketCursor) string {
	return base64.RawURLEncoding.EncodeToString([]byte(strconv.FormatInt(c.At.UnixMicro(), 10) + "." + c.ID))
}

var errBadCursor = matcher.Errorf(matcher.CodeBadRequest, "before is not a cursor this server gave")

func decodeCursor(s string) (matcher.TicketCursor, error) {
	if s == "" {
		return matcher.TicketCursor{}, nil
	}
	if len(s) > 128 {
		return matcher.TicketCursor{}, errBadCursor
	}
	b, err := base64.RawURLEncoding.DecodeString(s)
	if err != nil {
		return matcher.TicketCursor{}, errBadCursor
	}
	at, id, ok := strings.Cut(string(b), ".")
	us, err := strconv.ParseInt(at, 10, 64)
	if !ok || err != nil || uuid.Validate(id) != nil {
		return matcher.TicketCursor{}, errBadCursor
	}
	return matcher.TicketCursor{At: time.UnixMicro(us).UTC(), ID: id}, nil
}

// Queues lists the configured queues with their current depth per region
// and the statistics of their recent outcomes (see stats.go).
func (s *Service) Queues(ctx context.Context) ([]matcher.QueueInfo, error) {
	qs := s.qs.Load()
	out := make([]matcher.QueueInfo, 0, len(qs.list))
	for i := range qs.list {
		q := &qs.list[i]
		info := matcher.QueueInfo{Name: q.Name, Kind: q.Kind, Players: q.Players, Regions: q.Regions, Depth: map[string]int{}}
		for _, r := range q.Regions {
			for _, p := range q.Pools(r) {
				n, err := s.cfg.Pool.Size(ctx, p.String())
				if err != nil {
					return nil, matcher.Unavailable(fmt.Errorf("depth of %s: %w", p, err))
				}
				info.Depth[r] += int(n)
			}
		}
		st, err := s.regionStats(ctx, q, q.Regions)
		if err != nil {
			return nil, matcher.Unavailable(fmt.Errorf("statistics of %s: %w", q.Name, err))
		}
		info.QueueStats = st
		if q.Kind == matcher.KindProvider {
			pr, err := s.ProviderPresence(ctx, q.Name)
			if err != nil {
				return nil, err
			}
			info.Providers = &matcher.ProviderCounts{Online: len(pr.Online), Busy: len(pr.Busy), Offline: len(pr.Offline), Used: pr.Used, Capacity: pr.Capacity}
		}
		out = append(out, info)
	}
	return out, nil
}
