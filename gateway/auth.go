package gateway

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"net/http"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/golang-jwt/jwt/v5"
	"github.com/google/uuid"

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
	guestMaxNameRunes = 32
)

// claims is the token payload: the registered claims plus the skill and
// activity the trusted backend may set. Absent numbers stay nil.
type claims struct {
	jwt.RegisteredClaims
	Skill    *float64 `json:"skill,omitempty"`
	Activity *float64 `json:"activity,omitempty"`
}

// principal is the authenticated caller of a request or socket.
type principal struct {
	UserID   string
	Skill    *float64
	Activity *float64
	Expires  time.Time
}

// MintToken signs an HS256 token for sub that expires ttl after now, with an
// optional skill claim. Guests, tests and the load tester use it; a
// production backend mints its own tokens with the same shape.
func MintToken(secret []byte, sub string, skill *float64, ttl time.Duration, now time.Time) (string, error) {
	switch {
	case len(secret) == 0:
		return "", errors.New("mint token: empty secret")
	case sub == "" || len(sub) > maxUserIDLen:
		return "", fmt.Errorf("mint token: subject must be 1..%d bytes", maxUserIDLen)
	case ttl <= 0:
		return "", errors.New("mint token: ttl must be positive")
	case skill != nil && (math.IsNaN(*skill) || math.IsInf(*skill, 0)):
		return "", errors.New("mint token: skill must be finite")
	}
	c := claims{
		RegisteredClaims: jwt.RegisteredClaims{
			Subject:   sub,
			IssuedAt:  jwt.NewNumericDate(now),
			ExpiresAt: jwt.NewNumericDate(now.Add(ttl)),
		},
		Skill: skill,
	}
	s, err := jwt.NewWithClaims(jwt.SigningMethodHS256, c).SignedString(secret)
	if err != nil {
		return "", fmt.Errorf("mint token: %w", err)
	}
	return s, nil
}

// parseToken verifies a token: HS256 only (the algorithm is pinned, so "none"
// and asymmetric confusions are refused), exp required, small leeway, sub
// present. The error never contains the token.
func (s *Server) parseToken(raw string) (principal, error) {
	var c claims
	_, err := s.jwtParser.ParseWithClaims(raw, &c, func(*jwt.Token) (any, error) {
		return s.cfg.Secret, nil
	})
	if err != nil {
		return principal{}, err
	}
	if c.Subject == "" || len(c.Subject) > maxUserIDLen || !utf8.ValidString(c.Subject) {
		return principal{}, errors.New("token subject missing or too long")
	}
	for _, f := range []*float64{c.Skill, c.Activity} {
		if f != nil && (math.IsNaN(*f) || math.IsInf(*f, 0)) {
			return principal{}, errors.New("token number claim not finite")
		}
	}
	p := principal{UserID: c.Subject, Skill: c.Skill, Activity: c.Activity}
	if c.ExpiresAt != nil {
		p.Expires = c.ExpiresAt.Time
	}
	return p, nil
}

func newJWTParser(now func() time.Time) *jwt.Parser {
	return jwt.NewParser(
		jwt.WithValidMethods([]string{jwt.SigningMethodHS256.Alg()}),
		jwt.WithExpirationRequired(),
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

// withAuth wraps a REST handler that needs a caller.
func (s *Server) withAuth(h func(w http.ResponseWriter, r *http.Request, p principal)) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		p, err := s.authenticate(r, false)
		if err != nil {
			s.writeError(w, r, err)
			return
		}
		h(w, r, p)
	}
}

type guestRequest struct {
	Name  string   `json:"name"`
	Skill *float64 `json:"skill"`
}

type guestResponse struct {
	Token  string `json:"token"`
	UserID string `json:"userId"`
}

// handleGuest mints a token for a new guest. The name is for display only
// and is not part of the identity; it is validated and otherwise ignored.
func (s *Server) handleGuest(w http.ResponseWriter, r *http.Request) {
	if !s.cfg.Guests {
		s.writeError(w, r, matcher.Errorf(matcher.CodeNotFound, "guest sign-in is disabled"))
		return
	}
	var req guestRequest
	if err := s.decodeBody(w, r, &req); err != nil {
		s.writeError(w, r, err)
		return
	}
	if utf8.RuneCountInString(req.Name) > guestMaxNameRunes {
		s.writeError(w, r, matcher.Errorf(matcher.CodeBadRequest, "name must be at most %d characters", guestMaxNameRunes))
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
	id := "guest-" + strings.ReplaceAll(uuid.NewString(), "-", "")[:12]
	tok, err := MintToken(s.cfg.Secret, id, &skill, s.cfg.TokenTTL, s.cfg.Now())
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, guestResponse{Token: tok, UserID: id})
}

// decodeBody reads a JSON body of at most MaxBodyBytes into v. It is lenient
// on unknown fields and strict on types; an empty body decodes as {}.
func (s *Server) decodeBody(w http.ResponseWriter, r *http.Request, v any) error {
	body := http.MaxBytesReader(w, r.Body, s.cfg.MaxBodyBytes)
	dec := json.NewDecoder(body)
	if err := dec.Decode(v); err != nil {
		var tooBig *http.MaxBytesError
		switch {
		case errors.As(err, &tooBig):
			return matcher.Errorf(matcher.CodeBadRequest, "body larger than %d bytes", s.cfg.MaxBodyBytes)
		case errors.Is(err, io.EOF):
			return nil
		}
		return matcher.Errorf(matcher.CodeBadRequest, "malformed JSON body: %s", jsonProblem(err))
	}
	if dec.More() {
		return matcher.Errorf(matcher.CodeBadRequest, "trailing data after JSON body")
	}
	return nil
}
