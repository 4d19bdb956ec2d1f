package main

import (
	"slices"
	"time"

	"github.com/matchgate/matchgate/protocol"
)

// checker holds the record, the players' records and the findings.
type checker struct {
	o         options
	queues    map[string]queueSpec
	tickets   map[string]*dbTicket
	matches   []*dbMatch
	matchByID map[string]*dbMatch
	players   map[string]*playerRec    // by user id
	end       time.Time                // sessions still open count as open until here
	redisView func(t *dbTicket) string // what Redis holds of a ticket, for evidence; may be nil
	// The queue retired mid-run ("" for none) and when.
	retiredQueue string
	retiredAt    time.Time
	// What the fleet manager handed out, and when each killed incarnation
	// (name.incarnation) was killed.
	allocs   []allocation
	killedAt map[string]time.Time
	f        *findings
	st       checkStats
}

// checkStats are the figures the checks compute along the way.
type checkStats struct {
	ResolvedAfterDeadline int            `json:"resolvedAfterDeadline"`
	ResolvedBeyondSlack   int            `json:"resolvedBeyondSlack"` // later than the deadline plus --slack
	Latest                []lateTicket   `json:"latest"`              // the latest resolutions, latest first
	LongestDeadlineToRes  dur            `json:"longestDeadlineToResolution"`
	LongestTicket         string         `json:"longestTicket,omitempty"`
	JoinToMatchP50        dur            `json:"joinToMatchP50"`
	JoinToMatchP99        dur            `json:"joinToMatchP99"`
	SeatsConnected        int            `json:"seatsConnectedAtCreation"` // seats whose player had a socket open when the match was created
	SeatsByPush           int            `json:"seatsToldByPush"`
	SeatsByHelloOnly      int            `json:"seatsToldByHelloOnly"`
	SeatsAway             int            `json:"seatsAwayAtCreation"` // seats whose player was away then and came back: told by hello
	DuplicatePushes       int            `json:"duplicatePushes"`
	CancelReplies         map[string]int `json:"cancelReplies"`      // cancelled, ALREADY_MATCHED, …
	ExpiredUnseen         int            `json:"expiredWithoutPush"` // EXPIRED tickets whose player never saw the outcome pushed (informational)
	// Of the retired queue: tickets waiting when it was retired (or
	// admitted after), how many were resolved by the end, and the latest
	// resolution after a deadline.
	RetiredWaiting  int        `json:"retiredQueueWaiting,omitempty"`
	RetiredResolved int        `json:"retiredQueueResolved,omitempty"`
	RetiredLongest  dur        `json:"retiredQueueLongestDeadlineToResolution,omitempty"`
	Fleet           fleetStats `json:"fleet"`
}

// lateTicket is a ticket resolved after its deadline.
type lateTicket struct {
	Ticket    string    `json:"ticket"`
	Queue     string    `json:"queue"`
	Status    string    `json:"status"`
	Match     string    `json:"match,omitempty"`
	Enqueued  time.Time `json:"enqueuedAt"`
	Deadline  time.Time `json:"deadline"`
	UpdatedAt time.Time `json:"resolvedAt"`
	Late      dur       `json:"late"`
}

// maxLatest bounds the latest resolutions kept for the report.
const maxLatest = 10

// noteLate keeps the maxLatest latest resolutions, latest first.
func (s *checkStats) noteLate(t *dbTicket, late time.Duration) {
	if len(s.Latest) == maxLatest && dur(late) <= s.Latest[maxLatest-1].Late {
		return
	}
	lt := lateTicket{Ticket: t.ID, Queue: t.Queue, Status: t.Status, Match: t.MatchID,
		Enqueued: t.EnqueuedAt, Deadline: t.Deadline, UpdatedAt: t.UpdatedAt, Late: dur(late)}
	i, _ := slices.BinarySearchFunc(s.Latest, lt, func(a, b lateTicket) int {
		switch {
		case a.Late > b.Late:
			return -1
		case a.Late < b.Late:
			return 1
		}
		return 0
	})
	s.Latest = slices.Insert(s.Latest, i, lt)
	if len(s.Latest) > maxLatest {
		s.Latest = s.Latest[:maxLatest]
	}
}

func newChecker(o options, qs []queueSpec, tickets map[string]*dbTicket, matches []*dbMatch, recs []*playerRec, end time.Time) *checker {
	c := &checker{o: o, queues: map[string]queueSpec{}, tickets: tickets, matches: matches,
		matchByID: map[string]*dbMatch{}, players: map[string]*playerRec{}, end: end, f: newFindings()}
	c.st.CancelReplies = map[string]int{}
	for _, q := range qs {
		c.queues[q.Name] = q
	}
	for _, m := range matches {
		c.matchByID[m.ID] = m
	}
	for _, r := range recs {
		c.players[r.User] = r
	}
	return c
}

func (c *checker) run() {
	c.checkMatches()
	c.checkTickets()
	c.checkClients()
	c.checkPushes()
	c.checkFleet()
}

// checkMatches: no ticket in two matches, no user twice in a match, every
// seat's ticket MATCHED in that very match, sizes that fit the queue.
func (c *checker) checkMatches() {
	seatedIn := map[string]string{} // ticket → first match seating it
	var waits []time.Duration
	for _, m := range c.matches {
		users := map[string]bool{}
		var oldest time.Time
		for _, s := range m.Players {
			if prev, ok := seatedIn[s.TicketID]; ok && prev != m.ID {
				c.f.addf(vTicketInTwoMatches, s.TicketID, m.ID, s.UserID, "also seated in match %s", prev)
			} else {
				seatedIn[s.TicketID] = m.ID
			}
			if users[s.UserID] {
				c.f.addf(vUserTwiceInMatch, s.TicketID, m.ID, s.UserID, "user seated twice")
			}
			users[s.UserID] = true
			t := c.tickets[s.TicketID]
			switch {
			case t == nil:
				c.f.addf(vSeatNotMatched, s.TicketID, m.ID, s.UserID, "seat's ticket is not in the record")
				continue
			case t.Status != protocol.StatusMatched || t.MatchID != m.ID:
				c.f.addf(vSeatNotMatched, t.ID, m.ID, t.UserID, "seat's ticket is %s (match %q, reason %q)", t.Status, t.MatchID, t.CancelReason)
			case t.UserID != s.UserID:
				c.f.addf(vSeatNotMatched, t.ID, m.ID, s.UserID, "seat says user %s, ticket says %s", s.UserID, t.UserID)
			case t.Queue != m.Queue:
				c.f.addf(vSeatNotMatched, t.ID, m.ID, t.UserID, "ticket of queue %s in a match of %s", t.Queue, m.Queue)
			}
			if oldest.IsZero() || t.EnqueuedAt.Before(oldest) {
				oldest = t.EnqueuedAt
			}
			if m.FormedBy == "FILLED" {
				waits = append(waits, m.CreatedAt.Sub(t.EnqueuedAt))
			}
		}
		c.checkSize(m)
		if q, ok := c.queues[m.Queue]; ok && m.FormedBy == "FALLBACK" && !oldest.IsZero() &&
			m.CreatedAt.Sub(oldest) < q.FallbackAfter-5*time.Millisecond {
			c.f.addf(vFallbackEarly, "", m.ID, "", "FALLBACK after the oldest waited %s < fallbackAfter %s", m.CreatedAt.Sub(oldest), q.FallbackAfter)
		}
	}
	if len(waits) > 0 {
		slices.Sort(waits)
		c.st.JoinToMatchP50 = dur(waits[len(waits)/2])
		c.st.JoinToMatchP99 = dur(waits[min(len(waits)-1, len(waits)*99/100)])
	}
}

// checkSize: FILLED has K seats; FALLBACK between minPlayers and K; TIMEOUT
// K with bots (where allowed) or at least minPlayers.
func (c *checker) checkSize(m *dbMatch) {
	q, ok := c.queues[m.Queue]
	if !ok {
		c.f.addf(vMatchSize, "", m.ID, "", "match of unknown queue %q", m.Queue)
		return
	}
	n := len(m.Players)
	bad := false
	switch m.FormedBy {
	case "FILLED":
		bad = n != q.Players || m.Bots != 0
	case "FALLBACK":
		bad = q.Kind != "room" || n < max(q.MinPlayers, 2) || n >= q.Players || m.Bots != 0
	case "TIMEOUT":
		if q.Bots && m.Bots > 0 {
			bad = n+m.Bots != q.Players || n < 1
		} else {
			bad = n < max(q.MinPlayers, 2) || n > q.Players || m.Bots != 0
		}
	default:
		bad = true
	}
	if bad {
		c.f.addf(vMatchSize, "", m.ID, "", "%s match of %s with %d seats and %d bots (K=%d, min=%d, bots=%v)",
			m.FormedBy, m.Queue, n, m.Bots, q.Players, q.MinPlayers, q.Bots)
	}
}

// checkTickets: exactly one outcome each, consistent with the matches, by
// the deadline plus slack; cancels only when asked (or heartbeat evictions
// of players actually gone).
func (c *checker) checkTickets() {
	cancelSent := map[string]bool{}
	for _, r := range c.players {
		for _, s := range r.Sent {
			if s.Type == "cancel" {
				cancelSent[s.TicketID] = true
			}
		}
	}
	for _, t := range c.tickets {
		if c.retiredWaiting(t) {
			c.checkRetired(t)
		}
		switch t.Status {
		case protocol.StatusWaiting:
			if c.retiredWaiting(t) {
				continue // checkRetired's
			}
			detail := ""
			if c.redisView != nil && c.f.byKind[vStillWaiting] < maxExamples {
				detail = "; Redis: " + c.redisView(t)
			}
			c.f.addf(vStillWaiting, t.ID, "", t.UserID, "%s ticket still WAITING %s after its deadline %s%s",
				t.Queue, c.end.Sub(t.Deadline).Round(time.Millisecond), t.Deadline.Format(time.RFC3339Nano), detail)
			continue
		case protocol.StatusMatched:
			m := c.matchByID[t.MatchID]
			if m == nil || !slices.ContainsFunc(m.Players, func(s wireSeat) bool { return s.TicketID == t.ID }) {
				c.f.addf(vMatchedNotSeated, t.ID, t.MatchID, t.UserID, "MATCHED but not seated in its match")
			}
		case protocol.StatusCancelled, protocol.StatusExpired:
			if t.MatchID != "" {
				c.f.addf(vBadOutcome, t.ID, t.MatchID, t.UserID, "%s with a match id", t.Status)
			}
		default:
			c.f.addf(vBadOutcome, t.ID, "", t.UserID, "unknown status %q", t.Status)
		}
		late := t.UpdatedAt.Sub(t.Deadline)
		if late > 0 {
			c.st.ResolvedAfterDeadline++
			if dur(late) > c.st.LongestDeadlineToRes {
				c.st.LongestDeadlineToRes, c.st.LongestTicket = dur(late), t.ID
			}
			if late > c.o.Slack {
				c.st.ResolvedBeyondSlack++
			}
			c.st.noteLate(t, late)
			if c.o.LateLimit > 0 && late > c.o.LateLimit && !c.retiredWaiting(t) {
				c.f.addf(vResolvedLate, t.ID, t.MatchID, t.UserID, "%s ticket enqueued %s, deadline %s, %s at %s: %s after its deadline (--late-limit %s)",
					t.Queue, t.EnqueuedAt.Format(time.RFC3339Nano), t.Deadline.Format(time.RFC3339Nano), t.Status,
					t.UpdatedAt.Format(time.RFC3339Nano), late.Round(time.Millisecond), c.o.LateLimit)
			}
		}
		if t.Status == protocol.StatusExpired && late < 0 {
			c.f.addf(vExpiredEarly, t.ID, "", t.UserID, "EXPIRED %s before its deadline", (-late).Round(time.Millisecond))
		}
		if t.Status == protocol.StatusCancelled {
			switch t.CancelReason {
			case "user":
				if !cancelSent[t.ID] {
					c.f.addf(vUnrequestedCancel, t.ID, "", t.UserID, "CANCELLED (user) but the player never sent a cancel for it")
				}
			case "heartbeat":
				c.checkEviction(t)
			}
		}
	}
}

// checkEviction: a ticket cancelled for a missing heartbeat belongs to a
// player who was gone. One who was connected at the time and for at least
// half of the heartbeat timeout before it was not a ghost.
func (c *checker) checkEviction(t *dbTicket) {
	r := c.players[t.UserID]
	if r == nil {
		return
	}
	_, connected := r.connectedAt(t.UpdatedAt, c.end)
	cov := r.coverage(t.UpdatedAt.Add(-c.o.Heartbeat), t.UpdatedAt, c.end)
	if connected && cov >= 0.5 {
		c.f.addf(vEvictedConnected, t.ID, "", t.UserID, "cancelled (heartbeat) at %s while connected (%.0f%% of the preceding %s)",
			t.UpdatedAt.Format(time.RFC3339Nano), cov*100, c.o.Heartbeat)
	}
}

// retiredWaiting reports whether t was waiting in the retired queue when it
// was retired, or was admitted to it after (by a gateway that had not heard
// of the retirement yet).
func (c *checker) retiredWaiting(t *dbTicket) bool {
	return c.retiredQueue != "" && t.Queue == c.retiredQueue &&
		(t.Status == protocol.StatusWaiting || t.UpdatedAt.After(c.retiredAt))
}

// checkRetired: a retired queue takes no joins, but the tickets waiting in
// it are still matched or resolved by their deadline (README "Security":
// queue changes); later than --late-limit (or --slack without one) after
// it, or never, is a violation.
func (c *checker) checkRetired(t *dbTicket) {
	c.st.RetiredWaiting++
	bound := c.o.LateLimit
	if bound == 0 {
		bound = c.o.Slack
	}
	if t.Status == protocol.StatusWaiting {
		c.f.addf(vRetiredUnresolved, t.ID, "", t.UserID, "ticket of the retired queue %s still WAITING %s after its deadline %s (retired at %s)",
			t.Queue, c.end.Sub(t.Deadline).Round(time.Millisecond), t.Deadline.Format(time.RFC3339Nano), c.retiredAt.Format(time.RFC3339Nano))
		return
	}
	c.st.RetiredResolved++
	late := t.UpdatedAt.Sub(t.Deadline)
	if dur(late) > c.st.RetiredLongest {
		c.st.RetiredLongest = dur(late)
	}
	if late > bound {
		c.f.addf(vRetiredUnresolved, t.ID, t.MatchID, t.UserID, "ticket of the retired queue %s %s at %s, %s after its deadline (bound %s)",
			t.Queue, t.Status, t.UpdatedAt.Format(time.RFC3339Nano), late.Round(time.Millisecond), bound)
	}
}
