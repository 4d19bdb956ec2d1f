package simulate

import (
	"cmp"
	"container/heap"
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"sort"
	"strconv"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/matchgate/matchgate/matcher"
	"github.com/matchgate/matchgate/matcher/engine"
	"github.com/matchgate/matchgate/provider"
	providerpool "github.com/matchgate/matchgate/provider/pool"
	"github.com/matchgate/matchgate/provider/record"
)

// Providers is the provider side of a provider queue's run: who is online
// when, what each offers, and how they answer offers and end sessions
// (docs/SIMULATE.md, "Provider queues").
type Providers struct {
	// Groups are the providers; or, for one group, its fields right here
	// (providers: {count: 10, capacity: 2}).
	Groups []ProviderGroup `yaml:"groups"`
	One    ProviderGroup   `yaml:",inline"`
	// Session is how long a session lasts once its offer is accepted.
	// Default {exponential: 10m}.
	Session Dist `yaml:"session"`
	// Answer is how a provider answers an offer (a queue with an accept
	// window), drawn for each offer. Default: every offer accepted after 1s.
	Answer Accept `yaml:"answer"`
}

// ProviderGroup is a number of alike providers.
type ProviderGroup struct {
	Name  string `yaml:"name"`
	Count int    `yaml:"count"`
	// Capacity is each provider's slots: a number, or weights of numbers
	// ({1: 3, 2: 1}). Default 1.
	Capacity Capacity `yaml:"capacity"`
	// Languages, Specialties and SessionTypes are the chance (0–1) that a
	// provider has each value; specialties are listed in name order, the
	// first the primary one.
	Languages    map[string]float64 `yaml:"languages"`
	Specialties  map[string]float64 `yaml:"specialties"`
	SessionTypes map[string]float64 `yaml:"sessionTypes"`
	// Rating is normal, clamped to 0–5. Default {mean: 4, sd: 0}.
	Rating *Normal `yaml:"rating"`
	// Shift is the hours of the day [start, end) a provider is online
	// (end < start wraps past midnight); Online instead is the share of
	// the group online in each hour of the day (24 numbers, 0–1). Neither:
	// online all day.
	Shift  []int     `yaml:"shift"`
	Online []float64 `yaml:"online"`
}

// Capacity is a distribution of a provider's slots.
type Capacity struct {
	Values  []int
	Weights []float64
}

// UnmarshalYAML takes a number or a map of numbers to weights.
func (c *Capacity) UnmarshalYAML(n *yaml.Node) error {
	if n.Kind == yaml.ScalarNode {
		var v int
		if err := n.Decode(&v); err != nil {
			return fmt.Errorf("line %d: capacity: a number or {slots: weight}", n.Line)
		}
		*c = Capacity{Values: []int{v}, Weights: []float64{1}}
		return nil
	}
	var m map[int]float64
	if err := n.Decode(&m); err != nil {
		return fmt.Errorf("line %d: capacity: a number or {slots: weight}", n.Line)
	}
	*c = Capacity{}
	for v := range m {
		c.Values = append(c.Values, v)
	}
	sort.Ints(c.Values)
	for _, v := range c.Values {
		c.Weights = append(c.Weights, m[v])
	}
	return nil
}

func (c Capacity) draw(rng *rand.Rand) int {
	sum := 0.0
	for _, w := range c.Weights {
		sum += w
	}
	u := rng.Float64() * sum
	for i, w := range c.Weights {
		if u < w {
			return c.Values[i]
		}
		u -= w
	}
	return c.Values[len(c.Values)-1]
}

// Requesters is what the requesters of a provider queue ask for: for each
// attribute, weights of its values, "" for asking nothing. An attribute
// left out is never asked.
type Requesters struct {
	Language    map[string]float64 `yaml:"language"`
	Specialty   map[string]float64 `yaml:"specialty"`
	SessionType map[string]float64 `yaml:"sessionType"`
	MinRating   map[string]float64 `yaml:"minRating"`
}

// normalizeProviders fills the providers' defaults and validates them.
func (sc *Scenario) normalizeProviders() []error {
	p := sc.Providers
	if p == nil {
		return nil
	}
	var errs []error
	switch {
	case len(p.Groups) > 0 && p.One.Count != 0:
		errs = append(errs, errors.New("providers: groups, or one group's count here, not both"))
	case len(p.Groups) == 0 && p.One.Count != 0:
		p.Groups, p.One = []ProviderGroup{p.One}, ProviderGroup{}
	case len(p.Groups) == 0:
		errs = append(errs, errors.New("providers: no groups"))
	}
	names := map[string]bool{}
	for i := range p.Groups {
		g := &p.Groups[i]
		what := fmt.Sprintf("providers: groups[%d]", i)
		if g.Name == "" {
			g.Name = "g" + strconv.Itoa(i)
		}
		if names[g.Name] {
			errs = append(errs, fmt.Errorf("%s: name %q used twice", what, g.Name))
		}
		names[g.Name] = true
		if g.Count < 1 || g.Count > 100_000 {
			errs = append(errs, fmt.Errorf("%s: count must be 1–100000", what))
		}
		if len(g.Capacity.Values) == 0 {
			g.Capacity = Capacity{Values: []int{1}, Weights: []float64{1}}
		}
		sum := 0.0
		for k, v := range g.Capacity.Values {
			w := g.Capacity.Weights[k]
			if v < 1 || v > 1000 || !(w >= 0) || math.IsInf(w, 0) {
				errs = append(errs, fmt.Errorf("%s: capacity: slots 1–1000, weights ≥ 0", what))
			}
			sum += w
		}
		if !(sum > 0) {
			errs = append(errs, fmt.Errorf("%s: capacity: weights sum to 0", what))
		}
		for k, m := range []map[string]float64{g.Languages, g.Specialties, g.SessionTypes} {
			for _, v := range sortedKeys(m) {
				if x := m[v]; v == "" || !(x >= 0 && x <= 1) {
					errs = append(errs, fmt.Errorf("%s: %s: %q: a value with a chance in [0, 1]", what,
						[]string{"languages", "specialties", "sessionTypes"}[k], v))
				}
			}
		}
		if g.Rating == nil {
			g.Rating = &Normal{Mean: 4}
		}
		if r := g.Rating; !(r.Mean >= 0 && r.Mean <= 5) || !(r.SD >= 0) || math.IsInf(r.SD, 0) {
			errs = append(errs, fmt.Errorf("%s: rating: mean 0–5, sd ≥ 0", what))
		}
		switch {
		case g.Shift != nil && g.Online != nil:
			errs = append(errs, fmt.Errorf("%s: a shift or an online shape, not both", what))
		case g.Shift != nil && (len(g.Shift) != 2 || g.Shift[0] < 0 || g.Shift[0] > 23 || g.Shift[1] < 0 || g.Shift[1] > 24 || g.Shift[0] == g.Shift[1]):
			errs = append(errs, fmt.Errorf("%s: shift is [start, end) hours, 0–24, start ≠ end", what))
		case g.Online != nil && len(g.Online) != 24:
			errs = append(errs, fmt.Errorf("%s: online has %d shares, want 24 (one an hour)", what, len(g.Online)))
		}
		for _, x := range g.Online {
			if !(x >= 0 && x <= 1) {
				errs = append(errs, fmt.Errorf("%s: online: shares must be in [0, 1]", what))
				break
			}
		}
	}
	if p.Session.set() == 0 {
		p.Session = Dist{Exponential: 10 * time.Minute}
	} else if err := p.Session.validate("providers: session"); err != nil {
		errs = append(errs, err)
	}
	a := p.Answer
	if a.Accept < 0 || a.Decline < 0 || a.Silence < 0 {
		errs = append(errs, errors.New("providers: answer: fractions must be ≥ 0"))
	}
	if a.Accept+a.Decline+a.Silence == 0 {
		p.Answer.Accept = 1
	}
	if a.After.set() == 0 {
		p.Answer.After = Dist{Fixed: time.Second}
	} else if err := a.After.validate("providers: answer: after"); err != nil {
		errs = append(errs, err)
	}
	r := sc.Requesters
	for k, m := range []map[string]float64{r.Language, r.Specialty, r.SessionType, r.MinRating} {
		attr := []string{"language", "specialty", "sessionType", "minRating"}[k]
		sum := 0.0
		for _, v := range sortedKeys(m) {
			w := m[v]
			if !(w >= 0) || math.IsInf(w, 0) {
				errs = append(errs, fmt.Errorf("requesters: %s: %q: weight must be ≥ 0", attr, v))
			}
			if attr == "minRating" && v != "" {
				if x, err := strconv.ParseFloat(v, 64); err != nil || !(x >= 0 && x <= 5) {
					errs = append(errs, fmt.Errorf("requesters: minRating: %q: a number from 0 to 5", v))
				}
			}
			sum += w
		}
		if len(m) > 0 && !(sum > 0) {
			errs = append(errs, fmt.Errorf("requesters: %s: weights sum to 0", attr))
		}
	}
	return errs
}

// sortedKeys are m's keys in order, for errors in a stable order.
func sortedKeys(m map[string]float64) []string {
	ks := make([]string, 0, len(m))
	for k := range m {
		ks = append(ks, k)
	}
	sort.Strings(ks)
	return ks
}

// simProvider is one provider of a run.
type simProvider struct {
	id       string
	capacity int
	attrs    provider.Attributes
	hours    [24]bool // online in each hour of the day
	online   bool
	held     int // live assignments: offers open and sessions running
	running  int // sessions running
}

// genProviders draws the providers, the same for every config.
func genProviders(sc *Scenario) []*simProvider {
	rng := rand.New(rand.NewPCG(sc.Seed, 0x70726f76)) // "prov"
	var out []*simProvider
	for _, g := range sc.Providers.Groups {
		for k := range g.Count {
			p := &simProvider{id: g.Name + "-" + strconv.Itoa(k), capacity: g.Capacity.draw(rng)}
			p.attrs.Languages = drawSet(rng, g.Languages)
			p.attrs.Specialties = drawSet(rng, g.Specialties)
			p.attrs.SessionTypes = drawSet(rng, g.SessionTypes)
			p.attrs.Rating = round(min(max(g.Rating.Mean+rng.NormFloat64()*g.Rating.SD, 0), 5), 2)
			for h := range p.hours {
				switch {
				case g.Shift != nil && g.Shift[0] < g.Shift[1]:
					p.hours[h] = h >= g.Shift[0] && h < g.Shift[1]
				case g.Shift != nil:
					p.hours[h] = h >= g.Shift[0] || h < g.Shift[1]
				case g.Online != nil:
					// The first providers of the group are the ones online
					// at a low share, so that a share's change moves few.
					p.hours[h] = (float64(k)+0.5)/float64(g.Count) < g.Online[h]
				default:
					p.hours[h] = true
				}
			}
			out = append(out, p)
		}
	}
	return out
}

// drawSet keeps each value with its chance, in name order.
func drawSet(rng *rand.Rand, chances map[string]float64) []string {
	var out []string
	for _, v := range sortedKeys(chances) {
		if rng.Float64() < chances[v] {
			out = append(out, v)
		}
	}
	return out
}

// Kinds of a provider run's timed events, after run.go's.
const (
	evProvAccept uint8 = iota + 16
	evProvDecline
	evEnd
)

// refreshEvery is how often the run refreshes the providers online, well
// within the Service's TTL, as a gateway does.
const refreshEvery = 5 * time.Second

// gateway is the one session that holds every provider of a run.
const gateway = "sim"

// psim is the run of one provider queue's config.
type psim struct {
	passes
	q          matcher.QueueConfig
	svc        *engine.Service
	pending    int
	pacc       *provAccum
	shifting   bool // a provider goes offline: the offers dissolved now are withdrawn
	provs      []*simProvider
	byID       map[string]*simProvider
	prefs      [4]regionPicker // language, specialty, sessionType, minRating
	prefRng    *rand.Rand
	answerRng  *rand.Rand
	integrated time.Time // utilisation is summed up to here
	onPlayed   func(matcher.Match)
	rec        *record.Memory
}

// runProviderConfig runs a provider queue's config.
func runProviderConfig(ctx context.Context, sc *Scenario, idx int, opt Options) (*ConfigReport, error) {
	c := sc.Configs[idx]
	q := c.Queue
	s := &psim{passes: newPasses(ctx, sc), q: q,
		pacc: &provAccum{}, byID: map[string]*simProvider{},
		prefRng:    rand.New(rand.NewPCG(sc.Seed, 0x70726566)), // "pref"
		answerRng:  rand.New(rand.NewPCG(sc.Seed, 0x616e73)),   // "ans"
		integrated: sc.Start}
	// The record keeps every match: a provider's session, however long,
	// ends against its match (Service.EndAssignment reads it).
	s.nextForget = time.Time{}
	s.collect = s.take
	r := sc.Requesters
	for i, m := range []map[string]float64{r.Language, r.Specialty, r.SessionType, r.MinRating} {
		s.prefs[i] = newRegionPicker(m)
	}
	s.rec = record.NewMemory()
	deps := s.deps()
	deps.Providers, deps.Assignments = providerpool.NewMemory(providerpool.WithClock(s.clock.Now)), s.rec
	svc, err := s.start(q, deps)
	if err != nil {
		return nil, err
	}
	s.svc = svc
	if opt.Played != nil {
		s.onPlayed = func(m matcher.Match) { opt.Played(c.Name, m) }
	}
	s.provs = genProviders(sc)
	for _, p := range s.provs {
		s.byID[p.id] = p
	}
	if err := s.loop(opt, idx); err != nil {
		return nil, err
	}
	rep := s.acc.report(c.Name, sc)
	s.pacc.report(rep)
	return rep, nil
}

// loop is run.go's loop with the providers' events: shifts, answers,
// session ends and refreshes.
func (s *psim) loop(opt Options, idx int) error {
	st := newStream(s.sc)
	start, tick := s.sc.Start, s.q.Tick
	end := start.Add(s.sc.Duration)
	hardEnd := end.Add(s.q.Deadline + 2*s.q.AcceptWindow + 10*tick)
	// Every provider's state at the start, then each hour's change.
	if err := s.shift(); err != nil {
		return err
	}
	nextHour := start.Truncate(time.Hour).Add(time.Hour)
	nextRefresh := start.Add(refreshEvery)
	nextPass := start.Add(tick)
	cfg := s.sc.Configs[idx].Name
	progress := func(at time.Time, done bool) {
		if opt.Progress != nil {
			opt.Progress(Progress{Config: cfg, Index: idx, Of: len(s.sc.Configs), Virtual: min(at.Sub(start), s.sc.Duration),
				End: s.sc.Duration, Joins: s.acc.joins, Done: done})
		}
	}
	nextReport := start.Add(time.Minute)
	for {
		if err := s.ctx.Err(); err != nil {
			return err
		}
		a := st.peek()
		idle := len(s.live) == 0 && s.pending == 0
		if a == nil && idle {
			break
		}
		if idle && a.at.After(nextPass) {
			k := (a.at.Sub(start) + tick - 1) / tick
			nextPass = start.Add(k * tick)
		}
		// Of one instant: the hour's shift, refreshes, arrivals, actions,
		// wakes' passes, the tick's.
		t, kind := nextPass, 3
		if s.nextWake != 0 && s.nextWake <= t.UnixNano() {
			t, kind = time.Unix(0, s.nextWake).UTC(), 2
		}
		if len(s.timed) > 0 && s.timed[0].at <= t.UnixNano() {
			t, kind = time.Unix(0, s.timed[0].at).UTC(), 1
		}
		if a != nil && !a.at.After(t) {
			t, kind = a.at, 0
		}
		if !nextRefresh.After(t) {
			t, kind = nextRefresh, 4
		}
		if !nextHour.After(t) {
			t, kind = nextHour, 5
		}
		if t.After(hardEnd) {
			break
		}
		for !t.Before(nextReport) && !nextReport.After(end) {
			progress(nextReport, false)
			nextReport = nextReport.Add(time.Minute)
		}
		s.integrate(t)
		s.clock.now = t
		var err error
		switch kind {
		case 0:
			err = s.join(st.take())
		case 1:
			err = s.act(heap.Pop(&s.timed).(timed))
		case 2:
			err = s.wakePass()
		case 3:
			err = s.pass()
			nextPass = nextPass.Add(tick)
		case 4:
			err = s.refresh()
			nextRefresh = nextRefresh.Add(refreshEvery)
		default:
			err = s.shift()
			nextHour = nextHour.Add(time.Hour)
		}
		if err != nil {
			return err
		}
	}
	s.integrate(end)
	s.acc.waitingAtEnd = int64(len(s.live))
	progress(end, true)
	return nil
}

// integrate sums the slot-seconds online and busy up to t, within the
// stream's duration, by hour of the day.
func (s *psim) integrate(t time.Time) {
	end := s.sc.Start.Add(s.sc.Duration)
	if t.After(end) {
		t = end
	}
	for s.integrated.Before(t) {
		next := earlier(s.integrated.Truncate(time.Hour).Add(time.Hour), t)
		d := next.Sub(s.integrated).Seconds()
		on, busy := 0, 0
		for _, p := range s.provs {
			if p.online {
				on += p.capacity
				busy += min(p.running, p.capacity)
			}
		}
		h := &s.pacc.hours[s.integrated.Hour()]
		h.online += d * float64(on)
		h.busy += d * float64(busy)
		s.integrated = next
	}
}

func earlier(a, b time.Time) time.Time {
	if a.Before(b) {
		return a
	}
	return b
}

// shift puts each provider online or offline for the hour beginning.
func (s *psim) shift() error {
	hr := s.clock.now.Hour()
	for _, p := range s.provs {
		want := p.hours[hr]
		if want == p.online {
			continue
		}
		var err error
		if want {
			_, err = s.svc.ProviderOnline(s.ctx, s.q.Name, p.id, gateway, p.capacity, p.attrs)
		} else {
			s.shifting = true
			_, err = s.svc.ProviderOffline(s.ctx, s.q.Name, p.id, gateway)
		}
		if err != nil {
			return fmt.Errorf("provider %s online=%v at %s: %w", p.id, want, s.clock.now.Format(time.RFC3339), err)
		}
		p.online = want
		err = s.take()
		s.shifting = false
		if err != nil {
			return err
		}
	}
	return nil
}

// refresh keeps the providers online alive, as their gateway does.
func (s *psim) refresh() error {
	var ids []string
	for _, p := range s.provs {
		if p.online {
			ids = append(ids, p.id)
		}
	}
	if err := s.svc.ProviderRefresh(s.ctx, s.q.Name, ids, gateway); err != nil {
		return fmt.Errorf("refresh the providers: %w", err)
	}
	return nil
}

// join is an arrival with its drawn preferences.
func (s *psim) join(a *arrival) error {
	attrs := map[string]string{}
	for i, key := range []string{provider.AttrLanguage, provider.AttrSpecialty, provider.AttrSessionType, provider.AttrMinRating} {
		if v := s.prefs[i].pick(s.prefRng); v != "" {
			attrs[key] = v
		}
	}
	t, err := s.svc.Join(s.ctx, matcher.JoinRequest{UserID: a.user, Queue: s.q.Name, Region: a.region, Attributes: attrs})
	if err != nil {
		return fmt.Errorf("join %s at %s: %w", a.user, s.clock.now.Format(time.RFC3339Nano), err)
	}
	s.joined(t, a)
	return s.take()
}

// act is a requester's cancel, or a provider's answer or session end,
// through the Service. One that comes too late is refused and changes
// nothing, as in run.go.
func (s *psim) act(t timed) error {
	var err error
	switch t.kind {
	case evCancel:
		if s.live[t.ticket] == nil {
			return nil
		}
		_, err = s.svc.Cancel(s.ctx, t.user, t.ticket)
	case evProvAccept:
		_, err = s.svc.Accept(s.ctx, t.user, t.match)
	case evProvDecline:
		// Counted once done: an offer withdrawn meanwhile is declined no more.
		if _, err = s.svc.Decline(s.ctx, t.user, t.match); err == nil {
			s.pacc.declined++
		}
	case evEnd:
		_, err = s.svc.EndAssignment(s.ctx, t.user, t.match)
		if err == nil {
			p := s.byID[t.user]
			p.running--
			p.held--
			s.pacc.ended++
		}
	}
	var me *matcher.Error
	if err != nil && (!errors.As(err, &me) || me.Code == matcher.CodeUnavailable) {
		return fmt.Errorf("%s at %s: %w", t.user, s.clock.now.Format(time.RFC3339Nano), err)
	}
	return s.take()
}

// take reads what the last step published. The offers of one step are
// answered in requester order, so that the answers drawn do not depend on
// the order a pass published them in.
func (s *psim) take() error {
	evs := s.box.take()
	var offers []matcher.Match
	for i := range evs {
		e := &evs[i]
		switch e.Kind {
		case matcher.EventTicketUpdated:
			s.ticketUpdated(e.Ticket)
		case matcher.EventMatchFound:
			if err := s.held(e.Match); err != nil {
				return err
			}
			if e.Match.State == matcher.MatchPendingAccept {
				s.pending++
				offers = append(offers, e.Match)
			} else {
				s.played(e.Match)
			}
		case matcher.EventMatchReady:
			s.pending--
			s.played(e.Match)
		case matcher.EventMatchDissolved:
			s.pending--
			s.acc.dissolved++
			if e.Match.Provider != nil {
				s.byID[e.Match.Provider.UserID].held--
				s.pacc.dissolved++
				if s.shifting {
					s.pacc.withdrawn++
				}
			}
		}
	}
	slices.SortFunc(offers, func(a, b matcher.Match) int {
		return cmp.Compare(a.Players[0].UserID, b.Players[0].UserID)
	})
	for _, m := range offers {
		s.answer(m)
	}
	return s.emptyOutbox(len(evs))
}

// held counts a slot taken by a match, and whether it took one too many:
// by the run's own count of the provider's offers and sessions, or by the
// live assignments the record holds for it.
func (s *psim) held(m matcher.Match) error {
	if m.Provider == nil {
		return nil
	}
	p := s.byID[m.Provider.UserID]
	p.held++
	as, err := s.rec.Live(s.ctx, s.q.Name, p.id)
	if err != nil {
		return fmt.Errorf("read the assignments of %s: %w", p.id, err)
	}
	if p.held > p.capacity || len(as) > p.capacity {
		s.pacc.overCapacity++
	}
	return nil
}

// answer schedules the provider's answer to an offer.
func (s *psim) answer(m matcher.Match) {
	if m.Provider == nil {
		return
	}
	s.pacc.offers++
	a := s.sc.Providers.Answer
	u := s.answerRng.Float64() * (a.Accept + a.Decline + a.Silence)
	after := a.After.draw(s.answerRng)
	ev := timed{at: m.CreatedAt.Add(after).UnixNano(), user: m.Provider.UserID, match: m.ID}
	switch {
	case u < a.Accept:
		ev.kind = evProvAccept
	case u < a.Accept+a.Decline:
		ev.kind = evProvDecline
	default:
		return // silent: the window closes on it
	}
	s.schedule(ev)
}

func (s *psim) ticketUpdated(t matcher.Ticket) {
	l := s.live[t.ID]
	if l == nil {
		return
	}
	switch t.Status {
	case matcher.StatusExpired:
		s.acc.resolved(l.joinHr, outExpired)
	case matcher.StatusCancelled:
		if t.CancelReason == matcher.ReasonUser {
			s.acc.resolved(l.joinHr, outCancelled)
		} else {
			s.acc.resolved(l.joinHr, outOther)
		}
	default:
		return // WAITING again, after a declined or lapsed offer
	}
	delete(s.live, t.ID)
}

// played is a session that begins: its requester is seated, and its
// provider ends it after the drawn length.
func (s *psim) played(m matcher.Match) {
	s.acc.match(m)
	if s.onPlayed != nil {
		s.onPlayed(m)
	}
	for _, p := range m.Players {
		if l := s.live[p.TicketID]; l != nil {
			s.acc.seated(l.joinHr, m.CreatedAt.Sub(l.enq))
			delete(s.live, p.TicketID)
		}
	}
	if m.Provider == nil {
		return
	}
	s.pacc.scored(m.CreatedAt.Hour(), m.Provider.Score)
	s.byID[m.Provider.UserID].running++
	d := max(s.sc.Providers.Session.draw(s.answerRng), time.Millisecond)
	s.schedule(timed{at: s.clock.now.Add(d).UnixNano(), kind: evEnd, user: m.Provider.UserID, match: m.ID})
}

// provAccum gathers a provider run's own figures.
type provAccum struct {
	hours                       [24]provHour
	offers, declined, withdrawn int64
	dissolved                   int64 // offers dissolved: declined, withdrawn or let pass
	ended, overCapacity         int64
}

type provHour struct {
	scores       []float32
	online, busy float64 // slot-seconds
}

func (a *provAccum) scored(hr int, score float64) {
	a.hours[hr].scores = append(a.hours[hr].scores, float32(score))
}

// ProviderReport is what a provider queue's config adds to its report.
type ProviderReport struct {
	// Score is the provider score (Match.Provider.Score) of the sessions
	// begun.
	ScoreP50 float64 `json:"scoreP50"`
	ScoreP90 float64 `json:"scoreP90"`
	// Offers made with an accept window; of them Declined by the
	// provider, Lapsed (its window passed in silence) and Withdrawn (the
	// provider went offline with the offer open).
	Offers    int64 `json:"offers"`
	Declined  int64 `json:"declined"`
	Lapsed    int64 `json:"lapsed"`
	Withdrawn int64 `json:"withdrawn"`
	// SessionsEnded by their provider within the run.
	SessionsEnded int64 `json:"sessionsEnded"`
	// Utilisation is slot-seconds busy (a session running, its provider
	// online) over slot-seconds online, within the stream's duration.
	Utilisation float64 `json:"utilisation"`
	// OverCapacity counts the times a provider held more live assignments
	// than its capacity (none should).
	OverCapacity int64 `json:"overCapacity"`
}

// HourProvider is a provider queue's hour of the day: the scores of the
// sessions begun in it, and its utilisation.
type HourProvider struct {
	ScoreP50 float64 `json:"scoreP50"`
	ScoreP90 float64 `json:"scoreP90"`
	// SlotSeconds is the providers' slot-seconds online in the hour,
	// within the stream's duration; Utilisation the share of them busy.
	SlotSeconds float64 `json:"slotSeconds"`
	Utilisation float64 `json:"utilisation"`
}

// report adds the provider figures to r.
func (a *provAccum) report(r *ConfigReport) {
	pr := &ProviderReport{Offers: a.offers, Declined: a.declined, Withdrawn: a.withdrawn,
		Lapsed: a.dissolved - a.declined - a.withdrawn, SessionsEnded: a.ended, OverCapacity: a.overCapacity}
	var all []float32
	on, busy := 0.0, 0.0
	for hr := range a.hours {
		h := &a.hours[hr]
		slices.Sort(h.scores)
		all = append(all, h.scores...)
		on += h.online
		busy += h.busy
		r.Hours[hr].Provider = &HourProvider{ScoreP50: spreadAt(h.scores, 0.5), ScoreP90: spreadAt(h.scores, 0.9),
			SlotSeconds: round(h.online, 3), Utilisation: ratio(h.busy, h.online)}
	}
	slices.Sort(all)
	pr.ScoreP50, pr.ScoreP90 = spreadAt(all, 0.5), spreadAt(all, 0.9)
	pr.Utilisation = ratio(busy, on)
	r.Provider = pr
}

func ratio(x, of float64) float64 {
	if of == 0 {
		return 0
	}
	return round(x/of, 4)
}
