package gateway

import (
	"context"
	"errors"
	"net/http"
	"net/netip"

	"github.com/gorilla/mux"

	"github.com/matchgate/matchgate/admission"
	"github.com/matchgate/matchgate/matcher"
	"github.com/matchgate/matchgate/protocol"
)

// The admission queue at the edge (ARCHITECTURE.md §8, §10). Players enter,
// ask for their place and leave with their own token, over REST and the
// socket alike; the protected downstream claims, consumes and releases
// the entry tokens with the service credential, which is the admin token
// checked as the admin API checks it: a player token, whatever its
// claims, never reaches a token route. Without Config.Admissions every
// admission route and frame answers NOT_FOUND.

var errNoAdmissions = matcher.Errorf(matcher.CodeNotFound, "admission queues are not enabled on this server")

// Messages of the admission refusals (admissionMessage).
const (
	msgNoPlace = "no place in this admission queue"
	msgNoToken = "no such token, or its life ended"
)

func (s *Server) admissionRoutes(r *mux.Router) {
	player := func(h func(w http.ResponseWriter, r *http.Request, p principal)) http.HandlerFunc {
		return s.withAdmissions(s.withAuth(h))
	}
	r.HandleFunc("/v1/admission/{queue}/enter", player(s.handleEnter)).Methods(http.MethodPost)
	r.HandleFunc("/v1/admission/{queue}/position", player(s.handlePosition)).Methods(http.MethodGet)
	r.HandleFunc("/v1/admission/{queue}", player(s.handleLeave)).Methods(http.MethodDelete)
	r.HandleFunc("/v1/admission/{queue}/tokens/claim", s.withAdmissions(s.tokenCall(Admissions.Claim))).Methods(http.MethodPost)
	r.HandleFunc("/v1/admission/{queue}/tokens/consume", s.withAdmissions(s.tokenCall(Admissions.Consume))).Methods(http.MethodPost)
	r.HandleFunc("/v1/admission/{queue}/tokens/release", s.withAdmissions(s.tokenCall(Admissions.Release))).Methods(http.MethodPost)
}

// withAdmissions answers 404 before anything else (the token too) when
// the server has no admission queues.
func (s *Server) withAdmissions(h http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if s.cfg.Admissions == nil {
			s.writeError(w, r, errNoAdmissions)
			return
		}
		h(w, r)
	}
}

// admissionQueue checks a queue name before the service sees it; a name
// that cannot be a queue's is an unknown queue, as for a join.
func admissionQueue(queue string) error {
	if queue == "" {
		return matcher.Errorf(matcher.CodeBadRequest, "queue is required")
	}
	if !matcher.ValidName(queue) {
		return matcher.Errorf(matcher.CodeUnknownQueue, "no such admission queue (names are lower-case letters, digits, '-' and '_')")
	}
	return nil
}

// enter takes the user's place (or returns the one held), counted against
// the join limits: an entry is the waiting room's join.
func (s *Server) enter(ctx context.Context, p principal, ip netip.Addr, queue string) (protocol.WirePosition, bool, error) {
	if s.cfg.Admissions == nil {
		return protocol.WirePosition{}, false, errNoAdmissions
	}
	if err := admissionQueue(queue); err != nil {
		return protocol.WirePosition{}, false, err
	}
	if s.banned(p.UserID) {
		return protocol.WirePosition{}, false, errBanned
	}
	if err := s.limit(ctx, limitJoinUser, p.UserID, s.cfg.Limits.JoinsPerUser); err != nil {
		return protocol.WirePosition{}, false, err
	}
	if err := s.limitIP(ctx, limitJoinIP, ip, s.cfg.Limits.JoinsPerIP); err != nil {
		return protocol.WirePosition{}, false, err
	}
	pos, created, err := s.cfg.Admissions.Enter(ctx, queue, p.UserID)
	if err != nil {
		return protocol.WirePosition{}, false, refuseAdmission(err, msgNoPlace)
	}
	return protocol.PositionOf(pos), created, nil
}

// position is the user's place, counted against the read limit (a client
// without a socket polls it every pollAfter).
func (s *Server) position(ctx context.Context, p principal, queue string) (protocol.WirePosition, error) {
	if s.cfg.Admissions == nil {
		return protocol.WirePosition{}, errNoAdmissions
	}
	if err := admissionQueue(queue); err != nil {
		return protocol.WirePosition{}, err
	}
	if err := s.limit(ctx, limitReadUser, p.UserID, s.cfg.Limits.ReadsPerUser); err != nil {
		return protocol.WirePosition{}, err
	}
	pos, err := s.cfg.Admissions.Position(ctx, queue, p.UserID)
	if err != nil {
		return protocol.WirePosition{}, refuseAdmission(err, msgNoPlace)
	}
	return protocol.PositionOf(pos), nil
}

// leave gives the user's place up, counted against the cancel limit.
func (s *Server) leave(ctx context.Context, p principal, queue string) error {
	if s.cfg.Admissions == nil {
		return errNoAdmissions
	}
	if err := admissionQueue(queue); err != nil {
		return err
	}
	if err := s.limit(ctx, limitCancelUser, p.UserID, s.cfg.Limits.CancelsPerUser); err != nil {
		return err
	}
	if err := s.cfg.Admissions.Leave(ctx, queue, p.UserID); err != nil {
		return refuseAdmission(err, msgNoPlace)
	}
	return nil
}

// handleEnter: POST /v1/admission/{queue}/enter → 202 {"position"} for a
// new place, 200 with the same place for a repeat. The body, if any, is
// empty: {}.
func (s *Server) handleEnter(w http.ResponseWriter, r *http.Request, p principal) {
	if err := s.decodeBody(w, r, &struct{}{}); err != nil {
		s.writeError(w, r, err)
		return
	}
	ctx, cancel := s.callCtx(r)
	defer cancel()
	pos, created, err := s.enter(ctx, p, s.clientIP(r), mux.Vars(r)["queue"])
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	status := http.StatusOK
	if created {
		status = http.StatusAccepted
	}
	writeJSON(w, status, protocol.PositionBody{Position: pos})
}

// handlePosition: GET /v1/admission/{queue}/position → 200 {"position"}.
func (s *Server) handlePosition(w http.ResponseWriter, r *http.Request, p principal) {
	ctx, cancel := s.callCtx(r)
	defer cancel()
	pos, err := s.position(ctx, p, mux.Vars(r)["queue"])
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, protocol.PositionBody{Position: pos})
}

// handleLeave: DELETE /v1/admission/{queue} → 200 {"position":
// NOT_ENTERED}, the place given up; 404 without one.
func (s *Server) handleLeave(w http.ResponseWriter, r *http.Request, p principal) {
	ctx, cancel := s.callCtx(r)
	defer cancel()
	if err := s.leave(ctx, p, mux.Vars(r)["queue"]); err != nil {
		s.writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, protocol.PositionBody{Position: protocol.PositionOf(admission.Position{})})
}

// tokenCall serves POST /v1/admission/{queue}/tokens/{claim,consume,release}
// {"token"} → 200 {"userId","status","claimedAt","expiresAt"}, for the
// holder of an admin token only (404 while none is configured, 401 for any
// other token). They are not limited: the credential is the service's.
func (s *Server) tokenCall(call func(a Admissions, ctx context.Context, queue, token string) (admission.Place, error)) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if !s.adminAuthorized(w, r, "admission_token",
			matcher.Errorf(matcher.CodeNotFound, "the token routes need a service credential: no admin token is configured")) {
			return
		}
		var body protocol.TokenRequest
		if err := s.decodeBody(w, r, &body); err != nil {
			s.writeError(w, r, err)
			return
		}
		queue := mux.Vars(r)["queue"]
		if err := admissionQueue(queue); err != nil {
			s.writeError(w, r, err)
			return
		}
		switch {
		case body.Token == "":
			s.writeError(w, r, matcher.Errorf(matcher.CodeBadRequest, "token is required"))
			return
		case !validID(body.Token):
			// Tokens are 128 random bits in hex: anything else is no token.
			s.writeError(w, r, matcher.Errorf(matcher.CodeNotFound, msgNoToken))
			return
		}
		ctx, cancel := s.callCtx(r)
		defer cancel()
		pl, err := call(s.cfg.Admissions, ctx, queue, body.Token)
		if err != nil {
			s.writeError(w, r, refuseAdmission(err, msgNoToken))
			return
		}
		writeJSON(w, http.StatusOK, protocol.TokenBodyOf(pl))
	}
}

// admissionRefusal is an admission refusal with what its caller is told:
// the service's errors name their context, not the client's.
type admissionRefusal struct {
	msg string
	err error
}

func (e *admissionRefusal) Error() string { return e.msg + ": " + e.err.Error() }
func (e *admissionRefusal) Unwrap() error { return e.err }

// refuseAdmission gives the admission refusal in err its message, notFound
// being what ErrNotFound means where it was met; any other error is left
// as it is (internal, or UNAVAILABLE).
func refuseAdmission(err error, notFound string) error {
	code, _, ok := protocol.AdmissionCodeOf(err)
	if !ok {
		return err
	}
	return &admissionRefusal{msg: admissionMessage(code, notFound), err: err}
}

func admissionMessage(code protocol.Code, notFound string) string {
	switch code {
	case protocol.CodeUnknownQueue:
		return "no such admission queue"
	case protocol.CodeAlreadyClaimed:
		return "the token was claimed already"
	case protocol.CodeNotClaimed:
		return "the token is not claimed: claim it first"
	}
	return notFound
}

// classifyAdmission is classify's for admission refusals.
func classifyAdmission(err error) (classified, bool) {
	code, status, ok := protocol.AdmissionCodeOf(err)
	if !ok {
		return classified{}, false
	}
	msg := admissionMessage(code, "not found")
	var ar *admissionRefusal
	if errors.As(err, &ar) {
		msg = ar.msg
	}
	return classified{wire: protocol.WireError{Code: code, Message: msg}, status: status}, true
}
