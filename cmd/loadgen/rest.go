package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/url"
	"time"

	"github.com/matchgate/matchgate/protocol"
)

// restCall performs one authenticated REST call and decodes the answer.
func (r *runner) restCall(ctx context.Context, method, base, path, token string, body, out any) error {
	var rd *bytes.Reader
	if body != nil {
		b, _ := json.Marshal(body)
		rd = bytes.NewReader(b)
	} else {
		rd = bytes.NewReader(nil)
	}
	req, err := http.NewRequestWithContext(ctx, method, base+path, rd)
	if err != nil {
		return err
	}
	req.Header.Set("Authorization", "Bearer "+token)
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	return doJSON(r.dial.rest, req, out)
}

// restError records a failed REST call under its API code (or HTTP status).
func (r *runner) restError(err error) {
	var he *httpError
	switch {
	case errors.As(err, &he) && he.code != "":
		r.stats.label(lErrors, he.code)
	case errors.As(err, &he):
		r.stats.label(lErrors, "http_"+itoa(int64(he.status)))
	case errors.Is(err, context.Canceled):
	default:
		r.stats.label(lErrors, "rest_"+dialErrorKind(err))
	}
}

// restJoin is a REST-only player's attempt: POST the ticket, then poll GET
// (and heartbeat) until it is resolved or the run ends. It runs in its own
// goroutine for the life of the attempt.
func (p *player) restJoin() bool {
	q := p.r.pickQueue()
	a := &attempt{queue: q.Queue, region: q.Region, sent: time.Now()}
	p.mu.Lock()
	p.queued = false
	if p.att != nil {
		p.mu.Unlock()
		return false
	}
	p.att = a
	p.r.stats.inc(cWaiting)
	p.mu.Unlock()
	p.r.stats.inc(cJoinsSent)
	p.r.wg.Go(func() { p.restAttempt(a) })
	return true
}

func (p *player) restAttempt(a *attempt) {
	r := p.r
	var body struct {
		Ticket protocol.ClientTicket `json:"ticket"`
	}
	err := r.restCall(r.ctx, http.MethodPost, p.base, "/v1/queues/"+url.PathEscape(a.queue)+"/tickets", p.token,
		map[string]string{"region": a.region}, &body)
	if err != nil {
		r.stats.inc(cJoinErrors)
		r.restError(err)
		p.mu.Lock()
		p.finishLocked(a)
		p.mu.Unlock()
		return
	}
	r.stats.inc(cJoined)
	r.stats.hist(hRestJoin).Record(time.Since(a.sent))
	r.check.Joined(body.Ticket.ID, p.user, true)
	p.mu.Lock()
	a.ticket = body.Ticket.ID
	p.mu.Unlock()
	p.scheduleBehaviours(a)

	poll := time.NewTicker(r.cfg.PollInterval)
	defer poll.Stop()
	lastBeat := time.Now()
	for {
		select {
		case <-r.ctx.Done():
			return
		case <-poll.C:
		}
		p.mu.Lock()
		done := a.done
		p.mu.Unlock()
		if done || r.closing.Load() {
			return
		}
		var v protocol.ClientTicketView
		err := r.restCall(r.ctx, http.MethodGet, p.base, "/v1/tickets/"+a.ticket, p.token, nil, &v)
		r.stats.inc(cRestPolls)
		if err != nil {
			r.restError(err)
			continue
		}
		if v.Ticket.Status != protocol.StatusWaiting {
			p.restOutcome(a, v, srcPoll)
			return
		}
		if time.Since(lastBeat) >= r.cfg.HeartbeatInterval {
			lastBeat = time.Now()
			r.stats.inc(cRestHeartbeats)
			if err := r.restCall(r.ctx, http.MethodPut, p.base, "/v1/tickets/"+a.ticket+"/heartbeat", p.token, nil, nil); err != nil {
				r.restError(err)
			}
		}
	}
}

// restOutcome records a resolved ticket seen through REST.
func (p *player) restOutcome(a *attempt, v protocol.ClientTicketView, source string) {
	r := p.r
	r.check.Tell(v.Ticket.ID, p.user, v.Ticket.Status, v.Ticket.MatchID, source, time.Now())
	if v.Match != nil {
		if r.check.Match(v.Match.ID, seatsOf(v.Match.Players), v.Match.CreatedAt) {
			r.stats.inc(cMatches)
		}
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if a.done {
		return
	}
	if v.Ticket.Status == protocol.StatusMatched {
		r.stats.inc(cFound)
		r.stats.hist(hRestFound).Record(time.Since(a.sent))
		p.finishLocked(a)
	} else {
		p.endLocked(a)
	}
}

// restCancel is a REST player's cancel: DELETE, whose answer is an outcome.
func (p *player) restCancel(a *attempt, ticket string) {
	r := p.r
	var body struct {
		Ticket protocol.ClientTicket `json:"ticket"`
	}
	err := r.restCall(r.ctx, http.MethodDelete, p.base, "/v1/tickets/"+ticket, p.token, nil, &body)
	var he *httpError
	switch {
	case err == nil:
		r.stats.inc(cCancelled)
		r.check.Tell(ticket, p.user, string(body.Ticket.Status), "", srcReply, time.Now())
		p.mu.Lock()
		p.endLocked(a)
		p.mu.Unlock()
	case errors.As(err, &he) && he.code == string(protocol.CodeAlreadyMatched):
		r.stats.inc(cAlreadyMatched)
		r.stats.label(lErrors, he.code)
		// The poll reads the match (and records the outcome with it).
	default:
		r.restError(err)
	}
}
