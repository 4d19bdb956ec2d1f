package protocol

import (
	"bytes"
	"encoding/json"
	"math"
	"math/rand/v2"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/matchgate/matchgate/matcher"
)

// wireFragments are the pieces the generated strings are made of: every
// case encoding/json treats apart, and plain text around them.
var wireFragments = func() []string {
	frags := []string{
		"", "a", "user-123", "0b6a5b0c-2f0e-4d7f-8d4e-3c0f6a9b1c2d", " ", "\x7f",
		`"`, `\`, `\"`, "<", ">", "&", "</script>", "\u2028", "\u2029", "\u2027", "\u202a",
		"é", "日本語", "😀", "\ufffd", "\ufeff",
		"\xff", "\xfe", "\x80", "\xc3", "\xe2\x80", "\xf0\x9f\x98", "\xc0\xaf", "\xed\xa0\x80", "\xf4\x90\x80\x80",
	}
	for c := range byte(0x20) {
		frags = append(frags, string([]byte{c}))
	}
	return frags
}()

func genString(r *rand.Rand) string {
	var b []byte
	for range r.IntN(6) {
		if r.IntN(4) == 0 {
			b = append(b, byte(r.IntN(256)))
		} else {
			b = append(b, wireFragments[r.IntN(len(wireFragments))]...)
		}
	}
	return string(b)
}

var wireFloats = []float64{
	0, math.Copysign(0, -1), 1e-7, -1e-7, 1e-6, 9.99999e-7, 5e-324, -5e-324, 1e-300,
	1e20, 1e21, -1e21, 9.999999999999999e20, 1.7976931348623157e308, -1.7976931348623157e308,
	1, -3, 1500, 1523.4567, 0.1, 123456789012345678, 2.5e-10,
}

func genFloat(r *rand.Rand) float64 {
	switch r.IntN(4) {
	case 0:
		return wireFloats[r.IntN(len(wireFloats))]
	case 1:
		return r.NormFloat64()*300 + 1500
	case 2:
		return float64(r.IntN(4000) - 1000)
	}
	for {
		if f := math.Float64frombits(r.Uint64()); !math.IsNaN(f) && !math.IsInf(f, 0) {
			return f
		}
	}
}

func genTime(r *rand.Rand) wireTime {
	zones := []*time.Location{
		time.UTC, time.FixedZone("IST", 5*3600+1800), time.FixedZone("PST", -8*3600), time.FixedZone("odd", -(3*3600 + 17)),
	}
	var t time.Time
	switch r.IntN(6) {
	case 0:
		t = time.Time{}.In(zones[r.IntN(len(zones))]) // still zero: null
	case 1:
		t = time.Date(r.IntN(12100)-100, time.Month(1+r.IntN(12)), 1+r.IntN(28), r.IntN(24), r.IntN(60), r.IntN(60), r.IntN(1e9), time.UTC)
	default:
		t = time.Unix(1755530400+r.Int64N(1e8)-5e7, r.Int64N(1e9)) // sub-millisecond parts
	}
	return wireTime(t.In(zones[r.IntN(len(zones))]))
}

func genStringPtr(r *rand.Rand) *string {
	if r.IntN(3) == 0 {
		return nil
	}
	s := genString(r)
	return &s
}

func genTicket(r *rand.Rand) WireTicket {
	w := WireTicket{
		ID: genString(r), UserID: genString(r), Name: genString(r), Queue: genString(r), Region: genString(r),
		Status: matcher.TicketStatus(genString(r)), Skill: genFloat(r), Estimated: r.IntN(2) == 0,
		EnqueuedAt: genTime(r), Deadline: genTime(r), MatchID: genStringPtr(r), CancelReason: genStringPtr(r),
		UpdatedAt: genTime(r), Version: r.Int64() - r.Int64(),
	}
	switch n := r.IntN(14) - 2; {
	case n == -1:
		w.Attributes = map[string]string{} // omitted, as nil is
	case n >= 0:
		w.Attributes = map[string]string{}
		for range n {
			w.Attributes[genString(r)] = genString(r)
		}
	}
	if n := r.IntN(5) - 1; n >= 0 {
		w.Relaxed = make([]string, n) // none is omitted, as nil is
		for i := range w.Relaxed {
			w.Relaxed[i] = genString(r)
		}
	}
	return w
}

func genMatch(r *rand.Rand) WireMatch {
	w := WireMatch{
		ID: genString(r), Queue: genString(r), Region: genString(r), State: genString(r), FormedBy: genString(r),
		Bots: r.IntN(20) - 5, Spread: genFloat(r), CreatedAt: genTime(r), Version: r.Int64() - r.Int64(),
	}
	if r.IntN(8) == 0 {
		w.Bots = []int{math.MaxInt, math.MinInt}[r.IntN(2)]
	}
	if n := r.IntN(7) - 1; n >= 0 {
		w.Players = make([]matcher.Player, n)
		for i := range w.Players {
			w.Players[i] = matcher.Player{TicketID: genString(r), UserID: genString(r), Name: genString(r), Skill: genFloat(r)}
		}
	}
	if n := r.IntN(6) - 1; n >= 0 {
		w.Accepted = make([]string, n)
		for i := range w.Accepted {
			w.Accepted[i] = genString(r)
		}
	}
	if r.IntN(2) == 0 {
		w.Server = &matcher.Server{Address: genString(r), Session: genString(r)}
	}
	if r.IntN(2) == 0 {
		at := genTime(r)
		w.AcceptBy = &at
	}
	if r.IntN(3) == 0 {
		w.Provider = genProvider(r)
	}
	return w
}

// genProvider is a provider seat with no parts, empty parts (omitted, as
// none is) or a few.
func genProvider(r *rand.Rand) *matcher.ProviderSeat {
	p := &matcher.ProviderSeat{UserID: genString(r), Score: genFloat(r)}
	switch n := r.IntN(8) - 2; {
	case n == -1:
		p.Parts = map[string]float64{}
	case n >= 0:
		p.Parts = map[string]float64{}
		for range n {
			p.Parts[genString(r)] = genFloat(r)
		}
	}
	return p
}

func mustMarshal(t *testing.T, v any) []byte {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatalf("json.Marshal(%#v): %v", v, err)
	}
	return b
}

// The appenders must write what json.Marshal writes, byte for byte, and
// append to what the buffer already holds.
func TestWireAppendMatchesJSON(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	prefix := []byte(`{"x":`)
	for i := range 5000 {
		wt := genTicket(r)
		want := mustMarshal(t, wt)
		if got := wt.AppendJSON(nil); !bytes.Equal(got, want) {
			t.Fatalf("ticket %d:\n got %s\nwant %s", i, got, want)
		}
		if got := wt.AppendJSON(bytes.Clone(prefix)); !bytes.Equal(got, append(bytes.Clone(prefix), want...)) {
			t.Fatalf("ticket %d appended to %s: got %s", i, prefix, got)
		}

		wm := genMatch(r)
		want = mustMarshal(t, wm)
		if got := wm.AppendJSON(nil); !bytes.Equal(got, want) {
			t.Fatalf("match %d:\n got %s\nwant %s", i, got, want)
		}
		if got := wm.AppendJSON(bytes.Clone(prefix)); !bytes.Equal(got, append(bytes.Clone(prefix), want...)) {
			t.Fatalf("match %d appended to %s: got %s", i, prefix, got)
		}
	}
}

// The comparisons with json.Marshal see only the fields the generators
// fill: a field added to a wire type, left zero by them (and omitted, or
// written as zero) and forgotten by AppendJSON, would pass unseen. So the
// generators must fill every field, of every type inside, in some sample.
func TestWireGeneratorsFillEveryField(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	filled := map[string]bool{}
	for range 500 {
		markFilled(filled, "WireTicket", reflect.ValueOf(genTicket(r)))
		markFilled(filled, "WireMatch", reflect.ValueOf(genMatch(r)))
	}
	for name, typ := range map[string]reflect.Type{"WireTicket": reflect.TypeFor[WireTicket](), "WireMatch": reflect.TypeFor[WireMatch]()} {
		for _, path := range fieldPaths(name, typ) {
			if !filled[path] {
				t.Errorf("the generators never fill %s: extend them (and check AppendJSON writes it)", path)
			}
		}
	}
}

// markFilled notes the fields of struct v, and of the structs it holds
// (by pointer or in slices), that are not zero.
func markFilled(filled map[string]bool, path string, v reflect.Value) {
	switch v.Kind() {
	case reflect.Pointer:
		if !v.IsNil() {
			markFilled(filled, path, v.Elem())
		}
	case reflect.Slice:
		for i := range v.Len() {
			markFilled(filled, path, v.Index(i))
		}
	case reflect.Struct:
		for i := range v.NumField() {
			f, name := v.Field(i), path+"."+v.Type().Field(i).Name
			if !f.IsZero() {
				filled[name] = true
			}
			markFilled(filled, name, f)
		}
	}
}

// fieldPaths lists the fields markFilled names, for type typ.
func fieldPaths(path string, typ reflect.Type) []string {
	switch typ.Kind() {
	case reflect.Pointer, reflect.Slice:
		return fieldPaths(path, typ.Elem())
	case reflect.Struct:
		if typ == reflect.TypeFor[wireTime]() || typ == reflect.TypeFor[time.Time]() {
			return nil
		}
		var out []string
		for i := range typ.NumField() {
			if f := typ.Field(i); f.IsExported() {
				out = append(out, path+"."+f.Name)
				out = append(out, fieldPaths(path+"."+f.Name, f.Type)...)
			}
		}
		return out
	}
	return nil
}

// Every float of wireFloats, alone, so that none is left to chance.
func TestAppendJSONFloat(t *testing.T) {
	for _, f := range wireFloats {
		if got, want := AppendJSONFloat(nil, f), mustMarshal(t, f); !bytes.Equal(got, want) {
			t.Errorf("AppendJSONFloat(%v) = %s, want %s", f, got, want)
		}
	}
}

// The golden frame pins the wire format itself, which comparing with
// json.Marshal of the wire types would not notice changing.
func TestWireTicketGolden(t *testing.T) {
	at := time.Date(2025, 8, 18, 17, 20, 0, 123456789, time.FixedZone("CEST", 2*3600))
	match := "m1"
	w := WireTicket{ID: "t1", UserID: "u<1>", Queue: "ranked", Region: "eu", Status: matcher.StatusMatched, Skill: 1523.4567,
		Attributes: map[string]string{"mode": "5v5", "map": "dust"}, EnqueuedAt: wireTime(at), MatchID: &match, Version: 3}
	want := `{"id":"t1","userId":"u\u003c1\u003e","queue":"ranked","region":"eu","status":"MATCHED","skill":1523.4567,` +
		`"estimated":false,"attributes":{"map":"dust","mode":"5v5"},"enqueuedAt":"2025-08-18T15:20:00.123Z",` +
		`"deadline":null,"matchId":"m1","cancelReason":null,"updatedAt":null,"version":3}`
	if got := w.AppendJSON(nil); string(got) != want {
		t.Errorf("got  %s\nwant %s", got, want)
	}
}

// A provider match's wire shape, written out: the seat after the players,
// its parts sorted, and nothing of it on a match without one.
func TestWireProviderMatchGolden(t *testing.T) {
	at := time.Date(2025, 8, 18, 17, 20, 0, 123456789, time.UTC)
	m := matcher.Match{ID: "m1", Queue: "tutor", Region: "eu", State: matcher.MatchReady, FormedBy: matcher.FormedFilled,
		Players:  []matcher.Player{{TicketID: "t1", UserID: "req", Skill: 1500}},
		Provider: &matcher.ProviderSeat{UserID: "p<1>", Score: 0.82, Parts: map[string]float64{"specialty": 0.4, "rating": 4.2e-7}},
		Server:   &matcher.Server{Address: "10.0.0.1:7777", Session: "s"}, Accepted: []string{"p<1>"}, CreatedAt: at, Version: 2}
	want := `{"id":"m1","queue":"tutor","region":"eu","state":"READY","formedBy":"FILLED",` +
		`"players":[{"ticketId":"t1","userId":"req","skill":1500}],` +
		`"provider":{"userId":"p\u003c1\u003e","score":0.82,"parts":{"rating":4.2e-7,"specialty":0.4}},` +
		`"bots":0,"spread":0,"server":{"address":"10.0.0.1:7777","session":"s"},"acceptBy":null,` +
		`"accepted":["p\u003c1\u003e"],"createdAt":"2025-08-18T17:20:00.123Z","version":2}`
	if got := MatchOf(m).AppendJSON(nil); string(got) != want {
		t.Errorf("got  %s\nwant %s", got, want)
	}
	m.Provider.Parts = nil
	if got := string(MatchOf(m).AppendJSON(nil)); !strings.Contains(got, `"provider":{"userId":"p\u003c1\u003e","score":0.82},"bots"`) {
		t.Errorf("no parts: got %s", got)
	}
	m.Provider = nil
	if got := string(MatchOf(m).AppendJSON(nil)); strings.Contains(got, "provider") {
		t.Errorf("no provider: got %s", got)
	}
}

func genModelTicket(r *rand.Rand) matcher.Ticket {
	t := matcher.Ticket{
		ID: genString(r), UserID: genString(r), Name: genString(r), Queue: genString(r), Region: genString(r),
		Status: []matcher.TicketStatus{matcher.StatusWaiting, matcher.StatusMatched, matcher.StatusCancelled, matcher.StatusExpired}[r.IntN(4)],
		Skill:  genFloat(r), Estimated: r.IntN(2) == 0, EnqueuedAt: time.Time(genTime(r)),
		Deadline: time.Time(genTime(r)), UpdatedAt: time.Time(genTime(r)), Version: r.Int64N(100),
		Attributes: genTicket(r).Attributes,
	}
	if r.IntN(2) == 0 {
		t.MatchID = genString(r)
	}
	if r.IntN(2) == 0 {
		t.CancelReason = genString(r)
	}
	return t
}

func genModelMatch(r *rand.Rand) matcher.Match {
	w := genMatch(r)
	m := matcher.Match{
		ID: w.ID, Queue: w.Queue, Region: w.Region, FormedBy: w.FormedBy, Players: w.Players, Bots: w.Bots,
		Spread: w.Spread, Server: w.Server, Accepted: w.Accepted, CreatedAt: time.Time(w.CreatedAt), Version: w.Version,
		Provider: w.Provider,
		State:    []string{matcher.MatchPendingAccept, matcher.MatchReady, matcher.MatchDissolved, w.State}[r.IntN(4)],
	}
	if w.AcceptBy != nil {
		at := time.Time(*w.AcceptBy)
		m.AcceptBy = &at
	}
	return m
}

// The events must write what encoding/json writes of the wire types.
func TestWireEventsMatchJSON(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	for i := range 2000 {
		tk := genModelTicket(r)
		ev := matcher.TicketUpdatedEvent(tk)
		want := mustMarshal(t, struct {
			Type   string     `json:"type"`
			Ticket WireTicket `json:"ticket"`
		}{FrameTicketUpdate, TicketOf(tk)})
		if !bytes.Equal(Frame(ev), want) {
			t.Fatalf("ticket event %d:\n got %s\nwant %s", i, Frame(ev), want)
		}
		if len(ev.Users) != 1 || ev.Users[0] != tk.UserID {
			t.Fatalf("ticket event %d: users %q, want [%q]", i, ev.Users, tk.UserID)
		}

		m := genModelMatch(r)
		for _, c := range []struct {
			typ string
			got matcher.Event
		}{{FrameMatchFound, matcher.MatchFoundEvent(m)}, {FrameMatchReady, matcher.MatchReadyEvent(m)}} {
			want := mustMarshal(t, struct {
				Type  string    `json:"type"`
				Match WireMatch `json:"match"`
			}{c.typ, MatchOf(m)})
			if !bytes.Equal(Frame(c.got), want) {
				t.Fatalf("%s event %d:\n got %s\nwant %s", c.typ, i, Frame(c.got), want)
			}
		}
		reason := []string{matcher.ReasonDeclined, matcher.ReasonAcceptTimeout, genString(r)}[r.IntN(3)]
		dissolved := matcher.MatchDissolvedEvent(m, reason)
		want = mustMarshal(t, struct {
			Type   string    `json:"type"`
			Match  WireMatch `json:"match"`
			Reason string    `json:"reason"`
		}{FrameMatchDissolved, MatchOf(m), reason})
		if !bytes.Equal(Frame(dissolved), want) {
			t.Fatalf("dissolved event %d:\n got %s\nwant %s", i, Frame(dissolved), want)
		}
	}
}

func FuzzWireStringAppend(f *testing.F) {
	for _, s := range wireFragments {
		f.Add(s)
	}
	f.Add("a\"b\\c\nd<e>f&g\u2028h\xffi\xe2\x80")
	f.Fuzz(func(t *testing.T, s string) {
		want, err := json.Marshal(s)
		if err != nil {
			t.Fatalf("json.Marshal(%q): %v", s, err)
		}
		if got := AppendJSONString([]byte("x"), s); !bytes.Equal(got[1:], want) || got[0] != 'x' {
			t.Fatalf("AppendJSONString(%q) = %s, want %s", s, got[1:], want)
		}
	})
}
