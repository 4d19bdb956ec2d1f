package main

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/matchgate/matchgate/internal/redistest"
)

// The admission queue through the real server: players enter over REST,
// the matcher role's admitter admits them in order at the rate, each gets a
// token, and the protected downstream claims and consumes it with the
// service credential.

const admissionAdmin = "admission-e2e-admin-token-0123456789abcdef"

func admissionServer(t *testing.T, extra ...string) string {
	t.Helper()
	cfg := filepath.Join(t.TempDir(), "queues.yaml")
	if err := os.WriteFile(cfg, []byte(`queues:
  - {name: duel, players: 2}
  - {name: launch, kind: admission, rate: 5, tokenTTL: 1m}
`), 0o644); err != nil {
		t.Fatal(err)
	}
	return startServer(t, append([]string{"--config", cfg, "--admin-token", admissionAdmin, "--guests", "true"}, extra...)...)
}

// call does a request and decodes the JSON answer into a map.
func call(t *testing.T, method, url, bearer, body string) (int, map[string]any) {
	t.Helper()
	req, err := http.NewRequest(method, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+bearer)
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	var out map[string]any
	if len(raw) > 0 {
		if err := json.Unmarshal(raw, &out); err != nil {
			t.Fatalf("%s %s: %d %s", method, url, resp.StatusCode, raw)
		}
	}
	return resp.StatusCode, out
}

func position(t *testing.T, base string, g guest) map[string]any {
	t.Helper()
	code, body := call(t, http.MethodGet, base+"/v1/admission/launch/position", g.Token, "")
	if code != 200 {
		t.Fatalf("position: %d %v", code, body)
	}
	p, _ := body["position"].(map[string]any)
	return p
}

func exerciseAdmission(t *testing.T, base string) {
	const n = 12
	var gs []guest
	for i := range n {
		g := newGuest(t, base, 1500)
		code, body := call(t, http.MethodPost, base+"/v1/admission/launch/enter", g.Token, "")
		if code != http.StatusAccepted {
			t.Fatalf("enter %d: %d %v", i, code, body)
		}
		gs = append(gs, g)
	}
	// A repeat keeps the place.
	if code, body := call(t, http.MethodPost, base+"/v1/admission/launch/enter", gs[3].Token, ""); code != 200 {
		t.Fatalf("repeat enter: %d %v", code, body)
	}
	// Everyone is admitted within n/rate seconds and a little, in order.
	admittedAt := make([]time.Time, n)
	tokens := map[string]bool{}
	deadline := time.Now().Add(15 * time.Second)
	for left := n; left > 0; {
		if time.Now().After(deadline) {
			t.Fatalf("%d of %d still waiting", left, n)
		}
		for i, g := range gs {
			if !admittedAt[i].IsZero() {
				continue
			}
			p := position(t, base, g)
			if p["status"] == "READY" {
				tok, _ := p["token"].(string)
				if len(tok) != 32 || tokens[tok] {
					t.Fatalf("token %q", tok)
				}
				tokens[tok] = true
				admittedAt[i] = time.Now()
				left--
				if code, body := call(t, http.MethodPost, base+"/v1/admission/launch/tokens/claim", admissionAdmin, fmt.Sprintf(`{"token":%q}`, tok)); code != 200 || body["userId"] != g.UserID {
					t.Fatalf("claim: %d %v", code, body)
				}
				if code, _ := call(t, http.MethodPost, base+"/v1/admission/launch/tokens/claim", admissionAdmin, fmt.Sprintf(`{"token":%q}`, tok)); code != http.StatusConflict {
					t.Fatalf("second claim: %d, want 409", code)
				}
				if code, _ := call(t, http.MethodPost, base+"/v1/admission/launch/tokens/consume", admissionAdmin, fmt.Sprintf(`{"token":%q}`, tok)); code != 200 {
					t.Fatalf("consume: %d", code)
				}
			} else if p["status"] != "WAITING" {
				t.Fatalf("position of %d: %v", i, p)
			}
		}
		time.Sleep(50 * time.Millisecond)
	}
	// A player token cannot claim.
	if code, _ := call(t, http.MethodPost, base+"/v1/admission/launch/tokens/claim", gs[0].Token, `{"token":"x"}`); code != http.StatusUnauthorized {
		t.Fatalf("claim with a player token: %d, want 401", code)
	}
	// Twelve at five a second take more than two seconds: the rate held.
	first, last := admittedAt[0], admittedAt[0]
	for _, at := range admittedAt {
		first, last = minTime(first, at), maxTime(last, at)
	}
	if last.Sub(first) < 1500*time.Millisecond {
		t.Fatalf("%d admitted within %v at 5 a second", n, last.Sub(first))
	}
}

func minTime(a, b time.Time) time.Time {
	if b.Before(a) {
		return b
	}
	return a
}

func maxTime(a, b time.Time) time.Time {
	if b.After(a) {
		return b
	}
	return a
}

func TestAdmissionEmbedded(t *testing.T) {
	exerciseAdmission(t, admissionServer(t))
}

func TestAdmissionRedisPostgres(t *testing.T) {
	redistest.Real(t)
	prefix := redistest.Prefix(t)
	exerciseAdmission(t, admissionServer(t, "--redis-url", redistest.URL(), "--postgres-url", pgURL(t), "--redis-prefix", prefix))
}
