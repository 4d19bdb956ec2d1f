package engine

import (
	"context"
	"errors"
	"fmt"
	"math"
	"time"

	"github.com/matchgate/matchgate/matcher"
	"github.com/matchgate/matchgate/matcher/plan"
	"github.com/matchgate/matchgate/provider"
)

// The provider side of the Service (providers.go has the matching): a
// provider goes online in a provider queue with a capacity and attributes,
// answers the assignments offered to it (Accept and Decline, as a player
// answers a match) and ends them (EndAssignment), which frees the slot.

// DefaultProviderTTL is how long a provider counts as online after its
// gateway last refreshed it: a gateway that died without a word takes its
// providers offline within this, not never.
const DefaultProviderTTL = 15 * time.Second

// Bounds of what a provider may announce: its attributes end up in every
// pass's snapshot and in pushes.
const (
	maxCapacity   = 1000
	maxAttrValues = 32
	maxAttrLen    = 64
)

// ProviderOnline puts userID online in queue, held by session (the
// gateway's socket; "" for a REST call, which only a later offline or the
// TTL ends). The slots its live assignments hold are synced from the
// record first, so a Redis that forgot them never hands them out twice.
func (s *Service) ProviderOnline(ctx context.Context, queue, userID, session string, capacity int, attrs provider.Attributes) (provider.Provider, error) {
	q, err := s.providerQueue(queue, userID)
	if err != nil {
		return provider.Provider{}, err
	}
	if capacity < 0 || capacity > maxCapacity {
		return provider.Provider{}, matcher.Errorf(matcher.CodeBadRequest, "capacity must be 0–%d", maxCapacity)
	}
	if err := checkAttributes(attrs); err != nil {
		return provider.Provider{}, err
	}
	now := s.cfg.Now()
	live, err := s.cfg.Assignments.Live(ctx, q.Name, userID)
	if err != nil {
		return provider.Provider{}, matcher.Unavailable(fmt.Errorf("read the assignments of %s: %w", userID, err))
	}
	held := make([]string, 0, len(live))
	for _, a := range live {
		if s.orphaned(ctx, a, now) {
			continue
		}
		held = append(held, a.ID)
	}
	if err := s.cfg.Providers.Sync(ctx, q.Name, userID, held); err != nil {
		return provider.Provider{}, matcher.Unavailable(err)
	}
	p, err := s.cfg.Providers.Online(ctx, q.Name, provider.Provider{UserID: userID, Capacity: capacity, Attributes: attrs}, session, now.Add(s.ProviderTTL()))
	if err != nil {
		return provider.Provider{}, matcher.Unavailable(err)
	}
	s.wakeQueue(q)
	return p, nil
}

// orphanAge is how old an assignment without its match must be to be
// judged orphaned: far past any pass's commit.
const orphanAge = time.Minute

// orphaned ends a live assignment whose match the record does not hold
// (its pass died between the offer and the commit), reporting whether it
// did: assigned at once, such an assignment would hold its slot for good.
// An offer of the kind expires by its window anyway.
func (s *Service) orphaned(ctx context.Context, a provider.Assignment, now time.Time) bool {
	if now.Sub(a.OfferedAt) < orphanAge {
		return false
	}
	if _, err := s.cfg.Ledger.Match(ctx, a.ID); !errors.Is(err, matcher.ErrNotFound) {
		return false
	}
	var err error
	if a.Status == provider.StatusOffered {
		_, err = s.cfg.Assignments.Decline(ctx, a.ID, now)
	} else {
		_, err = s.cfg.Assignments.End(ctx, a.ID, "not committed", now)
	}
	if err != nil {
		s.log.Warn("end an orphaned assignment", "assignment", a.ID, "err", err)
		return false
	}
	s.log.Info("ended an assignment whose match was never committed", "assignment", a.ID, "provider", a.Provider)
	return true
}

// ProviderUpdate changes an online provider's capacity (capacity < 0
// keeps it) or attributes (nil keeps them).
func (s *Service) ProviderUpdate(ctx context.Context, queue, userID string, capacity int, attrs *provider.Attributes) (provider.Provider, error) {
	q, err := s.providerQueue(queue, userID)
	if err != nil {
		return provider.Provider{}, err
	}
	if capacity > maxCapacity {
		return provider.Provider{}, matcher.Errorf(matcher.CodeBadRequest, "capacity must be 0–%d", maxCapacity)
	}
	if attrs != nil {
		if err := checkAttributes(*attrs); err != nil {
			return provider.Provider{}, err
		}
	}
	p, err := s.cfg.Providers.Update(ctx, q.Name, userID, capacity, attrs, s.cfg.Now())
	switch {
	case errors.Is(err, provider.ErrOffline):
		return provider.Provider{}, matcher.Errorf(matcher.CodeBadRequest, "%s is not online in %s: send provider.online first", userID, q.Name)
	case err != nil:
		return provider.Provider{}, matcher.Unavailable(err)
	}
	s.wakeQueue(q)
	return p, nil
}

// ProviderOffline takes userID offline in queue if session holds it (""
// holds any). Running assignments go on until they end.
func (s *Service) ProviderOffline(ctx context.Context, queue, userID, session string) (bool, error) {
	q, err := s.providerQueue(queue, userID)
	if err != nil {
		return false, err
	}
	ok, err := s.cfg.Providers.Offline(ctx, q.Name, userID, session, s.cfg.Now())
	if err != nil {
		return false, matcher.Unavailable(err)
	}
	if ok {
		s.withdrawOffers(ctx, q, userID)
	}
	return ok, nil
}

// withdrawOffers declines the offers a provider going offline still had
// open, so that their requesters go to the next best provider at once
// rather than when the windows pass; its running sessions stay.
func (s *Service) withdrawOffers(ctx context.Context, q *matcher.QueueConfig, userID string) {
	live, err := s.cfg.Assignments.Live(ctx, q.Name, userID)
	if err != nil {
		s.log.Warn("read the offers of a provider gone offline; their windows will close them", "provider", userID, "err", err)
		return
	}
	for _, a := range live {
		if a.Status != provider.StatusOffered {
			continue
		}
		if _, err := s.Decline(ctx, userID, a.ID); err != nil {
			s.log.Debug("withdraw an offer of a provider gone offline", "match", a.ID, "err", err)
		}
	}
}

// ProviderRefresh keeps the providers a gateway holds online for another
// TTL.
func (s *Service) ProviderRefresh(ctx context.Context, queue string, userIDs []string, session string) error {
	if s.cfg.Providers == nil || len(userIDs) == 0 {
		return nil
	}
	return s.cfg.Providers.Refresh(ctx, queue, userIDs, session, s.cfg.Now().Add(s.ProviderTTL()))
}

// ProviderTTL is how long a refresh keeps a provider online.
func (s *Service) ProviderTTL() time.Duration { return DefaultProviderTTL }

// ProviderStates lists userID's state in every provider queue where it is
// known or holds a live assignment (a provider's hello).
func (s *Service) ProviderStates(ctx context.Context, userID string) ([]provider.State, error) {
	if s.cfg.Providers == nil || s.cfg.Assignments == nil {
		return nil, nil
	}
	now := s.cfg.Now()
	var out []provider.State
	for i := range s.qs.Load().list {
		q := &s.qs.Load().list[i]
		if q.Kind != matcher.KindProvider {
			continue
		}
		p, known, err := s.cfg.Providers.Get(ctx, q.Name, userID, now)
		if err != nil {
			return nil, matcher.Unavailable(err)
		}
		as, err := s.cfg.Assignments.Live(ctx, q.Name, userID)
		if err != nil {
			return nil, matcher.Unavailable(fmt.Errorf("read the assignments of %s: %w", userID, err))
		}
		if known || len(as) > 0 {
			out = append(out, provider.State{Queue: q.Name, Provider: p, Known: known, Assignments: as})
		}
	}
	return out, nil
}

// ProviderPresence lists the providers of queue: online, busy (online at
// capacity) and offline, and the slots used of those online.
func (s *Service) ProviderPresence(ctx context.Context, queue string) (provider.Presence, error) {
	q, ok := s.qs.Load().byName[queue]
	if !ok || q.Kind != matcher.KindProvider {
		return provider.Presence{}, &matcher.Error{Code: matcher.CodeUnknownQueue, Message: fmt.Sprintf("no provider queue named %q", queue)}
	}
	if s.cfg.Providers == nil {
		return provider.Presence{Queue: q.Name}, nil
	}
	ps, err := s.cfg.Providers.Snapshot(ctx, q.Name, s.cfg.Now())
	if err != nil {
		return provider.Presence{}, matcher.Unavailable(err)
	}
	out := provider.Presence{Queue: q.Name}
	for _, p := range ps {
		switch {
		case !p.Online:
			out.Offline = append(out.Offline, p)
		case p.Used >= p.Capacity:
			out.Busy = append(out.Busy, p)
			out.Used, out.Capacity = out.Used+p.Used, out.Capacity+p.Capacity
		default:
			out.Online = append(out.Online, p)
			out.Used, out.Capacity = out.Used+p.Used, out.Capacity+p.Capacity
		}
	}
	return out, nil
}

// EndAssignment ends a running (READY) assignment of the provider userID:
// the session is over and the slot takes the next requester.
func (s *Service) EndAssignment(ctx context.Context, userID, matchID string) (provider.Assignment, error) {
	return s.endAssignment(ctx, userID, matchID, "ended")
}

// OperatorEnd ends an assignment for an operator, whoever its provider:
// an open offer is declined (its requester goes back in place), a running
// session ended with reason operator.
func (s *Service) OperatorEnd(ctx context.Context, matchID string) (provider.Assignment, error) {
	m, err := s.cfg.Ledger.Match(ctx, matchID)
	switch {
	case errors.Is(err, matcher.ErrNotFound):
		return provider.Assignment{}, matcher.Errorf(matcher.CodeNotFound, "no assignment %s", matchID)
	case err != nil:
		return provider.Assignment{}, matcher.Unavailable(fmt.Errorf("read match %s: %w", matchID, err))
	case m.Provider == nil:
		return provider.Assignment{}, matcher.Errorf(matcher.CodeNotFound, "match %s is no assignment", matchID)
	case m.State == matcher.MatchPendingAccept:
		if _, err := s.Decline(ctx, m.Provider.UserID, m.ID); err != nil {
			return provider.Assignment{}, err
		}
	case m.State == matcher.MatchReady:
		return s.endAssignment(ctx, m.Provider.UserID, m.ID, "operator")
	}
	a, err := s.cfg.Assignments.Get(ctx, m.ID)
	if err != nil {
		return provider.Assignment{}, matcher.Unavailable(fmt.Errorf("read assignment %s: %w", m.ID, err))
	}
	return a, nil
}

func (s *Service) endAssignment(ctx context.Context, userID, matchID, reason string) (provider.Assignment, error) {
	m, err := s.cfg.Ledger.Match(ctx, matchID)
	switch {
	case errors.Is(err, matcher.ErrNotFound):
		return provider.Assignment{}, matcher.Errorf(matcher.CodeNotFound, "no assignment %s", matchID)
	case err != nil:
		return provider.Assignment{}, matcher.Unavailable(fmt.Errorf("read match %s: %w", matchID, err))
	case m.Provider == nil || m.Provider.UserID != userID:
		return provider.Assignment{}, matcher.Errorf(matcher.CodeNotFound, "no assignment %s of yours", matchID)
	case m.State != matcher.MatchReady:
		return provider.Assignment{}, &matcher.Error{Code: matcher.CodeBadRequest, MatchID: m.ID,
			Message: fmt.Sprintf("assignment %s is %s: accept or decline it first", m.ID, m.State)}
	}
	now := s.cfg.Now()
	a, err := s.cfg.Assignments.End(ctx, m.ID, reason, now)
	switch {
	case errors.Is(err, provider.ErrNotFound), errors.Is(err, provider.ErrConflict):
		// Already ended (a repeat), or the record lost the accept: read
		// what it holds, and free the slot either way.
		if a, err = s.cfg.Assignments.Get(ctx, m.ID); err != nil && !errors.Is(err, provider.ErrNotFound) {
			return provider.Assignment{}, matcher.Unavailable(err)
		}
	case err != nil:
		return provider.Assignment{}, matcher.Unavailable(fmt.Errorf("end assignment %s: %w", m.ID, err))
	}
	if err := s.cfg.Providers.Release(ctx, m.Queue, userID, m.ID); err != nil {
		// The next online syncs the slots from the record.
		s.log.Warn("free a provider's slot", "match", m.ID, "provider", userID, "err", err)
	}
	s.wakeQueue(s.queueOr(m.Queue))
	return a, nil
}

// acceptAssignment records the provider's accept of a provider match the
// ledger made READY. The ledger is the requester's truth; should this
// write be lost, the offer expires in the record and its slot is freed
// while the session runs, which the next online's sync corrects.
func (s *Service) acceptAssignment(ctx context.Context, m matcher.Match) {
	if _, err := s.cfg.Assignments.Accept(ctx, m.ID, s.cfg.Now()); err != nil && !errors.Is(err, provider.ErrConflict) {
		s.log.Warn("record an assignment's accept", "match", m.ID, "err", err)
	}
}

// providerQueue is queue if it is a provider queue this server can serve.
func (s *Service) providerQueue(queue, userID string) (*matcher.QueueConfig, error) {
	q, ok := s.qs.Load().byName[queue]
	switch {
	case !ok || q.Kind != matcher.KindProvider:
		return nil, &matcher.Error{Code: matcher.CodeUnknownQueue, Message: fmt.Sprintf("no provider queue named %q", queue)}
	case userID == "":
		return nil, matcher.Errorf(matcher.CodeUnauthorized, "no user")
	case s.cfg.Providers == nil || s.cfg.Assignments == nil:
		return nil, matcher.Errorf(matcher.CodeUnavailable, "this server has no provider pool")
	}
	return q, nil
}

// wakeQueue asks every partition of q for a pass: a slot freed or a
// provider online may serve a requester of any region.
func (s *Service) wakeQueue(q *matcher.QueueConfig) {
	for _, r := range q.Regions {
		for _, p := range q.Pools(r) {
			s.cfg.Wake(p)
		}
	}
}

// checkAttributes bounds what a provider announces.
func checkAttributes(a provider.Attributes) error {
	if math.IsNaN(a.Rating) || a.Rating < 0 || a.Rating > 5 {
		return matcher.Errorf(matcher.CodeBadRequest, "rating must be a number from 0 to 5")
	}
	for _, list := range [][]string{a.Languages, a.Specialties, a.SessionTypes} {
		if len(list) > maxAttrValues {
			return matcher.Errorf(matcher.CodeBadRequest, "at most %d languages, specialties or session types", maxAttrValues)
		}
		for _, v := range list {
			if v == "" || len(v) > maxAttrLen {
				return matcher.Errorf(matcher.CodeBadRequest, "an attribute value must be 1–%d bytes", maxAttrLen)
			}
		}
	}
	return nil
}

// explainProvider says why no provider can take the requester of t yet,
// from the providers online now, and which constraints its wait dropped.
func (s *Service) explainProvider(ctx context.Context, q *matcher.QueueConfig, t matcher.Ticket, e matcher.Entry, x *matcher.Explain, now time.Time) error {
	x.CandidatesInWindow, x.PlayersNeeded = 0, 0
	prefs, _ := provider.PreferencesOf(t.Attributes)
	r := plan.RequesterOf(q, e, prefs)
	pol := q.Policy()
	for _, rl := range pol.Relax {
		if r.Wait(now) >= rl.After {
			x.Relaxed = append(x.Relaxed, rl.Drop)
		}
	}
	if n, err := s.cfg.Pool.Size(ctx, q.PoolOf(t.UserID, t.Region).String()); err == nil {
		x.ShedTier = provider.TierFor(pol, int(n))
	}
	if s.cfg.Providers == nil {
		x.NoProvider = "no provider online"
		return nil
	}
	ps, err := s.cfg.Providers.Snapshot(ctx, q.Name, now)
	if err != nil {
		return fmt.Errorf("read the providers of %s: %w", q.Name, err)
	}
	refused, err := s.cfg.Assignments.Refused(ctx, q.Name, []string{t.ID})
	if err != nil {
		return fmt.Errorf("read the refusals of %s: %w", t.ID, err)
	}
	r.Refused = refused[t.ID]
	x.NoProvider = provider.Explain(pol, ps, r, now)
	return nil
}
