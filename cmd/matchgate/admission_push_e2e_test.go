package main

import (
	"encoding/json"
	"net/http"
	"testing"
	"time"

	"github.com/matchgate/matchgate/internal/redistest"
)

// The waiting room's pushes through the real server: waiters on sockets
// are told their rank as it moves and their token the moment they are
// admitted, without asking; one who reconnects gets the place in hello.

type wirePosition struct {
	Status    string `json:"status"`
	Rank      int64  `json:"rank"`
	Total     int64  `json:"total"`
	Token     string `json:"token"`
	ExpiresAt string `json:"expiresAt"`
}

type admissionPush struct {
	Type      string       `json:"type"`
	Queue     string       `json:"queue"`
	Position  wirePosition `json:"position"`
	Token     string       `json:"token"`
	ExpiresAt string       `json:"expiresAt"`
}

func exerciseAdmissionPushes(t *testing.T, base string) {
	const n = 15
	var cs []*client
	for i := range n {
		g := newGuest(t, base, 1500)
		c := dial(t, base, g)
		c.expect("hello", 5*time.Second)
		c.send(map[string]any{"type": "enter", "id": "e", "queue": "launch"})
		f := c.expect("entered", 5*time.Second)
		var r struct{ Position wirePosition }
		if err := json.Unmarshal(f.raw, &r); err != nil {
			t.Fatal(err)
		}
		if r.Position.Status != "WAITING" && r.Position.Status != "READY" {
			t.Fatalf("entered %d: %s", i, f.raw)
		}
		cs = append(cs, c)
	}
	// Every socket is told its admission, and the token it is told is the
	// one the record holds; on the way the last ones are told their rank
	// move down, never up, before the token.
	tokens := map[string]bool{}
	movedDown := 0
	for i, c := range cs {
		last := int64(-1)
		var token string
		deadline := time.After(20 * time.Second)
		for token == "" {
			select {
			case f := <-c.frames:
				var p admissionPush
				if err := json.Unmarshal(f.raw, &p); err != nil {
					t.Fatal(err)
				}
				switch {
				case p.Type == "admission.ready":
					token = p.Token
				case p.Type == "admission.position" && p.Position.Status == "READY":
					token = p.Position.Token
				case p.Type == "admission.position" && p.Position.Status == "WAITING":
					if last >= 0 && p.Position.Rank > last {
						t.Fatalf("waiter %d: rank %d pushed after %d", i, p.Position.Rank, last)
					}
					if last >= 0 && p.Position.Rank < last {
						movedDown++
					}
					last = p.Position.Rank
				}
			case <-deadline:
				t.Fatalf("waiter %d (%s): no admission pushed within 20s", i, c.g.UserID)
			}
		}
		if tokens[token] {
			t.Fatalf("token %s pushed to two waiters", token)
		}
		tokens[token] = true
		if p := position(t, base, c.g); p["status"] != "READY" || p["token"] != token {
			t.Fatalf("waiter %d: pushed token %s, the record says %v", i, token, p)
		}
	}
	if movedDown == 0 {
		t.Fatal("no waiter was pushed a rank move")
	}
	// A reconnect finds the place in hello.
	c := dial(t, base, cs[0].g)
	var hello struct {
		Admission []struct {
			Queue    string       `json:"queue"`
			Position wirePosition `json:"position"`
		} `json:"admission"`
	}
	if err := json.Unmarshal(c.expect("hello", 5*time.Second).raw, &hello); err != nil {
		t.Fatal(err)
	}
	if len(hello.Admission) != 1 || hello.Admission[0].Queue != "launch" || hello.Admission[0].Position.Status != "READY" {
		t.Fatalf("hello's admission places: %+v", hello.Admission)
	}
	// Leaving over REST ends the place: hello no longer lists it.
	if code, body := call(t, http.MethodDelete, base+"/v1/admission/launch", cs[0].g.Token, ""); code != 200 {
		t.Fatalf("leave: %d %v", code, body)
	}
	hello.Admission = nil
	if err := json.Unmarshal(dial(t, base, cs[0].g).expect("hello", 5*time.Second).raw, &hello); err != nil {
		t.Fatal(err)
	}
	if len(hello.Admission) != 0 {
		t.Fatalf("hello after leaving lists %+v", hello.Admission)
	}
}

func TestAdmissionPushesEmbedded(t *testing.T) {
	exerciseAdmissionPushes(t, admissionServer(t))
}

func TestAdmissionPushesRedisPostgres(t *testing.T) {
	redistest.Real(t)
	prefix := redistest.Prefix(t)
	exerciseAdmissionPushes(t, admissionServer(t, "--redis-url", redistest.URL(), "--postgres-url", pgURL(t), "--redis-prefix", prefix))
}
