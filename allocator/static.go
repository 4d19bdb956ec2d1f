package allocator

import (
	"context"
	"errors"
	"fmt"
	"net"
	"slices"
	"strings"
	"sync"

	"github.com/matchgate/matchgate/matcher"
	"github.com/matchgate/matchgate/matcher/engine"
)

// DemoFleet is the fleet of the embedded default: one address for every
// region, where a local game server (or nothing at all) listens.
const DemoFleet = "127.0.0.1:7777"

// Static is a fixed fleet: a list of server addresses per region, and
// optionally a list for every region without one. Allocate hands them out
// round-robin (a server hosts any number of sessions; the session is the
// match id); Release has nothing to give back.
type Static struct {
	mu       sync.Mutex
	byRegion map[string][]string
	any      []string
	next     map[string]int
}

var _ engine.Allocator = (*Static)(nil)

// ParseFleet reads a fleet: comma-separated entries "region=host:port", or
// "host:port" for every region without entries of its own, e.g.
// "eu=10.0.0.1:7777,eu=10.0.0.2:7777,na=10.1.0.1:7777" or "127.0.0.1:7777".
func ParseFleet(spec string) (*Static, error) {
	s := &Static{byRegion: map[string][]string{}, next: map[string]int{}}
	for _, item := range strings.Split(spec, ",") {
		item = strings.TrimSpace(item)
		if item == "" {
			continue
		}
		region, addr, scoped := strings.Cut(item, "=")
		if !scoped {
			addr, region = region, ""
		}
		if scoped && !matcher.ValidName(region) {
			return nil, fmt.Errorf("fleet: %q is not a region name", region)
		}
		if _, _, err := net.SplitHostPort(addr); err != nil {
			return nil, fmt.Errorf("fleet: %q is not host:port: %w", addr, err)
		}
		if scoped {
			s.byRegion[region] = append(s.byRegion[region], addr)
		} else {
			s.any = append(s.any, addr)
		}
	}
	if len(s.any) == 0 && len(s.byRegion) == 0 {
		return nil, errors.New("fleet: no server address")
	}
	return s, nil
}

// Allocate implements engine.Allocator.
func (s *Static) Allocate(ctx context.Context, req engine.AllocationRequest) (matcher.Server, error) {
	if err := ctx.Err(); err != nil {
		return matcher.Server{}, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	addrs := s.byRegion[req.Region]
	if len(addrs) == 0 {
		addrs = s.any
	}
	if len(addrs) == 0 {
		return matcher.Server{}, fmt.Errorf("fleet has no server in region %q", req.Region)
	}
	i := s.next[req.Region] % len(addrs)
	s.next[req.Region] = i + 1
	return matcher.Server{Address: addrs[i], Session: req.MatchID}, nil
}

// Release implements engine.Allocator: a static server is never held.
func (s *Static) Release(context.Context, string, matcher.Server) error { return nil }

// Regions lists the regions with servers of their own, sorted.
func (s *Static) Regions() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]string, 0, len(s.byRegion))
	for r := range s.byRegion {
		out = append(out, r)
	}
	slices.Sort(out)
	return out
}
