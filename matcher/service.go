package matcher

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"time"

	"github.com/google/uuid"

	"github.com/matchgate/matchgate/matcher/pool"
)

// ServiceConfig configures the Service.
type ServiceConfig struct {
	Queues Config // normalized
	Pool   *pool.Pool
	Ledger Ledger
	// Notifier publishes committed events at once; nil leaves them to the relay.
	Notifier Notifier
	// Wake asks the partition's engine (in this process or another) for a
	// pass now; nil waits for the next tick.
	Wake func(Partition)
	// History is how far back resolved tickets are included in UserState, so
	// a client that reconnects learns the outcome it missed. Default 10m.
	History time.Duration
	// DefaultSkill is used (with estimated=true) when the caller has no
	// skill claim. Default 50.
	DefaultSkill float64
	// Available, when set, is asked before a join writes anything: a
	// non-nil answer (Redis or the record is unreachable) refuses the join at
	// once with UNAVAILABLE instead of letting it hang or half-succeed.
	Available func() error
	// Now is the clock; nil means time.Now.
	Now     func() time.Time
	Logger  *slog.Logger
	Metrics *Metrics
}

// Service joins, cancels and answers status. It talks to the ledger and the
// pool directly: no extra hop between the edge and the matcher.
type Service struct {
	cfg    ServiceConfig
	queues map[string]*QueueConfig
	log    *slog.Logger
}

// NewService validates the configuration; it starts nothing.
func NewService(cfg ServiceConfig) (*Service, error) {
	if cfg.Pool == nil || cfg.Ledger == nil {
		return nil, errors.New("service: Pool and Ledger are required")
	}
	if len(cfg.Queues.Queues) == 0 {
		return nil, errors.New("service: no queues")
	}
	if cfg.History == 0 {
		cfg.History = 10 * time.Minute
	}
	if cfg.DefaultSkill == 0 {
		cfg.DefaultSkill = 50
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.Wake == nil {
		cfg.Wake = func(Partition) {}
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	s := &Service{cfg: cfg, queues: map[string]*QueueConfig{}, log: cfg.Logger}
	for i := range cfg.Queues.Queues {
		q := &s.cfg.Queues.Queues[i]
		s.queues[q.Name] = q
	}
	return s, nil
}

// Queue returns a queue's configuration.
func (s *Service) Queue(name string) (*QueueConfig, bool) {
	q, ok := s.queues[name]
	return q, ok
}

// Join records a WAITING ticket (the record first, then the pool) and wakes
// the partition's engine.
func (s *Service) Join(ctx context.Context, req JoinRequest) (Ticket, error) {
	q, ok := s.queues[req.Queue]
	if !ok {
		return Ticket{}, &Error{Code: CodeUnknownQueue, Message: fmt.Sprintf("no queue named %q", req.Queue)}
	}
	region := req.Region
	if region == "" && len(q.Regions) == 1 {
		region = q.Regions[0]
	}
	if !q.HasRegion(region) {
		return Ticket{}, Errorf(CodeBadRequest, "queue %s runs in regions %v, not %q", q.Name, q.Regions, region)
	}
	if req.UserID == "" {
		return Ticket{}, Errorf(CodeUnauthorized, "no user")
	}
	if s.cfg.Available != nil {
		if err := s.cfg.Available(); err != nil {
			return Ticket{}, &Error{Code: CodeUnavailable, Message: "matchmaking is temporarily unavailable; retry shortly", cause: err}
		}
	}
	skill, estimated := s.cfg.DefaultSkill, true
	if req.Skill != nil {
		skill, estimated = *req.Skill, false
	}
	activity := 0.0
	if req.Activity != nil {
		activity = *req.Activity
	}
	if math.IsNaN(skill) || math.IsInf(skill, 0) || math.IsNaN(activity) || math.IsInf(activity, 0) {
		return Ticket{}, Errorf(CodeBadRequest, "skill and activity must be finite numbers")
	}
	// Millisecond precision: the pool keeps milliseconds, and the record and
	// the pool must agree on the original enqueue time.
	now := s.cfg.Now().UTC().Truncate(time.Millisecond)
	t := Ticket{
		ID: uuid.NewString(), UserID: req.UserID, Queue: q.Name, Region: region,
		Status: StatusWaiting, Skill: skill, Estimated: estimated, Attributes: req.Attributes,
		EnqueuedAt: now, Deadline: now.Add(q.Deadline), UpdatedAt: now, Version: 1,
	}
	t, err := s.cfg.Ledger.CreateTicket(ctx, t)
	if err != nil {
		var aq *AlreadyQueuedError
		if errors.As(err, &aq) {
			return aq.Existing, &Error{Code: CodeAlreadyQueued, Message: "already waiting in queue " + aq.Existing.Queue, TicketID: aq.Existing.ID}
		}
		return Ticket{}, unavailable(fmt.Errorf("join %s: record ticket: %w", q.Name, err))
	}
	s.cfg.Metrics.joined(q.Name)
	e := EntryOf(t)
	e.Activity = activity
	if _, err := s.cfg.Pool.Enqueue(ctx, t.Partition().String(), e, entryTTL(now, t.Deadline)); err != nil {
		// The ticket is recorded; the reconciler adds it to the pool from the
		// record, so the join stands.
		s.log.Warn("enqueue after record failed; left to the reconciler", "ticket", t.ID, "err", err)
		return t, nil
	}
	s.cfg.Wake(t.Partition())
	return t, nil
}

// EntryOf is the pool entry of a ticket, with its original scores.
func EntryOf(t Ticket) pool.Entry {
	return pool.Entry{
		TicketID: t.ID, UserID: t.UserID, Skill: t.Skill, Estimated: t.Estimated,
		Enqueue: t.EffectiveEnqueue(), Deadline: t.Deadline, Heartbeat: t.EnqueuedAt,
	}
}

// own loads a ticket and checks it belongs to userID; another user's ticket
// is NOT_FOUND so ids cannot be probed.
func (s *Service) own(ctx context.Context, userID, ticketID string) (Ticket, error) {
	t, err := s.cfg.Ledger.Ticket(ctx, ticketID)
	if errors.Is(err, ErrNotFound) || (err == nil && t.UserID != userID) {
		return Ticket{}, Errorf(CodeNotFound, "no ticket %s", ticketID)
	}
	if err != nil {
		return Ticket{}, unavailable(fmt.Errorf("load ticket %s: %w", ticketID, err))
	}
	return t, nil
}

// Cancel is a compare-and-set on WAITING in the record: if the matcher
// committed first the caller learns ALREADY_MATCHED with the match id, and
// what it is told always agrees with the record.
func (s *Service) Cancel(ctx context.Context, userID, ticketID string) (Ticket, error) {
	if _, err := s.own(ctx, userID, ticketID); err != nil {
		return Ticket{}, err
	}
	t, events, err := s.cfg.Ledger.Resolve(ctx, ticketID, StatusCancelled, ReasonUser, s.cfg.Now())
	if err != nil {
		var nw *NotWaitingError
		if errors.As(err, &nw) {
			return nw.Ticket, notWaiting(nw.Ticket)
		}
		return Ticket{}, unavailable(fmt.Errorf("cancel %s: %w", ticketID, err))
	}
	s.cfg.Metrics.outcome(t.Queue, string(StatusCancelled))
	if _, err := s.cfg.Pool.Remove(ctx, t.Partition().String(), t.ID); err != nil {
		// The record says CANCELLED: a claim that still finds it in the pool
		// fails its row count, and the reconciler removes the entry.
		s.log.Warn("remove cancelled ticket from pool", "ticket", t.ID, "err", err)
	}
	if s.cfg.Notifier != nil {
		s.cfg.Notifier.Deliver(ctx, events)
	}
	return t, nil
}

func notWaiting(t Ticket) error {
	if t.Status == StatusMatched {
		return &Error{Code: CodeAlreadyMatched, Message: "ticket was matched first", TicketID: t.ID, MatchID: t.MatchID}
	}
	return &Error{Code: CodeAlreadyCancelled, Message: "ticket is already " + string(t.Status), TicketID: t.ID}
}

// Ticket returns the caller's ticket with its match.
func (s *Service) Ticket(ctx context.Context, userID, ticketID string) (TicketView, error) {
	t, err := s.own(ctx, userID, ticketID)
	if err != nil {
		return TicketView{}, err
	}
	v := TicketView{Ticket: t}
	if t.MatchID != "" {
		m, err := s.cfg.Ledger.Match(ctx, t.MatchID)
		if err != nil {
			return TicketView{}, unavailable(fmt.Errorf("load match %s: %w", t.MatchID, err))
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
	if t.Status != StatusWaiting {
		return notWaiting(t)
	}
	if _, err := s.cfg.Pool.Heartbeat(ctx, t.Partition().String(), t.ID, s.cfg.Now()); err != nil {
		return unavailable(fmt.Errorf("heartbeat %s: %w", t.ID, err))
	}
	return nil
}

// Accept acknowledges a match. Queues without an accept step form READY
// matches, for which accepting is a harmless no-op.
func (s *Service) Accept(ctx context.Context, userID, matchID string) (Match, error) {
	return s.seatedMatch(ctx, userID, matchID)
}

// Decline refuses a match. Without an accept step there is nothing to
// decline: the match is already READY.
func (s *Service) Decline(ctx context.Context, userID, matchID string) (Match, error) {
	m, err := s.seatedMatch(ctx, userID, matchID)
	if err != nil {
		return Match{}, err
	}
	if m.State != MatchPendingAccept {
		return m, Errorf(CodeBadRequest, "match %s is %s; it has no accept step to decline", m.ID, m.State)
	}
	return m, nil
}

func (s *Service) seatedMatch(ctx context.Context, userID, matchID string) (Match, error) {
	m, err := s.cfg.Ledger.Match(ctx, matchID)
	if errors.Is(err, ErrNotFound) {
		return Match{}, Errorf(CodeNotFound, "no match %s", matchID)
	}
	if err != nil {
		return Match{}, unavailable(fmt.Errorf("load match %s: %w", matchID, err))
	}
	for _, p := range m.Players {
		if p.UserID == userID {
			return m, nil
		}
	}
	return Match{}, Errorf(CodeNotFound, "no match %s", matchID)
}

// UserState is the catch-up a (re)connecting client gets first.
func (s *Service) UserState(ctx context.Context, userID string) (UserState, error) {
	ts, ms, err := s.cfg.Ledger.UserState(ctx, userID, s.cfg.Now().Add(-s.cfg.History))
	if err != nil {
		return UserState{}, unavailable(fmt.Errorf("user state %s: %w", userID, err))
	}
	if ts == nil {
		ts = []Ticket{}
	}
	if ms == nil {
		ms = []Match{}
	}
	return UserState{Tickets: ts, Matches: ms}, nil
}

// Queues lists the configured queues with their current depth per region.
func (s *Service) Queues(ctx context.Context) ([]QueueInfo, error) {
	out := make([]QueueInfo, 0, len(s.cfg.Queues.Queues))
	for _, q := range s.cfg.Queues.Queues {
		info := QueueInfo{Name: q.Name, Kind: q.Kind, Players: q.Players, Regions: q.Regions, Depth: map[string]int{}}
		for _, r := range q.Regions {
			n, err := s.cfg.Pool.Size(ctx, Partition{Queue: q.Name, Region: r}.String())
			if err != nil {
				return nil, unavailable(fmt.Errorf("depth of %s:%s: %w", q.Name, r, err))
			}
			info.Depth[r] = int(n)
		}
		out = append(out, info)
	}
	return out, nil
}

// Partitions lists every (queue, region) of the configuration.
func (c Config) Partitions() []Partition {
	var ps []Partition
	for _, q := range c.Queues {
		for _, r := range q.Regions {
			ps = append(ps, Partition{Queue: q.Name, Region: r})
		}
	}
	return ps
}
