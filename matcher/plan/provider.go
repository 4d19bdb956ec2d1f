package plan

import (
	"time"

	"github.com/matchgate/matchgate/matcher"
	"github.com/matchgate/matchgate/provider"
)

// providerPlanner gives each requester of a provider queue a provider with
// a free slot, by the queue's policy (ARCHITECTURE.md §6): the oldest
// provider.BatchMax requesters at once, by max-weight assignment (assign
// batch) or oldest first (assign greedy). A match seats the requester
// alone and names the provider in its seat.
type providerPlanner struct{}

func (providerPlanner) Head(*matcher.QueueConfig, int) Read {
	return Read{Kind: ReadOldest, N: provider.BatchMax}
}

// TimeoutRead and Timeout: a requester past its deadline expires; there is
// nobody to seat beside it.
func (providerPlanner) TimeoutRead(*matcher.QueueConfig, matcher.Entry) Read {
	return Read{Kind: ReadSize}
}

func (providerPlanner) Timeout(*matcher.QueueConfig, matcher.Entry, []matcher.Entry, func(string) bool) (Group, bool) {
	return Group{}, false
}

func (providerPlanner) Offers() bool { return false }

func (providerPlanner) Explain(*matcher.QueueConfig, matcher.Entry, time.Time) (Read, *float64) {
	return Read{Kind: ReadSize}, nil
}

func (providerPlanner) InWindow(*matcher.QueueConfig, matcher.Entry, matcher.Entry, time.Time) bool {
	return true
}

// Choose assigns the round's requesters to its providers, at the shed
// tier of the line's length (Round.Waiting, or the requesters read when
// it is not known).
func (providerPlanner) Choose(q *matcher.QueueConfig, r Round) Plan {
	reqs := make([]provider.Requester, 0, len(r.Anchors))
	byTicket := make(map[string]matcher.Entry, len(r.Anchors))
	for _, a := range r.Anchors {
		if !usable(r.Used, nil, a) {
			continue
		}
		byTicket[a.TicketID] = a
		req := RequesterOf(q, a, r.Prefs[a.TicketID])
		req.Refused = r.Refused[a.TicketID]
		reqs = append(reqs, req)
	}
	pol := q.Policy()
	tier := provider.TierFor(pol, max(r.Waiting, len(reqs)))
	var picks []provider.Pick
	if q.Assign == matcher.AssignGreedy {
		picks = provider.Greedy(pol, r.Providers, reqs, r.Now, tier)
	} else {
		picks = provider.Batch(pol, r.Providers, reqs, r.Now, tier)
	}
	plan := Plan{Tried: len(reqs), Full: len(picks), Tier: tier}
	for _, pk := range picks {
		plan.Groups = append(plan.Groups, Group{
			Entries:  []matcher.Entry{byTicket[pk.Requester.TicketID]},
			FormedBy: matcher.FormedFilled,
			Provider: &matcher.ProviderSeat{UserID: pk.Provider, Score: pk.Score, Parts: pk.Parts},
		})
	}
	return plan
}

// RequesterOf is a waiting entry of a provider queue as scoring sees it.
func RequesterOf(q *matcher.QueueConfig, e matcher.Entry, prefs provider.Preferences) provider.Requester {
	return provider.Requester{TicketID: e.TicketID, UserID: e.UserID, Queue: q.Name, Prefs: prefs, Enqueued: e.Enqueue, Deadline: e.Deadline}
}
