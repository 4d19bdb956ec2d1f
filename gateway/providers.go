package gateway

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"net/http"
	"slices"
	"sync"
	"time"

	"github.com/gorilla/mux"

	"github.com/matchgate/matchgate/matcher"
	"github.com/matchgate/matchgate/protocol"
	"github.com/matchgate/matchgate/provider"
)

// A provider queue at the edge (ARCHITECTURE.md §8). Requesters join a
// provider queue with the ordinary join; providers — users whose token's
// role is provider — go online in it over the socket or REST, and answer
// their offers with the same accept and decline as a player's match (the
// assignment id is the match id). Without Config.Providers every provider
// route and frame answers NOT_FOUND, as the admission queue's do.
//
// Presence is the socket, with a grace: each socket refreshes the
// providers it put online every ProviderTTL()/3 (Server.refreshProviders,
// one goroutine per Server), and when it closes its providers go offline
// once Config.ProviderGrace has passed, guarded by its own session id: a
// provider who reconnected meanwhile, here or elsewhere, and went online
// again, is held by that session and stays online, its offers with it. A gateway that dies says nothing: its providers stay online
// until their TTL runs out unrefreshed, which is the grace of a crash.
// A drain (close 1001) takes nobody offline: the clients reconnect to
// another gateway within the TTL.

// Providers is the provider side of the matchmaking Service (engine.Service) as the edge sees it.
type Providers interface {
	ProviderOnline(ctx context.Context, queue, userID, session string, capacity int, attrs provider.Attributes) (provider.Provider, error)
	ProviderUpdate(ctx context.Context, queue, userID string, capacity int, attrs *provider.Attributes) (provider.Provider, error) // capacity < 0: unchanged; attrs nil: unchanged
	ProviderOffline(ctx context.Context, queue, userID, session string) (bool, error)                                              // session "": any
	ProviderRefresh(ctx context.Context, queue string, userIDs []string, session string) error                                     // keep online another TTL
	ProviderTTL() time.Duration
	ProviderStates(ctx context.Context, userID string) ([]provider.State, error) // for hello
	ProviderPresence(ctx context.Context, queue string) (provider.Presence, error)
	EndAssignment(ctx context.Context, userID, assignmentID string) (provider.Assignment, error)
	// OperatorEnd ends an assignment whoever its provider (the admin API).
	OperatorEnd(ctx context.Context, assignmentID string) (provider.Assignment, error)
}

var (
	errNoProviders   = matcher.Errorf(matcher.CodeNotFound, "provider queues are not enabled on this server")
	errNotProvider   = matcher.Errorf(matcher.CodeForbidden, "this needs a provider token (role claim \"provider\")")
	errNoAssignment  = matcher.Errorf(matcher.CodeNotFound, "no such assignment")
	errNotInProvider = matcher.Errorf(matcher.CodeNotFound, "not a provider of this queue")
)

// Bounds of what a provider declares: enough for any real provider, small
// enough that a provider's record stays small.
const (
	maxProviderCapacity = 1000
	maxProviderList     = 16 // languages, specialties, session types, each
	maxProviderItem     = 64 // bytes of one of them
	maxProviderRating   = 5
)

// minProviderRefresh keeps a tiny TTL (tests) from spinning the refresh.
const minProviderRefresh = 10 * time.Millisecond

// providerHold is what a socket remembers of a provider queue it put its
// user online in.
type providerHold struct {
	capacity int
	attrs    provider.Attributes
}

// sessionProviders are the provider queues one socket holds its user
// online in. Only a provider's socket has one.
type sessionProviders struct {
	mu   sync.Mutex
	held map[string]providerHold // by queue
}

func (sp *sessionProviders) set(queue string, h providerHold) {
	sp.mu.Lock()
	sp.held[queue] = h
	sp.mu.Unlock()
}

func (sp *sessionProviders) forget(queue string) {
	sp.mu.Lock()
	delete(sp.held, queue)
	sp.mu.Unlock()
}

func (sp *sessionProviders) queues() []string {
	sp.mu.Lock()
	defer sp.mu.Unlock()
	out := make([]string, 0, len(sp.held))
	for q := range sp.held {
		out = append(out, q)
	}
	slices.Sort(out)
	return out
}

// providerSessions are the sockets of providers this Server holds, for the
// refresh.
type providerSessions struct {
	mu   sync.Mutex
	byID map[*session]struct{}
}

// providerSession is the session id a socket's providers are held by: the
// node and the socket, unique across every gateway.
func (s *session) providerSession() string { return s.srv.cfg.Node + "/" + s.socketID }

// providerHello prepares a provider's socket: it is registered for the
// refresh, and hello lists its state in each provider queue. A failing
// read leaves the list out (the client asks again with
// GET /v1/providers/me/{queue}): hello is not held up, as for the
// admission places.
func (s *session) providerHello(ctx context.Context) []protocol.ProviderView {
	srv := s.srv
	if srv.cfg.Providers == nil || !s.p.Provider {
		return nil
	}
	s.prov = &sessionProviders{held: map[string]providerHold{}}
	srv.provSessions.mu.Lock()
	srv.provSessions.byID[s] = struct{}{}
	srv.provSessions.mu.Unlock()
	states, err := srv.cfg.Providers.ProviderStates(ctx, s.p.UserID)
	if err != nil {
		srv.log.Warn("read provider states for hello", slog.String("user", s.p.UserID), slog.Any("error", err))
		return nil
	}
	out := make([]protocol.ProviderView, 0, len(states))
	for _, st := range states {
		out = append(out, protocol.ProviderStateOf(s.p.UserID, st))
	}
	return out
}

// providersClosed ends a provider's socket: it leaves the refresh and,
// unless the server is draining, takes its providers offline once the
// grace has passed, guarded by its session id.
func (s *session) providersClosed() {
	if s.prov == nil {
		return
	}
	srv := s.srv
	srv.provSessions.mu.Lock()
	delete(srv.provSessions.byID, s)
	srv.provSessions.mu.Unlock()
	if srv.isDraining() {
		return // they reconnect elsewhere within the TTL
	}
	user, session, queues := s.p.UserID, s.providerSession(), s.prov.queues()
	srv.tasks.Go(func() {
		t := time.NewTimer(srv.cfg.ProviderGrace)
		defer t.Stop()
		select {
		case <-t.C:
		case <-srv.roomCtx.Done():
			return // shutting down: the TTL is their grace
		}
		if srv.isDraining() {
			return
		}
		for _, q := range queues {
			ctx, cancel := context.WithTimeout(srv.baseCtx, srv.cfg.CommandTimeout)
			_, err := srv.cfg.Providers.ProviderOffline(ctx, q, user, session)
			cancel()
			if err != nil {
				// The TTL takes the provider offline once refreshes stop.
				srv.log.Warn("provider offline after its socket closed", slog.String("user", user), slog.String("queue", q), slog.Any("error", err))
			}
		}
	})
}

// refreshProviders keeps the providers of every open socket online: every
// ProviderTTL()/3, one ProviderRefresh per queue and socket (the refresh
// is guarded by the session that holds the provider, and every socket is
// its own session). It returns when ctx ends.
func (s *Server) refreshProviders(ctx context.Context) {
	period := max(s.cfg.Providers.ProviderTTL()/3, minProviderRefresh)
	t := time.NewTicker(period)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			s.refreshOnce(ctx)
		}
	}
}

// refreshOnce is one pass of refreshProviders.
func (s *Server) refreshOnce(ctx context.Context) {
	type key struct{ queue, session string }
	batches := map[key][]string{}
	s.provSessions.mu.Lock()
	open := make([]*session, 0, len(s.provSessions.byID))
	for sess := range s.provSessions.byID {
		open = append(open, sess)
	}
	s.provSessions.mu.Unlock()
	for _, sess := range open {
		for _, q := range sess.prov.queues() {
			k := key{q, sess.providerSession()}
			batches[k] = append(batches[k], sess.p.UserID)
		}
	}
	for k, users := range batches {
		if ctx.Err() != nil {
			return
		}
		cctx, cancel := context.WithTimeout(ctx, s.cfg.CommandTimeout)
		err := s.cfg.Providers.ProviderRefresh(cctx, k.queue, users, k.session)
		cancel()
		if err != nil && ctx.Err() == nil {
			s.log.Warn("refresh providers", slog.String("queue", k.queue), slog.Int("providers", len(users)), slog.Any("error", err))
		}
	}
}

// providerCaller checks that a provider call may be made at all: the
// server has provider queues, and p is a provider.
func (s *Server) providerCaller(p principal) error {
	if s.cfg.Providers == nil {
		return errNoProviders
	}
	if !p.Provider {
		return errNotProvider
	}
	return nil
}

// providerQueue checks a queue name before the service sees it.
func providerQueue(queue string) error {
	if queue == "" {
		return matcher.Errorf(matcher.CodeBadRequest, "queue is required")
	}
	if !matcher.ValidName(queue) {
		return matcher.Errorf(matcher.CodeUnknownQueue, "no such provider queue (names are lower-case letters, digits, '-' and '_')")
	}
	return nil
}

// checkCapacity checks a declared capacity.
func checkCapacity(c int) error {
	if c < 0 || c > maxProviderCapacity {
		return matcher.Errorf(matcher.CodeBadRequest, "capacity must be within 0..%d", maxProviderCapacity)
	}
	return nil
}

// checkAttributes checks what a provider declares of itself.
func checkAttributes(a *provider.Attributes) error {
	if a == nil {
		return nil
	}
	for _, l := range []struct {
		name string
		v    []string
	}{{"languages", a.Languages}, {"specialties", a.Specialties}, {"sessionTypes", a.SessionTypes}} {
		if len(l.v) > maxProviderList {
			return matcher.Errorf(matcher.CodeBadRequest, "attributes.%s: at most %d", l.name, maxProviderList)
		}
		for _, x := range l.v {
			if x == "" || len(x) > maxProviderItem || !printable(x) {
				return matcher.Errorf(matcher.CodeBadRequest, "attributes.%s: each must be 1..%d printable bytes", l.name, maxProviderItem)
			}
		}
	}
	if math.IsNaN(a.Rating) || a.Rating < 0 || a.Rating > maxProviderRating {
		return matcher.Errorf(matcher.CodeBadRequest, "attributes.rating must be within 0..%d", maxProviderRating)
	}
	return nil
}

// checkAssignmentID checks an assignment id: ids are the matches'.
func checkAssignmentID(id string) error {
	if id == "" {
		return matcher.Errorf(matcher.CodeBadRequest, "assignmentId is required")
	}
	if !validID(id) {
		return errNoAssignment
	}
	return nil
}

// providerOnline puts p online in queue, held by session ("" for REST).
func (s *Server) providerOnline(ctx context.Context, p principal, queue, session string, capacity *int, attrs *provider.Attributes) (provider.Provider, error) {
	if err := s.providerCaller(p); err != nil {
		return provider.Provider{}, err
	}
	if err := providerQueue(queue); err != nil {
		return provider.Provider{}, err
	}
	if capacity == nil {
		return provider.Provider{}, matcher.Errorf(matcher.CodeBadRequest, "capacity is required")
	}
	if err := checkCapacity(*capacity); err != nil {
		return provider.Provider{}, err
	}
	if err := checkAttributes(attrs); err != nil {
		return provider.Provider{}, err
	}
	if s.banned(p.UserID) {
		return provider.Provider{}, errBanned
	}
	if err := s.limit(ctx, limitJoinUser, p.UserID, s.cfg.Limits.JoinsPerUser); err != nil {
		return provider.Provider{}, err
	}
	var a provider.Attributes
	if attrs != nil {
		a = *attrs
	}
	return s.cfg.Providers.ProviderOnline(ctx, queue, p.UserID, session, *capacity, a)
}

// providerUpdate changes what is given (capacity nil and attrs nil:
// unchanged).
func (s *Server) providerUpdate(ctx context.Context, p principal, queue string, capacity *int, attrs *provider.Attributes) (provider.Provider, error) {
	if err := s.providerCaller(p); err != nil {
		return provider.Provider{}, err
	}
	if err := providerQueue(queue); err != nil {
		return provider.Provider{}, err
	}
	c := -1
	if capacity != nil {
		if err := checkCapacity(*capacity); err != nil {
			return provider.Provider{}, err
		}
		c = *capacity
	}
	if err := checkAttributes(attrs); err != nil {
		return provider.Provider{}, err
	}
	if err := s.limit(ctx, limitJoinUser, p.UserID, s.cfg.Limits.JoinsPerUser); err != nil {
		return provider.Provider{}, err
	}
	return s.cfg.Providers.ProviderUpdate(ctx, queue, p.UserID, c, attrs)
}

// providerOffline takes p offline in queue, whichever session holds it:
// it is the provider's own request. The view is read back afterwards.
func (s *Server) providerOffline(ctx context.Context, p principal, queue string) (protocol.ProviderView, error) {
	if err := s.providerCaller(p); err != nil {
		return protocol.ProviderView{}, err
	}
	if err := providerQueue(queue); err != nil {
		return protocol.ProviderView{}, err
	}
	if err := s.limit(ctx, limitCancelUser, p.UserID, s.cfg.Limits.CancelsPerUser); err != nil {
		return protocol.ProviderView{}, err
	}
	if _, err := s.cfg.Providers.ProviderOffline(ctx, queue, p.UserID, ""); err != nil {
		return protocol.ProviderView{}, err
	}
	v, err := s.providerView(ctx, p, queue)
	if err != nil {
		// Offline it is: the view is the least it can say.
		v = protocol.ProviderView{Queue: queue, UserID: p.UserID}
	}
	v.Online = false
	return v, nil
}

// providerView is p's state in queue, from ProviderStates.
func (s *Server) providerView(ctx context.Context, p principal, queue string) (protocol.ProviderView, error) {
	states, err := s.cfg.Providers.ProviderStates(ctx, p.UserID)
	if err != nil {
		return protocol.ProviderView{}, err
	}
	for _, st := range states {
		if st.Queue == queue {
			return protocol.ProviderStateOf(p.UserID, st), nil
		}
	}
	return protocol.ProviderView{}, errNotInProvider
}

// assignmentCall answers an offer (accept, decline: the Matchmaker's
// calls, the assignment id being the match id) or ends a running
// assignment.
func (s *Server) assignmentCall(ctx context.Context, p principal, typ, id string) (protocol.AssignmentView, error) {
	if err := s.providerCaller(p); err != nil {
		return protocol.AssignmentView{}, err
	}
	if err := checkAssignmentID(id); err != nil {
		return protocol.AssignmentView{}, err
	}
	// No per-user limit: a provider answers and ends as many assignments
	// as its capacity and sessions bring (a player's accept limit stalled
	// a provider of three slots and short sessions); each call names an
	// assignment of its own, and its frames count against the socket's
	// message limit.
	switch typ {
	case protocol.FrameAssignmentAccept, protocol.FrameAssignmentDecline:
		call := s.cfg.Matchmaker.Accept
		if typ == protocol.FrameAssignmentDecline {
			call = s.cfg.Matchmaker.Decline
		}
		m, err := call(ctx, p.UserID, id)
		if err != nil {
			return protocol.AssignmentView{}, err
		}
		return protocol.AssignmentOfMatch(m, matcher.ReasonDeclined), nil
	default:
		a, err := s.cfg.Providers.EndAssignment(ctx, p.UserID, id)
		if err != nil {
			return protocol.AssignmentView{}, err
		}
		return protocol.AssignmentOf(a), nil
	}
}

// dispatchProvider runs a provider frame.
func (s *session) dispatchProvider(ctx context.Context, in protocol.ProviderCommand) (any, error) {
	srv := s.srv
	reply := func(p provider.Provider) protocol.ProviderReply {
		v := protocol.ProviderOf(p, nil)
		return protocol.ProviderReply{Type: protocol.FrameProvider, Re: in.ID, Provider: &v}
	}
	switch in.Type {
	case protocol.FrameProviderOnline:
		p, err := srv.providerOnline(ctx, s.p, in.Queue, s.providerSession(), in.Capacity, in.Attributes)
		if err != nil {
			return nil, err
		}
		s.hold(in.Queue, p)
		return reply(p), nil
	case protocol.FrameProviderUpdate:
		p, err := srv.providerUpdate(ctx, s.p, in.Queue, in.Capacity, in.Attributes)
		if err != nil {
			return nil, err
		}
		if s.prov != nil && slices.Contains(s.prov.queues(), in.Queue) {
			s.hold(in.Queue, p)
		}
		return reply(p), nil
	case protocol.FrameProviderOffline:
		v, err := srv.providerOffline(ctx, s.p, in.Queue)
		if err != nil {
			return nil, err
		}
		if s.prov != nil {
			s.prov.forget(in.Queue)
		}
		return protocol.ProviderReply{Type: protocol.FrameProvider, Re: in.ID, Provider: &v}, nil
	default: // the assignment frames
		a, err := srv.assignmentCall(ctx, s.p, in.Type, in.AssignmentID)
		if err != nil {
			return nil, err
		}
		return protocol.ProviderReply{Type: protocol.FrameAssignment, Re: in.ID, Assignment: &a}, nil
	}
}

// hold remembers that this socket holds its user online in queue.
func (s *session) hold(queue string, p provider.Provider) {
	if s.prov != nil {
		s.prov.set(queue, providerHold{capacity: p.Capacity, attrs: p.Attributes})
	}
}

// decodeProviderFrame decodes a provider frame strictly, its attributes
// too (encoding/json would take unknown members of them silently).
func decodeProviderFrame(data []byte) (protocol.ProviderCommand, error) {
	var raw struct {
		Type         string          `json:"type"`
		ID           string          `json:"id"`
		Queue        string          `json:"queue"`
		Capacity     *int            `json:"capacity"`
		Attributes   json.RawMessage `json:"attributes"`
		AssignmentID string          `json:"assignmentId"`
	}
	fail := func(err error) (protocol.ProviderCommand, error) {
		var env struct {
			ID string `json:"id"`
		}
		if json.Unmarshal(data, &env) == nil && len(env.ID) <= maxClientIDLen {
			return protocol.ProviderCommand{Type: raw.Type, ID: env.ID}, err
		}
		return protocol.ProviderCommand{}, err
	}
	if err := decodeStrict(data, &raw, false); err != nil {
		return fail(err)
	}
	in := protocol.ProviderCommand{Type: raw.Type, ID: raw.ID, Queue: raw.Queue, Capacity: raw.Capacity, AssignmentID: raw.AssignmentID}
	if len(raw.Attributes) > 0 && string(raw.Attributes) != "null" {
		var a provider.Attributes
		if err := decodeStrict(raw.Attributes, &a, false); err != nil {
			return fail(attributesError(err))
		}
		a = normalAttributes(a)
		in.Attributes = &a
	}
	if len(in.ID) > maxClientIDLen {
		return protocol.ProviderCommand{}, matcher.Errorf(matcher.CodeBadRequest, "id longer than %d bytes", maxClientIDLen)
	}
	if f := foreignProviderField(in); f != "" {
		return in, matcher.Errorf(matcher.CodeBadRequest, "field %q is not part of %s", f, quoteField(in.Type))
	}
	return in, nil
}

// attributesError names the attributes in a refusal of theirs.
func attributesError(err error) error {
	var de *matcher.Error
	if errors.As(err, &de) {
		return matcher.Errorf(de.Code, "attributes: %s", de.Message)
	}
	return fmt.Errorf("attributes: %w", err)
}

// normalAttributes turns empty lists into absent ones: they say the same,
// and the wire leaves both out.
func normalAttributes(a provider.Attributes) provider.Attributes {
	for _, l := range []*[]string{&a.Languages, &a.Specialties, &a.SessionTypes} {
		if len(*l) == 0 {
			*l = nil
		}
	}
	return a
}

// foreignProviderField names a field set in a provider frame that its
// type does not have.
func foreignProviderField(in protocol.ProviderCommand) string {
	var allowed []string
	switch in.Type {
	case protocol.FrameProviderOnline, protocol.FrameProviderUpdate:
		allowed = []string{"queue", "capacity", "attributes"}
	case protocol.FrameProviderOffline:
		allowed = []string{"queue"}
	default:
		allowed = []string{"assignmentId"}
	}
	for _, f := range []struct {
		name string
		set  bool
	}{
		{"queue", in.Queue != ""}, {"capacity", in.Capacity != nil}, {"attributes", in.Attributes != nil},
		{"assignmentId", in.AssignmentID != ""},
	} {
		if f.set && !slices.Contains(allowed, f.name) {
			return f.name
		}
	}
	return ""
}

// command is a decoded client frame: a Command, or a provider frame
// (prov set, and Command holding only its type and id).
type command struct {
	protocol.Command
	prov *protocol.ProviderCommand
}

// decodeClientFrame decodes any client frame: a provider frame as a
// ProviderCommand (its attributes are not a join's), any other as a
// Command.
func decodeClientFrame(data []byte) (command, error) {
	if protocol.IsProviderFrame(frameType(data)) {
		pc, err := decodeProviderFrame(data)
		return command{Command: protocol.Command{Type: pc.Type, ID: pc.ID}, prov: &pc}, err
	}
	in, err := decodeFrame(data)
	return command{Command: in}, err
}

func (s *Server) providerRoutes(r *mux.Router) {
	auth := func(h func(w http.ResponseWriter, r *http.Request, p principal)) http.HandlerFunc {
		return s.withProviders(s.withAuth(h))
	}
	r.HandleFunc("/v1/providers/me/{queue}", auth(s.handleProviderGet)).Methods(http.MethodGet)
	r.HandleFunc("/v1/providers/me/{queue}", auth(s.handleProviderPut)).Methods(http.MethodPut)
	r.HandleFunc("/v1/providers/me/{queue}", auth(s.handleProviderPatch)).Methods(http.MethodPatch)
	r.HandleFunc("/v1/providers/me/{queue}", auth(s.handleProviderDelete)).Methods(http.MethodDelete)
	for _, a := range []struct{ path, typ string }{
		{"accept", protocol.FrameAssignmentAccept}, {"decline", protocol.FrameAssignmentDecline}, {"end", protocol.FrameAssignmentEnd},
	} {
		r.HandleFunc("/v1/assignments/{id}/"+a.path, auth(s.handleAssignment(a.typ))).Methods(http.MethodPost)
	}
	r.HandleFunc("/v1/presence/providers", auth(s.handleProviderPresence)).Methods(http.MethodGet)
}

// withProviders answers 404 before anything else (the token too) when
// the server has no provider queues.
func (s *Server) withProviders(h http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if s.cfg.Providers == nil {
			s.writeError(w, r, errNoProviders)
			return
		}
		h(w, r)
	}
}

// handleProviderGet: GET /v1/providers/me/{queue} → 200 {"provider"}.
func (s *Server) handleProviderGet(w http.ResponseWriter, r *http.Request, p principal) {
	queue := mux.Vars(r)["queue"]
	ctx, cancel := s.callCtx(r)
	defer cancel()
	err := s.providerCaller(p)
	if err == nil {
		err = providerQueue(queue)
	}
	if err == nil {
		err = s.limit(ctx, limitReadUser, p.UserID, s.cfg.Limits.ReadsPerUser)
	}
	var v protocol.ProviderView
	if err == nil {
		v, err = s.providerView(ctx, p, queue)
	}
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, protocol.ProviderViewBody{Provider: v})
}

// handleProviderPut: PUT /v1/providers/me/{queue} {capacity, attributes}
// → 200 {"provider"}: online, held by no socket, for one TTL.
func (s *Server) handleProviderPut(w http.ResponseWriter, r *http.Request, p principal) {
	s.providerWrite(w, r, p, true)
}

// handleProviderPatch: PATCH /v1/providers/me/{queue} {capacity?,
// attributes?} → 200 {"provider"}.
func (s *Server) handleProviderPatch(w http.ResponseWriter, r *http.Request, p principal) {
	s.providerWrite(w, r, p, false)
}

func (s *Server) providerWrite(w http.ResponseWriter, r *http.Request, p principal, online bool) {
	var body protocol.ProviderBody
	if err := s.decodeProviderBody(w, r, &body); err != nil {
		s.writeError(w, r, err)
		return
	}
	ctx, cancel := s.callCtx(r)
	defer cancel()
	queue := mux.Vars(r)["queue"]
	var pr provider.Provider
	var err error
	if online {
		pr, err = s.providerOnline(ctx, p, queue, "", body.Capacity, body.Attributes)
	} else {
		pr, err = s.providerUpdate(ctx, p, queue, body.Capacity, body.Attributes)
	}
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, protocol.ProviderViewBody{Provider: protocol.ProviderOf(pr, nil)})
}

// decodeProviderBody decodes a provider body strictly, its attributes too.
func (s *Server) decodeProviderBody(w http.ResponseWriter, r *http.Request, body *protocol.ProviderBody) error {
	var raw struct {
		Capacity   *int            `json:"capacity"`
		Attributes json.RawMessage `json:"attributes"`
	}
	if err := s.decodeBody(w, r, &raw); err != nil {
		return err
	}
	body.Capacity = raw.Capacity
	if len(raw.Attributes) > 0 && string(raw.Attributes) != "null" {
		var a provider.Attributes
		if err := decodeStrict(raw.Attributes, &a, false); err != nil {
			return attributesError(err)
		}
		a = normalAttributes(a)
		body.Attributes = &a
	}
	return nil
}

// handleProviderDelete: DELETE /v1/providers/me/{queue} → 200
// {"provider"} offline.
func (s *Server) handleProviderDelete(w http.ResponseWriter, r *http.Request, p principal) {
	ctx, cancel := s.callCtx(r)
	defer cancel()
	v, err := s.providerOffline(ctx, p, mux.Vars(r)["queue"])
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, protocol.ProviderViewBody{Provider: v})
}

// handleAssignment: POST /v1/assignments/{id}/{accept,decline,end} → 200
// {"assignment"}.
func (s *Server) handleAssignment(typ string) func(w http.ResponseWriter, r *http.Request, p principal) {
	return func(w http.ResponseWriter, r *http.Request, p principal) {
		if err := s.decodeBody(w, r, &struct{}{}); err != nil {
			s.writeError(w, r, err)
			return
		}
		ctx, cancel := s.callCtx(r)
		defer cancel()
		a, err := s.assignmentCall(ctx, p, typ, mux.Vars(r)["id"])
		if err != nil {
			s.writeError(w, r, err)
			return
		}
		writeJSON(w, http.StatusOK, protocol.AssignmentBody{Assignment: a})
	}
}

// handleProviderPresence: GET /v1/presence/providers?queue=… → 200, for
// any authenticated token: who is online, busy and offline.
func (s *Server) handleProviderPresence(w http.ResponseWriter, r *http.Request, p principal) {
	queue := r.URL.Query().Get("queue")
	if err := providerQueue(queue); err != nil {
		s.writeError(w, r, err)
		return
	}
	ctx, cancel := s.callCtx(r)
	defer cancel()
	if err := s.limit(ctx, limitReadUser, p.UserID, s.cfg.Limits.ReadsPerUser); err != nil {
		s.writeError(w, r, err)
		return
	}
	pr, err := s.cfg.Providers.ProviderPresence(ctx, queue)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, protocol.PresenceOf(pr))
}

// handleOperatorEnd: POST /v1/admin/assignments/{id}/end → 200
// {"assignment"}: an operator ends an offer or a running session.
func (s *Server) handleOperatorEnd(w http.ResponseWriter, r *http.Request) error {
	if s.cfg.Providers == nil {
		return matcher.Errorf(matcher.CodeNotFound, "this server serves no provider queue")
	}
	id := mux.Vars(r)["id"]
	if err := checkAssignmentID(id); err != nil {
		return err
	}
	ctx, cancel := s.adminCtx(r)
	defer cancel()
	a, err := s.cfg.Providers.OperatorEnd(ctx, id)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, protocol.AssignmentBody{Assignment: protocol.AssignmentOf(a)})
	return nil
}
