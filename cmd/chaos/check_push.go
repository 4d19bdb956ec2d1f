package main

import (
	"time"

	"github.com/matchgate/matchgate/protocol"
)

// seen is what one player learned about matches and tickets.
type seen struct {
	pushed  map[string]int  // match id → match.found frames
	inState map[string]bool // match id shown by hello or status
	outcome map[string]bool // ticket ids whose resolved state the player saw
}

func seenBy(r *playerRec) seen {
	s := seen{pushed: map[string]int{}, inState: map[string]bool{}, outcome: map[string]bool{}}
	for _, fr := range r.Frames {
		f := fr.f
		switch f.Type {
		case frameMatchFound:
			if f.Match != nil {
				s.pushed[f.Match.ID]++
				for _, p := range f.Match.Players {
					if p.UserID == r.User {
						s.outcome[p.TicketID] = true
					}
				}
			}
		case frameHello, frameStatus:
			for _, m := range f.Matches {
				s.inState[m.ID] = true
			}
			for _, t := range f.Tickets {
				if t.MatchID != "" {
					s.inState[t.MatchID] = true
				}
				if t.Status != protocol.StatusWaiting {
					s.outcome[t.ID] = true
				}
			}
		case frameTicketUpdate, frameCancelled:
			if f.Ticket != nil && f.Ticket.Status != protocol.StatusWaiting {
				s.outcome[f.Ticket.ID] = true
			}
		}
	}
	return s
}

// checkPushes: every player connected when its match was created received
// the match, as match.found or, after a reconnect, in hello (ARCHITECTURE.md §7.5).
func (c *checker) checkPushes() {
	seens := map[string]seen{}
	for u, r := range c.players {
		s := seenBy(r)
		seens[u] = s
		for _, n := range s.pushed {
			if n > 1 {
				c.st.DuplicatePushes += n - 1
			}
		}
	}
	for _, m := range c.matches {
		for _, seat := range m.Players {
			r := c.players[seat.UserID]
			if r == nil {
				continue
			}
			s := seens[seat.UserID]
			sess, ok := r.connectedAt(m.CreatedAt, c.end)
			if !ok {
				c.checkAway(r, m, seat, s)
				continue
			}
			c.st.SeatsConnected++
			switch {
			case s.pushed[m.ID] > 0:
				c.st.SeatsByPush++
			case s.inState[m.ID]:
				c.st.SeatsByHelloOnly++
			default:
				end := "still open at the end"
				if !sess.End.IsZero() {
					end = "ended (" + sess.EndReason + ") at " + sess.End.Format(time.RFC3339Nano)
				}
				c.f.addf(vMatchFoundMissing, seat.TicketID, m.ID, seat.UserID,
					"match created at %s while session %d (gateway %s, node %s, hello at %s) was open; it %s; %d sessions in all; the match never reached the player; that session's frames after the creation: %s",
					m.CreatedAt.Format(time.RFC3339Nano), sess.N, sess.Gateway, sess.Node, sess.Hello.Format(time.RFC3339Nano), end, len(r.Sessions),
					framesAfter(r, sess.N, m.CreatedAt))
			}
		}
	}
	for _, t := range c.tickets {
		if t.Status == protocol.StatusExpired {
			if s, ok := seens[t.UserID]; ok && !s.outcome[t.ID] {
				c.st.ExpiredUnseen++
			}
		}
	}
}

// helloHistory is how far back a hello surely reaches: the server lists
// tickets resolved in the last 10 minutes (ServiceConfig.History); the check
// stays well inside that.
const helloHistory = 5 * time.Minute

// checkAway: a player away when its match was created learns of it in the
// hello of its next session (ARCHITECTURE.md §7.9: a push missed while offline is never
// lost).
func (c *checker) checkAway(r *playerRec, m *dbMatch, seat wireSeat, s seen) {
	var next *sessionRec
	for i := range r.Sessions {
		if r.Sessions[i].Hello.After(m.CreatedAt) {
			next = &r.Sessions[i]
			break
		}
	}
	if next == nil || next.Hello.Sub(m.CreatedAt) > helloHistory {
		return // never came back (in time): nothing to check
	}
	c.st.SeatsAway++
	if s.pushed[m.ID] > 0 || s.inState[m.ID] {
		return
	}
	c.f.addf(vMatchFoundMissing, seat.TicketID, m.ID, seat.UserID,
		"match created at %s while the player was away; session %d (gateway %s, node %s) began with hello at %s, and the match never reached the player",
		m.CreatedAt.Format(time.RFC3339Nano), next.N, next.Gateway, next.Node, next.Hello.Format(time.RFC3339Nano))
}

// framesAfter counts by type the frames of session n read after t: a
// session that still got replies but no push at all points at its
// subscription rather than at the publisher.
func framesAfter(r *playerRec, n int, t time.Time) string {
	counts := map[string]int{}
	for _, f := range r.Frames {
		if f.Session == n && f.At.After(t) {
			counts[f.f.Type]++
		}
	}
	return kv(counts)
}
