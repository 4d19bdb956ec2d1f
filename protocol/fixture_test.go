package protocol_test

import (
	"bytes"
	"encoding/json"
	"flag"
	"math"
	"net/http"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/matchgate/matchgate/admission"
	"github.com/matchgate/matchgate/matcher"
	"github.com/matchgate/matchgate/protocol"
	"github.com/matchgate/matchgate/ranking"
)

// testdata/wire.json is the wire as this package renders it, for clients in
// other languages to be checked against (tests/browser/unit/wire.test.mjs
// checks web/matchgate.js with it). TestWireFixture fails when the file is
// not what the package renders now; -update rewrites it.
var update = flag.Bool("update", false, "rewrite testdata/wire.json from what the package renders")

const fixturePath = "testdata/wire.json"

// fixtureRe is the request id of every reply in the fixture: a client's
// test replaces it with the id its request carried.
const fixtureRe = "r1"

type serverExample struct {
	Example string          `json:"example"`
	Frame   json.RawMessage `json:"frame"`
	// Expect is what a client must read from the frame, stated from the
	// domain values the frame was rendered from, not from the frame.
	Expect map[string]any `json:"expect"`
}

type errorExample struct {
	Code   protocol.Code `json:"code"`
	Status int           `json:"status"`
	// Frame is the error frame replying to a command; Body the REST
	// answer's body, sent with Status (and Retry-After: retryAfter).
	Frame json.RawMessage `json:"frame"`
	Body  json.RawMessage `json:"body"`
}

type clientExample struct {
	Example string          `json:"example"`
	Frame   json.RawMessage `json:"frame"`
}

var fixtureAt = time.Date(2031, 3, 4, 5, 6, 7, 891_000_000, time.UTC)

func fixtureTicket(id string, status matcher.TicketStatus, version int64) matcher.Ticket {
	return matcher.Ticket{ID: id, UserID: "u-ada", Name: "Ada <1> ✨", Queue: "duel", Region: "eu", Status: status, Skill: 1523.5,
		Attributes: map[string]string{"mode": "5v5", "note": "<日本> & \"ü\""},
		EnqueuedAt: fixtureAt, Deadline: fixtureAt.Add(2 * time.Minute), UpdatedAt: fixtureAt.Add(time.Duration(version) * time.Second),
		Version: version}
}

func fixtureMatch(state string, version int64) matcher.Match {
	acceptBy := fixtureAt.Add(13 * time.Second)
	m := matcher.Match{ID: "m1", Queue: "duel", Region: "eu", State: state, FormedBy: matcher.FormedFallback,
		Players: []matcher.Player{
			{TicketID: "t1", UserID: "u-ada", Name: "Ada <1> ✨", Skill: 1523.5}, // u-<bob> has no name: omitted
			{TicketID: "t2", UserID: "u-<bob>", Skill: 1490},
		},
		Bots: 1, Spread: 33.5, Server: &matcher.Server{Address: "10.0.0.7:7777", Session: "s-9"},
		CreatedAt: fixtureAt.Add(3 * time.Second), Version: version}
	switch state {
	case matcher.MatchPendingAccept:
		m.AcceptBy, m.Accepted = &acceptBy, []string{"u-<bob>"}
	case matcher.MatchReady:
		m.Accepted = []string{"u-<bob>", "u-ada"}
	}
	return m
}

// expectTicket and expectMatch are what a client reads of t and m: absent
// values null, times to the millisecond in UTC, the server only once the
// match is READY.
func expectTicket(t matcher.Ticket) map[string]any {
	e := map[string]any{
		"id": t.ID, "userId": t.UserID, "queue": t.Queue, "region": t.Region, "status": string(t.Status),
		"skill": t.Skill, "estimated": t.Estimated, "enqueuedAt": wireTime(t.EnqueuedAt), "deadline": wireTime(t.Deadline),
		"matchId": orNull(t.MatchID), "cancelReason": orNull(t.CancelReason), "updatedAt": wireTime(t.UpdatedAt),
		"version": t.Version,
	}
	if len(t.Attributes) > 0 { // absent otherwise
		e["attributes"] = t.Attributes
	}
	if t.Name != "" { // absent otherwise
		e["name"] = t.Name
	}
	return e
}

func expectMatch(m matcher.Match) map[string]any {
	players := make([]map[string]any, len(m.Players))
	for i, p := range m.Players {
		players[i] = map[string]any{"ticketId": p.TicketID, "userId": p.UserID, "skill": p.Skill}
		if p.Name != "" { // absent otherwise
			players[i]["name"] = p.Name
		}
	}
	var server any
	if m.State == matcher.MatchReady {
		server = m.Server
	}
	var acceptBy any
	if m.AcceptBy != nil {
		acceptBy = wireTime(*m.AcceptBy)
	}
	e := map[string]any{
		"id": m.ID, "queue": m.Queue, "region": m.Region, "state": m.State, "formedBy": m.FormedBy,
		"players": players, "bots": m.Bots, "spread": m.Spread, "server": server, "acceptBy": acceptBy,
		"accepted": append([]string{}, m.Accepted...), "createdAt": wireTime(m.CreatedAt), "version": m.Version,
	}
	if p := m.Provider; p != nil { // absent otherwise
		seat := map[string]any{"userId": p.UserID, "score": p.Score}
		if len(p.Parts) > 0 {
			seat["parts"] = p.Parts
		}
		e["provider"] = seat
	}
	return e
}

func wireTime(t time.Time) any {
	if t.IsZero() {
		return nil
	}
	return t.UTC().Format("2006-01-02T15:04:05.000Z")
}

func orNull(s string) any {
	if s == "" {
		return nil
	}
	return s
}

// expectPosition is what a client reads of a place: a WAITING one's rank,
// total, ETA (none without a rate, no high without an upper bound) and
// pollAfter in seconds, a READY one's token and its end, nothing else.
// The fixture's seconds are tenths already, as the wire writes them.
func expectPosition(p admission.Position) map[string]any {
	switch p.Status {
	case admission.StatusWaiting:
		e := map[string]any{"status": "WAITING", "rank": p.Rank, "total": p.Total, "pollAfter": p.PollAfter.Seconds()}
		if !math.IsInf(p.ETA.Seconds, 0) {
			var high any
			if !math.IsInf(p.ETA.High, 0) {
				high = p.ETA.High
			}
			e["eta"] = map[string]any{"seconds": p.ETA.Seconds, "low": p.ETA.Low, "high": high}
		}
		return e
	case admission.StatusReady:
		return map[string]any{"status": "READY", "token": p.Token, "expiresAt": wireTime(p.ExpiresAt)}
	}
	return map[string]any{"status": "NOT_ENTERED"}
}

// positionReply renders the entered or position reply holding p.
func positionReply(typ string, p admission.Position) []byte {
	w := protocol.PositionOf(p)
	return protocol.Reply{Type: typ, Re: fixtureRe, Position: &w}.AppendJSON(nil)
}

func mustJSON(t *testing.T, v any) []byte {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// reply renders the reply to a command of the fixture.
func reply(typ string, tk *matcher.Ticket, m *matcher.Match) []byte {
	r := protocol.Reply{Type: typ, Re: fixtureRe}
	if tk != nil {
		w := protocol.TicketOf(*tk)
		r.Ticket = &w
	}
	if m != nil {
		w := protocol.MatchOf(*m)
		r.Match = &w
	}
	return r.AppendJSON(nil)
}

func expectState(st matcher.UserState) map[string]any {
	tickets := make([]map[string]any, len(st.Tickets))
	for i, tk := range st.Tickets {
		tickets[i] = expectTicket(tk)
	}
	matches := make([]map[string]any, len(st.Matches))
	for i, m := range st.Matches {
		matches[i] = expectMatch(m)
	}
	return map[string]any{"tickets": tickets, "matches": matches}
}

func serverExamples(t *testing.T) []serverExample {
	var out []serverExample
	add := func(name string, frame []byte, expect map[string]any) {
		out = append(out, serverExample{name, frame, expect})
	}

	waiting := fixtureTicket("t3", matcher.StatusWaiting, 1)
	matched := fixtureTicket("t1", matcher.StatusMatched, 2)
	matched.MatchID = "m1"
	cancelled := fixtureTicket("t3", matcher.StatusCancelled, 2)
	cancelled.CancelReason = matcher.ReasonUser
	expired := fixtureTicket("t3", matcher.StatusExpired, 2)
	expired.Estimated = true
	ready := fixtureMatch(matcher.MatchReady, 3)

	st := matcher.UserState{Tickets: []matcher.Ticket{waiting, matched}, Matches: []matcher.Match{ready}, More: true, Next: "c-42"}
	hello := expectState(st)
	hello["userId"], hello["node"], hello["more"], hello["next"] = "u-ada", "node-1", true, "c-42"
	helloFrame := protocol.StateOf(protocol.FrameHello, "", st)
	helloFrame.UserID, helloFrame.Node = "u-ada", "node-1"
	add("hello", mustJSON(t, helloFrame), hello)

	add("joined", reply(protocol.FrameJoined, &waiting, nil), map[string]any{"ticket": expectTicket(waiting)})
	add("cancelled", reply(protocol.FrameCancelled, &cancelled, nil), map[string]any{"ticket": expectTicket(cancelled)})
	pending := fixtureMatch(matcher.MatchPendingAccept, 2)
	add("match.update", reply(protocol.FrameMatchUpdate, nil, &pending), map[string]any{"match": expectMatch(pending)})
	status := matcher.UserState{Tickets: []matcher.Ticket{cancelled}, Matches: []matcher.Match{}}
	add("status", mustJSON(t, protocol.StateOf(protocol.FrameStatus, fixtureRe, status)), expectState(status))
	add("pong", reply(protocol.FramePong, nil, nil), map[string]any{})

	// An error frame that answers no request: the frame's id could not be read.
	notJSON := protocol.WireError{Code: protocol.CodeBadRequest, Message: "frame is not JSON"}
	add("error without re", protocol.Reply{Type: protocol.FrameError, Error: &notJSON}.AppendJSON(nil),
		map[string]any{"error": map[string]any{"code": string(protocol.CodeBadRequest), "message": "frame is not JSON"}})

	for _, tk := range []matcher.Ticket{waiting, matched, cancelled, expired} {
		add("ticket.update "+string(tk.Status), protocol.Frame(matcher.TicketUpdatedEvent(tk)),
			map[string]any{"ticket": expectTicket(tk)})
	}
	add("match.found PENDING_ACCEPT", protocol.Frame(matcher.MatchFoundEvent(pending)), map[string]any{"match": expectMatch(pending)})
	noAccept := fixtureMatch(matcher.MatchReady, 1)
	noAccept.Accepted = nil // a queue without an accept step
	add("match.found READY", protocol.Frame(matcher.MatchFoundEvent(noAccept)), map[string]any{"match": expectMatch(noAccept)})
	add("match.ready", protocol.Frame(matcher.MatchReadyEvent(ready)), map[string]any{"match": expectMatch(ready)})
	dissolved := fixtureMatch(matcher.MatchDissolved, 3)
	dissolved.Accepted = []string{"u-<bob>"}
	add("match.dissolved", protocol.Frame(matcher.MatchDissolvedEvent(dissolved, matcher.ReasonDeclined)),
		map[string]any{"match": expectMatch(dissolved), "reason": matcher.ReasonDeclined})

	// The admission queue: its replies and its pushes.
	inf := math.Inf(1)
	entered := admission.Position{Status: admission.StatusWaiting, Rank: 41, Total: 42,
		ETA: admission.ETA{Seconds: 20.5, Low: 14, High: 41, Measured: true}, PollAfter: 3500 * time.Millisecond, Version: 1}
	add("entered", positionReply(protocol.FrameEntered, entered), map[string]any{"position": expectPosition(entered)})
	front := admission.Position{Status: admission.StatusWaiting, Rank: 0, Total: 42,
		ETA: admission.ETA{Seconds: 0.5, Low: 0.3, High: 1.2, Measured: true}, PollAfter: time.Second, Version: 1}
	unbounded := admission.Position{Status: admission.StatusWaiting, Rank: 7, Total: 42,
		ETA: admission.ETA{Seconds: 8, Low: 4, High: inf, Measured: true}, PollAfter: time.Second, Version: 1}
	unrated := admission.Position{Status: admission.StatusWaiting, Rank: 7, Total: 42,
		ETA: admission.ETA{Seconds: inf, Low: inf, High: inf}, PollAfter: 20 * time.Second, Version: 1}
	admitted := admission.Position{Status: admission.StatusReady, Token: "9f2c4e0b7a1d3c5e8f6a0b2d4c6e8a1f",
		ExpiresAt: fixtureAt.Add(5 * time.Minute), Version: 2}
	for _, c := range []struct {
		name string
		p    admission.Position
	}{
		{"WAITING", front}, {"WAITING without an upper bound", unbounded}, {"WAITING without a rate", unrated},
		{"READY", admitted}, {"NOT_ENTERED", admission.Position{Version: 3}},
	} {
		add("position "+c.name, positionReply(protocol.FramePosition, c.p), map[string]any{"position": expectPosition(c.p)})
	}
	add("left", reply(protocol.FrameLeft, nil, nil), map[string]any{})
	add("admission.position", protocol.AppendAdmissionPosition(nil, "drop", protocol.PositionOf(front)),
		map[string]any{"queue": "drop", "position": expectPosition(front)})
	add("admission.ready", protocol.AppendAdmissionReady(nil, "drop", admitted.Token, admitted.ExpiresAt),
		map[string]any{"queue": "drop", "token": admitted.Token, "expiresAt": wireTime(admitted.ExpiresAt)})

	// The ranking pushes: the reply to a subscribe, to an unsubscribe, and
	// the push of a changed Top.
	top := fixtureTop()
	add("subscribed", mustJSON(t, protocol.RankingFrameOf(protocol.FrameSubscribed, fixtureRe, "trending", ranking.WindowHour,
		"2031-03-04T05", 2, top)), expectRanking("trending", "hour", "2031-03-04T05", 2, top))
	add("unsubscribed", reply(protocol.FrameUnsubscribed, nil, nil), map[string]any{})
	add("ranking.update", mustJSON(t, protocol.RankingFrameOf(protocol.FrameRankingUpdate, "", "trending", ranking.WindowHour,
		"2031-03-04T06", 2, top[:1])), expectRanking("trending", "hour", "2031-03-04T06", 2, top[:1]))
	return out
}

// fixtureTop is a Top of two items, the second with a score too large to
// be finite (the wire writes null).
func fixtureTop() []ranking.Ranked {
	return []ranking.Ranked{
		{Item: "duel", Rank: 1, Score: 12.5, Metrics: map[string]float64{"matches": 10, "players": 25},
			Parts: map[string]float64{"matches": 10, "players": 2.5}},
		{Item: "<royale>", Rank: 2, Score: math.Inf(1), Metrics: map[string]float64{"matches": 3},
			Parts: map[string]float64{"matches": math.Inf(1)}},
	}
}

// expectRanking is what a client reads of a ranking frame: the board as
// ranking, the items in rank order, a non-finite number null.
func expectRanking(board, window, period string, weightsVersion int64, items []ranking.Ranked) map[string]any {
	num := func(f float64) any {
		if math.IsInf(f, 0) || math.IsNaN(f) {
			return nil
		}
		return f
	}
	nums := func(m map[string]float64) map[string]any {
		out := map[string]any{}
		for k, v := range m {
			out[k] = num(v)
		}
		return out
	}
	list := make([]map[string]any, len(items))
	for i, r := range items {
		list[i] = map[string]any{"item": r.Item, "rank": r.Rank, "score": num(r.Score), "metrics": nums(r.Metrics), "parts": nums(r.Parts)}
	}
	return map[string]any{"ranking": board, "window": window, "period": period, "weightsVersion": weightsVersion, "items": list}
}

// errorExamples are one error per code, with the status CodeOf gives its
// kind; the conflicts carry the ids they concern, the refusals to retry
// later a retryAfter.
func errorExamples(t *testing.T) []errorExample {
	var out []errorExample
	for _, code := range protocol.Codes() {
		status := statusOf(t, code)
		e := protocol.WireError{Code: code, Message: strings.ToLower(strings.ReplaceAll(string(code), "_", " "))}
		switch code {
		case protocol.CodeAlreadyQueued:
			e.TicketID = "t1"
		case protocol.CodeAlreadyMatched:
			e.TicketID, e.MatchID = "t1", "m1"
		}
		if status == http.StatusTooManyRequests || status == http.StatusServiceUnavailable {
			e.RetryAfter = 3
		}
		frame := protocol.Reply{Type: protocol.FrameError, Re: fixtureRe, Error: &e}.AppendJSON(nil)
		body := mustJSON(t, protocol.ErrorBody{Error: e})
		out = append(out, errorExample{code, status, frame, body})
	}
	return out
}

// statusOf is the HTTP status of a wire code: CodeOf's for the domain kind
// it is the code of, or AdmissionCodeOf's for the admission refusal.
func statusOf(t *testing.T, code protocol.Code) int {
	for _, k := range matcher.Codes() {
		if c, status := protocol.CodeOf(k); c == code {
			return status
		}
	}
	for _, err := range []error{admission.ErrUnknownQueue, admission.ErrNotFound, admission.ErrAlreadyClaimed, admission.ErrNotClaimed} {
		if c, status, ok := protocol.AdmissionCodeOf(err); ok && c == code {
			return status
		}
	}
	t.Fatalf("no domain kind or admission refusal has the code %s", code)
	return 0
}

func clientExamples(t *testing.T) []clientExample {
	var out []clientExample
	for _, c := range []struct {
		name string
		cmd  protocol.Command
	}{
		{"join", protocol.Command{Type: protocol.FrameJoin, Queue: "duel", Region: "eu", Attributes: map[string]string{"mode": "5v5"}}},
		{"join (queue only)", protocol.Command{Type: protocol.FrameJoin, Queue: "duel"}},
		{"cancel", protocol.Command{Type: protocol.FrameCancel, TicketID: "t1"}},
		{"accept", protocol.Command{Type: protocol.FrameAccept, MatchID: "m1"}},
		{"decline", protocol.Command{Type: protocol.FrameDecline, MatchID: "m1"}},
		{"status", protocol.Command{Type: protocol.FrameStatus}},
		{"ping", protocol.Command{Type: protocol.FramePing}},
		{"enter", protocol.Command{Type: protocol.FrameEnter, Queue: "drop"}},
		{"position", protocol.Command{Type: protocol.FramePosition, Queue: "drop"}},
		{"leave", protocol.Command{Type: protocol.FrameLeave, Queue: "drop"}},
	} {
		c.cmd.ID = fixtureRe
		out = append(out, clientExample{c.name, mustJSON(t, c.cmd)})
	}
	return out
}

// rankingClientExamples are the ranking frames a client sends
// (RankingCommand, decoded apart from Command).
func rankingClientExamples(t *testing.T) []clientExample {
	five := 5
	var out []clientExample
	for _, c := range []struct {
		name string
		cmd  protocol.RankingCommand
	}{
		{"subscribe", protocol.RankingCommand{Type: protocol.FrameSubscribe, Ranking: "trending", Window: "hour", Limit: &five}},
		{"subscribe (no limit)", protocol.RankingCommand{Type: protocol.FrameSubscribe, Ranking: "trending", Window: "day"}},
		{"unsubscribe", protocol.RankingCommand{Type: protocol.FrameUnsubscribe, Ranking: "trending", Window: "hour"}},
	} {
		c.cmd.ID = fixtureRe
		out = append(out, clientExample{c.name, mustJSON(t, c.cmd)})
	}
	return out
}

// renderFixture writes the fixture one example a line, so that a change
// of the wire shows in a diff as the examples it changes.
func renderFixture(t *testing.T) []byte {
	var b bytes.Buffer
	b.WriteString("{\n")
	field := func(name string, v any, last bool) {
		b.WriteString("  " + string(mustJSON(t, name)) + ": " + string(mustJSON(t, v)))
		if !last {
			b.WriteByte(',')
		}
		b.WriteByte('\n')
	}
	list := func(name string, items []any, last bool) {
		b.WriteString("  " + string(mustJSON(t, name)) + ": [\n")
		for i, it := range items {
			b.WriteString("    " + string(mustJSON(t, it)))
			if i < len(items)-1 {
				b.WriteByte(',')
			}
			b.WriteByte('\n')
		}
		b.WriteString("  ]")
		if !last {
			b.WriteByte(',')
		}
		b.WriteByte('\n')
	}
	codes := make([]map[string]any, 0, len(protocol.Codes()))
	for _, code := range protocol.Codes() {
		codes = append(codes, map[string]any{"code": code, "status": statusOf(t, code)})
	}
	field("about", "The wire as package protocol renders it (ARCHITECTURE.md §8). Generated: go test ./protocol/ -run TestWireFixture -update. "+
		"Replies carry re "+string(mustJSON(t, fixtureRe))+", the id of the command they answer.", false)
	field("serverFrameTypes", protocol.ServerFrameTypes, false)
	field("clientFrameTypes", protocol.ClientFrameTypes, false)
	field("rankingClientFrameTypes", protocol.RankingClientFrameTypes, false)
	field("errorCodes", codes, false)
	list("server", toAny(serverExamples(t)), false)
	list("errors", toAny(errorExamples(t)), false)
	list("client", toAny(clientExamples(t)), false)
	list("rankingClient", toAny(rankingClientExamples(t)), true)
	b.WriteString("}\n")
	return b.Bytes()
}

func toAny[T any](xs []T) []any {
	out := make([]any, len(xs))
	for i, x := range xs {
		out[i] = x
	}
	return out
}

// The committed fixture is what the package renders now, so that a
// client checked against it is checked against the wire.
func TestWireFixture(t *testing.T) {
	want := renderFixture(t)
	if *update {
		if err := os.WriteFile(fixturePath, want, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	got, err := os.ReadFile(fixturePath)
	if err != nil {
		t.Fatalf("%v (go test ./protocol/ -run TestWireFixture -update writes it)", err)
	}
	if !bytes.Equal(got, want) {
		gl, wl := strings.Split(string(got), "\n"), strings.Split(string(want), "\n")
		for i := range max(len(gl), len(wl)) {
			if i >= len(gl) || i >= len(wl) || gl[i] != wl[i] {
				t.Fatalf("%s differs from what the package renders, first at line %d:\n file: %s\n  now: %s\n"+
					"if the wire changed on purpose: go test ./protocol/ -run TestWireFixture -update, and update the clients",
					fixturePath, i+1, lineAt(gl, i), lineAt(wl, i))
			}
		}
	}
}

func lineAt(lines []string, i int) string {
	if i < len(lines) {
		return lines[i]
	}
	return "(end of file)"
}

// The fixture covers the protocol: an example of every frame type each
// way, of nothing else, and every error code.
func TestWireFixtureCoversTheProtocol(t *testing.T) {
	typeOf := func(frame []byte) string {
		var f struct {
			Type string `json:"type"`
		}
		if err := json.Unmarshal(frame, &f); err != nil {
			t.Fatalf("%s: %v", frame, err)
		}
		return f.Type
	}
	seen := map[string]bool{}
	for _, e := range serverExamples(t) {
		typ := typeOf(e.Frame)
		if !slices.Contains(protocol.ServerFrameTypes, typ) {
			t.Errorf("server example %q has type %q, not a server frame type", e.Example, typ)
		}
		seen[typ] = true
	}
	codes := map[protocol.Code]bool{}
	for _, e := range errorExamples(t) {
		if typ := typeOf(e.Frame); typ != protocol.FrameError {
			t.Errorf("error example %s has type %q", e.Code, typ)
		}
		codes[e.Code] = true
	}
	for _, typ := range protocol.ServerFrameTypes {
		if !seen[typ] {
			t.Errorf("no example of the server frame %q", typ)
		}
	}
	for _, c := range protocol.Codes() {
		if !codes[c] {
			t.Errorf("no example of the error code %s", c)
		}
	}
	seen = map[string]bool{}
	for _, e := range clientExamples(t) {
		typ := typeOf(e.Frame)
		if !slices.Contains(protocol.ClientFrameTypes, typ) {
			t.Errorf("client example %q has type %q, not a client frame type", e.Example, typ)
		}
		seen[typ] = true
	}
	for _, typ := range protocol.ClientFrameTypes {
		if !seen[typ] {
			t.Errorf("no example of the client frame %q", typ)
		}
	}
	seen = map[string]bool{}
	for _, e := range rankingClientExamples(t) {
		typ := typeOf(e.Frame)
		if !slices.Contains(protocol.RankingClientFrameTypes, typ) {
			t.Errorf("ranking client example %q has type %q, not a ranking client frame type", e.Example, typ)
		}
		seen[typ] = true
	}
	for _, typ := range protocol.RankingClientFrameTypes {
		if !seen[typ] {
			t.Errorf("no example of the ranking client frame %q", typ)
		}
		if slices.Contains(protocol.ClientFrameTypes, typ) || !protocol.IsRankingFrame(typ) {
			t.Errorf("%q: a ranking frame, and decoded as one only", typ)
		}
	}
}
