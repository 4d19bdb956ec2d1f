package gateway

import (
	"bytes"
	"encoding/json"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"

	"github.com/matchgate/matchgate/matcher"
)

func TestMintAndParseToken(t *testing.T) {
	srv, err := New(Config{Matchmaker: &fakeMatchmaker{}, Subscriber: newFakeSubscriber(), Secret: testSecret})
	if err != nil {
		t.Fatal(err)
	}
	tok, err := MintToken(testSecret, "alice", ptr(1234.5), time.Hour, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	p, err := srv.parseToken(tok)
	if err != nil || p.UserID != "alice" || p.Skill == nil || *p.Skill != 1234.5 || p.Activity != nil {
		t.Fatalf("parse = %+v, %v", p, err)
	}
	for name, args := range map[string]struct {
		secret []byte
		sub    string
		ttl    time.Duration
	}{
		"no secret": {nil, "a", time.Hour},
		"no sub":    {testSecret, "", time.Hour},
		"no ttl":    {testSecret, "a", 0},
	} {
		if _, err := MintToken(args.secret, args.sub, nil, args.ttl, time.Now()); err == nil {
			t.Errorf("%s: minted", name)
		}
	}
}

func TestBadTokensAre401(t *testing.T) {
	e := newRESTEnv(t, Config{})
	now := time.Now()
	sign := func(m jwt.SigningMethod, key any, c jwt.MapClaims) string {
		t.Helper()
		s, err := jwt.NewWithClaims(m, c).SignedString(key)
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	valid := jwt.MapClaims{"sub": "alice", "exp": now.Add(time.Hour).Unix()}
	expired, _ := MintToken(testSecret, "alice", nil, time.Minute, now.Add(-time.Hour))
	cases := map[string]string{
		"garbage":       "not.a.token",
		"wrong secret":  sign(jwt.SigningMethodHS256, []byte("another-secret-0123456789"), valid),
		"expired":       expired,
		"wrong alg":     sign(jwt.SigningMethodHS384, testSecret, valid),
		"alg none":      sign(jwt.SigningMethodNone, jwt.UnsafeAllowNoneSignatureType, valid),
		"no exp":        sign(jwt.SigningMethodHS256, testSecret, jwt.MapClaims{"sub": "alice"}),
		"no sub":        sign(jwt.SigningMethodHS256, testSecret, jwt.MapClaims{"exp": now.Add(time.Hour).Unix()}),
		"string skill":  sign(jwt.SigningMethodHS256, testSecret, jwt.MapClaims{"sub": "alice", "exp": now.Add(time.Hour).Unix(), "skill": "high"}),
		"long subject":  sign(jwt.SigningMethodHS256, testSecret, jwt.MapClaims{"sub": strings.Repeat("a", 200), "exp": now.Add(time.Hour).Unix()}),
		"missing token": "",
	}
	for name, tok := range cases {
		r := e.do(t, "GET", "/v1/tickets/t-1", tok, "")
		if r.status != http.StatusUnauthorized || r.errorCode() != "UNAUTHORIZED" {
			t.Errorf("%s: %d %s", name, r.status, r.body)
		}
		if tok != "" && bytes.Contains(r.body, []byte(tok)) {
			t.Errorf("%s: token echoed", name)
		}
		if name == "missing token" {
			continue
		}
		if _, err := tryDial(strings.Replace(e.url, "http", "ws", 1)+"/v1/ws", tok, nil); err == nil || !strings.Contains(err.Error(), "status 401") {
			t.Errorf("%s: websocket: %v", name, err)
		}
	}
	if e.mm.called("ticket") != 0 {
		t.Fatal("the Matchmaker saw an unauthenticated call")
	}
	// REST does not read the query parameter (tokens in URLs end up in logs).
	if r := e.do(t, "GET", "/v1/tickets/t-1?token="+mustToken(t, "alice", nil), "", ""); r.status != http.StatusUnauthorized {
		t.Fatalf("query token over REST: %d", r.status)
	}
}

func TestGuestSignIn(t *testing.T) {
	e := newRESTEnv(t, Config{Guests: true})
	r := e.do(t, "POST", "/v1/auth/guest", "", `{"name":"Ada","skill":1450}`)
	var g struct {
		Token  string `json:"token"`
		UserID string `json:"userId"`
	}
	if err := json.Unmarshal(r.body, &g); err != nil || r.status != 200 || !strings.HasPrefix(g.UserID, "guest-") || len(g.UserID) != len("guest-")+12 {
		t.Fatalf("guest: %d %s", r.status, r.body)
	}
	p, err := e.srv.parseToken(g.Token)
	if err != nil || p.UserID != g.UserID || *p.Skill != 1450 {
		t.Fatalf("guest token: %+v %v", p, err)
	}
	if !p.Expires.After(time.Now().Add(23*time.Hour)) || p.Expires.After(time.Now().Add(25*time.Hour)) {
		t.Fatalf("guest token expires %v, want ~24h", p.Expires)
	}
	r = e.do(t, "POST", "/v1/auth/guest", "", "")
	if err := json.Unmarshal(r.body, &g); err != nil || r.status != 200 {
		t.Fatalf("guest without body: %d %s", r.status, r.body)
	}
	if p, _ := e.srv.parseToken(g.Token); p.Skill == nil || *p.Skill != 1500 {
		t.Fatalf("default skill: %+v", p)
	}
	for _, body := range []string{`{"skill":-1}`, `{"skill":10001}`, `{"skill":"x"}`, `{"name":7}`} {
		if r := e.do(t, "POST", "/v1/auth/guest", "", body); r.status != 400 {
			t.Errorf("%s: %d %s", body, r.status, r.body)
		}
	}

	off := newRESTEnv(t, Config{})
	if r := off.do(t, "POST", "/v1/auth/guest", "", `{}`); r.status != 404 {
		t.Fatalf("guests disabled: %d", r.status)
	}
}

func TestNewValidates(t *testing.T) {
	ok := Config{Matchmaker: &fakeMatchmaker{}, Subscriber: newFakeSubscriber(), Secret: testSecret}
	bad := map[string]func(c *Config){
		"no matchmaker":  func(c *Config) { c.Matchmaker = nil },
		"no subscriber":  func(c *Config) { c.Subscriber = nil },
		"short secret":   func(c *Config) { c.Secret = []byte("short") },
		"negative ping":  func(c *Config) { c.PingInterval = -time.Second },
		"negative queue": func(c *Config) { c.SendQueue = -1 },
		"bad origin":     func(c *Config) { c.AllowedOrigins = []string{"["} },
	}
	for name, mutate := range bad {
		c := ok
		mutate(&c)
		if _, err := New(c); err == nil {
			t.Errorf("%s: New succeeded", name)
		}
	}
	srv, err := New(ok)
	if err != nil {
		t.Fatal(err)
	}
	if srv.cfg.SendQueue != DefaultSendQueue || srv.cfg.PingInterval != DefaultPingInterval || srv.cfg.Node == "" || srv.cfg.Static == nil {
		t.Fatalf("defaults not applied: %+v", srv.cfg)
	}
}

// A token verified once is not verified again, and stops being accepted
// when it expires (past the leeway) all the same; a token that failed is
// never remembered as good.
func TestVerifiedTokensExpire(t *testing.T) {
	var clk atomic.Int64
	start := time.Date(2026, 12, 2, 12, 0, 0, 0, time.UTC)
	clk.Store(start.UnixNano())
	now := func() time.Time { return time.Unix(0, clk.Load()).UTC() }
	srv, err := New(Config{Matchmaker: &fakeMatchmaker{}, Subscriber: newFakeSubscriber(), Secret: testSecret, Now: now})
	if err != nil {
		t.Fatal(err)
	}
	tok, err := MintToken(testSecret, "alice", nil, time.Minute, start)
	if err != nil {
		t.Fatal(err)
	}
	for i := range 3 {
		if p, err := srv.parseToken(tok); err != nil || p.UserID != "alice" {
			t.Fatalf("parse %d: %+v %v", i, p, err)
		}
	}
	clk.Store(start.Add(time.Minute + tokenLeeway - time.Second).UnixNano())
	if _, err := srv.parseToken(tok); err != nil {
		t.Errorf("within the leeway: %v", err)
	}
	clk.Store(start.Add(time.Minute + tokenLeeway + time.Second).UnixNano())
	if _, err := srv.parseToken(tok); err == nil {
		t.Error("an expired token accepted from the cache")
	}
	bad := tok[:len(tok)-2] + "xx"
	clk.Store(start.UnixNano())
	for range 2 {
		if _, err := srv.parseToken(bad); err == nil {
			t.Error("a token with a bad signature accepted")
		}
	}
}

// A guest's name goes into the token cleaned, and from the token into the
// join; a hostile one comes out as the letters it hid.
func TestGuestName(t *testing.T) {
	e := newRESTEnv(t, Config{Guests: true})
	for _, c := range []struct{ name, body, want string }{
		{"plain", `{"name":"Ada Lovelace"}`, "Ada Lovelace"},
		{"none", `{}`, ""},
		{"RTL override and zero-width joiners", `{"name":"\u202eA\u200dd\u200ba\u202c"}`, "Ada"},
		{"newlines and runs of spaces", `{"name":"  Ada\n\n   Lovelace\t"}`, "Ada Lovelace"},
		{"controls only", `{"name":"\u0000\u0007\u001b"}`, ""},
		{"1000 characters", `{"name":"` + strings.Repeat("ß", 1000) + `"}`, strings.Repeat("ß", matcher.MaxNameRunes)},
	} {
		t.Run(c.name, func(t *testing.T) {
			r := e.do(t, "POST", "/v1/auth/guest", "", c.body)
			var g struct {
				Token string  `json:"token"`
				Name  *string `json:"name"`
			}
			if err := json.Unmarshal(r.body, &g); err != nil || r.status != 200 {
				t.Fatalf("guest: %d %s", r.status, r.body)
			}
			if (c.want == "") != (g.Name == nil) || (g.Name != nil && *g.Name != c.want) {
				t.Fatalf("answered name %v, want %q: %s", g.Name, c.want, r.body)
			}
			p, err := e.srv.parseToken(g.Token)
			if err != nil || p.Name != c.want {
				t.Fatalf("token name %q (%v), want %q", p.Name, err, c.want)
			}
			if r := e.do(t, "POST", "/v1/queues/ranked/tickets", g.Token, `{"region":"eu"}`); r.status != http.StatusAccepted {
				t.Fatalf("join: %d %s", r.status, r.body)
			}
			if got := e.mm.lastReq.Name; got != c.want {
				t.Fatalf("join request name %q, want %q", got, c.want)
			}
		})
	}
	// A body that is not UTF-8 is no JSON, before any name is read.
	if r := e.do(t, "POST", "/v1/auth/guest", "", "{\"name\":\"A\xffda\"}"); r.status != http.StatusBadRequest {
		t.Fatalf("invalid UTF-8: %d %s", r.status, r.body)
	}
}

// A backend's token may carry a name claim: it is cleaned when read (and
// when signed), and joins carry it.
func TestTokenNameClaim(t *testing.T) {
	e := newRESTEnv(t, Config{})
	sign := func(c jwt.MapClaims) string {
		t.Helper()
		tok, err := jwt.NewWithClaims(jwt.SigningMethodHS256, c).SignedString(testSecret)
		if err != nil {
			t.Fatal(err)
		}
		return tok
	}
	exp := time.Now().Add(time.Hour).Unix()
	for _, c := range []struct {
		name string
		tok  string
		want string
	}{
		{"SignToken", mustSign(t, TokenSpec{Subject: "alice", Name: "Alice  Liddell", TTL: time.Hour}), "Alice Liddell"},
		{"SignToken cleans", mustSign(t, TokenSpec{Subject: "alice", Name: "\u2066Alice\u2069\r\n", TTL: time.Hour}), "Alice"},
		{"no claim", mustToken(t, "alice", nil), ""},
		{"a backend's hostile claim", sign(jwt.MapClaims{"sub": "alice", "exp": exp, "name": "\u202egnp.exe\u200d " + strings.Repeat("x", 500)}),
			"gnp.exe " + strings.Repeat("x", matcher.MaxNameRunes-len("gnp.exe "))},
	} {
		t.Run(c.name, func(t *testing.T) {
			p, err := e.srv.parseToken(c.tok)
			if err != nil || p.Name != c.want {
				t.Fatalf("principal name %q (%v), want %q", p.Name, err, c.want)
			}
			if r := e.do(t, "POST", "/v1/queues/ranked/tickets", c.tok, `{"region":"eu"}`); r.status != http.StatusAccepted || e.mm.lastReq.Name != c.want {
				t.Fatalf("join: %d %s, name %q", r.status, r.body, e.mm.lastReq.Name)
			}
		})
	}
	// A name claim that is not a string is a malformed token.
	if _, err := e.srv.parseToken(sign(jwt.MapClaims{"sub": "alice", "exp": exp, "name": 42})); err == nil {
		t.Fatal("a numeric name claim was accepted")
	}
}

func mustSign(t *testing.T, spec TokenSpec) string {
	t.Helper()
	tok, err := SignToken(testSecret, spec)
	if err != nil {
		t.Fatal(err)
	}
	return tok
}
