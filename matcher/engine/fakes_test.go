package engine_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"

	"github.com/matchgate/matchgate/matcher"
	"github.com/matchgate/matchgate/matcher/engine"
	"github.com/matchgate/matchgate/protocol"
)

// fakeAllocator fails its first failFirst calls (all of them with failAll),
// then hands out numbered servers; it records every call and release.
type fakeAllocator struct {
	mu        sync.Mutex
	failFirst int
	failAll   bool
	calls     []engine.AllocationRequest
	released  []string
}

func (f *fakeAllocator) Allocate(_ context.Context, req engine.AllocationRequest) (matcher.Server, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls = append(f.calls, req)
	if f.failAll || len(f.calls) <= f.failFirst {
		return matcher.Server{}, errors.New("no server ready in " + req.Region)
	}
	return matcher.Server{Address: fmt.Sprintf("10.0.%s.%d:7777", req.Region, len(f.calls)), Session: "s-" + req.MatchID}, nil
}

func (f *fakeAllocator) Release(_ context.Context, matchID string, _ matcher.Server) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.released = append(f.released, matchID)
	return nil
}

func (f *fakeAllocator) setFailAll(v bool) {
	f.mu.Lock()
	f.failAll = v
	f.mu.Unlock()
}

func (f *fakeAllocator) callCount() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.calls)
}

func (f *fakeAllocator) releasedIDs() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.released)
}

// frameOf is a decoded pushed frame.
type frameOf struct {
	Type   string         `json:"type"`
	Match  *matcher.Match `json:"match"`
	Ticket *matcher.Ticket
	Reason string `json:"reason"`
	Users  []string
	Raw    string
}

// frames decodes every event delivered so far.
func (h *harness) frames() []frameOf {
	h.t.Helper()
	h.pushed.mu.Lock()
	defer h.pushed.mu.Unlock()
	out := make([]frameOf, 0, len(h.pushed.events))
	for _, e := range h.pushed.events {
		var f frameOf
		if err := json.Unmarshal(protocol.Frame(e), &f); err != nil {
			h.t.Fatalf("event %s: %v", protocol.Frame(e), err)
		}
		f.Users, f.Raw = e.Users, string(protocol.Frame(e))
		out = append(out, f)
	}
	return out
}

// framesOfType returns the delivered frames of one type.
func (h *harness) framesOfType(typ string) []frameOf {
	var out []frameOf
	for _, f := range h.frames() {
		if f.Type == typ {
			out = append(out, f)
		}
	}
	return out
}

// joinReq joins with a full request (region defaulted).
func (h *harness) joinReq(req matcher.JoinRequest) matcher.Ticket {
	h.t.Helper()
	if req.Queue == "" {
		req.Queue = h.q.Name
	}
	if req.Region == "" {
		req.Region = h.q.Regions[0]
	}
	t, err := h.svc.Join(context.Background(), req)
	if err != nil {
		h.t.Fatalf("join %s: %v", req.UserID, err)
	}
	return t
}

// tickIn runs one pass of the engine of a pool ("queue:region[/shard]").
func (h *harness) tickIn(part string) engine.TickResult {
	h.t.Helper()
	e := h.pools[part]
	if e == nil {
		h.t.Fatalf("no engine for %s", part)
	}
	res, err := e.Tick(context.Background())
	if err != nil {
		h.t.Fatalf("tick %s: %v", part, err)
	}
	return res
}

// entries returns a pool's entries in wait order.
func (h *harness) entries(part string) []matcher.Entry {
	h.t.Helper()
	es, err := h.pool.Oldest(context.Background(), part, 10000)
	if err != nil {
		h.t.Fatal(err)
	}
	return es
}

// inPool reports whether ticket id is a member of the pool part.
func (h *harness) inPool(part, id string) bool {
	h.t.Helper()
	for _, e := range h.entries(part) {
		if e.TicketID == id {
			return true
		}
	}
	return false
}

// codeOf is err's code, and a code of no kind when err is nil.
func codeOf(err error) matcher.Code {
	if err == nil {
		return matcher.Code(len(matcher.Codes()))
	}
	return matcher.ErrorCode(err)
}

// mustCode fails unless err carries code.
func mustCode(t *testing.T, what string, err error, code matcher.Code) *matcher.Error {
	t.Helper()
	var de *matcher.Error
	if !errors.As(err, &de) || de.Code != code {
		t.Fatalf("%s = %v, want %s", what, err, code)
	}
	return de
}
