package ledger

import (
	"bytes"
	"encoding/json"
	"math"
	"math/rand/v2"
	"reflect"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/matchgate/matchgate/matcher"
	"github.com/matchgate/matchgate/protocol"
)

func sampleMatch() matcher.Match {
	at := time.UnixMilli(1755530400000).UTC()
	acceptBy := at.Add(10 * time.Second)
	return matcher.Match{ID: "0b6a5b0c-2f0e-4d7f-8d4e-3c0f6a9b1c2d", Queue: "pairs", Region: "global",
		State: matcher.MatchReady, FormedBy: matcher.FormedFilled,
		Players: []matcher.Player{
			{TicketID: "1b6a5b0c-2f0e-4d7f-8d4e-3c0f6a9b1c2d", UserID: "user-1", Skill: 1500},
			{TicketID: "2b6a5b0c-2f0e-4d7f-8d4e-3c0f6a9b1c2d", UserID: "user-2", Skill: 1510},
		},
		Server: &matcher.Server{Address: "10.0.0.1:7777", Session: "s1"}, AcceptBy: &acceptBy,
		Accepted: []string{"user-1"}, CreatedAt: at, Version: 1}
}

// sampleProviderMatch is a provider queue's match: one player, the seat.
func sampleProviderMatch() matcher.Match {
	m := sampleMatch()
	m.Players = m.Players[:1]
	m.Accepted = []string{"prov-<1>"}
	m.Provider = &matcher.ProviderSeat{UserID: "prov-<1>", Score: 0.8125,
		Parts: map[string]float64{"specialty": 0.5, "rating": 0.3125, "load": 1e-7}}
	return m
}

func sampleTicket() matcher.Ticket {
	at := time.UnixMilli(1755530400000).UTC()
	return matcher.Ticket{ID: "0b6a5b0c-2f0e-4d7f-8d4e-3c0f6a9b1c2d", UserID: "user-<123>", Queue: "ranked", Region: "eu",
		Status: matcher.StatusCancelled, Skill: 1523.4567, Attributes: map[string]string{"mode": "5v5"},
		EnqueuedAt: at, Deadline: at.Add(5 * time.Minute), CancelReason: "user",
		UpdatedAt: at.Add(1234567 * time.Microsecond), Version: 3}
}

func sampleEvents() []matcher.Event {
	m, pm := sampleMatch(), sampleProviderMatch()
	return []matcher.Event{
		matcher.TicketUpdatedEvent(sampleTicket()), matcher.MatchFoundEvent(m),
		matcher.MatchReadyEvent(m), matcher.MatchDissolvedEvent(m, matcher.ReasonDeclined),
		matcher.MatchFoundEvent(pm), matcher.MatchReadyEvent(pm), matcher.MatchDissolvedEvent(pm, matcher.ReasonAcceptTimeout),
	}
}

// An event stored as data reads back as the same event, and renders the
// same frame as the event the ledger returned at the commit.
func TestEventDataRoundTrip(t *testing.T) {
	for _, e := range sampleEvents() {
		b, err := encodeEvent(e)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.HasPrefix(b, []byte(`{"v":1,`)) {
			t.Errorf("data %s: not versioned", b)
		}
		var got matcher.Event
		if err := decodeEvent(b, &got); err != nil {
			t.Fatalf("decode %s: %v", b, err)
		}
		if got.Kind != e.Kind || got.Reason != e.Reason || !bytes.Equal(protocol.Frame(got), protocol.Frame(e)) {
			t.Errorf("kind %d: read back as %+v\n got %s\nwant %s", e.Kind, got, protocol.Frame(got), protocol.Frame(e))
		}
	}
}

// A row the previous version wrote holds the finished frame: it is read as
// its event and published byte for byte as it was written.
func TestLegacyFrameRowsRenderAsBefore(t *testing.T) {
	for _, e := range sampleEvents() {
		frame := protocol.Frame(e) // what the previous version stored
		var got matcher.Event
		if err := decodeEvent(frame, &got); err != nil {
			t.Fatalf("decode %s: %v", frame, err)
		}
		if got.Kind != e.Kind || !bytes.Equal(protocol.Frame(got), frame) {
			t.Errorf("legacy row\n got %s\nwant %s", protocol.Frame(got), frame)
		}
	}
	for _, bad := range []string{`{"type":"nope"}`, `{"v":2,"kind":"match.found"}`, `{"v":1,"kind":"nope"}`, `garbage`} {
		var e matcher.Event
		if err := decodeEvent([]byte(bad), &e); err == nil {
			t.Errorf("%s: decoded as %+v", bad, e)
		}
	}
}

// BenchmarkEventData is what the PostgreSQL ledger adds to a commit per
// event: the event's data for its outbox row (a pair's match.found per
// match, a ticket.updated per seated ticket).
func BenchmarkEventData(b *testing.B) {
	for _, c := range []struct {
		name string
		e    matcher.Event
	}{
		{"match.found", matcher.MatchFoundEvent(sampleMatch())},
		{"ticket.updated", matcher.TicketUpdatedEvent(sampleTicket())},
	} {
		b.Run(c.name, func(b *testing.B) {
			for b.Loop() {
				if _, err := encodeEvent(c.e); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// dataFragments are the pieces generated strings are made of: every case
// encoding/json's string encoder treats apart, and plain text.
// The last of them are not UTF-8: encoding/json writes each bad byte as
// U+FFFD, so they are the same bytes written but do not read back.
var dataFragments = []string{
	"", "a", "user-123", "0b6a5b0c-2f0e-4d7f-8d4e-3c0f6a9b1c2d", " ", "\x00", "\x1f", "\t", "\n", "\r", "\b", "\f", "\x7f",
	`"`, `\`, "<", ">", "&", "</script>", "\u2028", "\u2029", "é", "日本語", "😀", "\ufffd", "\ufeff",
	"\xff", "\x80", "\xc3", "\xe2\x80", "\xed\xa0\x80", "\xf4\x90\x80\x80",
}

const validFragments = 26 // dataFragments[:validFragments] are UTF-8

// dataGen generates events; with utf8 set, only strings that are UTF-8.
type dataGen struct {
	*rand.Rand
	utf8 bool
}

func (r dataGen) str() string {
	n := len(dataFragments)
	if r.utf8 {
		n = validFragments
	}
	var b []byte
	for range r.IntN(5) {
		b = append(b, dataFragments[r.IntN(n)]...)
	}
	return string(b)
}

var dataFloats = []float64{
	0, math.Copysign(0, -1), 1e-7, -1e-7, 1e-6, 5e-324, 1e20, 1e21, -1e21, 1.7976931348623157e308,
	1, 1500, 1523.4567, 0.1, 123456789012345678,
}

// genDataFloat is mostly a finite float; now and then NaN or ±Inf, which
// json.Marshal refuses and so must encodeEvent.
func (r dataGen) float() float64 {
	switch r.IntN(40) {
	case 0:
		return math.NaN()
	case 1:
		return math.Inf(1 - 2*r.IntN(2))
	}
	if r.IntN(3) == 0 {
		return dataFloats[r.IntN(len(dataFloats))]
	}
	if r.IntN(2) == 0 {
		return math.Round(r.NormFloat64()*3000+15000) / 10
	}
	for {
		if f := math.Float64frombits(r.Uint64()); !math.IsNaN(f) && !math.IsInf(f, 0) {
			return f
		}
	}
}

// genDataTime is a time as the ledger's values hold them (UTC, to the
// microsecond), or the zero time, or one in an odd zone or out of
// RFC 3339's range, which json.Marshal refuses.
func (r dataGen) instant() time.Time {
	switch r.IntN(10) {
	case 0:
		return time.Time{}
	case 1:
		zones := []*time.Location{time.FixedZone("IST", 5*3600+1800), time.FixedZone("PST", -8*3600),
			time.FixedZone("odd", -(3*3600 + 17)), time.FixedZone("far", 25*3600)}
		return time.Unix(1755530400+r.Int64N(1e8), r.Int64N(1e9)).In(zones[r.IntN(len(zones))])
	case 2:
		return time.Date(r.IntN(12100)-100, time.Month(1+r.IntN(12)), 1+r.IntN(28), r.IntN(24), 0, 0, r.IntN(1e9), time.UTC)
	}
	return time.UnixMicro(1755530400_000000 + r.Int64N(1e14)).UTC()
}

func (r dataGen) ticket() matcher.Ticket {
	t := matcher.Ticket{
		ID: r.str(), UserID: r.str(), Name: r.str(), Queue: r.str(), Region: r.str(),
		Status: []matcher.TicketStatus{matcher.StatusWaiting, matcher.StatusMatched, matcher.StatusCancelled,
			matcher.StatusExpired, matcher.TicketStatus(r.str())}[r.IntN(5)],
		Skill: r.float(), Estimated: r.IntN(2) == 0, EnqueuedAt: r.instant(), Deadline: r.instant(),
		UpdatedAt: r.instant(), Version: r.Int64() - r.Int64(),
	}
	switch n := r.IntN(6) - 2; {
	case n == -1:
		t.Attributes = map[string]string{} // omitted, as nil is
	case n >= 0:
		t.Attributes = map[string]string{}
		for range n + 1 {
			t.Attributes[r.str()] = r.str()
		}
	}
	if r.IntN(2) == 0 {
		t.MatchID = r.str()
	}
	if r.IntN(2) == 0 {
		t.CancelReason = r.str()
	}
	return t
}

func (r dataGen) match() matcher.Match {
	m := matcher.Match{
		ID: r.str(), Queue: r.str(), Region: r.str(),
		State:    []string{matcher.MatchPendingAccept, matcher.MatchReady, matcher.MatchDissolved, r.str()}[r.IntN(4)],
		FormedBy: []string{matcher.FormedFilled, matcher.FormedFallback, matcher.FormedTimeout, r.str()}[r.IntN(4)],
		Bots:     r.IntN(20) - 5, Spread: r.float(), CreatedAt: r.instant(), Version: r.Int64() - r.Int64(),
	}
	if r.IntN(10) == 0 {
		m.Bots = []int{math.MaxInt, math.MinInt}[r.IntN(2)]
	}
	if n := r.IntN(6) - 1; n >= 0 { // nil, empty or some players
		m.Players = make([]matcher.Player, n)
		for i := range m.Players {
			m.Players[i] = matcher.Player{TicketID: r.str(), UserID: r.str(), Name: r.str(), Skill: r.float()}
		}
	}
	if n := r.IntN(5) - 1; n >= 0 {
		m.Accepted = make([]string, n)
		for i := range m.Accepted {
			m.Accepted[i] = r.str()
		}
	}
	if r.IntN(3) > 0 {
		m.Server = &matcher.Server{Address: r.str(), Session: r.str()}
	}
	if r.IntN(2) == 0 {
		at := r.instant()
		m.AcceptBy = &at
	}
	if r.IntN(3) == 0 {
		m.Provider = &matcher.ProviderSeat{UserID: r.str(), Score: r.float()}
		if n := r.IntN(6) - 1; n >= 0 { // none, empty (omitted) or some
			m.Provider.Parts = make(map[string]float64, n)
			for range n {
				m.Provider.Parts[r.str()] = r.float()
			}
		}
	}
	return m
}

func (r dataGen) event() matcher.Event {
	switch r.IntN(4) {
	case 0:
		return matcher.TicketUpdatedEvent(r.ticket())
	case 1:
		return matcher.MatchFoundEvent(r.match())
	case 2:
		return matcher.MatchReadyEvent(r.match())
	}
	reason := []string{matcher.ReasonDeclined, matcher.ReasonAcceptTimeout, "", r.str()}[r.IntN(4)]
	return matcher.MatchDissolvedEvent(r.match(), reason)
}

// marshalEventData is what encodeEvent wrote before it was written by hand:
// json.Marshal of the event's eventData.
func marshalEventData(e matcher.Event) ([]byte, error) {
	d := eventData{V: eventDataVersion, Kind: eventKinds[e.Kind], Reason: e.Reason}
	if e.Kind == matcher.EventTicketUpdated {
		d.Ticket = &e.Ticket
	} else {
		d.Match = &e.Match
	}
	return json.Marshal(d)
}

// encodeEvent writes what json.Marshal writes, byte for byte, and refuses
// what it refuses (NaN, years past 9999, offsets of a day).
func TestEventDataIsWhatJSONWrites(t *testing.T) {
	r := dataGen{Rand: rand.New(rand.NewPCG(7, 8))}
	refused := 0
	for i := range 20000 {
		e := r.event()
		want, wantErr := marshalEventData(e)
		got, err := encodeEvent(e)
		if wantErr != nil {
			refused++
			if err == nil {
				t.Fatalf("event %d: json.Marshal refuses it (%v), encodeEvent wrote %s", i, wantErr, got)
			}
			continue
		}
		if err != nil {
			t.Fatalf("event %d: %v; json.Marshal wrote %s", i, err, want)
		}
		if !bytes.Equal(got, want) {
			t.Fatalf("event %d:\n got %s\nwant %s", i, got, want)
		}
	}
	if refused == 0 || refused > 10000 {
		t.Errorf("%d of 20000 events refused: the generator should make some, not most", refused)
	}
	for _, e := range sampleEvents() {
		want, _ := marshalEventData(e)
		if got, err := encodeEvent(e); err != nil || !bytes.Equal(got, want) {
			t.Errorf("sample %d:\n got %s (%v)\nwant %s", e.Kind, got, err, want)
		}
	}
}

// The comparison with json.Marshal sees only the fields the generators
// fill: a field added to matcher.Ticket or Match and forgotten by the
// appenders would pass unseen unless the generators fill every field.
func TestEventDataGeneratorsFillEveryField(t *testing.T) {
	r := dataGen{Rand: rand.New(rand.NewPCG(9, 10))}
	filled := map[string]bool{}
	for range 500 {
		markSet(filled, "Ticket", reflect.ValueOf(r.ticket()))
		markSet(filled, "Match", reflect.ValueOf(r.match()))
	}
	for name, typ := range map[string]reflect.Type{"Ticket": reflect.TypeFor[matcher.Ticket](), "Match": reflect.TypeFor[matcher.Match]()} {
		for _, path := range jsonFieldPaths(name, typ) {
			if !filled[path] {
				t.Errorf("the generators never fill %s: extend them (and check encodeEvent writes it)", path)
			}
		}
	}
}

func markSet(filled map[string]bool, path string, v reflect.Value) {
	switch v.Kind() {
	case reflect.Pointer:
		if !v.IsNil() {
			markSet(filled, path, v.Elem())
		}
	case reflect.Slice:
		for i := range v.Len() {
			markSet(filled, path, v.Index(i))
		}
	case reflect.Struct:
		if v.Type() == reflect.TypeFor[time.Time]() {
			return
		}
		for i := range v.NumField() {
			f, name := v.Field(i), path+"."+v.Type().Field(i).Name
			if !f.IsZero() {
				filled[name] = true
			}
			markSet(filled, name, f)
		}
	}
}

// jsonFieldPaths lists the fields of typ that encoding/json writes.
func jsonFieldPaths(path string, typ reflect.Type) []string {
	switch typ.Kind() {
	case reflect.Pointer, reflect.Slice:
		return jsonFieldPaths(path, typ.Elem())
	case reflect.Struct:
		if typ == reflect.TypeFor[time.Time]() {
			return nil
		}
		var out []string
		for i := range typ.NumField() {
			if f := typ.Field(i); f.IsExported() && f.Tag.Get("json") != "-" {
				out = append(out, path+"."+f.Name)
				out = append(out, jsonFieldPaths(path+"."+f.Name, f.Type)...)
			}
		}
		return out
	}
	return nil
}

// Data read back is the event that was written: every field the data
// holds, and the same bytes when written again.
func TestEventDataRoundTripGenerated(t *testing.T) {
	r := dataGen{Rand: rand.New(rand.NewPCG(11, 12)), utf8: true}
	for i := 0; i < 3000; {
		e := r.event()
		b, err := encodeEvent(e)
		if err != nil {
			continue // refused: TestEventDataIsWhatJSONWrites compares the refusals
		}
		i++
		var got matcher.Event
		if err := decodeEvent(b, &got); err != nil {
			t.Fatalf("decode %s: %v", b, err)
		}
		if again, err := encodeEvent(got); err != nil || !bytes.Equal(again, b) {
			t.Fatalf("written again:\n got %s (%v)\nwant %s", again, err, b)
		}
		if got.Kind != e.Kind || got.Reason != e.Reason {
			t.Fatalf("read back as kind %d reason %q, want %d %q", got.Kind, got.Reason, e.Kind, e.Reason)
		}
		if e.Kind == matcher.EventTicketUpdated {
			if !sameTicket(got.Ticket, e.Ticket) {
				t.Fatalf("ticket read back as %+v\nwant %+v", got.Ticket, e.Ticket)
			}
		} else if !sameMatch(got.Match, e.Match) {
			t.Fatalf("match read back as %+v\nwant %+v", got.Match, e.Match)
		}
	}
}

// sameInstant: a time in a zone whose offset has seconds is written with
// the offset's minutes only, by encoding/json as by encodeEvent; its
// instant moves by those seconds, its written form stays.
func sameInstant(a, b time.Time) bool {
	_, off := b.Zone()
	return a.Equal(b) || (off%60 != 0 && a.Equal(b.Add(time.Duration(off%60)*time.Second)))
}

func sameTicket(got, want matcher.Ticket) bool {
	if !sameInstant(got.EnqueuedAt, want.EnqueuedAt) || !sameInstant(got.Deadline, want.Deadline) ||
		!sameInstant(got.UpdatedAt, want.UpdatedAt) {
		return false
	}
	if len(want.Attributes) == 0 {
		want.Attributes = nil // omitted: read back as nil
	}
	got.EnqueuedAt, got.Deadline, got.UpdatedAt = want.EnqueuedAt, want.Deadline, want.UpdatedAt
	return reflect.DeepEqual(got, want)
}

func sameMatch(got, want matcher.Match) bool {
	if !sameInstant(got.CreatedAt, want.CreatedAt) || (got.AcceptBy == nil) != (want.AcceptBy == nil) ||
		(want.AcceptBy != nil && !sameInstant(*got.AcceptBy, *want.AcceptBy)) {
		return false
	}
	got.CreatedAt, got.AcceptBy = want.CreatedAt, want.AcceptBy
	if want.Provider != nil && len(want.Provider.Parts) == 0 {
		p := *want.Provider
		p.Parts = nil // omitted: read back as nil
		want.Provider = &p
	}
	return reflect.DeepEqual(got, want)
}

func TestDataFragmentsSplit(t *testing.T) {
	for i, f := range dataFragments {
		if utf8.ValidString(f) != (i < validFragments) {
			t.Errorf("fragment %d %q: UTF-8 %v, but validFragments is %d", i, f, utf8.ValidString(f), validFragments)
		}
	}
}
