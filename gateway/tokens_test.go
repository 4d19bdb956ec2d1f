package gateway

import (
	"bytes"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"
)

var (
	keyOld = []byte("old-key-0123456789abcdef-rotation")
	keyNew = []byte("new-key-0123456789abcdef-rotation")
)

func signClaims(t testing.TB, m jwt.SigningMethod, key any, kid any, c jwt.MapClaims) string {
	t.Helper()
	tok := jwt.NewWithClaims(m, c)
	if kid != nil {
		tok.Header["kid"] = kid
	}
	s, err := tok.SignedString(key)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// TestKeyRotation: several keys at once, selected by kid; the default key
// verifies tokens without one; guests are signed with the signing key.
func TestKeyRotation(t *testing.T) {
	e := newRESTEnv(t, Config{Guests: true, Secret: testSecret,
		Keys: map[string][]byte{"2024": keyOld, "2025": keyNew}, SigningKeyID: "2025"})
	now := time.Now()
	valid := func() jwt.MapClaims { return jwt.MapClaims{"sub": "alice", "exp": now.Add(time.Hour).Unix()} }
	for name, tok := range map[string]string{
		"default key, no kid": signClaims(t, jwt.SigningMethodHS256, testSecret, nil, valid()),
		"old kid":             signClaims(t, jwt.SigningMethodHS256, keyOld, "2024", valid()),
		"new kid":             signClaims(t, jwt.SigningMethodHS256, keyNew, "2025", valid()),
	} {
		if p, err := e.srv.parseToken(tok); err != nil || p.UserID != "alice" {
			t.Errorf("%s: %+v %v", name, p, err)
		}
	}
	for name, tok := range map[string]string{
		"kid names another key": signClaims(t, jwt.SigningMethodHS256, keyOld, "2025", valid()),
		"unknown kid":           signClaims(t, jwt.SigningMethodHS256, keyNew, "2026", valid()),
		"numeric kid":           signClaims(t, jwt.SigningMethodHS256, keyNew, 2025, valid()),
		"kid key, no kid":       signClaims(t, jwt.SigningMethodHS256, keyNew, nil, valid()),
		"right kid, HS512":      signClaims(t, jwt.SigningMethodHS512, keyNew, "2025", valid()),
		"right kid, HS384":      signClaims(t, jwt.SigningMethodHS384, keyNew, "2025", valid()),
	} {
		if _, err := e.srv.parseToken(tok); err == nil {
			t.Errorf("%s: accepted", name)
		}
		if r := e.do(t, "GET", "/v1/tickets/t-1", tok, ""); r.status != http.StatusUnauthorized {
			t.Errorf("%s: %d", name, r.status)
		}
	}
	// Guest tokens carry the signing key's id.
	r := e.do(t, "POST", "/v1/auth/guest", "", `{}`)
	var g guestResponse
	if err := decodeStrict(r.body, &g, false); err != nil || r.status != 200 {
		t.Fatalf("guest: %d %s", r.status, r.body)
	}
	parsed, _, err := jwt.NewParser().ParseUnverified(g.Token, jwt.MapClaims{})
	if err != nil || parsed.Header["kid"] != "2025" {
		t.Fatalf("guest token header: %v %v", parsed.Header, err)
	}
	c := parsed.Claims.(jwt.MapClaims)
	for _, k := range []string{"iat", "nbf", "exp", "sub"} {
		if _, ok := c[k]; !ok {
			t.Errorf("guest token lacks %s", k)
		}
	}

	// Keys only: tokens must name one.
	only := newRESTEnv(t, Config{Keys: map[string][]byte{"k": keyNew}, SigningKeyID: "k"})
	if _, err := only.srv.parseToken(signClaims(t, jwt.SigningMethodHS256, keyNew, nil, valid())); err == nil {
		t.Error("a token without kid accepted with no default key")
	}
	if _, err := only.srv.parseToken(signClaims(t, jwt.SigningMethodHS256, keyNew, "k", valid())); err != nil {
		t.Errorf("keys only: %v", err)
	}
}

func TestKeySetValidation(t *testing.T) {
	base := Config{Matchmaker: &fakeMatchmaker{}, Subscriber: newFakeSubscriber()}
	for name, c := range map[string]Config{
		"nothing":             {},
		"short key":           {Keys: map[string][]byte{"k": []byte("short")}, SigningKeyID: "k"},
		"empty kid":           {Secret: testSecret, Keys: map[string][]byte{"": keyNew}},
		"control kid":         {Secret: testSecret, Keys: map[string][]byte{"a\nb": keyNew}},
		"unknown signing kid": {Secret: testSecret, SigningKeyID: "nope"},
		"keys, no signer":     {Keys: map[string][]byte{"k": keyNew}},
		"short admin token":   {Secret: testSecret, AdminTokens: []string{"short"}, Admin: fakeAdminForValidation{}},
		"admin without Admin": {Secret: testSecret, AdminTokens: []string{strings.Repeat("a", 32)}},
	} {
		c.Matchmaker, c.Subscriber = base.Matchmaker, base.Subscriber
		if _, err := New(c); err == nil {
			t.Errorf("%s: New succeeded", name)
		}
	}
}

// TestTokenTimes: exp required, nbf and iat checked with a 30s leeway.
func TestTokenTimes(t *testing.T) {
	clock := newFakeClock(time.Now())
	e := newRESTEnv(t, Config{Now: clock.Now})
	now := clock.Now()
	ok := map[string]jwt.MapClaims{
		"iat and nbf now":       {"sub": "a", "exp": now.Add(time.Hour).Unix(), "iat": now.Unix(), "nbf": now.Unix()},
		"nbf within leeway":     {"sub": "a", "exp": now.Add(time.Hour).Unix(), "nbf": now.Add(20 * time.Second).Unix()},
		"exp passed, in leeway": {"sub": "a", "exp": now.Add(-20 * time.Second).Unix()},
	}
	bad := map[string]jwt.MapClaims{
		"nbf in the future": {"sub": "a", "exp": now.Add(time.Hour).Unix(), "nbf": now.Add(time.Minute).Unix()},
		"iat in the future": {"sub": "a", "exp": now.Add(time.Hour).Unix(), "iat": now.Add(time.Minute).Unix()},
		"expired":           {"sub": "a", "exp": now.Add(-time.Minute).Unix()},
		"no exp":            {"sub": "a"},
		"string exp":        {"sub": "a", "exp": "tomorrow"},
		"control in sub":    {"sub": "a\x00b", "exp": now.Add(time.Hour).Unix()},
		"newline in sub":    {"sub": "a\nb", "exp": now.Add(time.Hour).Unix()},
		"NaN-ish skill":     {"sub": "a", "exp": now.Add(time.Hour).Unix(), "skill": "NaN"},
	}
	for name, c := range ok {
		if _, err := e.srv.parseToken(signClaims(t, jwt.SigningMethodHS256, testSecret, nil, c)); err != nil {
			t.Errorf("%s: %v", name, err)
		}
	}
	for name, c := range bad {
		if _, err := e.srv.parseToken(signClaims(t, jwt.SigningMethodHS256, testSecret, nil, c)); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
	huge := signClaims(t, jwt.SigningMethodHS256, testSecret, nil, jwt.MapClaims{"sub": "a", "exp": now.Add(time.Hour).Unix(), "pad": strings.Repeat("x", 5000)})
	if _, err := e.srv.parseToken(huge); err == nil {
		t.Error("a 7 KB token was parsed")
	}
}

// syncLog is a concurrency-safe log buffer.
type syncLog struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *syncLog) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *syncLog) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// TestTokensAreNeverLogged: rejected and accepted tokens, over REST and
// WebSocket, never reach the log, even at debug level.
func TestTokensAreNeverLogged(t *testing.T) {
	logs := &syncLog{}
	env := startServer(t, Config{Logger: slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug}))})
	now := time.Now()
	forged := signClaims(t, jwt.SigningMethodHS256, []byte("attacker-key-0123456789abcdef"), nil, jwt.MapClaims{"sub": "admin", "exp": now.Add(time.Hour).Unix()})
	expired, _ := MintToken(testSecret, "alice", nil, time.Minute, now.Add(-time.Hour))
	none := signClaims(t, jwt.SigningMethodNone, jwt.UnsafeAllowNoneSignatureType, nil, jwt.MapClaims{"sub": "admin", "exp": now.Add(time.Hour).Unix()})
	good := mustToken(t, "bob", nil)
	tokens := []string{forged, expired, none, good}
	for _, tok := range tokens {
		req, _ := http.NewRequest("GET", env.base+"/v1/tickets/t-1", nil)
		req.Header.Set("Authorization", "Bearer "+tok)
		if resp, err := testClient.Do(req); err == nil {
			resp.Body.Close()
		}
		if c, err := tryDial(env.wsURL(), tok, nil); err == nil {
			readFrame(t, c)
			_ = c.CloseNow()
		}
		req, _ = http.NewRequest("GET", env.base+"/v1/admin/bans", nil)
		req.Header.Set("Authorization", "Bearer "+tok)
		if resp, err := testClient.Do(req); err == nil {
			resp.Body.Close()
		}
	}
	eventually(t, 5*time.Second, "socket closed", func() bool { return env.srv.sessionCount() == 0 })
	out := logs.String()
	if !strings.Contains(out, "socket open") {
		t.Fatalf("debug log not captured:\n%s", out)
	}
	for _, tok := range tokens {
		// Any of the three parts of a JWT would be a leak.
		for _, part := range strings.Split(tok, ".") {
			if len(part) > 8 && strings.Contains(out, part) {
				t.Fatalf("a token part reached the log:\n%s", out)
			}
		}
	}
}
