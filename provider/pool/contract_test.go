package pool

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/matchgate/matchgate/internal/redistest"
	"github.com/matchgate/matchgate/provider"
)

// t0 carries sub-millisecond digits, so that the suite sees both
// implementations keep milliseconds alike.
var t0 = time.Date(2026, 12, 1, 12, 0, 0, 123_456_789, time.UTC)

// ms is t as the pool returns it: to the millisecond, in UTC.
func ms(t time.Time) time.Time { return t.Truncate(time.Millisecond).UTC() }

// clock is a settable clock for WithClock.
type clock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *clock) Set(t time.Time) {
	c.mu.Lock()
	c.now = t
	c.mu.Unlock()
}

// newPoolFunc returns a pool on which every queue is empty, stamping last
// seen by c.
type newPoolFunc func(t *testing.T, c *clock) provider.Live

func TestContractRedis(t *testing.T) {
	redistest.All(t, func(t *testing.T, rdb redis.UniversalClient, prefix string) {
		n := 0
		testContract(t, func(_ *testing.T, c *clock) provider.Live {
			n++
			return NewRedis(rdb, fmt.Sprintf("%s-%d", prefix, n), WithClock(c.Now))
		})
	})
}

func TestContractMemory(t *testing.T) {
	testContract(t, func(_ *testing.T, c *clock) provider.Live { return NewMemory(WithClock(c.Now)) })
}

var attrsA = provider.Attributes{
	Languages:    []string{"en", "fr"},
	Specialties:  []string{"anxiety", "sleep"},
	SessionTypes: []string{"video"},
	Rating:       4.75,
}

var attrsB = provider.Attributes{Languages: []string{"de"}, Rating: 3.1}

func prov(user string, capacity int, attrs provider.Attributes) provider.Provider {
	return provider.Provider{UserID: user, Capacity: capacity, Attributes: attrs}
}

func mustOnline(t *testing.T, l provider.Live, queue string, p provider.Provider, session string, until time.Time) provider.Provider {
	t.Helper()
	got, err := l.Online(context.Background(), queue, p, session, until)
	if err != nil {
		t.Fatalf("online %s: %v", p.UserID, err)
	}
	return got
}

func mustGet(t *testing.T, l provider.Live, queue, user string, now time.Time) provider.Provider {
	t.Helper()
	p, ok, err := l.Get(context.Background(), queue, user, now)
	if err != nil || !ok {
		t.Fatalf("get %s = %v, %v", user, ok, err)
	}
	return p
}

func mustHold(t *testing.T, l provider.Live, queue, user, id string, now time.Time, want bool) {
	t.Helper()
	ok, err := l.Hold(context.Background(), queue, user, id, now)
	if err != nil || ok != want {
		t.Fatalf("hold %s on %s = %v, %v; want %v", id, user, ok, err, want)
	}
}

func mustRelease(t *testing.T, l provider.Live, queue, user, id string) {
	t.Helper()
	if err := l.Release(context.Background(), queue, user, id); err != nil {
		t.Fatalf("release %s on %s: %v", id, user, err)
	}
}

// check compares every field of a provider; held is the sorted held list.
func check(t *testing.T, got provider.Provider, queue, user string, capacity int, attrs provider.Attributes, online bool, held []string, lastSeen time.Time) {
	t.Helper()
	if held == nil {
		held = []string{}
	}
	switch {
	case got.UserID != user || got.Queue != queue:
		t.Fatalf("provider %s/%s, want %s/%s", got.Queue, got.UserID, queue, user)
	case got.Capacity != capacity:
		t.Fatalf("%s: capacity %d, want %d", user, got.Capacity, capacity)
	case !reflect.DeepEqual(got.Attributes, attrs):
		t.Fatalf("%s: attributes %+v, want %+v", user, got.Attributes, attrs)
	case got.Online != online:
		t.Fatalf("%s: online %v, want %v", user, got.Online, online)
	case !slices.Equal(got.Held, held) || got.Used != len(held):
		t.Fatalf("%s: used %d held %v, want %v", user, got.Used, got.Held, held)
	case !got.LastSeen.Equal(lastSeen):
		t.Fatalf("%s: last seen %v, want %v", user, got.LastSeen, lastSeen)
	case !got.LastSeen.IsZero() && got.LastSeen.Location() != time.UTC:
		t.Fatalf("%s: last seen in %v, want UTC", user, got.LastSeen.Location())
	}
}

func testContract(t *testing.T, newPool newPoolFunc) {
	ctx := context.Background()

	t.Run("OnlineStoresAndReplaces", func(t *testing.T) {
		c := &clock{now: t0}
		l := newPool(t, c)
		const q = "care"
		// An until in another zone is the same instant.
		got := mustOnline(t, l, q, prov("u1", 3, attrsA), "s1", t0.Add(30*time.Second).In(time.FixedZone("x", 3600)))
		check(t, got, q, "u1", 3, attrsA, true, nil, ms(t0))
		check(t, mustGet(t, l, q, "u1", t0), q, "u1", 3, attrsA, true, nil, ms(t0))
		mustHold(t, l, q, "u1", "a2", t0, true)
		mustHold(t, l, q, "u1", "a1", t0, true)

		// A second Online replaces capacity, attributes, session and until,
		// and keeps the held slots.
		c.Set(t0.Add(5 * time.Second))
		got = mustOnline(t, l, q, prov("u1", 5, attrsB), "s2", t0.Add(60*time.Second))
		check(t, got, q, "u1", 5, attrsB, true, []string{"a1", "a2"}, ms(t0.Add(5*time.Second)))
		at := t0.Add(45 * time.Second) // past the first until, before the second
		check(t, mustGet(t, l, q, "u1", at), q, "u1", 5, attrsB, true, []string{"a1", "a2"}, ms(t0.Add(5*time.Second)))
		if ok, err := l.Offline(ctx, q, "u1", "s1", at); err != nil || ok {
			t.Fatalf("offline by the replaced session = %v, %v", ok, err)
		}
		if !mustGet(t, l, q, "u1", at).Online {
			t.Fatal("the replaced session took it offline")
		}

		// Zero attributes round-trip as zero.
		check(t, mustOnline(t, l, q, prov("u2", 0, provider.Attributes{}), "s", t0.Add(time.Minute)),
			q, "u2", 0, provider.Attributes{}, true, nil, ms(t0.Add(5*time.Second)))

		// Refused: a negative capacity, an empty user id, a bad queue; none
		// creates anything.
		if _, err := l.Online(ctx, q, prov("u3", -1, attrsA), "s", t0.Add(time.Minute)); err == nil {
			t.Fatal("negative capacity accepted")
		}
		if _, err := l.Online(ctx, q, prov("", 1, attrsA), "s", t0.Add(time.Minute)); err == nil {
			t.Fatal("empty user id accepted")
		}
		if _, err := l.Online(ctx, "", prov("u4", 1, attrsA), "s", t0.Add(time.Minute)); err == nil {
			t.Fatal("empty queue accepted")
		}
		if _, err := l.Online(ctx, "a{b", prov("u4", 1, attrsA), "s", t0.Add(time.Minute)); err == nil {
			t.Fatal("queue with a brace accepted")
		}
		if _, ok, err := l.Get(ctx, q, "u3", t0); err != nil || ok {
			t.Fatalf("refused online created u3: %v, %v", ok, err)
		}
		if snap, err := l.Snapshot(ctx, q, t0); err != nil || len(snap) != 2 {
			t.Fatalf("snapshot = %d providers, %v; want 2", len(snap), err)
		}
	})

	t.Run("OnlineJudgedAtNow", func(t *testing.T) {
		l := newPool(t, &clock{now: t0})
		const q = "lapse"
		until := t0.Add(10 * time.Second)
		mustOnline(t, l, q, prov("u1", 2, attrsA), "s", until)
		before := until.Add(-time.Millisecond)
		if p := mustGet(t, l, q, "u1", before); !p.Online || p.Free() != 2 {
			t.Fatalf("1 ms before until: online %v free %d", p.Online, p.Free())
		}
		for _, now := range []time.Time{until, until.Add(time.Hour)} {
			p := mustGet(t, l, q, "u1", now)
			if p.Online || p.Free() != 0 {
				t.Fatalf("at %v: online %v free %d", now, p.Online, p.Free())
			}
			snap, err := l.Snapshot(ctx, q, now)
			if err != nil || len(snap) != 1 || snap[0].Online {
				t.Fatalf("snapshot at %v = %+v, %v", now, snap, err)
			}
			mustHold(t, l, q, "u1", "late", now, false)
		}
		mustHold(t, l, q, "u1", "early", before, true)
		// A provider online until now or earlier from the start is offline.
		mustOnline(t, l, q, prov("u2", 2, attrsA), "s", t0)
		if mustGet(t, l, q, "u2", t0).Online {
			t.Fatal("online until now counts as online")
		}
		mustHold(t, l, q, "u2", "x", t0, false)
	})

	t.Run("Update", func(t *testing.T) {
		c := &clock{now: t0}
		l := newPool(t, c)
		const q = "upd"
		now := t0.Add(time.Second)
		if _, err := l.Update(ctx, q, "nobody", 3, &attrsA, now); !errors.Is(err, provider.ErrOffline) {
			t.Fatalf("update of an unknown provider: %v", err)
		}
		if _, err := l.Update(ctx, q, "", 3, nil, now); err == nil || errors.Is(err, provider.ErrOffline) {
			t.Fatalf("update of an empty user id: %v", err)
		}
		mustOnline(t, l, q, prov("u1", 3, attrsA), "s", t0.Add(time.Minute))

		p, err := l.Update(ctx, q, "u1", -1, nil, now)
		if err != nil {
			t.Fatalf("update nothing: %v", err)
		}
		check(t, p, q, "u1", 3, attrsA, true, nil, ms(t0))
		if p, err = l.Update(ctx, q, "u1", 2, nil, now); err != nil {
			t.Fatalf("update capacity: %v", err)
		}
		check(t, p, q, "u1", 2, attrsA, true, nil, ms(t0))
		if p, err = l.Update(ctx, q, "u1", -1, &attrsB, now); err != nil {
			t.Fatalf("update attributes: %v", err)
		}
		check(t, p, q, "u1", 2, attrsB, true, nil, ms(t0))
		check(t, mustGet(t, l, q, "u1", now), q, "u1", 2, attrsB, true, nil, ms(t0))

		// A capacity lowered below the slots held: no new hold, none taken.
		mustHold(t, l, q, "u1", "a1", now, true)
		mustHold(t, l, q, "u1", "a2", now, true)
		if p, err = l.Update(ctx, q, "u1", 1, nil, now); err != nil {
			t.Fatalf("lower capacity: %v", err)
		}
		check(t, p, q, "u1", 1, attrsB, true, []string{"a1", "a2"}, ms(t0))
		if p.Free() != 0 {
			t.Fatalf("free %d past capacity", p.Free())
		}
		mustHold(t, l, q, "u1", "a3", now, false)
		mustHold(t, l, q, "u1", "a1", now, true) // held already
		mustRelease(t, l, q, "u1", "a1")
		mustHold(t, l, q, "u1", "a3", now, false) // 1 held of 1
		mustRelease(t, l, q, "u1", "a2")
		mustHold(t, l, q, "u1", "a3", now, true)
		check(t, mustGet(t, l, q, "u1", now), q, "u1", 1, attrsB, true, []string{"a3"}, ms(t0))

		// Lapsed, then offline: refused, nothing changed.
		if _, err := l.Update(ctx, q, "u1", 9, &attrsA, t0.Add(time.Minute)); !errors.Is(err, provider.ErrOffline) {
			t.Fatalf("update of a lapsed provider: %v", err)
		}
		if ok, err := l.Offline(ctx, q, "u1", "", now); err != nil || !ok {
			t.Fatalf("offline = %v, %v", ok, err)
		}
		if _, err := l.Update(ctx, q, "u1", 9, &attrsA, now); !errors.Is(err, provider.ErrOffline) {
			t.Fatalf("update of an offline provider: %v", err)
		}
		check(t, mustGet(t, l, q, "u1", now), q, "u1", 1, attrsB, false, []string{"a3"}, ms(now))
	})

	t.Run("Offline", func(t *testing.T) {
		c := &clock{now: t0}
		l := newPool(t, c)
		const q = "off"
		until := t0.Add(time.Minute)
		mustOnline(t, l, q, prov("u1", 2, attrsA), "s1", until)
		mustHold(t, l, q, "u1", "a1", t0, true)
		now := t0.Add(10 * time.Second)

		if ok, err := l.Offline(ctx, q, "nobody", "", now); err != nil || ok {
			t.Fatalf("offline of an unknown provider = %v, %v", ok, err)
		}
		if _, ok, _ := l.Get(ctx, q, "nobody", now); ok {
			t.Fatal("offline created a provider")
		}
		// The wrong session changes nothing.
		if ok, err := l.Offline(ctx, q, "u1", "s2", now); err != nil || ok {
			t.Fatalf("offline by another session = %v, %v", ok, err)
		}
		check(t, mustGet(t, l, q, "u1", now), q, "u1", 2, attrsA, true, []string{"a1"}, ms(t0))
		// The right session: offline, held slots kept, last seen at now.
		if ok, err := l.Offline(ctx, q, "u1", "s1", now); err != nil || !ok {
			t.Fatalf("offline by its session = %v, %v", ok, err)
		}
		snap, err := l.Snapshot(ctx, q, now)
		if err != nil || len(snap) != 1 {
			t.Fatalf("snapshot = %+v, %v", snap, err)
		}
		check(t, snap[0], q, "u1", 2, attrsA, false, []string{"a1"}, ms(now))
		mustHold(t, l, q, "u1", "a2", now, false)
		// Not online any more: false, and last seen stays.
		if ok, err := l.Offline(ctx, q, "u1", "", now.Add(time.Second)); err != nil || ok {
			t.Fatalf("second offline = %v, %v", ok, err)
		}
		check(t, mustGet(t, l, q, "u1", now), q, "u1", 2, attrsA, false, []string{"a1"}, ms(now))
		// The held slot is still released as usual.
		mustRelease(t, l, q, "u1", "a1")
		check(t, mustGet(t, l, q, "u1", now), q, "u1", 2, attrsA, false, nil, ms(now))

		// "" takes any session offline.
		mustOnline(t, l, q, prov("u2", 1, attrsB), "s9", until)
		if ok, err := l.Offline(ctx, q, "u2", "", now); err != nil || !ok {
			t.Fatalf("offline with no session = %v, %v", ok, err)
		}
		check(t, mustGet(t, l, q, "u2", now), q, "u2", 1, attrsB, false, nil, ms(now))

		// A lapsed provider's session still ends its hold (true), and last
		// seen stays its last refresh; a late refresh does not revive it.
		mustOnline(t, l, q, prov("u3", 1, attrsB), "s3", t0.Add(time.Second))
		late := t0.Add(5 * time.Second)
		if ok, err := l.Offline(ctx, q, "u3", "s3", late); err != nil || !ok {
			t.Fatalf("offline of a lapsed provider = %v, %v", ok, err)
		}
		if err := l.Refresh(ctx, q, []string{"u3"}, "s3", late.Add(time.Minute)); err != nil {
			t.Fatalf("refresh: %v", err)
		}
		check(t, mustGet(t, l, q, "u3", late), q, "u3", 1, attrsB, false, nil, ms(t0))
	})

	t.Run("Refresh", func(t *testing.T) {
		c := &clock{now: t0}
		l := newPool(t, c)
		const q = "ref"
		until := t0.Add(10 * time.Second)
		mustOnline(t, l, q, prov("a", 1, attrsA), "s1", until)
		mustOnline(t, l, q, prov("b", 1, attrsA), "s1", until)
		mustOnline(t, l, q, prov("c", 1, attrsA), "s2", until)
		mustOnline(t, l, q, prov("d", 1, attrsA), "s1", until)
		if ok, err := l.Offline(ctx, q, "d", "s1", t0); err != nil || !ok {
			t.Fatalf("offline d = %v, %v", ok, err)
		}

		c.Set(t0.Add(8 * time.Second))
		later := t0.Add(20 * time.Second)
		if err := l.Refresh(ctx, q, []string{"a", "b", "c", "d", "nobody"}, "s1", later); err != nil {
			t.Fatalf("refresh: %v", err)
		}
		at := t0.Add(15 * time.Second) // past the first until
		check(t, mustGet(t, l, q, "a", at), q, "a", 1, attrsA, true, nil, ms(t0.Add(8*time.Second)))
		check(t, mustGet(t, l, q, "b", at), q, "b", 1, attrsA, true, nil, ms(t0.Add(8*time.Second)))
		check(t, mustGet(t, l, q, "c", at), q, "c", 1, attrsA, false, nil, ms(t0)) // another session
		check(t, mustGet(t, l, q, "d", at), q, "d", 1, attrsA, false, nil, ms(t0)) // offline
		if _, ok, _ := l.Get(ctx, q, "nobody", at); ok {
			t.Fatal("refresh created a provider")
		}
		mustHold(t, l, q, "a", "x", at, true)
		mustHold(t, l, q, "c", "x", at, false)

		// A delayed refresh with an earlier until shortens nothing.
		if err := l.Refresh(ctx, q, []string{"a"}, "s1", t0.Add(12*time.Second)); err != nil {
			t.Fatalf("refresh: %v", err)
		}
		if !mustGet(t, l, q, "a", at).Online {
			t.Fatal("an earlier until shortened the presence")
		}
		// The session that holds a lapsed provider brings it back.
		if err := l.Refresh(ctx, q, []string{"c"}, "s2", t0.Add(time.Minute)); err != nil {
			t.Fatalf("refresh: %v", err)
		}
		if !mustGet(t, l, q, "c", at).Online {
			t.Fatal("its own session did not refresh a lapsed provider")
		}
		if err := l.Refresh(ctx, q, nil, "s1", later); err != nil {
			t.Fatalf("refresh of nobody: %v", err)
		}

		// More users than a script call's chunk.
		const n = chunk + 300
		ids := make([]string, n)
		for i := range ids {
			ids[i] = fmt.Sprintf("m%04d", i)
			mustOnline(t, l, q, prov(ids[i], 1, provider.Attributes{}), "big", until)
		}
		if err := l.Refresh(ctx, q, ids, "big", later); err != nil {
			t.Fatalf("refresh of %d: %v", n, err)
		}
		snap, err := l.Snapshot(ctx, q, at)
		if err != nil {
			t.Fatalf("snapshot: %v", err)
		}
		online := 0
		for _, p := range snap {
			if p.Online {
				online++
			}
		}
		if online != n+3 { // a, b, c and the chunk's
			t.Fatalf("%d online after a big refresh, want %d", online, n+3)
		}
	})

	t.Run("Hold", func(t *testing.T) {
		l := newPool(t, &clock{now: t0})
		const q = "hold"
		now := t0.Add(time.Second)
		mustOnline(t, l, q, prov("u1", 2, attrsA), "s", t0.Add(time.Minute))
		mustHold(t, l, q, "u1", "a1", now, true)
		mustHold(t, l, q, "u1", "a1", now, true) // idempotent
		check(t, mustGet(t, l, q, "u1", now), q, "u1", 2, attrsA, true, []string{"a1"}, ms(t0))
		mustHold(t, l, q, "u1", "a2", now, true)
		mustHold(t, l, q, "u1", "a3", now, false) // at capacity
		mustHold(t, l, q, "u1", "a2", now, true)  // held already, at capacity
		check(t, mustGet(t, l, q, "u1", now), q, "u1", 2, attrsA, true, []string{"a1", "a2"}, ms(t0))

		mustHold(t, l, q, "nobody", "a1", now, false)
		if _, ok, _ := l.Get(ctx, q, "nobody", now); ok {
			t.Fatal("hold created a provider")
		}
		mustOnline(t, l, q, prov("zero", 0, attrsA), "s", t0.Add(time.Minute))
		mustHold(t, l, q, "zero", "a1", now, false)

		// Offline: no new hold; one already held is still true.
		if ok, err := l.Offline(ctx, q, "u1", "s", now); err != nil || !ok {
			t.Fatalf("offline = %v, %v", ok, err)
		}
		mustRelease(t, l, q, "u1", "a2")
		mustHold(t, l, q, "u1", "a2", now, false)
		mustHold(t, l, q, "u1", "a1", now, true)
		check(t, mustGet(t, l, q, "u1", now), q, "u1", 2, attrsA, false, []string{"a1"}, ms(now))

		if _, err := l.Hold(ctx, q, "u1", "", now); err == nil {
			t.Fatal("empty assignment id accepted")
		}
		if _, err := l.Hold(ctx, q, "", "a9", now); err == nil {
			t.Fatal("empty user id accepted")
		}
		// Another queue is another pool.
		mustHold(t, l, "hold2", "u1", "a9", now, false)
	})

	t.Run("Release", func(t *testing.T) {
		l := newPool(t, &clock{now: t0})
		const q = "rel"
		mustOnline(t, l, q, prov("u1", 1, attrsA), "s", t0.Add(time.Minute))
		mustHold(t, l, q, "u1", "a1", t0, true)
		mustHold(t, l, q, "u1", "a2", t0, false)
		mustRelease(t, l, q, "u1", "nope")
		mustRelease(t, l, q, "nobody", "a1")
		mustHold(t, l, q, "u1", "a2", t0, false)
		mustRelease(t, l, q, "u1", "a1")
		mustRelease(t, l, q, "u1", "a1") // twice
		check(t, mustGet(t, l, q, "u1", t0), q, "u1", 1, attrsA, true, nil, ms(t0))
		mustHold(t, l, q, "u1", "a2", t0, true)
		if _, ok, _ := l.Get(ctx, q, "nobody", t0); ok {
			t.Fatal("release created a provider")
		}
		if err := l.Release(ctx, q, "u1", ""); err == nil {
			t.Fatal("empty assignment id accepted")
		}
	})

	t.Run("Sync", func(t *testing.T) {
		c := &clock{now: t0}
		l := newPool(t, c)
		const q = "sync"
		// An unknown provider is created offline, with capacity 0.
		if err := l.Sync(ctx, q, "u1", []string{"b", "a", "a"}); err != nil {
			t.Fatalf("sync: %v", err)
		}
		check(t, mustGet(t, l, q, "u1", t0), q, "u1", 0, provider.Attributes{}, false, []string{"a", "b"}, time.Time{})
		mustHold(t, l, q, "u1", "c", t0, false)
		mustHold(t, l, q, "u1", "a", t0, true) // held already

		// Online keeps what Sync set; Sync sets exactly, even past capacity.
		mustOnline(t, l, q, prov("u1", 2, attrsA), "s", t0.Add(time.Minute))
		check(t, mustGet(t, l, q, "u1", t0), q, "u1", 2, attrsA, true, []string{"a", "b"}, ms(t0))
		if err := l.Sync(ctx, q, "u1", []string{"x", "y", "z"}); err != nil {
			t.Fatalf("sync: %v", err)
		}
		check(t, mustGet(t, l, q, "u1", t0), q, "u1", 2, attrsA, true, []string{"x", "y", "z"}, ms(t0))
		mustHold(t, l, q, "u1", "a", t0, false)
		if err := l.Sync(ctx, q, "u1", nil); err != nil {
			t.Fatalf("sync to nothing: %v", err)
		}
		check(t, mustGet(t, l, q, "u1", t0), q, "u1", 2, attrsA, true, nil, ms(t0))
		mustHold(t, l, q, "u1", "a", t0, true)

		// More ids than one SADD takes.
		many := make([]string, 2500)
		for i := range many {
			many[i] = fmt.Sprintf("m%05d", i)
		}
		if err := l.Sync(ctx, q, "u2", many); err != nil {
			t.Fatalf("sync of %d: %v", len(many), err)
		}
		check(t, mustGet(t, l, q, "u2", t0), q, "u2", 0, provider.Attributes{}, false, many, time.Time{})
		if err := l.Sync(ctx, q, "u3", []string{"ok", ""}); err == nil {
			t.Fatal("empty assignment id accepted")
		}
		if _, ok, _ := l.Get(ctx, q, "u3", t0); ok {
			t.Fatal("a refused sync created a provider")
		}
	})

	t.Run("Snapshot", func(t *testing.T) {
		c := &clock{now: t0}
		l := newPool(t, c)
		const q = "snap"
		if snap, err := l.Snapshot(ctx, q, t0); err != nil || len(snap) != 0 {
			t.Fatalf("empty snapshot = %+v, %v", snap, err)
		}
		const n = 60
		users := make([]string, n)
		for i := range users {
			users[i] = fmt.Sprintf("u%02d", i)
		}
		rand.New(rand.NewPCG(7, 9)).Shuffle(n, func(i, j int) { users[i], users[j] = users[j], users[i] })
		for i, u := range users {
			c.Set(t0.Add(time.Duration(i) * time.Millisecond))
			mustOnline(t, l, q, prov(u, 3, attrsA), "s", t0.Add(time.Duration(i)*time.Second))
			for k := range i % 4 {
				mustHold(t, l, q, u, fmt.Sprintf("%s-%d", u, 3-k), t0, k < 3)
			}
		}
		if err := l.Sync(ctx, q, "a-synced", []string{"z", "y"}); err != nil {
			t.Fatalf("sync: %v", err)
		}
		mustOnline(t, l, "snap-other", prov("other", 1, attrsB), "s", t0.Add(time.Hour))

		now := t0.Add(30 * time.Second)
		snap, err := l.Snapshot(ctx, q, now)
		if err != nil || len(snap) != n+1 {
			t.Fatalf("snapshot = %d providers, %v; want %d", len(snap), err, n+1)
		}
		if !slices.IsSortedFunc(snap, func(a, b provider.Provider) int { return strings.Compare(a.UserID, b.UserID) }) {
			t.Fatal("snapshot not sorted by user id")
		}
		check(t, snap[0], q, "a-synced", 0, provider.Attributes{}, false, []string{"y", "z"}, time.Time{})
		for i, u := range users {
			j := slices.IndexFunc(snap, func(p provider.Provider) bool { return p.UserID == u })
			if j < 0 {
				t.Fatalf("%s missing from the snapshot", u)
			}
			var held []string
			for k := range min(i%4, 3) {
				held = append(held, fmt.Sprintf("%s-%d", u, 3-k))
			}
			slices.Sort(held)
			check(t, snap[j], q, u, 3, attrsA, i > 30, held, ms(t0.Add(time.Duration(i)*time.Millisecond)))
			// Get agrees with the snapshot.
			if g := mustGet(t, l, q, u, now); !reflect.DeepEqual(g, snap[j]) {
				t.Fatalf("get %+v, snapshot %+v", g, snap[j])
			}
		}
	})
}
