package gateway

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"net"
	"net/http"
	"regexp"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/golang-jwt/jwt/v5"
	"github.com/google/uuid"
	"github.com/gorilla/mux"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/matchgate/matchgate/docs"
	"github.com/matchgate/matchgate/internal/slots"
	"github.com/matchgate/matchgate/protocol"
	"github.com/matchgate/matchgate/ratelimit"
)

const (
	// drainConcurrency bounds the sockets being closed at once during a drain.
	drainConcurrency = 128
	// pingConcurrency bounds the pings in flight at once (each a short-lived
	// goroutine waiting up to PingTimeout for its pong).
	pingConcurrency = 256
	// pingSlots spreads the pinger's work over PingInterval. Each socket
	// gets a slot when it registers, in turn, and every PingInterval /
	// pingSlots the pinger pings the sockets of the next slot and renews
	// their leases. Pinging every socket at once is a burst of thousands of
	// pings, pongs and lease writes that the matching path queues behind:
	// at 2,000 joins/s over 6,000 sockets it was most of join→match.found's
	// p99 (docs/BENCHMARKS.md).
	pingSlots = 100
	// minPingStep keeps a short PingInterval (tests) from waking the pinger
	// more often than this: it gets fewer slots instead.
	minPingStep = 10 * time.Millisecond
	// wsRoute is the WebSocket endpoint.
	wsRoute = "/v1/ws"
	// readyTimeout bounds one /readyz dependency check.
	readyTimeout = 2 * time.Second
)

// Server is the gateway: a router for REST and WebSocket upgrades, the
// registry of open sockets, the pinger and the drain. Build it with New,
// serve it with Run (or mount Handler elsewhere).
type Server struct {
	cfg       Config
	log       *slog.Logger
	metrics   *metrics
	gatherer  prometheus.Gatherer
	jwtParser *jwt.Parser
	keys      keySet
	handler   http.Handler
	// topBodies are the GET ranking answers encoded last (rankings.go).
	topBodies bodyCache
	// verified are the tokens verified already (auth.go).
	verified tokenCache
	// instance tells this Server's sockets apart from those of every other
	// process in the per-user socket leases.
	instance string
	// adminKeys are the SHA-256 digests of the admin tokens.
	adminKeys [][32]byte

	// baseCtx parents every Matchmaker call; Run cancels it last.
	baseCtx    context.Context
	cancelBase context.CancelFunc

	// room pushes the admission queues' positions (nil without them);
	// its loops run on roomCtx, which Run cancels once every socket ended.
	room    *room
	roomCtx context.Context
	// rankings pushes the ranking boards' changes (nil without them); its
	// loops run on roomCtx too.
	rankings   *rankingRoom
	cancelRoom context.CancelFunc

	// provSessions are the providers' sockets, refreshed by
	// refreshProviders.
	provSessions providerSessions

	mu sync.Mutex
	// slots holds the open sockets by ping slot.
	slots         *slots.Set[*session]
	byUser        map[string][]*session
	draining      bool
	drainDeadline time.Time // when the drain drops what is still open

	// open counts WebSocket handlers past the draining check, for
	// Config.MaxConnections.
	open atomic.Int64
	// lastLimiterWarn spaces out the warnings of an unreachable limiter.
	lastLimiterWarn timestamp

	// sessions counts WebSocket handlers from the draining check to their
	// end (net/http does not wait for hijacked connections); tasks counts
	// every other goroutine the Server starts (writers, command workers,
	// closers). Run waits for both.
	sessionsWG sync.WaitGroup
	tasks      sync.WaitGroup

	nextSession atomic.Uint64
	running     atomic.Bool
}

// New validates cfg, fills in defaults, registers the metrics and builds the
// router. It starts no goroutine.
func New(cfg Config) (*Server, error) {
	cfg, err := cfg.withDefaults()
	if err != nil {
		return nil, err
	}
	reg, gatherer := cfg.Registerer, cfg.Gatherer
	if reg == nil {
		private := prometheus.NewRegistry()
		reg = private
		if gatherer == nil {
			gatherer = private
		}
	}
	if gatherer == nil {
		switch {
		case reg == prometheus.DefaultRegisterer:
			gatherer = prometheus.DefaultGatherer
		default:
			g, ok := reg.(prometheus.Gatherer)
			if !ok {
				return nil, errors.New("gateway: Config.Gatherer is required with a Registerer that is not a Gatherer")
			}
			gatherer = g
		}
	}
	keys, err := newKeySet(cfg.Secret, cfg.Keys, cfg.SigningKeyID)
	if err != nil {
		return nil, err
	}
	m, err := newMetrics(reg)
	if err != nil {
		return nil, err
	}
	s := &Server{
		cfg:       cfg,
		log:       cfg.Logger,
		metrics:   m,
		gatherer:  gatherer,
		jwtParser: newJWTParser(cfg.Now),
		keys:      keys,
		instance:  strings.ReplaceAll(uuid.NewString(), "-", "")[:12],
		byUser:    make(map[string][]*session),
	}
	s.provSessions.byID = make(map[*session]struct{})
	s.slots = slots.New[*session](cfg.PingInterval, minPingStep, pingSlots)
	for _, t := range cfg.AdminTokens {
		s.adminKeys = append(s.adminKeys, sha256.Sum256([]byte(t)))
	}
	s.baseCtx, s.cancelBase = context.WithCancel(context.Background())
	s.roomCtx, s.cancelRoom = context.WithCancel(s.baseCtx)
	s.room = newRoom(s)
	if s.rankings, err = newRankingRoom(s, reg); err != nil {
		return nil, err
	}
	s.handler = s.instrument(s.routes())
	return s, nil
}

// Handler returns the gateway's HTTP handler: the router wrapped with
// request ids, panic recovery and metrics.
func (s *Server) Handler() http.Handler { return s.handler }

func (s *Server) routes() *mux.Router {
	r := mux.NewRouter()
	r.Use(s.recordRoute)
	r.HandleFunc(wsRoute, s.handleWS).Methods(http.MethodGet)
	r.HandleFunc("/v1/queues", s.handleQueues).Methods(http.MethodGet)
	r.HandleFunc("/v1/queues/{queue}/tickets", s.withAuth(s.handleJoin)).Methods(http.MethodPost)
	r.HandleFunc("/v1/tickets", s.withAuth(s.handleTickets)).Methods(http.MethodGet)
	r.HandleFunc("/v1/tickets/{id}", s.withAuth(s.handleGetTicket)).Methods(http.MethodGet)
	r.HandleFunc("/v1/tickets/{id}", s.withAuth(s.handleCancel)).Methods(http.MethodDelete)
	r.HandleFunc("/v1/tickets/{id}/heartbeat", s.withAuth(s.handleHeartbeat)).Methods(http.MethodPut)
	r.HandleFunc("/v1/matches/{id}/accept", s.withAuth(s.handleAccept)).Methods(http.MethodPost)
	r.HandleFunc("/v1/matches/{id}/decline", s.withAuth(s.handleDecline)).Methods(http.MethodPost)
	r.HandleFunc("/v1/auth/guest", s.handleGuest).Methods(http.MethodPost)
	s.admissionRoutes(r)
	s.rankingRoutes(r)
	s.providerRoutes(r)
	s.adminRoutes(r)
	r.HandleFunc(openAPIRoute, serveYAML(docs.OpenAPI)).Methods(http.MethodGet, http.MethodHead)
	r.HandleFunc(asyncAPIRoute, serveYAML(docs.AsyncAPI)).Methods(http.MethodGet, http.MethodHead)
	r.HandleFunc("/healthz", s.handleHealthz).Methods(http.MethodGet, http.MethodHead)
	r.HandleFunc("/readyz", s.handleReadyz).Methods(http.MethodGet, http.MethodHead)
	r.Handle("/metrics", promhttp.HandlerFor(s.gatherer, promhttp.HandlerOpts{})).Methods(http.MethodGet)
	// The demo page is served from the not-found handler rather than a
	// PathPrefix("/") route: gorilla/mux v1.8.1 lets a catch-all route that
	// matches the path erase the method mismatch of an earlier route, which
	// would turn every 405 into a 404.
	static := staticHandler(s.cfg.Static)
	r.NotFoundHandler = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if isStatic(r) {
			if ri, ok := r.Context().Value(reqInfoKey{}).(*reqInfo); ok {
				ri.route = "static"
			}
			static.ServeHTTP(w, r)
			return
		}
		s.writeError(w, r, errNoRoute)
	})
	r.MethodNotAllowedHandler = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, http.StatusMethodNotAllowed,
			protocol.ErrorBody{Error: protocol.WireError{Code: protocol.CodeBadRequest, Message: "method not allowed"}})
	})
	return r
}

// Run serves on ln until ctx ends, then drains (see the package doc) and
// returns nil; it returns an error only when serving itself failed. It may
// be called once.
func (s *Server) Run(ctx context.Context, ln net.Listener) error {
	if ln == nil {
		return errors.New("gateway: Run needs a listener")
	}
	if !s.running.CompareAndSwap(false, true) {
		return errors.New("gateway: Run called twice")
	}
	// Slowloris: headers must arrive within ReadHeaderTimeout, bodies within
	// bodyReadTimeout (decodeBody), and an idle keep-alive connection is
	// closed after IdleTimeout. ReadTimeout and WriteTimeout stay unset:
	// they would also cut hijacked WebSockets, whose reads and writes have
	// their own bounds (pings, Config.WriteTimeout).
	hs := &http.Server{
		Handler:           s.handler,
		ReadHeaderTimeout: 5 * time.Second,
		IdleTimeout:       time.Minute,
		MaxHeaderBytes:    16 << 10,
		ErrorLog:          slog.NewLogLogger(s.log.Handler(), slog.LevelWarn),
		BaseContext:       func(net.Listener) context.Context { return s.baseCtx },
	}
	serveErr := make(chan error, 1)
	go func() { serveErr <- hs.Serve(ln) }()

	pingCtx, stopPinger := context.WithCancel(context.Background())
	pingerDone := make(chan struct{})
	go func() {
		defer close(pingerDone)
		s.pingLoop(pingCtx)
	}()
	// The providers' refresh stops with the pinger: through a drain, the
	// providers' TTL is their grace.
	refreshDone := make(chan struct{})
	go func() {
		defer close(refreshDone)
		if s.cfg.Providers != nil {
			s.refreshProviders(pingCtx)
		}
	}()
	s.log.Info("gateway serving", slog.String("addr", ln.Addr().String()), slog.String("node", s.cfg.Node))

	var runErr error
	select {
	case <-ctx.Done():
	case err := <-serveErr:
		serveErr = nil
		if !errors.Is(err, http.ErrServerClosed) {
			runErr = fmt.Errorf("gateway: serve: %w", err)
		}
	}
	stopPinger()
	<-pingerDone
	<-refreshDone
	s.drain(hs, serveErr)
	return runErr
}

// drain shuts down in order: mark draining (fail /readyz, refuse upgrades),
// close sockets with CloseGoingAway in bounded batches, shut the HTTP server
// down, wait for every session and task.
func (s *Server) drain(hs *http.Server, serveErr <-chan error) {
	start := time.Now()
	ctx, cancel := context.WithTimeout(context.Background(), s.cfg.ShutdownTimeout)
	defer cancel()

	s.mu.Lock()
	s.draining = true
	s.drainDeadline = deadlineOf(ctx)
	open := s.snapshotLocked()
	s.mu.Unlock()
	s.log.Info("gateway draining", slog.Int("sockets", len(open)))

	s.closeAll(ctx, open)

	shutdownCtx, cancelShutdown := context.WithTimeout(context.Background(), max(time.Second, time.Until(deadlineOf(ctx))))
	if err := hs.Shutdown(shutdownCtx); err != nil {
		s.log.Warn("http shutdown incomplete", slog.Any("error", err))
		_ = hs.Close()
	}
	cancelShutdown()
	if serveErr != nil {
		<-serveErr
	}

	s.sessionsWG.Wait()
	s.cancelRoom() // no socket is left to push to
	// In-flight commands may finish within the budget; then they are cancelled.
	tasksDone := make(chan struct{})
	go func() {
		s.tasks.Wait()
		close(tasksDone)
	}()
	select {
	case <-tasksDone:
	case <-ctx.Done():
		s.cancelBase()
		<-tasksDone
	}
	s.cancelBase()
	s.log.Info("gateway drained", slog.Duration("took", time.Since(start)))
}

func deadlineOf(ctx context.Context) time.Time {
	d, _ := ctx.Deadline()
	return d
}

// closeAll closes sockets with CloseGoingAway, at most drainConcurrency at a
// time. When ctx ends first, every remaining connection is dropped at the
// TCP level.
func (s *Server) closeAll(ctx context.Context, open []*session) {
	sem := make(chan struct{}, drainConcurrency)
	var wg sync.WaitGroup
start:
	for _, sess := range open {
		select {
		case sem <- struct{}{}:
		case <-ctx.Done():
			break start
		}
		wg.Go(func() {
			defer func() { <-sem }()
			sess.close(CloseGoingAway, "server shutting down")
		})
	}
	done := make(chan struct{})
	go func() {
		wg.Wait()
		close(done)
	}()
	select {
	case <-done:
	case <-ctx.Done():
		s.log.Warn("drain timed out: dropping remaining sockets")
		for _, sess := range open {
			sess.drop()
		}
		<-done
	}
}

// beginSession counts a WebSocket handler unless the server is draining.
func (s *Server) beginSession() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.draining {
		return false
	}
	s.sessionsWG.Add(1)
	return true
}

// register adds an accepted socket to the registry. While draining it
// reports true and the drain's deadline instead: the caller closes it.
func (s *Server) register(sess *session) (deadline time.Time, draining bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.draining {
		return s.drainDeadline, true
	}
	sess.slot = s.slots.Add(sess)
	s.byUser[sess.p.UserID] = append(s.byUser[sess.p.UserID], sess)
	return time.Time{}, false
}

func (s *Server) unregister(sess *session) {
	s.mu.Lock()
	s.slots.Remove(sess, sess.slot)
	list := s.byUser[sess.p.UserID]
	for i, x := range list {
		if x == sess {
			list = append(list[:i:i], list[i+1:]...)
			break
		}
	}
	if len(list) == 0 {
		delete(s.byUser, sess.p.UserID)
	} else {
		s.byUser[sess.p.UserID] = list
	}
	s.mu.Unlock()
}

// snapshotLocked copies the registry so that slow work (pings, closes)
// happens after the lock is released.
func (s *Server) snapshotLocked() []*session { return s.slots.All() }

func (s *Server) isDraining() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.draining
}

// pingLoop visits one slot every PingInterval/len(slots) until ctx ends, so
// that each socket is pinged, and its lease renewed, once per PingInterval
// at a phase of its own. When pingConcurrency pings are waiting for their
// pongs the next slot waits for one of them: the interval stretches, and no
// socket is skipped.
func (s *Server) pingLoop(ctx context.Context) {
	sem := make(chan struct{}, pingConcurrency)
	var wg sync.WaitGroup
	defer wg.Wait()
	s.slots.Visit(ctx, func(slot int) { s.pingSlot(ctx, slot, sem, &wg) })
}

// pingSlot pings the sockets of one slot (the pings go on in wg, each
// holding a place in sem until its pong), closes those whose token has
// expired, and renews the per-user socket leases of every one of them, so a
// live socket keeps counting and a dead node's stop counting.
func (s *Server) pingSlot(ctx context.Context, slot int, sem chan struct{}, wg *sync.WaitGroup) {
	s.mu.Lock()
	open := s.slots.Keys(slot)
	s.mu.Unlock()
	if len(open) == 0 {
		return
	}
	now := s.cfg.Now()
	leases := make([]ratelimit.Lease, 0, len(open))
sweep:
	for _, sess := range open {
		leases = append(leases, sess.lease())
		if !sess.reading.Load() {
			continue // still setting up: nobody reads the pong yet
		}
		if exp := sess.p.Expires; !exp.IsZero() && now.After(exp.Add(tokenLeeway)) {
			if sess.shut(CloseUnauthorized) {
				s.tasks.Go(func() { sess.closeHandshake(CloseUnauthorized, "token expired", s.cfg.WriteTimeout) })
			}
			continue
		}
		select {
		case sem <- struct{}{}:
		case <-ctx.Done():
			break sweep
		}
		wg.Go(func() {
			defer func() { <-sem }()
			sess.ping(ctx)
		})
	}
	rctx, cancel := context.WithTimeout(ctx, s.cfg.WriteTimeout)
	if err := s.cfg.Sockets.Renew(rctx, leases); err != nil && ctx.Err() == nil {
		s.warnEvery(&s.lastLimiterWarn, "renew socket leases", slog.Any("error", err))
	}
	cancel()
}

// handleHealthz reports that the process is alive.
func (s *Server) handleHealthz(w http.ResponseWriter, _ *http.Request) {
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	_, _ = w.Write([]byte("ok\n"))
}

// handleReadyz reports whether this node should receive traffic: not while
// draining, nor while a dependency is down.
func (s *Server) handleReadyz(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	if s.isDraining() {
		w.WriteHeader(http.StatusServiceUnavailable)
		_, _ = w.Write([]byte("draining\n"))
		return
	}
	ctx, cancel := context.WithTimeout(r.Context(), readyTimeout)
	defer cancel()
	if err := s.cfg.Ready(ctx); err != nil {
		s.log.Warn("not ready", slog.Any("error", err))
		w.WriteHeader(http.StatusServiceUnavailable)
		_, _ = w.Write([]byte("not ready\n"))
		return
	}
	_, _ = w.Write([]byte("ok\n"))
}

// isStatic reports whether a request no route matched is for the demo page:
// GET or HEAD outside /v1/, so unknown API paths get a JSON 404.
func isStatic(r *http.Request) bool {
	return (r.Method == http.MethodGet || r.Method == http.MethodHead) &&
		r.URL.Path != "/v1" && !strings.HasPrefix(r.URL.Path, "/v1/")
}

// staticHandler serves the demo page with headers that keep it to itself.
func staticHandler(fsys fs.FS) http.Handler {
	files := http.FileServerFS(fsys)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h := w.Header()
		h.Set("Cache-Control", "no-cache")
		h.Set("Content-Security-Policy", "default-src 'self'; connect-src 'self'; frame-ancestors 'none'; base-uri 'none'")
		h.Set("Referrer-Policy", "no-referrer")
		files.ServeHTTP(w, r)
	})
}

// Request bookkeeping -------------------------------------------------------

type reqInfoKey struct{}

// reqInfo travels in the request context: the id for logs and the route
// template for metrics (filled in by the router's middleware).
type reqInfo struct {
	id    string
	route string
}

func requestID(ctx context.Context) string {
	if ri, ok := ctx.Value(reqInfoKey{}).(*reqInfo); ok {
		return ri.id
	}
	return ""
}

var validRequestID = regexp.MustCompile(`^[A-Za-z0-9._-]{1,64}$`)

// instrument wraps the router: request id, panic recovery, metrics.
func (s *Server) instrument(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		start := time.Now()
		id := r.Header.Get("X-Request-Id")
		if !validRequestID.MatchString(id) {
			id = uuid.NewString()
		}
		info := &reqInfo{id: id, route: "unmatched"}
		r = r.WithContext(context.WithValue(r.Context(), reqInfoKey{}, info))
		w.Header().Set("X-Request-Id", id)
		w.Header().Set("X-Content-Type-Options", "nosniff")
		sw := &statusWriter{ResponseWriter: w}
		defer func() {
			if p := recover(); p != nil {
				if p == http.ErrAbortHandler {
					panic(p)
				}
				s.log.Error("handler panic", slog.String("request_id", id), slog.String("path", r.URL.Path), slog.Any("panic", p))
				if !sw.wrote {
					s.writeError(sw, r, fmt.Errorf("panic: %v", p))
				}
			}
			s.metrics.httpRequests.WithLabelValues(info.route, methodLabel(r.Method), statusClass(sw.status())).Inc()
			if info.route != wsRoute { // a socket's lifetime is not a latency
				s.metrics.httpDurations.WithLabelValues(info.route).Observe(time.Since(start).Seconds())
			}
		}()
		next.ServeHTTP(sw, r)
	})
}

// recordRoute stores the matched route's template (bounded) for metrics.
func (s *Server) recordRoute(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if ri, ok := r.Context().Value(reqInfoKey{}).(*reqInfo); ok {
			if route := mux.CurrentRoute(r); route != nil {
				if tpl, err := route.GetPathTemplate(); err == nil {
					ri.route = tpl
				}
			}
		}
		next.ServeHTTP(w, r)
	})
}

// statusWriter records the status code. Unwrap lets http.ResponseController
// and coder/websocket reach the Hijacker underneath.
type statusWriter struct {
	http.ResponseWriter
	code  int
	wrote bool
}

func (w *statusWriter) WriteHeader(code int) {
	if !w.wrote {
		w.code, w.wrote = code, true
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *statusWriter) Write(b []byte) (int, error) {
	if !w.wrote {
		w.code, w.wrote = http.StatusOK, true
	}
	return w.ResponseWriter.Write(b)
}

func (w *statusWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

func (w *statusWriter) status() int {
	if !w.wrote {
		return http.StatusOK
	}
	return w.code
}

// hijackCapture remembers the hijacked net.Conn so that a drain that runs out
// of time can drop a socket without waiting for its close handshake, and
// hands coder/websocket smaller buffers than net/http's (see smallBuffers).
type hijackCapture struct {
	http.ResponseWriter
	conn net.Conn
}

func (h *hijackCapture) Hijack() (net.Conn, *bufio.ReadWriter, error) {
	c, brw, err := http.NewResponseController(h.ResponseWriter).Hijack()
	h.conn = c
	if err != nil {
		return c, brw, err
	}
	return c, smallBuffers(c, brw), nil
}

// The buffers a WebSocket keeps for its life. net/http hands a hijacker a
// 4 KiB reader and a 4 KiB writer, and coder/websocket keeps both: 8 KiB of
// an idle socket's heap, for frames of a few hundred bytes. A frame larger
// than a buffer still passes: in more reads, or written beside the buffer.
const (
	wsReadBuffer  = 1 << 10
	wsWriteBuffer = 2 << 10
)

// smallBuffers returns brw with buffers of wsReadBuffer and wsWriteBuffer
// bytes on c. The bytes the server read past the upgrade request (a client
// may send its first frame with it) stay buffered in the new reader, where
// coder/websocket looks for them. Should they not fit, brw is kept.
func smallBuffers(c net.Conn, brw *bufio.ReadWriter) *bufio.ReadWriter {
	n := brw.Reader.Buffered()
	if n > wsReadBuffer || brw.Writer.Buffered() > 0 {
		return brw
	}
	ahead, _ := brw.Reader.Peek(n)
	br := bufio.NewReaderSize(io.MultiReader(bytes.NewReader(bytes.Clone(ahead)), c), wsReadBuffer)
	if n > 0 {
		// Reads the cloned bytes alone: Peek stops once it holds n. They
		// must be buffered, not only readable: coder/websocket (v1.8's
		// accept) takes Buffered() bytes from the reader and then reads
		// the raw connection, so bytes left in the MultiReader would be lost.
		if _, err := br.Peek(n); err != nil {
			return brw
		}
	}
	return bufio.NewReadWriter(br, bufio.NewWriterSize(c, wsWriteBuffer))
}

func (h *hijackCapture) Unwrap() http.ResponseWriter { return h.ResponseWriter }
