package main

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"slices"
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
	// The tests poll positions far faster than a client told pollAfter.
	return startServer(t, append([]string{"--config", cfg, "--admin-token", admissionAdmin, "--guests", "true", "--limit-reads-user", "off"}, extra...)...)
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

// Admission queues changed through the admin API while the server runs:
// the admitter follows a new rate, a queue created at run time takes
// entries and admits them, a retired one takes none but its token is still
// claimed, a change of kind is refused, and GET /v1/queues and the metrics
// tell the measured rate and the ETA's error.

func runtimeServer(t *testing.T, extra ...string) string {
	t.Helper()
	cfg := filepath.Join(t.TempDir(), "queues.yaml")
	if err := os.WriteFile(cfg, []byte(`queues:
  - {name: duel, players: 2}
  - {name: launch, kind: admission, rate: 2, tokenTTL: 1m}
`), 0o644); err != nil {
		t.Fatal(err)
	}
	return startServer(t, append([]string{"--config", cfg, "--admin-token", admissionAdmin, "--guests", "true",
		"--queue-poll", "200ms", "--limit-reads-user", "off", "--limit-joins-user", "off"}, extra...)...)
}

// placeIn is g's place in queue.
func placeIn(t *testing.T, base, queue string, g guest) map[string]any {
	t.Helper()
	code, body := call(t, http.MethodGet, base+"/v1/admission/"+queue+"/position", g.Token, "")
	if code != 200 {
		t.Fatalf("position in %s: %d %v", queue, code, body)
	}
	p, _ := body["position"].(map[string]any)
	return p
}

// admissionInstant is when a READY place was admitted: its token's end less the
// token's life (the instant the admitter stamped, to the millisecond).
func admissionInstant(t *testing.T, p map[string]any, ttl time.Duration) time.Time {
	t.Helper()
	s, _ := p["expiresAt"].(string)
	at, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		t.Fatalf("expiresAt of %v: %v", p, err)
	}
	return at.Add(-ttl)
}

// busiest is the most instants within any one second (half open, as the
// line's window counts).
func busiest(at []time.Time) int {
	sorted := slices.SortedFunc(slices.Values(at), time.Time.Compare)
	most := 0
	for i := range sorted {
		j := i
		for j < len(sorted) && sorted[j].Sub(sorted[i]) < time.Second {
			j++
		}
		most = max(most, j-i)
	}
	return most
}

func exerciseAdmissionAtRunTime(t *testing.T, base string) {
	const n = 30
	var gs []guest
	for i := range n {
		g := newGuest(t, base, 1500)
		if code, body := call(t, http.MethodPost, base+"/v1/admission/launch/enter", g.Token, ""); code != http.StatusAccepted {
			t.Fatalf("enter %d: %d %v", i, code, body)
		}
		gs = append(gs, g)
	}
	at := make([]time.Time, n)
	count := 0
	// poll asks the first few waiters, in entry order (the line's), for
	// their place.
	poll := func() {
		asked := 0
		for i, g := range gs {
			if !at[i].IsZero() {
				continue
			}
			if asked++; asked > 4 {
				return
			}
			p := placeIn(t, base, "launch", g)
			switch p["status"] {
			case "READY":
				at[i] = admissionInstant(t, p, time.Minute)
				count++
			case "WAITING":
			default:
				t.Fatalf("place of %d: %v", i, p)
			}
		}
	}
	deadline := time.Now().Add(60 * time.Second)
	for count < 4 {
		if time.Now().After(deadline) {
			t.Fatalf("%d admitted at 2 a second", count)
		}
		poll()
		time.Sleep(50 * time.Millisecond)
	}
	// Those seen admitted before the change was asked for were admitted
	// at the old rate.
	var before []time.Time
	for _, a := range at {
		if !a.IsZero() {
			before = append(before, a)
		}
	}
	if code, body := call(t, http.MethodPut, base+"/v1/admin/queues/launch", admissionAdmin, `{"kind":"admission","rate":10,"tokenTTL":"1m"}`); code != 200 {
		t.Fatalf("change the rate: %d %v", code, body)
	}
	for count < n {
		if time.Now().After(deadline) {
			t.Fatalf("%d of %d admitted after raising the rate", count, n)
		}
		poll()
		time.Sleep(50 * time.Millisecond)
	}
	if b := busiest(before); b > 2 {
		t.Fatalf("%d admitted within a second at 2 a second", b)
	}
	// No second ever held more than the higher rate, and the admitter used
	// it: some second held more than the lower one.
	if b := busiest(at); b > 10 || b <= 2 {
		t.Fatalf("the busiest second admitted %d; want more than 2 (the new rate used) and at most 10", b)
	}

	// A queue created at run time takes entries and is admitted.
	if code, body := call(t, http.MethodPut, base+"/v1/admin/queues/flash", admissionAdmin, `{"kind":"admission","rate":20,"tokenTTL":"1m"}`); code != 200 {
		t.Fatalf("create a queue: %d %v", code, body)
	}
	h := newGuest(t, base, 1500)
	eventuallyOK(t, "flash takes entries", func() bool {
		code, _ := call(t, http.MethodPost, base+"/v1/admission/flash/enter", h.Token, "")
		return code == http.StatusAccepted || code == http.StatusOK
	})
	var token string
	eventuallyOK(t, "flash admits", func() bool {
		p := placeIn(t, base, "flash", h)
		token, _ = p["token"].(string)
		return p["status"] == "READY"
	})

	// A kind change is refused.
	if code, body := call(t, http.MethodPut, base+"/v1/admin/queues/launch", admissionAdmin, `{"kind":"skill","players":2}`); code != http.StatusBadRequest ||
		!strings.Contains(fmt.Sprint(body), "cannot become") {
		t.Fatalf("change launch's kind: %d %v", code, body)
	}

	// GET /v1/queues: the admission queues with their rates and the ETA's
	// error over launch's admissions (its figures are a second old at most).
	type listed struct {
		Name, Kind   string
		Rate         int
		Waiting      int64
		MeasuredRate struct {
			Mean, Low, High float64
			Measured        bool
		}
		ETAError struct {
			P50, P90   *float64
			Admissions int
		}
	}
	find := func(name string) (listed, bool) {
		resp, err := http.Get(base + "/v1/queues")
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var body struct{ Queues []listed }
		if err := json.NewDecoder(resp.Body).Decode(&body); err != nil {
			t.Fatal(err)
		}
		for _, q := range body.Queues {
			if q.Name == name {
				return q, true
			}
		}
		return listed{}, false
	}
	eventuallyOK(t, "launch's figures", func() bool {
		q, ok := find("launch")
		return ok && q.Waiting == 0 && q.ETAError.Admissions == n
	})
	l, _ := find("launch")
	if l.Kind != "admission" || l.Rate != 10 || !l.MeasuredRate.Measured || l.MeasuredRate.Mean <= 0 ||
		l.MeasuredRate.Low > l.MeasuredRate.Mean || l.MeasuredRate.High < l.MeasuredRate.Mean ||
		l.ETAError.P50 == nil || l.ETAError.P90 == nil || *l.ETAError.P90 < *l.ETAError.P50 {
		t.Fatalf("launch listed as %+v", l)
	}
	if f, ok := find("flash"); !ok || f.Kind != "admission" || f.Rate != 20 {
		t.Fatalf("flash listed as %+v (%v)", f, ok)
	}
	if d, ok := find("duel"); !ok || d.Kind != "skill" {
		t.Fatalf("duel listed as %+v (%v)", d, ok)
	}

	// Retired: flash takes no entry and leaves the listing, but the token
	// it gave is still the user's to use.
	if code, body := call(t, http.MethodDelete, base+"/v1/admin/queues/flash", admissionAdmin, ""); code != 200 {
		t.Fatalf("retire flash: %d %v", code, body)
	}
	late := newGuest(t, base, 1500)
	eventuallyOK(t, "flash retired", func() bool {
		code, body := call(t, http.MethodPost, base+"/v1/admission/flash/enter", late.Token, "")
		return code == http.StatusBadRequest && strings.Contains(fmt.Sprint(body), "UNKNOWN_QUEUE")
	})
	if _, ok := find("flash"); ok {
		t.Fatal("a retired queue listed")
	}
	if p := placeIn(t, base, "flash", h); p["status"] != "READY" || p["token"] != token {
		t.Fatalf("the READY place in a retired queue: %v", p)
	}
	if code, body := call(t, http.MethodPost, base+"/v1/admission/flash/tokens/claim", admissionAdmin, fmt.Sprintf(`{"token":%q}`, token)); code != 200 || body["userId"] != h.UserID {
		t.Fatalf("claim in a retired queue: %d %v", code, body)
	}

	// The metrics: this one process admitted everyone of launch (a late
	// entry into flash may have been admitted before it was retired).
	resp, err := http.Get(base + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	raw, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	for _, want := range []string{
		fmt.Sprintf(`matchgate_admission_admitted_total{queue="launch"} %d`, n),
		`matchgate_admission_tokens_total{outcome="claimed",queue="flash"} 1`,
		`matchgate_admission_waiting{queue="launch"} 0`,
		fmt.Sprintf(`matchgate_admission_eta_error_admissions{queue="launch"} %d`, n),
		`matchgate_admission_eta_error_ratio{quantile="0.9",queue="launch"} `,
		`matchgate_admission_rate_per_second{queue="launch"} `,
	} {
		if !strings.Contains(string(raw), want) {
			t.Errorf("metrics lack %q", want)
		}
	}
}

func TestAdmissionAtRunTimeEmbedded(t *testing.T) {
	exerciseAdmissionAtRunTime(t, runtimeServer(t))
}

func TestAdmissionAtRunTimeRedisPostgres(t *testing.T) {
	redistest.Real(t)
	prefix := redistest.Prefix(t)
	exerciseAdmissionAtRunTime(t, runtimeServer(t, "--redis-url", redistest.URL(), "--postgres-url", pgURL(t), "--redis-prefix", prefix))
}
