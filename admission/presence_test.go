package admission_test

import (
	"context"
	"errors"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/matchgate/matchgate/admission"
	"github.com/matchgate/matchgate/admission/line"
	"github.com/matchgate/matchgate/admission/record"
)

// roomOf is newRoom with queues of one's own; the first is the room's.
func roomOf(t *testing.T, qs ...admission.Queue) *room {
	t.Helper()
	clk := &clock{now: time.Date(2026, 12, 2, 1, 0, 0, 0, time.UTC)}
	r := &room{t: t, q: qs[0], clk: clk, rec: record.NewMemory(), ln: line.NewMemory()}
	svc, err := admission.NewService(admission.ServiceConfig{Queues: qs, Record: r.rec, Line: r.ln, Now: clk.Now})
	if err != nil {
		t.Fatal(err)
	}
	r.svc = svc
	return r
}

func (r *room) status(user string) admission.Status {
	r.t.Helper()
	p, err := r.rec.Place(context.Background(), r.q.Name, user)
	if err != nil {
		r.t.Fatalf("place of %s: %v", user, err)
	}
	return p.Status
}

func (r *room) step(a *admission.Admitter) admission.PassResult {
	r.t.Helper()
	res, err := a.Step(context.Background())
	if err != nil {
		r.t.Fatal(err)
	}
	return res
}

func (r *room) rank(user string) int64 {
	r.t.Helper()
	rank, _, ok, err := r.ln.Rank(context.Background(), r.q.Name, user)
	if err != nil || !ok {
		r.t.Fatalf("rank of %s: %v %v", user, ok, err)
	}
	return rank
}

// A waiter whose socket is gone and who does not poll loses the place once
// abandonAfter has passed, not before; everyone behind moves up; a waiter
// back within abandonAfter, and one who polls, keep their exact places.
func TestAnAbsentWaiterIsAbandoned(t *testing.T) {
	r := roomOf(t, admission.Queue{Name: "launch", Rate: 1, TokenTTL: time.Minute, AbandonAfter: 10 * time.Second})
	ctx := context.Background()
	users := r.enter(40)
	const silent, back, poller = "u0020", "u0030", "u0035"
	start := r.clk.Now()
	a := r.admitter("a")
	var before21 int64
	for i := range 61 { // 30 s in steps of 500 ms
		elapsed := time.Duration(i) * 500 * time.Millisecond
		if i%4 == 0 { // the gateway's touch of the sockets, every 2 s
			var held []string
			for _, u := range users {
				if u == silent || u == poller || (u == back && elapsed < 8*time.Second) {
					continue
				}
				held = append(held, u)
			}
			if err := r.svc.Touch(ctx, r.q.Name, held); err != nil {
				t.Fatal(err)
			}
		}
		if i%10 == 0 { // the poller asks every 5 s
			if _, err := r.svc.Position(ctx, r.q.Name, poller); err != nil {
				t.Fatal(err)
			}
		}
		if elapsed == 10500*time.Millisecond {
			before21 = r.rank("u0021")
		}
		res := r.step(a)
		switch st := r.status(silent); {
		case elapsed <= 10*time.Second && st != admission.StatusWaiting:
			t.Fatalf("%s is %s at T+%v, before abandonAfter", silent, st, elapsed)
		case elapsed == 11*time.Second:
			// The first sweep past T+10s: abandoned, and the line's front
			// admitted (one a second) in the same pass.
			if st != admission.StatusAbandoned || res.Abandoned != 1 {
				t.Fatalf("%s is %s at T+11s (%+v), want ABANDONED", silent, st, res)
			}
			if after := r.rank("u0021"); after != before21-2 {
				t.Fatalf("u0021 moved from rank %d to %d, want %d: one abandoned ahead, one admitted", before21, after, before21-2)
			}
		}
		r.clk.advance(500 * time.Millisecond)
	}
	if r.clk.Now().Sub(start) < 30*time.Second {
		t.Fatal("the test ran short")
	}
	// Nobody else was abandoned; the line is the entry order without the
	// admitted and the abandoned one.
	admitted := map[string]bool{}
	for _, p := range r.admitted() {
		admitted[p.UserID] = true
	}
	var want []string
	for _, u := range users {
		st := r.status(u)
		if u == silent {
			continue
		}
		if st == admission.StatusAbandoned {
			t.Fatalf("%s abandoned", u)
		}
		if !admitted[u] {
			want = append(want, u)
		}
	}
	if len(admitted) < 25 || admitted[silent] {
		t.Fatalf("%d admitted (silent one among them: %v)", len(admitted), admitted[silent])
	}
	if got := userIDs(headOf(t, r.ln, r.q.Name)); !slices.Equal(got, want) {
		t.Fatalf("line %v, want %v", got, want)
	}
	if !slices.Contains(want, back) && !admitted[back] {
		t.Fatalf("%s lost its place", back)
	}
	if pos, err := r.svc.Position(ctx, r.q.Name, silent); err != nil || pos.Status != "" {
		t.Fatalf("position of the abandoned = %+v, %v; want none", pos, err)
	}
}

// Admissions are not spent on those who left: of a crowd gone silent, only
// the waiter who polls is still there to be admitted.
func TestAPolledWaiterIsNeverAbandoned(t *testing.T) {
	r := roomOf(t, admission.Queue{Name: "launch", Rate: 1, TokenTTL: time.Minute, AbandonAfter: 10 * time.Second})
	ctx := context.Background()
	users := r.enter(100)
	poller := users[99]
	a := r.admitter("a")
	for i := range 40 { // 40 s in steps of 1 s, a poll every 9 s
		if i%9 == 0 {
			if _, err := r.svc.Position(ctx, r.q.Name, poller); err != nil {
				t.Fatal(err)
			}
		}
		r.step(a)
		r.clk.advance(time.Second)
	}
	if st := r.status(poller); st != admission.StatusReady {
		t.Fatalf("the poller is %s, want READY: admitted once the silent were abandoned", st)
	}
	abandoned := 0
	for _, u := range users[:99] {
		if r.status(u) == admission.StatusAbandoned {
			abandoned++
		}
	}
	// About 11 were admitted in the first 11 s; the rest were abandoned.
	if got := len(r.admitted()); abandoned+got != 100 || abandoned < 80 {
		t.Fatalf("%d abandoned, %d admitted, of 100", abandoned, got)
	}
}

// Abandonment reads a thousand at a time and goes on while batches are
// full: a crowd leaving at once is gone within a few sweeps.
func TestACrowdIsAbandonedInBatches(t *testing.T) {
	const n = 2500
	r := roomOf(t, admission.Queue{Name: "launch", Rate: 1, TokenTTL: time.Minute, AbandonAfter: 10 * time.Second})
	r.enter(n)
	r.clk.advance(11 * time.Second)
	a := r.admitter("a")
	total := 0
	for i := range 5 {
		res := r.step(a)
		if i == 0 && res.Abandoned < 1000 {
			t.Fatalf("the first sweep abandoned %d, want at least a full batch", res.Abandoned)
		}
		total += res.Abandoned
		r.clk.advance(time.Second)
	}
	if total != n || len(r.admitted()) != 0 {
		t.Fatalf("%d abandoned, %d admitted, want all %d abandoned before any admission", total, len(r.admitted()), n)
	}
	if sz, _ := r.ln.Size(context.Background(), r.q.Name); sz != 0 {
		t.Fatalf("%d left in the line", sz)
	}
}

// A line entry whose place the record no longer holds WAITING (the leave's
// removal from the line failed) is not counted as abandoned, and is taken
// out of the line and of presence all the same.
func TestALeftoverInTheLineIsRemoved(t *testing.T) {
	r := roomOf(t, admission.Queue{Name: "launch", Rate: 1, TokenTTL: time.Minute, AbandonAfter: 10 * time.Second})
	ctx := context.Background()
	users := r.enter(3)
	if _, err := r.rec.Leave(ctx, r.q.Name, users[2], r.clk.Now()); err != nil {
		t.Fatal(err)
	}
	r.clk.advance(11 * time.Second)
	if err := r.svc.Touch(ctx, r.q.Name, users[1:2]); err != nil {
		t.Fatal(err)
	}
	res := r.step(r.admitter("a"))
	if res.Abandoned != 1 || r.status(users[0]) != admission.StatusAbandoned || r.status(users[2]) != admission.StatusLeft {
		t.Fatalf("%+v: %s %s, want one abandoned and the leftover still LEFT", res, r.status(users[0]), r.status(users[2]))
	}
	// users[1] was admitted in the same pass; nobody is left in the line.
	if sz, _ := r.ln.Size(ctx, r.q.Name); sz != 0 || r.status(users[1]) != admission.StatusReady {
		t.Fatalf("line of %d, %s %s", sz, users[1], r.status(users[1]))
	}
	if idle, _ := r.ln.Idle(ctx, r.q.Name, r.clk.Now().Add(time.Hour), 10); len(idle) != 0 {
		t.Fatalf("presence left: %v", idle)
	}
}

// A line lost with Redis and rebuilt sees everyone at the rebuild: nobody
// is abandoned for the time the line was gone, and the silent are
// abandoned abandonAfter later.
func TestARebuiltLineAbandonsNobodyAtOnce(t *testing.T) {
	r := roomOf(t, admission.Queue{Name: "launch", Rate: 1, TokenTTL: time.Minute, AbandonAfter: 10 * time.Second})
	r.enter(20)
	r.clk.advance(30 * time.Second)
	r.ln = line.NewMemory() // the line is lost
	a := r.admitter("a")
	if res := r.step(a); res.Rebuilt != 20 || res.Abandoned != 0 || res.Admitted != 1 {
		t.Fatalf("first pass after the loss: %+v, want 20 rebuilt, none abandoned, one admitted", res)
	}
	r.clk.advance(10 * time.Second)
	if res := r.step(a); res.Abandoned != 0 {
		t.Fatalf("abandoned %d at abandonAfter after the rebuild, not past it", res.Abandoned)
	}
	r.clk.advance(time.Second)
	if res := r.step(a); res.Abandoned != 18 {
		t.Fatalf("past abandonAfter after the rebuild: %+v, want the 18 waiting abandoned", res)
	}
}

// Polls and entries count as presence; a touch of an unknown queue is
// refused.
func TestPollsAndEntriesArePresence(t *testing.T) {
	r := roomOf(t, admission.Queue{Name: "launch", Rate: 1, TokenTTL: time.Minute, AbandonAfter: 10 * time.Second})
	ctx := context.Background()
	users := r.enter(3)
	idle := func(before time.Duration) []string {
		t.Helper()
		got, err := r.ln.Idle(ctx, r.q.Name, r.clk.Now().Add(-before), 10)
		if err != nil {
			t.Fatal(err)
		}
		return got
	}
	r.clk.advance(8 * time.Second)
	if _, err := r.svc.Position(ctx, r.q.Name, users[0]); err != nil {
		t.Fatal(err)
	}
	if _, created, err := r.svc.Enter(ctx, r.q.Name, users[1]); err != nil || created {
		t.Fatalf("second entry: created %v, %v", created, err)
	}
	if got := idle(5 * time.Second); !slices.Equal(got, users[2:]) {
		t.Fatalf("unseen for 5 s: %v, want only %s", got, users[2])
	}
	if err := r.svc.Touch(ctx, "nope", users); !errors.Is(err, admission.ErrUnknownQueue) {
		t.Fatalf("touch of an unknown queue: %v", err)
	}
	if err := r.svc.Touch(ctx, r.q.Name, nil); err != nil {
		t.Fatalf("touch of nobody: %v", err)
	}
}

// Ranks reads many places at once, with the counter that moves them on:
// rank - (passed - passed0) is the rank after the admissions in between.
func TestServiceRanks(t *testing.T) {
	r := roomOf(t, admission.Queue{Name: "launch", Rate: 5, TokenTTL: time.Minute})
	ctx := context.Background()
	r.enter(10)
	pos, passed0, err := r.svc.Ranks(ctx, r.q.Name, []string{"u0003", "stranger", "u0007"})
	if err != nil || len(pos) != 3 || passed0 != 0 {
		t.Fatalf("ranks = %+v, passed %d, %v", pos, passed0, err)
	}
	if pos[0].Status != admission.StatusWaiting || pos[0].Rank != 3 || pos[0].Total != 10 || pos[0].ETA.Seconds <= 0 || pos[0].PollAfter <= 0 {
		t.Fatalf("u0003: %+v, want WAITING 3 of 10 with an ETA", pos[0])
	}
	if pos[1].Status != "" || pos[2].Rank != 7 {
		t.Fatalf("stranger %+v, u0007 %+v", pos[1], pos[2])
	}
	if pos[2].ETA.Seconds <= pos[0].ETA.Seconds {
		t.Fatalf("ETA of rank 7 %v, of rank 3 %v", pos[2].ETA.Seconds, pos[0].ETA.Seconds)
	}
	r.step(r.admitter("a")) // admits 5
	later, passed, err := r.svc.Ranks(ctx, r.q.Name, []string{"u0007", "u0002"})
	if err != nil || passed != 5 {
		t.Fatalf("after a batch: passed %d, %v", passed, err)
	}
	if later[0].Rank != pos[2].Rank-(passed-passed0) || later[0].Total != 5 {
		t.Fatalf("u0007 after the batch: %+v, want rank %d of 5", later[0], pos[2].Rank-(passed-passed0))
	}
	if later[1].Status != "" {
		t.Fatalf("u0002, admitted: %+v, want not waiting", later[1])
	}
	if _, _, err := r.svc.Ranks(ctx, "nope", nil); !errors.Is(err, admission.ErrUnknownQueue) {
		t.Fatalf("ranks of an unknown queue: %v", err)
	}
}

// Places lists a user's live places in every admission queue, for hello.
func TestServicePlaces(t *testing.T) {
	launch := admission.Queue{Name: "launch", Rate: 5, TokenTTL: time.Minute, AbandonAfter: 10 * time.Second}
	sale := admission.Queue{Name: "sale", Rate: 5, TokenTTL: time.Minute}
	r := roomOf(t, sale, launch)
	ctx := context.Background()
	for _, q := range []string{"sale", "launch"} {
		if _, _, err := r.svc.Enter(ctx, q, "u"); err != nil {
			t.Fatal(err)
		}
	}
	if _, _, err := r.svc.Enter(ctx, "launch", "v"); err != nil {
		t.Fatal(err)
	}
	r.step(r.admitter("a")) // admits u in sale; launch has no admitter
	r.clk.advance(9 * time.Second)
	ps, err := r.svc.Places(ctx, "u")
	if err != nil || len(ps) != 2 {
		t.Fatalf("places = %+v, %v", ps, err)
	}
	if ps[0].Queue != "launch" || ps[0].Position.Status != admission.StatusWaiting || ps[0].Position.Rank != 0 {
		t.Fatalf("first place %+v, want launch WAITING at the front", ps[0])
	}
	if ps[1].Queue != "sale" || ps[1].Position.Status != admission.StatusReady || ps[1].Position.Token == "" {
		t.Fatalf("second place %+v, want sale READY with a token", ps[1])
	}
	// Connecting is being seen: u's place is not idle, v's is.
	idle, err := r.ln.Idle(ctx, "launch", r.clk.Now().Add(-5*time.Second), 10)
	if err != nil || !slices.Equal(idle, []string{"v"}) {
		t.Fatalf("idle in launch = %v, %v; want v alone", idle, err)
	}
	if ps, err := r.svc.Places(ctx, "stranger"); err != nil || len(ps) != 0 {
		t.Fatalf("places of a stranger = %+v, %v", ps, err)
	}
	if err := r.svc.Leave(ctx, "launch", "u"); err != nil {
		t.Fatal(err)
	}
	if ps, err := r.svc.Places(ctx, "u"); err != nil || len(ps) != 1 || ps[0].Queue != "sale" {
		t.Fatalf("places after leaving launch = %+v, %v", ps, err)
	}
}

type announcement struct {
	queue    string
	ready    []admission.Place
	passed   int64
	deadline bool
}

type fakeAnnouncer struct {
	mu    sync.Mutex
	calls []announcement
}

func (f *fakeAnnouncer) Admitted(ctx context.Context, queue string, ready []admission.Place, passed int64) {
	_, deadline := ctx.Deadline()
	f.mu.Lock()
	f.calls = append(f.calls, announcement{queue, ready, passed, deadline})
	f.mu.Unlock()
}

func (f *fakeAnnouncer) take() []announcement {
	f.mu.Lock()
	defer f.mu.Unlock()
	c := f.calls
	f.calls = nil
	return c
}

// The admitter announces each batch once its tokens are written: the
// places made READY, tokens and all, and the passed counter after it.
func TestTheAdmitterAnnouncesEachBatch(t *testing.T) {
	r := roomOf(t, admission.Queue{Name: "launch", Rate: 5, TokenTTL: time.Minute})
	ctx := context.Background()
	users := r.enter(8)
	f := &fakeAnnouncer{}
	a, err := admission.NewAdmitter(admission.AdmitterConfig{Queue: r.q, Record: r.rec, Line: r.ln, Owner: "a",
		LeaseTTL: 4 * time.Second, Now: r.clk.Now, Announce: f})
	if err != nil {
		t.Fatal(err)
	}
	check := func(call announcement, want []string, passed int64) {
		t.Helper()
		var got []string
		for _, p := range call.ready {
			got = append(got, p.UserID)
			if p.Status != admission.StatusReady || p.Token == "" || !p.ExpiresAt.Equal(r.clk.Now().Add(time.Minute)) {
				t.Fatalf("announced %+v, want READY with a token for a minute", p)
			}
			if pos, _ := r.svc.Position(ctx, r.q.Name, p.UserID); pos.Token != p.Token {
				t.Fatalf("announced token %s, the record's %s", p.Token, pos.Token)
			}
		}
		if call.queue != r.q.Name || !slices.Equal(got, want) || call.passed != passed || !call.deadline {
			t.Fatalf("announcement %+v, want %v with passed %d and a deadline", call, want, passed)
		}
	}
	r.step(a)
	calls := f.take()
	if len(calls) != 1 {
		t.Fatalf("%d announcements of one batch", len(calls))
	}
	check(calls[0], users[:5], 5)
	// Within the same second the rate admits nobody: no announcement.
	r.clk.advance(100 * time.Millisecond)
	r.step(a)
	if calls := f.take(); len(calls) != 0 {
		t.Fatalf("announced %+v for an empty pass", calls)
	}
	// One who left is not announced, nor counted as passed.
	if err := r.svc.Leave(ctx, r.q.Name, users[6]); err != nil {
		t.Fatal(err)
	}
	r.clk.advance(time.Second)
	r.step(a)
	calls = f.take()
	if len(calls) != 1 {
		t.Fatalf("%d announcements of the second batch", len(calls))
	}
	check(calls[0], []string{users[5], users[7]}, 7)
}

// headOf is the whole line, in order.
func headOf(t *testing.T, l admission.Line, queue string) []admission.Taken {
	t.Helper()
	h, err := l.Head(context.Background(), queue, 1_000_000)
	if err != nil {
		t.Fatal(err)
	}
	return h
}

// userIDs lists the users of line entries.
func userIDs(ts []admission.Taken) []string {
	out := make([]string, len(ts))
	for i, t := range ts {
		out[i] = t.UserID
	}
	return out
}
