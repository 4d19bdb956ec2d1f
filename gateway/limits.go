package gateway

import (
	"context"
	"log/slog"
	"net/http"
	"net/netip"
	"strings"
	"sync"
	"time"

	"github.com/matchgate/matchgate/matcher"
	"github.com/matchgate/matchgate/ratelimit"
)

// Names of the shared limits (the Redis key and the refusal metric's
// reason).
const (
	limitJoinUser      = "join_user"
	limitJoinIP        = "join_ip"
	limitCancelUser    = "cancel_user"
	limitAcceptUser    = "accept_user"
	limitReadUser      = "read_user"
	limitReadIP        = "read_ip"
	limitHeartbeatUser = "heartbeat_user"
	limitConnectIP     = "connect_ip"
	limitGuestIP       = "guest_ip"
)

// Refusal reasons counted by matchgate_refusals_total besides the limits.
const (
	refusedNodeCap     = "node_cap"
	refusedUserSockets = "user_sockets"
	refusedBanned      = "banned"
	refusedMessages    = "messages"
)

// limiterTimeout bounds one call to the shared limiter: past it the event
// goes through rather than wait on a slow Redis.
const limiterTimeout = time.Second

// bodyReadTimeout bounds reading a REST body.
const bodyReadTimeout = 10 * time.Second

// limitError is a refusal by a limit: RATE_LIMITED with a Retry-After.
type limitError struct {
	err   *matcher.Error
	after time.Duration
}

func (e *limitError) Error() string             { return e.err.Error() }
func (e *limitError) Unwrap() error             { return e.err }
func (e *limitError) RetryAfter() time.Duration { return e.after }

// clientIP is the address limits and logs attribute a request to: the TCP
// peer, or, when the peer is a trusted proxy, the right-most address of
// X-Forwarded-For that is not itself a trusted proxy. The header is read
// from the right because only the entries our own proxies appended can be
// believed: a client may put anything on the left. An unparsable peer
// address gives the zero Addr.
func (s *Server) clientIP(r *http.Request) netip.Addr {
	ap, err := netip.ParseAddrPort(r.RemoteAddr)
	if err != nil {
		return netip.Addr{}
	}
	return forwardedFor(ap.Addr().Unmap(), r.Header.Values("X-Forwarded-For"), s.cfg.TrustedProxies)
}

// forwardedFor resolves the client address behind peer from the
// X-Forwarded-For header values and the trusted proxies.
func forwardedFor(peer netip.Addr, header []string, trusted []netip.Prefix) netip.Addr {
	if !inPrefixes(peer, trusted) || len(header) == 0 {
		return peer
	}
	hops := strings.Split(strings.Join(header, ","), ",")
	if len(hops) > 32 {
		hops = hops[len(hops)-32:] // no real chain of proxies is longer
	}
	ip := peer
	for i := len(hops) - 1; i >= 0; i-- {
		hop := strings.TrimSpace(hops[i])
		a, err := netip.ParseAddr(hop)
		if err != nil {
			if ap, perr := netip.ParseAddrPort(hop); perr == nil {
				a, err = ap.Addr(), nil
			}
		}
		if err != nil || a.Zone() != "" {
			// Garbage appended by a trusted proxy is a misconfiguration;
			// the last trusted hop is as far as the chain can be followed.
			return ip
		}
		a = a.Unmap()
		if !inPrefixes(a, trusted) {
			return a
		}
		ip = a
	}
	return ip
}

func inPrefixes(a netip.Addr, ps []netip.Prefix) bool {
	if !a.IsValid() {
		return false
	}
	for _, p := range ps {
		if p.Contains(a) {
			return true
		}
	}
	return false
}

// ipSubject is the subject of per-IP limits: the address, or for IPv6 its
// /64 (one subscriber's usual allocation, so a client cannot rotate through
// addresses to escape the limit).
func ipSubject(a netip.Addr) string {
	switch {
	case !a.IsValid():
		return "unknown"
	case a.Is6():
		p, _ := a.Prefix(64)
		return p.String()
	}
	return a.String()
}

// limitIP counts one event of the client address against lim, unless the
// address is exempt.
func (s *Server) limitIP(ctx context.Context, name string, ip netip.Addr, lim ratelimit.Limit) error {
	if inPrefixes(ip, s.cfg.LimitExempt) {
		return nil
	}
	return s.limit(ctx, name, ipSubject(ip), lim)
}

// limit counts one event of subject against the shared limit lim. A limiter
// failure lets the event through (and is counted and logged, at most every
// few seconds).
func (s *Server) limit(ctx context.Context, name, subject string, lim ratelimit.Limit) error {
	if s.cfg.Limiter == nil || lim.Off() {
		return nil
	}
	ctx, cancel := context.WithTimeout(ctx, limiterTimeout)
	defer cancel()
	d, err := s.cfg.Limiter.Allow(ctx, name, subject, lim)
	if err != nil {
		s.metrics.limiterErrors.Inc()
		s.warnEvery(&s.lastLimiterWarn, "rate limiter unavailable: letting requests through", slog.Any("error", err))
		return nil
	}
	if d.Allowed {
		return nil
	}
	s.metrics.refuse(name)
	return &limitError{err: matcher.Errorf(matcher.CodeRateLimited, "%s", limitMessage(name)), after: d.RetryAfter}
}

func limitMessage(name string) string {
	switch name {
	case limitJoinUser:
		return "too many joins: slow down"
	case limitJoinIP:
		return "too many joins from this address: slow down"
	case limitCancelUser:
		return "too many cancels: slow down"
	case limitAcceptUser:
		return "too many accepts and declines: slow down"
	case limitReadUser, limitReadIP:
		return "too many reads: slow down"
	case limitHeartbeatUser:
		return "too many heartbeats: slow down"
	case limitConnectIP:
		return "too many connections from this address: retry later"
	case limitGuestIP:
		return "too many guest sign-ins from this address: retry later"
	}
	return "rate limited"
}

// warnEvery logs at most once per warnInterval per call site (last).
func (s *Server) warnEvery(last *timestamp, msg string, attrs ...any) {
	now := time.Now()
	if !last.claim(now, warnInterval) {
		return
	}
	s.log.Warn(msg, attrs...)
}

const warnInterval = 10 * time.Second

// timestamp is a time claimed at most once per interval.
type timestamp struct {
	mu   sync.Mutex
	last time.Time
}

func (t *timestamp) claim(now time.Time, every time.Duration) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	if now.Sub(t.last) < every {
		return false
	}
	t.last = now
	return true
}

// admitJoin checks a join before the Matchmaker sees it: names that could be
// configuration (nothing else reaches a Redis key), the ban list, then the
// per-user and per-IP join limits.
func (s *Server) admitJoin(ctx context.Context, p principal, ip netip.Addr, queue, region string, attrs map[string]string) error {
	if queue == "" {
		return matcher.Errorf(matcher.CodeBadRequest, "queue is required")
	}
	if !matcher.ValidName(queue) {
		return matcher.Errorf(matcher.CodeUnknownQueue, "no such queue (names are lower-case letters, digits, '-' and '_')")
	}
	if region != "" && !matcher.ValidName(region) {
		return matcher.Errorf(matcher.CodeBadRequest, "no such region (names are lower-case letters, digits, '-' and '_')")
	}
	if err := validateAttributes(attrs); err != nil {
		return err
	}
	if s.banned(p.UserID) {
		return errBanned
	}
	if err := s.limit(ctx, limitJoinUser, p.UserID, s.cfg.Limits.JoinsPerUser); err != nil {
		return err
	}
	return s.limitIP(ctx, limitJoinIP, ip, s.cfg.Limits.JoinsPerIP)
}

var errBanned = matcher.Errorf(matcher.CodeForbidden, "this account is banned")

// banned reports (and counts) a banned user.
func (s *Server) banned(userID string) bool {
	if s.cfg.Bans == nil || !s.cfg.Bans.Banned(userID) {
		return false
	}
	s.metrics.refuse(refusedBanned)
	return true
}

// validID reports whether s may be a ticket or match id: 1..64 of
// A-Z a-z 0-9 '-' '_'. Anything else cannot name a ticket or match and is
// answered NOT_FOUND without reaching the Matchmaker.
func validID(s string) bool {
	if s == "" || len(s) > 64 {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '-' || c == '_') {
			return false
		}
	}
	return true
}

// localSockets is the default SocketLimiter: a count of this node's sockets
// per user.
type localSockets struct {
	mu    sync.Mutex
	users map[string]map[string]struct{}
}

func newLocalSockets() *localSockets {
	return &localSockets{users: map[string]map[string]struct{}{}}
}

func (l *localSockets) Acquire(_ context.Context, userID, socketID string, max int) (bool, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	held := l.users[userID]
	if _, ok := held[socketID]; ok {
		return true, nil
	}
	if max > 0 && len(held) >= max {
		return false, nil
	}
	if held == nil {
		held = map[string]struct{}{}
		l.users[userID] = held
	}
	held[socketID] = struct{}{}
	return true, nil
}

func (l *localSockets) Release(_ context.Context, userID, socketID string) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	delete(l.users[userID], socketID)
	if len(l.users[userID]) == 0 {
		delete(l.users, userID)
	}
	return nil
}

func (l *localSockets) Renew(context.Context, []ratelimit.Lease) error { return nil }
