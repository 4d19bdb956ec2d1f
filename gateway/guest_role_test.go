package gateway

import (
	"encoding/json"
	"net/http"
	"testing"
)

// TestGuestRole: a guest may ask for the provider role (the demo's
// provider view), or for player, or for none; any other role is refused
// and mints nothing.
func TestGuestRole(t *testing.T) {
	e := newRESTEnv(t, Config{Guests: true})
	for _, c := range []struct {
		body     string
		provider bool
	}{
		{`{"role":"provider"}`, true},
		{`{"name":"Ada","role":"provider","skill":1200}`, true},
		{`{"role":"player"}`, false},
		{`{"name":"Bob"}`, false},
		{``, false},
	} {
		r := e.do(t, "POST", "/v1/auth/guest", "", c.body)
		var g guestResponse
		if err := json.Unmarshal(r.body, &g); err != nil || r.status != http.StatusOK {
			t.Fatalf("%s: %d %s", c.body, r.status, r.body)
		}
		p, err := e.srv.parseToken(g.Token)
		if err != nil || p.UserID != g.UserID {
			t.Fatalf("%s: token %+v %v", c.body, p, err)
		}
		if p.Provider != c.provider {
			t.Errorf("%s: provider %v, want %v", c.body, p.Provider, c.provider)
		}
	}
	for _, body := range []string{`{"role":"admin"}`, `{"role":"Provider"}`, `{"role":" provider"}`, `{"role":1}`, `{"role":["provider"]}`} {
		r := e.do(t, "POST", "/v1/auth/guest", "", body)
		if r.status != http.StatusBadRequest {
			t.Errorf("%s: %d %s, want 400", body, r.status, r.body)
		}
		var g guestResponse
		if json.Unmarshal(r.body, &g) == nil && g.Token != "" {
			t.Errorf("%s: a token was minted", body)
		}
	}
}
