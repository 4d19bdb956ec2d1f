package engine_test

import (
	"cmp"
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/matchgate/matchgate/matcher"
	"github.com/matchgate/matchgate/matcher/engine"
	"github.com/matchgate/matchgate/matcher/ledger"
	"github.com/matchgate/matchgate/matcher/pool"
	"github.com/matchgate/matchgate/provider"
	providerpool "github.com/matchgate/matchgate/provider/pool"
	"github.com/matchgate/matchgate/provider/record"
)

// A virtual-clock experiment on the real Service and Engine of a provider
// queue, every store in memory: a seeded Poisson stream of requesters, a
// fixed population of providers whose sessions end after an exponential
// time, a pass every 100 ms of virtual time. It compares assign batch with
// greedy, and shed tiers on with off, by what they serve and at what cost
// per pass in real CPU time.

// simConfig is one run of the experiment.
type simConfig struct {
	seed        uint64
	assign      string
	shed        []provider.Tier // nil: no shed tiers
	providers   int
	rate        float64       // arrivals per virtual second
	arrivals    int           // stop arriving after this many (0: no bound)
	duration    time.Duration // virtual time the run lasts
	lineCap     int           // end the run early once the line is longer (0: no cap)
	meanSession time.Duration
	// check, every this many passes, that the pass left no feasible pair
	// behind (0: never): a greedy pass on the state it left must find none.
	check int
	// compare, on every pass's input, Batch with Greedy (pure functions
	// on the line and the snapshot the pass is about to read).
	compare bool
}

// simResult is what a run measured.
type simResult struct {
	joined, served         int
	totalScore, totalFull  float64
	waits                  []time.Duration // join to match, virtual
	tickCPU, poolCPU       []time.Duration // real time per Tick, and in the pool's calls of it
	snapCPU                []time.Duration // real time per Tick in the provider snapshot
	maxLine, endLine       int
	lasted                 time.Duration // virtual time run
	tierTicks              []int         // passes at each shed tier
	checked                int           // passes checked after the fact
	leftFeasible           int           // checked passes that left a feasible pair among the requesters they read
	leftInLine             int           // checked passes after which a feasible pair was left anywhere in the line
	idleSlots              int           // free slots after the checked passes, summed
	compared               int           // passes compared
	batchFewer, batchLower int           // passes where Batch seated fewer, or as many at a lower total
	slotLeak, recordLeak   int           // slots held (live pool) or live assignments (record) beyond the sessions running
	running                int
	ended                  int
	matchIDsBySeq          []string // served requesters in order of service, for determinism
	unexpectedTickFailures int
}

const simQueue = "advice"

var (
	simLanguages     = []string{"en", "es", "fr", "de", "ja"}
	simLanguageSkew  = []float64{0.5, 0.2, 0.15, 0.1, 0.05}
	simSessionTypes  = []string{"chat", "video"}
	simSpecialtyBase = "spec"
)

func simWeights() map[string]float64 {
	return map[string]float64{provider.TermSpecialty: 2, provider.TermRating: 1, provider.TermLoad: 1, provider.TermWait: 1}
}

func simShed() []provider.Tier {
	return []provider.Tier{
		{Above: 1000, Drop: []string{provider.TermSpecialty}},
		{Above: 3000, Drop: []string{provider.TermLoad, provider.TermWait}},
	}
}

func pickSkewed(rng *rand.Rand, xs []string, w []float64) string {
	u := rng.Float64()
	for i, p := range w {
		if u < p {
			return xs[i]
		}
		u -= p
	}
	return xs[len(xs)-1]
}

// simProvider is one generated provider.
type simProvider struct {
	id       string
	capacity int
	attrs    provider.Attributes
}

func genProviders(rng *rand.Rand, n int) []simProvider {
	ps := make([]simProvider, n)
	for i := range ps {
		langs := []string{"en"} // the common one
		for range rng.IntN(3) {
			if l := pickSkewed(rng, simLanguages, simLanguageSkew); !slices.Contains(langs, l) {
				langs = append(langs, l)
			}
		}
		a := rng.IntN(10)
		b := (a + 1 + rng.IntN(9)) % 10
		types := []string{simSessionTypes[rng.IntN(2)]}
		if rng.IntN(2) == 0 {
			types = simSessionTypes
		}
		ps[i] = simProvider{
			id:       fmt.Sprintf("p%04d", i),
			capacity: 1 + rng.IntN(3),
			attrs: provider.Attributes{Languages: langs, Specialties: []string{simSpecialtyBase + strconv.Itoa(a), simSpecialtyBase + strconv.Itoa(b)},
				SessionTypes: types, Rating: 2 + 3*rng.Float64()},
		}
	}
	return ps
}

// simArrival is one generated requester.
type simArrival struct {
	user    string
	at      time.Time
	attrs   map[string]string
	session time.Duration // how long its session lasts once served
}

// genArrivals draws a Poisson stream at rate per second from start. Times
// are whole, strictly increasing milliseconds: the pool keeps milliseconds
// and breaks ties of equal enqueue times by ticket id, a random UUID, which
// would make runs differ.
func genArrivals(rng *rand.Rand, start time.Time, cfg simConfig) []simArrival {
	var out []simArrival
	t := 0.0
	last := int64(-1)
	for i := 0; cfg.arrivals == 0 || i < cfg.arrivals; i++ {
		t += rng.ExpFloat64() / cfg.rate
		ms := max(int64(t*1000), last+1)
		if time.Duration(ms)*time.Millisecond >= cfg.duration {
			break
		}
		last = ms
		attrs := map[string]string{
			provider.AttrLanguage:    pickSkewed(rng, simLanguages, simLanguageSkew),
			provider.AttrSessionType: simSessionTypes[rng.IntN(2)],
			provider.AttrMinRating:   strconv.Itoa(rng.IntN(5)),
		}
		if rng.IntN(10) < 7 {
			attrs[provider.AttrSpecialty] = simSpecialtyBase + strconv.Itoa(rng.IntN(10))
		}
		out = append(out, simArrival{
			user: fmt.Sprintf("r%06d", i), at: start.Add(time.Duration(ms) * time.Millisecond), attrs: attrs,
			session: time.Duration(rng.ExpFloat64() * float64(cfg.meanSession)),
		})
	}
	return out
}

// simClock is the virtual clock every store and the engine read.
type simClock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *simClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *simClock) set(t time.Time) {
	c.mu.Lock()
	c.now = t
	c.mu.Unlock()
}

// timedPool is the memory pool, timing the calls a pass makes: the memory
// pool sorts its whole partition on every scan, which Redis does not, so
// the time a pass spends there is reported apart.
type timedPool struct {
	*pool.Memory
	mu sync.Mutex
	d  time.Duration
}

func (p *timedPool) add(start time.Time) {
	d := time.Since(start)
	p.mu.Lock()
	p.d += d
	p.mu.Unlock()
}

func (p *timedPool) take() time.Duration {
	p.mu.Lock()
	defer p.mu.Unlock()
	d := p.d
	p.d = 0
	return d
}

func (p *timedPool) ScanMany(ctx context.Context, partition string, scans []pool.Scan) ([][]matcher.Entry, error) {
	defer p.add(time.Now())
	return p.Memory.ScanMany(ctx, partition, scans)
}

func (p *timedPool) Oldest(ctx context.Context, partition string, n int) ([]matcher.Entry, error) {
	defer p.add(time.Now())
	return p.Memory.Oldest(ctx, partition, n)
}

func (p *timedPool) ClaimMany(ctx context.Context, partition string, fence int64, reqs []pool.ClaimRequest, then ...pool.Scan) ([]pool.Claimed, [][]matcher.Entry, error) {
	defer p.add(time.Now())
	return p.Memory.ClaimMany(ctx, partition, fence, reqs, then...)
}

func (p *timedPool) Size(ctx context.Context, partition string) (int64, error) {
	defer p.add(time.Now())
	return p.Memory.Size(ctx, partition)
}

func (p *timedPool) Requeue(ctx context.Context, partition string, entries []matcher.Entry, ttl time.Duration, lost time.Time, timeout time.Duration) (int, error) {
	defer p.add(time.Now())
	return p.Memory.Requeue(ctx, partition, entries, ttl, lost, timeout)
}

// timedSnapshot is the memory live pool, timing its snapshots: a pass
// reads every provider of the queue.
type timedSnapshot struct {
	*providerpool.Memory
	mu sync.Mutex
	d  time.Duration
}

func (l *timedSnapshot) Snapshot(ctx context.Context, queue string, now time.Time) ([]provider.Provider, error) {
	start := time.Now()
	defer func() {
		d := time.Since(start)
		l.mu.Lock()
		l.d += d
		l.mu.Unlock()
	}()
	return l.Memory.Snapshot(ctx, queue, now)
}

func (l *timedSnapshot) take() time.Duration {
	l.mu.Lock()
	defer l.mu.Unlock()
	d := l.d
	l.d = 0
	return d
}

// matchSink is the Notifier: it keeps the matches committed passes found.
type matchSink struct {
	mu      sync.Mutex
	seen    map[string]bool
	matches []matcher.Match
}

func (s *matchSink) Deliver(_ context.Context, events []matcher.Event) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, e := range events {
		if e.Kind != matcher.EventMatchFound && e.Kind != matcher.EventMatchReady {
			continue
		}
		if e.Match.ID == "" || s.seen[e.Match.ID] || e.Match.State != matcher.MatchReady {
			continue
		}
		s.seen[e.Match.ID] = true
		s.matches = append(s.matches, e.Match)
	}
}

func (s *matchSink) take() []matcher.Match {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := s.matches
	s.matches = nil
	return out
}

// alwaysSeen is a Presence for which every requester is connected: the
// experiment has no ghosts.
type alwaysSeen struct{ clock *simClock }

func (a alwaysSeen) LastSeen(_ context.Context, users []string) (map[string]time.Time, error) {
	now := a.clock.Now()
	out := make(map[string]time.Time, len(users))
	for _, u := range users {
		out[u] = now
	}
	return out, nil
}

// simEnd is a running session's end.
type simEnd struct {
	at       time.Time
	user     string // the requester, for a stable order of equal ends
	provider string
	match    string
}

func runSim(t testing.TB, cfg simConfig) *simResult {
	t.Helper()
	ctx := context.Background()
	start := t0
	rng := rand.New(rand.NewPCG(cfg.seed, 0x5eed))
	provs := genProviders(rng, cfg.providers)
	arrivals := genArrivals(rng, start, cfg)

	q := matcher.QueueConfig{Name: simQueue, Kind: matcher.KindProvider,
		SkillRules: matcher.SkillRules{Weights: simWeights()},
		// Nobody leaves the line within a run, and nobody is a ghost.
		Timing:        matcher.Timing{Deadline: time.Hour, Tick: 100 * time.Millisecond, HeartbeatTimeout: 2 * time.Hour},
		ProviderRules: matcher.ProviderRules{Assign: cfg.assign}}
	q.Shed = cfg.shed
	qc := matcher.Config{Queues: []matcher.QueueConfig{q}}
	if err := qc.Normalize(); err != nil {
		t.Fatalf("config: %v", err)
	}
	q = qc.Queues[0]
	pol := q.Policy()

	clock := &simClock{now: start}
	mem := &timedPool{Memory: pool.NewMemory(clock.Now, 30*time.Second)}
	led := ledger.NewMemoryAt(clock.Now)
	timedLive := &timedSnapshot{Memory: providerpool.NewMemory(providerpool.WithClock(clock.Now))}
	live := timedLive
	rec := record.NewMemory()
	sink := &matchSink{seen: map[string]bool{}}
	deps := engine.Deps{Pool: mem, Ledger: led, Notifier: sink, Now: clock.Now, Providers: live, Assignments: rec,
		Presence: alwaysSeen{clock}}
	svc, err := engine.NewService(engine.ServiceConfig{Deps: deps, Queues: qc})
	if err != nil {
		t.Fatal(err)
	}
	region := q.Regions[0]
	eng, err := engine.NewEngine(engine.EngineConfig{Deps: deps, Queue: q, Region: region})
	if err != nil {
		t.Fatal(err)
	}
	part := matcher.Partition{Queue: simQueue, Region: region}.String()

	const session = "gw" // one gateway holds every provider
	ids := make([]string, len(provs))
	byID := make(map[string]simProvider, len(provs))
	for i, p := range provs {
		if _, err := svc.ProviderOnline(ctx, simQueue, p.id, session, p.capacity, p.attrs); err != nil {
			t.Fatalf("online %s: %v", p.id, err)
		}
		ids[i], byID[p.id] = p.id, p
	}

	res := &simResult{tierTicks: make([]int, len(pol.Shed)+1)}
	joinedAt := map[string]time.Time{}           // requester -> join
	arrivalOf := map[string]*simArrival{}        // requester -> its draw
	prefsOf := map[string]provider.Preferences{} // ticket -> preferences, for the check
	used := map[string]int{}                     // provider -> sessions running
	var ends []simEnd                            // running sessions, sorted by end
	next := 0
	const tick = 100 * time.Millisecond
	refreshEvery := 5 * time.Second
	lastRefresh := start

	for now := start.Add(tick); !now.After(start.Add(cfg.duration)); now = now.Add(tick) {
		// The events of the last 100 ms in time order: joins and session
		// ends (an end first when they fall on one instant).
		for {
			nextJoin := next < len(arrivals) && !arrivals[next].at.After(now)
			nextEnd := len(ends) > 0 && !ends[0].at.After(now)
			if nextEnd && (!nextJoin || !arrivals[next].at.Before(ends[0].at)) {
				e := ends[0]
				ends = ends[1:]
				clock.set(e.at)
				if _, err := svc.EndAssignment(ctx, e.provider, e.match); err != nil {
					t.Fatalf("end %s of %s: %v", e.match, e.provider, err)
				}
				used[e.provider]--
				res.ended++
				continue
			}
			if !nextJoin {
				break
			}
			a := &arrivals[next]
			next++
			clock.set(a.at)
			tk, err := svc.Join(ctx, matcher.JoinRequest{UserID: a.user, Queue: simQueue, Region: region, Attributes: a.attrs})
			if err != nil {
				t.Fatalf("join %s: %v", a.user, err)
			}
			p, _ := provider.PreferencesOf(a.attrs)
			joinedAt[a.user], arrivalOf[a.user], prefsOf[tk.ID] = a.at, a, p
			res.joined++
		}
		clock.set(now)
		if now.Sub(lastRefresh) >= refreshEvery {
			if err := svc.ProviderRefresh(ctx, simQueue, ids, session); err != nil {
				t.Fatal(err)
			}
			lastRefresh = now
		}
		line, err := mem.Memory.Size(ctx, part)
		if err != nil {
			t.Fatal(err)
		}
		res.tierTicks[provider.TierFor(pol, int(line))]++
		usedBefore := cloneCounts(used)

		if cfg.compare && line > 0 {
			res.compared++
			nb, sb, ng, sg := batchVsGreedy(t, ctx, mem.Memory, live, pol, part, prefsOf, now, int(line))
			if nb < ng {
				res.batchFewer++
			} else if nb == ng && sb < sg-1e-9 {
				res.batchLower++
			}
		}
		var read map[string]bool // the requesters this pass reads, when it is checked
		if cfg.check > 0 && (len(res.tickCPU)+1)%cfg.check == 0 && line > 0 {
			es, err := mem.Memory.Oldest(ctx, part, provider.BatchMax)
			if err != nil {
				t.Fatal(err)
			}
			read = make(map[string]bool, len(es))
			for _, e := range es {
				read[e.TicketID] = true
			}
		}
		mem.take()
		timedLive.take()
		began := time.Now()
		if _, err := eng.Tick(ctx); err != nil {
			res.unexpectedTickFailures++
			t.Logf("tick at %v: %v", now.Sub(start), err)
		}
		res.tickCPU = append(res.tickCPU, time.Since(began))
		res.poolCPU = append(res.poolCPU, mem.take())
		res.snapCPU = append(res.snapCPU, timedLive.take())

		ms := sink.take()
		// Passes decide before they commit; the sink sees a pass's matches in
		// its commit's order, made stable here by requester.
		slices.SortFunc(ms, func(a, b matcher.Match) int { return cmp.Compare(a.Players[0].UserID, b.Players[0].UserID) })
		for _, m := range ms {
			user := m.Players[0].UserID
			a := arrivalOf[user]
			if a == nil {
				t.Fatalf("match %s seats unknown requester %s", m.ID, user)
			}
			res.served++
			res.totalScore += m.Provider.Score
			pr := byID[m.Provider.UserID]
			full, ok, why := provider.Score(pol,
				provider.Provider{UserID: pr.id, Capacity: pr.capacity, Used: usedBefore[pr.id], Online: true, Attributes: pr.attrs},
				provider.Requester{TicketID: m.Players[0].TicketID, UserID: user, Prefs: prefsOf[m.Players[0].TicketID], Enqueued: a.at},
				m.CreatedAt, 0)
			if !ok {
				t.Errorf("match %s pairs %s with %s, infeasible: %s", m.ID, user, pr.id, why)
			}
			res.totalFull += full.Score
			res.waits = append(res.waits, m.CreatedAt.Sub(joinedAt[user]))
			res.matchIDsBySeq = append(res.matchIDsBySeq, user+">"+m.Provider.UserID)
			used[m.Provider.UserID]++
			e := simEnd{at: m.CreatedAt.Add(a.session), user: user, provider: m.Provider.UserID, match: m.ID}
			i, _ := slices.BinarySearchFunc(ends, e, func(x, y simEnd) int {
				if c := x.at.Compare(y.at); c != 0 {
					return c
				}
				return cmp.Compare(x.user, y.user)
			})
			ends = slices.Insert(ends, i, e)
		}
		line, err = mem.Memory.Size(ctx, part)
		if err != nil {
			t.Fatal(err)
		}
		res.maxLine = max(res.maxLine, int(line))
		res.endLine = int(line)
		res.lasted = now.Sub(start)
		if read != nil {
			res.checked++
			inRead, inLine, idle := leftFeasible(t, ctx, mem.Memory, live, pol, part, prefsOf, read, now)
			if inRead {
				res.leftFeasible++
			}
			if inLine {
				res.leftInLine++
			}
			res.idleSlots += idle
		}
		if cfg.lineCap > 0 && int(line) > cfg.lineCap {
			break
		}
	}
	res.running = len(ends)
	// Slots: what the live pool and the record hold beyond the sessions running.
	snap, err := live.Snapshot(ctx, simQueue, clock.Now())
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range snap {
		if p.Used != used[p.UserID] {
			res.slotLeak += p.Used - used[p.UserID]
		}
		as, err := rec.Live(ctx, simQueue, p.UserID)
		if err != nil {
			t.Fatal(err)
		}
		res.recordLeak += len(as) - used[p.UserID]
	}
	return res
}

func cloneCounts(m map[string]int) map[string]int {
	out := make(map[string]int, len(m))
	for k, v := range m {
		out[k] = v
	}
	return out
}

// oldestRequesters are the requesters a pass reads.
func oldestRequesters(t testing.TB, ctx context.Context, mem *pool.Memory, live provider.Live, part string,
	prefs map[string]provider.Preferences, now time.Time) ([]provider.Requester, []provider.Provider) {
	t.Helper()
	es, err := mem.Oldest(ctx, part, provider.BatchMax)
	if err != nil {
		t.Fatal(err)
	}
	ps, err := live.Snapshot(ctx, simQueue, now)
	if err != nil {
		t.Fatal(err)
	}
	rs := make([]provider.Requester, len(es))
	for i, e := range es {
		rs[i] = provider.Requester{TicketID: e.TicketID, UserID: e.UserID, Queue: simQueue, Prefs: prefs[e.TicketID], Enqueued: e.Enqueue, Deadline: e.Deadline}
	}
	return rs, ps
}

// batchVsGreedy is what each would seat, and at what total, on one pass's input.
func batchVsGreedy(t testing.TB, ctx context.Context, mem *pool.Memory, live provider.Live, pol provider.Policy, part string,
	prefs map[string]provider.Preferences, now time.Time, line int) (nb int, sb float64, ng int, sg float64) {
	rs, ps := oldestRequesters(t, ctx, mem, live, part, prefs, now)
	tier := provider.TierFor(pol, max(line, len(rs)))
	b, g := provider.Batch(pol, ps, rs, now, tier), provider.Greedy(pol, ps, rs, now, tier)
	for _, pk := range b {
		sb += pk.Score
	}
	for _, pk := range g {
		sg += pk.Score
	}
	return len(b), sb, len(g), sg
}

// leftFeasible tells whether, after a pass, a feasible pair is left
// between the providers with a free slot and the requesters the pass read
// (inRead: nothing changed since, so a pass that assigns all it can leaves
// none), or anyone in the line (inLine: the pass reads only the oldest
// provider.BatchMax, so younger requesters wait for slots the oldest
// cannot use; the oldest lineChecked of it, to keep the check cheap); idle
// is the free slots.
const lineChecked = 4 * provider.BatchMax

func leftFeasible(t testing.TB, ctx context.Context, mem *pool.Memory, live provider.Live, pol provider.Policy, part string,
	prefs map[string]provider.Preferences, read map[string]bool, now time.Time) (inRead, inLine bool, idle int) {
	t.Helper()
	es, err := mem.Oldest(ctx, part, lineChecked)
	if err != nil {
		t.Fatal(err)
	}
	ps, err := live.Snapshot(ctx, simQueue, now)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range ps {
		idle += p.Free()
	}
	var all, seen []provider.Requester
	for _, e := range es {
		r := provider.Requester{TicketID: e.TicketID, UserID: e.UserID, Queue: simQueue, Prefs: prefs[e.TicketID], Enqueued: e.Enqueue, Deadline: e.Deadline}
		all = append(all, r)
		if read[e.TicketID] {
			seen = append(seen, r)
		}
	}
	inRead = len(provider.Greedy(pol, ps, seen, now, 0)) > 0
	inLine = inRead || len(provider.Greedy(pol, ps, all, now, 0)) > 0
	return inRead, inLine, idle
}

func pct(ds []time.Duration, p float64) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	s := slices.Clone(ds)
	slices.Sort(s)
	i := int(math.Ceil(p*float64(len(s)))) - 1
	return s[min(max(i, 0), len(s)-1)]
}

func maxTier(ticks []int) int {
	for i := len(ticks) - 1; i >= 0; i-- {
		if ticks[i] > 0 {
			return i
		}
	}
	return 0
}

func (r *simResult) meanScore() float64 {
	if r.served == 0 {
		return 0
	}
	return r.totalScore / float64(r.served)
}

func (r *simResult) meanFull() float64 {
	if r.served == 0 {
		return 0
	}
	return r.totalFull / float64(r.served)
}

// simCapacity is the sessions per second the providers can serve.
func simCapacity(seed uint64, n int, mean time.Duration) float64 {
	rng := rand.New(rand.NewPCG(seed, 0x5eed))
	slots := 0
	for _, p := range genProviders(rng, n) {
		slots += p.capacity
	}
	return float64(slots) / mean.Seconds()
}

// The always-run check, on one seeded stream under load enough that the
// providers are full and a line forms. On every pass's input Batch seats
// at least as many as Greedy, at no lower total (what Batch promises).
// Over the whole run batch must score no lower in total; its served count
// may trail greedy's a little, for a pass's choice changes which slots free
// up when, and so what the later passes can do (seed 7: 340 against 343),
// so that is held to within 2%. And a run is the same every time.
func TestProviderBatchNotWorseThanGreedy(t *testing.T) {
	base := simConfig{seed: 7, providers: 60, arrivals: 400, duration: 40 * time.Second, meanSession: 10 * time.Second, check: 4, compare: true}
	base.rate = 3 * simCapacity(base.seed, base.providers, base.meanSession)
	run := func(c simConfig) *simResult {
		r := runSim(t, c)
		if r.unexpectedTickFailures > 0 || r.slotLeak != 0 || r.recordLeak != 0 {
			t.Fatalf("%s: %d failed passes, %d slots and %d assignments beyond the running sessions",
				c.assign, r.unexpectedTickFailures, r.slotLeak, r.recordLeak)
		}
		if r.leftFeasible > 0 {
			t.Errorf("%s: %d of %d passes left a feasible pair unassigned", c.assign, r.leftFeasible, r.checked)
		}
		if c.compare && (r.batchFewer > 0 || r.batchLower > 0 || r.compared < 100) {
			t.Errorf("%s: of %d passes compared, Batch seated fewer than Greedy in %d and as many at a lower total in %d",
				c.assign, r.compared, r.batchFewer, r.batchLower)
		}
		t.Logf("%s: joined %d served %d total score %.3f, line at end %d, %d passes compared, %d of %d left a feasible pair in the line",
			c.assign, r.joined, r.served, r.totalScore, r.endLine, r.compared, r.leftInLine, r.checked)
		return r
	}
	bc, gc := base, base
	bc.assign, gc.assign = matcher.AssignBatch, matcher.AssignGreedy
	batch, greedy := run(bc), run(gc)
	if batch.joined != greedy.joined || batch.served < 100 || batch.endLine == 0 {
		t.Fatalf("the stream does not test much: joined %d/%d, batch served %d, line at end %d", batch.joined, greedy.joined, batch.served, batch.endLine)
	}
	if float64(batch.served) < 0.98*float64(greedy.served) {
		t.Errorf("batch served %d, greedy %d", batch.served, greedy.served)
	}
	const eps = 1e-6
	if batch.totalScore < greedy.totalScore-eps {
		t.Errorf("batch total score %.6f < greedy %.6f", batch.totalScore, greedy.totalScore)
	}
	again := bc
	again.check, again.compare = 0, false
	r := runSim(t, again)
	if r.served != batch.served || r.totalScore != batch.totalScore || !slices.Equal(r.matchIDsBySeq, batch.matchIDsBySeq) {
		t.Errorf("two runs of one seed differ: served %d vs %d, score %.9f vs %.9f", batch.served, r.served, batch.totalScore, r.totalScore)
	}
	// And with shed tiers the line reaches.
	for _, c := range []simConfig{bc} {
		c.check, c.compare = 0, false
		c.shed = []provider.Tier{{Above: 10, Drop: []string{provider.TermSpecialty}}, {Above: 30, Drop: []string{provider.TermLoad, provider.TermWait}}}
		one, two := runSim(t, c), runSim(t, c)
		if maxTier(one.tierTicks) != 2 {
			t.Errorf("%s: the line reached tier %d, want 2", c.assign, maxTier(one.tierTicks))
		}
		if one.served != two.served || one.totalScore != two.totalScore || !slices.Equal(one.matchIDsBySeq, two.matchIDsBySeq) {
			t.Errorf("%s with shed tiers: two runs of one seed differ: served %d vs %d, score %.9f vs %.9f",
				c.assign, one.served, two.served, one.totalScore, two.totalScore)
		}
	}
}

// TestProviderSeeds is the run-level comparison over seeds (a diagnostic).
func TestProviderSeeds(t *testing.T) {
	if os.Getenv("MATCHGATE_PROVIDER_SEEDS") == "" {
		t.Skip("set MATCHGATE_PROVIDER_SEEDS=1")
	}
	for seed := uint64(1); seed <= 20; seed++ {
		base := simConfig{seed: seed, providers: 60, arrivals: 400, duration: 40 * time.Second, meanSession: 10 * time.Second}
		base.rate = 3 * simCapacity(base.seed, base.providers, base.meanSession)
		bc, gc := base, base
		bc.assign, gc.assign = matcher.AssignBatch, matcher.AssignGreedy
		b, g := runSim(t, bc), runSim(t, gc)
		fmt.Printf("seed %d: served %d/%d score %.1f/%.1f\n", seed, b.served, g.served, b.totalScore, g.totalScore)
	}
}

// TestProviderSideBySide is the full experiment, a markdown table on
// stdout; it takes about two minutes (MATCHGATE_PROVIDER_SIM_DURATION sets
// the virtual time of a run, 2m by default):
//
//	MATCHGATE_PROVIDER_SIM=1 go test ./matcher/engine -run TestProviderSideBySide -v -count=1 -timeout 20m
//
// "mean score" is the matches' own (Provider.Score, at the tier the pass
// was in: a shed term scores nothing); "full policy" rescores the same
// pairs at tier 0, so that shed and unshed compare. Waits are of those
// served only. The pass's time includes the memory pool's reads ("pool")
// and the provider snapshot.
func TestProviderSideBySide(t *testing.T) {
	if os.Getenv("MATCHGATE_PROVIDER_SIM") != "1" {
		t.Skip("the provider queue experiment takes minutes: set MATCHGATE_PROVIDER_SIM=1 to run it")
	}
	dur := 2 * time.Minute
	if s := os.Getenv("MATCHGATE_PROVIDER_SIM_DURATION"); s != "" {
		d, err := time.ParseDuration(s)
		if err != nil {
			t.Fatal(err)
		}
		dur = d
	}
	// The memory pool sorts the whole line on every read, so a line grown
	// far past the shed tiers costs the pass more there than in Redis:
	// a run ends early once the line passes lineCap.
	const seed, providers, lineCap = 1, 1000, 8000
	mean := 60 * time.Second
	capacity := simCapacity(seed, providers, mean)
	var b strings.Builder
	fmt.Fprintf(&b, "\n%d providers, %.1f sessions/s capacity (mean session %v), %v virtual or until the line passes %d, pass every 100 ms, seed %d\n\n",
		providers, capacity, mean, dur, lineCap, seed)
	b.WriteString("| assign | shed | load | ran | joined | served | mean score | mean score (full policy) | wait p50 | wait p99 | line max | tier max (passes per tier) | pass p50 | pass p99 | pool p50 | snapshot p50 | left feasible (read/line of checked) | idle slots (mean, checked) | leak (slots/record) |\n")
	b.WriteString("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|\n")
	for _, load := range []float64{1, 3, 10} {
		for _, shed := range [][]provider.Tier{simShed(), nil} {
			for _, assign := range []string{matcher.AssignBatch, matcher.AssignGreedy} {
				began := time.Now()
				r := runSim(t, simConfig{seed: seed, assign: assign, shed: shed, providers: providers, rate: load * capacity,
					duration: dur, lineCap: lineCap, meanSession: mean, check: 100})
				tiers := make([]string, len(r.tierTicks))
				for i, n := range r.tierTicks {
					tiers[i] = strconv.Itoa(n)
				}
				shedName := "off"
				if shed != nil {
					shedName = "on"
				}
				fmt.Fprintf(&b, "| %s | %s | %.0f× | %v | %d | %d | %.3f | %.3f | %v | %v | %d | %d (%s) | %v | %v | %v | %v | %d/%d of %d | %.0f | %d/%d |\n",
					assign, shedName, load, r.lasted, r.joined, r.served, r.meanScore(), r.meanFull(),
					pct(r.waits, 0.5).Round(100*time.Millisecond), pct(r.waits, 0.99).Round(100*time.Millisecond),
					r.maxLine, maxTier(r.tierTicks), strings.Join(tiers, "/"),
					pct(r.tickCPU, 0.5).Round(10*time.Microsecond), pct(r.tickCPU, 0.99).Round(10*time.Microsecond),
					pct(r.poolCPU, 0.5).Round(10*time.Microsecond), pct(r.snapCPU, 0.5).Round(10*time.Microsecond),
					r.leftFeasible, r.leftInLine, r.checked, float64(r.idleSlots)/float64(max(r.checked, 1)), r.slotLeak, r.recordLeak)
				fmt.Printf("provider sim: %s shed %s load %.0f× done in %v\n", assign, shedName, load, time.Since(began).Round(time.Second))
				if r.unexpectedTickFailures > 0 {
					t.Errorf("%s shed %s load %.0f×: %d passes failed", assign, shedName, load, r.unexpectedTickFailures)
				}
			}
		}
	}
	fmt.Print(b.String())
	t.Log(b.String())
}
