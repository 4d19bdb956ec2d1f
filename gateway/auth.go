package gateway

import (
	"crypto/sha256"
	"errors"
	"io"
	"math"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/golang-jwt/jwt/v5"
	"github.com/google/uuid"

	"github.com/matchgate/matchgate/control"
	"github.com/matchgate/matchgate/matcher"
)

// tokenLeeway is the clock skew tolerated on exp, nbf and iat.
const tokenLeeway = 30 * time.Second

// maxUserIDLen bounds the sub claim: it becomes a channel name and a log field.
const maxUserIDLen = 128

// Guest sign-in limits.
const (
	guestDefaultSkill = 1500
	guestMaxSkill     = 10000
)

// claims is the token payload: the registered claims plus the skill,
// activity and priority (seconds of head start in the queue, capped by the
// queue) the trusted backend may set. Absent numbers stay nil.
type claims struct {
	jwt.RegisteredClaims
	Skill    *float64 `json:"skill,omitempty"`
	Activity *float64 `json:"activity,omitempty"`
	Priority *float64 `json:"priority,omitempty"`
	// Role is "provider" for a provider queue's providers; absent (or
	// "player") for everyone else. Any other value is refused.
	Role string `json:"role,omitempty"`
	// Name is the display name the player is shown by (a guest's chosen
	// one, or the backend's); cleaned by matcher.CleanName when read.
	Name string `json:"name,omitempty"`
}

// The roles a token may carry.
const (
	RolePlayer   = "player"
	RoleProvider = "provider"
)

// principal is the authenticated caller of a request or socket.
type principal struct {
	UserID   string
	Skill    *float64
	Activity *float64
	Priority time.Duration
	Expires  time.Time
	// Provider: the token's role is provider.
	Provider bool
	// Name is the token's display name, cleaned; "" for none.
	Name string
}

// MintToken signs an HS256 token for sub that expires ttl after now, with
// an optional skill claim, with the default key (no "kid"). Guests, tests
// and the load tester use it; SignToken has every option.
func MintToken(secret []byte, sub string, skill *float64, ttl time.Duration, now time.Time) (string, error) {
	if now.IsZero() {
		now = time.Now()
	}
	return SignToken(secret, TokenSpec{Subject: sub, Skill: skill, TTL: ttl, Now: now})
}

// parseToken verifies a token: HS256 only (the algorithm is pinned, so "none"
// and asymmetric confusions are refused), signed by the key its "kid" names
// or by the default key, exp required, nbf and iat checked when present,
// small leeway, sub present and printable. The error never contains the
// token.
func (s *Server) parseToken(raw string) (principal, error) {
	if len(raw) > maxTokenBytes {
		return principal{}, errors.New("token too long")
	}
	key := sha256.Sum256([]byte(raw))
	now := s.cfg.Now()
	if p, ok := s.verified.get(key, now); ok {
		return p, nil
	}
	p, err := s.verifyToken(raw)
	if err != nil {
		return principal{}, err
	}
	// Verified once, valid until its expiry and the leeway: the keys are
	// fixed for the Server's life, and nbf and iat only grow truer with
	// time on a clock that never goes back.
	s.verified.put(key, p, p.Expires.Add(tokenLeeway))
	return p, nil
}

// verifyToken is parseToken without the cache.
func (s *Server) verifyToken(raw string) (principal, error) {
	var c claims
	_, err := s.jwtParser.ParseWithClaims(raw, &c, s.keys.verifyKey)
	if err != nil {
		return principal{}, err
	}
	if !control.ValidUserID(c.Subject) {
		return principal{}, errors.New("token subject missing, too long or not printable")
	}
	for _, f := range []*float64{c.Skill, c.Activity, c.Priority} {
		if f != nil && (math.IsNaN(*f) || math.IsInf(*f, 0)) {
			return principal{}, errors.New("token number claim not finite")
		}
	}
	if c.Role != "" && c.Role != RolePlayer && c.Role != RoleProvider {
		return principal{}, errors.New("token role claim is neither player nor provider")
	}
	p := principal{UserID: c.Subject, Skill: c.Skill, Activity: c.Activity, Provider: c.Role == RoleProvider,
		Name: matcher.CleanName(c.Name)}
	if c.Priority != nil && *c.Priority > 0 {
		// The queue caps it (priorityCap); a day bounds the conversion.
		p.Priority = time.Duration(min(*c.Priority, 86400) * float64(time.Second))
	}
	if c.ExpiresAt != nil {
		p.Expires = c.ExpiresAt.Time
	}
	return p, nil
}

// tokenCache holds the principals of tokens verified already, by the
// SHA-256 of the token: a client's every request carries the same token,
// and verifying it (two base64 and JSON decodes, an HMAC) is a tenth of a
// small read's work. Bounded: past maxVerified tokens it starts again
// empty.
type tokenCache struct {
	mu sync.Mutex
	m  map[[32]byte]verifiedToken
}

type verifiedToken struct {
	p     principal
	until time.Time
}

const maxVerified = 32768

func (c *tokenCache) get(key [32]byte, now time.Time) (principal, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	v, ok := c.m[key]
	if !ok || !now.Before(v.until) {
		return principal{}, false
	}
	return v.p, true
}

func (c *tokenCache) put(key [32]byte, p principal, until time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.m == nil || len(c.m) >= maxVerified {
		c.m = make(map[[32]byte]verifiedToken)
	}
	c.m[key] = verifiedToken{p: p, until: until}
}

func newJWTParser(now func() time.Time) *jwt.Parser {
	return jwt.NewParser(
		jwt.WithValidMethods([]string{jwt.SigningMethodHS256.Alg()}),
		jwt.WithExpirationRequired(),
		jwt.WithIssuedAt(),
		jwt.WithLeeway(tokenLeeway),
		jwt.WithTimeFunc(now),
	)
}

// bearer extracts the token of an "Authorization: Bearer …" header.
func bearer(r *http.Request) string {
	h := r.Header.Get("Authorization")
	const prefix = "bearer "
	if len(h) > len(prefix) && strings.EqualFold(h[:len(prefix)], prefix) {
		return strings.TrimSpace(h[len(prefix):])
	}
	return ""
}

// authenticate verifies the request's token: the Authorization header, or
// for WebSocket upgrades (browsers cannot set headers there) the token
// query parameter.
func (s *Server) authenticate(r *http.Request, allowQuery bool) (principal, error) {
	raw := bearer(r)
	if raw == "" && allowQuery {
		raw = r.URL.Query().Get("token")
	}
	if raw == "" {
		return principal{}, matcher.Errorf(matcher.CodeUnauthorized, "missing bearer token")
	}
	p, err := s.parseToken(raw)
	if err != nil {
		return principal{}, matcher.Errorf(matcher.CodeUnauthorized, "invalid or expired token")
	}
	return p, nil
}

// withAuth wraps a REST handler that needs a caller; a banned caller is
// refused with FORBIDDEN.
func (s *Server) withAuth(h func(w http.ResponseWriter, r *http.Request, p principal)) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		p, err := s.authenticate(r, false)
		if err != nil {
			s.writeError(w, r, err)
			return
		}
		if s.banned(p.UserID) {
			s.writeError(w, r, errBanned)
			return
		}
		h(w, r, p)
	}
}

type guestRequest struct {
	Name  string   `json:"name"`
	Skill *float64 `json:"skill"`
	// Role is "provider" for a guest who gives what a provider queue
	// offers (the demo's provider view); absent or "player" otherwise.
	Role string `json:"role"`
}

type guestResponse struct {
	Token  string `json:"token"`
	UserID string `json:"userId"`
	// Name is the display name the token carries, as cleaned (absent when
	// nothing was left of it).
	Name string `json:"name,omitempty"`
}

// handleGuest mints a token for a new guest. The name is for display only
// and is not part of the identity: the token carries it cleaned
// (matcher.CleanName), whatever was typed, and other players see it.
// A guest may ask for the provider role: guests are for demos, where
// anyone may try either side of a provider queue.
func (s *Server) handleGuest(w http.ResponseWriter, r *http.Request) {
	if !s.cfg.Guests {
		s.writeError(w, r, matcher.Errorf(matcher.CodeNotFound, "guest sign-in is disabled"))
		return
	}
	if err := s.limitIP(r.Context(), limitGuestIP, s.clientIP(r), s.cfg.Limits.GuestsPerIP); err != nil {
		s.writeError(w, r, err)
		return
	}
	var req guestRequest
	if err := s.decodeBody(w, r, &req); err != nil {
		s.writeError(w, r, err)
		return
	}
	skill := float64(guestDefaultSkill)
	if req.Skill != nil {
		skill = *req.Skill
	}
	if math.IsNaN(skill) || math.IsInf(skill, 0) || skill < 0 || skill > guestMaxSkill {
		s.writeError(w, r, matcher.Errorf(matcher.CodeBadRequest, "skill must be within 0..%d", guestMaxSkill))
		return
	}
	role := ""
	switch req.Role {
	case "", RolePlayer:
	case RoleProvider:
		role = RoleProvider
	default:
		s.writeError(w, r, matcher.Errorf(matcher.CodeBadRequest, "role must be %q or %q", RolePlayer, RoleProvider))
		return
	}
	id := "guest-" + strings.ReplaceAll(uuid.NewString(), "-", "")[:12]
	name := matcher.CleanName(req.Name)
	tok, err := SignToken(s.keys.signKey, TokenSpec{Subject: id, Name: name, Skill: &skill, TTL: s.cfg.TokenTTL, Now: s.cfg.Now(), KeyID: s.keys.signKID, Role: role})
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, guestResponse{Token: tok, UserID: id, Name: name})
}

// decodeBody reads a JSON body of at most MaxBodyBytes into v, strictly
// (decodeStrict: unknown fields, duplicate keys and trailing data are
// BAD_REQUEST); an empty body decodes as {}. The body must arrive within
// bodyReadTimeout, so a client that trickles it in (slowloris) cannot hold
// the handler.
func (s *Server) decodeBody(w http.ResponseWriter, r *http.Request, v any) error {
	return s.decodeBodyLimit(w, r, v, s.cfg.MaxBodyBytes)
}

func (s *Server) decodeBodyLimit(w http.ResponseWriter, r *http.Request, v any, limit int64) error {
	_ = http.NewResponseController(w).SetReadDeadline(time.Now().Add(bodyReadTimeout))
	data, err := io.ReadAll(http.MaxBytesReader(w, r.Body, limit))
	if err != nil {
		var tooBig *http.MaxBytesError
		if errors.As(err, &tooBig) {
			return matcher.Errorf(matcher.CodeBadRequest, "body larger than %d bytes", limit)
		}
		return matcher.Errorf(matcher.CodeBadRequest, "body could not be read")
	}
	return decodeStrict(data, v, true)
}
