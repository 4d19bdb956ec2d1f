package line

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/matchgate/matchgate/admission"
)

// testPresence is the contract of presence (Touch, Idle) and of the passed
// counter with Ranks, run by testContract on every line.
func testPresence(t *testing.T, newLine newLineFunc) {
	ctx := context.Background()
	at := func(d time.Duration) time.Time { return t0.Add(d) }
	idle := func(t *testing.T, l admission.Line, q string, before time.Time, limit int) []string {
		t.Helper()
		got, err := l.Idle(ctx, q, before, limit)
		if err != nil {
			t.Fatalf("idle before T+%v: %v", before.Sub(t0), err)
		}
		return got
	}
	touch := func(t *testing.T, l admission.Line, q string, now time.Time, users ...string) {
		t.Helper()
		if err := l.Touch(ctx, q, users, now); err != nil {
			t.Fatalf("touch %v: %v", users, err)
		}
	}

	t.Run("TouchAndIdle", func(t *testing.T) {
		l := newLine(t)
		const q = "seen"
		// Entering is being seen: at T, by the caller's clock.
		mustAdd(t, l, q, place(q, "c", 3), place(q, "a", 1), place(q, "b", 2))
		if got := idle(t, l, q, t0, 10); len(got) != 0 {
			t.Fatalf("idle before the entry's instant = %v", got)
		}
		// Ties are told by user id, as a sorted set orders them.
		if got := idle(t, l, q, at(time.Millisecond), 10); !slices.Equal(got, []string{"a", "b", "c"}) {
			t.Fatalf("idle just after the entry = %v", got)
		}
		touch(t, l, q, at(10*time.Second), "b")
		touch(t, l, q, at(4*time.Second), "c")
		if got := idle(t, l, q, at(5*time.Second), 10); !slices.Equal(got, []string{"a", "c"}) {
			t.Fatalf("idle before T+5s = %v, want a then c", got)
		}
		if got := idle(t, l, q, at(20*time.Second), 10); !slices.Equal(got, []string{"a", "c", "b"}) {
			t.Fatalf("idle before T+20s = %v, the longest unseen first", got)
		}
		if got := idle(t, l, q, at(20*time.Second), 2); !slices.Equal(got, []string{"a", "c"}) {
			t.Fatalf("idle, limit 2 = %v", got)
		}
		if got := idle(t, l, q, at(20*time.Second), 0); len(got) != 0 {
			t.Fatalf("idle, limit 0 = %v", got)
		}
		// A seen instant only moves forward: a caller whose clock is
		// behind does not make b look absent longer.
		touch(t, l, q, at(time.Second), "b")
		if got := idle(t, l, q, at(10*time.Second), 10); !slices.Equal(got, []string{"a", "c"}) {
			t.Fatalf("after a late touch of b: idle = %v", got)
		}
		// A touch of users not in the line adds nobody.
		touch(t, l, q, at(30*time.Second), "x", "y")
		touch(t, l, q, at(30*time.Second))
		if sz, _ := l.Size(ctx, q); sz != 3 {
			t.Fatalf("a touch changed the line's size: %d", sz)
		}
		if _, _, ok, _ := l.Rank(ctx, q, "x"); ok {
			t.Fatal("a touch put x in the line")
		}
		if got := idle(t, l, q, at(time.Hour), 10); !slices.Equal(got, []string{"a", "c", "b"}) {
			t.Fatalf("idle after touches of strangers = %v", got)
		}
		// Removed, a waiter's presence goes with it.
		if err := l.Remove(ctx, q, []string{"c"}); err != nil {
			t.Fatal(err)
		}
		if got := idle(t, l, q, at(time.Hour), 10); !slices.Equal(got, []string{"a", "b"}) {
			t.Fatalf("idle after removing c = %v", got)
		}
		// Another queue's presence is its own.
		if got := idle(t, l, "seen2", at(time.Hour), 10); len(got) != 0 {
			t.Fatalf("idle of another queue = %v", got)
		}
	})

	t.Run("TakeDropsPresenceReturnKeepsIt", func(t *testing.T) {
		l := newLine(t)
		const q = "seentake"
		mustAdd(t, l, q, place(q, "a", 1), place(q, "b", 2), place(q, "c", 3))
		touch(t, l, q, at(3*time.Second), "a")
		touch(t, l, q, at(7*time.Second), "b")
		tok := mustLease(t, l, q)
		if got, _, err := l.Take(ctx, q, tok, 2, 10, at(8*time.Second)); err != nil || !slices.Equal(users(got), []string{"a", "b"}) {
			t.Fatalf("take = %+v, %v", got, err)
		}
		// In processing, a and b are not waiting: not idle, not touched.
		if got := idle(t, l, q, at(time.Hour), 10); !slices.Equal(got, []string{"c"}) {
			t.Fatalf("idle with a and b in processing = %v", got)
		}
		touch(t, l, q, at(50*time.Second), "a", "b")
		if _, _, ok, _ := l.Rank(ctx, q, "a"); ok {
			t.Fatal("a touch put a taken waiter back in the line")
		}
		// Returned, each is seen as it was before the take: a at T+3s, b
		// at T+7s, not at the take nor at the touch in processing.
		st, err := l.Stale(ctx, q, at(time.Hour))
		if err != nil || len(st) != 2 {
			t.Fatalf("stale = %+v, %v", st, err)
		}
		if err := l.Return(ctx, q, st); err != nil {
			t.Fatal(err)
		}
		if got := idle(t, l, q, at(5*time.Second), 10); !slices.Equal(got, []string{"c", "a"}) {
			t.Fatalf("idle before T+5s after the return = %v, want c (T) then a (T+3s)", got)
		}
		if got := idle(t, l, q, at(8*time.Second), 10); !slices.Equal(got, []string{"c", "a", "b"}) {
			t.Fatalf("idle before T+8s after the return = %v", got)
		}
		// Taken and acknowledged, a is gone; a new place of a is seen at
		// its entry.
		if got, _, err := l.Take(ctx, q, tok, 1, 10, at(9*time.Second)); err != nil || !slices.Equal(users(got), []string{"a"}) {
			t.Fatalf("take = %+v, %v", got, err)
		}
		if err := l.Ack(ctx, q, []string{"a"}); err != nil {
			t.Fatal(err)
		}
		if got := idle(t, l, q, at(time.Hour), 10); !slices.Equal(got, []string{"c", "b"}) {
			t.Fatalf("idle after a's admission = %v", got)
		}
		if err := l.Add(ctx, q, []admission.Place{place(q, "a", 9)}, at(30*time.Second)); err != nil {
			t.Fatal(err)
		}
		if got := idle(t, l, q, at(30*time.Second), 10); !slices.Equal(got, []string{"c", "b"}) {
			t.Fatalf("idle before a's new entry = %v", got)
		}
		if got := idle(t, l, q, at(31*time.Second), 10); !slices.Equal(got, []string{"c", "b", "a"}) {
			t.Fatalf("idle after a's new entry = %v", got)
		}
	})

	t.Run("AddKeepsAPresentWaitersSeenInstant", func(t *testing.T) {
		l := newLine(t)
		const q = "seenadd"
		mustAdd(t, l, q, place(q, "a", 1))
		// A rebuild over an intact line adds a again half an hour later: a
		// keeps both its place and its absence since T.
		if err := l.Add(ctx, q, []admission.Place{place(q, "a", 1), place(q, "b", 2)}, at(30*time.Minute)); err != nil {
			t.Fatal(err)
		}
		if got := idle(t, l, q, at(time.Minute), 10); !slices.Equal(got, []string{"a"}) {
			t.Fatalf("idle before T+1m = %v, want a alone", got)
		}
		if got := idle(t, l, q, at(30*time.Minute+time.Millisecond), 10); !slices.Equal(got, []string{"a", "b"}) {
			t.Fatalf("idle after the rebuild = %v", got)
		}
		if rank, _, ok, _ := l.Rank(ctx, q, "a"); !ok || rank != 0 {
			t.Fatalf("rank of a after the rebuild = %d %v", rank, ok)
		}
		// A place in processing is not seen by an Add.
		tok := mustLease(t, l, q)
		if _, _, err := l.Take(ctx, q, tok, 1, 10, at(40*time.Minute)); err != nil {
			t.Fatal(err)
		}
		if err := l.Add(ctx, q, []admission.Place{place(q, "a", 1)}, at(40*time.Minute)); err != nil {
			t.Fatal(err)
		}
		if got := idle(t, l, q, at(50*time.Minute), 10); !slices.Equal(got, []string{"b"}) {
			t.Fatalf("idle with a in processing = %v", got)
		}
	})

	t.Run("RanksAndPassed", func(t *testing.T) {
		l := newLine(t)
		const q = "ranks"
		ranks := func(t *testing.T, ids ...string) ([]admission.Rank, int64) {
			t.Helper()
			rs, passed, err := l.Ranks(ctx, q, ids)
			if err != nil || len(rs) != len(ids) {
				t.Fatalf("ranks of %d = %+v, %v", len(ids), rs, err)
			}
			return rs, passed
		}
		if rs, passed := ranks(t, "a"); rs[0].OK || passed != 0 {
			t.Fatalf("ranks in an empty line = %+v, passed %d", rs, passed)
		}
		for i, u := range []string{"a", "b", "c", "d", "e"} {
			mustAdd(t, l, q, place(q, u, int64(i+1)))
		}
		rs, passed := ranks(t, "c", "x", "a", "e")
		want := []admission.Rank{{Rank: 2, Total: 5, OK: true}, {}, {Rank: 0, Total: 5, OK: true}, {Rank: 4, Total: 5, OK: true}}
		if !slices.Equal(rs, want) || passed != 0 {
			t.Fatalf("ranks = %+v passed %d, want %+v passed 0", rs, passed, want)
		}
		tok := mustLease(t, l, q)
		got, passedTake, err := l.Take(ctx, q, tok, 2, 10, t0)
		if err != nil || len(got) != 2 || passedTake != 2 {
			t.Fatalf("take = %+v passed %d, %v; want 2 taken, passed 2", got, passedTake, err)
		}
		// A take that takes nobody tells the counter as it is.
		if got, p, err := l.Take(ctx, q, tok, 0, 10, t0); err != nil || len(got) != 0 || p != 2 {
			t.Fatalf("empty take = %+v passed %d, %v", got, p, err)
		}
		// The estimate rank0 - (passed - passed0) is the rank, as long as
		// nobody ahead left otherwise.
		rs, passed = ranks(t, "e", "a")
		if passed != 2 || rs[0] != (admission.Rank{Rank: 2, Total: 3, OK: true}) || rs[1].OK {
			t.Fatalf("ranks after the take = %+v passed %d", rs, passed)
		}
		if est := want[3].Rank - (passed - 0); est != rs[0].Rank {
			t.Fatalf("estimate %d, rank %d", est, rs[0].Rank)
		}
		// Return gives back what it puts back; with no users, Ranks reads
		// the counter alone.
		if err := l.Return(ctx, q, got[:1]); err != nil {
			t.Fatal(err)
		}
		if rs, p, err := l.Ranks(ctx, q, nil); err != nil || len(rs) != 0 || p != 1 {
			t.Fatalf("ranks of none = %+v passed %d, %v; want passed 1", rs, p, err)
		}
		// A Remove moves ranks, not the counter.
		if err := l.Remove(ctx, q, []string{"c"}); err != nil {
			t.Fatal(err)
		}
		if rs, p := ranks(t, "e"); p != 1 || rs[0].Rank != 2 {
			t.Fatalf("after a remove: %+v passed %d", rs, p)
		}
	})

	t.Run("RanksOfMoreThanAChunk", func(t *testing.T) {
		l := newLine(t)
		// A short line and a long list (repeats and strangers among it),
		// so the parts' alignment is checked without a long line.
		const q, inLine, n = "manyranks", 50, 2*chunk + 100
		ps := make([]admission.Place, inLine)
		for i := range ps {
			ps[i] = place(q, fmt.Sprintf("u%02d", i), int64(i+1))
		}
		mustAdd(t, l, q, ps...)
		ids := make([]string, n)
		for i := range ids {
			ids[i] = fmt.Sprintf("u%02d", (n-i)%(inLine+10))
		}
		rs, passed, err := l.Ranks(ctx, q, ids)
		if err != nil || len(rs) != n || passed != 0 {
			t.Fatalf("ranks = %d, passed %d, %v", len(rs), passed, err)
		}
		for i, r := range rs {
			want := admission.Rank{}
			if k := (n - i) % (inLine + 10); k < inLine {
				want = admission.Rank{Rank: int64(k), Total: inLine, OK: true}
			}
			if r != want {
				t.Fatalf("rank %d, of %s = %+v, want %+v", i, ids[i], r, want)
			}
		}
	})

	t.Run("PresenceBadArguments", func(t *testing.T) {
		l := newLine(t)
		for name, call := range map[string]func() error{
			"add zero now":     func() error { return l.Add(ctx, "q", []admission.Place{place("q", "a", 1)}, time.Time{}) },
			"touch zero now":   func() error { return l.Touch(ctx, "q", []string{"a"}, time.Time{}) },
			"touch brace":      func() error { return l.Touch(ctx, "q{", []string{"a"}, t0) },
			"idle empty queue": func() error { _, err := l.Idle(ctx, "", t0, 1); return err },
			"ranks brace":      func() error { _, _, err := l.Ranks(ctx, "}", nil); return err },
		} {
			if call() == nil {
				t.Errorf("%s: not refused", name)
			}
		}
	})
}
