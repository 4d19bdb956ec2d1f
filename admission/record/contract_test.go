package record_test

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/matchgate/matchgate/admission"
	"github.com/matchgate/matchgate/admission/record"
	"github.com/matchgate/matchgate/internal/pgtest"
)

func TestMemory(t *testing.T) {
	testRecord(t, func(*testing.T) admission.Record { return record.NewMemory() })
}

func TestPostgres(t *testing.T) {
	pgtest.Require(t)
	testRecord(t, func(t *testing.T) admission.Record { return record.NewPostgres(pgtest.New(t)) })
}

// t0 has nanoseconds on purpose: both records must store microseconds.
var t0 = time.Date(2031, 3, 4, 5, 6, 7, 123456789, time.UTC)

// us is t as a record returns it.
func us(t time.Time) time.Time { return t.UTC().Truncate(time.Microsecond) }

const ttl = 30 * time.Second

// testRecord is the behaviour every admission.Record must have. newRecord
// returns an empty record that lives until the end of the test it is given.
func testRecord(t *testing.T, newRecord func(t *testing.T) admission.Record) {
	t.Run("EnterAndRead", func(t *testing.T) {
		r, ctx := newRecord(t), context.Background()
		predicted := t0.Add(90*time.Second + 700*time.Nanosecond)
		got, created, err := r.Enter(ctx, "drop", "alice", t0, predicted)
		if err != nil || !created {
			t.Fatalf("Enter = %+v, %v, %v", got, created, err)
		}
		if got.Seq <= 0 {
			t.Fatalf("Seq %d, want positive", got.Seq)
		}
		want := admission.Place{Queue: "drop", UserID: "alice", Seq: got.Seq, Status: admission.StatusWaiting,
			EnteredAt: us(t0), PredictedAt: us(predicted), Version: 1}
		equal(t, "entered", got, want)
		read, err := r.Place(ctx, "drop", "alice")
		if err != nil {
			t.Fatal(err)
		}
		equal(t, "read back", read, want)

		// No ETA shown: no predicted time.
		bob, _, err := r.Enter(ctx, "drop", "bob", t0, time.Time{})
		if err != nil || !bob.PredictedAt.IsZero() {
			t.Fatalf("Enter without a prediction = %+v, %v", bob, err)
		}
		for _, k := range [][2]string{{"drop", "carol"}, {"other", "alice"}, {"", ""}} {
			if _, err := r.Place(ctx, k[0], k[1]); !errors.Is(err, admission.ErrNotFound) {
				t.Errorf("Place(%q, %q) = %v, want ErrNotFound", k[0], k[1], err)
			}
		}
	})

	t.Run("EnterRefusesBadInput", func(t *testing.T) {
		r, ctx := newRecord(t), context.Background()
		for name, in := range map[string][2]string{"no queue": {"", "u"}, "no user": {"drop", ""}} {
			if _, _, err := r.Enter(ctx, in[0], in[1], t0, t0); err == nil {
				t.Errorf("%s: Enter succeeded", name)
			}
		}
		if _, _, err := r.Enter(ctx, "drop", "u", time.Time{}, t0); err == nil {
			t.Error("no entry time: Enter succeeded")
		}
		waitingIs(t, r, "drop")
	})

	t.Run("IdempotentEntry", func(t *testing.T) {
		r, ctx := newRecord(t), context.Background()
		first := mustEnter(t, r, "drop", "alice", t0)
		again, created, err := r.Enter(ctx, "drop", "alice", t0.Add(time.Minute), t0.Add(time.Hour))
		if err != nil || created {
			t.Fatalf("second Enter: created %v, %v", created, err)
		}
		equal(t, "second entry", again, first)
		// Another queue is another place.
		elsewhere := mustEnter(t, r, "concert", "alice", t0)
		if elsewhere.Seq == first.Seq {
			t.Fatalf("two queues' places share Seq %d", first.Seq)
		}
		// Once the place ended, an entry makes a new one, behind.
		if _, err := r.Leave(ctx, "drop", "alice", t0.Add(time.Second)); err != nil {
			t.Fatal(err)
		}
		back := mustEnter(t, r, "drop", "alice", t0.Add(2*time.Second))
		if back.Seq <= elsewhere.Seq || back.Version != 1 {
			t.Fatalf("entry after leaving = %+v; want a new place after Seq %d", back, elsewhere.Seq)
		}
		newest, err := r.Place(ctx, "drop", "alice")
		if err != nil {
			t.Fatal(err)
		}
		equal(t, "newest place", newest, back)
	})

	t.Run("FIFOSeq", func(t *testing.T) {
		r := newRecord(t)
		var want []admission.Place
		for i := range 12 {
			p := mustEnter(t, r, "drop", fmt.Sprint("u", i), t0.Add(-time.Duration(i)*time.Second)) // clocks disagree
			if len(want) > 0 && p.Seq <= want[len(want)-1].Seq {
				t.Fatalf("entry %d: Seq %d after %d", i, p.Seq, want[len(want)-1].Seq)
			}
			want = append(want, p)
		}
		waitingIs(t, r, "drop", want...)
	})

	t.Run("OneLivePlace", func(t *testing.T) {
		r, ctx := newRecord(t), context.Background()
		p := mustEnter(t, r, "drop", "alice", t0)
		ready := mustAdmit(t, r, "drop", 1, t0.Add(time.Second), p)[0]
		if got := enterAgain(t, r, "drop", "alice"); !reflect.DeepEqual(got, ready) {
			t.Fatalf("entry while READY = %+v, want %+v", got, ready)
		}
		claimed, err := r.Claim(ctx, "drop", ready.Token, t0.Add(2*time.Second))
		if err != nil {
			t.Fatal(err)
		}
		if got := enterAgain(t, r, "drop", "alice"); !reflect.DeepEqual(got, claimed) {
			t.Fatalf("entry while CLAIMED = %+v, want %+v", got, claimed)
		}
		if _, err := r.Consume(ctx, "drop", ready.Token, t0.Add(3*time.Second)); err != nil {
			t.Fatal(err)
		}
		next := mustEnter(t, r, "drop", "alice", t0.Add(4*time.Second))
		if next.Seq <= p.Seq || next.Status != admission.StatusWaiting {
			t.Fatalf("entry after CONSUMED = %+v", next)
		}
		// An expired token frees the user too.
		ready = mustAdmit(t, r, "drop", 1, t0.Add(5*time.Second), next)[0]
		if _, err := r.Expire(ctx, "drop", ready.ExpiresAt, 10); err != nil {
			t.Fatal(err)
		}
		if last := mustEnter(t, r, "drop", "alice", t0.Add(time.Hour)); last.Seq <= next.Seq {
			t.Fatalf("entry after EXPIRED = %+v", last)
		}
	})

	t.Run("AdmitAndEpochs", func(t *testing.T) {
		r, ctx := newRecord(t), context.Background()
		a, b, c := mustEnter(t, r, "drop", "a", t0), mustEnter(t, r, "drop", "b", t0), mustEnter(t, r, "drop", "c", t0)
		if e, err := r.Epoch(ctx, "drop"); err != nil || e != 0 {
			t.Fatalf("epoch before any = %d, %v", e, err)
		}
		if err := r.SetEpoch(ctx, "drop", 0); err == nil {
			t.Fatal("epoch 0 accepted")
		}
		if err := r.SetEpoch(ctx, "drop", 3); err != nil {
			t.Fatal(err)
		}
		if err := r.SetEpoch(ctx, "drop", 3); err != nil {
			t.Fatalf("the same epoch again = %v", err)
		}
		if err := r.SetEpoch(ctx, "drop", 2); !errors.Is(err, admission.ErrStaleEpoch) {
			t.Fatalf("moving the epoch back = %v, want ErrStaleEpoch", err)
		}
		if e, err := r.Epoch(ctx, "drop"); err != nil || e != 3 {
			t.Fatalf("epoch = %d, %v; want 3", e, err)
		}
		if _, err := r.Admit(ctx, "drop", 2, admitsOf(a), t0, ttl); !errors.Is(err, admission.ErrStaleEpoch) {
			t.Fatalf("Admit with epoch 2 = %v, want ErrStaleEpoch", err)
		}
		placeIs(t, r, a)

		at := t0.Add(10 * time.Second)
		// Answered in the order asked, whatever the Seqs.
		got, err := r.Admit(ctx, "drop", 3, admitsOf(c, a), at, ttl)
		if err != nil {
			t.Fatal(err)
		}
		wantC, wantA := readied(c, at), readied(a, at)
		equal(t, "admitted", got, []admission.Place{wantC, wantA})
		placeIs(t, r, wantA)

		// A retry, even with new tokens, gives no second token; with it, b
		// is admitted.
		retry := admitsOf(a, c, b)
		for i := range retry {
			retry[i].Token += "-retry"
		}
		got, err = r.Admit(ctx, "drop", 3, retry, at.Add(time.Second), ttl)
		if err != nil {
			t.Fatal(err)
		}
		wantB := readied(b, at.Add(time.Second))
		wantB.Token = retry[2].Token
		equal(t, "retried", got, []admission.Place{wantA, wantC, wantB})

		// A newer admitter's first admission fences the older one, even
		// without its SetEpoch.
		d := mustEnter(t, r, "drop", "d", t0)
		if _, err := r.Admit(ctx, "drop", 5, nil, at, ttl); err != nil {
			t.Fatal(err)
		}
		if _, err := r.Admit(ctx, "drop", 3, admitsOf(d), at, ttl); !errors.Is(err, admission.ErrStaleEpoch) {
			t.Fatalf("Admit of the fenced admitter = %v, want ErrStaleEpoch", err)
		}
		if err := r.SetEpoch(ctx, "drop", 4); !errors.Is(err, admission.ErrStaleEpoch) {
			t.Fatalf("SetEpoch(4) after an admission at 5 = %v, want ErrStaleEpoch", err)
		}
		// The next lease's floor is the epoch that admitted last.
		if e, err := r.Epoch(ctx, "drop"); err != nil || e != 5 {
			t.Fatalf("epoch = %d, %v; want 5", e, err)
		}
		placeIs(t, r, d)
		// Epochs are the queue's own.
		e := mustEnter(t, r, "concert", "e", t0)
		if _, err := r.Admit(ctx, "concert", 1, admitsOf(e), at, ttl); err != nil {
			t.Fatalf("another queue's first admission = %v", err)
		}
		if e, err := r.Epoch(ctx, "concert"); err != nil || e != 1 {
			t.Fatalf("epoch of concert = %d, %v; want 1", e, err)
		}

		// All or nothing: an admit of no such place, or of another user's,
		// fails the call and admits nobody.
		for name, bad := range map[string]admission.Admit{
			"unknown seq":  {UserID: "d", Seq: d.Seq + 1000, Token: "tok-x"},
			"another user": {UserID: "zed", Seq: a.Seq, Token: "tok-y"},
		} {
			admits := append(admitsOf(d), bad)
			admits[0].Token = "tok-d-" + name
			if _, err := r.Admit(ctx, "drop", 5, admits, at, ttl); !errors.Is(err, admission.ErrNotFound) {
				t.Fatalf("%s: Admit = %v, want ErrNotFound", name, err)
			}
			placeIs(t, r, d)
		}
		// A token already given to another place is refused.
		if _, err := r.Admit(ctx, "drop", 5, []admission.Admit{{UserID: "d", Seq: d.Seq, Token: wantA.Token}}, at, ttl); err == nil {
			t.Fatal("a token given twice")
		}
		placeIs(t, r, d)
		// A place that left is answered as it is, without a token.
		left, err := r.Leave(ctx, "drop", "d", at)
		if err != nil {
			t.Fatal(err)
		}
		got, err = r.Admit(ctx, "drop", 5, admitsOf(d), at, ttl)
		if err != nil {
			t.Fatal(err)
		}
		equal(t, "admission of a place that left", got, []admission.Place{left})

		for name, call := range map[string]func() error{
			"no token life": func() error { _, err := r.Admit(ctx, "drop", 5, admitsOf(d), at, 0); return err },
			"epoch 0":       func() error { _, err := r.Admit(ctx, "drop", 0, admitsOf(d), at, ttl); return err },
			"no time":       func() error { _, err := r.Admit(ctx, "drop", 5, admitsOf(d), time.Time{}, ttl); return err },
			"no token": func() error {
				_, err := r.Admit(ctx, "drop", 5, []admission.Admit{{UserID: "d", Seq: d.Seq}}, at, ttl)
				return err
			},
			"a seq twice": func() error {
				_, err := r.Admit(ctx, "drop", 5, []admission.Admit{{UserID: "d", Seq: d.Seq, Token: "t1"}, {UserID: "d", Seq: d.Seq, Token: "t2"}}, at, ttl)
				return err
			},
			"a token twice": func() error {
				_, err := r.Admit(ctx, "drop", 5, []admission.Admit{{UserID: "a", Seq: a.Seq, Token: "t1"}, {UserID: "d", Seq: d.Seq, Token: "t1"}}, at, ttl)
				return err
			},
		} {
			if err := call(); err == nil {
				t.Errorf("%s: Admit succeeded", name)
			}
		}
	})

	t.Run("TokenLifecycle", func(t *testing.T) {
		r, ctx := newRecord(t), context.Background()
		p := mustEnter(t, r, "drop", "alice", t0)
		ready := mustAdmit(t, r, "drop", 1, t0, p)[0]
		tok, at := ready.Token, t0.Add(time.Second+300*time.Nanosecond)

		claimed, err := r.Claim(ctx, "drop", tok, at)
		if err != nil {
			t.Fatal(err)
		}
		want := ready
		want.Status, want.ClaimedAt, want.Version = admission.StatusClaimed, us(at), 3
		equal(t, "claimed", claimed, want)
		if _, err := r.Claim(ctx, "drop", tok, at); !errors.Is(err, admission.ErrAlreadyClaimed) {
			t.Fatalf("second claim = %v, want ErrAlreadyClaimed", err)
		}

		released, err := r.Release(ctx, "drop", tok, at)
		if err != nil {
			t.Fatal(err)
		}
		want = ready
		want.Version = 4
		equal(t, "released", released, want)
		if _, err := r.Release(ctx, "drop", tok, at); !errors.Is(err, admission.ErrNotClaimed) {
			t.Fatalf("release of a READY token = %v, want ErrNotClaimed", err)
		}
		if _, err := r.Consume(ctx, "drop", tok, at); !errors.Is(err, admission.ErrNotClaimed) {
			t.Fatalf("consumption of a READY token = %v, want ErrNotClaimed", err)
		}

		if _, err := r.Claim(ctx, "drop", tok, at); err != nil {
			t.Fatalf("claim after release = %v", err)
		}
		done := at.Add(time.Second)
		consumed, err := r.Consume(ctx, "drop", tok, done)
		if err != nil {
			t.Fatal(err)
		}
		want.Status, want.ClaimedAt, want.ConsumedAt, want.Version = admission.StatusConsumed, us(at), us(done), 6
		equal(t, "consumed", consumed, want)
		placeIs(t, r, want)
		if _, err := r.Claim(ctx, "drop", tok, done); !errors.Is(err, admission.ErrAlreadyClaimed) {
			t.Fatalf("claim of a CONSUMED token = %v, want ErrAlreadyClaimed", err)
		}
		for name, call := range map[string]func(context.Context, string, string, time.Time) (admission.Place, error){
			"consume": r.Consume, "release": r.Release,
		} {
			if _, err := call(ctx, "drop", tok, done); !errors.Is(err, admission.ErrNotClaimed) {
				t.Errorf("%s of a CONSUMED token = %v, want ErrNotClaimed", name, err)
			}
		}
		placeIs(t, r, want)

		// Unknown, or of another queue: not found.
		for _, k := range [][2]string{{"drop", "no-such-token"}, {"concert", tok}, {"drop", ""}} {
			for name, call := range map[string]func(context.Context, string, string, time.Time) (admission.Place, error){
				"claim": r.Claim, "consume": r.Consume, "release": r.Release,
			} {
				if _, err := call(ctx, k[0], k[1], done); !errors.Is(err, admission.ErrNotFound) {
					t.Errorf("%s(%q, %q) = %v, want ErrNotFound", name, k[0], k[1], err)
				}
			}
		}
	})

	t.Run("ExpiryByTheCallersNow", func(t *testing.T) {
		r, ctx := newRecord(t), context.Background()
		a, b := mustEnter(t, r, "drop", "a", t0), mustEnter(t, r, "drop", "b", t0)
		ps := mustAdmit(t, r, "drop", 1, t0, a, b)
		end := ps[0].ExpiresAt
		// The last microsecond of its life it is claimed; at its end it is
		// not found, before any Expire.
		if _, err := r.Claim(ctx, "drop", ps[0].Token, end); !errors.Is(err, admission.ErrNotFound) {
			t.Fatalf("claim at the token's end = %v, want ErrNotFound", err)
		}
		if _, err := r.Claim(ctx, "drop", ps[0].Token, end.Add(-time.Microsecond)); err != nil {
			t.Fatalf("claim a microsecond before its end = %v", err)
		}
		if _, err := r.Claim(ctx, "drop", ps[1].Token, end.Add(-time.Second)); err != nil {
			t.Fatal(err)
		}
		// A claimed token's life ends too: neither consumed nor released
		// after, claimed again it is not found.
		for name, call := range map[string]func(context.Context, string, string, time.Time) (admission.Place, error){
			"consume": r.Consume, "release": r.Release,
		} {
			if _, err := call(ctx, "drop", ps[0].Token, end); !errors.Is(err, admission.ErrNotClaimed) {
				t.Errorf("%s at the token's end = %v, want ErrNotClaimed", name, err)
			}
		}
		if _, err := r.Claim(ctx, "drop", ps[0].Token, end); !errors.Is(err, admission.ErrNotFound) {
			t.Fatalf("claim of a CLAIMED token at its end = %v, want ErrNotFound", err)
		}
		if _, err := r.Consume(ctx, "drop", ps[1].Token, end.Add(-time.Microsecond)); err != nil {
			t.Fatal(err)
		}
		placeIs(t, r, with(ps[0], admission.StatusClaimed, 3, us(end.Add(-time.Microsecond))))
	})

	t.Run("Expire", func(t *testing.T) {
		r, ctx := newRecord(t), context.Background()
		var ps []admission.Place
		for i := range 6 {
			p := mustEnter(t, r, "drop", fmt.Sprint("u", i), t0)
			// Admitted one a second, in reverse: the last entered expires
			// first.
			ps = append(ps, mustAdmit(t, r, "drop", 1, t0.Add(time.Duration(6-i)*time.Second), p)[0])
		}
		other := mustAdmit(t, r, "concert", 1, t0, mustEnter(t, r, "concert", "x", t0))[0]
		if _, err := r.Claim(ctx, "drop", ps[4].Token, t0.Add(3*time.Second)); err != nil {
			t.Fatal(err)
		}
		if _, err := r.Claim(ctx, "drop", ps[3].Token, t0.Add(3*time.Second)); err != nil {
			t.Fatal(err)
		}
		if _, err := r.Consume(ctx, "drop", ps[3].Token, t0.Add(4*time.Second)); err != nil {
			t.Fatal(err)
		}
		if _, err := r.Expire(ctx, "drop", t0, 0); err == nil {
			t.Fatal("Expire with limit 0 succeeded")
		}
		// By ps[2]'s end: ps[5], ps[4] (claimed) and ps[2]; ps[3] was
		// consumed. Two at a time, in the order their lives ended.
		now := ps[2].ExpiresAt
		got, err := r.Expire(ctx, "drop", now, 2)
		if err != nil {
			t.Fatal(err)
		}
		cur := func(i int) admission.Place { p, _ := r.Place(ctx, "drop", fmt.Sprint("u", i)); return p }
		if len(got) != 2 || got[0].Seq != ps[5].Seq || got[1].Seq != ps[4].Seq {
			t.Fatalf("first sweep = %+v; want u5, u4", got)
		}
		equal(t, "first expired", got, []admission.Place{cur(5), cur(4)})
		if got[0].Status != admission.StatusExpired || got[0].Version != 3 || got[1].Version != 4 ||
			got[1].ClaimedAt.IsZero() || got[0].Token != ps[5].Token {
			t.Fatalf("expired places = %+v", got)
		}
		got, err = r.Expire(ctx, "drop", now, 10)
		if err != nil {
			t.Fatal(err)
		}
		equal(t, "second sweep", got, []admission.Place{cur(2)})
		if got, err = r.Expire(ctx, "drop", now, 10); err != nil || len(got) != 0 {
			t.Fatalf("third sweep = %+v, %v; want none", got, err)
		}
		placeIs(t, r, ps[1])
		placeIs(t, r, ps[0])
		placeIs(t, r, other) // another queue's token is its own queue's
		if _, err := r.Claim(ctx, "drop", ps[5].Token, t0); !errors.Is(err, admission.ErrNotFound) {
			t.Fatalf("claim of an EXPIRED token, by an earlier now = %v, want ErrNotFound", err)
		}
		if cur(3).Status != admission.StatusConsumed {
			t.Fatalf("the consumed place = %+v", cur(3))
		}
	})

	t.Run("LeaveAndAbandon", func(t *testing.T) {
		r, ctx := newRecord(t), context.Background()
		a := mustEnter(t, r, "drop", "a", t0)
		left, err := r.Leave(ctx, "drop", "a", t0)
		if err != nil {
			t.Fatal(err)
		}
		equal(t, "left", left, with(a, admission.StatusLeft, 2, time.Time{}))
		placeIs(t, r, left)
		for _, u := range []string{"a", "nobody"} {
			if _, err := r.Leave(ctx, "drop", u, t0); !errors.Is(err, admission.ErrNotFound) {
				t.Errorf("Leave of %s = %v, want ErrNotFound", u, err)
			}
		}
		// READY leaves, keeping its token, which is no longer claimed.
		b := mustAdmit(t, r, "drop", 1, t0, mustEnter(t, r, "drop", "b", t0))[0]
		if left, err = r.Leave(ctx, "drop", "b", t0); err != nil || left.Token != b.Token || left.Version != 3 {
			t.Fatalf("Leave of READY = %+v, %v", left, err)
		}
		if _, err := r.Claim(ctx, "drop", b.Token, t0); !errors.Is(err, admission.ErrNotFound) {
			t.Fatalf("claim of a token whose user left = %v, want ErrNotFound", err)
		}
		// CLAIMED stays: the downstream is acting on it.
		c := mustAdmit(t, r, "drop", 1, t0, mustEnter(t, r, "drop", "c", t0))[0]
		c, err = r.Claim(ctx, "drop", c.Token, t0)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := r.Leave(ctx, "drop", "c", t0); !errors.Is(err, admission.ErrAlreadyClaimed) {
			t.Fatalf("Leave of CLAIMED = %v, want ErrAlreadyClaimed", err)
		}
		placeIs(t, r, c)

		// Abandon ends WAITING places only, returned in Seq order.
		d, e := mustEnter(t, r, "drop", "d", t0), mustEnter(t, r, "drop", "e", t0)
		f := mustAdmit(t, r, "drop", 1, t0, mustEnter(t, r, "drop", "f", t0))[0]
		elsewhere := mustEnter(t, r, "concert", "d", t0)
		got, err := r.Abandon(ctx, "drop", []string{"e", "f", "nobody", "c", "a", "d"}, t0)
		if err != nil {
			t.Fatal(err)
		}
		equal(t, "abandoned", got, []admission.Place{
			with(d, admission.StatusAbandoned, 2, time.Time{}), with(e, admission.StatusAbandoned, 2, time.Time{}),
		})
		placeIs(t, r, f)
		placeIs(t, r, c)
		placeIs(t, r, elsewhere)
		for _, users := range [][]string{{"d", "e"}, nil} {
			if got, err := r.Abandon(ctx, "drop", users, t0); err != nil || len(got) != 0 {
				t.Fatalf("Abandon(%v) = %+v, %v; want none", users, got, err)
			}
		}
	})

	t.Run("WaitingOrderAndPaging", func(t *testing.T) {
		r, ctx := newRecord(t), context.Background()
		var want []admission.Place
		for i := range 25 {
			p := mustEnter(t, r, "drop", fmt.Sprint("u", i), t0)
			mustEnter(t, r, "concert", fmt.Sprint("u", i), t0)
			switch i % 5 {
			case 1:
				mustAdmit(t, r, "drop", 1, t0, p)
			case 3:
				if _, err := r.Leave(ctx, "drop", p.UserID, t0); err != nil {
					t.Fatal(err)
				}
			default:
				want = append(want, p)
			}
		}
		var got []admission.Place
		var after int64
		for {
			page, err := r.Waiting(ctx, "drop", after, 4)
			if err != nil {
				t.Fatal(err)
			}
			if len(page) > 4 {
				t.Fatalf("page of %d, limit 4", len(page))
			}
			if len(page) == 0 {
				break
			}
			got = append(got, page...)
			after = page[len(page)-1].Seq
		}
		equal(t, "waiting, paged", got, want)
		// after need not be a waiting place's Seq.
		page, err := r.Waiting(ctx, "drop", want[2].Seq+1, 100)
		if err != nil {
			t.Fatal(err)
		}
		equal(t, "waiting after a gap", page, want[3:])
		if _, err := r.Waiting(ctx, "drop", 0, 0); err == nil {
			t.Fatal("Waiting with limit 0 succeeded")
		}
		if page, err := r.Waiting(ctx, "nowhere", 0, 10); err != nil || len(page) != 0 {
			t.Fatalf("waiting of an unknown queue = %+v, %v", page, err)
		}
	})

	t.Run("AdmittedOrder", func(t *testing.T) {
		r, ctx := newRecord(t), context.Background()
		var ps []admission.Place
		for i := range 6 {
			ps = append(ps, mustEnter(t, r, "drop", fmt.Sprint("u", i), t0))
		}
		t1, t2, t3 := t0.Add(time.Second), t0.Add(2*time.Second), t0.Add(3*time.Second)
		late := mustAdmit(t, r, "drop", 1, t3, ps[0], ps[1])
		// Another admitter, whose clock is behind, admits after.
		early := mustAdmit(t, r, "drop", 2, t1, ps[3], ps[2])
		mid := mustAdmit(t, r, "drop", 2, t2, ps[4])
		mustAdmit(t, r, "concert", 1, t2, mustEnter(t, r, "concert", "x", t0))
		// What they became since does not matter.
		if _, err := r.Leave(ctx, "drop", "u2", t3); err != nil {
			t.Fatal(err)
		}
		left, _ := r.Place(ctx, "drop", "u2")
		got, err := r.Admitted(ctx, "drop", us(t1), 10)
		if err != nil {
			t.Fatal(err)
		}
		equal(t, "admitted since t1", got, []admission.Place{left, early[0], mid[0], late[0], late[1]})
		// since is taken to the microsecond, as the times stored.
		if got, err = r.Admitted(ctx, "drop", us(t1).Add(time.Microsecond), 2); err != nil {
			t.Fatal(err)
		}
		equal(t, "admitted after t1, two", got, []admission.Place{mid[0], late[0]})
		if got, err = r.Admitted(ctx, "drop", t3.Add(time.Microsecond), 10); err != nil || len(got) != 0 {
			t.Fatalf("admitted after the last = %+v, %v", got, err)
		}
		if _, err := r.Admitted(ctx, "drop", t0, -1); err == nil {
			t.Fatal("Admitted with limit -1 succeeded")
		}
	})

	t.Run("ConcurrentEntriesKeepTheirOrder", func(t *testing.T) {
		testEntryOrder(t, newRecord(t))
	})

	t.Run("ConcurrentDoubleEntry", func(t *testing.T) {
		r, ctx := newRecord(t), context.Background()
		const users = 200
		type result struct {
			p       admission.Place
			created bool
		}
		results := make([][2]result, users)
		var wg sync.WaitGroup
		start := make(chan struct{})
		for i := range users {
			for j := range 2 {
				wg.Go(func() {
					<-start
					p, created, err := r.Enter(ctx, "drop", fmt.Sprint("u", i), t0.Add(time.Duration(j)*time.Millisecond), t0)
					if err != nil {
						t.Error(err)
					}
					results[i][j] = result{p, created}
				})
			}
		}
		close(start)
		wg.Wait()
		for i, pair := range results {
			if pair[0].created == pair[1].created {
				t.Fatalf("user %d: created %v and %v; want exactly one", i, pair[0].created, pair[1].created)
			}
			if !reflect.DeepEqual(pair[0].p, pair[1].p) {
				t.Fatalf("user %d entered twice: %+v and %+v", i, pair[0].p, pair[1].p)
			}
		}
		all, err := r.Waiting(ctx, "drop", 0, 2*users)
		if err != nil || len(all) != users {
			t.Fatalf("%d waiting, %v; want %d", len(all), err, users)
		}
	})

	t.Run("Races", func(t *testing.T) {
		testRaces(t, newRecord(t))
	})
}

// testEntryOrder enters from many goroutines at once, each entry between
// two ticks of one counter, and checks that an Enter that returned before
// another began has the smaller Seq; a reader paging Waiting by its cursor
// meanwhile misses no entry.
func testEntryOrder(t *testing.T, enterers ...admission.Record) {
	ctx := context.Background()
	const workers, per = 32, 40
	type call struct {
		start, end int64
		seq        int64
	}
	var (
		mu    sync.Mutex
		tick  int64
		calls []call
		wg    sync.WaitGroup
		done  = make(chan struct{})
	)
	next := func() int64 { mu.Lock(); defer mu.Unlock(); tick++; return tick }
	followed := make(chan []int64, 1)
	go func() { // the follower
		var seen []int64
		var after int64
		for finished := false; ; {
			select {
			case <-done:
				finished = true
			default:
			}
			page, err := enterers[0].Waiting(ctx, "drop", after, 50)
			if err != nil {
				t.Error(err)
				break
			}
			for _, p := range page {
				seen = append(seen, p.Seq)
				after = p.Seq
			}
			if finished && len(page) == 0 {
				break
			}
		}
		followed <- seen
	}()
	for w := range workers {
		r := enterers[w%len(enterers)]
		wg.Go(func() {
			for i := range per {
				c := call{start: next()}
				p, created, err := r.Enter(ctx, "drop", fmt.Sprintf("w%d-%d", w, i), t0, time.Time{})
				c.end, c.seq = next(), p.Seq
				if err != nil || !created {
					t.Errorf("Enter: created %v, %v", created, err)
					return
				}
				mu.Lock()
				calls = append(calls, c)
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	close(done)
	seen := <-followed
	if len(calls) != workers*per {
		t.Fatalf("%d entries of %d", len(calls), workers*per)
	}
	// Walk the calls by start; every call that ended before it started has
	// a smaller Seq.
	byEnd := slices.Clone(calls)
	slices.SortFunc(byEnd, func(a, b call) int { return int(a.end - b.end) })
	slices.SortFunc(calls, func(a, b call) int { return int(a.start - b.start) })
	var (
		maxSeq int64 // of the calls ended so far
		j      int
		pairs  int
	)
	for _, c := range calls {
		for ; j < len(byEnd) && byEnd[j].end < c.start; j++ {
			maxSeq = max(maxSeq, byEnd[j].seq)
		}
		pairs += j
		if c.seq <= maxSeq {
			t.Fatalf("an entry begun at tick %d has Seq %d, not above %d of one that returned before", c.start, c.seq, maxSeq)
		}
	}
	if pairs == 0 {
		t.Fatal("no entry returned before another began: nothing checked")
	}
	if len(seen) != len(calls) {
		t.Fatalf("the follower saw %d of %d entries: it passed some before they were visible", len(seen), len(calls))
	}
	if !slices.IsSorted(seen) {
		t.Fatal("the follower saw Seqs out of order")
	}
}

// testRaces runs 1,000 pairs of goroutines racing each of three ways and
// counts the outcomes: exactly one of each pair wins.
func testRaces(t *testing.T, r admission.Record) {
	ctx := context.Background()
	const n = 1000
	at := t0.Add(time.Second)
	ready := func(queue string) []admission.Place {
		ps := fill(t, r, queue, n)
		return mustAdmit(t, r, queue, 1, t0, ps...)
	}

	t.Run("ClaimVsClaim", func(t *testing.T) {
		ps := ready("claims")
		var won, lost count
		race(n, func(i, _ int) {
			_, err := r.Claim(ctx, "claims", ps[i].Token, at)
			switch {
			case err == nil:
				won.add(i)
			case errors.Is(err, admission.ErrAlreadyClaimed):
				lost.add(i)
			default:
				t.Error(err)
			}
		})
		won.each(t, n, "claims won")
		lost.each(t, n, "claims told ErrAlreadyClaimed")
	})

	t.Run("ConsumeVsRelease", func(t *testing.T) {
		ps := ready("settles")
		var wg sync.WaitGroup
		for i := range ps {
			wg.Go(func() {
				if _, err := r.Claim(ctx, "settles", ps[i].Token, at); err != nil {
					t.Error(err)
				}
			})
			if i%8 == 7 {
				wg.Wait()
			}
		}
		wg.Wait()
		var consumed, released, refused count
		race(n, func(i, side int) {
			var err error
			if side == 0 {
				_, err = r.Consume(ctx, "settles", ps[i].Token, at)
			} else {
				_, err = r.Release(ctx, "settles", ps[i].Token, at)
			}
			switch {
			case err == nil && side == 0:
				consumed.add(i)
			case err == nil:
				released.add(i)
			case errors.Is(err, admission.ErrNotClaimed):
				refused.add(i)
			default:
				t.Error(err)
			}
		})
		won := consumed.union(&released)
		won.each(t, n, "consumptions and releases won")
		refused.each(t, n, "consumptions and releases told ErrNotClaimed")
		for i, p := range ps {
			got, err := r.Place(ctx, "settles", p.UserID)
			want := admission.StatusReady
			if consumed.has(i) {
				want = admission.StatusConsumed
			}
			if err != nil || got.Status != want || got.Version != 4 {
				t.Fatalf("place %d = %+v, %v; want %s at version 4", i, got, err, want)
			}
		}
		t.Logf("%d consumed, %d released", consumed.len(), released.len())
	})

	t.Run("AdmitRetryVsLeave", func(t *testing.T) {
		ps := fill(t, r, "leaves", n)
		var admitted, leftFirst count
		race(n, func(i, side int) {
			p := ps[i]
			if side == 1 {
				got, err := r.Leave(ctx, "leaves", p.UserID, at)
				if err != nil {
					t.Error(err)
					return
				}
				if got.Token == "" {
					leftFirst.add(i)
				}
				return
			}
			first, err := r.Admit(ctx, "leaves", 1, admitsOf(p), at, ttl)
			if err != nil {
				t.Error(err)
				return
			}
			// The retry, with a token of its own, gives no second one.
			retry := admitsOf(p)
			retry[0].Token += "-retry"
			again, err := r.Admit(ctx, "leaves", 1, retry, at, ttl)
			if err != nil {
				t.Error(err)
				return
			}
			if first[0].Status == admission.StatusReady {
				admitted.add(i)
			}
			if again[0].Token != first[0].Token {
				t.Errorf("place %d: admitted with %q, then %q", i, first[0].Token, again[0].Token)
			}
		})
		admitted.union(&leftFirst).each(t, n, "admissions and leaves that won")
		for i, p := range ps {
			got, err := r.Place(ctx, "leaves", p.UserID)
			if err != nil || got.Status != admission.StatusLeft {
				t.Fatalf("place %d = %+v, %v; want LEFT", i, got, err)
			}
			if want := admitsOf(p)[0].Token; admitted.has(i) != (got.Token == want) || (!admitted.has(i) && got.Token != "") {
				t.Fatalf("place %d: admitted first %v, token %q", i, admitted.has(i), got.Token)
			}
		}
		t.Logf("%d admitted first, %d left first", admitted.len(), leftFirst.len())
	})
}

// race runs f(i, 0) and f(i, 1) in two goroutines for each i < n, all at
// once.
func race(n int, f func(i, side int)) {
	var wg sync.WaitGroup
	start := make(chan struct{})
	for i := range n {
		for side := range 2 {
			wg.Go(func() { <-start; f(i, side) })
		}
	}
	close(start)
	wg.Wait()
}

// count is a set of indexes, safe for concurrent adds, that remembers an
// index added twice.
type count struct {
	mu    sync.Mutex
	set   map[int]int
	twice bool
}

func (c *count) add(i int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.set == nil {
		c.set = map[int]int{}
	}
	c.set[i]++
	c.twice = c.twice || c.set[i] > 1
}

func (c *count) has(i int) bool { c.mu.Lock(); defer c.mu.Unlock(); return c.set[i] > 0 }
func (c *count) len() int       { c.mu.Lock(); defer c.mu.Unlock(); return len(c.set) }

// union is c and o together, an index in both counted twice.
func (c *count) union(o *count) *count {
	u := &count{}
	for _, s := range []*count{c, o} {
		for i, k := range s.set {
			for range k {
				u.add(i)
			}
		}
	}
	return u
}

// each fails the test unless every index below n is in c exactly once.
func (c *count) each(t *testing.T, n int, what string) {
	t.Helper()
	if c.twice || len(c.set) != n {
		t.Fatalf("%s: %d of %d indexes (some twice: %v); want each once", what, len(c.set), n, c.twice)
	}
}

// fill enters n users into queue from a few goroutines and returns their
// places, user i's at i.
func fill(tb testing.TB, r admission.Record, queue string, n int) []admission.Place {
	tb.Helper()
	ps := make([]admission.Place, n)
	var wg sync.WaitGroup
	for w := range 16 {
		wg.Go(func() {
			for i := w; i < n; i += 16 {
				ps[i] = mustEnter(tb, r, queue, fmt.Sprint("u", i), t0)
			}
		})
	}
	wg.Wait()
	return ps
}

func mustEnter(tb testing.TB, r admission.Record, queue, user string, at time.Time) admission.Place {
	tb.Helper()
	p, created, err := r.Enter(context.Background(), queue, user, at, time.Time{})
	if err != nil || !created {
		tb.Fatalf("Enter %s of %s: created %v, %v", queue, user, created, err)
	}
	return p
}

// enterAgain enters a user holding a live place and returns that place.
func enterAgain(t *testing.T, r admission.Record, queue, user string) admission.Place {
	t.Helper()
	p, created, err := r.Enter(context.Background(), queue, user, t0.Add(time.Hour), time.Time{})
	if err != nil || created {
		t.Fatalf("Enter %s of %s again: created %v, %v", queue, user, created, err)
	}
	return p
}

// admitsOf are the admits of ps, each with a token of its own.
func admitsOf(ps ...admission.Place) []admission.Admit {
	out := make([]admission.Admit, len(ps))
	for i, p := range ps {
		out[i] = admission.Admit{UserID: p.UserID, Seq: p.Seq, Token: fmt.Sprintf("tok-%s-%d", p.Queue, p.Seq)}
	}
	return out
}

// readied is p as admitsOf's admission at at makes it.
func readied(p admission.Place, at time.Time) admission.Place {
	p.Status, p.Token = admission.StatusReady, admitsOf(p)[0].Token
	p.AdmittedAt, p.ExpiresAt = us(at), us(at).Add(ttl)
	p.Version++
	return p
}

func mustAdmit(tb testing.TB, r admission.Record, queue string, epoch int64, at time.Time, ps ...admission.Place) []admission.Place {
	tb.Helper()
	got, err := r.Admit(context.Background(), queue, epoch, admitsOf(ps...), at, ttl)
	if err != nil {
		tb.Fatalf("Admit %d to %s: %v", len(ps), queue, err)
	}
	for i, p := range got {
		if p.Status != admission.StatusReady || p.Token != admitsOf(ps[i])[0].Token {
			tb.Fatalf("admitted %+v", p)
		}
	}
	return got
}

// with is p changed to status at version, claimed at claimedAt.
func with(p admission.Place, status admission.Status, version int64, claimedAt time.Time) admission.Place {
	p.Status, p.Version, p.ClaimedAt = status, version, claimedAt
	return p
}

// placeIs fails unless the user's newest place is want.
func placeIs(t *testing.T, r admission.Record, want admission.Place) {
	t.Helper()
	got, err := r.Place(context.Background(), want.Queue, want.UserID)
	if err != nil {
		t.Fatal(err)
	}
	equal(t, "place of "+want.UserID, got, want)
}

func waitingIs(t *testing.T, r admission.Record, queue string, want ...admission.Place) {
	t.Helper()
	got, err := r.Waiting(context.Background(), queue, 0, 1000)
	if err != nil {
		t.Fatal(err)
	}
	if len(want) == 0 {
		want = nil
	}
	equal(t, "waiting of "+queue, got, want)
}

func equal[T any](tb testing.TB, what string, got, want T) {
	tb.Helper()
	if !reflect.DeepEqual(got, want) {
		tb.Fatalf("%s:\n got %+v\nwant %+v", what, got, want)
	}
}
