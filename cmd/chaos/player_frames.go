package main

import (
	"encoding/json"
	"fmt"
	"time"

	"github.com/matchgate/matchgate/protocol"
)

// receive records a frame and updates what the player believes.
func (p *player) receive(rx rxFrame) inFrame {
	if rx.sent {
		p.sent(rx)
		return inFrame{}
	}
	f, err := decodeFrame(rx.raw)
	if err != nil {
		p.rec.Anomalies = append(p.rec.Anomalies, fmt.Sprintf("undecodable frame %q: %v", rx.raw, err))
	}
	p.rec.Frames = append(p.rec.Frames, frameRec{At: rx.at, Session: p.session, Raw: rx.raw, f: f})
	now := rx.at
	switch f.Type {
	case frameHello, frameStatus:
		waiting := ""
		for _, t := range f.Tickets {
			if t.Status == protocol.StatusWaiting {
				waiting = t.ID
			}
		}
		switch {
		case waiting != "" && waiting != p.current:
			p.adopt(waiting, now, false) // e.g. a join whose reply went with a killed gateway
		case waiting == "" && p.current != "":
			p.resolved(now) // resolved while away: hello lists it
		}
	case frameJoined:
		if p.pendingJoin != nil && f.Re == p.pendingJoin.ID {
			p.pendingJoin = nil
			if f.Ticket != nil {
				p.adopt(f.Ticket.ID, now, true)
			}
		}
	case frameCancelled:
		if p.pendingCancel != nil && f.Re == p.pendingCancel.ID {
			p.pendingCancel = nil
		}
		if f.Ticket != nil && f.Ticket.ID == p.current {
			p.resolved(now)
		}
		if f.Ticket != nil {
			p.maybeRepeat(f.Ticket.ID, now)
		}
	case frameMatchFound:
		if f.Match != nil {
			for _, s := range f.Match.Players {
				if s.TicketID == p.current && p.current != "" {
					p.resolved(now)
				}
			}
		}
	case frameTicketUpdate:
		if f.Ticket != nil && f.Ticket.ID == p.current && f.Ticket.Status != protocol.StatusWaiting {
			p.resolved(now)
		}
	case frameError:
		p.onError(f, now)
	}
	return f
}

// sent records a command as the client wrote it, and gives the pending
// request it is the client's id, which its reply's re carries.
func (p *player) sent(rx rxFrame) {
	var cmd protocol.Command
	if err := json.Unmarshal(rx.raw, &cmd); err != nil {
		p.rec.Anomalies = append(p.rec.Anomalies, fmt.Sprintf("undecodable command %q: %v", rx.raw, err))
		return
	}
	r := sentRec{At: rx.at, Session: p.session, ID: cmd.ID, Type: cmd.Type, Queue: cmd.Queue, TicketID: cmd.TicketID}
	var req *sentRec
	switch cmd.Type {
	case "join":
		req = p.pendingJoin
	case "cancel":
		req = p.pendingCancel
	}
	if req != nil && req.ID == "" {
		req.ID = cmd.ID
		r.At = req.At
	}
	p.rec.Sent = append(p.rec.Sent, r)
}

func (p *player) onError(f inFrame, now time.Time) {
	code, ticket := "", ""
	if f.Error != nil {
		code, ticket = f.Error.Code, f.Error.TicketID
	}
	switch {
	case p.pendingJoin != nil && f.Re == p.pendingJoin.ID:
		p.pendingJoin = nil
		if code == codeAlreadyQueued && ticket != "" {
			p.adopt(ticket, now, false)
		} else {
			p.nextJoin = now.Add(time.Second)
		}
	case p.pendingCancel != nil && f.Re == p.pendingCancel.ID:
		target := p.pendingCancel.TicketID
		p.pendingCancel = nil
		switch code {
		case codeAlreadyMatched, codeAlreadyCancelled, codeNotFound:
			if target == p.current {
				p.resolved(now)
			}
			p.maybeRepeat(target, now)
		default: // UNAVAILABLE, INTERNAL, RATE_LIMITED: try again shortly
			if p.cancelTries < 3 && target == p.cancelTicket {
				p.cancelAt = now.Add(500 * time.Millisecond)
			}
		}
	}
}

// adopt makes id the player's waiting ticket; a fresh one (just joined)
// gets its fate planned: a cancel, a drop, a ghost drop, or nothing.
func (p *player) adopt(id string, now time.Time, fresh bool) {
	p.current = id
	if !fresh {
		return
	}
	d := p.sim.o.Deadline
	at := time.Time{}
	switch x := p.rng.Float64(); {
	case x < pFastCancel:
		at = now.Add(p.uniform(0, 300*time.Millisecond))
	case x < pCancel:
		at = now.Add(p.uniform(0, d*6/5))
	}
	if !at.IsZero() {
		p.cancelTicket, p.cancelAt, p.cancelTries = id, at, 0
		p.stubborn = p.rng.Float64() < pStubborn
		p.repeat = p.rng.Float64() < pRepeat
	}
	if !now.Before(p.sim.joinStop) {
		return
	}
	switch x := p.rng.Float64(); {
	case x < pGhost:
		p.dropAt, p.ghost = now.Add(p.uniform(0, d/2)), true
		p.away = p.sim.o.Heartbeat + p.uniform(2*time.Second, 4*time.Second)
	case x < pDrop:
		p.dropAt, p.ghost = now.Add(p.uniform(0, d)), false
		p.away = p.uniform(100*time.Millisecond, 2*time.Second)
	}
}

// resolved ends the current ticket; the player thinks a moment before the
// next join.
func (p *player) resolved(now time.Time) {
	if !p.stubborn {
		p.cancelTicket, p.cancelAt = "", time.Time{}
	}
	p.current = ""
	if !p.ghost {
		p.dropAt = time.Time{}
	}
	p.nextJoin = now.Add(p.uniform(200*time.Millisecond, 2*time.Second))
}

// maybeRepeat sends the same cancel once more, shortly after the first was
// answered, when the plan says so: the second answer must be
// ALREADY_CANCELLED (or ALREADY_MATCHED).
func (p *player) maybeRepeat(ticket string, now time.Time) {
	if !p.repeat || ticket == "" {
		return
	}
	p.repeat = false
	p.cancelTicket, p.cancelAt = ticket, now.Add(p.uniform(0, 200*time.Millisecond))
}
