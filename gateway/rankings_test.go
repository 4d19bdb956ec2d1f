package gateway

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/matchgate/matchgate/protocol"
	"github.com/matchgate/matchgate/ranking"
	"github.com/matchgate/matchgate/ranking/service"
)

// fakeRankings records the calls and answers what its fields say.
type fakeRankings struct {
	mu     sync.Mutex
	err    error
	events []ranking.Event
	calls  []string
	view   service.View
	item   ranking.Ranked
	found  bool
	by     string
	mets   map[string]ranking.Metric
}

func (f *fakeRankings) note(c string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls = append(f.calls, c)
	return f.err
}

func (f *fakeRankings) Ingest(_ context.Context, board string, events []ranking.Event) (int, int, error) {
	if err := f.note("ingest " + board); err != nil {
		return 0, 0, err
	}
	f.mu.Lock()
	f.events = events
	f.mu.Unlock()
	return len(events) - 1, 1, nil
}

func (f *fakeRankings) Top(_ context.Context, board, window, period string, limit int) (service.View, error) {
	if err := f.note(fmt.Sprintf("top %s %s %s %d", board, window, period, limit)); err != nil {
		return service.View{}, err
	}
	return f.view, nil
}

func (f *fakeRankings) Item(_ context.Context, board, window, period, item string) (ranking.Ranked, bool, error) {
	if err := f.note(fmt.Sprintf("item %s %s %s %s", board, window, period, item)); err != nil {
		return ranking.Ranked{}, false, err
	}
	return f.item, f.found, nil
}

func (f *fakeRankings) SetWeights(_ context.Context, board string, metrics map[string]ranking.Metric, by string) (ranking.Weights, error) {
	if err := f.note("weights " + board); err != nil {
		return ranking.Weights{}, err
	}
	f.mu.Lock()
	f.by, f.mets = by, metrics
	f.mu.Unlock()
	return ranking.Weights{Version: 3, Metrics: metrics, By: by, At: time.Date(2026, 12, 2, 10, 0, 0, 0, time.UTC)}, nil
}

func (f *fakeRankings) lastCall() string {
	f.mu.Lock()
	defer f.mu.Unlock()
	if len(f.calls) == 0 {
		return ""
	}
	return f.calls[len(f.calls)-1]
}

func newRankingEnv(t *testing.T) (*restEnv, *fakeRankings) {
	t.Helper()
	f := &fakeRankings{}
	e := newRESTEnv(t, Config{Rankings: f, AdminTokens: []string{adminToken}, Admin: fakeAdminForValidation{},
		Now: func() time.Time { return rankingClock }})
	return e, f
}

// rankingClock is the servers' clock in these tests: the current periods
// are 2026-12-02T14, 2026-12-02 and 2026-W49.
var rankingClock = time.Date(2026, 12, 2, 14, 30, 0, 0, time.UTC)

// rankingPlayer is a player token valid at rankingClock.
func rankingPlayer(t *testing.T) string {
	t.Helper()
	tok, err := MintToken(testSecret, "alice", nil, time.Hour, rankingClock)
	if err != nil {
		t.Fatal(err)
	}
	return tok
}

const oneEvent = `{"events":[{"id":"e1","item":"a","metric":"views","value":1,"at":"2026-12-02T14:00:00Z"},{"id":"e2","item":"b","metric":"views","value":2,"at":"2026-12-02T14:01:00Z"}]}`

func TestRankingEvents(t *testing.T) {
	e, f := newRankingEnv(t)
	player := rankingPlayer(t)
	for _, c := range []struct {
		token, body string
		status      int
		code        string
	}{
		{"", oneEvent, http.StatusUnauthorized, "UNAUTHORIZED"},
		{player, oneEvent, http.StatusUnauthorized, "UNAUTHORIZED"},
		{adminToken, `{"events":[],"extra":1}`, http.StatusBadRequest, "BAD_REQUEST"},
		{adminToken, `{"events":[{"id":"e1","item":"a","metric":"views","value":1,"at":"2026-12-02T14:00:00Z","x":1}]}`, http.StatusBadRequest, "BAD_REQUEST"},
		{adminToken, `{"events":[{"ID":"e1","item":"a","metric":"views","value":1,"at":"2026-12-02T14:00:00Z"}]}`, http.StatusBadRequest, "BAD_REQUEST"},
		{adminToken, `{"events":[{"id":"e1","id":"e2"}]}`, http.StatusBadRequest, "BAD_REQUEST"},
		{adminToken, `{}`, http.StatusBadRequest, "BAD_REQUEST"},
		{adminToken, `{"events":[{"id":1}]}`, http.StatusBadRequest, "BAD_REQUEST"},
	} {
		r := e.do(t, "POST", "/v1/rankings/shop/events", c.token, c.body)
		if r.status != c.status || r.errorCode() != c.code {
			t.Errorf("%.40q %s: %d %s, want %d %s", c.token, c.body, r.status, r.body, c.status, c.code)
		}
	}
	if f.lastCall() != "" {
		t.Fatalf("a refused request reached the service: %v", f.calls)
	}
	r := e.do(t, "POST", "/v1/rankings/shop/events", adminToken, oneEvent)
	if r.status != http.StatusAccepted || strings.TrimSpace(string(r.body)) != `{"accepted":1,"duplicates":1}` {
		t.Fatalf("ingest: %d %s", r.status, r.body)
	}
	if f.lastCall() != "ingest shop" || len(f.events) != 2 || f.events[1] != (ranking.Event{ID: "e2", Item: "b", Metric: "views", Value: 2,
		At: time.Date(2026, 12, 2, 14, 1, 0, 0, time.UTC)}) {
		t.Fatalf("ingested %v %+v", f.calls, f.events)
	}
	// A bad board name is an unknown board, unasked.
	if r := e.do(t, "POST", "/v1/rankings/Shop/events", adminToken, oneEvent); r.status != http.StatusNotFound || f.lastCall() != "ingest shop" {
		t.Errorf("bad name: %d %s", r.status, r.body)
	}
}

func TestRankingEventsBounds(t *testing.T) {
	e, f := newRankingEnv(t)
	ev := `{"id":"e","item":"a","metric":"views","value":1,"at":"2026-12-02T14:00:00Z"}`
	many := `{"events":[` + strings.Repeat(ev+",", service.MaxBatch) + ev + `]}`
	if len(many) > maxRankingEventsBytes {
		t.Fatalf("test body %d bytes: over the bound", len(many))
	}
	r := e.do(t, "POST", "/v1/rankings/shop/events", adminToken, many)
	if r.status != http.StatusBadRequest || !strings.Contains(string(r.body), "at most 10000") {
		t.Errorf("10001 events: %d %s", r.status, r.body)
	}
	ok := `{"events":[` + strings.Repeat(ev+",", service.MaxBatch-1) + ev + `]}`
	if r := e.do(t, "POST", "/v1/rankings/shop/events", adminToken, ok); r.status != http.StatusAccepted || len(f.events) != service.MaxBatch {
		t.Errorf("10000 events: %d %s", r.status, r.body)
	}
	big := `{"events":[{"id":"` + strings.Repeat("x", maxRankingEventsBytes) + `"}]}`
	if r := e.do(t, "POST", "/v1/rankings/shop/events", adminToken, big); r.status != http.StatusBadRequest ||
		!strings.Contains(string(r.body), "body larger than") {
		t.Errorf("big body: %d %s", r.status, r.body)
	}
}

func TestRankingErrors(t *testing.T) {
	e, f := newRankingEnv(t)
	player := rankingPlayer(t)
	for _, c := range []struct {
		err    error
		status int
		code   string
		msg    string
	}{
		{fmt.Errorf("board %q: %w", "shop", ranking.ErrUnknownBoard), http.StatusNotFound, "NOT_FOUND", `no such ranking board \"shop\"`},
		{fmt.Errorf("x: %w: metric", ranking.ErrInvalidEvent), http.StatusBadRequest, "BAD_REQUEST", "invalid event"},
		{fmt.Errorf("x: %w", service.ErrTooMany), http.StatusBadRequest, "BAD_REQUEST", "too many"},
		{fmt.Errorf("x: %w", service.ErrUnknownWindow), http.StatusBadRequest, "BAD_REQUEST", "window not ranked"},
		{fmt.Errorf("x: %w", service.ErrInvalidPeriod), http.StatusBadRequest, "BAD_REQUEST", "invalid period"},
		{fmt.Errorf("x: %w", service.ErrInvalidLimit), http.StatusBadRequest, "BAD_REQUEST", "invalid limit"},
		{fmt.Errorf("x: %w", service.ErrInvalidWeights), http.StatusBadRequest, "BAD_REQUEST", "invalid weights"},
		{errors.New("disk on fire"), http.StatusInternalServerError, "INTERNAL", "internal error"},
		{fmt.Errorf("x: %w", context.DeadlineExceeded), http.StatusServiceUnavailable, "UNAVAILABLE", ""},
	} {
		f.mu.Lock()
		f.err = c.err
		f.mu.Unlock()
		for _, req := range []struct{ method, path, token, body string }{
			{"POST", "/v1/rankings/shop/events", adminToken, oneEvent},
			{"GET", "/v1/rankings/shop", player, ""},
			{"GET", "/v1/rankings/shop/items/a", player, ""},
			{"PUT", "/v1/admin/rankings/shop/weights", adminToken, `{"metrics":{"views":{"weight":1}}}`},
		} {
			r := e.do(t, req.method, req.path, req.token, req.body)
			if r.status != c.status || r.errorCode() != c.code || !strings.Contains(string(r.body), c.msg) {
				t.Errorf("%v on %s %s: %d %s", c.err, req.method, req.path, r.status, r.body)
			}
		}
	}
}

func TestRankingTop(t *testing.T) {
	e, f := newRankingEnv(t)
	player := rankingPlayer(t)
	items := make([]ranking.Ranked, 30)
	for i := range items {
		items[i] = ranking.Ranked{Item: fmt.Sprint("i", i), Rank: i + 1, Score: float64(100 - i),
			Metrics: map[string]float64{"views": float64(100 - i)}, Parts: map[string]float64{"views": float64(100 - i)}}
	}
	items[0].Score = math.Inf(1)
	items[0].Parts["views"] = math.NaN()
	f.view = service.View{Board: "shop", Window: ranking.WindowDay, Period: "2026-12-02", WeightsVersion: 2, Items: items,
		RefreshedAt: time.Date(2026, 12, 2, 14, 29, 0, 0, time.UTC)}

	if r := e.do(t, "GET", "/v1/rankings/shop", "", ""); r.status != http.StatusUnauthorized {
		t.Errorf("no token: %d", r.status)
	}
	r := e.do(t, "GET", "/v1/rankings/shop", player, "")
	var v protocol.RankingView
	if err := json.Unmarshal(r.body, &v); r.status != http.StatusOK || err != nil {
		t.Fatalf("top: %d %s %v", r.status, r.body, err)
	}
	// Default: the day, the current period, the service's N cut to 20.
	if f.lastCall() != "top shop day  0" || len(v.Items) != 20 || v.Board != "shop" || v.Window != "day" ||
		v.Period != "2026-12-02" || v.WeightsVersion != 2 || v.Items[0].Score != nil || v.Items[0].Parts["views"] != nil ||
		*v.Items[1].Score != 99 || v.Items[19].Rank != 20 {
		t.Fatalf("top: %v %s", f.calls, r.body)
	}
	if !strings.Contains(string(r.body), `"refreshedAt":"2026-12-02T14:29:00.000Z"`) {
		t.Errorf("refreshedAt: %s", r.body)
	}
	r = e.do(t, "GET", "/v1/rankings/shop?window=hour&period=2026-12-02T13&limit=25", player, "")
	if err := json.Unmarshal(r.body, &v); r.status != http.StatusOK || err != nil || len(v.Items) != 25 ||
		f.lastCall() != "top shop hour 2026-12-02T13 25" {
		t.Fatalf("top with a query: %d %v %s", r.status, f.calls, r.body)
	}
	n := len(f.calls)
	for _, q := range []string{"?limit=0", "?limit=x", "?limit=-1", "?windows=day", "?window=day&window=hour"} {
		if r := e.do(t, "GET", "/v1/rankings/shop"+q, player, ""); r.status != http.StatusBadRequest {
			t.Errorf("%s: %d %s", q, r.status, r.body)
		}
	}
	if len(f.calls) != n {
		t.Errorf("refused queries reached the service: %v", f.calls[n:])
	}
}

func TestRankingItem(t *testing.T) {
	e, f := newRankingEnv(t)
	player := rankingPlayer(t)
	r := e.do(t, "GET", "/v1/rankings/shop/items/a", player, "")
	if r.status != http.StatusNotFound || r.errorCode() != "NOT_FOUND" || f.lastCall() != "item shop day 2026-12-02 a" {
		t.Fatalf("absent item: %d %s %v", r.status, r.body, f.calls)
	}
	f.found = true
	f.item = ranking.Ranked{Item: "a", Rank: 7, Score: 3.5, Metrics: map[string]float64{"views": 3.5}, Parts: map[string]float64{"views": 3.5}}
	r = e.do(t, "GET", "/v1/rankings/shop/items/a?window=week", player, "")
	want := `{"board":"shop","window":"week","period":"2026-W49","item":{"item":"a","rank":7,"score":3.5,"metrics":{"views":3.5},"parts":{"views":3.5}}}`
	if r.status != http.StatusOK || strings.TrimSpace(string(r.body)) != want {
		t.Fatalf("item: %d %s", r.status, r.body)
	}
	if r := e.do(t, "GET", "/v1/rankings/shop/items/a?limit=3", player, ""); r.status != http.StatusBadRequest {
		t.Errorf("limit on an item: %d", r.status)
	}
	// An unknown window is the service's to refuse, asked with no period.
	e.do(t, "GET", "/v1/rankings/shop/items/a?window=month", player, "")
	if f.lastCall() != "item shop month  a" {
		t.Errorf("unknown window: %v", f.calls)
	}
}

func TestRankingWeights(t *testing.T) {
	e, f := newRankingEnv(t)
	player := rankingPlayer(t)
	body := `{"metrics":{"views":{"weight":1},"sales":{"weight":5,"transform":"log1p"}},"by":"ops-alice"}`
	for _, c := range []struct {
		token, body string
		status      int
	}{
		{"", body, http.StatusUnauthorized},
		{player, body, http.StatusUnauthorized},
		{adminToken, `{"metrics":{"views":{"weight":1,"x":2}}}`, http.StatusBadRequest},
		{adminToken, `{"metrics":{"views":{"Weight":1}}}`, http.StatusBadRequest},
		{adminToken, `{"metrics":{},"who":"x"}`, http.StatusBadRequest},
		{adminToken, `{"by":"x"}`, http.StatusBadRequest},
		{adminToken, `{"metrics":{},"by":"` + strings.Repeat("x", 129) + `"}`, http.StatusBadRequest},
	} {
		if r := e.do(t, "PUT", "/v1/admin/rankings/shop/weights", c.token, c.body); r.status != c.status {
			t.Errorf("%.30q %s: %d %s", c.token, c.body, r.status, r.body)
		}
	}
	if f.lastCall() != "" {
		t.Fatalf("a refused request reached the service: %v", f.calls)
	}
	r := e.do(t, "PUT", "/v1/admin/rankings/shop/weights", adminToken, body)
	want := `{"board":"shop","weights":{"version":3,"metrics":{"sales":{"weight":5,"transform":"log1p"},"views":{"weight":1}},"by":"ops-alice","at":"2026-12-02T10:00:00.000Z"}}`
	if r.status != http.StatusOK || strings.TrimSpace(string(r.body)) != want {
		t.Fatalf("weights: %d %s", r.status, r.body)
	}
	if r := e.do(t, "PUT", "/v1/admin/rankings/shop/weights", adminToken, `{"metrics":{"views":{"weight":1}}}`); r.status != http.StatusOK || f.by != "admin" {
		t.Errorf("default by: %d %s %q", r.status, r.body, f.by)
	}
}

// Without Config.Rankings every route answers NOT_FOUND, before the token.
func TestRankingsDisabled(t *testing.T) {
	e := newRESTEnv(t, Config{AdminTokens: []string{adminToken}, Admin: fakeAdminForValidation{}})
	for _, req := range []struct{ method, path, token, body string }{
		{"POST", "/v1/rankings/shop/events", "", oneEvent},
		{"GET", "/v1/rankings/shop", "", ""},
		{"GET", "/v1/rankings/shop/items/a", mustToken(t, "alice", nil), ""},
		{"PUT", "/v1/admin/rankings/shop/weights", adminToken, `{"metrics":{}}`},
	} {
		if r := e.do(t, req.method, req.path, req.token, req.body); r.status != http.StatusNotFound || r.errorCode() != "NOT_FOUND" {
			t.Errorf("%s %s: %d %s", req.method, req.path, r.status, r.body)
		}
	}
}

// An encoded Top is reused only for the same view: same board, window,
// period, weights version, digest, refresh and length.
func TestRankingTopEncodedOnce(t *testing.T) {
	e, f := newRankingEnv(t)
	player := rankingPlayer(t)
	at := time.Date(2026, 12, 2, 14, 29, 0, 0, time.UTC)
	view := func(digest string, refreshed time.Time, items ...string) service.View {
		v := service.View{Board: "shop", Window: ranking.WindowDay, Period: "2026-12-02", WeightsVersion: 1,
			RefreshedAt: refreshed, Digest: digest}
		for i, it := range items {
			v.Items = append(v.Items, ranking.Ranked{Item: it, Rank: i + 1, Score: float64(10 - i),
				Metrics: map[string]float64{}, Parts: map[string]float64{}})
		}
		return v
	}
	top := func(q string) string {
		t.Helper()
		r := e.do(t, "GET", "/v1/rankings/shop"+q, player, "")
		var v protocol.RankingView
		if err := json.Unmarshal(r.body, &v); r.status != http.StatusOK || err != nil {
			t.Fatalf("top: %d %s %v", r.status, r.body, err)
		}
		var out []string
		for _, it := range v.Items {
			out = append(out, it.Item)
		}
		return strings.Join(out, ",") + "@" + time.Time(v.RefreshedAt).Format(time.RFC3339)
	}
	set := func(v service.View) {
		f.mu.Lock()
		f.view = v
		f.mu.Unlock()
	}
	steps := []struct {
		view service.View
		q    string
		want string
	}{
		{view("d1", at, "a", "b", "c"), "", "a,b,c@2026-12-02T14:29:00Z"},
		{view("d1", at, "a", "b", "c"), "?limit=2", "a,b@2026-12-02T14:29:00Z"},            // another length
		{view("d2", at, "c", "b", "a"), "", "c,b,a@2026-12-02T14:29:00Z"},                  // other items
		{view("d2", at.Add(time.Minute), "c", "b", "a"), "", "c,b,a@2026-12-02T14:30:00Z"}, // a refresh
		{view("", at, "x"), "", "x@2026-12-02T14:29:00Z"},                                  // not stored: never reused
		{view("", at, "y"), "", "y@2026-12-02T14:29:00Z"},
	}
	for i, s := range steps {
		set(s.view)
		if got := top(s.q); got != s.want {
			t.Errorf("step %d: %s, want %s", i, got, s.want)
		}
	}
	// The same view again is answered from the encoded copy: items
	// changed behind an unchanged digest stay unseen (the digest is
	// what tells views apart).
	v := view("d1", at, "a", "b", "c")
	set(v)
	top("")
	v.Items[0].Item = "zz"
	set(v)
	if got := top(""); got != "a,b,c@2026-12-02T14:29:00Z" {
		t.Errorf("the same view encoded again: %s", got)
	}
}
