package gateway

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/matchgate/matchgate/admission"
)

// roomAdmissions is fakeAdmissions serving the room too: exact ranks from
// the fake's line with a passed counter the test moves, touches recorded.
type roomAdmissions struct {
	*fakeAdmissions
	mu      sync.Mutex
	passed  int64
	touched map[string]int
}

func (f *roomAdmissions) Touch(_ context.Context, _ string, users []string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, u := range users {
		f.touched[u]++
	}
	return nil
}

func (f *roomAdmissions) Ranks(_ context.Context, queue string, users []string) ([]admission.Position, int64, error) {
	f.mu.Lock()
	passed := f.passed
	f.mu.Unlock()
	f.fakeAdmissions.mu.Lock()
	defer f.fakeAdmissions.mu.Unlock()
	out := make([]admission.Position, len(users))
	for i, u := range users {
		if p := f.placeLocked(queue, u); p.Status == admission.StatusWaiting {
			out[i] = p
		}
	}
	return out, passed, nil
}

func (f *roomAdmissions) Estimate(_ context.Context, _ string, rank, total int64) admission.Position {
	return admission.Position{Status: admission.StatusWaiting, Rank: rank, Total: total, PollAfter: time.Second}
}

func (f *roomAdmissions) Places(ctx context.Context, userID string) ([]admission.QueuePlace, error) {
	p, err := f.Position(ctx, "drop", userID)
	if err != nil || p.Status == "" {
		return nil, err
	}
	return []admission.QueuePlace{{Queue: "drop", Position: p}}, nil
}

func (f *roomAdmissions) touches(user string) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.touched[user]
}

// SubscribeQueue makes the fake Subscriber a queueSubscriber: a queue's
// channel is the user channel "queue:<name>" of publish.
func (f *fakeSubscriber) SubscribeQueue(ctx context.Context, queue string, deliver func([]byte)) (func(), error) {
	return f.Subscribe(ctx, "queue:"+queue, deliver)
}

// pushedPosition reads admission.position pushes until one arrives.
func pushedPosition(t *testing.T, c *websocket.Conn) map[string]any {
	t.Helper()
	for {
		f, err := tryReadFrame(c, 10*time.Second)
		if err != nil {
			t.Fatalf("no admission.position: %v", err)
		}
		if f.Type != "admission.position" {
			continue
		}
		var p struct {
			Queue    string         `json:"queue"`
			Position map[string]any `json:"position"`
		}
		if err := json.Unmarshal(f.raw, &p); err != nil || p.Queue != "drop" {
			t.Fatalf("push %s: %v", f.raw, err)
		}
		return p.Position
	}
}

// A waiter's socket is told its rank as the queue's counter moves, by
// steps worth telling, without a read per waiter; it is touched while
// open; once admitted the refresh pushes READY; hello lists the place.
func TestAdmissionRoomPushes(t *testing.T) {
	refresh, touch := roomRefreshEvery, roomTouchEvery
	roomRefreshEvery, roomTouchEvery = 300*time.Millisecond, 100*time.Millisecond
	t.Cleanup(func() { roomRefreshEvery, roomTouchEvery = refresh, touch })

	adm := &roomAdmissions{fakeAdmissions: newFakeAdmissions("drop"), touched: map[string]int{}}
	// The queue's pace is judged on this clock: 10 s between batches.
	clk := newFakeClock(time.Now())
	env := startServer(t, Config{Admissions: adm, Now: clk.Now})
	for i := range 250 {
		if _, _, err := adm.Enter(context.Background(), "drop", fmt.Sprintf("u%03d", i)); err != nil {
			t.Fatal(err)
		}
	}
	c := dial(t, env.wsURL(), mustToken(t, "ada", nil))
	readFrame(t, c) // hello
	writeJSONFrame(t, c, map[string]any{"type": "enter", "id": "e", "queue": "drop"})
	if f := readFrame(t, c); f.Type != "entered" {
		t.Fatalf("enter: %s", f.raw)
	}
	if p := pushedPosition(t, c); p["rank"] != 250.0 {
		t.Fatalf("first push %v, want the exact rank 250", p)
	}
	// 10 passed: 240 is a step worth telling (at least 2 at 250).
	adm.mu.Lock()
	adm.passed = 10
	adm.mu.Unlock()
	clk.Advance(10 * time.Second)
	env.sub.publish("queue:drop", []byte("10"))
	if p := pushedPosition(t, c); p["rank"] != 240.0 || p["status"] != "WAITING" {
		t.Fatalf("after 10 passed: %v, want rank 240", p)
	}
	// One more is not worth a push; 100 is. (The refresh, reading the
	// fake's unchanged line at the counter, would say 250 again: it is
	// what the fake's Ranks answers, so only the estimates are looked at.)
	clk.Advance(10 * time.Second)
	env.sub.publish("queue:drop", []byte("11"))
	clk.Advance(10 * time.Second)
	env.sub.publish("queue:drop", []byte("100"))
	for {
		p := pushedPosition(t, c)
		if p["rank"] == 239.0 {
			t.Fatalf("a move of one place at rank 240 was pushed: %v", p)
		}
		if p["rank"] == 150.0 {
			break
		}
	}
	// Admitted: the refresh finds the place no longer waiting and pushes
	// what it holds.
	adm.fakeAdmissions.mu.Lock()
	adm.line["drop"] = slices.DeleteFunc(adm.line["drop"], func(u string) bool { return u == "ada" })
	adm.line["drop"] = append([]string{"ada"}, adm.line["drop"]...)
	adm.fakeAdmissions.mu.Unlock()
	adm.admit("drop", "tok-ada", time.Minute)
	for {
		if p := pushedPosition(t, c); p["status"] == "READY" {
			if p["token"] != "tok-ada" {
				t.Fatalf("READY push %v", p)
			}
			break
		}
	}
	for deadline := time.Now().Add(10 * time.Second); adm.touches("ada") == 0; time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the waiter holding a socket was never touched")
		}
	}
	// hello of a new socket lists the place.
	c2 := dial(t, env.wsURL(), mustToken(t, "ada", nil))
	var hello struct {
		Admission []struct {
			Queue    string         `json:"queue"`
			Position map[string]any `json:"position"`
		} `json:"admission"`
	}
	if err := json.Unmarshal(readFrame(t, c2).raw, &hello); err != nil {
		t.Fatal(err)
	}
	if len(hello.Admission) != 1 || hello.Admission[0].Position["status"] != "READY" {
		t.Fatalf("hello's places: %+v", hello.Admission)
	}
}

// The pace is the smoothed count passed a second: a busy queue's step.
func TestRoomPace(t *testing.T) {
	q := &roomQueue{}
	t0 := time.Unix(1_800_000_000, 0)
	q.pace(0, t0)
	q.pace(100, t0.Add(time.Second))
	if q.perSec != 30 {
		t.Fatalf("after 100 in 1 s: %v a second, want 30", q.perSec)
	}
	q.pace(100, t0.Add(2*time.Second)) // no move: nothing learned
	q.pace(300, t0.Add(3*time.Second)) // 200 in 2 s
	if want := 0.7*30 + 0.3*100; q.perSec != want {
		t.Fatalf("after 200 in 2 s: %v a second, want %v", q.perSec, want)
	}
}

// A waiter found admitted is settled (its place read from the record) off
// the room's loop: a slow read there holds no other waiter's push.
func TestASlowSettleHoldsNoPush(t *testing.T) {
	refresh := roomRefreshEvery
	roomRefreshEvery = 100 * time.Millisecond
	t.Cleanup(func() { roomRefreshEvery = refresh })

	adm := &roomAdmissions{fakeAdmissions: newFakeAdmissions("drop"), touched: map[string]int{}}
	var armed sync.Once
	blocking := make(chan struct{})
	release := make(chan struct{})
	adm.position = func(ctx context.Context, queue, userID string) (admission.Position, error) {
		select {
		case <-blocking:
			if userID == "bob" {
				<-release
			}
		default:
		}
		adm.fakeAdmissions.mu.Lock()
		defer adm.fakeAdmissions.mu.Unlock()
		return adm.placeLocked(queue, userID), nil
	}
	clk := newFakeClock(time.Now())
	env := startServer(t, Config{Admissions: adm, Now: clk.Now})
	enter := func(user string) *websocket.Conn {
		c := dial(t, env.wsURL(), mustToken(t, user, nil))
		readFrame(t, c) // hello
		writeJSONFrame(t, c, map[string]any{"type": "enter", "id": "e", "queue": "drop"})
		for {
			// The first position push may come before the reply.
			if f := readFrame(t, c); f.Type == "entered" {
				return c
			} else if f.Type != "admission.position" {
				t.Fatalf("enter %s: %s", user, f.raw)
			}
		}
	}
	bob := enter("bob")
	for i := range 250 {
		adm.Enter(context.Background(), "drop", fmt.Sprintf("u%03d", i))
	}
	ada := enter("ada")
	// Bob is admitted, and his settle's read hangs.
	armed.Do(func() { close(blocking) })
	adm.admit("drop", "tok-bob", time.Minute)
	time.Sleep(3 * roomRefreshEvery) // a refresh finds him gone
	// 100 pass: ada's estimate moves and is pushed while the read hangs.
	// (The fake's exact ranks keep the counter at 0, so every refresh
	// rebases her at 250: the estimate says 150 or 151.)
	clk.Advance(10 * time.Second)
	env.sub.publish("queue:drop", []byte("100"))
	for {
		p := pushedPosition(t, ada)
		if p["rank"] == 151.0 || p["rank"] == 150.0 {
			break
		}
	}
	close(release)
	for {
		if p := pushedPosition(t, bob); p["status"] == "READY" {
			break
		}
	}
}
