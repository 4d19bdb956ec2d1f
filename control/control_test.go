package control

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"go.uber.org/goleak"

	"github.com/matchgate/matchgate/internal/pgtest"
	"github.com/matchgate/matchgate/internal/pubsub"
	"github.com/matchgate/matchgate/internal/redistest"
	"github.com/matchgate/matchgate/matcher"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

// bothStores runs fn against the Redis stores (miniredis and real Redis)
// and the PostgreSQL stores.
func bothStores(t *testing.T, fn func(t *testing.T, bans BanStore, queues QueueStore)) {
	redistest.All(t, func(t *testing.T, rdb redis.UniversalClient, prefix string) {
		fn(t, NewRedisBans(rdb, prefix), NewRedisQueues(rdb, prefix))
	})
	t.Run("postgres", func(t *testing.T) {
		pool := pgtest.New(t)
		fn(t, NewPostgresBans(pool), NewPostgresQueues(pool))
	})
}

func TestBanStores(t *testing.T) {
	bothStores(t, func(t *testing.T, bans BanStore, _ QueueStore) {
		ctx := context.Background()
		now := time.Now().UTC().Truncate(time.Millisecond)
		until := now.Add(time.Hour)
		for _, b := range []Ban{
			{UserID: "mallory", Reason: "cheating", CreatedAt: now},
			{UserID: "eve", Reason: "", Until: &until, CreatedAt: now},
			{UserID: "mallory", Reason: "cheating, again", CreatedAt: now.Add(time.Second)},
			{UserID: `'; DROP TABLE bans; --`, Reason: `"]]) redis.call('FLUSHALL') --`, CreatedAt: now},
		} {
			if err := bans.PutBan(ctx, b); err != nil {
				t.Fatal(err)
			}
		}
		got, err := bans.Bans(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if len(got) != 3 || got[0].UserID != `'; DROP TABLE bans; --` || got[1].UserID != "eve" || got[2].UserID != "mallory" {
			t.Fatalf("bans = %+v", got)
		}
		if got[2].Reason != "cheating, again" || got[2].Until != nil || !got[2].CreatedAt.Equal(now.Add(time.Second)) {
			t.Fatalf("replaced ban = %+v", got[2])
		}
		if got[1].Until == nil || !got[1].Until.Equal(until) {
			t.Fatalf("temporary ban = %+v", got[1])
		}
		if found, err := bans.DeleteBan(ctx, "mallory"); err != nil || !found {
			t.Fatalf("delete: %v %v", found, err)
		}
		if found, err := bans.DeleteBan(ctx, "mallory"); err != nil || found {
			t.Fatalf("delete again: %v %v", found, err)
		}
		if got, _ := bans.Bans(ctx); len(got) != 2 {
			t.Fatalf("after delete: %+v", got)
		}
	})
}

func TestQueueStores(t *testing.T) {
	bothStores(t, func(t *testing.T, _ BanStore, queues QueueStore) {
		ctx := context.Background()
		if v, err := queues.QueuesVersion(ctx); err != nil || v != 0 {
			t.Fatalf("empty version: %d %v", v, err)
		}
		a, err := queues.PutQueue(ctx, "arena", json.RawMessage(`{"players":4,"deadline":"2m"}`), false)
		if err != nil {
			t.Fatal(err)
		}
		b, err := queues.PutQueue(ctx, "duel", nil, true)
		if err != nil {
			t.Fatal(err)
		}
		c, err := queues.PutQueue(ctx, "arena", json.RawMessage(`{"players":6}`), false)
		if err != nil {
			t.Fatal(err)
		}
		if !(a.Version < b.Version && b.Version < c.Version) || !b.Retired || b.Config != nil {
			t.Fatalf("versions %d %d %d, retired %+v", a.Version, b.Version, c.Version, b)
		}
		if v, _ := queues.QueuesVersion(ctx); v != c.Version {
			t.Fatalf("version = %d, want %d", v, c.Version)
		}
		list, err := queues.Queues(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if len(list) != 2 || list[0].Name != "duel" || list[1].Name != "arena" || !list[0].Retired {
			t.Fatalf("queues = %+v", list)
		}
		var cfg map[string]any
		if err := json.Unmarshal(list[1].Config, &cfg); err != nil || cfg["players"] != 6.0 {
			t.Fatalf("arena config = %s", list[1].Config)
		}
	})
}

func TestQueueStoreVersionsUnderConcurrency(t *testing.T) {
	bothStores(t, func(t *testing.T, _ BanStore, queues QueueStore) {
		ctx := context.Background()
		var wg sync.WaitGroup
		for i := range 20 {
			wg.Go(func() {
				name := []string{"a", "b", "c"}[i%3]
				if _, err := queues.PutQueue(ctx, name, json.RawMessage(`{"players":2}`), false); err != nil {
					t.Error(err)
				}
			})
		}
		wg.Wait()
		v, _ := queues.QueuesVersion(ctx)
		list, _ := queues.Queues(ctx)
		if maxVersion(list) != v || v < 20 {
			t.Fatalf("highest stored version %d, counter %d", maxVersion(list), v)
		}
	})
}

func base(t *testing.T) matcher.Config {
	t.Helper()
	c, err := matcher.ParseConfig([]byte(`
defaults: {deadline: 3m}
queues:
  - {name: duel, players: 2}
  - {name: ranked, players: 4, regions: [eu, na]}
`))
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func names(c matcher.Config) string {
	var s []string
	for _, q := range c.Queues {
		s = append(s, q.Name)
	}
	return strings.Join(s, ",")
}

func TestEffective(t *testing.T) {
	b := base(t)
	c, err := Effective(b, []QueueOverride{
		{Name: "arena", Config: json.RawMessage(`{"players":6,"kind":"room"}`), Version: 2},
		{Name: "duel", Retired: true, Version: 3},
		{Name: "ranked", Config: json.RawMessage(`{"players":3}`), Version: 1},
	})
	if err != nil {
		t.Fatal(err)
	}
	if names(c) != "ranked,arena" {
		t.Fatalf("queues = %s", names(c))
	}
	r := c.Queues[0]
	if r.Players != 3 || len(r.Regions) != 1 || r.Regions[0] != "global" || r.Deadline != 3*time.Minute {
		t.Fatalf("ranked replaced as a whole and inherits the file's defaults: %+v", r)
	}
	if a := c.Queues[1]; a.Players != 6 || a.Kind != matcher.KindRoom || a.Deadline != 3*time.Minute {
		t.Fatalf("arena = %+v", a)
	}
	// A retired queue comes back when stored again.
	c, err = Effective(b, []QueueOverride{
		{Name: "duel", Retired: true, Version: 1},
		{Name: "duel", Config: json.RawMessage(`{"players":2,"bots":true}`), Version: 2},
	})
	if err != nil || names(c) != "duel,ranked" || !c.Queues[0].Bots {
		t.Fatalf("revived duel: %s %v", names(c), err)
	}
	// The base is not modified.
	if b.Queues[0].Bots || names(b) != "duel,ranked" {
		t.Fatal("Effective modified its base")
	}

	for name, os := range map[string][]QueueOverride{
		"unknown field":  {{Name: "x", Config: json.RawMessage(`{"playres":4}`), Version: 1}},
		"duplicate key":  {{Name: "x", Config: json.RawMessage(`{"players":4,"players":5}`), Version: 1}},
		"other name":     {{Name: "x", Config: json.RawMessage(`{"name":"y"}`), Version: 1}},
		"invalid":        {{Name: "x", Config: json.RawMessage(`{"players":11}`), Version: 1}},
		"bad name":       {{Name: "X;DROP", Config: json.RawMessage(`{}`), Version: 1}},
		"bad region":     {{Name: "x", Config: json.RawMessage(`{"regions":["eu'--"]}`), Version: 1}},
		"no config":      {{Name: "x", Version: 1}},
		"nothing left":   {{Name: "duel", Retired: true, Version: 1}, {Name: "ranked", Retired: true, Version: 2}},
		"not an object":  {{Name: "x", Config: json.RawMessage(`[1,2]`), Version: 1}},
		"wrong duration": {{Name: "x", Config: json.RawMessage(`{"deadline":"soon"}`), Version: 1}},
	} {
		if c, err := Effective(b, os); err == nil {
			t.Errorf("%s: accepted: %s", name, names(c))
		}
	}
}

// fakeQueues is an in-memory QueueStore.
type fakeQueues struct {
	mu   sync.Mutex
	list []QueueOverride
	fail error
}

func (f *fakeQueues) PutQueue(_ context.Context, name string, config json.RawMessage, retired bool) (QueueOverride, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.fail != nil {
		return QueueOverride{}, f.fail
	}
	o := QueueOverride{Name: name, Config: config, Retired: retired, Version: maxVersion(f.list) + 1}
	for i := range f.list {
		if f.list[i].Name == name {
			f.list = append(f.list[:i], f.list[i+1:]...)
			break
		}
	}
	f.list = append(f.list, o)
	return o, nil
}

func (f *fakeQueues) Queues(context.Context) ([]QueueOverride, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]QueueOverride(nil), f.list...), f.fail
}

func (f *fakeQueues) QueuesVersion(context.Context) (int64, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return maxVersion(f.list), f.fail
}

func TestQueueWatcher(t *testing.T) {
	ctx := context.Background()
	store := &fakeQueues{}
	_, _ = store.PutQueue(ctx, "arena", json.RawMessage(`{"players":4}`), false)
	var changes atomic.Int32
	var last atomic.Value
	w, err := NewQueueWatcher(QueueWatcherConfig{Store: store, Base: base(t), Interval: time.Hour,
		OnChange: func(c matcher.Config) { changes.Add(1); last.Store(names(c)) }})
	if err != nil {
		t.Fatal(err)
	}
	c, err := w.Load(ctx)
	if err != nil || names(c) != "duel,ranked,arena" || names(w.Current()) != names(c) {
		t.Fatalf("Load: %s %v", names(c), err)
	}
	if err := w.Check(ctx); err != nil || changes.Load() != 0 {
		t.Fatalf("unchanged Check: %v, %d changes", err, changes.Load())
	}
	_, _ = store.PutQueue(ctx, "duel", nil, true)
	if err := w.Check(ctx); err != nil || changes.Load() != 1 || last.Load() != "ranked,arena" {
		t.Fatalf("after retire: %v %d %v", err, changes.Load(), last.Load())
	}
	// An invalid set is skipped (logged) and not retried until it changes.
	_, _ = store.PutQueue(ctx, "bad", json.RawMessage(`{"players":99}`), false)
	if err := w.Check(ctx); err != nil || changes.Load() != 1 || names(w.Current()) != "ranked,arena" {
		t.Fatalf("invalid: %v %d %s", err, changes.Load(), names(w.Current()))
	}
	_, _ = store.PutQueue(ctx, "bad", nil, true)
	if err := w.Check(ctx); err != nil || changes.Load() != 2 || names(w.Current()) != "ranked,arena" {
		t.Fatalf("fixed: %v %d %s", err, changes.Load(), names(w.Current()))
	}
	// Run reacts to Nudge long before its interval.
	runCtx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- w.Run(runCtx) }()
	_, _ = store.PutQueue(ctx, "arena", nil, true)
	w.Nudge()
	deadline := time.Now().Add(5 * time.Second)
	for changes.Load() != 3 && time.Now().Before(deadline) {
		time.Sleep(5 * time.Millisecond)
	}
	cancel()
	if err := <-done; err != nil || changes.Load() != 3 || last.Load() != "ranked" {
		t.Fatalf("nudged: %v %d %v", err, changes.Load(), last.Load())
	}
}

func TestBanList(t *testing.T) {
	ctx := context.Background()
	rdb := redistest.Mini(t)
	store := NewRedisBans(rdb, "t")
	now := time.Now()
	clock := func() time.Time { return now }
	soon := now.Add(time.Minute)
	_ = store.PutBan(ctx, Ban{UserID: "a", CreatedAt: now})
	_ = store.PutBan(ctx, Ban{UserID: "b", Until: &soon, CreatedAt: now})
	l, err := NewBanList(BanListConfig{Store: store, Now: func() time.Time { return clock() }})
	if err != nil {
		t.Fatal(err)
	}
	if l.Banned("a") {
		t.Fatal("banned before the first load")
	}
	if err := l.Reload(ctx); err != nil {
		t.Fatal(err)
	}
	if !l.Banned("a") || !l.Banned("b") || l.Banned("c") {
		t.Fatal("after reload")
	}
	now = now.Add(2 * time.Minute)
	if l.Banned("b") {
		t.Fatal("a lapsed ban still holds")
	}
	l.Apply(Ban{UserID: "c"})
	l.Lift("a")
	if !l.Banned("c") || l.Banned("a") {
		t.Fatal("Apply/Lift")
	}
	if err := l.Reload(ctx); err != nil || l.Len() != 1 || !l.Banned("a") {
		t.Fatalf("reload replaces: %v %d", err, l.Len())
	}
}

func TestBus(t *testing.T) {
	redistest.All(t, func(t *testing.T, rdb redis.UniversalClient, prefix string) {
		bus, err := NewBus(BusConfig{Redis: rdb, Prefix: prefix})
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithCancel(context.Background())
		got := make(chan Message, 10)
		ready := make(chan struct{})
		done := make(chan error, 1)
		go func() { done <- bus.Run(ctx, func(m Message) { got <- m }, ready) }()
		select {
		case <-ready:
		case <-time.After(5 * time.Second):
			t.Fatal("not subscribed")
		}
		// Garbage on the channel is dropped; resync is never taken from it.
		_ = pubsub.Publish(ctx, rdb, pubsub.Sharded(rdb), bus.Channel(), "not json").Err()
		_ = pubsub.Publish(ctx, rdb, pubsub.Sharded(rdb), bus.Channel(), `{"op":"resync"}`).Err()
		_ = pubsub.Publish(ctx, rdb, pubsub.Sharded(rdb), bus.Channel(), strings.Repeat("x", 5000)).Err()
		for _, m := range []Message{{Op: OpDisconnect, User: "u"}, {Op: OpDrain, Node: "n1"}, {Op: OpBan, User: "b", Ban: &Ban{UserID: "b"}}} {
			if err := bus.Publish(ctx, m); err != nil {
				t.Fatal(err)
			}
		}
		for _, want := range []string{"disconnect u", "drain n1", "ban b"} {
			select {
			case m := <-got:
				if s := m.Op + " " + m.User + m.Node; s != want {
					t.Fatalf("got %q, want %q", s, want)
				}
			case <-time.After(5 * time.Second):
				t.Fatalf("no %s", want)
			}
		}
		cancel()
		if err := <-done; err != nil {
			t.Fatal(err)
		}
	})
}

func TestAdmin(t *testing.T) {
	ctx := context.Background()
	rdb := redistest.Mini(t)
	bus, _ := NewBus(BusConfig{Redis: rdb, Prefix: "t"})
	bans := NewRedisBans(rdb, "t")
	list, _ := NewBanList(BanListConfig{Store: bans})
	queues := &fakeQueues{}
	a, err := NewAdmin(AdminConfig{Bans: bans, List: list, Queues: queues, Base: base(t), Bus: bus})
	if err != nil {
		t.Fatal(err)
	}
	code := func(err error) matcher.Code { return matcher.ErrorCode(err) }

	past := time.Now().Add(-time.Hour)
	for name, b := range map[string]Ban{
		"no user":       {},
		"control chars": {UserID: "a\x00b"},
		"long reason":   {UserID: "a", Reason: strings.Repeat("r", 257)},
		"past until":    {UserID: "a", Until: &past},
	} {
		if _, err := a.Ban(ctx, b); code(err) != matcher.CodeBadRequest {
			t.Errorf("%s: %v", name, err)
		}
	}
	b, err := a.Ban(ctx, Ban{UserID: "mallory", Reason: "spam"})
	if err != nil || b.CreatedAt.IsZero() || !list.Banned("mallory") {
		t.Fatalf("ban: %+v %v", b, err)
	}
	if got, _ := a.Bans(ctx); len(got) != 1 || got[0].UserID != "mallory" {
		t.Fatalf("bans = %+v", got)
	}
	if err := a.Unban(ctx, "mallory"); err != nil || list.Banned("mallory") {
		t.Fatalf("unban: %v", err)
	}
	if err := a.Unban(ctx, "mallory"); code(err) != matcher.CodeNotFound {
		t.Fatalf("unban again: %v", err)
	}

	if _, err := a.PutQueue(ctx, "arena", json.RawMessage(`{"players":4}`)); err != nil {
		t.Fatal(err)
	}
	for name, c := range map[string]struct{ name, body string }{
		"invalid":   {"arena", `{"players":1}`},
		"unknown":   {"arena", `{"colour":"red"}`},
		"bad name":  {"Arena!", `{}`},
		"other":     {"arena", `{"name":"duel"}`},
		"too large": {"arena", `{"regions":["` + strings.Repeat("a", MaxQueueConfigBytes) + `"]}`},
	} {
		if _, err := a.PutQueue(ctx, c.name, json.RawMessage(c.body)); code(err) != matcher.CodeBadRequest {
			t.Errorf("%s: %v", name, err)
		}
	}
	if _, err := a.RetireQueue(ctx, "nope"); code(err) != matcher.CodeNotFound {
		t.Fatalf("retire unknown: %v", err)
	}
	for _, q := range []string{"duel", "ranked"} {
		if _, err := a.RetireQueue(ctx, q); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := a.RetireQueue(ctx, "arena"); code(err) != matcher.CodeBadRequest {
		t.Fatalf("retiring the last queue: %v", err)
	}
	v, err := a.Queues(ctx)
	if err != nil || strings.Join(v.Effective, ",") != "arena" || len(v.Overrides) != 3 {
		t.Fatalf("view: %+v %v", v, err)
	}
	queues.fail = errors.New("down")
	if _, err := a.PutQueue(ctx, "arena", json.RawMessage(`{}`)); err == nil || code(err) != matcher.CodeInternal {
		t.Fatalf("store failure: %v", err)
	}
}
