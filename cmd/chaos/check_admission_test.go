package main

import (
	"maps"
	"slices"
	"testing"
	"time"
)

// admFixture is a small clean history of the gate queue: three places
// admitted in order, their tokens told and consumed once each.
func admFixture(t0 time.Time) *admCheck {
	places := []admPlace{
		{Seq: 1, User: "u1", Status: "CONSUMED", EnteredAt: t0, Token: "t1", AdmittedAt: t0.Add(2 * time.Second)},
		{Seq: 2, User: "u2", Status: "CONSUMED", EnteredAt: t0, Token: "t2", AdmittedAt: t0.Add(3 * time.Second)},
		{Seq: 3, User: "u3", Status: "READY", EnteredAt: t0, Token: "t3", AdmittedAt: t0.Add(4 * time.Second)},
		{Seq: 4, User: "u3", Status: "LEFT", EnteredAt: t0.Add(5 * time.Second)},
	}
	waiters := []*waiterRec{
		{User: "u1", Entries: 1, Tokens: []tokenSeen{{Token: "t1", Via: "admission.ready"}}},
		{User: "u2", Entries: 1, Tokens: []tokenSeen{{Token: "t2", Via: "rest-position"}}},
		{User: "u3", Entries: 2, Leaves: 1, Tokens: []tokenSeen{{Token: "t3", Via: "entered"}, {Token: "t3", Via: "hello"}}},
	}
	ds := map[string]*dsRec{
		"t1": {Token: "t1", User: "u1", Claims: 1, Consumes: 1, Sent: 3, Users: map[string]bool{"u1": true}},
		"t2": {Token: "t2", User: "u2", Claims: 2, Releases: 1, Consumes: 1, Sent: 4, Users: map[string]bool{"u2": true}},
		"t3": {Token: "t3", User: "u3", Users: map[string]bool{}},
	}
	return &admCheck{places: places, waiters: waiters, ds: ds, f: newFindings(), abandonAfter: 8 * time.Second,
		view: func(string) (bool, bool, string, error) { return false, false, "neither", nil }}
}

func TestAdmissionChecks(t *testing.T) {
	t0 := time.Date(2026, 12, 2, 5, 0, 0, 0, time.UTC)
	cases := []struct {
		name   string
		change func(a *admCheck)
		want   []string
	}{
		{"clean", func(*admCheck) {}, nil},
		{"token told that no place holds", func(a *admCheck) {
			a.waiters[0].Tokens = append(a.waiters[0].Tokens, tokenSeen{Token: "t9", Via: "position"})
		}, []string{vAdmTokenNotRecorded}},
		{"token of another user", func(a *admCheck) {
			a.waiters[0].Tokens = append(a.waiters[0].Tokens, tokenSeen{Token: "t2", Via: "position"})
		}, []string{vAdmTokenOtherUser}},
		{"one token on two places", func(a *admCheck) {
			a.places[2].Token = "t2"
			a.waiters[2].Tokens = nil
			delete(a.ds, "t3")
		}, []string{vAdmTokenTwoPlaces}},
		{"consumed twice", func(a *admCheck) { a.ds["t1"].Consumes = 2 }, []string{vAdmConsumedTwice}},
		{"claimed twice without a release", func(a *admCheck) { a.ds["t1"].Claims = 2 }, []string{vAdmClaimedTwice}},
		{"consume 200 the record does not hold", func(a *admCheck) { a.places[0].Status = "READY" }, []string{vAdmConsumeDisagrees}},
		{"consumed without a consume sent", func(a *admCheck) { delete(a.ds, "t1") }, []string{vAdmUnrequested}},
		{"left without a leave", func(a *admCheck) { a.waiters[2].Leaves = 0 }, []string{vAdmUnrequested}},
		{"an entry missing", func(a *admCheck) {
			a.waiters = append(a.waiters, &waiterRec{User: "u4", Entries: 1})
		}, []string{vAdmEntryMissing}},
		{"waiting, in neither the line nor processing", func(a *admCheck) {
			a.places = append(a.places, admPlace{Seq: 5, User: "u1", Status: "WAITING", EnteredAt: t0})
		}, []string{vAdmPlaceLost}},
		{"waiting in the line at the end", func(a *admCheck) {
			a.places = append(a.places, admPlace{Seq: 5, User: "u1", Status: "WAITING", EnteredAt: t0})
			a.view = func(string) (bool, bool, string, error) { return true, false, "in the line at rank 0", nil }
		}, []string{vAdmStillWaiting}},
		{"admitted out of order", func(a *admCheck) {
			a.places[0].AdmittedAt = t0.Add(5 * time.Second)
		}, []string{vAdmOutOfOrder}},
		{"out of order after a fault", func(a *admCheck) {
			a.places[0].AdmittedAt = t0.Add(5 * time.Second)
			a.faultsAt = []time.Time{t0.Add(time.Second)}
		}, nil},
		{"a fault before the entry excuses nothing", func(a *admCheck) {
			a.places[0].AdmittedAt = t0.Add(5 * time.Second)
			a.faultsAt = []time.Time{t0.Add(-time.Second)}
		}, []string{vAdmOutOfOrder}},
		{"abandoned within abandonAfter of a poll", func(a *admCheck) {
			a.places[0].Status, a.places[0].Token, a.places[0].AdmittedAt = "ABANDONED", "", time.Time{}
			a.waiters[0].Tokens = nil
			delete(a.ds, "t1")
			a.waiters[0].Ended = []endSeen{{Via: "rest", Seen: t0, At: t0.Add(3 * time.Second)}}
		}, []string{vAdmAbandonedPresent}},
		{"a token's life ended between two polls", func(a *admCheck) {
			a.places[0].Status = "EXPIRED"
			a.ds["t1"].Consumes, a.ds["t1"].Claims = 0, 0
			a.waiters[0].Ended = []endSeen{{Via: "rest", Seen: t0, At: t0.Add(3 * time.Second)}}
		}, nil},
		{"abandoned after a poll's absence", func(a *admCheck) {
			a.waiters[0].Ended = []endSeen{{Via: "rest", Seen: t0, At: t0.Add(9 * time.Second)}}
		}, nil},
		{"abandoned under a socket open for long", func(a *admCheck) {
			a.places[0].Status, a.places[0].Token, a.places[0].AdmittedAt = "ABANDONED", "", time.Time{}
			a.waiters[0].Tokens = nil
			delete(a.ds, "t1")
			a.waiters[0].Ended = []endSeen{{Via: "ws", SocketFrom: t0, Seen: t0.Add(10 * time.Second), At: t0.Add(12 * time.Second)}}
		}, []string{vAdmAbandonedPresent}},
		{"abandoned just after a reconnect", func(a *admCheck) {
			a.waiters[0].Ended = []endSeen{{Via: "ws", SocketFrom: t0, Seen: t0.Add(500 * time.Millisecond), At: t0.Add(2 * time.Second)}}
		}, nil},
		{"a later entry not yet in the line is no inversion", func(a *admCheck) {
			a.places[0].EnteredAt = t0.Add(3500 * time.Millisecond) // within a second of place 3's admission
			a.places[0].AdmittedAt = t0.Add(5 * time.Second)
		}, nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			a := admFixture(t0)
			c.change(a)
			a.run()
			got := slices.Sorted(maps.Keys(a.f.byKind))
			if !slices.Equal(got, c.want) {
				t.Errorf("violations %v, want %v (%+v)", a.f.byKind, c.want, a.f.examples)
			}
		})
	}
}

func TestAdmissionOrderExcusedCounted(t *testing.T) {
	t0 := time.Date(2026, 12, 2, 5, 0, 0, 0, time.UTC)
	a := admFixture(t0)
	a.places[0].AdmittedAt = t0.Add(5 * time.Second)
	a.faultsAt = []time.Time{t0.Add(time.Second)}
	a.run()
	if a.st.Inversion.Excused != 1 || a.st.Admitted != 3 || a.st.Handed != 3 || a.st.Consumes != 2 {
		t.Errorf("stats %+v", a.st)
	}
}
