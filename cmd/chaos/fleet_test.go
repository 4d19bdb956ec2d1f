package main

import (
	"bytes"
	"encoding/json"
	"net/http"
	"testing"
	"time"
)

func post(t *testing.T, c *http.Client, url string, body any) (int, map[string]string) {
	t.Helper()
	b, _ := json.Marshal(body)
	resp, err := c.Post(url, "application/json", bytes.NewReader(b))
	if err != nil {
		return 0, nil
	}
	defer resp.Body.Close()
	var out map[string]string
	_ = json.NewDecoder(resp.Body).Decode(&out)
	return resp.StatusCode, out
}

// TestFleet: the same match asked again gets its server again; a released
// server goes to the next match; a call in a hang window whose caller gives
// up hands nothing out.
func TestFleet(t *testing.T) {
	f, err := startFleet(time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	defer f.close()
	c := &http.Client{Timeout: 300 * time.Millisecond}
	base := f.url("matcher-0", 2)
	_, a1 := post(t, c, base+"/allocate", map[string]any{"matchId": "m1"})
	_, again := post(t, c, base+"/allocate", map[string]any{"matchId": "m1"})
	if a1["address"] == "" || again["address"] != a1["address"] || again["session"] != a1["session"] {
		t.Fatalf("asked again: %v, first %v", again, a1)
	}
	if st, _ := post(t, c, base+"/release", map[string]any{"matchId": "m1", "address": a1["address"], "session": "other"}); st != http.StatusNotFound {
		t.Errorf("release with another session: %d", st)
	}
	if st, _ := post(t, c, base+"/release", map[string]any{"matchId": "m1", "address": a1["address"], "session": a1["session"]}); st != http.StatusNoContent {
		t.Errorf("release: %d", st)
	}
	_, a2 := post(t, c, base+"/allocate", map[string]any{"matchId": "m2"})
	if a2["address"] != a1["address"] {
		t.Errorf("released server %s not handed out again (got %s)", a1["address"], a2["address"])
	}
	f.hang(time.Minute)
	if st, _ := post(t, c, base+"/allocate", map[string]any{"matchId": "m3"}); st != 0 {
		t.Fatalf("a call in the hang window answered %d", st)
	}
	deadline := time.Now().Add(5 * time.Second)
	for {
		as, st := f.snapshot()
		if st.Abandoned == 1 {
			if len(as) != 2 || st.Hung != 1 || st.Releases != 1 || st.Repeats != 1 || as[0].Proc != "matcher-0.2" {
				t.Errorf("allocations %+v, stats %+v", as, st)
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the abandoned call was not noticed: %+v", st)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// TestCheckFleet: a released server of a committed match, one server in two
// committed matches and an unexplained leak are violations; a leak by an
// incarnation killed soon after the allocation is counted only.
func TestCheckFleet(t *testing.T) {
	t0 := time.Now()
	matches := []*dbMatch{
		{ID: "ok", ServerAddress: "a", ServerSession: "s1"},
		{ID: "released", ServerAddress: "b", ServerSession: "s2"},
		{ID: "twice", ServerAddress: "b", ServerSession: "s3"},
		{ID: "foreign", ServerAddress: "z", ServerSession: "s9"},
	}
	c := newChecker(options{}, nil, map[string]*dbTicket{}, matches, nil, t0)
	c.allocs = []allocation{
		{Match: "ok", Address: "a", Session: "s1", Proc: "matcher-0.1", At: t0},
		{Match: "released", Address: "b", Session: "s2", Proc: "matcher-0.1", At: t0, Released: true},
		{Match: "twice", Address: "b", Session: "s3", Proc: "matcher-0.1", At: t0},
		{Match: "gone-killed", Address: "c", Session: "s4", Proc: "matcher-1.1", At: t0},
		{Match: "gone-leaked", Address: "d", Session: "s5", Proc: "matcher-2.1", At: t0},
		{Match: "gone-released", Address: "e", Session: "s6", Proc: "matcher-2.1", At: t0, Released: true},
	}
	c.killedAt = map[string]time.Time{"matcher-1.1": t0.Add(time.Second), "matcher-2.1": t0.Add(time.Hour)}
	c.checkFleet()
	want := map[string]int{vReleasedCommitted: 1, vServerTwice: 1, vServerLeaked: 1, vServerNotAllocated: 1}
	for k, n := range want {
		if c.f.byKind[k] != n {
			t.Errorf("%s: %d, want %d (all: %v)", k, c.f.byKind[k], n, c.f.byKind)
		}
	}
	if c.f.total() != 4 {
		t.Errorf("violations %v", c.f.byKind)
	}
	st := c.st.Fleet
	if st.LeakedByKill != 1 || st.Leaked != 1 || st.ReleasedUnused != 1 || st.CommittedServers != 4 {
		t.Errorf("fleet figures %+v", st)
	}
}
