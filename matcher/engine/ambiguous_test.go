package engine_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/url"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/redis/go-redis/v9"

	"github.com/matchgate/matchgate/internal/faultproxy"
	"github.com/matchgate/matchgate/internal/pgtest"
	"github.com/matchgate/matchgate/internal/redistest"
	"github.com/matchgate/matchgate/matcher"
	"github.com/matchgate/matchgate/matcher/engine"
	"github.com/matchgate/matchgate/matcher/ledger"
	"github.com/matchgate/matchgate/protocol"
)

// publisher is a Notifier that, as the gateway's does, deletes what it
// delivered from the outbox: what the relay drains after is what it missed.
type publisher struct {
	led   matcher.Ledger
	mu    sync.Mutex
	found map[string]int // match.found deliveries per user
}

func (p *publisher) Deliver(ctx context.Context, events []matcher.Event) {
	p.mu.Lock()
	defer p.mu.Unlock()
	ids := make([]int64, 0, len(events))
	for _, e := range events {
		countFound(p.found, e)
		ids = append(ids, e.ID)
	}
	_ = p.led.DeleteEvents(ctx, ids)
}

func countFound(into map[string]int, e matcher.Event) {
	var f struct{ Type string }
	if json.Unmarshal(protocol.Frame(e), &f) == nil && f.Type == protocol.FrameMatchFound {
		for _, u := range e.Users {
			into[u]++
		}
	}
}

// deliveredOnce checks that every user was told match.found exactly once,
// by the engine's publish or by the relay's drain of the outbox.
func deliveredOnce(t *testing.T, led matcher.Ledger, pub *publisher, users []string) {
	t.Helper()
	got := map[string]int{}
	pub.mu.Lock()
	for u, n := range pub.found {
		got[u] += n
	}
	pub.mu.Unlock()
	_, err := led.DrainOutbox(context.Background(), -time.Hour, 1000, func(es []matcher.Event) error {
		for _, e := range es {
			countFound(got, e)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, u := range users {
		if got[u] != 1 {
			t.Fatalf("match.found delivered %d times to %s (%v)", got[u], u, got)
		}
	}
}

// ambiguous is a Ledger whose batch commits misbehave while mode says so:
// "landed" commits and then answers an error (a lost reply), "lost" answers
// an error having written nothing, "lost once" does so for one commit and
// then lets the next through, "down" fails every commit and every
// match read (the record unreachable).
type ambiguous struct {
	matcher.Ledger
	mode    atomic.Value // string
	commits atomic.Int32
}

func (a *ambiguous) set(mode string) { a.mode.Store(mode) }

func (a *ambiguous) get() string {
	m, _ := a.mode.Load().(string)
	return m
}

func (a *ambiguous) CommitMatches(ctx context.Context, ms []matcher.Match, epoch int64) ([]matcher.CommitResult, error) {
	a.commits.Add(1)
	switch a.get() {
	case "landed":
		a.set("")
		if _, err := a.Ledger.CommitMatches(ctx, ms, epoch); err != nil {
			return nil, err
		}
		return nil, errors.New("connection reset by peer")
	case "lost once":
		a.set("")
		return nil, errors.New("connection reset by peer")
	case "lost", "down":
		return nil, errors.New("connection reset by peer")
	}
	return a.Ledger.CommitMatches(ctx, ms, epoch)
}

func (a *ambiguous) Match(ctx context.Context, id string) (matcher.Match, error) {
	if a.get() == "down" {
		return matcher.Match{}, errors.New("connection refused")
	}
	return a.Ledger.Match(ctx, id)
}

// ambiguousEngine is an engine of h's queue committing through led and
// publishing through a publisher.
func ambiguousEngine(t *testing.T, h *harness, led matcher.Ledger, alloc engine.Allocator) (*engine.Engine, *publisher) {
	t.Helper()
	pub := &publisher{led: led, found: map[string]int{}}
	e, err := engine.NewEngine(engine.EngineConfig{
		Deps:        engine.Deps{Pool: h.pool, Ledger: led, Allocator: alloc, Notifier: pub, Presence: h.seen, Now: h.clock},
		Queue:       h.q,
		Region:      "global",
		CommitRetry: []time.Duration{time.Millisecond, time.Millisecond},
	})
	if err != nil {
		t.Fatal(err)
	}
	return e, pub
}

func windowQueue() matcher.QueueConfig {
	return matcher.QueueConfig{Name: "q", Seats: matcher.Seats{Players: 2}, AcceptRules: matcher.AcceptRules{AcceptWindow: 20 * time.Second}}
}

// checkLanded asserts that the matches of tickets stand as committed: the
// tickets MATCHED and out of the pool, no server released, every match in
// the pending index, every player told match.found once.
func checkLanded(t *testing.T, h *harness, led matcher.Ledger, pub *publisher, alloc *fakeAllocator, tickets []matcher.Ticket) {
	t.Helper()
	ctx := context.Background()
	if rel := alloc.releasedIDs(); len(rel) != 0 {
		t.Fatalf("released the servers of %v, whose matches were committed", rel)
	}
	indexed, err := h.pool.PendingDue(ctx, "q:global", time.Time{}, 0)
	if err != nil {
		t.Fatal(err)
	}
	inIndex := map[string]bool{}
	for _, id := range indexed {
		inIndex[id] = true
	}
	var users []string
	for _, tk := range tickets {
		got := h.ticket(tk.ID)
		if got.Status != matcher.StatusMatched {
			t.Fatalf("ticket %s is %s, want MATCHED", tk.ID, got.Status)
		}
		if h.inPool("q:global", tk.ID) {
			t.Fatalf("MATCHED ticket %s is back in the pool", tk.ID)
		}
		if !inIndex[got.MatchID] {
			t.Fatalf("match %s is not in the pending index %v", got.MatchID, indexed)
		}
		users = append(users, tk.UserID)
	}
	deliveredOnce(t, led, pub, users)
}

// joinPairs joins n players in pairs of equal skill, as users u<first>….
// A round that reuses one record needs users of its own: a player whose
// match waits for accepts may not join again.
func joinPairs(h *harness, first, n int) []matcher.Ticket {
	var out []matcher.Ticket
	for i := range n {
		h.advance(time.Millisecond)
		out = append(out, h.join(fmt.Sprint("u", first+i), float64(100*(i/2))))
	}
	return out
}

// A commit that landed but answered an error: the matches stand, their
// servers are kept, their accept windows indexed, and their players told
// once (by the relay: the retry that learned of the commit wrote nothing).
func TestAmbiguousCommitThatLanded(t *testing.T) {
	for round := range 100 {
		amb := &ambiguous{Ledger: ledger.NewMemory()}
		h := newHarnessWith(t, windowQueue(), redistest.Mini(t), "mg", amb)
		alloc := &fakeAllocator{}
		eng, pub := ambiguousEngine(t, h, amb, alloc)
		tickets := joinPairs(h, 0, 6)
		amb.set("landed")
		res, err := eng.Tick(context.Background())
		checkLanded(t, h, amb, pub, alloc, tickets)
		if err != nil || res.Matches != 3 {
			t.Fatalf("round %d: tick = %+v, %v; want 3 matches", round, res, err)
		}
	}
}

// A commit that failed having written nothing: the retry commits it, and
// its events are published by the engine.
func TestAmbiguousCommitThatWasLost(t *testing.T) {
	amb := &ambiguous{Ledger: ledger.NewMemory()}
	h := newHarnessWith(t, windowQueue(), redistest.Mini(t), "mg", amb)
	alloc := &fakeAllocator{}
	eng, pub := ambiguousEngine(t, h, amb, alloc)
	tickets := joinPairs(h, 0, 4)
	amb.set("lost once") // the record answers again for the retry
	res, err := eng.Tick(context.Background())
	if err != nil || res.Matches != 2 {
		t.Fatalf("tick = %+v, %v; want 2 matches", res, err)
	}
	checkLanded(t, h, amb, pub, alloc, tickets)
}

// A commit every try of which failed, with the record readable and no
// match in it: nothing was written, and the servers go back and the
// players too.
func TestAmbiguousCommitProvedUnwritten(t *testing.T) {
	amb := &ambiguous{Ledger: ledger.NewMemory()}
	h := newHarnessWith(t, windowQueue(), redistest.Mini(t), "mg", amb)
	alloc := &fakeAllocator{}
	eng, _ := ambiguousEngine(t, h, amb, alloc)
	tickets := joinPairs(h, 0, 4)
	amb.set("lost")
	if _, err := eng.Tick(context.Background()); err == nil {
		t.Fatal("a pass whose commit was not written reported no error")
	}
	if got := len(alloc.releasedIDs()); got != 2 {
		t.Fatalf("released %d servers, want 2", got)
	}
	for _, tk := range tickets {
		if !h.inPool("q:global", tk.ID) {
			t.Fatalf("ticket %s not back in the pool", tk.ID)
		}
	}
}

// The record unreachable through every retry: nothing is released or
// requeued; the next pass learns that the commit landed and settles it.
func TestAmbiguousCommitSettledNextPass(t *testing.T) {
	amb := &ambiguous{Ledger: ledger.NewMemory()}
	h := newHarnessWith(t, windowQueue(), redistest.Mini(t), "mg", amb)
	alloc := &fakeAllocator{}
	tickets := joinPairs(h, 0, 4)
	// The first try lands, then the record is gone for the retries.
	var once sync.Once
	amb.set("landed")
	landed := &landThenDown{ambiguous: amb, after: func() { once.Do(func() { amb.set("down") }) }}
	eng, pub := ambiguousEngine(t, h, landed, alloc)
	if _, err := eng.Tick(context.Background()); err == nil {
		t.Fatal("a pass whose commit's outcome is unknown reported no error")
	}
	if rel := alloc.releasedIDs(); len(rel) != 0 {
		t.Fatalf("released %v while the outcome was unknown", rel)
	}
	for _, tk := range tickets {
		if h.inPool("q:global", tk.ID) {
			t.Fatalf("ticket %s requeued while its commit's outcome was unknown", tk.ID)
		}
	}
	amb.set("")
	res, err := eng.Tick(context.Background())
	if err != nil || res.Matches != 2 {
		t.Fatalf("next tick = %+v, %v; want the 2 matches settled", res, err)
	}
	checkLanded(t, h, amb, pub, alloc, tickets)
}

// landThenDown calls after once the wrapped ledger's commit has run.
type landThenDown struct {
	*ambiguous
	after func()
}

func (l *landThenDown) CommitMatches(ctx context.Context, ms []matcher.Match, epoch int64) ([]matcher.CommitResult, error) {
	defer l.after()
	return l.ambiguous.CommitMatches(ctx, ms, epoch)
}

// The reply of PostgreSQL's commit_matches is lost after it ran (a proxy
// cuts the connection): the engine learns from the record that the commit
// landed, keeps the servers, indexes the accept windows, leaves the players
// out of the pool, and each player is told once.
func TestAmbiguousCommitOnPostgres(t *testing.T) {
	ctx := context.Background()
	led, proxy := proxiedLedger(t)
	var rdb redis.UniversalClient = redistest.Real(t)
	for round := range 20 {
		h := newHarnessWith(t, windowQueue(), rdb, redistest.Prefix(t), led)
		alloc := &fakeAllocator{}
		eng, pub := ambiguousEngine(t, h, led, alloc)
		tickets := joinPairs(h, 6*round, 6)
		proxy.DropReply([]byte("committed"))
		res, err := eng.Tick(ctx)
		if proxy.Dropped() != round+1 {
			t.Fatalf("round %d: the proxy cut %d replies", round, proxy.Dropped())
		}
		checkLanded(t, h, led, pub, alloc, tickets)
		if err != nil || res.Matches != 3 {
			t.Fatalf("round %d: tick = %+v, %v; want 3 matches", round, res, err)
		}
	}
}

// PostgreSQL out of reach (a blackhole: every byte swallowed) through a
// commit and its retries: nothing is released or requeued; the next pass,
// with the record back, commits the matches and tells every player once.
func TestUnreachableCommitOnPostgresSettledNextPass(t *testing.T) {
	ctx := context.Background()
	led, proxy := proxiedLedger(t)
	h := newHarnessWith(t, windowQueue(), redistest.Real(t), redistest.Prefix(t), led)
	alloc := &fakeAllocator{}
	pub := &publisher{led: led, found: map[string]int{}}
	eng, err := engine.NewEngine(engine.EngineConfig{
		Deps:          engine.Deps{Pool: h.pool, Ledger: led, Allocator: alloc, Notifier: pub, Presence: h.seen, Now: h.clock},
		Queue:         h.q,
		Region:        "global",
		CommitTimeout: 200 * time.Millisecond,
		CommitRetry:   []time.Duration{time.Millisecond, time.Millisecond},
	})
	if err != nil {
		t.Fatal(err)
	}
	tickets := joinPairs(h, 0, 4)
	// The pass's reads are Redis's; the record goes silent for its commit.
	proxy.Blackhole()
	// The pass's own context may end: the commit and its retries are
	// bounded by the engine's budgets, not by it.
	tctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	if _, err := eng.Tick(tctx); err == nil {
		t.Fatal("a pass whose commit's outcome is unknown reported no error")
	}
	if rel := alloc.releasedIDs(); len(rel) != 0 {
		t.Fatalf("released %v while the record was out of reach", rel)
	}
	for _, tk := range tickets {
		if h.inPool("q:global", tk.ID) {
			t.Fatalf("ticket %s requeued while the record was out of reach", tk.ID)
		}
	}
	proxy.Pass()
	res, err := eng.Tick(ctx)
	if err != nil || res.Matches != 2 {
		t.Fatalf("next tick = %+v, %v; want the 2 matches committed", res, err)
	}
	checkLanded(t, h, led, pub, alloc, tickets)
}

// proxiedLedger is a PostgreSQL ledger in a fresh schema reached through a
// fault proxy.
func proxiedLedger(t *testing.T) (*ledger.Postgres, *faultproxy.Proxy) {
	t.Helper()
	u, err := url.Parse(pgtest.NewURL(t))
	if err != nil {
		t.Fatal(err)
	}
	host := u.Host
	if _, _, err := net.SplitHostPort(host); err != nil {
		host = net.JoinHostPort(host, "5432")
	}
	proxy := faultproxy.New(t, host)
	u.Host = proxy.Addr()
	ctx := context.Background()
	pg, err := pgxpool.New(ctx, u.String())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pg.Close)
	if err := ledger.Migrate(ctx, pg); err != nil {
		t.Fatal(err)
	}
	return ledger.NewPostgres(pg), proxy
}
