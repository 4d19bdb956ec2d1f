package main

import (
	"fmt"
	"time"

	"github.com/matchgate/matchgate/protocol"
)

// reqKey names a request: its session and id.
type reqKey struct {
	session int
	id      string
}

// checkClients: every outcome a player was told agrees with the record.
func (c *checker) checkClients() {
	for _, r := range c.players {
		// A request's id is its session's client's: unique in the session.
		sent := map[reqKey]sentRec{}
		for _, s := range r.Sent {
			sent[reqKey{s.Session, s.ID}] = s
		}
		for _, u := range r.Unanswered {
			c.f.addf(vRequestUnanswered, u.TicketID, "", r.User, "%s %s sent at %s in session %d: no reply within %s on an open socket",
				u.Type, u.ID, u.At.Format(time.RFC3339Nano), u.Session, requestTimeout)
		}
		for _, a := range r.Anomalies {
			c.f.addf(vProtocol, "", "", r.User, "%s", a)
		}
		if r.GaveUp {
			c.f.addf(vPlayerGaveUp, "", "", r.User, "gave up: %s", r.GaveUpWhy)
		}
		for _, fr := range r.Frames {
			c.checkFrame(r, fr, sent)
		}
	}
}

func (c *checker) checkFrame(r *playerRec, fr frameRec, sent map[reqKey]sentRec) {
	f := fr.f
	at := fr.At.Format(time.RFC3339Nano)
	switch f.Type {
	case frameJoined:
		if f.Ticket == nil {
			c.f.addf(vProtocol, "", "", r.User, "joined without a ticket at %s", at)
			return
		}
		t := c.tickets[f.Ticket.ID]
		switch {
		case t == nil:
			c.f.addf(vJoinedMissing, f.Ticket.ID, "", r.User, "told joined at %s; no such ticket in the record", at)
		case t.UserID != r.User:
			c.f.addf(vJoinedMissing, t.ID, "", r.User, "told joined at %s; the record's ticket is %s's", at, t.UserID)
		case absDur(t.Deadline.Sub(f.Ticket.Deadline)) > time.Millisecond:
			c.f.addf(vDeadlineMoved, t.ID, "", r.User, "joined said deadline %s, record says %s", f.Ticket.Deadline.Format(time.RFC3339Nano), t.Deadline.Format(time.RFC3339Nano))
		case absDur(f.Ticket.Deadline.Sub(f.Ticket.EnqueuedAt)-c.o.Deadline) > time.Millisecond:
			c.f.addf(vDeadlineMoved, t.ID, "", r.User, "deadline %s after enqueue, queue deadline %s", f.Ticket.Deadline.Sub(f.Ticket.EnqueuedAt), c.o.Deadline)
		}
	case frameCancelled:
		c.st.CancelReplies["cancelled"]++
		if f.Ticket == nil {
			c.f.addf(vProtocol, "", "", r.User, "cancelled without a ticket at %s", at)
			return
		}
		if req, ok := sent[reqKey{fr.Session, f.Re}]; ok && req.TicketID != f.Ticket.ID {
			c.f.addf(vToldCancelled, f.Ticket.ID, "", r.User, "cancel of %s answered with ticket %s", req.TicketID, f.Ticket.ID)
		}
		if t := c.tickets[f.Ticket.ID]; t == nil || t.Status != protocol.StatusCancelled {
			c.f.addf(vToldCancelled, f.Ticket.ID, "", r.User, "told cancelled at %s; record says %s", at, describe(t))
		}
	case frameError:
		c.checkError(r, fr, sent)
	case frameMatchFound:
		if f.Match == nil {
			c.f.addf(vProtocol, "", "", r.User, "match.found without a match at %s", at)
			return
		}
		c.checkToldMatch(r, *f.Match, "match.found", at)
	case frameTicketUpdate:
		if f.Ticket != nil {
			c.checkToldTicket(r, *f.Ticket, "ticket.update", at)
		}
	case frameHello, frameStatus:
		for _, t := range f.Tickets {
			c.checkToldTicket(r, t, f.Type, at)
		}
		for _, m := range f.Matches {
			c.checkToldMatch(r, m, f.Type, at)
		}
	}
}

func (c *checker) checkError(r *playerRec, fr frameRec, sent map[reqKey]sentRec) {
	e := fr.f.Error
	if e == nil {
		c.f.addf(vProtocol, "", "", r.User, "error frame without error at %s", fr.At.Format(time.RFC3339Nano))
		return
	}
	req, hasReq := sent[reqKey{fr.Session, fr.f.Re}]
	ticket := e.TicketID
	if ticket == "" && hasReq {
		ticket = req.TicketID
	}
	at := fr.At.Format(time.RFC3339Nano)
	if hasReq && req.Type == "cancel" {
		c.st.CancelReplies[e.Code]++
		if ticket != req.TicketID {
			c.f.addf(vToldCancelled, req.TicketID, "", r.User, "cancel of %s answered %s about ticket %s", req.TicketID, e.Code, ticket)
		}
	}
	t := c.tickets[ticket]
	switch e.Code {
	case codeAlreadyMatched:
		if t == nil || t.Status != protocol.StatusMatched || t.MatchID != e.MatchID {
			c.f.addf(vToldAlreadyMatched, ticket, e.MatchID, r.User, "told ALREADY_MATCHED (%s) at %s; record says %s", e.MatchID, at, describe(t))
		}
	case codeAlreadyCancelled:
		if t == nil || (t.Status != protocol.StatusCancelled && t.Status != protocol.StatusExpired) {
			c.f.addf(vToldAlreadyCanceled, ticket, "", r.User, "told ALREADY_CANCELLED at %s; record says %s", at, describe(t))
		}
	case codeNotFound:
		if hasReq && req.Type == "cancel" && t != nil && t.UserID == r.User {
			c.f.addf(vToldNotFound, ticket, "", r.User, "cancel of the player's own ticket answered NOT_FOUND at %s", at)
		}
	case codeAlreadyQueued:
		if t == nil || t.UserID != r.User {
			c.f.addf(vToldAlreadyQueued, ticket, "", r.User, "told ALREADY_QUEUED with ticket %q at %s; record says %s", ticket, at, describe(t))
		}
	}
}

// checkToldMatch: a match a player was shown exists as shown and seats the
// player in a ticket MATCHED in it.
func (c *checker) checkToldMatch(r *playerRec, m wireMatch, via, at string) {
	dm := c.matchByID[m.ID]
	if dm == nil {
		c.f.addf(vToldMatchFound, "", m.ID, r.User, "%s at %s shows a match the record does not have", via, at)
		return
	}
	if len(dm.Players) != len(m.Players) {
		c.f.addf(vToldMatchFound, "", m.ID, r.User, "%s at %s shows %d seats, record %d", via, at, len(m.Players), len(dm.Players))
	}
	mine := 0
	for _, s := range m.Players {
		if s.UserID != r.User {
			continue
		}
		mine++
		if t := c.tickets[s.TicketID]; t == nil || t.Status != protocol.StatusMatched || t.MatchID != m.ID {
			c.f.addf(vToldMatchFound, s.TicketID, m.ID, r.User, "%s at %s; record says %s", via, at, describe(t))
		}
	}
	if mine == 0 {
		c.f.addf(vToldMatchFound, "", m.ID, r.User, "%s at %s shows a match the player is not seated in", via, at)
	}
}

// checkToldTicket: a resolved state shown to the player is the record's.
// WAITING is a snapshot and may have changed since.
func (c *checker) checkToldTicket(r *playerRec, wt wireTicket, via, at string) {
	t := c.tickets[wt.ID]
	if t == nil || t.UserID != r.User {
		c.f.addf(vToldTicketState, wt.ID, "", r.User, "%s at %s shows a ticket; record says %s", via, at, describe(t))
		return
	}
	if wt.Status == protocol.StatusWaiting {
		return
	}
	if wt.Status != t.Status || wt.MatchID != t.MatchID {
		c.f.addf(vToldTicketState, wt.ID, wt.MatchID, r.User, "%s at %s says %s (match %q); record says %s", via, at, wt.Status, wt.MatchID, describe(t))
	}
}

func describe(t *dbTicket) string {
	if t == nil {
		return "no such ticket"
	}
	s := t.Status
	if t.MatchID != "" {
		s += " in " + t.MatchID
	}
	if t.CancelReason != "" {
		s += fmt.Sprintf(" (%s)", t.CancelReason)
	}
	return s + " at " + t.UpdatedAt.Format(time.RFC3339Nano)
}

func absDur(d time.Duration) time.Duration {
	if d < 0 {
		return -d
	}
	return d
}
