package line

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/matchgate/matchgate/admission"
	"github.com/matchgate/matchgate/internal/redistest"
)

var t0 = time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)

// newLineFunc returns a line on which every queue the subtests name is
// empty.
type newLineFunc func(t *testing.T, opts ...Option) admission.Line

func TestContractRedis(t *testing.T) {
	redistest.All(t, func(t *testing.T, rdb redis.UniversalClient, prefix string) {
		n := 0
		testContract(t, func(_ *testing.T, opts ...Option) admission.Line {
			n++
			return NewRedis(rdb, fmt.Sprintf("%s-%d", prefix, n), opts...)
		})
	})
}

func TestContractMemory(t *testing.T) {
	testContract(t, func(_ *testing.T, opts ...Option) admission.Line { return NewMemory(opts...) })
}

func place(queue, user string, seq int64) admission.Place {
	return admission.Place{Queue: queue, UserID: user, Seq: seq, Status: admission.StatusWaiting, EnteredAt: t0}
}

func mustAdd(t *testing.T, l admission.Line, queue string, ps ...admission.Place) {
	t.Helper()
	if err := l.Add(context.Background(), queue, ps, t0); err != nil {
		t.Fatalf("add: %v", err)
	}
}

// mustLease takes queue's lease at t0 for an hour and returns its token.
func mustLease(t *testing.T, l admission.Line, queue string) int64 {
	t.Helper()
	tok, err := l.AcquireLease(context.Background(), queue, "adm", t0, time.Hour, 0)
	if err != nil || tok <= 0 {
		t.Fatalf("acquire lease of %s = %d, %v", queue, tok, err)
	}
	return tok
}

// equalTaken compares waiters field by field, instants by Equal.
func equalTaken(a, b []admission.Taken) bool {
	return slices.EqualFunc(a, b, func(x, y admission.Taken) bool {
		return x.UserID == y.UserID && x.Seq == y.Seq && x.At.Equal(y.At)
	})
}

// users lists the user ids of taken or head entries.
func users(ts []admission.Taken) []string {
	out := make([]string, len(ts))
	for i, t := range ts {
		out[i] = t.UserID
	}
	return out
}

func headOf(t *testing.T, l admission.Line, queue string) []admission.Taken {
	t.Helper()
	h, err := l.Head(context.Background(), queue, 1_000_000)
	if err != nil {
		t.Fatalf("head: %v", err)
	}
	return h
}

func testContract(t *testing.T, newLine newLineFunc) {
	ctx := context.Background()
	testPresence(t, newLine)

	t.Run("FIFOBySeqWhateverTheAddOrder", func(t *testing.T) {
		l := newLine(t)
		const q, n = "fifo", 2500
		ps := make([]admission.Place, n)
		for i := range ps {
			ps[i] = place(q, fmt.Sprintf("u%04d", i), int64(10*i+7))
		}
		shuffled := slices.Clone(ps)
		rand.New(rand.NewPCG(1, 2)).Shuffle(n, func(i, j int) { shuffled[i], shuffled[j] = shuffled[j], shuffled[i] })
		// Batches of 1, a few, many and more than a script call's chunk.
		for _, b := range [][2]int{{0, 1}, {1, 4}, {4, 40}, {40, 1300}, {1300, n}} {
			mustAdd(t, l, q, shuffled[b[0]:b[1]]...)
		}
		head := headOf(t, l, q)
		if len(head) != n {
			t.Fatalf("head holds %d, want %d", len(head), n)
		}
		for i, h := range head {
			if h.UserID != ps[i].UserID || h.Seq != ps[i].Seq || !h.At.IsZero() {
				t.Fatalf("head[%d] = %+v, want %s at %d", i, h, ps[i].UserID, ps[i].Seq)
			}
		}
		if sz, err := l.Size(ctx, q); err != nil || sz != n {
			t.Fatalf("size = %d, %v", sz, err)
		}
		for _, i := range []int{0, 1, 17, 1299, n - 1} {
			rank, total, ok, err := l.Rank(ctx, q, ps[i].UserID)
			if err != nil || !ok || rank != int64(i) || total != n {
				t.Fatalf("rank of %s = %d/%d %v %v, want %d/%d", ps[i].UserID, rank, total, ok, err, i, n)
			}
		}
		if h, err := l.Head(ctx, q, 3); err != nil || !slices.Equal(users(h), []string{"u0000", "u0001", "u0002"}) {
			t.Fatalf("head 3 = %+v, %v", h, err)
		}
		tok := mustLease(t, l, q)
		got, _, err := l.Take(ctx, q, tok, 5, 100, t0)
		if err != nil || !slices.Equal(users(got), []string{"u0000", "u0001", "u0002", "u0003", "u0004"}) {
			t.Fatalf("take = %+v, %v", got, err)
		}
		// Another queue is another line.
		if sz, err := l.Size(ctx, "fifo2"); err != nil || sz != 0 {
			t.Fatalf("size of another queue = %d, %v", sz, err)
		}
	})

	t.Run("AddIsIdempotent", func(t *testing.T) {
		l := newLine(t)
		const q = "idem"
		mustAdd(t, l, q, place(q, "a", 5), place(q, "b", 9))
		// A second add of a user keeps its first place, whatever the seq,
		// in another call or in the same one.
		mustAdd(t, l, q, place(q, "a", 3), place(q, "b", 9), place(q, "c", 12), place(q, "c", 1))
		head := headOf(t, l, q)
		want := []admission.Taken{{UserID: "a", Seq: 5}, {UserID: "b", Seq: 9}, {UserID: "c", Seq: 12}}
		if !equalTaken(head, want) {
			t.Fatalf("head = %+v, want %+v", head, want)
		}
		if err := l.Add(ctx, q, nil, t0); err != nil {
			t.Fatalf("empty add: %v", err)
		}
	})

	t.Run("TakeAckStaleReturnRoundTrip", func(t *testing.T) {
		l := newLine(t)
		const q = "trip"
		for i, u := range []string{"a", "b", "c", "d", "e"} {
			mustAdd(t, l, q, place(q, u, int64(10*(i+1))))
		}
		tok := mustLease(t, l, q)
		got, _, err := l.Take(ctx, q, tok, 2, 100, t0)
		want := []admission.Taken{{UserID: "a", Seq: 10, At: t0}, {UserID: "b", Seq: 20, At: t0}}
		if err != nil || !equalTaken(got, want) {
			t.Fatalf("take = %+v, %v; want %+v", got, err, want)
		}
		if _, _, ok, _ := l.Rank(ctx, q, "a"); ok {
			t.Fatal("a taken yet ranked")
		}
		if sz, _ := l.Size(ctx, q); sz != 3 {
			t.Fatalf("size after take = %d", sz)
		}
		// A user in processing is not added again.
		mustAdd(t, l, q, place(q, "a", 10), place(q, "b", 2))
		if sz, _ := l.Size(ctx, q); sz != 3 {
			t.Fatalf("add of users in processing changed the size: %d", sz)
		}
		// Stale by the caller's instant: taken at t0, so stale before any
		// later instant and not before t0.
		if st, err := l.Stale(ctx, q, t0); err != nil || len(st) != 0 {
			t.Fatalf("stale before t0 = %+v, %v", st, err)
		}
		st, err := l.Stale(ctx, q, t0.Add(time.Millisecond))
		if err != nil || !equalTaken(st, want) {
			t.Fatalf("stale = %+v, %v; want %+v", st, err, want)
		}
		// Returned, a waiter is back at its place, ahead of later seqs.
		mustAdd(t, l, q, place(q, "f", 60))
		if err := l.Return(ctx, q, st[:1]); err != nil {
			t.Fatal(err)
		}
		if rank, total, ok, err := l.Rank(ctx, q, "a"); err != nil || !ok || rank != 0 || total != 5 {
			t.Fatalf("rank of a returned = %d/%d %v %v", rank, total, ok, err)
		}
		// Returned twice, or under another seq: nothing moves.
		if err := l.Return(ctx, q, []admission.Taken{st[0], {UserID: "b", Seq: 21}}); err != nil {
			t.Fatal(err)
		}
		if h := headOf(t, l, q); !slices.Equal(users(h), []string{"a", "c", "d", "e", "f"}) {
			t.Fatalf("head after returns = %v", users(h))
		}
		if st, _ := l.Stale(ctx, q, t0.Add(time.Hour)); !slices.Equal(users(st), []string{"b"}) {
			t.Fatalf("stale after returns = %+v", st)
		}
		// Acknowledged, b leaves processing; its place is not added again,
		// a new place of b is. An ack of someone not in processing is a
		// no-op.
		if err := l.Ack(ctx, q, []string{"b", "nobody", "c"}); err != nil {
			t.Fatal(err)
		}
		if st, _ := l.Stale(ctx, q, t0.Add(time.Hour)); len(st) != 0 {
			t.Fatalf("stale after ack = %+v", st)
		}
		if err := l.Return(ctx, q, []admission.Taken{{UserID: "b", Seq: 20}}); err != nil {
			t.Fatal(err)
		}
		mustAdd(t, l, q, place(q, "b", 20))
		if _, _, ok, _ := l.Rank(ctx, q, "b"); ok {
			t.Fatal("an acknowledged place was added or returned again")
		}
		if _, _, ok, _ := l.Rank(ctx, q, "c"); !ok {
			t.Fatal("an ack of a waiter took it out of the line")
		}
		mustAdd(t, l, q, place(q, "b", 70))
		if h := headOf(t, l, q); !equalTaken(h[len(h)-1:], []admission.Taken{{UserID: "b", Seq: 70}}) {
			t.Fatalf("a new place of b: head %+v", h)
		}
	})

	t.Run("AnAcknowledgedPlaceIsForgottenAfterAWhile", func(t *testing.T) {
		l := newLine(t, WithAckedFor(10*time.Second))
		const q = "forget"
		mustAdd(t, l, q, place(q, "a", 1))
		tok := mustLease(t, l, q)
		if got, _, err := l.Take(ctx, q, tok, 1, 10, t0); err != nil || len(got) != 1 {
			t.Fatalf("take = %+v, %v", got, err)
		}
		if err := l.Ack(ctx, q, []string{"a"}); err != nil {
			t.Fatal(err)
		}
		// Take forgets by its now: 10 s after the take.
		if _, _, err := l.Take(ctx, q, tok, 1, 10, t0.Add(10*time.Second-time.Millisecond)); err != nil {
			t.Fatal(err)
		}
		mustAdd(t, l, q, place(q, "a", 1))
		if sz, _ := l.Size(ctx, q); sz != 0 {
			t.Fatal("forgotten 1 ms early")
		}
		if _, _, err := l.Take(ctx, q, tok, 0, 10, t0.Add(10*time.Second)); err != nil {
			t.Fatal(err)
		}
		mustAdd(t, l, q, place(q, "a", 1))
		if sz, _ := l.Size(ctx, q); sz != 1 {
			t.Fatalf("size %d: the place is still remembered", sz)
		}
	})

	t.Run("Remove", func(t *testing.T) {
		l := newLine(t)
		const q = "rm"
		mustAdd(t, l, q, place(q, "a", 1), place(q, "b", 2), place(q, "c", 3), place(q, "d", 4))
		tok := mustLease(t, l, q)
		if _, _, err := l.Take(ctx, q, tok, 1, 10, t0); err != nil {
			t.Fatal(err)
		}
		// a is in processing: it stays there; c leaves; x was never in.
		if err := l.Remove(ctx, q, []string{"a", "c", "x"}); err != nil {
			t.Fatal(err)
		}
		if h := headOf(t, l, q); !slices.Equal(users(h), []string{"b", "d"}) {
			t.Fatalf("head = %v", users(h))
		}
		if rank, total, ok, _ := l.Rank(ctx, q, "d"); !ok || rank != 1 || total != 2 {
			t.Fatalf("rank of d = %d/%d %v", rank, total, ok)
		}
		if _, _, ok, _ := l.Rank(ctx, q, "c"); ok {
			t.Fatal("c removed yet ranked")
		}
		if st, _ := l.Stale(ctx, q, t0.Add(time.Second)); !slices.Equal(users(st), []string{"a"}) {
			t.Fatalf("processing after remove = %+v", st)
		}
		n, err := l.(remover).remove(ctx, q, []string{"b", "b", "c"})
		if err != nil || n != 1 {
			t.Fatalf("remove count = %d, %v", n, err)
		}
		if err := l.Remove(ctx, q, nil); err != nil {
			t.Fatal(err)
		}
	})

	t.Run("Rank", func(t *testing.T) {
		l := newLine(t)
		const q = "rank"
		if rank, total, ok, err := l.Rank(ctx, q, "a"); err != nil || ok || rank != 0 || total != 0 {
			t.Fatalf("rank in an empty line = %d/%d %v %v", rank, total, ok, err)
		}
		mustAdd(t, l, q, place(q, "c", 30), place(q, "a", 10), place(q, "b", 20))
		for i, u := range []string{"a", "b", "c"} {
			if rank, total, ok, err := l.Rank(ctx, q, u); err != nil || !ok || rank != int64(i) || total != 3 {
				t.Fatalf("rank of %s = %d/%d %v %v", u, rank, total, ok, err)
			}
		}
		if _, total, ok, _ := l.Rank(ctx, q, "zz"); ok || total != 3 {
			t.Fatalf("rank of a stranger: ok %v total %d", ok, total)
		}
		tok := mustLease(t, l, q)
		if _, _, err := l.Take(ctx, q, tok, 1, 10, t0); err != nil {
			t.Fatal(err)
		}
		if rank, total, ok, _ := l.Rank(ctx, q, "c"); !ok || rank != 1 || total != 2 {
			t.Fatalf("rank of c after a take = %d/%d %v", rank, total, ok)
		}
		if h, err := l.Head(ctx, q, 0); err != nil || len(h) != 0 {
			t.Fatalf("head 0 = %+v, %v", h, err)
		}
	})

	t.Run("LeaseByTheCallersClock", func(t *testing.T) {
		l := newLine(t)
		const q = "lease"
		tokA, err := l.AcquireLease(ctx, q, "a", t0, 4*time.Second, 0)
		if err != nil || tokA != 1 {
			t.Fatalf("first acquire = %d, %v; want 1", tokA, err)
		}
		if tok, err := l.AcquireLease(ctx, q, "b", t0.Add(3*time.Second), 4*time.Second, 0); err != nil || tok != 0 {
			t.Fatalf("acquire of a held lease = %d, %v", tok, err)
		}
		if ok, _ := l.RenewLease(ctx, q, "b", tokA, t0, 4*time.Second); ok {
			t.Fatal("renewed by a non-owner")
		}
		if ok, _ := l.RenewLease(ctx, q, "a", tokA+1, t0, 4*time.Second); ok {
			t.Fatal("renewed with a token never issued")
		}
		// Renewed at T+2s, a holds it until T+6s.
		if ok, err := l.RenewLease(ctx, q, "a", tokA, t0.Add(2*time.Second), 4*time.Second); err != nil || !ok {
			t.Fatalf("renew by the owner = %v, %v", ok, err)
		}
		if tok, _ := l.AcquireLease(ctx, q, "b", t0.Add(6*time.Second-time.Millisecond), 4*time.Second, 0); tok != 0 {
			t.Fatalf("acquired 1 ms before the renewed expiry: %d", tok)
		}
		// At its expiry it is lost to its owner and free to others.
		if ok, _ := l.RenewLease(ctx, q, "a", tokA, t0.Add(6*time.Second), 4*time.Second); ok {
			t.Fatal("renewed at the expiry")
		}
		tokB, err := l.AcquireLease(ctx, q, "b", t0.Add(6*time.Second), 4*time.Second, 0)
		if err != nil || tokB != tokA+1 {
			t.Fatalf("takeover = %d, %v; want %d", tokB, err, tokA+1)
		}
		if ok, _ := l.RenewLease(ctx, q, "a", tokA, t0.Add(5*time.Second), 4*time.Second); ok {
			t.Fatal("the previous owner renewed after the takeover")
		}
		if ok, _ := l.ReleaseLease(ctx, q, "a", tokA); ok {
			t.Fatal("the previous owner released the new owner's lease")
		}
		if ok, _ := l.ReleaseLease(ctx, q, "b", tokB+1); ok {
			t.Fatal("released with another token")
		}
		if ok, err := l.ReleaseLease(ctx, q, "b", tokB); err != nil || !ok {
			t.Fatalf("release = %v, %v", ok, err)
		}
		if ok, _ := l.RenewLease(ctx, q, "b", tokB, t0.Add(7*time.Second), 4*time.Second); ok {
			t.Fatal("renewed a released lease")
		}
		// Released, it is free at once; the floor from the record keeps
		// the tokens above every epoch seen.
		tokC, err := l.AcquireLease(ctx, q, "c", t0.Add(7*time.Second), 4*time.Second, 41)
		if err != nil || tokC != 42 {
			t.Fatalf("acquire with floor 41 = %d, %v; want 42", tokC, err)
		}
		if tokD, _ := l.AcquireLease(ctx, q, "d", t0.Add(11*time.Second), 4*time.Second, 5); tokD != 43 {
			t.Fatalf("acquire under a lower floor = %d, want 43", tokD)
		}
		for _, bad := range []func() error{
			func() error { _, err := l.AcquireLease(ctx, q, "", t0, time.Second, 0); return err },
			func() error { _, err := l.AcquireLease(ctx, q, "a", time.Time{}, time.Second, 0); return err },
			func() error { _, err := l.AcquireLease(ctx, q, "a", t0, 0, 0); return err },
			func() error { _, err := l.RenewLease(ctx, "", "a", 1, t0, time.Second); return err },
			func() error { _, err := l.ReleaseLease(ctx, q, "", 1); return err },
		} {
			if bad() == nil {
				t.Fatal("a bad lease call was not refused")
			}
		}
	})

	t.Run("FencingRefusal", func(t *testing.T) {
		l := newLine(t)
		const q = "fence"
		mustAdd(t, l, q, place(q, "a", 1), place(q, "b", 2), place(q, "c", 3))
		fenced := func(tok int64, now time.Time) {
			t.Helper()
			got, _, err := l.Take(ctx, q, tok, 10, 10, now)
			if !errors.Is(err, admission.ErrFenced) || got != nil {
				t.Fatalf("take with %d at %v = %+v, %v; want ErrFenced", tok, now.Sub(t0), got, err)
			}
			if sz, _ := l.Size(ctx, q); sz != 3 {
				t.Fatalf("a refused take changed the line: size %d", sz)
			}
		}
		fenced(1, t0) // no lease yet
		tokA, _ := l.AcquireLease(ctx, q, "a", t0, 4*time.Second, 0)
		fenced(0, t0)
		fenced(tokA+1, t0)
		fenced(tokA, t0.Add(4*time.Second)) // expired by the caller's clock
		tokB, _ := l.AcquireLease(ctx, q, "b", t0.Add(4*time.Second), 4*time.Second, 0)
		fenced(tokA, t0.Add(5*time.Second)) // taken over
		if ok, _ := l.ReleaseLease(ctx, q, "b", tokB); !ok {
			t.Fatal("release refused")
		}
		fenced(tokB, t0.Add(5*time.Second)) // released
		tokC, _ := l.AcquireLease(ctx, q, "c", t0.Add(5*time.Second), 4*time.Second, 0)
		fenced(tokB, t0.Add(5*time.Second))
		got, _, err := l.Take(ctx, q, tokC, 10, 10, t0.Add(5*time.Second))
		if err != nil || !slices.Equal(users(got), []string{"a", "b", "c"}) {
			t.Fatalf("take by the holder = %+v, %v", got, err)
		}
	})

	t.Run("RateWindow", func(t *testing.T) {
		l := newLine(t)
		const q = "rate"
		ps := make([]admission.Place, 100)
		for i := range ps {
			ps[i] = place(q, fmt.Sprintf("u%03d", i), int64(i+1))
		}
		mustAdd(t, l, q, ps...)
		tok := mustLease(t, l, q)
		take := func(n int, at time.Duration, want int) {
			t.Helper()
			got, _, err := l.Take(ctx, q, tok, n, 3, t0.Add(at))
			if err != nil || len(got) != want {
				t.Fatalf("take %d at T+%v = %d taken, %v; want %d", n, at, len(got), err, want)
			}
			for _, g := range got {
				if !g.At.Equal(t0.Add(at)) {
					t.Fatalf("taken at %v, want T+%v", g.At.Sub(t0), at)
				}
			}
		}
		take(2, 0, 2)
		take(5, 500*time.Millisecond, 1)
		take(5, 999*time.Millisecond, 0)
		take(5, 1000*time.Millisecond, 2) // T's two left the second
		take(5, 1499*time.Millisecond, 0)
		take(5, 1500*time.Millisecond, 1)
		take(0, 3*time.Second, 0)
		take(5, 3*time.Second, 3)
		// A caller a little behind counts the later admissions too: any
		// admission at T+2.5s would share a second with T+3s's three.
		take(5, 2500*time.Millisecond, 0)
		take(5, 4*time.Second, 3)
		// One behind by less than 5 s counts what the window kept: T+3s's
		// and T+4s's are within a second of T+3.5s.
		take(5, 3500*time.Millisecond, 0)
		take(1, 20*time.Second, 1)
		// Behind the latest admission by more than 5 s: nobody (the window
		// may have dropped admissions it would have to count).
		take(5, 15*time.Second-time.Millisecond, 0)
		take(5, 15*time.Second, 2)
		if got, _, err := l.Take(ctx, q, tok, 5, 0, t0.Add(30*time.Minute)); err != nil || len(got) != 0 {
			t.Fatalf("take at rate 0 = %+v, %v", got, err)
		}
	})

	t.Run("BadArguments", func(t *testing.T) {
		l := newLine(t)
		for name, call := range map[string]func() error{
			"empty queue":     func() error { return l.Add(ctx, "", []admission.Place{place("", "a", 1)}, t0) },
			"brace queue":     func() error { _, err := l.Size(ctx, "a{b}"); return err },
			"seq beyond 2^53": func() error { return l.Add(ctx, "q", []admission.Place{place("q", "a", 1<<53+1)}, t0) },
			"no user":         func() error { return l.Add(ctx, "q", []admission.Place{place("q", "", 1)}, t0) },
			"other queue":     func() error { return l.Add(ctx, "q", []admission.Place{place("p", "a", 1)}, t0) },
			"zero now":        func() error { _, _, err := l.Take(ctx, "q", 1, 1, 1, time.Time{}); return err },
			"return beyond":   func() error { return l.Return(ctx, "q", []admission.Taken{{UserID: "a", Seq: -1<<53 - 1}}) },
		} {
			if call() == nil {
				t.Errorf("%s: not refused", name)
			}
		}
		// A refused batch adds nothing.
		if err := l.Add(ctx, "q", []admission.Place{place("q", "a", 1), place("q", "", 2)}, t0); err == nil {
			t.Fatal("batch with a bad place accepted")
		}
		if sz, _ := l.Size(ctx, "q"); sz != 0 {
			t.Fatalf("size after a refused batch = %d", sz)
		}
		// The bounds themselves are kept exactly.
		mustAdd(t, l, "q", place("q", "top", 1<<53), place("q", "bottom", -1<<53))
		if h := headOf(t, l, "q"); !equalTaken(h, []admission.Taken{{UserID: "bottom", Seq: -1 << 53}, {UserID: "top", Seq: 1 << 53}}) {
			t.Fatalf("head = %+v", h)
		}
	})
}

// remover is the Remove that tells how many it took out, which both lines
// have for the tests.
type remover interface {
	remove(ctx context.Context, queue string, userIDs []string) (int64, error)
}
