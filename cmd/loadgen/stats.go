package main

import (
	"regexp"
	"sort"
	"sync"
	"sync/atomic"
)

// counter indexes the run's counters.
type counter int

const (
	cSocketsOpen    counter = iota // gauge: sockets holding a hello'd connection
	cConnects                      // successful connects (hello received), reconnects included
	cConnectFailed                 // dial, upgrade or hello failures
	cReconnects                    // deliberate drops and reconnects after a server close
	cJoinsSent                     // join frames or REST joins issued
	cJoinsStarved                  // joins due with no idle player to send them
	cJoined                        // joined replies (and REST 202s)
	cJoinErrors                    // joins answered with an error
	cFound                         // attempts answered by match.found (or a REST poll)
	cMatches                       // distinct match ids seen by this process
	cCancelsSent                   // cancels issued
	cCancelled                     // cancels that won
	cAlreadyMatched                // cancels that lost to a match (ALREADY_MATCHED)
	cEnded                         // attempts that ended CANCELLED/EXPIRED
	cAccepts                       // accept frames sent
	cDeclines                      // decline frames sent
	cSilent                        // PENDING_ACCEPT matches left unanswered
	cReady                         // attempts ended by match.ready (everyone accepted)
	cDissolved                     // distinct matches seen dissolved
	cPushesSent                    // loadgen.push frames published (push mode)
	cPushesReceived                // loadgen.push frames received
	cPings                         // application pings sent
	cPongs                         // pongs received
	cRestPolls                     // REST GET polls
	cRestHeartbeats                // REST heartbeats
	cFramesIn                      // frames received
	cUnresolved                    // tickets with no outcome at the end
	cWaiting                       // gauge: attempts not yet resolved
	numCounters
)

var counterNames = [numCounters]string{
	"sockets_open", "connects", "connect_failed", "reconnects", "joins_sent", "joins_starved",
	"joined", "join_errors", "match_found", "matches", "cancels_sent", "cancelled",
	"already_matched", "ended", "accepts", "declines", "silent", "ready", "dissolved", "pushes_sent",
	"pushes_received", "pings", "pongs", "rest_polls", "rest_heartbeats", "frames_in", "unresolved", "waiting",
}

// Latency histogram names, in report order.
const (
	hConnect   = "connect"          // dial start → upgraded
	hHello     = "connect→hello"    // dial start → hello frame
	hJoined    = "join→joined"      // join sent → joined reply
	hFound     = "join→match.found" // join sent → match.found
	hPush      = "push delivery"    // commit (createdAt) or publish → received
	hPing      = "ping rtt"         // ping → pong
	hRestJoin  = "rest join"        // POST → 202
	hRestFound = "rest join→matched (poll)"
)

var histOrder = []string{hConnect, hHello, hJoined, hFound, hPush, hPing, hRestJoin, hRestFound}

// Labeled count families.
const (
	lErrors     = "errors"     // error frames and REST errors by code
	lCloses     = "closes"     // connection ends by close code
	lDialErrors = "dialErrors" // failed connects by cause
)

// Stats are the live figures of one process. Safe for concurrent use.
type Stats struct {
	c     [numCounters]atomic.Int64
	hists map[string]*Histogram // fixed at construction

	mu      sync.Mutex
	labeled map[string]map[string]int64
	samples map[string]string // the first error message of each dial error kind
}

// NewStats returns zeroed stats with every histogram.
func NewStats() *Stats {
	s := &Stats{hists: map[string]*Histogram{}, labeled: map[string]map[string]int64{}, samples: map[string]string{}}
	for _, h := range histOrder {
		s.hists[h] = &Histogram{}
	}
	return s
}

func (s *Stats) add(c counter, n int64)      { s.c[c].Add(n) }
func (s *Stats) inc(c counter)               { s.c[c].Add(1) }
func (s *Stats) get(c counter) int64         { return s.c[c].Load() }
func (s *Stats) hist(name string) *Histogram { return s.hists[name] }

// label counts one event of a family (errors, closes, dial errors).
func (s *Stats) label(family, key string) {
	s.mu.Lock()
	m := s.labeled[family]
	if m == nil {
		m = map[string]int64{}
		s.labeled[family] = m
	}
	m[key]++
	s.mu.Unlock()
}

// tokenInURL matches the token query parameter that dial errors quote.
var tokenInURL = regexp.MustCompile(`token=[^&"\s]+`)

// sample keeps the first error message of a kind, for the report, with
// any token cut out.
func (s *Stats) sample(kind string, err error) {
	msg := tokenInURL.ReplaceAllString(err.Error(), "token=…")
	s.mu.Lock()
	if _, ok := s.samples[kind]; !ok {
		s.samples[kind] = msg
	}
	s.mu.Unlock()
}

// Samples returns the kept error messages by kind.
func (s *Stats) Samples() map[string]string {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make(map[string]string, len(s.samples))
	for k, v := range s.samples {
		out[k] = v
	}
	return out
}

// Counters returns the counters by name.
func (s *Stats) Counters() map[string]int64 {
	out := make(map[string]int64, numCounters)
	for i := range numCounters {
		out[counterNames[i]] = s.c[i].Load()
	}
	return out
}

// Labeled returns a copy of one family.
func (s *Stats) Labeled(family string) map[string]int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := map[string]int64{}
	for k, v := range s.labeled[family] {
		out[k] = v
	}
	return out
}

// labeledTotal sums a family.
func (s *Stats) labeledTotal(family string) int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	var n int64
	for _, v := range s.labeled[family] {
		n += v
	}
	return n
}

// sortedCounts renders a family as "key=n" sorted by count, then key.
func sortedCounts(m map[string]int64) []string {
	type kv struct {
		k string
		v int64
	}
	var kvs []kv
	for k, v := range m {
		kvs = append(kvs, kv{k, v})
	}
	sort.Slice(kvs, func(i, j int) bool {
		if kvs[i].v != kvs[j].v {
			return kvs[i].v > kvs[j].v
		}
		return kvs[i].k < kvs[j].k
	})
	out := make([]string, len(kvs))
	for i, x := range kvs {
		out[i] = x.k + "=" + itoa(x.v)
	}
	return out
}
