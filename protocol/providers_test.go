package protocol_test

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/matchgate/matchgate/matcher"
	"github.com/matchgate/matchgate/protocol"
	"github.com/matchgate/matchgate/provider"
)

var provT0 = time.Date(2026, 5, 4, 10, 0, 0, 0, time.UTC)

func TestProviderOf(t *testing.T) {
	attrs := provider.Attributes{Languages: []string{"en", "fr"}, Specialties: []string{"tax"}, Rating: 4.5}
	p := provider.Provider{UserID: "pro", Queue: "advice", Capacity: 3, Used: 1, Attributes: attrs, Online: true,
		Held: []string{"a1"}, LastSeen: provT0}
	a := provider.Assignment{ID: "a1", Queue: "advice", TicketID: "t1", Requester: "req", Provider: "pro",
		Status: provider.StatusAccepted, Score: 0.75, Parts: map[string]float64{"rating": 0.5, "wait": 0.25},
		OfferedAt: provT0, AcceptBy: provT0.Add(10 * time.Second), AcceptedAt: provT0.Add(time.Second), Version: 2}
	v := protocol.ProviderOf(p, []provider.Assignment{a})
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	want := `{"queue":"advice","userId":"pro","online":true,"capacity":3,"used":1,` +
		`"attributes":{"languages":["en","fr"],"specialties":["tax"],"rating":4.5},"lastSeen":"2026-05-04T10:00:00.000Z",` +
		`"assignments":[{"id":"a1","queue":"advice","status":"ACCEPTED","requester":{"userId":"req","ticketId":"t1"},` +
		`"score":0.75,"parts":{"rating":0.5,"wait":0.25},"offeredAt":"2026-05-04T10:00:00.000Z",` +
		`"acceptBy":"2026-05-04T10:00:10.000Z","acceptedAt":"2026-05-04T10:00:01.000Z","version":2}]}`
	if string(b) != want {
		t.Fatalf("got  %s\nwant %s", b, want)
	}
	// The view shares nothing with the domain value.
	v.Attributes.Languages[0] = "xx"
	v.Assignments[0].Parts["rating"] = 9
	if attrs.Languages[0] != "en" || a.Parts["rating"] != 0.5 {
		t.Fatal("the view shares its lists with the domain value")
	}
}

func TestAssignmentOfEnded(t *testing.T) {
	a := provider.Assignment{ID: "a2", Queue: "advice", Status: provider.StatusEnded, OfferedAt: provT0,
		EndedAt: provT0.Add(time.Hour), EndReason: "ended", Version: 4}
	b, _ := json.Marshal(protocol.AssignmentOf(a))
	want := `{"id":"a2","queue":"advice","status":"ENDED","requester":{"userId":"","ticketId":""},"score":0,` +
		`"offeredAt":"2026-05-04T10:00:00.000Z","acceptBy":null,"endedAt":"2026-05-04T11:00:00.000Z","endReason":"ended","version":4}`
	if string(b) != want {
		t.Fatalf("got  %s\nwant %s", b, want)
	}
}

func TestProviderStateOfUnknown(t *testing.T) {
	v := protocol.ProviderStateOf("pro", provider.State{Queue: "advice", Provider: provider.Provider{Capacity: 9, Online: true}})
	if v.Queue != "advice" || v.UserID != "pro" || v.Online || v.Capacity != 0 {
		t.Fatalf("%+v", v)
	}
}

func TestPresenceOfHasArrays(t *testing.T) {
	b, _ := json.Marshal(protocol.PresenceOf(provider.Presence{Queue: "advice",
		Busy: []provider.Provider{{UserID: "p", Queue: "advice", Capacity: 1, Used: 1, Online: true}}, Used: 1, Capacity: 1}))
	if !strings.Contains(string(b), `"online":[],`) || !strings.Contains(string(b), `"offline":[],`) ||
		!strings.Contains(string(b), `"busy":[{"queue":"advice","userId":"p","online":true`) || !strings.HasSuffix(string(b), `"used":1,"capacity":1}`) {
		t.Fatal(string(b))
	}
}

func providerMatch(state string) matcher.Match {
	by := provT0.Add(15 * time.Second)
	return matcher.Match{ID: "m1", Queue: "advice", State: state, CreatedAt: provT0, AcceptBy: &by, Version: 3,
		Players:  []matcher.Player{{TicketID: "t1", UserID: "req"}},
		Provider: &matcher.ProviderSeat{UserID: "pro", Score: 0.5, Parts: map[string]float64{"load": 0.5}}}
}

func TestProviderFrame(t *testing.T) {
	type out struct {
		Type       string                  `json:"type"`
		Assignment protocol.AssignmentView `json:"assignment"`
	}
	for _, c := range []struct {
		name         string
		e            matcher.Event
		typ          string
		status       provider.Status
		endReason    string
		noAcceptable bool
	}{
		{"found", matcher.MatchFoundEvent(providerMatch(matcher.MatchPendingAccept)), "assignment.offered", provider.StatusOffered, "", false},
		{"found at once", matcher.MatchFoundEvent(providerMatch(matcher.MatchReady)), "assignment.offered", provider.StatusAccepted, "", false},
		{"ready", matcher.MatchReadyEvent(providerMatch(matcher.MatchReady)), "assignment.update", provider.StatusAccepted, "", false},
		{"declined", matcher.MatchDissolvedEvent(providerMatch(matcher.MatchDissolved), matcher.ReasonDeclined), "assignment.update", provider.StatusDeclined, "declined", false},
		{"expired", matcher.MatchDissolvedEvent(providerMatch(matcher.MatchDissolved), matcher.ReasonAcceptTimeout), "assignment.update", provider.StatusExpired, "expired", false},
	} {
		b := protocol.ProviderFrame(c.e)
		var f out
		if err := json.Unmarshal(b, &f); err != nil {
			t.Fatalf("%s: %s: %v", c.name, b, err)
		}
		a := f.Assignment
		if f.Type != c.typ || a.Status != c.status || a.EndReason != c.endReason || a.ID != "m1" || a.Queue != "advice" ||
			a.Requester != (protocol.RequesterView{UserID: "req", TicketID: "t1"}) || a.Score != 0.5 || a.Parts["load"] != 0.5 ||
			a.Version != 3 || !strings.Contains(string(b), `"acceptBy":"2026-05-04T10:00:15.000Z"`) {
			t.Errorf("%s: %s", c.name, b)
		}
	}
	if b := protocol.ProviderFrame(matcher.TicketUpdatedEvent(matcher.Ticket{ID: "t"})); b != nil {
		t.Errorf("a ticket event rendered %s", b)
	}
}

func TestProviderFrameNames(t *testing.T) {
	for _, typ := range protocol.ProviderClientFrameTypes {
		if !protocol.IsProviderFrame(typ) {
			t.Errorf("%s is not a provider frame", typ)
		}
	}
	for _, typ := range protocol.ClientFrameTypes {
		if protocol.IsProviderFrame(typ) {
			t.Errorf("%s is a provider frame", typ)
		}
	}
}
