package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/netip"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/redis/go-redis/v9"

	"github.com/matchgate/matchgate/control"
	"github.com/matchgate/matchgate/gateway"
	"github.com/matchgate/matchgate/matcher"
	"github.com/matchgate/matchgate/matcher/engine"
	"github.com/matchgate/matchgate/ratelimit"
)

// securityFlags are the flags of tokens, limits, bans, the admin API and
// live queue changes (SECURITY.md explains each).
type securityFlags struct {
	keys                                 map[string][]byte
	signingKID                           string
	adminTokens                          []string
	trustedProxies, limitExempt          []netip.Prefix
	limits                               gateway.Limits
	messages                             ratelimit.Limit
	maxConnections, maxSocketsUser       int
	pingInterval, pingTimeout, queuePoll time.Duration
	banReload                            time.Duration
}

// The limits default to gateway.DefaultLimits (never reached by a real
// client's pace, reached by a flood within a second; SECURITY.md), and
// loopback (load tests) is exempt from the per-IP ones.
const defaultLimitExempt = "127.0.0.0/8,::1/128"

// addSecurityFlags declares the flags on fs; the returned function reads
// them once fs has parsed.
func addSecurityFlags(fs *flagSet) func() (securityFlags, error) {
	secrets := fs.Secret("secrets", "more HS256 keys for rotation, kid=key,… (at least 16 bytes each): a token whose header names a kid is verified with that key")
	signingKID := fs.String("signing-kid", "", "kid of the --secrets key that signs guest tokens (default: --secret, no kid)")
	admin := fs.Secret("admin-token", "bearer token(s) of the admin API /v1/admin/, comma-separated for rotation, at least 32 bytes each; empty disables the admin API")
	trusted := fs.String("trusted-proxies", "", "comma-separated IPs/CIDRs of reverse proxies whose X-Forwarded-For is believed (default: none, the TCP peer is the client)")
	exempt := fs.String("limit-exempt", defaultLimitExempt, "comma-separated IPs/CIDRs the per-IP limits skip (load tests on loopback); empty for none")
	def := gateway.DefaultLimits
	limitFlags := []struct {
		name string
		raw  *string
		dst  func(*securityFlags) *ratelimit.Limit
	}{
		{"limit-joins-user", fs.String("limit-joins-user", def.JoinsPerUser.String(), "joins per user, N/duration[:burst] or off (shared by every gateway)"),
			func(sf *securityFlags) *ratelimit.Limit { return &sf.limits.JoinsPerUser }},
		{"limit-joins-ip", fs.String("limit-joins-ip", def.JoinsPerIP.String(), "joins per client address, N/duration[:burst] or off"),
			func(sf *securityFlags) *ratelimit.Limit { return &sf.limits.JoinsPerIP }},
		{"limit-cancels-user", fs.String("limit-cancels-user", def.CancelsPerUser.String(), "cancels per user, N/duration[:burst] or off"),
			func(sf *securityFlags) *ratelimit.Limit { return &sf.limits.CancelsPerUser }},
		{"limit-accepts-user", fs.String("limit-accepts-user", def.AcceptsPerUser.String(), "accepts and declines per user, N/duration[:burst] or off"),
			func(sf *securityFlags) *ratelimit.Limit { return &sf.limits.AcceptsPerUser }},
		{"limit-reads-user", fs.String("limit-reads-user", def.ReadsPerUser.String(), "reads per user (GET tickets and queues with a token, status frames), N/duration[:burst] or off"),
			func(sf *securityFlags) *ratelimit.Limit { return &sf.limits.ReadsPerUser }},
		{"limit-reads-ip", fs.String("limit-reads-ip", def.ReadsPerIP.String(), "GET /v1/queues without a token per client address, N/duration[:burst] or off"),
			func(sf *securityFlags) *ratelimit.Limit { return &sf.limits.ReadsPerIP }},
		{"limit-heartbeats-user", fs.String("limit-heartbeats-user", def.HeartbeatsPerUser.String(), "REST ticket heartbeats per user, N/duration[:burst] or off"),
			func(sf *securityFlags) *ratelimit.Limit { return &sf.limits.HeartbeatsPerUser }},
		{"limit-connects-ip", fs.String("limit-connects-ip", def.ConnectsPerIP.String(), "WebSocket connection attempts per client address, N/duration[:burst] or off"),
			func(sf *securityFlags) *ratelimit.Limit { return &sf.limits.ConnectsPerIP }},
		{"limit-guests-ip", fs.String("limit-guests-ip", def.GuestsPerIP.String(), "guest sign-ins per client address, N/duration[:burst] or off"),
			func(sf *securityFlags) *ratelimit.Limit { return &sf.limits.GuestsPerIP }},
	}
	messages := fs.String("limit-messages", gateway.DefaultMessageRate.String(), "frames per socket, N/duration[:burst] or off")
	maxConns := fs.String("max-connections", strconv.Itoa(gateway.DefaultMaxConnections), "sockets on this node; more upgrades get 503 (0: no cap)")
	maxUser := fs.String("max-sockets-per-user", strconv.Itoa(gateway.DefaultMaxSocketsUser), "sockets of one user across every gateway; more get 429 (0: no cap)")
	pingInterval := fs.Duration("ping-interval", gateway.DefaultPingInterval, "protocol ping period of every socket")
	pingTimeout := fs.Duration("ping-timeout", gateway.DefaultPingTimeout, "a socket whose pong takes longer is dropped")
	queuePoll := fs.Duration("queue-poll", 5*time.Second, "how often queue changes made through the admin API are looked for (they are also announced at once)")
	return func() (securityFlags, error) {
		var sf securityFlags
		var err error
		if sf.keys, err = parseKeys(*secrets); err != nil {
			return sf, fmt.Errorf("--secrets: %w", err)
		}
		sf.signingKID = *signingKID
		if sf.signingKID != "" && sf.keys[sf.signingKID] == nil {
			return sf, fmt.Errorf("--signing-kid %q is not a kid of --secrets", sf.signingKID)
		}
		for _, t := range splitList(*admin) {
			if len(t) < 32 {
				return sf, errors.New("--admin-token: each token must be at least 32 bytes")
			}
			sf.adminTokens = append(sf.adminTokens, t)
		}
		if sf.trustedProxies, err = parsePrefixes(*trusted); err != nil {
			return sf, fmt.Errorf("--trusted-proxies: %w", err)
		}
		if sf.limitExempt, err = parsePrefixes(*exempt); err != nil {
			return sf, fmt.Errorf("--limit-exempt: %w", err)
		}
		for _, l := range limitFlags {
			if *l.dst(&sf), err = ratelimit.ParseLimit(*l.raw); err != nil {
				return sf, fmt.Errorf("--%s: %w", l.name, err)
			}
		}
		if sf.messages, err = ratelimit.ParseLimit(*messages); err != nil {
			return sf, fmt.Errorf("--limit-messages: %w", err)
		}
		if sf.maxConnections, err = nonNegative("max-connections", *maxConns); err != nil {
			return sf, err
		}
		if sf.maxSocketsUser, err = nonNegative("max-sockets-per-user", *maxUser); err != nil {
			return sf, err
		}
		sf.pingInterval, sf.pingTimeout, sf.queuePoll = *pingInterval, *pingTimeout, *queuePoll
		if sf.pingInterval <= 0 || sf.pingTimeout <= 0 || sf.queuePoll <= 0 {
			return sf, errors.New("--ping-interval, --ping-timeout and --queue-poll must be positive")
		}
		sf.banReload = 30 * time.Second
		return sf, nil
	}
}

func splitList(s string) []string {
	var out []string
	for _, p := range strings.Split(s, ",") {
		if p = strings.TrimSpace(p); p != "" {
			out = append(out, p)
		}
	}
	return out
}

// parseKeys reads kid=key,kid=key.
func parseKeys(s string) (map[string][]byte, error) {
	keys := map[string][]byte{}
	for _, kv := range splitList(s) {
		kid, key, ok := strings.Cut(kv, "=")
		if !ok || kid == "" {
			return nil, errors.New("want kid=key,kid=key")
		}
		if len(key) < 16 {
			return nil, fmt.Errorf("key %q must be at least 16 bytes", kid)
		}
		if _, dup := keys[kid]; dup {
			return nil, fmt.Errorf("kid %q given twice", kid)
		}
		keys[kid] = []byte(key)
	}
	return keys, nil
}

// parsePrefixes reads IPs and CIDRs.
func parsePrefixes(s string) ([]netip.Prefix, error) {
	var out []netip.Prefix
	for _, p := range splitList(s) {
		if pf, err := netip.ParsePrefix(p); err == nil {
			out = append(out, pf.Masked())
			continue
		}
		a, err := netip.ParseAddr(p)
		if err != nil {
			return nil, fmt.Errorf("%q is neither an IP nor a CIDR", p)
		}
		out = append(out, netip.PrefixFrom(a.Unmap(), a.Unmap().BitLen()))
	}
	return out, nil
}

func nonNegative(name, s string) (int, error) {
	n, err := strconv.Atoi(strings.TrimSpace(s))
	if err != nil || n < 0 {
		return 0, fmt.Errorf("--%s must be a whole number ≥ 0", name)
	}
	return n, nil
}

// security is the control plane of one process: shared limits, the ban
// list, the admin backend, live queue changes and the control channel.
type security struct {
	flags   securityFlags
	node    string
	log     *slog.Logger
	limiter *ratelimit.Limiter
	sockets *ratelimit.Sockets
	bans    *control.BanList
	admin   *control.Admin
	queues  *control.QueueWatcher
	bus     *control.Bus
	gw      atomic.Pointer[gateway.Server]
}

// newSecurity builds the control plane over Redis and, when there is one,
// PostgreSQL (bans and queue changes are kept there; in Redis otherwise),
// loads the bans, and returns the queue configuration in force: the file's
// with the changes stored through the admin API. onQueues receives every
// later change; now is the clock of socket leases and bans.
func newSecurity(ctx context.Context, sf securityFlags, rdb redis.UniversalClient, pg *pgxpool.Pool, prefix, node string,
	base matcher.Config, onQueues func(matcher.Config), now func() time.Time, log *slog.Logger) (*security, matcher.Config, error) {
	s := &security{flags: sf, node: node, log: log}
	var err error
	if s.limiter, err = ratelimit.New(ratelimit.Config{Redis: rdb, Prefix: prefix}); err != nil {
		return nil, base, err
	}
	if err := s.limiter.Load(ctx); err != nil {
		log.Warn("load rate limit scripts (they load on first use)", "err", err)
	}
	if s.sockets, err = ratelimit.NewSockets(ratelimit.SocketsConfig{Redis: rdb, Prefix: prefix, TTL: 3*sf.pingInterval + 5*time.Second, Now: now}); err != nil {
		return nil, base, err
	}
	var banStore control.BanStore
	var queueStore control.QueueStore
	if pg != nil {
		banStore, queueStore = control.NewPostgresBans(pg), control.NewPostgresQueues(pg)
	} else {
		banStore, queueStore = control.NewRedisBans(rdb, prefix), control.NewRedisQueues(rdb, prefix)
	}
	if s.bus, err = control.NewBus(control.BusConfig{Redis: rdb, Prefix: prefix, Logger: log}); err != nil {
		return nil, base, err
	}
	if s.bans, err = control.NewBanList(control.BanListConfig{Store: banStore, Interval: sf.banReload, Now: now, Logger: log}); err != nil {
		return nil, base, err
	}
	if err := s.bans.Reload(ctx); err != nil {
		log.Warn("bans not loaded yet; retrying in the background", "err", err)
	}
	if s.admin, err = control.NewAdmin(control.AdminConfig{Bans: banStore, List: s.bans, Queues: queueStore, Base: base, Bus: s.bus, Now: now, Logger: log}); err != nil {
		return nil, base, err
	}
	if s.queues, err = control.NewQueueWatcher(control.QueueWatcherConfig{Store: queueStore, Base: base, Interval: sf.queuePoll, OnChange: onQueues, Logger: log}); err != nil {
		return nil, base, err
	}
	queues, err := s.queues.Load(ctx)
	if err != nil {
		return nil, base, fmt.Errorf("queue changes stored through the admin API: %w", err)
	}
	if len(sf.adminTokens) == 0 {
		log.Info("admin API disabled (no --admin-token)")
	}
	return s, queues, nil
}

// gateway adds the security settings to a gateway configuration.
func (s *security) gateway(c gateway.Config) gateway.Config {
	sf := s.flags
	c.Keys, c.SigningKeyID = sf.keys, sf.signingKID
	c.AdminTokens, c.Admin, c.Bans = sf.adminTokens, s.admin, s.bans
	c.Limiter, c.Sockets = s.limiter, s.sockets
	c.Limits = sf.limits
	c.TrustedProxies, c.LimitExempt = sf.trustedProxies, sf.limitExempt
	c.MessageRate = sf.messages
	if sf.messages.Off() {
		c.MessageRate = ratelimit.Limit{N: -1}
	}
	c.MaxConnections, c.MaxSocketsPerUser = orNoCap(sf.maxConnections), orNoCap(sf.maxSocketsUser)
	c.PingInterval, c.PingTimeout = sf.pingInterval, sf.pingTimeout
	return c
}

// orNoCap maps the flags' 0 (no cap) to the gateway's negative.
func orNoCap(n int) int {
	if n == 0 {
		return -1
	}
	return n
}

// bind hands the control channel's gateway messages to gw.
func (s *security) bind(gw *gateway.Server) { s.gw.Store(gw) }

// tasks are the ban list reloads, the queue watcher and the control
// channel.
func (s *security) tasks() []task {
	return []task{
		{"ban list", s.bans.Run},
		{"queue watcher", s.queues.Run},
		{"control channel", func(ctx context.Context) error { return s.bus.Run(ctx, s.handle, nil) }},
	}
}

// sweepBans cancels, in this process, the waiting tickets of each user
// whose ban enters its list: with the Service's check of the list after a
// join is recorded, no join racing the ban keeps its ticket (see
// control.BanList).
func (s *security) sweepBans(svc *engine.Service) {
	s.bans.OnBan(func(b control.Ban) {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		st, err := svc.UserState(ctx, b.UserID)
		if err != nil {
			s.log.Warn("ban: load the user's tickets", "user", b.UserID, "err", err)
			return
		}
		for _, t := range st.Tickets {
			if t.Status != matcher.StatusWaiting {
				continue
			}
			if _, err := svc.Cancel(ctx, b.UserID, t.ID); err != nil && matcher.ErrorCode(err) != matcher.CodeAlreadyCancelled && matcher.ErrorCode(err) != matcher.CodeAlreadyMatched {
				s.log.Warn("ban: cancel a waiting ticket", "user", b.UserID, "ticket", t.ID, "err", err)
			}
		}
	})
}

// handle carries out one control-channel message in this process.
func (s *security) handle(m control.Message) {
	gw := s.gw.Load()
	switch m.Op {
	case control.OpBan:
		if m.Ban != nil && m.Ban.UserID == m.User {
			s.bans.Apply(*m.Ban)
		}
		if gw != nil {
			gw.DisconnectUser(m.User, gateway.CloseBanned, "banned")
		}
	case control.OpUnban:
		s.bans.Lift(m.User)
	case control.OpDisconnect:
		if gw != nil {
			gw.DisconnectUser(m.User, gateway.CloseDisconnected, "disconnected by an operator")
		}
	case control.OpDrain:
		if gw != nil && m.Node == s.node && gw.Drain() {
			s.log.Warn("draining on request of the admin API", "node", s.node)
		}
	case control.OpQueues:
		s.queues.Nudge()
	case control.OpResync:
		// Messages were lost while the channel was down: reload what is kept.
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if err := s.bans.Reload(ctx); err != nil {
			s.log.Warn("reload bans after the control channel came back", "err", err)
		}
		s.queues.Nudge()
	}
}
