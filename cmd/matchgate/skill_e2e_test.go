package main

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/matchgate/matchgate/gateway"
	"github.com/matchgate/matchgate/matcher"
)

// A token without a skill: the join asks --skill-url; when the service is
// slow, the join does not wait for it and uses the last skill it answered,
// marked estimated.
func TestEndToEndSkillService(t *testing.T) {
	const slowFor = 30 * time.Second
	var slow atomic.Bool
	svc := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !strings.HasPrefix(r.URL.Path, "/skill/") {
			http.NotFound(w, r)
			return
		}
		if slow.Load() {
			select {
			case <-r.Context().Done():
			case <-time.After(slowFor):
			}
			return
		}
		_, _ = w.Write([]byte(`{"skill": 1234}`))
	}))
	t.Cleanup(svc.Close)
	base := startServer(t, "--skill-url", svc.URL)
	tok, err := gateway.MintToken([]byte(testSecret), "skill-user", nil, time.Hour, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	call := func(method, path string) (int, matcher.Ticket) {
		t.Helper()
		req, _ := http.NewRequest(method, base+path, strings.NewReader(`{}`))
		req.Header.Set("Authorization", "Bearer "+tok)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var body struct{ Ticket matcher.Ticket }
		_ = json.NewDecoder(resp.Body).Decode(&body)
		return resp.StatusCode, body.Ticket
	}
	status, tk := call(http.MethodPost, "/v1/queues/duel/tickets")
	if status != http.StatusAccepted || tk.Skill != 1234 || tk.Estimated {
		t.Fatalf("join with the service up: %d %+v", status, tk)
	}
	if status, _ := call(http.MethodDelete, fmt.Sprint("/v1/tickets/", tk.ID)); status != http.StatusOK {
		t.Fatalf("cancel: %d", status)
	}
	slow.Store(true)
	start := time.Now()
	status, tk = call(http.MethodPost, "/v1/queues/duel/tickets")
	// Far below slowFor, so a loaded machine cannot fail it: a join that
	// waited for the service would take all of slowFor.
	if took := time.Since(start); took > slowFor/2 {
		t.Fatalf("the join waited %v for a skill service that answers after %v", took, slowFor)
	}
	if status != http.StatusAccepted || tk.Skill != 1234 || !tk.Estimated {
		t.Fatalf("join with the service slow: %d %+v; want the last known skill, estimated", status, tk)
	}
}
