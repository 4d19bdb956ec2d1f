package gateway

import (
	"context"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/gorilla/mux"

	"github.com/matchgate/matchgate/matcher"
	"github.com/matchgate/matchgate/matcher/engine"
	"github.com/matchgate/matchgate/protocol"
)

// Attribute limits, checked at the edge before Join.
const (
	maxAttributes     = 16
	maxAttrKeyRunes   = 32
	maxAttrValueRunes = 64
)

var (
	errNoRoute  = matcher.Errorf(matcher.CodeNotFound, "no such route")
	errNoTicket = matcher.Errorf(matcher.CodeNotFound, "no such ticket")
	errNoMatch  = matcher.Errorf(matcher.CodeNotFound, "no such match")
)

// validateAttributes enforces the attribute limits: at most 16 entries,
// non-empty keys of at most 32 characters, values of at most 64, all valid
// UTF-8 without control characters (a NUL cannot even be stored in
// PostgreSQL's jsonb).
func validateAttributes(attrs map[string]string) error {
	if len(attrs) > maxAttributes {
		return matcher.Errorf(matcher.CodeBadRequest, "at most %d attributes", maxAttributes)
	}
	for k, v := range attrs {
		if k == "" || utf8.RuneCountInString(k) > maxAttrKeyRunes {
			return matcher.Errorf(matcher.CodeBadRequest, "attribute names must be 1..%d characters", maxAttrKeyRunes)
		}
		if utf8.RuneCountInString(v) > maxAttrValueRunes {
			return matcher.Errorf(matcher.CodeBadRequest, "attribute values must be at most %d characters", maxAttrValueRunes)
		}
		if !printable(k) || !printable(v) {
			return matcher.Errorf(matcher.CodeBadRequest, "attribute names and values must be printable UTF-8")
		}
	}
	return nil
}

// printable reports whether s is valid UTF-8 without control characters.
func printable(s string) bool {
	return utf8.ValidString(s) && !strings.ContainsFunc(s, unicode.IsControl)
}

// joinRequest builds a JoinRequest; skill, activity and priority come from
// the token only (nil, nil and none when the token has none).
func (p principal) joinRequest(queue, region string, attrs map[string]string) matcher.JoinRequest {
	return matcher.JoinRequest{
		UserID: p.UserID, Name: p.Name, Queue: queue, Region: region,
		Skill: p.Skill, Activity: p.Activity, Attributes: attrs, Priority: p.Priority,
	}
}

// callCtx bounds one Matchmaker call made for a REST request.
func (s *Server) callCtx(r *http.Request) (context.Context, context.CancelFunc) {
	return context.WithTimeout(r.Context(), s.cfg.CommandTimeout)
}

// handleJoin: POST /v1/queues/{queue}/tickets → 202 {"ticket"}.
func (s *Server) handleJoin(w http.ResponseWriter, r *http.Request, p principal) {
	var body protocol.JoinBody
	if err := s.decodeBody(w, r, &body); err != nil {
		s.writeError(w, r, err)
		return
	}
	ctx, cancel := s.callCtx(r)
	defer cancel()
	queue := mux.Vars(r)["queue"]
	if err := s.admitJoin(ctx, p, s.clientIP(r), queue, body.Region, body.Attributes); err != nil {
		s.writeError(w, r, err)
		return
	}
	t, err := s.cfg.Matchmaker.Join(ctx, p.joinRequest(queue, body.Region, body.Attributes))
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusAccepted, protocol.TicketBody{Ticket: protocol.TicketOf(t)})
}

// handleGetTicket: GET /v1/tickets/{id} → 200 {"ticket","match"}: the
// reconnect fallback.
func (s *Server) handleGetTicket(w http.ResponseWriter, r *http.Request, p principal) {
	if !validID(mux.Vars(r)["id"]) {
		s.writeError(w, r, errNoTicket)
		return
	}
	ctx, cancel := s.callCtx(r)
	defer cancel()
	if err := s.limit(ctx, limitReadUser, p.UserID, s.cfg.Limits.ReadsPerUser); err != nil {
		s.writeError(w, r, err)
		return
	}
	v, err := s.cfg.Matchmaker.Ticket(ctx, p.UserID, mux.Vars(r)["id"])
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, protocol.TicketViewOf(v))
}

// handleTickets: GET /v1/tickets?before=&limit= → 200
// {"tickets","matches","more","next"}: the user's resolved tickets newest
// first, a page at a time (the rest of what hello left out).
func (s *Server) handleTickets(w http.ResponseWriter, r *http.Request, p principal) {
	q := r.URL.Query()
	limit := 0
	if raw := q.Get("limit"); raw != "" {
		n, err := strconv.Atoi(raw)
		if err != nil || n < 1 || n > engine.MaxHistoryPage {
			s.writeError(w, r, matcher.Errorf(matcher.CodeBadRequest, "limit must be 1..%d", engine.MaxHistoryPage))
			return
		}
		limit = n
	}
	ctx, cancel := s.callCtx(r)
	defer cancel()
	if err := s.limit(ctx, limitReadUser, p.UserID, s.cfg.Limits.ReadsPerUser); err != nil {
		s.writeError(w, r, err)
		return
	}
	st, err := s.cfg.Matchmaker.TicketHistory(ctx, p.UserID, q.Get("before"), limit)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, protocol.HistoryOf(st))
}

// handleCancel: DELETE /v1/tickets/{id} → 200 {"ticket"}.
func (s *Server) handleCancel(w http.ResponseWriter, r *http.Request, p principal) {
	if !validID(mux.Vars(r)["id"]) {
		s.writeError(w, r, errNoTicket)
		return
	}
	ctx, cancel := s.callCtx(r)
	defer cancel()
	if err := s.limit(ctx, limitCancelUser, p.UserID, s.cfg.Limits.CancelsPerUser); err != nil {
		s.writeError(w, r, err)
		return
	}
	t, err := s.cfg.Matchmaker.Cancel(ctx, p.UserID, mux.Vars(r)["id"])
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, protocol.TicketBody{Ticket: protocol.TicketOf(t)})
}

// handleHeartbeat: PUT /v1/tickets/{id}/heartbeat → 204.
func (s *Server) handleHeartbeat(w http.ResponseWriter, r *http.Request, p principal) {
	if !validID(mux.Vars(r)["id"]) {
		s.writeError(w, r, errNoTicket)
		return
	}
	ctx, cancel := s.callCtx(r)
	defer cancel()
	if err := s.limit(ctx, limitHeartbeatUser, p.UserID, s.cfg.Limits.HeartbeatsPerUser); err != nil {
		s.writeError(w, r, err)
		return
	}
	if err := s.cfg.Matchmaker.Heartbeat(ctx, p.UserID, mux.Vars(r)["id"]); err != nil {
		s.writeError(w, r, err)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

// handleAccept: POST /v1/matches/{id}/accept → 200 {"match"}.
func (s *Server) handleAccept(w http.ResponseWriter, r *http.Request, p principal) {
	s.matchCall(w, r, p, s.cfg.Matchmaker.Accept)
}

// handleDecline: POST /v1/matches/{id}/decline → 200 {"match"}.
func (s *Server) handleDecline(w http.ResponseWriter, r *http.Request, p principal) {
	s.matchCall(w, r, p, s.cfg.Matchmaker.Decline)
}

func (s *Server) matchCall(w http.ResponseWriter, r *http.Request, p principal,
	call func(ctx context.Context, userID, matchID string) (matcher.Match, error)) {
	if !validID(mux.Vars(r)["id"]) {
		s.writeError(w, r, errNoMatch)
		return
	}
	ctx, cancel := s.callCtx(r)
	defer cancel()
	if err := s.limit(ctx, limitAcceptUser, p.UserID, s.cfg.Limits.AcceptsPerUser); err != nil {
		s.writeError(w, r, err)
		return
	}
	m, err := call(ctx, p.UserID, mux.Vars(r)["id"])
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, protocol.MatchBody{Match: protocol.MatchOf(m)})
}

// handleQueues: GET /v1/queues → 200 {"queues":[…]}: the matched queues,
// then the admission queues with their rates and the ETA's error. Public:
// queue names, depths and rates carry no user data, and the demo lists them
// before sign-in. It is limited per user with a valid token, else per
// client address; the admission figures are the service's, measured at
// most once a second.
func (s *Server) handleQueues(w http.ResponseWriter, r *http.Request) {
	ctx, cancel := s.callCtx(r)
	defer cancel()
	var err error
	if p, aerr := s.authenticate(r, false); aerr == nil {
		err = s.limit(ctx, limitReadUser, p.UserID, s.cfg.Limits.ReadsPerUser)
	} else {
		err = s.limitIP(ctx, limitReadIP, s.clientIP(r), s.cfg.Limits.ReadsPerIP)
	}
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	qs, err := s.cfg.Matchmaker.Queues(ctx)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	list := make([]protocol.WireQueue, 0, len(qs))
	for i := range qs {
		list = append(list, protocol.WireQueue{Matched: &qs[i]})
	}
	if s.cfg.Admissions != nil {
		as, err := s.cfg.Admissions.Queues(ctx)
		if err != nil {
			s.writeError(w, r, matcher.Unavailable(fmt.Errorf("admission queues: %w", err)))
			return
		}
		for _, a := range as {
			list = append(list, protocol.AdmissionQueueOf(a))
		}
	}
	writeJSON(w, http.StatusOK, protocol.QueuesBody{Queues: list})
}
