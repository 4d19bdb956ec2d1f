package line

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/matchgate/matchgate/admission"
	"github.com/matchgate/matchgate/internal/redistest"
)

// The keys are the package doc's, all under the queue's hash tag; those
// that record instants expire a little after them, the others never.
func TestKeyLayout(t *testing.T) {
	redistest.All(t, func(t *testing.T, rdb redis.UniversalClient, prefix string) {
		ctx := context.Background()
		l := NewRedis(rdb, prefix, WithAckedFor(30*time.Second))
		const q = "sale:eu"
		mustAdd(t, l, q, place(q, "a", 1), place(q, "b", 2), place(q, "c", 3))
		tok, err := l.AcquireLease(ctx, q, "adm-1", t0, 4*time.Second, 0)
		if err != nil || tok != 1 {
			t.Fatalf("acquire = %d, %v", tok, err)
		}
		if got, _, err := l.Take(ctx, q, tok, 2, 10, t0); err != nil || len(got) != 2 {
			t.Fatalf("take = %+v, %v", got, err)
		}
		if err := l.Ack(ctx, q, []string{"a"}); err != nil {
			t.Fatal(err)
		}

		keys, err := rdb.Keys(ctx, prefix+"*").Result()
		if err != nil {
			t.Fatal(err)
		}
		slices.Sort(keys)
		var want []string
		for _, s := range []string{"admitted", "fence", "lease", "line", "passed", "proc", "seen", "window", "window:n"} {
			want = append(want, prefix+":{adm:sale:eu}:"+s)
		}
		if !slices.Equal(keys, want) {
			t.Fatalf("keys %v, want %v", keys, want)
		}
		if l.Key(q, "line") != want[3] {
			t.Fatalf("Key = %q", l.Key(q, "line"))
		}
		// One hash tag: every key's first {…} is the queue's.
		for _, k := range keys {
			if i, j := strings.IndexByte(k, '{'), strings.IndexByte(k, '}'); k[i+1:j] != "adm:"+q {
				t.Fatalf("key %s has hash tag %q", k, k[i+1:j])
			}
		}

		key := func(s string) string { return l.Key(q, s) }
		if v := rdb.Get(ctx, key("lease")).Val(); v != "adm-1 1 "+msTime(t0.Add(4*time.Second)) {
			t.Fatalf("lease value %q", v)
		}
		// b was seen at its entry, T: processing keeps it for a return.
		if v := rdb.HGet(ctx, key("proc"), "b").Val(); v != "2 "+msTime(t0)+" "+msTime(t0) {
			t.Fatalf("processing value %q", v)
		}
		if v := rdb.ZRangeWithScores(ctx, key("seen"), 0, -1).Val(); len(v) != 1 || v[0].Member != "c" || v[0].Score != float64(t0.UnixMilli()) {
			t.Fatalf("seen %+v, want c alone at T", v)
		}
		if v := rdb.Get(ctx, key("passed")).Val(); v != "2" {
			t.Fatalf("passed %q", v)
		}
		if v := rdb.ZRangeWithScores(ctx, key("window"), 0, -1).Val(); len(v) != 1 || v[0].Score != float64(t0.UnixMilli()) || v[0].Member != "1:2" {
			t.Fatalf("window %+v", v)
		}
		if v := rdb.ZScore(ctx, key("admitted"), "1").Val(); v != float64(t0.UnixMilli()) {
			t.Fatalf("admitted score %v", v)
		}
		for _, c := range []struct {
			suffix string
			lo, hi time.Duration
		}{
			{"lease", 4 * time.Second, 4*time.Second + expirySlack},
			{"window", span + lag, span + lag + expirySlack},
			{"window:n", span + lag, span + lag + expirySlack},
			{"admitted", 30 * time.Second, 30*time.Second + expirySlack},
		} {
			if ttl := rdb.PTTL(ctx, key(c.suffix)).Val(); ttl <= c.lo || ttl > c.hi {
				t.Fatalf("%s expires in %v, want within (%v, %v]", c.suffix, ttl, c.lo, c.hi)
			}
		}
		for _, s := range []string{"line", "proc", "fence", "seen", "passed"} {
			if ttl := rdb.PTTL(ctx, key(s)).Val(); ttl >= 0 {
				t.Fatalf("%s expires in %v", s, ttl)
			}
		}
	})
}

// A waiter in processing written before presence existed ("<seq> <taken
// at>") is settled alike and, returned, is seen at its take.
func TestProcessingWithoutASeenInstant(t *testing.T) {
	redistest.All(t, func(t *testing.T, rdb redis.UniversalClient, prefix string) {
		ctx := context.Background()
		l := NewRedis(rdb, prefix)
		const q = "old"
		at := msTime(t0.Add(time.Second))
		if err := rdb.HSet(ctx, l.Key(q, "proc"), "a", "7 "+at, "b", "8 "+at).Err(); err != nil {
			t.Fatal(err)
		}
		st, err := l.Stale(ctx, q, t0.Add(time.Hour))
		want := []admission.Taken{{UserID: "a", Seq: 7, At: t0.Add(time.Second)}, {UserID: "b", Seq: 8, At: t0.Add(time.Second)}}
		if err != nil || !equalTaken(st, want) {
			t.Fatalf("stale = %+v, %v", st, err)
		}
		if err := l.Ack(ctx, q, []string{"b"}); err != nil {
			t.Fatal(err)
		}
		if err := l.Return(ctx, q, st[:1]); err != nil {
			t.Fatal(err)
		}
		if got, _ := l.Idle(ctx, q, t0.Add(time.Second), 10); len(got) != 0 {
			t.Fatalf("idle before the take = %v", got)
		}
		if got, _ := l.Idle(ctx, q, t0.Add(time.Second+time.Millisecond), 10); !slices.Equal(got, []string{"a"}) {
			t.Fatalf("idle after the take = %v", got)
		}
	})
}

// A part of a long Ranks read after takes is told as of the first part's
// counter: rank - (passed - first's passed) is what it was then.
func TestAppendRanksShiftsToTheFirstPartsCounter(t *testing.T) {
	got := appendRanks(nil, 90, []int64{5, -1, 0}, 3)
	want := []admission.Rank{{Rank: 8, Total: 93, OK: true}, {}, {Rank: 3, Total: 93, OK: true}}
	if !slices.Equal(got, want) {
		t.Fatalf("shifted by 3 takes: %+v, want %+v", got, want)
	}
	// A return between parts (a negative shift) never makes a rank
	// negative, nor the total less than the rank.
	got = appendRanks(nil, 1, []int64{0}, -2)
	if want := []admission.Rank{{Rank: 0, Total: 1, OK: true}}; !slices.Equal(got, want) {
		t.Fatalf("shifted by a return: %+v, want %+v", got, want)
	}
}

// The lease is decided by the caller's clock: Redis still has the key past
// the stored expiry, and that decides nothing; a key Redis let go is free.
func TestLeaseKeyExpiryIsASafetyNet(t *testing.T) {
	rdb, mr := redistest.MiniServer(t)
	ctx := context.Background()
	l := NewRedis(rdb, "mg")
	const q = "net"
	tok, _ := l.AcquireLease(ctx, q, "a", t0, 10*time.Second, 0)
	if ok, _ := l.RenewLease(ctx, q, "a", tok, t0.Add(10*time.Second), 10*time.Second); ok {
		t.Fatal("renewed at the stored expiry")
	}
	if rdb.Exists(ctx, l.Key(q, "lease")).Val() != 1 {
		t.Fatal("the key is gone: this test would not tell the clocks apart")
	}
	l2 := NewRedis(rdb, "mg2")
	tok2, _ := l2.AcquireLease(ctx, q, "a", t0, 10*time.Second, 0)
	mr.FastForward(11 * time.Second)
	if other, _ := l2.AcquireLease(ctx, q, "b", t0.Add(5*time.Second), 10*time.Second, 0); other != 0 {
		t.Fatalf("taken over by Redis's clock at T+5s on the caller's: %d", other)
	}
	if _, _, err := l2.Take(ctx, q, tok2, 1, 1, t0.Add(5*time.Second)); err != nil {
		t.Fatalf("take within the lease by the caller's clock: %v", err)
	}
	mr.FastForward(10*time.Second + expirySlack)
	if other, _ := l2.AcquireLease(ctx, q, "b", t0.Add(6*time.Second), 10*time.Second, 0); other != tok2+1 {
		t.Fatalf("acquire once the key expired = %d, want %d", other, tok2+1)
	}
}

// A script Redis lost (a restart, SCRIPT FLUSH) is sent again; Load
// registers them all.
func TestScriptsSurviveAFlush(t *testing.T) {
	rdb := redistest.Mini(t)
	ctx := context.Background()
	l := NewRedis(rdb, "")
	if err := l.Load(ctx); err != nil {
		t.Fatal(err)
	}
	const q = "flush"
	mustAdd(t, l, q, place(q, "a", 1))
	if err := rdb.ScriptFlush(ctx).Err(); err != nil {
		t.Fatal(err)
	}
	tok, err := l.AcquireLease(ctx, q, "adm", t0, time.Minute, 0)
	if err != nil || tok != 1 {
		t.Fatalf("acquire after a flush = %d, %v", tok, err)
	}
	if got, _, err := l.Take(ctx, q, tok, 1, 1, t0); err != nil || len(got) != 1 {
		t.Fatalf("take after a flush = %+v, %v", got, err)
	}
	if !strings.HasPrefix(l.Key(q, "line"), "mg:{adm:flush}") {
		t.Fatalf("default prefix: %s", l.Key(q, "line"))
	}
}

// A refusal reaches the caller as admission.ErrFenced with its context.
func TestFencedErrorCarriesContext(t *testing.T) {
	l := NewRedis(redistest.Mini(t), "mg")
	_, _, err := l.Take(context.Background(), "ctx", 9, 1, 1, t0)
	if !errors.Is(err, admission.ErrFenced) || !strings.Contains(err.Error(), "take from ctx: fence 9") {
		t.Fatalf("error %v", err)
	}
}
