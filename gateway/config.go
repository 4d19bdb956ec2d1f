package gateway

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"net/netip"
	"os"
	"path"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/matchgate/matchgate/admission"
	"github.com/matchgate/matchgate/control"
	"github.com/matchgate/matchgate/matcher"
	"github.com/matchgate/matchgate/ratelimit"
	"github.com/matchgate/matchgate/web"
)

// Matchmaker is the matcher Service as seen from the edge. Errors are
// *matcher.Error (domain: mapped by errors.go) or anything else (internal:
// logged, answered with 500/INTERNAL and a generic message).
type Matchmaker interface {
	// Join creates a WAITING ticket. ALREADY_QUEUED carries TicketID.
	Join(ctx context.Context, req matcher.JoinRequest) (matcher.Ticket, error)
	// Cancel cancels the user's ticket. ALREADY_MATCHED carries MatchID;
	// ALREADY_CANCELLED; NOT_FOUND, also for other users' tickets.
	Cancel(ctx context.Context, userID, ticketID string) (matcher.Ticket, error)
	// Ticket returns the user's ticket with its match (NOT_FOUND for other users').
	Ticket(ctx context.Context, userID, ticketID string) (matcher.TicketView, error)
	// Heartbeat keeps a WAITING ticket alive.
	Heartbeat(ctx context.Context, userID, ticketID string) error
	// Accept accepts a PENDING_ACCEPT match the user is seated in.
	Accept(ctx context.Context, userID, matchID string) (matcher.Match, error)
	// Decline declines a PENDING_ACCEPT match the user is seated in.
	Decline(ctx context.Context, userID, matchID string) (matcher.Match, error)
	// UserState is what a (re)connecting client is told first, bounded.
	UserState(ctx context.Context, userID string) (matcher.UserState, error)
	// TicketHistory pages the user's resolved tickets newest first, from a
	// cursor UserState or an earlier page gave ("" for the newest); a bad
	// cursor or limit is BAD_REQUEST.
	TicketHistory(ctx context.Context, userID, before string, limit int) (matcher.UserState, error)
	// Queues describes the configured queues.
	Queues(ctx context.Context) ([]matcher.QueueInfo, error)
}

// Admissions is the admission Service (admission.Service) as seen from the
// edge: the players' enter, position and leave, and the protected
// downstream's claim, consume and release of an entry token. Its refusals
// are admission's sentinel errors (mapped by protocol.AdmissionCodeOf);
// anything else is internal, or UNAVAILABLE when transient.
type Admissions interface {
	// Enter takes the user's place in queue, or returns the live one the
	// user holds (created false).
	Enter(ctx context.Context, queue, userID string) (pos admission.Position, created bool, err error)
	// Position is the user's place; Status "" when the user holds none.
	Position(ctx context.Context, queue, userID string) (admission.Position, error)
	// Leave gives the user's place up (ErrNotFound without one).
	Leave(ctx context.Context, queue, userID string) error
	// Claim moves a READY token to CLAIMED (ErrAlreadyClaimed; ErrNotFound
	// when unknown or expired).
	Claim(ctx context.Context, queue, token string) (admission.Place, error)
	// Consume ends a CLAIMED token (ErrNotClaimed otherwise).
	Consume(ctx context.Context, queue, token string) (admission.Place, error)
	// Release gives a CLAIMED token back (ErrNotClaimed otherwise).
	Release(ctx context.Context, queue, token string) (admission.Place, error)
	// Queues are the admission queues in force with their figures, for
	// GET /v1/queues; the service measures each at most once a second.
	Queues(ctx context.Context) ([]admission.QueueStats, error)
}

// Subscriber delivers the frames published on a user's channel
// (mg:user:<id>). deliver must not block; it is called from one shared
// dispatch goroutine. The frame is shared: the receiver must not modify it.
type Subscriber interface {
	Subscribe(ctx context.Context, userID string, deliver func(frame []byte)) (unsubscribe func(), err error)
}

// Presence records which users hold a live socket on this node, so the
// matcher can tell a waiting player from a ghost.
type Presence interface {
	Connected(ctx context.Context, userID string) error
	Disconnected(userID string)
}

// ReadyChecker reports dependency health for /readyz; nil error means ready.
type ReadyChecker func(ctx context.Context) error

// RateLimiter counts events against limits shared by every gateway
// (ratelimit.Limiter, in Redis). An error lets the event through: the
// limits protect the service, and an unreachable Redis already refuses joins.
type RateLimiter interface {
	Allow(ctx context.Context, name, subject string, l ratelimit.Limit) (ratelimit.Decision, error)
}

// SocketLimiter caps the sockets one user holds (ratelimit.Sockets: across
// every gateway). Acquire reports false when the user holds max already;
// Renew is called every PingInterval with the leases of every open socket.
type SocketLimiter interface {
	Acquire(ctx context.Context, userID, socketID string, max int) (bool, error)
	Release(ctx context.Context, userID, socketID string) error
	Renew(ctx context.Context, leases []ratelimit.Lease) error
}

// BanChecker tells whether a user is banned, without I/O (control.BanList).
type BanChecker interface {
	Banned(userID string) bool
}

// Admin carries out the admin API's requests (control.Admin). Errors are
// *matcher.Error for the caller (BAD_REQUEST, NOT_FOUND) or internal.
type Admin interface {
	Ban(ctx context.Context, b control.Ban) (control.Ban, error)
	Unban(ctx context.Context, userID string) error
	Bans(ctx context.Context) ([]control.Ban, error)
	Disconnect(ctx context.Context, userID string) error
	Drain(ctx context.Context, node string) error
	Queues(ctx context.Context) (control.QueuesView, error)
	PutQueue(ctx context.Context, name string, raw json.RawMessage) (control.QueueOverride, error)
	RetireQueue(ctx context.Context, name string) (control.QueueOverride, error)
}

// Limits are the limits shared by every gateway, enforced only with a
// Config.Limiter. A zero Limit is off. Per-IP limits use the client address
// (Config.TrustedProxies), an IPv6 client's /64 as one subject, and skip
// Config.LimitExempt. DefaultLimits are the defaults of `matchgate serve`
// (SECURITY.md says how each was chosen).
type Limits struct {
	// JoinsPerUser: joins and admission entries (REST and WebSocket) of
	// one user, one budget.
	JoinsPerUser ratelimit.Limit
	// JoinsPerIP: joins and admission entries from one client address.
	JoinsPerIP ratelimit.Limit
	// CancelsPerUser: cancels and admission leaves (REST and WebSocket) of
	// one user.
	CancelsPerUser ratelimit.Limit
	// AcceptsPerUser: accepts and declines (REST and WebSocket) of one user,
	// one budget.
	AcceptsPerUser ratelimit.Limit
	// ReadsPerUser: reads of one user: GET /v1/tickets/{id}, GET
	// /v1/tickets, GET /v1/queues with a token, admission positions (REST
	// and WebSocket), and status frames.
	ReadsPerUser ratelimit.Limit
	// ReadsPerIP: GET /v1/queues without a token, per client address.
	ReadsPerIP ratelimit.Limit
	// HeartbeatsPerUser: PUT /v1/tickets/{id}/heartbeat of one user.
	HeartbeatsPerUser ratelimit.Limit
	// ConnectsPerIP: WebSocket upgrade attempts from one client address,
	// counted before the token is checked.
	ConnectsPerIP ratelimit.Limit
	// GuestsPerIP: guest sign-ins from one client address.
	GuestsPerIP ratelimit.Limit
}

// DefaultLimits never refuse a real client's pace and refuse a flood within
// its first second: each allows its burst at once, then its rate.
var DefaultLimits = Limits{
	JoinsPerUser:      ratelimit.Limit{N: 10, Per: 10 * time.Second, Burst: 5},
	JoinsPerIP:        ratelimit.Limit{N: 600, Per: time.Minute, Burst: 100},
	CancelsPerUser:    ratelimit.Limit{N: 10, Per: 10 * time.Second, Burst: 5},
	AcceptsPerUser:    ratelimit.Limit{N: 10, Per: 10 * time.Second, Burst: 5},
	ReadsPerUser:      ratelimit.Limit{N: 120, Per: time.Minute, Burst: 30},
	ReadsPerIP:        ratelimit.Limit{N: 600, Per: time.Minute, Burst: 100},
	HeartbeatsPerUser: ratelimit.Limit{N: 60, Per: time.Minute, Burst: 20},
	ConnectsPerIP:     ratelimit.Limit{N: 120, Per: time.Minute, Burst: 30},
	GuestsPerIP:       ratelimit.Limit{N: 30, Per: time.Minute, Burst: 10},
}

// all lists the limits, for validation.
func (l Limits) all() []ratelimit.Limit {
	return []ratelimit.Limit{l.JoinsPerUser, l.JoinsPerIP, l.CancelsPerUser, l.AcceptsPerUser,
		l.ReadsPerUser, l.ReadsPerIP, l.HeartbeatsPerUser, l.ConnectsPerIP, l.GuestsPerIP}
}

// Config configures a Server. The zero value of every field except
// Matchmaker, Subscriber and Secret (or Keys) means its documented default.
type Config struct {
	// Matchmaker serves joins, cancels, accepts and status. Required.
	Matchmaker Matchmaker
	// Subscriber delivers each connected user's pushes. Required.
	Subscriber Subscriber
	// Presence is told of every socket that opens and closes. Default: none.
	Presence Presence
	// Ready reports dependency health for /readyz. Default: always ready.
	Ready ReadyChecker
	// Logger receives internal errors and lifecycle events; tokens are never
	// logged. Default: discard.
	Logger *slog.Logger
	// Registerer is where the gateway's metrics are registered. Default: a
	// private registry (also the default Gatherer).
	Registerer prometheus.Registerer
	// Gatherer is what /metrics exposes. Default: the private registry when
	// Registerer is nil, otherwise prometheus.DefaultGatherer if Registerer is
	// prometheus.DefaultRegisterer, otherwise Registerer itself when it is
	// also a Gatherer (a *prometheus.Registry); New fails if none applies.
	Gatherer prometheus.Gatherer
	// Node names this gateway in hello frames. Default: the host name.
	Node string

	// Secret is the default HS256 key: it verifies tokens that name no key
	// ("kid") and signs guest tokens unless SigningKeyID says otherwise. At
	// least 16 bytes (32 or more recommended). Required unless Keys is set.
	Secret []byte
	// Keys are more HS256 keys by key id, for rotation: a token whose
	// header names a kid is verified with that key only (an unknown kid is
	// refused). Each at least 16 bytes. Default: none.
	Keys map[string][]byte
	// SigningKeyID names the key of Keys that signs guest tokens. Default:
	// "", the Secret, with no kid.
	SigningKeyID string
	// Guests enables POST /v1/auth/guest (demo and development only: a guest
	// chooses its own skill). Default: false (the route answers 404).
	Guests bool
	// TokenTTL is the lifetime of guest tokens. Default: 24h.
	TokenTTL time.Duration
	// AllowedOrigins are extra Origin host patterns accepted for WebSocket
	// upgrades (coder/websocket AcceptOptions.OriginPatterns, path.Match
	// syntax, e.g. "app.example.com" or "https://*.example.com").
	// Default: none, so only pages served from the same host may connect.
	AllowedOrigins []string

	// MaxFrameBytes is the largest client frame accepted; a bigger one
	// closes the socket with CloseTooBig (1009). Default: 4096.
	MaxFrameBytes int64
	// SendQueue is the number of frames that may wait to be written to one
	// socket; one more disconnects it with CloseSlowConsumer. Default: 64.
	SendQueue int
	// SendQueueBytes bounds the bytes of the frames waiting to be written to
	// one socket, hello included: a frame that would pass it disconnects the
	// socket with CloseSlowConsumer, as SendQueue does. A count of frames
	// alone let one socket hold 64 large frames. Default: 1 MiB.
	SendQueueBytes int64
	// PingInterval is how often every socket is pinged. Default: 20s.
	PingInterval time.Duration
	// PingTimeout is how long a pong may take before the socket is
	// dropped. Default: 10s.
	PingTimeout time.Duration
	// WriteTimeout bounds every write to a socket. Default: 5s.
	WriteTimeout time.Duration
	// CommandTimeout bounds each Matchmaker call made for a frame or a
	// request. Default: 10s.
	CommandTimeout time.Duration
	// ProviderGrace is how long a provider's closed socket keeps it online:
	// a reconnect within it (to any gateway) keeps its offers; past it,
	// the provider goes offline and its open offers go to others at once.
	// Default: 3s.
	ProviderGrace time.Duration
	// ShutdownTimeout bounds Run's drain: sockets still open when it ends
	// are dropped, and http.Server.Shutdown gets the same budget.
	// Default: 10s.
	ShutdownTimeout time.Duration
	// MaxBodyBytes is the largest REST request body; a bigger one is
	// answered 400 BAD_REQUEST. Default: 4096. (Admin bodies may be up to
	// 16 KiB: queue configurations.)
	MaxBodyBytes int64

	// MessageRate bounds the frames one socket may send: a local token
	// bucket (N per Per, burst N). A frame over it is dropped, with at most
	// one RATE_LIMITED error frame per second; a socket that keeps going
	// (more than N dropped in a row) is closed with CloseTooManyMessages.
	// Default: 20/2s (10 a second, bursts of 20); N < 0 turns it off.
	MessageRate ratelimit.Limit
	// MaxConnections caps this node's sockets: more upgrades are refused
	// with 503 before the upgrade. Default: 200000; negative: no cap.
	MaxConnections int
	// MaxSocketsPerUser caps one user's sockets (across every gateway with
	// a shared Sockets): more are refused with 429. Default: 8; negative: no
	// cap.
	MaxSocketsPerUser int
	// Sockets holds the per-user socket leases. Default: a count on this
	// node only.
	Sockets SocketLimiter
	// Limiter enforces Limits. Default: none (Limits are not enforced).
	Limiter RateLimiter
	// Limits are the limits shared by every gateway. Default: all off
	// (`matchgate serve` sets DefaultLimits).
	Limits Limits
	// TrustedProxies are the peers whose X-Forwarded-For is believed: the
	// client address is the right-most address of the header that is not
	// itself a trusted proxy. Default: none (the TCP peer is the client).
	TrustedProxies []netip.Prefix
	// LimitExempt are client addresses the per-IP limits skip (load tests
	// from loopback). Default: none.
	LimitExempt []netip.Prefix

	// Bans tells who is banned: refused at connect (403) and at every
	// authenticated request and join (FORBIDDEN). Default: nobody.
	Bans BanChecker
	// AdminTokens are the bearer tokens of the admin API under /v1/admin/
	// (several, so that one can be rotated); each at least 32 bytes.
	// Default: none, and the admin API answers 404.
	AdminTokens []string
	// Admin carries out admin requests. Required with AdminTokens.
	Admin Admin
	// Admissions serves the admission queues under /v1/admission/ and the
	// enter, position and leave frames; the protected downstream's token
	// routes take an admin token (the service credential). Default: none,
	// and every admission route and frame answers NOT_FOUND.
	Admissions Admissions
	// Rankings serves the ranking boards under /v1/rankings/ (posting
	// events takes an admin token, the service credential) and the admin
	// route of their weights. Default: none, and every ranking route
	// answers NOT_FOUND.
	Rankings Rankings
	// Providers serves the provider queues' providers: the provider
	// frames, /v1/providers/, /v1/assignments/ and /v1/presence/providers,
	// and a provider's hello. Default: none, and every provider route and
	// frame answers NOT_FOUND.
	Providers Providers

	// Static is served at / (the demo page). Default: web.FS.
	Static fs.FS
	// Now is the clock used for tokens. Default: time.Now.
	Now func() time.Time
}

// Defaults of Config, in one place.
const (
	DefaultTokenTTL        = 24 * time.Hour
	DefaultMaxFrameBytes   = 4096
	DefaultSendQueue       = 64
	DefaultSendQueueBytes  = 1 << 20
	DefaultPingInterval    = 20 * time.Second
	DefaultPingTimeout     = 10 * time.Second
	DefaultWriteTimeout    = 5 * time.Second
	DefaultCommandTimeout  = 10 * time.Second
	DefaultShutdownTimeout = 10 * time.Second
	DefaultProviderGrace   = 3 * time.Second
	DefaultMaxBodyBytes    = 4096
	DefaultMaxConnections  = 200_000
	DefaultMaxSocketsUser  = 8

	// minSecretBytes is the shortest HS256 key New accepts.
	minSecretBytes = 16
	// minAdminTokenBytes is the shortest admin token New accepts.
	minAdminTokenBytes = 32
)

// DefaultMessageRate is the default Config.MessageRate: 10 frames a second
// per socket, in bursts of up to 20.
var DefaultMessageRate = ratelimit.Limit{N: 20, Per: 2 * time.Second}

// withDefaults validates c and fills in the documented defaults.
func (c Config) withDefaults() (Config, error) {
	if c.Matchmaker == nil {
		return c, errors.New("gateway: Config.Matchmaker is required")
	}
	if c.Subscriber == nil {
		return c, errors.New("gateway: Config.Subscriber is required")
	}
	if len(c.Secret) == 0 && len(c.Keys) == 0 {
		return c, fmt.Errorf("gateway: Config.Secret must be at least %d bytes", minSecretBytes)
	}
	for _, t := range c.AdminTokens {
		if len(t) < minAdminTokenBytes {
			return c, fmt.Errorf("gateway: admin tokens must be at least %d bytes", minAdminTokenBytes)
		}
	}
	if len(c.AdminTokens) > 0 && c.Admin == nil {
		return c, errors.New("gateway: Config.Admin is required with AdminTokens")
	}
	for _, l := range append(c.Limits.all(), c.MessageRate) {
		if err := l.Validate(); err != nil {
			return c, fmt.Errorf("gateway: %w", err)
		}
	}
	if c.MessageRate == (ratelimit.Limit{}) {
		c.MessageRate = DefaultMessageRate
	}
	if c.MaxConnections == 0 {
		c.MaxConnections = DefaultMaxConnections
	}
	if c.MaxSocketsPerUser == 0 {
		c.MaxSocketsPerUser = DefaultMaxSocketsUser
	}
	if c.Sockets == nil {
		c.Sockets = newLocalSockets()
	}
	if c.Ready == nil {
		c.Ready = func(context.Context) error { return nil }
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	if c.Node == "" {
		h, err := os.Hostname()
		if err != nil || h == "" {
			h = "gateway"
		}
		c.Node = h
	}
	for _, p := range c.AllowedOrigins {
		if _, err := path.Match(p, ""); err != nil {
			return c, fmt.Errorf("gateway: bad origin pattern %q: %w", p, err)
		}
	}
	durations := []struct {
		name string
		v    *time.Duration
		def  time.Duration
	}{
		{"TokenTTL", &c.TokenTTL, DefaultTokenTTL},
		{"PingInterval", &c.PingInterval, DefaultPingInterval},
		{"PingTimeout", &c.PingTimeout, DefaultPingTimeout},
		{"WriteTimeout", &c.WriteTimeout, DefaultWriteTimeout},
		{"CommandTimeout", &c.CommandTimeout, DefaultCommandTimeout},
		{"ShutdownTimeout", &c.ShutdownTimeout, DefaultShutdownTimeout},
		{"ProviderGrace", &c.ProviderGrace, DefaultProviderGrace},
	}
	for _, d := range durations {
		switch {
		case *d.v < 0:
			return c, fmt.Errorf("gateway: Config.%s must not be negative", d.name)
		case *d.v == 0:
			*d.v = d.def
		}
	}
	if c.MaxFrameBytes < 0 || c.SendQueue < 0 || c.SendQueueBytes < 0 || c.MaxBodyBytes < 0 {
		return c, errors.New("gateway: Config sizes must not be negative")
	}
	if c.MaxFrameBytes == 0 {
		c.MaxFrameBytes = DefaultMaxFrameBytes
	}
	if c.SendQueue == 0 {
		c.SendQueue = DefaultSendQueue
	}
	if c.SendQueueBytes == 0 {
		c.SendQueueBytes = DefaultSendQueueBytes
	}
	if c.MaxBodyBytes == 0 {
		c.MaxBodyBytes = DefaultMaxBodyBytes
	}
	if c.Static == nil {
		c.Static = web.FS
	}
	if c.Now == nil {
		c.Now = time.Now
	}
	return c, nil
}
