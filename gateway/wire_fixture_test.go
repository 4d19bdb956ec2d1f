package gateway

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"net/http"
	"os"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/matchgate/matchgate/admission"
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

	entered := positionFrom(t, fx.server(t, "entered"), "position")
	waiting := positionFrom(t, fx.server(t, "position WAITING"), "position")
	adm := newFakeAdmissions()
	adm.enter = func(context.Context, string, string) (admission.Position, bool, error) { return entered, true, nil }
	adm.position = func(context.Context, string, string) (admission.Position, error) { return waiting, nil }
	adm.leave = func(context.Context, string, string) error { return nil }

	env := startServer(t, Config{Node: who.Node, MessageRate: ratelimit.Limit{N: 1000, Per: time.Second}, Admissions: adm})
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
		protocol.FrameEnter: "entered", protocol.FramePosition: "position WAITING", protocol.FrameLeave: "left",
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
		if !isKindCode(e.Code) {
			continue // an admission refusal's: TestFixtureErrorsOfAdmission
		}
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

// positionFrom reads back the admission.Position a fixture frame's place
// was rendered from (the fixture's seconds are tenths, which the wire
// keeps as they are): no ETA is an infinite one, no high an infinite
// upper bound.
func positionFrom(t *testing.T, frame []byte, member string) admission.Position {
	t.Helper()
	var w struct {
		Status string `json:"status"`
		Rank   int64  `json:"rank"`
		Total  int64  `json:"total"`
		ETA    *struct {
			Seconds float64  `json:"seconds"`
			Low     float64  `json:"low"`
			High    *float64 `json:"high"`
		} `json:"eta"`
		PollAfter float64   `json:"pollAfter"`
		Token     string    `json:"token"`
		ExpiresAt time.Time `json:"expiresAt"`
	}
	fromFixture(t, frame, member, &w)
	switch w.Status {
	case protocol.PositionWaiting:
		inf := math.Inf(1)
		p := admission.Position{Status: admission.StatusWaiting, Rank: w.Rank, Total: w.Total,
			ETA: admission.ETA{Seconds: inf, Low: inf, High: inf}, PollAfter: time.Duration(w.PollAfter * float64(time.Second))}
		if e := w.ETA; e != nil {
			p.ETA = admission.ETA{Seconds: e.Seconds, Low: e.Low, High: inf}
			if e.High != nil {
				p.ETA.High = *e.High
			}
		}
		return p
	case protocol.PositionReady:
		return admission.Position{Status: admission.StatusReady, Token: w.Token, ExpiresAt: w.ExpiresAt}
	case protocol.PositionNotEntered:
		return admission.Position{}
	}
	t.Fatalf("%s: no such status %q", frame, w.Status)
	return admission.Position{}
}

// Every place of the fixture, entered and asked for over REST, is answered
// with the fixture's place byte for byte; a REST leave answers the
// fixture's NOT_ENTERED.
func TestFixturePositionsOverREST(t *testing.T) {
	fx := loadWireFixture(t)
	adm := newFakeAdmissions()
	var current atomic.Pointer[admission.Position]
	adm.enter = func(context.Context, string, string) (admission.Position, bool, error) {
		return *current.Load(), true, nil
	}
	adm.position = func(context.Context, string, string) (admission.Position, error) { return *current.Load(), nil }
	adm.leave = func(context.Context, string, string) error { return nil }
	env := startServer(t, Config{Admissions: adm})
	e := &restEnv{srv: env.srv, mm: env.mm, url: env.base}
	tok := mustToken(t, "u-ada", nil)
	n := 0
	for _, ex := range fx.Server {
		if ex.Example != "entered" && !strings.HasPrefix(ex.Example, "position ") {
			continue
		}
		n++
		p := positionFrom(t, ex.Frame, "position")
		current.Store(&p)
		var members map[string]json.RawMessage
		fromFixture(t, ex.Frame, "", &members)
		want := `{"position":` + string(members["position"]) + "}\n"
		for _, rq := range [][2]string{{"POST", "/v1/admission/drop/enter"}, {"GET", "/v1/admission/drop/position"}} {
			if r := e.do(t, rq[0], rq[1], tok, ""); r.status >= 300 || string(r.body) != want {
				t.Errorf("%s, %s %s:\n got %d %s\nwant %s", ex.Example, rq[0], rq[1], r.status, r.body, want)
			}
		}
	}
	if n < 5 {
		t.Fatalf("only %d places in the fixture", n)
	}
	var notEntered map[string]json.RawMessage
	fromFixture(t, fx.server(t, "position NOT_ENTERED"), "", &notEntered)
	want := `{"position":` + string(notEntered["position"]) + "}\n"
	if r := e.do(t, "DELETE", "/v1/admission/drop", tok, ""); r.status != http.StatusOK || string(r.body) != want {
		t.Errorf("leave: %d %s, want %s", r.status, r.body, want)
	}
}

// The admission refusals of the fixture (the codes AdmissionCodeOf gives)
// are answered, over the socket and over REST, with the fixture's frames
// and bodies and the gateway's own messages.
func TestFixtureErrorsOfAdmission(t *testing.T) {
	fx := loadWireFixture(t)
	var enterFrame []byte
	for _, c := range fx.Client {
		if c.Example == "enter" {
			enterFrame = c.Frame
		}
	}
	if enterFrame == nil {
		t.Fatal("wire.json has no client example \"enter\"")
	}
	adm := newFakeAdmissions()
	var refusal atomic.Pointer[error]
	adm.enter = func(context.Context, string, string) (admission.Position, bool, error) {
		return admission.Position{}, false, *refusal.Load()
	}
	adm.claim = func(context.Context, string, string) (admission.Place, error) {
		return admission.Place{}, *refusal.Load()
	}
	env := startServer(t, Config{Admissions: adm, AdminTokens: []string{adminToken}, Admin: fakeAdminForValidation{}})
	e := &restEnv{srv: env.srv, mm: env.mm, url: env.base}
	c := dial(t, env.wsURL(), mustToken(t, "u-ada", nil))
	readFrame(t, c) // hello

	seen := map[protocol.Code]bool{}
	for _, ex := range fx.Errors {
		var sentinel error
		for _, s := range []error{admission.ErrUnknownQueue, admission.ErrNotFound, admission.ErrAlreadyClaimed, admission.ErrNotClaimed} {
			if code, _, _ := protocol.AdmissionCodeOf(s); code == ex.Code {
				sentinel = s
			}
		}
		if sentinel == nil {
			continue
		}
		seen[ex.Code] = true
		err := fmt.Errorf("in drop: %w", sentinel)
		refusal.Store(&err)
		var we protocol.WireError
		fromFixture(t, ex.Frame, "error", &we)
		msg := func(notFound string) string { return `"message":` + strconv.Quote(admissionMessage(ex.Code, notFound)) }

		writeText(t, c, enterFrame)
		want := replaceOnce(t, ex.Frame, `"message":"`+we.Message+`"`, msg(msgNoPlace))
		if got := readFrame(t, c).raw; !bytes.Equal(got, want) {
			t.Errorf("%s over WebSocket:\n got %s\nwant %s", ex.Code, got, want)
		}
		r := e.do(t, "POST", "/v1/admission/drop/tokens/claim", adminToken, `{"token":"abc"}`)
		want = append(replaceOnce(t, ex.Body, `"message":"`+we.Message+`"`, msg(msgNoToken)), '\n')
		if r.status != ex.Status || !bytes.Equal(r.body, want) {
			t.Errorf("%s over REST: %d %s, want %d %s", ex.Code, r.status, r.body, ex.Status, want)
		}
	}
	for _, code := range []protocol.Code{protocol.CodeUnknownQueue, protocol.CodeNotFound, protocol.CodeAlreadyClaimed, protocol.CodeNotClaimed} {
		if !seen[code] {
			t.Errorf("wire.json has no error example of %s", code)
		}
	}
}

// isKindCode reports whether code is a domain kind's.
func isKindCode(code protocol.Code) bool {
	for _, k := range matcher.Codes() {
		if c, _ := protocol.CodeOf(k); c == code {
			return true
		}
	}
	return false
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
