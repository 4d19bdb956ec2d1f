package main

import (
	"time"
)

// leakGrace is how long after an allocation a kill -9 of the incarnation
// that asked for it explains a server never released: a pass (allocate,
// commit, release on failure) takes at most 15 s (the matcher's pass
// timeout), plus a margin.
const leakGrace = 20 * time.Second

// readLag is how long after its sender was killed -9 the fleet manager may
// still read an allocation request (it was in the socket's buffers, and the
// machine is loaded): seen 120 ms.
const readLag = time.Second

// checkFleet holds the fleet manager's record against the matches: every
// committed match has the server the fleet manager handed to it, never
// released and in no other committed match; every server handed to a match
// that was not committed is released, unless the incarnation that asked for
// it was killed -9 before it could (docs/ALLOCATOR.md: release is best
// effort; such leaks are counted).
func (c *checker) checkFleet() {
	st := &c.st.Fleet
	latest := map[string]*allocation{}
	for i := range c.allocs {
		latest[c.allocs[i].Match] = &c.allocs[i]
	}
	holder := map[string]string{} // server address → committed match
	for _, m := range c.matches {
		if m.ServerAddress == "" {
			c.f.addf(vServerNotAllocated, "", m.ID, "", "committed without a server")
			continue
		}
		st.CommittedServers++
		a := latest[m.ID]
		switch {
		case a == nil:
			c.f.addf(vServerNotAllocated, "", m.ID, "", "server %s (session %s) was never handed to this match", m.ServerAddress, m.ServerSession)
		case a.Address != m.ServerAddress || a.Session != m.ServerSession:
			c.f.addf(vServerNotAllocated, "", m.ID, "", "committed with server %s (session %s); the fleet manager handed it %s (session %s)",
				m.ServerAddress, m.ServerSession, a.Address, a.Session)
		case a.Released:
			c.f.addf(vReleasedCommitted, "", m.ID, "", "server %s (session %s) of the committed match was released at %s by %s",
				a.Address, a.Session, a.ReleasedAt.Format(time.RFC3339Nano), a.ReleasedBy)
		}
		if other, ok := holder[m.ServerAddress]; ok {
			c.f.addf(vServerTwice, "", m.ID, "", "server %s is also the server of committed match %s", m.ServerAddress, other)
		} else {
			holder[m.ServerAddress] = m.ID
		}
	}
	for _, a := range c.allocs {
		if c.matchByID[a.Match] != nil {
			continue
		}
		if a.Released {
			st.ReleasedUnused++
			continue
		}
		// A request written just before a kill -9 may still be read (and
		// answered into a dead socket) after it: up to readLag later.
		if k, ok := c.killedAt[a.Proc]; ok && k.After(a.At.Add(-readLag)) && k.Sub(a.At) <= leakGrace {
			st.LeakedByKill++
			continue
		}
		st.Leaked++
		c.f.addf(vServerLeaked, "", a.Match, "", "server %s handed at %s to %s, never committed nor released",
			a.Address, a.At.Format(time.RFC3339Nano), a.Proc)
	}
}
