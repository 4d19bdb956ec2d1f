package allocator_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/matchgate/matchgate/allocator"
	"github.com/matchgate/matchgate/matcher"
	"github.com/matchgate/matchgate/matcher/engine"
)

func req(id, region string) engine.AllocationRequest {
	return engine.AllocationRequest{MatchID: id, Queue: "ranked", Region: region,
		Players: []matcher.Player{{TicketID: "t1", UserID: "u1"}, {TicketID: "t2", UserID: "u2"}}}
}

func TestStaticRoundRobinPerRegion(t *testing.T) {
	s, err := allocator.ParseFleet("eu=10.0.0.1:7777, eu=10.0.0.2:7777,na=10.1.0.1:7777")
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	var got []string
	for i := range 3 {
		srv, err := s.Allocate(ctx, req(string(rune('a'+i)), "eu"))
		if err != nil {
			t.Fatal(err)
		}
		if srv.Session != string(rune('a'+i)) {
			t.Fatalf("session %q, want the match id", srv.Session)
		}
		got = append(got, srv.Address)
	}
	if strings.Join(got, " ") != "10.0.0.1:7777 10.0.0.2:7777 10.0.0.1:7777" {
		t.Fatalf("eu servers %v", got)
	}
	if srv, _ := s.Allocate(ctx, req("x", "na")); srv.Address != "10.1.0.1:7777" {
		t.Fatalf("na server %v", srv)
	}
	// Never another region's server.
	if _, err := s.Allocate(ctx, req("y", "ap")); err == nil {
		t.Fatal("a region without servers got one")
	}
	if err := s.Release(ctx, "x", matcher.Server{}); err != nil {
		t.Fatal(err)
	}
}

func TestStaticAnyRegion(t *testing.T) {
	s, err := allocator.ParseFleet(allocator.DemoFleet)
	if err != nil {
		t.Fatal(err)
	}
	srv, err := s.Allocate(context.Background(), req("m", "whatever"))
	if err != nil || srv.Address != "127.0.0.1:7777" {
		t.Fatalf("demo fleet = %v, %v", srv, err)
	}
	for _, bad := range []string{"", "eu=", "EU=1.2.3.4:5", "nohost", "eu=1.2.3.4"} {
		if _, err := allocator.ParseFleet(bad); err == nil {
			t.Errorf("fleet %q accepted", bad)
		}
	}
}

func TestHTTPProtocol(t *testing.T) {
	var released atomic.Value
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/allocate":
			var body struct {
				MatchID string `json:"matchId"`
				Queue   string `json:"queue"`
				Region  string `json:"region"`
				Players []struct {
					UserID   string `json:"userId"`
					TicketID string `json:"ticketId"`
				} `json:"players"`
			}
			if err := json.NewDecoder(r.Body).Decode(&body); err != nil || r.Method != http.MethodPost {
				http.Error(w, "bad", 400)
				return
			}
			if body.Region == "full" {
				w.WriteHeader(http.StatusServiceUnavailable)
				return
			}
			if body.Queue != "ranked" || len(body.Players) != 2 || body.Players[1].UserID != "u2" || body.Players[1].TicketID != "t2" {
				http.Error(w, "bad body", 400)
				return
			}
			_ = json.NewEncoder(w).Encode(map[string]string{"address": "10.9.9.9:7000", "session": "s-" + body.MatchID})
		case "/release":
			var body map[string]string
			_ = json.NewDecoder(r.Body).Decode(&body)
			released.Store(body["matchId"] + " " + body["address"] + " " + body["session"])
			w.WriteHeader(http.StatusNoContent)
		default:
			http.NotFound(w, r)
		}
	}))
	defer srv.Close()
	h, err := allocator.NewHTTP(allocator.HTTPConfig{URL: srv.URL + "/"})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	got, err := h.Allocate(ctx, req("m1", "eu"))
	if err != nil || got != (matcher.Server{Address: "10.9.9.9:7000", Session: "s-m1"}) {
		t.Fatalf("allocate = %+v, %v", got, err)
	}
	if _, err := h.Allocate(ctx, req("m2", "full")); err == nil || !strings.Contains(err.Error(), "503") {
		t.Fatalf("allocate with no capacity = %v", err)
	}
	if err := h.Release(ctx, "m1", got); err != nil {
		t.Fatal(err)
	}
	if r := released.Load(); r != "m1 10.9.9.9:7000 s-m1" {
		t.Fatalf("released %v", r)
	}
	if _, err := allocator.NewHTTP(allocator.HTTPConfig{URL: "ftp://x"}); err == nil {
		t.Fatal("ftp URL accepted")
	}
}

func TestHTTPTimeout(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-r.Context().Done():
		case <-time.After(time.Second):
		}
	}))
	defer srv.Close()
	h, _ := allocator.NewHTTP(allocator.HTTPConfig{URL: srv.URL, Timeout: 50 * time.Millisecond})
	start := time.Now()
	if _, err := h.Allocate(context.Background(), req("m", "eu")); err == nil {
		t.Fatal("a hanging fleet manager answered")
	}
	if d := time.Since(start); d > time.Second {
		t.Fatalf("timeout took %v", d)
	}
}
