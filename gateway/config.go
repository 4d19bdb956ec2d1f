package gateway

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/matchgate/matchgate/matcher"
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
	// UserState is what a (re)connecting client is told first.
	UserState(ctx context.Context, userID string) (matcher.UserState, error)
	// Queues describes the configured queues.
	Queues(ctx context.Context) ([]matcher.QueueInfo, error)
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

// Config configures a Server. The zero value of every field except
// Matchmaker, Subscriber and Secret means its documented default.
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

	// Secret is the HS256 key that signs and verifies tokens. Required, at
	// least 16 bytes.
	Secret []byte
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
	// ShutdownTimeout bounds Run's drain: sockets still open when it ends
	// are dropped, and http.Server.Shutdown gets the same budget.
	// Default: 10s.
	ShutdownTimeout time.Duration
	// MaxBodyBytes is the largest REST request body; a bigger one is
	// answered 400 BAD_REQUEST. Default: 4096.
	MaxBodyBytes int64

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
	DefaultPingInterval    = 20 * time.Second
	DefaultPingTimeout     = 10 * time.Second
	DefaultWriteTimeout    = 5 * time.Second
	DefaultCommandTimeout  = 10 * time.Second
	DefaultShutdownTimeout = 10 * time.Second
	DefaultMaxBodyBytes    = 4096

	// minSecretBytes is the shortest HS256 key New accepts.
	minSecretBytes = 16
)

// withDefaults validates c and fills in the documented defaults.
func (c Config) withDefaults() (Config, error) {
	if c.Matchmaker == nil {
		return c, errors.New("gateway: Config.Matchmaker is required")
	}
	if c.Subscriber == nil {
		return c, errors.New("gateway: Config.Subscriber is required")
	}
	if len(c.Secret) < minSecretBytes {
		return c, fmt.Errorf("gateway: Config.Secret must be at least %d bytes", minSecretBytes)
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
	}
	for _, d := range durations {
		switch {
		case *d.v < 0:
			return c, fmt.Errorf("gateway: Config.%s must not be negative", d.name)
		case *d.v == 0:
			*d.v = d.def
		}
	}
	if c.MaxFrameBytes < 0 || c.SendQueue < 0 || c.MaxBodyBytes < 0 {
		return c, errors.New("gateway: Config sizes must not be negative")
	}
	if c.MaxFrameBytes == 0 {
		c.MaxFrameBytes = DefaultMaxFrameBytes
	}
	if c.SendQueue == 0 {
		c.SendQueue = DefaultSendQueue
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
