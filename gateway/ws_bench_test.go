package gateway

import (
	"context"
	"fmt"
	"net"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/matchgate/matchgate/matcher"
	"github.com/matchgate/matchgate/protocol"
	"github.com/matchgate/matchgate/ratelimit"
)

// The edge's hot paths: decoding a client frame, encoding a reply, and one
// socket's writer delivering pushes through a real loopback WebSocket.
//
//	go test -run '^$' -bench . ./gateway/

var benchJoin = []byte(`{"type":"join","id":"j17","queue":"ranked","region":"eu","attributes":{"mode":"5v5"}}`)

// BenchmarkDecodeFrame_Join is the read loop's decode of a join frame
// (decodeFrame: the strict decoder, duplicate-key scan included).
func BenchmarkDecodeFrame_Join(b *testing.B) {
	b.SetBytes(int64(len(benchJoin)))
	for b.Loop() {
		if in, err := decodeFrame(benchJoin); err != nil || in.Queue != "ranked" {
			b.Fatal(in, err)
		}
	}
}

// BenchmarkDecodeFrame_Ping is the smallest command.
func BenchmarkDecodeFrame_Ping(b *testing.B) {
	frame := []byte(`{"type":"ping","id":"p1"}`)
	for b.Loop() {
		if _, err := decodeFrame(frame); err != nil {
			b.Fatal(err)
		}
	}
}

func benchTicket() matcher.Ticket {
	at := time.UnixMilli(1755530400000).UTC()
	return matcher.Ticket{ID: "0b6a5b0c-2f0e-4d7f-8d4e-3c0f6a9b1c2d", UserID: "user-123", Queue: "ranked", Region: "eu",
		Status: matcher.StatusWaiting, Skill: 1500, EnqueuedAt: at, Deadline: at.Add(5 * time.Minute), UpdatedAt: at, Version: 1}
}

// BenchmarkEncodeReply_Joined is the encode of the joined reply.
func BenchmarkEncodeReply_Joined(b *testing.B) {
	t := benchTicket()
	for b.Loop() {
		f := protocol.Reply{Type: "joined", Re: "j17", Ticket: wireTicket(t)}
		if out := f.AppendJSON(make([]byte, 0, f.SizeHint())); len(out) < 100 {
			b.Fatalf("encoded %s", out)
		}
	}
}

// BenchmarkFrameType is what the writer spends per push to label its
// metrics (it decodes the frame's type).
func BenchmarkFrameType(b *testing.B) {
	m := matcher.Match{ID: "m1", Queue: "ranked", Region: "eu", State: matcher.MatchReady, FormedBy: matcher.FormedFilled,
		Players:   []matcher.Player{{TicketID: "t1", UserID: "u1", Skill: 1500}, {TicketID: "t2", UserID: "u2", Skill: 1510}},
		CreatedAt: time.Now(), Version: 1}
	payload := protocol.Frame(matcher.MatchFoundEvent(m))
	b.SetBytes(int64(len(payload)))
	for b.Loop() {
		if frameType(payload) != protocol.FrameMatchFound {
			b.Fatal("type")
		}
	}
}

// benchSocket runs a gateway with the fakes and returns one authenticated
// client socket (hello read) and the subscriber that pushes to it.
func benchSocket(b *testing.B) (*websocket.Conn, *fakeSubscriber, string) {
	b.Helper()
	sub := newFakeSubscriber()
	// The per-socket message limit (10 a second) would drop every frame
	// past the twentieth and leave a round-trip benchmark waiting forever.
	srv, err := New(Config{Matchmaker: &fakeMatchmaker{}, Subscriber: sub, Secret: testSecret, Node: "bench",
		MessageRate: ratelimit.Limit{N: -1}})
	if err != nil {
		b.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- srv.Run(ctx, ln) }()
	b.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			b.Errorf("Run: %v", err)
		}
	})
	const user = "bench-user"
	c := dial(b, "ws://"+ln.Addr().String()+"/v1/ws", mustToken(b, user, nil))
	if f := readFrame(b, c); f.Type != "hello" {
		b.Fatalf("first frame %s", f.raw)
	}
	return c, sub, user
}

// BenchmarkSocketPush is one push through one socket's writer: the
// subscriber's deliver (enqueue), the writer goroutine started for it, the
// WebSocket write, and the client's read, one at a time.
func BenchmarkSocketPush(b *testing.B) {
	c, sub, user := benchSocket(b)
	frame := []byte(`{"type":"match.found","match":{"id":"m1","players":[{"ticketId":"t1","userId":"bench-user","skill":1500}]}}`)
	ctx := context.Background()
	for b.Loop() {
		if sub.publish(user, frame) != 1 {
			b.Fatal("not subscribed")
		}
		if _, _, err := c.Read(ctx); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkSocketPush_Burst32 queues 32 pushes at once (one writer drains
// them) and reads them; reported per push.
func BenchmarkSocketPush_Burst32(b *testing.B) {
	c, sub, user := benchSocket(b)
	ctx := context.Background()
	frames := make([][]byte, 32)
	for i := range frames {
		frames[i] = fmt.Appendf(nil, `{"type":"ticket.update","ticket":{"id":"t%d","status":"WAITING"}}`, i)
	}
	n := 0
	for b.Loop() {
		if n%32 == 0 {
			for _, f := range frames {
				sub.publish(user, f)
			}
		}
		if _, _, err := c.Read(ctx); err != nil {
			b.Fatal(err)
		}
		n++
	}
	for ; n%32 != 0; n++ { // drain what the last burst left
		if _, _, err := c.Read(ctx); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkSocketPingPong is an application ping through the read loop,
// the command worker and the writer: the round trip loadgen reports.
func BenchmarkSocketPingPong(b *testing.B) {
	c, _, _ := benchSocket(b)
	ctx := context.Background()
	ping := []byte(`{"type":"ping","id":"p"}`)
	for b.Loop() {
		if err := c.Write(ctx, websocket.MessageText, ping); err != nil {
			b.Fatal(err)
		}
		_, reply, err := c.Read(ctx)
		if err != nil {
			b.Fatal(err)
		}
		if frameType(reply) != "pong" {
			b.Fatalf("reply %s", reply)
		}
	}
}

// frameType reads the type of every pushed frame, from its opening where
// matchgate puts it, and of any other JSON object by decoding it.
func TestFrameType(t *testing.T) {
	m := matcher.Match{ID: "m1", Queue: "ranked", Region: "eu", State: matcher.MatchReady, FormedBy: matcher.FormedFilled,
		Players: []matcher.Player{{TicketID: "t1", UserID: "u1"}}, CreatedAt: time.Now(), Version: 1}
	for _, c := range []struct {
		frame []byte
		want  string
	}{
		{protocol.Frame(matcher.MatchFoundEvent(m)), protocol.FrameMatchFound},
		{protocol.Frame(matcher.MatchReadyEvent(m)), protocol.FrameMatchReady},
		{protocol.Frame(matcher.MatchDissolvedEvent(m, "declined")), protocol.FrameMatchDissolved},
		{protocol.Frame(matcher.TicketUpdatedEvent(matcher.Ticket{ID: "t1", Status: matcher.StatusCancelled})), protocol.FrameTicketUpdate},
		{[]byte(`{ "type" : "spaced", "x": 1}`), "spaced"},
		{[]byte(`{"re":"1","type":"later"}`), "later"},
		{[]byte(`{"type":"esc\"aped"}`), `esc"aped`},
		{[]byte(`{"type":"unterminated`), ""},
		{[]byte(`not json`), ""},
	} {
		if got := frameType(c.frame); got != c.want {
			t.Errorf("frameType(%s) = %q, want %q", c.frame, got, c.want)
		}
	}
}
