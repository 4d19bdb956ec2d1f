package gateway

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/matchgate/matchgate/admission"
)

// GET /v1/queues lists the matched queues, then the admission queues with
// their rates and the error of their ETAs.
func TestQueuesListsAdmissionQueues(t *testing.T) {
	env := startAdmissionServer(t, Config{})
	env.adm.list = func(context.Context) ([]admission.QueueStats, error) {
		return []admission.QueueStats{
			{
				Queue: admission.Queue{Name: "drop", Rate: 50}, Waiting: 1234,
				Rates:    admission.Rates{Mean: 49.8765, Low: 47.5, High: 51.25, Measured: true},
				ETAError: admission.ErrorStats{N: 800, P50: 0.08349, P90: 0.2},
			},
			{Queue: admission.Queue{Name: "fresh", Rate: 5}, Rates: admission.Rates{Mean: 5, Low: 5, High: 5}},
		}, nil
	}
	r := env.api.do(t, "GET", "/v1/queues", "", "")
	want := `{"queues":[{"name":"ranked","kind":"skill"` // the matched queues first
	if r.status != http.StatusOK || !strings.HasPrefix(string(r.body), want) {
		t.Fatalf("queues: %d %s", r.status, r.body)
	}
	for _, part := range []string{
		`{"name":"drop","kind":"admission","rate":50,"waiting":1234,"measuredRate":{"mean":49.88,"low":47.5,"high":51.25,"measured":true},"etaError":{"p50":0.083,"p90":0.2,"admissions":800}}`,
		`{"name":"fresh","kind":"admission","rate":5,"waiting":0,"measuredRate":{"mean":5,"low":5,"high":5,"measured":false},"etaError":{"p50":null,"p90":null,"admissions":0}}`,
	} {
		if !strings.Contains(string(r.body), part) {
			t.Errorf("queues %s\nlack %s", r.body, part)
		}
	}

	// The admission side unreachable: the listing is unavailable, not
	// short of its admission queues.
	env.adm.list = func(context.Context) ([]admission.QueueStats, error) {
		return nil, fmt.Errorf("line size: %w", context.DeadlineExceeded)
	}
	if r := env.api.do(t, "GET", "/v1/queues", "", ""); r.status != http.StatusServiceUnavailable || r.errorCode() != "UNAVAILABLE" {
		t.Fatalf("queues with the admission side down: %d %s", r.status, r.body)
	}
	env.adm.list = func(context.Context) ([]admission.QueueStats, error) { return nil, errors.New("bug") }
	if r := env.api.do(t, "GET", "/v1/queues", "", ""); r.status != http.StatusInternalServerError {
		t.Fatalf("queues with the admission side failing: %d %s", r.status, r.body)
	}
}
