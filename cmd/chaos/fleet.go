package main

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"strconv"
	"sync"
	"time"
)

// fleet is a fake fleet manager speaking the protocol of docs/ALLOCATOR.md,
// the servers' --allocator-url during a run. Each process gets a base URL
// of its own (/p/<name>/<incarnation>), so every allocation is known by the
// incarnation that asked for it. It hands out loopback addresses that
// nobody connects to, reuses released ones (so a server released while its
// match is live is soon handed to a second match), and records every
// hand-out and every release for the checks. During a hang window its
// allocate calls hang for hangFor, longer than a matching pass may take.
type fleet struct {
	srv     *http.Server
	addr    string
	hangFor time.Duration
	served  chan struct{}

	mu        sync.Mutex
	hangUntil time.Time
	next      int
	free      []string
	byMatch   map[string]*allocation // the latest hand-out per match
	allocs    []*allocation
	st        fleetStats
}

// allocation is one server handed out.
type allocation struct {
	Match   string `json:"match"`
	Address string `json:"address"`
	Session string `json:"session"`
	Proc    string `json:"proc"` // name.incarnation that asked
	// At is when the request arrived: a kill -9 of Proc after it, before
	// the answer reached it, explains a server never released.
	At         time.Time `json:"at"`
	Released   bool      `json:"released"`
	ReleasedAt time.Time `json:"releasedAt,omitzero"`
	ReleasedBy string    `json:"releasedBy,omitempty"`
}

// fleetStats are the fleet manager's counts, for the report.
type fleetStats struct {
	Allocations     int `json:"allocations"` // servers handed out
	Repeats         int `json:"repeats"`     // a match asked again, answered its server again
	Releases        int `json:"releases"`    // releases of a server handed out
	UnknownReleases int `json:"unknownReleases"`
	Hung            int `json:"hungCalls"` // allocate calls held in a hang window
	Abandoned       int `json:"abandonedCalls"`
	Windows         int `json:"hangWindows"`
	// Filled by the checks.
	CommittedServers int `json:"committedServers"`
	ReleasedUnused   int `json:"releasedUnused"`  // servers of uncommitted matches released
	LeakedByKill     int `json:"leakedByKill"`    // unreleased, of a match its matcher was killed before committing
	Leaked           int `json:"leakedOtherwise"` // unreleased without a kill to explain it (violations)
}

func startFleet(hangFor time.Duration) (*fleet, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("fleet manager: %w", err)
	}
	f := &fleet{addr: ln.Addr().String(), hangFor: hangFor, byMatch: map[string]*allocation{}, served: make(chan struct{})}
	mux := http.NewServeMux()
	mux.HandleFunc("POST /p/{proc}/{inc}/allocate", f.handleAllocate)
	mux.HandleFunc("POST /p/{proc}/{inc}/release", f.handleRelease)
	f.srv = &http.Server{Handler: mux, ReadHeaderTimeout: 5 * time.Second}
	go func() { // owned by close
		defer close(f.served)
		_ = f.srv.Serve(ln)
	}()
	return f, nil
}

// url is the base URL of the process name in its incarnation inc.
func (f *fleet) url(name string, inc int) string {
	return fmt.Sprintf("http://%s/p/%s/%d", f.addr, name, inc)
}

// close stops the server; hanging calls end with it.
func (f *fleet) close() {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	if err := f.srv.Shutdown(ctx); err != nil {
		f.srv.Close()
	}
	<-f.served
}

// hang opens a hang window of length d from now.
func (f *fleet) hang(d time.Duration) {
	f.mu.Lock()
	f.hangUntil = time.Now().Add(d)
	f.st.Windows++
	f.mu.Unlock()
}

type fleetRequest struct {
	MatchID string `json:"matchId"`
	Address string `json:"address"`
	Session string `json:"session"`
}

func procOf(r *http.Request) string {
	inc, _ := strconv.Atoi(r.PathValue("inc"))
	return fmt.Sprintf("%s.%d", r.PathValue("proc"), inc)
}

func (f *fleet) handleAllocate(w http.ResponseWriter, r *http.Request) {
	var req fleetRequest
	if err := json.NewDecoder(http.MaxBytesReader(w, r.Body, 64<<10)).Decode(&req); err != nil || req.MatchID == "" {
		http.Error(w, "bad request", http.StatusBadRequest)
		return
	}
	arrived := time.Now()
	f.mu.Lock()
	hanging := arrived.Before(f.hangUntil)
	if hanging {
		f.st.Hung++
	}
	f.mu.Unlock()
	if hanging {
		t := time.NewTimer(f.hangFor)
		defer t.Stop()
		select {
		case <-t.C:
		case <-r.Context().Done():
			// The caller gave up: it never learns of a server, so none is
			// handed out.
			f.mu.Lock()
			f.st.Abandoned++
			f.mu.Unlock()
			return
		}
	}
	f.mu.Lock()
	a := f.byMatch[req.MatchID]
	if a != nil && !a.Released {
		f.st.Repeats++ // docs/ALLOCATOR.md: the same server again is best
	} else {
		var addr string
		if n := len(f.free); n > 0 {
			addr, f.free = f.free[n-1], f.free[:n-1]
		} else {
			f.next++
			addr = fmt.Sprintf("127.%d.%d.%d:7777", f.next>>16&255, f.next>>8&255, f.next&255)
		}
		a = &allocation{Match: req.MatchID, Address: addr, Session: fmt.Sprintf("s-%d", len(f.allocs)+1), Proc: procOf(r), At: arrived}
		f.byMatch[req.MatchID] = a
		f.allocs = append(f.allocs, a)
		f.st.Allocations++
	}
	body, _ := json.Marshal(map[string]string{"address": a.Address, "session": a.Session})
	f.mu.Unlock()
	w.Header().Set("Content-Type", "application/json")
	w.Write(body)
}

func (f *fleet) handleRelease(w http.ResponseWriter, r *http.Request) {
	var req fleetRequest
	if err := json.NewDecoder(http.MaxBytesReader(w, r.Body, 64<<10)).Decode(&req); err != nil || req.MatchID == "" {
		http.Error(w, "bad request", http.StatusBadRequest)
		return
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	a := f.byMatch[req.MatchID]
	if a == nil || a.Released || a.Address != req.Address || a.Session != req.Session {
		f.st.UnknownReleases++
		w.WriteHeader(http.StatusNotFound)
		return
	}
	a.Released, a.ReleasedAt, a.ReleasedBy = true, time.Now(), procOf(r)
	f.free = append(f.free, a.Address) // back in the fleet: the next match may get it
	f.st.Releases++
	w.WriteHeader(http.StatusNoContent)
}

// snapshot is every hand-out so far and the counts.
func (f *fleet) snapshot() ([]allocation, fleetStats) {
	f.mu.Lock()
	defer f.mu.Unlock()
	as := make([]allocation, len(f.allocs))
	for i, a := range f.allocs {
		as[i] = *a
	}
	return as, f.st
}
