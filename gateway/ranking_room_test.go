package gateway

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/matchgate/matchgate/ranking"
	"github.com/matchgate/matchgate/ranking/service"
	"github.com/matchgate/matchgate/ratelimit"
)

// SubscribeRanking makes the fake Subscriber a rankingSubscriber: a
// ranking's channel is the user channel "ranking:<board>:<window>" of
// publish.
func (f *fakeSubscriber) SubscribeRanking(ctx context.Context, board, window string, deliver func([]byte)) (func(), error) {
	return f.Subscribe(ctx, "ranking:"+board+":"+window, deliver)
}

// fastMessages lets a test's frames through the per-socket message rate.
var fastMessages = ratelimit.Limit{N: 1000, Per: time.Second}

const trendingHour = "ranking:trending:hour"

// announce publishes what the rankings Service announces on a change.
func announce(env *testEnv, period string) int {
	return env.sub.publish(trendingHour, fmt.Appendf(nil, `{"board":"trending","window":"hour","period":%q,"weightsVersion":1}`, period))
}

func trendingView(period string, items ...string) service.View {
	v := service.View{Board: "trending", Window: ranking.WindowHour, Period: period, WeightsVersion: 1}
	for i, it := range items {
		v.Items = append(v.Items, ranking.Ranked{Item: it, Rank: i + 1, Score: float64(len(items) - i),
			Metrics: map[string]float64{"matches": float64(len(items) - i)}, Parts: map[string]float64{"matches": float64(len(items) - i)}})
	}
	return v
}

func (f *fakeRankings) setView(v service.View) {
	f.mu.Lock()
	f.view = v
	f.mu.Unlock()
}

func (f *fakeRankings) tops() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	n := 0
	for _, c := range f.calls {
		if strings.HasPrefix(c, "top ") {
			n++
		}
	}
	return n
}

// rankingFrame is a subscribed or ranking.update frame as a client reads it.
type rankingFrame struct {
	Type    string `json:"type"`
	Re      string `json:"re"`
	Ranking string `json:"ranking"`
	Window  string `json:"window"`
	Period  string `json:"period"`
	Items   []struct {
		Item  string   `json:"item"`
		Rank  int      `json:"rank"`
		Score *float64 `json:"score"`
	} `json:"items"`
	Error *struct {
		Code string `json:"code"`
	} `json:"error"`
	raw []byte
}

func (f rankingFrame) order() string {
	var out []string
	for _, it := range f.Items {
		out = append(out, it.Item)
	}
	return strings.Join(out, ",")
}

// readRanking reads the next frame of the socket.
func readRanking(t *testing.T, c *websocket.Conn) rankingFrame {
	t.Helper()
	f := readFrame(t, c)
	var r rankingFrame
	if err := json.Unmarshal(f.raw, &r); err != nil {
		t.Fatalf("%s: %v", f.raw, err)
	}
	r.raw = f.raw
	return r
}

// rankingCmd sends a ranking command and reads its answer (a push may
// come first: it is returned too).
func rankingCmd(t *testing.T, c *websocket.Conn, cmd map[string]any) rankingFrame {
	t.Helper()
	writeJSONFrame(t, c, cmd)
	for range 5 {
		if f := readRanking(t, c); f.Re == cmd["id"] {
			return f
		}
	}
	t.Fatalf("no answer to %v", cmd)
	return rankingFrame{}
}

// nothingPending checks that no frame waits before the pong of a ping.
func nothingPending(t *testing.T, c *websocket.Conn, what string) {
	t.Helper()
	writeJSONFrame(t, c, map[string]any{"type": "ping", "id": "p"})
	if f := readRanking(t, c); f.Type != "pong" {
		t.Fatalf("%s: %s before the pong", what, f.raw)
	}
}

// waitCount waits until the fake Subscriber holds n subscriptions of ch.
func waitCount(t *testing.T, env *testEnv, ch string, n int) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for env.sub.count(ch) != n {
		if time.Now().After(deadline) {
			t.Fatalf("%d subscriptions of %s, want %d", env.sub.count(ch), ch, n)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// Two sockets on one board's window share one hub subscription; an
// announcement costs one read and reaches each socket once, cut to its
// limit; a new period is pushed; an unsubscribe and a close release the
// subscription.
func TestRankingPushesShareOneSubscription(t *testing.T) {
	f := &fakeRankings{view: trendingView("2026-12-02T14", "a", "b", "c")}
	env := startServer(t, Config{Rankings: f, MessageRate: fastMessages})
	c1 := dial(t, env.wsURL(), mustToken(t, "ada", nil))
	c2 := dial(t, env.wsURL(), mustToken(t, "bob", nil))
	readFrame(t, c1)
	readFrame(t, c2)

	s1 := rankingCmd(t, c1, map[string]any{"type": "subscribe", "id": "s1", "ranking": "trending", "window": "hour", "limit": 2})
	if s1.Type != "subscribed" || s1.Ranking != "trending" || s1.Window != "hour" || s1.Period != "2026-12-02T14" || s1.order() != "a,b" {
		t.Fatalf("subscribed: %s", s1.raw)
	}
	s2 := rankingCmd(t, c2, map[string]any{"type": "subscribe", "id": "s2", "ranking": "trending", "window": "hour"})
	if s2.Type != "subscribed" || s2.order() != "a,b,c" {
		t.Fatalf("subscribed: %s", s2.raw)
	}
	if n := env.sub.count(trendingHour); n != 1 {
		t.Fatalf("%d hub subscriptions of the board's window, want 1", n)
	}
	if n := metricValue(t, env.reg, "matchgate_ranking_subscriptions"); n != 2 {
		t.Fatalf("matchgate_ranking_subscriptions %v, want 2", n)
	}

	reads := f.tops()
	f.setView(trendingView("2026-12-02T14", "c", "a", "b"))
	if n := announce(env, "2026-12-02T14"); n != 1 {
		t.Fatalf("the announcement reached %d subscriptions, want 1", n)
	}
	if u := readRanking(t, c1); u.Type != "ranking.update" || u.Re != "" || u.order() != "c,a" {
		t.Fatalf("c1 pushed %s", u.raw)
	}
	if u := readRanking(t, c2); u.Type != "ranking.update" || u.order() != "c,a,b" {
		t.Fatalf("c2 pushed %s", u.raw)
	}
	nothingPending(t, c1, "one announcement")
	nothingPending(t, c2, "one announcement")
	if n := f.tops() - reads; n != 1 {
		t.Fatalf("%d reads for one announcement, want 1", n)
	}

	// A new hour: pushed with its period.
	f.setView(trendingView("2026-12-02T15", "b"))
	announce(env, "2026-12-02T15")
	if u := readRanking(t, c1); u.Period != "2026-12-02T15" || u.order() != "b" {
		t.Fatalf("rollover pushed %s", u.raw)
	}
	readRanking(t, c2)

	if u := rankingCmd(t, c1, map[string]any{"type": "unsubscribe", "id": "u1", "ranking": "trending", "window": "hour"}); u.Type != "unsubscribed" {
		t.Fatalf("unsubscribe: %s", u.raw)
	}
	if n := env.sub.count(trendingHour); n != 1 {
		t.Fatalf("%d hub subscriptions with one socket left, want 1", n)
	}
	f.setView(trendingView("2026-12-02T15", "b", "a"))
	announce(env, "2026-12-02T15")
	if u := readRanking(t, c2); u.order() != "b,a" {
		t.Fatalf("c2 pushed %s", u.raw)
	}
	nothingPending(t, c1, "unsubscribed")

	_ = c2.Close(websocket.StatusNormalClosure, "")
	waitCount(t, env, trendingHour, 0)
	if n := metricValue(t, env.reg, "matchgate_ranking_subscriptions"); n != 0 {
		t.Fatalf("matchgate_ranking_subscriptions %v after every socket left, want 0", n)
	}
}

// An announcement that changes nothing is not pushed; after the hub
// reconnected the current view is pushed all the same.
func TestRankingPushesResync(t *testing.T) {
	f := &fakeRankings{view: trendingView("2026-12-02T14", "a", "b")}
	env := startServer(t, Config{Rankings: f, MessageRate: fastMessages})
	c := dial(t, env.wsURL(), mustToken(t, "ada", nil))
	readFrame(t, c)
	rankingCmd(t, c, map[string]any{"type": "subscribe", "id": "s", "ranking": "trending", "window": "hour"})
	f.setView(trendingView("2026-12-02T14", "b", "a"))
	announce(env, "2026-12-02T14")
	if u := readRanking(t, c); u.order() != "b,a" {
		t.Fatalf("pushed %s", u.raw)
	}
	// The previous hour's late events: the current view is unchanged.
	reads := f.tops()
	announce(env, "2026-12-02T13")
	deadline := time.Now().Add(5 * time.Second)
	for f.tops() == reads && time.Now().Before(deadline) {
		time.Sleep(5 * time.Millisecond)
	}
	nothingPending(t, c, "an unchanged view")
	env.srv.ResyncRankings()
	if u := readRanking(t, c); u.Type != "ranking.update" || u.order() != "b,a" {
		t.Fatalf("resync pushed %s", u.raw)
	}
	// The loop reads in turn: had the unchanged view been pushed, the
	// resync's push would be the second, and would stand before the pong.
	nothingPending(t, c, "the resync")
}

// gatedRankings holds its reads until let go, to see what arrives
// meanwhile.
type gatedRankings struct {
	*fakeRankings
	mu      sync.Mutex
	gate    chan struct{}
	started chan struct{}
}

func (g *gatedRankings) Top(ctx context.Context, board, window, period string, limit int) (service.View, error) {
	g.mu.Lock()
	gate := g.gate
	g.mu.Unlock()
	if gate != nil {
		g.started <- struct{}{}
		select {
		case <-gate:
		case <-ctx.Done():
			return service.View{}, ctx.Err()
		}
	}
	return g.fakeRankings.Top(ctx, board, window, period, limit)
}

// Announcements that arrive while a read runs cost one more read after
// it, not one each.
func TestRankingPushesCoalesce(t *testing.T) {
	g := &gatedRankings{fakeRankings: &fakeRankings{view: trendingView("2026-12-02T14", "a")}, started: make(chan struct{}, 16)}
	env := startServer(t, Config{Rankings: g, MessageRate: fastMessages})
	c := dial(t, env.wsURL(), mustToken(t, "ada", nil))
	readFrame(t, c)
	rankingCmd(t, c, map[string]any{"type": "subscribe", "id": "s", "ranking": "trending", "window": "hour"})
	reads := g.tops()

	gate := make(chan struct{})
	g.mu.Lock()
	g.gate = gate
	g.mu.Unlock()
	g.setView(trendingView("2026-12-02T14", "b"))
	announce(env, "2026-12-02T14")
	select {
	case <-g.started:
	case <-time.After(5 * time.Second):
		t.Fatal("no read after the announcement")
	}
	for range 5 {
		announce(env, "2026-12-02T14")
	}
	g.mu.Lock()
	g.gate = nil
	g.mu.Unlock()
	close(gate)
	if u := readRanking(t, c); u.order() != "b" {
		t.Fatalf("pushed %s", u.raw)
	}
	// The one read after: it finds the view as pushed, so pushes nothing.
	deadline := time.Now().Add(5 * time.Second)
	for g.tops()-reads < 2 && time.Now().Before(deadline) {
		time.Sleep(5 * time.Millisecond)
	}
	nothingPending(t, c, "the coalesced read")
	if n := g.tops() - reads; n != 2 {
		t.Fatalf("%d reads for six announcements during one read, want 2", n)
	}
}

// The refusals: an unknown board (no hub subscription left behind), a
// bad window or limit, a member of another frame, the per-socket bound,
// and a server without rankings.
func TestRankingSubscribeRefusals(t *testing.T) {
	f := &fakeRankings{view: trendingView("2026-12-02T14", "a")}
	env := startServer(t, Config{Rankings: f, MessageRate: fastMessages})
	c := dial(t, env.wsURL(), mustToken(t, "ada", nil))
	readFrame(t, c)
	code := func(cmd map[string]any) string {
		t.Helper()
		r := rankingCmd(t, c, cmd)
		if r.Error == nil {
			return r.Type
		}
		return r.Error.Code
	}
	f.mu.Lock()
	f.err = fmt.Errorf("top: %w", ranking.ErrUnknownBoard)
	f.mu.Unlock()
	if got := code(map[string]any{"type": "subscribe", "id": "1", "ranking": "nope", "window": "hour"}); got != "NOT_FOUND" {
		t.Errorf("unknown board: %s", got)
	}
	waitCount(t, env, "ranking:nope:hour", 0)
	f.mu.Lock()
	f.err = nil
	f.mu.Unlock()
	for _, cmd := range []map[string]any{
		{"type": "subscribe", "id": "2", "ranking": "trending", "window": "minute"},
		{"type": "subscribe", "id": "3", "ranking": "trending", "window": "hour", "limit": 0},
		{"type": "subscribe", "id": "4", "ranking": "trending"},
		{"type": "unsubscribe", "id": "5", "ranking": "trending", "window": "hour", "limit": 3},
		{"type": "subscribe", "id": "6", "ranking": "trending", "window": "hour", "queue": "duel"},
	} {
		if got := code(cmd); got != "BAD_REQUEST" {
			t.Errorf("%v: %s, want BAD_REQUEST", cmd, got)
		}
	}
	if got := code(map[string]any{"type": "subscribe", "id": "7", "ranking": "Bad Name", "window": "hour"}); got != "NOT_FOUND" {
		t.Errorf("a name no board has: %s", got)
	}
	for i := range maxRankingSubscriptions {
		if got := code(map[string]any{"type": "subscribe", "id": "b", "ranking": fmt.Sprintf("b%d", i), "window": "hour"}); got != "subscribed" {
			t.Fatalf("subscription %d: %s", i, got)
		}
	}
	// Subscribing again to one held is not one more.
	if got := code(map[string]any{"type": "subscribe", "id": "b", "ranking": "b0", "window": "hour", "limit": 1}); got != "subscribed" {
		t.Fatalf("again: %s", got)
	}
	r := rankingCmd(t, c, map[string]any{"type": "subscribe", "id": "x", "ranking": "trending", "window": "day"})
	if r.Error == nil || r.Error.Code != "BAD_REQUEST" || !bytes.Contains(r.raw, []byte("at most 8")) {
		t.Errorf("over the bound: %s", r.raw)
	}

	bare := startServer(t, Config{MessageRate: fastMessages})
	c = dial(t, bare.wsURL(), mustToken(t, "ada", nil))
	readFrame(t, c)
	if got := code(map[string]any{"type": "subscribe", "id": "1", "ranking": "trending", "window": "hour"}); got != "NOT_FOUND" {
		t.Errorf("no rankings: %s", got)
	}
}

// The fixture's ranking frames: its client examples decode as what they
// say, and a subscribe, a push and an unsubscribe are answered with its
// frames byte for byte.
func TestRankingFixtureFrames(t *testing.T) {
	b, err := os.ReadFile("../protocol/testdata/wire.json")
	if err != nil {
		t.Fatal(err)
	}
	var fx struct {
		RankingClient []struct {
			Example string          `json:"example"`
			Frame   json.RawMessage `json:"frame"`
		} `json:"rankingClient"`
	}
	if err := json.Unmarshal(b, &fx); err != nil || len(fx.RankingClient) == 0 {
		t.Fatalf("wire.json: %v, %d ranking client examples", err, len(fx.RankingClient))
	}
	for _, c := range fx.RankingClient {
		in, err := decodeRankingFrame(c.Frame)
		if err != nil {
			t.Errorf("%s refused: %v", c.Example, err)
			continue
		}
		again, _ := json.Marshal(in)
		if !bytes.Equal(again, c.Frame) {
			t.Errorf("%s decoded as %s", c.Example, again)
		}
	}
	fxw := loadWireFixture(t)
	viewOf := func(frame []byte) service.View {
		var w struct {
			Ranking, Window, Period string
			WeightsVersion          int64
			Items                   []struct {
				Item           string
				Rank           int
				Score          *float64
				Metrics, Parts map[string]*float64
			}
		}
		fromFixture(t, frame, "", &w)
		num := func(p *float64) float64 {
			if p == nil {
				return math.Inf(1)
			}
			return *p
		}
		nums := func(m map[string]*float64) map[string]float64 {
			out := map[string]float64{}
			for k, v := range m {
				out[k] = num(v)
			}
			return out
		}
		v := service.View{Board: w.Ranking, Window: ranking.Window(w.Window), Period: w.Period, WeightsVersion: w.WeightsVersion}
		for _, it := range w.Items {
			v.Items = append(v.Items, ranking.Ranked{Item: it.Item, Rank: it.Rank, Score: num(it.Score), Metrics: nums(it.Metrics), Parts: nums(it.Parts)})
		}
		return v
	}
	f := &fakeRankings{view: viewOf(fxw.server(t, "subscribed"))}
	env := startServer(t, Config{Rankings: f, MessageRate: fastMessages})
	c := dial(t, env.wsURL(), mustToken(t, "ada", nil))
	readFrame(t, c)
	var sub []byte
	for _, e := range fx.RankingClient {
		if e.Example == "subscribe" {
			sub = e.Frame
		}
	}
	writeText(t, c, sub)
	if got, want := readFrame(t, c).raw, fxw.server(t, "subscribed"); !bytes.Equal(got, want) {
		t.Errorf("subscribed:\n got %s\nwant %s", got, want)
	}
	f.setView(viewOf(fxw.server(t, "ranking.update")))
	env.sub.publish(trendingHour, []byte(`{}`))
	if got, want := readFrame(t, c).raw, fxw.server(t, "ranking.update"); !bytes.Equal(got, want) {
		t.Errorf("ranking.update:\n got %s\nwant %s", got, want)
	}
	writeJSONFrame(t, c, map[string]any{"type": "unsubscribe", "id": "r1", "ranking": "trending", "window": "hour"})
	if got, want := readFrame(t, c).raw, fxw.server(t, "unsubscribed"); !bytes.Equal(got, want) {
		t.Errorf("unsubscribed:\n got %s\nwant %s", got, want)
	}
}
