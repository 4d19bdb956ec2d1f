package gateway

import (
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/json"
	"log/slog"
	"net/http"
	"time"

	"github.com/coder/websocket"
	"github.com/gorilla/mux"

	"github.com/matchgate/matchgate/control"
	"github.com/matchgate/matchgate/matcher"
)

// The admin API lives under /v1/admin/ and is authenticated by its own
// static bearer tokens (Config.AdminTokens), not by player tokens: no claim
// in a token signed with the players' key, which a game backend also holds,
// can reach it. Without admin tokens every admin route answers 404, as an
// unknown path does.

// maxAdminBodyBytes bounds admin request bodies (a queue configuration).
const maxAdminBodyBytes = control.MaxQueueConfigBytes + 1024

func (s *Server) adminRoutes(r *mux.Router) {
	a := func(action string, h func(w http.ResponseWriter, r *http.Request) error) http.HandlerFunc {
		return s.withAdmin(action, h)
	}
	r.HandleFunc("/v1/admin/bans", a("list_bans", s.handleListBans)).Methods(http.MethodGet)
	r.HandleFunc("/v1/admin/bans/{user}", a("ban", s.handleBan)).Methods(http.MethodPut)
	r.HandleFunc("/v1/admin/bans/{user}", a("unban", s.handleUnban)).Methods(http.MethodDelete)
	r.HandleFunc("/v1/admin/users/{user}/disconnect", a("disconnect", s.handleDisconnect)).Methods(http.MethodPost)
	r.HandleFunc("/v1/admin/nodes/{node}/drain", a("drain", s.handleDrain)).Methods(http.MethodPost)
	r.HandleFunc("/v1/admin/assignments/{id}/end", a("end_assignment", s.handleOperatorEnd)).Methods(http.MethodPost)
	r.HandleFunc("/v1/admin/queues", a("list_queues", s.handleListQueues)).Methods(http.MethodGet)
	r.HandleFunc("/v1/admin/queues/{queue}", a("put_queue", s.handlePutQueue)).Methods(http.MethodPut)
	r.HandleFunc("/v1/admin/queues/{queue}", a("retire_queue", s.handleRetireQueue)).Methods(http.MethodDelete)
	r.HandleFunc("/v1/admin/rankings/{board}/weights", a("ranking_weights", s.handleSetRankingWeights)).Methods(http.MethodPut)
}

// adminActions are the values of the admin metric's action label.
var adminActions = []string{"list_bans", "ban", "unban", "disconnect", "drain", "list_queues", "put_queue", "retire_queue", "end_assignment", "ranking_weights"}

// withAdmin checks the admin token (in constant time), runs h, answers its
// error, and writes an audit line for every change.
func (s *Server) withAdmin(action string, h func(w http.ResponseWriter, r *http.Request) error) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if !s.adminAuthorized(w, r, action, errNoRoute) {
			return
		}
		err := h(w, r)
		attrs := []any{slog.String("request_id", requestID(r.Context())), slog.String("action", action),
			slog.String("client", ipSubject(s.clientIP(r)))}
		for k, v := range mux.Vars(r) {
			attrs = append(attrs, slog.String(k, v))
		}
		if err != nil {
			s.log.Warn("admin request failed", append(attrs, slog.Any("error", err))...)
			s.writeError(w, r, err)
			return
		}
		s.metrics.adminActions.WithLabelValues(action).Inc()
		if r.Method != http.MethodGet {
			s.log.Info("admin action", attrs...)
		}
	}
}

// adminAuthorized checks the request's admin token and answers the request
// itself when it fails: disabled (404) while no admin token is configured,
// 401 UNAUTHORIZED, logged, for a missing or wrong one. The admin API and
// the admission token routes (the service credential) share it.
func (s *Server) adminAuthorized(w http.ResponseWriter, r *http.Request, action string, disabled error) bool {
	if len(s.adminKeys) == 0 {
		s.writeError(w, r, disabled)
		return false
	}
	if !s.isAdmin(bearer(r)) {
		s.log.Warn("admin request refused: bad or missing admin token",
			slog.String("request_id", requestID(r.Context())), slog.String("action", action),
			slog.String("client", ipSubject(s.clientIP(r))))
		s.writeError(w, r, matcher.Errorf(matcher.CodeUnauthorized, "missing or invalid admin token"))
		return false
	}
	return true
}

// isAdmin compares tok with every admin token in constant time (over
// SHA-256 digests, so the length of a token does not leak either).
func (s *Server) isAdmin(tok string) bool {
	if tok == "" {
		return false
	}
	d := sha256.Sum256([]byte(tok))
	ok := 0
	for _, k := range s.adminKeys {
		ok |= subtle.ConstantTimeCompare(d[:], k[:])
	}
	return ok == 1
}

func (s *Server) adminCtx(r *http.Request) (context.Context, context.CancelFunc) {
	return context.WithTimeout(r.Context(), s.cfg.CommandTimeout)
}

// handleListBans: GET /v1/admin/bans → {"bans":[…]}.
func (s *Server) handleListBans(w http.ResponseWriter, r *http.Request) error {
	ctx, cancel := s.adminCtx(r)
	defer cancel()
	bans, err := s.cfg.Admin.Bans(ctx)
	if err != nil {
		return err
	}
	if bans == nil {
		bans = []control.Ban{}
	}
	writeJSON(w, http.StatusOK, struct {
		Bans []control.Ban `json:"bans"`
	}{bans})
	return nil
}

// banBody is PUT /v1/admin/bans/{user}: a reason, and either a duration
// ("24h") or an end time; neither means until lifted.
type banBody struct {
	Reason   string     `json:"reason"`
	Duration string     `json:"duration"`
	Until    *time.Time `json:"until"`
}

// handleBan: PUT /v1/admin/bans/{user} → 200 {"ban","cancelledTickets"}.
// The ban is stored and published (every gateway closes the user's sockets
// with CloseBanned); the user's waiting tickets are cancelled, so a banned
// player is not matched with anyone.
func (s *Server) handleBan(w http.ResponseWriter, r *http.Request) error {
	var body banBody
	if err := s.decodeBodyLimit(w, r, &body, maxAdminBodyBytes); err != nil {
		return err
	}
	b := control.Ban{UserID: mux.Vars(r)["user"], Reason: body.Reason, Until: body.Until}
	if body.Duration != "" {
		if body.Until != nil {
			return matcher.Errorf(matcher.CodeBadRequest, "give duration or until, not both")
		}
		d, err := time.ParseDuration(body.Duration)
		if err != nil || d <= 0 {
			return matcher.Errorf(matcher.CodeBadRequest, "duration must be a positive Go duration such as 24h")
		}
		until := s.cfg.Now().Add(d)
		b.Until = &until
	}
	ctx, cancel := s.adminCtx(r)
	defer cancel()
	b, err := s.cfg.Admin.Ban(ctx, b)
	if err != nil {
		return err
	}
	s.DisconnectUser(b.UserID, CloseBanned, "banned")
	cancelled := s.cancelWaiting(ctx, b.UserID)
	writeJSON(w, http.StatusOK, struct {
		Ban              control.Ban `json:"ban"`
		CancelledTickets []string    `json:"cancelledTickets"`
	}{b, cancelled})
	return nil
}

// cancelWaiting cancels the user's waiting tickets and returns their ids;
// failures are logged (the ticket then ends at its deadline or heartbeat
// timeout, and the banned user cannot join again).
func (s *Server) cancelWaiting(ctx context.Context, userID string) []string {
	cancelled := []string{}
	st, err := s.cfg.Matchmaker.UserState(ctx, userID)
	if err != nil {
		s.log.Warn("ban: load the user's tickets", slog.String("user", userID), slog.Any("error", err))
		return cancelled
	}
	for _, t := range st.Tickets {
		if t.Status != matcher.StatusWaiting {
			continue
		}
		if _, err := s.cfg.Matchmaker.Cancel(ctx, userID, t.ID); err != nil {
			s.log.Warn("ban: cancel a waiting ticket", slog.String("user", userID), slog.String("ticket", t.ID), slog.Any("error", err))
			continue
		}
		cancelled = append(cancelled, t.ID)
	}
	return cancelled
}

// handleUnban: DELETE /v1/admin/bans/{user} → 204; 404 without a ban.
func (s *Server) handleUnban(w http.ResponseWriter, r *http.Request) error {
	ctx, cancel := s.adminCtx(r)
	defer cancel()
	if err := s.cfg.Admin.Unban(ctx, mux.Vars(r)["user"]); err != nil {
		return err
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}

// handleDisconnect: POST /v1/admin/users/{user}/disconnect → 202: every
// gateway closes the user's sockets with CloseDisconnected.
func (s *Server) handleDisconnect(w http.ResponseWriter, r *http.Request) error {
	ctx, cancel := s.adminCtx(r)
	defer cancel()
	if err := s.cfg.Admin.Disconnect(ctx, mux.Vars(r)["user"]); err != nil {
		return err
	}
	writeJSON(w, http.StatusAccepted, struct{}{})
	return nil
}

// handleDrain: POST /v1/admin/nodes/{node}/drain → 202: the gateway of that
// name drains.
func (s *Server) handleDrain(w http.ResponseWriter, r *http.Request) error {
	ctx, cancel := s.adminCtx(r)
	defer cancel()
	if err := s.cfg.Admin.Drain(ctx, mux.Vars(r)["node"]); err != nil {
		return err
	}
	writeJSON(w, http.StatusAccepted, struct{}{})
	return nil
}

// handleListQueues: GET /v1/admin/queues → {"overrides","effective"}.
func (s *Server) handleListQueues(w http.ResponseWriter, r *http.Request) error {
	ctx, cancel := s.adminCtx(r)
	defer cancel()
	v, err := s.cfg.Admin.Queues(ctx)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, v)
	return nil
}

// handlePutQueue: PUT /v1/admin/queues/{queue} with the queue in the queue
// file's shape (JSON) → 200 {"queue"}.
func (s *Server) handlePutQueue(w http.ResponseWriter, r *http.Request) error {
	var raw json.RawMessage
	if err := s.decodeBodyLimit(w, r, &raw, maxAdminBodyBytes); err != nil {
		return err
	}
	if len(raw) == 0 {
		return matcher.Errorf(matcher.CodeBadRequest, "the body is the queue's configuration")
	}
	ctx, cancel := s.adminCtx(r)
	defer cancel()
	o, err := s.cfg.Admin.PutQueue(ctx, mux.Vars(r)["queue"], raw)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, struct {
		Queue control.QueueOverride `json:"queue"`
	}{o})
	return nil
}

// handleRetireQueue: DELETE /v1/admin/queues/{queue} → 200 {"queue"} (the
// tombstone).
func (s *Server) handleRetireQueue(w http.ResponseWriter, r *http.Request) error {
	ctx, cancel := s.adminCtx(r)
	defer cancel()
	o, err := s.cfg.Admin.RetireQueue(ctx, mux.Vars(r)["queue"])
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, struct {
		Queue control.QueueOverride `json:"queue"`
	}{o})
	return nil
}

// DisconnectUser closes every socket userID holds on this node with code
// (CloseBanned or CloseDisconnected), without waiting for the handshakes;
// it returns how many it closes. The composition root calls it for the
// control channel's ban and disconnect messages.
func (s *Server) DisconnectUser(userID string, code websocket.StatusCode, reason string) int {
	s.mu.Lock()
	list := append([]*session(nil), s.byUser[userID]...)
	s.mu.Unlock()
	n := 0
	for _, sess := range list {
		if sess.shut(code) {
			n++
			s.tasks.Go(func() { sess.closeHandshake(code, reason, s.cfg.WriteTimeout) })
		}
	}
	return n
}

// Drain drains this node while the process keeps running (the admin API's
// drain, or an orchestrator's): /readyz fails, upgrades are refused with
// 503, and every socket is closed with CloseGoingAway in bounded batches
// within ShutdownTimeout; REST keeps answering. It returns false when the
// node was draining already. Only a restart undoes it.
func (s *Server) Drain() bool {
	s.mu.Lock()
	if s.draining {
		s.mu.Unlock()
		return false
	}
	s.draining = true
	s.drainDeadline = time.Now().Add(s.cfg.ShutdownTimeout)
	open := s.snapshotLocked()
	s.mu.Unlock()
	s.log.Info("gateway draining on request", slog.Int("sockets", len(open)))
	s.tasks.Go(func() {
		ctx, cancel := context.WithTimeout(context.Background(), s.cfg.ShutdownTimeout)
		defer cancel()
		s.closeAll(ctx, open)
	})
	return true
}
