package gateway

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"os"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/matchgate/matchgate/matcher"
	"github.com/matchgate/matchgate/protocol"
	"github.com/matchgate/matchgate/ratelimit"
)

// protocol/testdata/wire.json is the wire as package protocol renders it,
// what clients are checked against (ARCHITECTURE.md §8). The tests below
// hold the gateway to it: its decoder accepts every client example as
// what it says, and its replies are the fixture's frames byte for byte.

type wireFixture struct {
	Server []struct {
		Example string          `json:"example"`
		Frame   json.RawMessage `json:"frame"`
	} `json:"server"`
	Errors []struct {
		Code   protocol.Code   `json:"code"`
		Status int             `json:"status"`
		Frame  json.RawMessage `json:"frame"`
		Body   json.RawMessage `json:"body"`
	} `json:"errors"`
	Client []struct {
		Example string          `json:"example"`
		Frame   json.RawMessage `json:"frame"`
	} `json:"client"`
}

func loadWireFixture(t *testing.T) wireFixture {
	t.Helper()
	b, err := os.ReadFile("../protocol/testdata/wire.json")
	if err != nil {
		t.Fatal(err)
	}
	var f wireFixture
	if err := json.Unmarshal(b, &f); err != nil {
		t.Fatalf("wire.json: %v", err)
	}
	if len(f.Server) == 0 || len(f.Errors) == 0 || len(f.Client) == 0 {
		t.Fatalf("wire.json has %d server, %d error and %d client examples", len(f.Server), len(f.Errors), len(f.Client))
	}
	return f
}

// server is the frame of the server example named example.
func (f wireFixture) server(t *testing.T, example string) []byte {
	t.Helper()
	for _, e := range f.Server {
		if e.Example == example {
			return e.Frame
		}
	}
	t.Fatalf("wire.json has no server example %q", example)
	return nil
}

// fromFixture decodes a member of a fixture frame into v: the matcher
// types carry the wire's names, so the domain values a frame was rendered
// from can be read back from it.
func fromFixture(t *testing.T, frame []byte, member string, v any) {
	t.Helper()
	var members map[string]json.RawMessage
	if err := json.Unmarshal(frame, &members); err != nil {
		t.Fatal(err)
	}
	raw := []byte(frame)
	if member != "" {
		raw = members[member]
	}
	if err := json.Unmarshal(raw, v); err != nil {
		t.Fatalf("%s of %s: %v", member, frame, err)
	}
}

// commandMembers is what a decoded command holds, by wire name, its empty
// members left out: what a plain decoding of the frame must show.
func commandMembers(in protocol.Command) map[string]any {
	m := map[string]any{"type": in.Type, "id": in.ID}
	for name, v := range map[string]string{"queue": in.Queue, "region": in.Region, "ticketId": in.TicketID, "matchId": in.MatchID} {
		if v != "" {
			m[name] = v
		}
	}
	if in.Attributes != nil {
		attrs := map[string]any{}
		for k, v := range in.Attributes {
			attrs[k] = v
		}
		m["attributes"] = attrs
	}
	return m
}

// Every client example is accepted by the WebSocket decoder as exactly
// what it says, and a join's members by the REST join as well.
func TestFixtureCommandsDecode(t *testing.T) {
	fx := loadWireFixture(t)
	env := startServer(t, Config{})
	tok := mustToken(t, "u-ada", nil)
	for _, c := range fx.Client {
		in, err := decodeFrame(c.Frame)
		if err != nil {
			t.Errorf("%s: %s refused: %v", c.Example, c.Frame, err)
			continue
		}
		if !slices.Contains(protocol.ClientFrameTypes, in.Type) {
			t.Errorf("%s: type %q is not a client frame type", c.Example, in.Type)
		}
		var plain map[string]any
		if err := json.Unmarshal(c.Frame, &plain); err != nil {
			t.Fatal(err)
		}
		if got := commandMembers(in); !reflect.DeepEqual(got, plain) {
			t.Errorf("%s: %s decoded as %v", c.Example, c.Frame, got)
		}
		if in.Type != protocol.FrameJoin {
			continue
		}

		// The REST join: the queue in the path, the rest in the body.
		delete(plain, "type")
		delete(plain, "id")
		delete(plain, "queue")
		body, err := json.Marshal(plain)
		if err != nil {
			t.Fatal(err)
		}
		var jb protocol.JoinBody
		if err := decodeStrict(body, &jb, true); err != nil || jb.Region != in.Region || !reflect.DeepEqual(jb.Attributes, in.Attributes) {
			t.Errorf("%s: REST body %s decoded as %+v, %v", c.Example, body, jb, err)
		}
		req, _ := http.NewRequest(http.MethodPost, env.base+"/v1/queues/"+in.Queue+"/tickets", bytes.NewReader(body))
		req.Header.Set("Authorization", "Bearer "+tok)
		resp, err := testClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		env.mm.mu.Lock()
		got := env.mm.lastReq
		env.mm.mu.Unlock()
		if resp.StatusCode != http.StatusAccepted || got.Queue != in.Queue || got.Region != in.Region ||
			!reflect.DeepEqual(got.Attributes, in.Attributes) {
			t.Errorf("%s: REST join of %s answered %d, joined %+v", c.Example, body, resp.StatusCode, got)
		}
	}
}

// The fixture's commands, sent on a socket, are answered with the
// fixture's replies byte for byte when the Matchmaker returns the values
// the fixture's replies were rendered from; hello likewise.
func TestFixtureRepliesOverWebSocket(t *testing.T) {
	fx := loadWireFixture(t)
	var hello, status matcher.UserState
	fromFixture(t, fx.server(t, "hello"), "", &hello)
	fromFixture(t, fx.server(t, "status"), "", &status)
	var joined, cancelled matcher.Ticket
	fromFixture(t, fx.server(t, "joined"), "ticket", &joined)
	fromFixture(t, fx.server(t, "cancelled"), "ticket", &cancelled)
	var updated matcher.Match
	fromFixture(t, fx.server(t, "match.update"), "match", &updated)

	var who struct {
		UserID string `json:"userId"`
		Node   string `json:"node"`
	}
	fromFixture(t, fx.server(t, "hello"), "", &who)

	env := startServer(t, Config{Node: who.Node, MessageRate: ratelimit.Limit{N: 1000, Per: time.Second}})
	var states atomic.Int32
	env.mm.userState = func(context.Context, string) (matcher.UserState, error) {
		if states.Add(1) == 1 {
			return hello, nil
		}
		return status, nil
	}
	env.mm.join = func(context.Context, matcher.JoinRequest) (matcher.Ticket, error) { return joined, nil }
	env.mm.cancel = func(context.Context, string, string) (matcher.Ticket, error) { return cancelled, nil }
	env.mm.accept = func(context.Context, string, string) (matcher.Match, error) { return updated, nil }
	env.mm.decline = env.mm.accept

	c := dial(t, env.wsURL(), mustToken(t, who.UserID, nil))
	if got, want := readFrame(t, c).raw, fx.server(t, "hello"); !bytes.Equal(got, want) {
		t.Errorf("hello:\n got %s\nwant %s", got, want)
	}
	answer := map[string]string{
		protocol.FrameJoin: "joined", protocol.FrameCancel: "cancelled", protocol.FrameAccept: "match.update",
		protocol.FrameDecline: "match.update", protocol.FrameStatus: "status", protocol.FramePing: "pong",
	}
	for _, cmd := range fx.Client {
		var in protocol.Command
		fromFixture(t, cmd.Frame, "", &in)
		example, ok := answer[in.Type]
		if !ok {
			t.Fatalf("%s: no reply is known for type %q", cmd.Example, in.Type)
		}
		writeText(t, c, cmd.Frame)
		if got, want := readFrame(t, c).raw, fx.server(t, example); !bytes.Equal(got, want) {
			t.Errorf("%s answered\n got %s\nwant %s (%s)", cmd.Example, got, want, example)
		}
	}
}

// A join refused with each error code is answered with the fixture's error
// frame on a socket, and with its status, body and Retry-After over REST.
func TestFixtureErrorsOfAJoin(t *testing.T) {
	fx := loadWireFixture(t)
	var joinFrame []byte
	for _, c := range fx.Client {
		if c.Example == "join" {
			joinFrame = c.Frame
		}
	}
	if joinFrame == nil {
		t.Fatal("wire.json has no client example \"join\"")
	}
	var join protocol.Command
	fromFixture(t, joinFrame, "", &join)
	body, err := json.Marshal(protocol.JoinBody{Region: join.Region, Attributes: join.Attributes})
	if err != nil {
		t.Fatal(err)
	}

	env := startServer(t, Config{MessageRate: ratelimit.Limit{N: 1000, Per: time.Second}})
	var refusal atomic.Pointer[error]
	env.mm.join = func(context.Context, matcher.JoinRequest) (matcher.Ticket, error) {
		return matcher.Ticket{}, *refusal.Load()
	}
	tok := mustToken(t, "u-ada", nil)
	c := dial(t, env.wsURL(), tok)
	readFrame(t, c) // hello

	for _, e := range fx.Errors {
		var we protocol.WireError
		fromFixture(t, e.Frame, "error", &we)
		frame, restBody := []byte(e.Frame), []byte(e.Body)
		var err error
		if e.Code == protocol.CodeInternal {
			// The gateway never tells a client what failed inside.
			err = errors.New("boom")
			frame = replaceOnce(t, frame, `"message":"`+we.Message+`"`, `"message":"internal error"`)
			restBody = replaceOnce(t, restBody, `"message":"`+we.Message+`"`, `"message":"internal error"`)
		} else {
			err = &matcher.Error{Code: kindOf(t, e.Code), Message: we.Message, TicketID: we.TicketID, MatchID: we.MatchID}
			if we.RetryAfter > 0 {
				err = &limitError{err: err.(*matcher.Error), after: time.Duration(we.RetryAfter) * time.Second}
			}
		}
		refusal.Store(&err)

		writeText(t, c, joinFrame)
		if got := readFrame(t, c).raw; !bytes.Equal(got, frame) {
			t.Errorf("%s over WebSocket:\n got %s\nwant %s", e.Code, got, frame)
		}

		req, _ := http.NewRequest(http.MethodPost, env.base+"/v1/queues/"+join.Queue+"/tickets", bytes.NewReader(body))
		req.Header.Set("Authorization", "Bearer "+tok)
		resp, err := testClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		got, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != e.Status || !bytes.Equal(got, append(restBody, '\n')) {
			t.Errorf("%s over REST: %d %s, want %d %s", e.Code, resp.StatusCode, got, e.Status, restBody)
		}
		wantRetry := ""
		if we.RetryAfter > 0 {
			wantRetry = strconv.Itoa(we.RetryAfter)
		}
		if ra := resp.Header.Get("Retry-After"); ra != wantRetry {
			t.Errorf("%s over REST: Retry-After %q, want %q", e.Code, ra, wantRetry)
		}
	}
}

// kindOf is the domain kind whose wire code is code.
func kindOf(t *testing.T, code protocol.Code) matcher.Code {
	t.Helper()
	for _, k := range matcher.Codes() {
		if c, _ := protocol.CodeOf(k); c == code {
			return k
		}
	}
	t.Fatalf("no domain kind has the code %s", code)
	return matcher.CodeInternal
}

func replaceOnce(t *testing.T, b []byte, old, new string) []byte {
	t.Helper()
	if strings.Count(string(b), old) != 1 {
		t.Fatalf("%s does not hold %s once", b, old)
	}
	return bytes.Replace(b, []byte(old), []byte(new), 1)
}
