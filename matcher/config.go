package matcher

import (
	"bytes"
	"errors"
	"fmt"
	"hash/crc32"
	"math"
	"sort"
	"strconv"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/matchgate/matchgate/internal/names"
	"github.com/matchgate/matchgate/provider"
	"github.com/matchgate/matchgate/ranking"
)

// Queue kinds.
const (
	KindSkill = "skill"
	KindRoom  = "room"
	// KindAdmission is a waiting room (package admission): its waiters are
	// admitted at a rate, not matched; nothing of matching applies to it.
	KindAdmission = "admission"
	// KindProvider matches each requester to a provider with a free slot
	// (package provider): one player a match, and a provider seat.
	KindProvider = "provider"
)

// WindowPoint is one step of a window curve: from After on, the half-width is Width.
type WindowPoint struct {
	After time.Duration `yaml:"after"`
	Width float64       `yaml:"width"`
}

// Window is a step function from wait time to skill half-width: the width of
// the last point whose After has passed. Either Points or the formula form
// (Start + Step·⌊wait/Every⌋, capped at Max) is set. As the deadline nears the
// engine stops consulting it (the deadline path ignores the window).
type Window struct {
	Points []WindowPoint
	Start  float64
	Step   float64
	Every  time.Duration
	Max    float64
}

// Width returns the half-width after waiting `wait`.
func (w Window) Width(wait time.Duration) float64 {
	if len(w.Points) > 0 {
		width := w.Points[0].Width
		for _, p := range w.Points {
			if wait >= p.After {
				width = p.Width
			}
		}
		return width
	}
	width := w.Start
	if w.Every > 0 && wait > 0 {
		width += w.Step * math.Floor(float64(wait)/float64(w.Every))
	}
	if w.Max > 0 && width > w.Max {
		width = w.Max
	}
	return width
}

// UnmarshalYAML accepts both forms: a list of {after, width} points, or
// {start, step, every, max}.
func (w *Window) UnmarshalYAML(n *yaml.Node) error {
	switch n.Kind {
	case yaml.SequenceNode:
		var pts []WindowPoint
		if err := n.Decode(&pts); err != nil {
			return err
		}
		*w = Window{Points: pts}
		return nil
	case yaml.MappingNode:
		var f struct {
			Start float64       `yaml:"start"`
			Step  float64       `yaml:"step"`
			Every time.Duration `yaml:"every"`
			Max   float64       `yaml:"max"`
		}
		if err := decodeStrict(n, &f); err != nil {
			return err
		}
		*w = Window{Start: f.Start, Step: f.Step, Every: f.Every, Max: f.Max}
		return nil
	}
	return fmt.Errorf("line %d: window must be a list of {after, width} or {start, step, every, max}", n.Line)
}

func (w Window) validate() error {
	if len(w.Points) > 0 {
		if w.Start != 0 || w.Step != 0 || w.Every != 0 || w.Max != 0 {
			return errors.New("window: points and formula are exclusive")
		}
		for i, p := range w.Points {
			if p.Width < 0 || math.IsNaN(p.Width) || math.IsInf(p.Width, 0) {
				return fmt.Errorf("window point %d: width must be a finite number ≥ 0", i)
			}
			if i > 0 && p.After <= w.Points[i-1].After {
				return fmt.Errorf("window point %d: after must increase", i)
			}
		}
		return nil
	}
	if w.Start < 0 || w.Step < 0 || w.Max < 0 || w.Every < 0 {
		return errors.New("window: start, step, every and max must be ≥ 0")
	}
	if w.Step > 0 && w.Every == 0 {
		return errors.New("window: step needs every")
	}
	return nil
}

// QueueConfig configures one queue. Zero values take the documented default
// (from Defaults, then the built-in value). Its settings are grouped by
// concern in embedded structs whose fields are promoted (q.Players,
// q.AcceptWindow); each group is inlined, so a queue in the file, or in an
// admin API body, is one flat mapping.
type QueueConfig struct {
	Name string `yaml:"name"`
	// Kind is "skill" (default), "room", "admission" or "provider".
	Kind string `yaml:"kind"`
	// Admission names a queue of kind admission in front of this matched
	// queue: a join then takes the user's READY token there, consumed with
	// the join (ARCHITECTURE.md §10). Empty: joins need no token.
	Admission string `yaml:"admission"`

	Seats       `yaml:",inline"`
	SkillRules  `yaml:",inline"`
	Timing      `yaml:",inline"`
	RegionRules `yaml:",inline"`
	AcceptRules `yaml:",inline"`
	Sharding    `yaml:",inline"`
	// Admission applies to kind admission only.
	AdmissionRules `yaml:",inline"`
	// Providers applies to kind provider only.
	ProviderRules `yaml:",inline"`
}

// ProviderRules are a provider queue's (kind provider): how requesters
// are scored against providers, which constraints relax with the wait and
// which terms are shed as the line grows. Its weights are the queue's
// Weights, by term (specialty, rating, load, wait).
type ProviderRules struct {
	// Relax drops a constraint (language, sessionType, minRating,
	// specialty) from a requester who has waited After.
	Relax []provider.Relax `yaml:"relax"`
	// Shed drops terms while more than Above requesters wait.
	Shed []provider.Tier `yaml:"shed"`
	// Assign is "batch" (default: the best total score over each pass's
	// requesters) or "greedy" (oldest first, each its best provider).
	Assign string `yaml:"assign"`
}

// Assignment strategies of a provider queue.
const (
	AssignBatch  = "batch"
	AssignGreedy = "greedy"
)

// Policy is how a provider queue scores: its weights, relax, shed and
// deadline, for the provider package's pure functions.
func (q *QueueConfig) Policy() provider.Policy {
	return provider.Policy{Weights: q.Weights, Relax: q.Relax, Shed: q.Shed, Deadline: q.Deadline}
}

func (p *ProviderRules) inherit(d ProviderRules) {
	if p.Relax == nil {
		p.Relax = d.Relax
	}
	if p.Shed == nil {
		p.Shed = d.Shed
	}
	orDefault(&p.Assign, d.Assign)
}

// Seats is how many players a match takes, and what may fill it short.
type Seats struct {
	// Players is K, the seats of a match including the anchor, 2–10. Default 2.
	Players int `yaml:"players"`
	// MinPlayers is the smallest match the deadline path (and, for rooms, the
	// fallback) may form without bots. Default: Players.
	MinPlayers int `yaml:"minPlayers"`
	// Bots lets the deadline path fill empty seats with bots.
	Bots bool `yaml:"bots"`
	// FallbackAfter (rooms): once the oldest has waited this long, form a
	// FALLBACK match of at least MinPlayers. Default 0 = never.
	FallbackAfter time.Duration `yaml:"fallbackAfter"`
}

// SkillRules is who may play whom in a skill queue, and how much of the
// pool a pass reads to find them.
type SkillRules struct {
	// Window is the skill half-width curve. Default {0s→5, 1m→15, 3m→30}.
	Window *Window `yaml:"window"`
	// Coherence bounds the distance between any two collected players as a
	// multiple of the anchor's window. Default 2: every player is within the
	// window of the anchor, so no two teammates are more than twice the window
	// apart; 1 is the strict variant (every pair within one window).
	Coherence float64 `yaml:"coherence"`
	// EstimatedMinWidth is the smallest window of a player whose skill is
	// estimated. Default 15.
	EstimatedMinWidth float64 `yaml:"estimatedMinWidth"`
	// Weights of the distance: skill (default 1) and activity (default 0).
	Weights map[string]float64 `yaml:"weights"`
	// AnchorDepth is how many of the oldest waiters are tried as anchors per
	// pass, so an outlier at the head never blocks the rest. Default 10.
	AnchorDepth int `yaml:"anchorDepth"`
	// ScanLimit is how many of the players closest in skill to an anchor are
	// read as its candidates (those inside its window count). Default twice
	// the players a match needs, at least 4: every candidate read is a hash
	// read in Redis (four times as many made most of Redis's work at 5,000
	// joins/s), and the closest few are the ones a group takes.
	ScanLimit int `yaml:"scanLimit"`
}

// Timing is the clock of a wait: its bound, the matching pass, ghosts and
// priority.
type Timing struct {
	// Deadline is the hard bound on a wait. Default 5m.
	Deadline time.Duration `yaml:"deadline"`
	// Tick is the period of a matching pass; joins and cancels also wake the
	// engine at once. Default 500ms.
	Tick time.Duration `yaml:"tick"`
	// PassGap is the least time from one pass's start to the next that a
	// wake starts: joins coming faster than that share a pass, and its
	// one commit, instead of a pass each. A backlog's next pass and a
	// tick's are not held back. Default 5ms, at most Tick.
	PassGap time.Duration `yaml:"passGap"`
	// HeartbeatTimeout evicts ghosts. Default 30s.
	HeartbeatTimeout time.Duration `yaml:"heartbeatTimeout"`
	// PriorityCap caps a priority head start. Default 30s.
	PriorityCap time.Duration `yaml:"priorityCap"`
}

// RegionRules is where a queue runs and how long waiters reach across
// regions.
type RegionRules struct {
	// Regions the queue runs in. Default [global].
	Regions []string `yaml:"regions"`
	// Adjacent lists, per region, the regions its long waiters are offered
	// to; OfferAfter is how long a player waits at home before being
	// offered (default 60s when Adjacent is set). The home partition keeps
	// the player, the deadline and the ghost check; see matcher/engine/offers.go.
	Adjacent   map[string][]string `yaml:"adjacent"`
	OfferAfter time.Duration       `yaml:"offerAfter"`
}

// AcceptRules is the accept step between forming a match and allocating it.
type AcceptRules struct {
	// AcceptWindow is the time players have to accept (0 = no accept step).
	AcceptWindow time.Duration `yaml:"acceptWindow"`
	// DeclineCooldown is how long a player who declined a match, or let its
	// accept window pass, may not join this queue again. Default 30s; a
	// negative value disables it.
	DeclineCooldown time.Duration `yaml:"declineCooldown"`
}

// Sharding splits a hot queue's regions into sub-pools.
type Sharding struct {
	// Shards splits each region of a hot queue into that many sub-pools,
	// chosen by hashing the user id, each with its own lease and engine.
	// Default 1 (no split); at most 64.
	Shards int `yaml:"shards"`
	// OverflowAfter (sharded queues): a player who has waited this long is
	// moved, atomically and with their original scores, from their sub-pool
	// into the region's one overflow pool. Default 30s.
	OverflowAfter time.Duration `yaml:"overflowAfter"`
}

// Config is the queue file: global defaults, the queues and the ranking
// boards (package ranking).
type Config struct {
	Defaults QueueConfig     `yaml:"defaults"`
	Queues   []QueueConfig   `yaml:"queues"`
	Rankings []ranking.Board `yaml:"rankings"`
}

// namePattern is what ValidName accepts, as error messages state it.
const namePattern = names.Pattern

// ValidName reports whether s may be a queue or region name: lower-case
// letters, digits, '-' and '_', at most 48 characters. Names end up inside
// Redis keys and metric labels, so nothing else is let through.
func ValidName(s string) bool { return names.Valid(s) }

func decodeStrict(n *yaml.Node, v any) error {
	// yaml.v3 nodes have no KnownFields switch; re-encode and decode strictly.
	b, err := yaml.Marshal(n)
	if err != nil {
		return err
	}
	dec := yaml.NewDecoder(bytes.NewReader(b))
	dec.KnownFields(true)
	return dec.Decode(v)
}

// ParseConfig reads a queue file (YAML), applies defaults and validates it.
// Unknown fields are an error: a typo must not silently fall back to a default.
func ParseConfig(data []byte) (Config, error) {
	var c Config
	dec := yaml.NewDecoder(bytes.NewReader(data))
	dec.KnownFields(true)
	if err := dec.Decode(&c); err != nil {
		return Config{}, fmt.Errorf("parse queue config: %w", err)
	}
	if err := c.Normalize(); err != nil {
		return Config{}, err
	}
	return c, nil
}

// Normalize fills every queue's zero fields from Defaults and the built-in
// defaults, then validates.
func (c *Config) Normalize() error {
	if len(c.Queues) == 0 {
		return errors.New("queue config: no queues")
	}
	seen := map[string]bool{}
	for i := range c.Queues {
		q := &c.Queues[i]
		q.inherit(c.Defaults)
		q.applyBuiltins()
		if err := q.Validate(); err != nil {
			return fmt.Errorf("queue %q: %w", q.Name, err)
		}
		if seen[q.Name] {
			return fmt.Errorf("queue %q: defined twice", q.Name)
		}
		seen[q.Name] = true
	}
	if err := c.checkAdmission(); err != nil {
		return err
	}
	if err := ranking.NormalizeBoards(c.Rankings); err != nil {
		return fmt.Errorf("queue config: %w", err)
	}
	return nil
}

// checkAdmission refuses a queue whose admission names no admission queue
// of the same configuration: its joins could never be admitted.
func (c *Config) checkAdmission() error {
	kinds := make(map[string]string, len(c.Queues))
	for _, q := range c.Queues {
		kinds[q.Name] = q.Kind
	}
	for _, q := range c.Queues {
		if q.Admission == "" {
			continue
		}
		switch kind, ok := kinds[q.Admission]; {
		case !ok:
			return fmt.Errorf("queue %q: admission %q names no queue", q.Name, q.Admission)
		case kind != KindAdmission:
			return fmt.Errorf("queue %q: admission %q is a queue of kind %s, not admission", q.Name, q.Admission, kind)
		}
	}
	return nil
}

// inherit fills q's zero fields from d, concern by concern.
func (q *QueueConfig) inherit(d QueueConfig) {
	orDefault(&q.Kind, d.Kind)
	if q.Matched() {
		// An admission queue stands behind nothing: the defaults' gate is
		// the matched queues'.
		orDefault(&q.Admission, d.Admission)
	}
	q.Seats.inherit(d.Seats)
	ws := q.Weights
	q.SkillRules.inherit(d.SkillRules)
	if q.Kind == KindProvider && d.Kind != KindProvider {
		// The defaults' weights are skill dimensions, not a provider
		// queue's terms.
		q.Weights = ws
	}
	q.Timing.inherit(d.Timing)
	q.RegionRules.inherit(d.RegionRules)
	q.AcceptRules.inherit(d.AcceptRules)
	q.Sharding.inherit(d.Sharding)
	q.AdmissionRules.inherit(d.AdmissionRules)
	if q.Kind == KindProvider {
		q.ProviderRules.inherit(d.ProviderRules)
	}
}

// AdmissionRules are an admission queue's (kind admission).
type AdmissionRules struct {
	// Rate is the admissions per second of the queue as a whole, however
	// many processes run; 1–1,000,000.
	Rate int `yaml:"rate"`
	// TokenTTL is a READY token's life. Default 5m.
	TokenTTL time.Duration `yaml:"tokenTTL"`
	// AbandonAfter: a waiter with no socket and no poll for this long loses
	// the place. Default 60s.
	AbandonAfter time.Duration `yaml:"abandonAfter"`
}

func (a *AdmissionRules) inherit(d AdmissionRules) {
	orDefault(&a.Rate, d.Rate)
	orDefault(&a.TokenTTL, d.TokenTTL)
	orDefault(&a.AbandonAfter, d.AbandonAfter)
}

// Matched reports whether q's waiters are matched by the engine (skill
// and room), not admitted (admission).
func (q *QueueConfig) Matched() bool { return q.Kind != KindAdmission }

// orDefault sets *v to d if *v is the zero value.
func orDefault[T comparable](v *T, d T) {
	var zero T
	if *v == zero {
		*v = d
	}
}

func (s *Seats) inherit(d Seats) {
	orDefault(&s.Players, d.Players)
	orDefault(&s.MinPlayers, d.MinPlayers)
	orDefault(&s.FallbackAfter, d.FallbackAfter)
	s.Bots = s.Bots || d.Bots
}

func (s *SkillRules) inherit(d SkillRules) {
	orDefault(&s.Window, d.Window)
	orDefault(&s.Coherence, d.Coherence)
	orDefault(&s.EstimatedMinWidth, d.EstimatedMinWidth)
	orDefault(&s.AnchorDepth, d.AnchorDepth)
	orDefault(&s.ScanLimit, d.ScanLimit)
	if s.Weights == nil {
		s.Weights = d.Weights
	}
}

func (t *Timing) inherit(d Timing) {
	orDefault(&t.Deadline, d.Deadline)
	orDefault(&t.Tick, d.Tick)
	orDefault(&t.PassGap, d.PassGap)
	orDefault(&t.HeartbeatTimeout, d.HeartbeatTimeout)
	orDefault(&t.PriorityCap, d.PriorityCap)
}

func (r *RegionRules) inherit(d RegionRules) {
	if len(r.Regions) == 0 {
		r.Regions = d.Regions
	}
	if r.Adjacent == nil {
		r.Adjacent = d.Adjacent
	}
	orDefault(&r.OfferAfter, d.OfferAfter)
}

func (a *AcceptRules) inherit(d AcceptRules) {
	orDefault(&a.AcceptWindow, d.AcceptWindow)
	orDefault(&a.DeclineCooldown, d.DeclineCooldown)
}

func (s *Sharding) inherit(d Sharding) {
	orDefault(&s.Shards, d.Shards)
	orDefault(&s.OverflowAfter, d.OverflowAfter)
}

// defaultHeartbeatTimeout is a queue's heartbeat timeout unless it sets one.
const defaultHeartbeatTimeout = 30 * time.Second

// HeartbeatTimeoutOf is q's heartbeat timeout, the default for a nil q.
func HeartbeatTimeoutOf(q *QueueConfig) time.Duration {
	if q == nil {
		return defaultHeartbeatTimeout
	}
	return q.HeartbeatTimeout
}

func (q *QueueConfig) applyBuiltins() {
	q.inherit(QueueConfig{
		Kind:        KindSkill,
		Seats:       Seats{Players: 2},
		SkillRules:  SkillRules{AnchorDepth: 10, EstimatedMinWidth: 15, Coherence: 2, Window: &Window{Points: []WindowPoint{{0, 5}, {time.Minute, 15}, {3 * time.Minute, 30}}}},
		Timing:      Timing{Deadline: 5 * time.Minute, Tick: 500 * time.Millisecond, PassGap: 5 * time.Millisecond, HeartbeatTimeout: defaultHeartbeatTimeout, PriorityCap: 30 * time.Second},
		RegionRules: RegionRules{Regions: []string{"global"}},
		AcceptRules: AcceptRules{DeclineCooldown: 30 * time.Second},
		Sharding:    Sharding{Shards: 1, OverflowAfter: 30 * time.Second},
	})
	if q.MinPlayers == 0 {
		q.MinPlayers = q.Players
	}
	if q.ScanLimit == 0 {
		q.ScanLimit = max(4, 2*q.Players)
	}
	if len(q.Adjacent) > 0 && q.OfferAfter == 0 {
		q.OfferAfter = time.Minute
	}
	sort.Strings(q.Regions)
	if q.Kind == KindProvider {
		// One requester a match; the provider is the other side.
		q.Players, q.MinPlayers = 1, 1
		orDefault(&q.Assign, AssignBatch)
	}
	if q.Kind == KindAdmission {
		orDefault(&q.TokenTTL, 5*time.Minute)
		orDefault(&q.AbandonAfter, 60*time.Second)
	}
}

// Validate checks a normalized queue.
func (q *QueueConfig) Validate() error {
	var errs []string
	if !ValidName(q.Name) {
		errs = append(errs, "name must match "+namePattern)
	}
	if q.Kind != KindProvider && (q.Relax != nil || q.Shed != nil || q.Assign != "") {
		errs = append(errs, "relax, shed and assign are for kind provider")
	}
	switch q.Kind {
	case KindSkill, KindRoom, KindProvider:
		if q.AdmissionRules != (AdmissionRules{}) {
			errs = append(errs, "rate, tokenTTL and abandonAfter are for kind admission")
		}
		if q.Admission != "" && !ValidName(q.Admission) {
			errs = append(errs, "admission must name a queue of kind admission")
		}
	case KindAdmission:
		if q.Admission != "" {
			errs = append(errs, "admission is for matched queues (skill, room): an admission queue stands behind no other")
		}
		if q.Rate < 1 || q.Rate > 1_000_000 {
			errs = append(errs, "rate must be 1–1000000 admissions a second")
		}
		if q.TokenTTL < time.Second {
			errs = append(errs, "tokenTTL must be at least 1s")
		}
		if q.AbandonAfter != 0 && q.AbandonAfter < 10*time.Second {
			errs = append(errs, "abandonAfter must be at least 10s (the gateways touch the waiters holding a socket every 3s)")
		}
	default:
		errs = append(errs, "kind must be skill, room, admission or provider")
	}
	if q.Kind == KindProvider {
		errs = append(errs, q.validateProvider()...)
	} else if q.Players < 2 || q.Players > 10 {
		errs = append(errs, "players must be 2–10")
	}
	if q.MinPlayers < 1 || q.MinPlayers > q.Players {
		errs = append(errs, "minPlayers must be 1–players")
	}
	if q.Deadline < time.Second {
		errs = append(errs, "deadline must be at least 1s")
	}
	if q.Tick < 10*time.Millisecond {
		errs = append(errs, "tick must be at least 10ms")
	}
	if q.PassGap < 0 || q.PassGap > q.Tick {
		errs = append(errs, "passGap must be 0–tick")
	}
	if q.AnchorDepth < 1 || q.AnchorDepth > 1000 {
		errs = append(errs, "anchorDepth must be 1–1000")
	}
	if q.Coherence < 0 {
		errs = append(errs, "coherence must be ≥ 0")
	}
	if q.FallbackAfter < 0 || q.AcceptWindow < 0 || q.PriorityCap < 0 || q.OfferAfter < 0 || q.OverflowAfter < 0 {
		errs = append(errs, "durations must be ≥ 0")
	}
	if q.Shards < 1 || q.Shards > 64 {
		errs = append(errs, "shards must be 1–64")
	}
	for from, tos := range q.Adjacent {
		if !q.HasRegion(from) {
			errs = append(errs, fmt.Sprintf("adjacent: %q is not a region of the queue", from))
		}
		for _, to := range tos {
			if !q.HasRegion(to) || to == from {
				errs = append(errs, fmt.Sprintf("adjacent: %s → %q must name another region of the queue", from, to))
			}
		}
	}
	if q.Window != nil {
		if err := q.Window.validate(); err != nil {
			errs = append(errs, err.Error())
		}
	}
	for _, r := range q.Regions {
		if !ValidName(r) {
			errs = append(errs, fmt.Sprintf("region %q must match %s", r, namePattern))
		}
	}
	for k, w := range q.Weights {
		if q.Kind == KindProvider {
			continue // validateProvider
		}
		if k != "skill" && k != "activity" {
			errs = append(errs, fmt.Sprintf("weights: unknown dimension %q (skill, activity)", k))
		}
		if w < 0 || math.IsNaN(w) || math.IsInf(w, 0) {
			errs = append(errs, fmt.Sprintf("weights: %s must be a finite number ≥ 0", k))
		}
	}
	if len(errs) > 0 {
		return errors.New(strings.Join(errs, "; "))
	}
	return nil
}

// validateProvider checks what a provider queue adds and refuses what
// does not apply to it.
func (q *QueueConfig) validateProvider() []string {
	var errs []string
	if err := q.Policy().Validate(); err != nil {
		errs = append(errs, err.Error())
	}
	if q.Assign != AssignBatch && q.Assign != AssignGreedy {
		errs = append(errs, "assign must be batch or greedy")
	}
	if q.Bots || q.FallbackAfter != 0 {
		errs = append(errs, "bots and fallbackAfter do not apply to kind provider")
	}
	if q.Shards > 1 || len(q.Adjacent) > 0 {
		errs = append(errs, "shards and adjacent do not apply to kind provider: every requester of a region sees every provider")
	}
	return errs
}

// HasRegion reports whether the queue runs in region r.
func (q *QueueConfig) HasRegion(r string) bool {
	for _, x := range q.Regions {
		if x == r {
			return true
		}
	}
	return false
}

// Sharded reports whether the queue's regions are split into sub-pools.
func (q *QueueConfig) Sharded() bool { return q.Shards > 1 }

// PoolOf is the pool a user's new ticket in region joins: the (queue,
// region), or for a sharded queue the sub-pool "s<crc32(user) mod shards>".
func (q *QueueConfig) PoolOf(userID, region string) Partition {
	p := Partition{Queue: q.Name, Region: region}
	if q.Sharded() {
		p.Shard = "s" + strconv.Itoa(int(crc32.ChecksumIEEE([]byte(userID))%uint32(q.Shards)))
	}
	return p
}

// Pools lists every pool of one region: the (queue, region) itself, or
// its sub-pools followed by the overflow pool. A sharded queue's ticket is
// in its own sub-pool or in the overflow pool, never in both.
func (q *QueueConfig) Pools(region string) []Partition {
	base := Partition{Queue: q.Name, Region: region}
	if !q.Sharded() {
		return []Partition{base}
	}
	out := make([]Partition, 0, q.Shards+1)
	for i := range q.Shards {
		out = append(out, Partition{Queue: q.Name, Region: region, Shard: "s" + strconv.Itoa(i)})
	}
	return append(out, Partition{Queue: q.Name, Region: region, Shard: OverflowShard})
}

// Weight returns a distance weight with its default.
func (q *QueueConfig) Weight(dim string) float64 {
	if w, ok := q.Weights[dim]; ok {
		return w
	}
	if dim == "skill" {
		return 1
	}
	return 0
}

// DemoConfig is the built-in queue set used when no --config is given: a
// pairs queue, a 4-player ranked queue with a formula window, topic rooms
// of 2–3 with the 60 s fallback, a provider queue, and a ranking board of
// the queues' own activity (trending).
func DemoConfig() Config {
	c := Config{Queues: []QueueConfig{
		{Name: "duel", Kind: KindSkill, Seats: Seats{Players: 2, Bots: true}, SkillRules: SkillRules{Window: &Window{Points: []WindowPoint{{0, 100}, {10 * time.Second, 250}, {30 * time.Second, 600}}}}, Timing: Timing{Deadline: 2 * time.Minute}},
		{Name: "ranked", Kind: KindSkill, Seats: Seats{Players: 4, MinPlayers: 2}, SkillRules: SkillRules{Window: &Window{Start: 50, Step: 25, Every: 5 * time.Second, Max: 400}}, RegionRules: RegionRules{Regions: []string{"eu", "na"}}},
		{Name: "chat-topic-42", Kind: KindRoom, Seats: Seats{Players: 3, MinPlayers: 2, FallbackAfter: 60 * time.Second}},
		{Name: "chat-pairs", Kind: KindRoom, Seats: Seats{Players: 2}},
		{Name: "advice", Kind: KindProvider, AcceptRules: AcceptRules{AcceptWindow: 15 * time.Second},
			SkillRules:    SkillRules{Weights: map[string]float64{"specialty": 2, "rating": 1, "load": 1, "wait": 1}},
			ProviderRules: ProviderRules{Relax: []provider.Relax{{After: 20 * time.Second, Drop: provider.ConstraintSpecialty}, {After: time.Minute, Drop: provider.ConstraintMinRating}}},
			Timing:        Timing{Deadline: 3 * time.Minute}},
	}}
	c.Rankings = []ranking.Board{{
		Name: "trending", Source: ranking.SourceMatchmaking,
		Metrics: map[string]ranking.Metric{"joins": {Weight: 1}, "matches": {Weight: 3}, "cancels": {Weight: -1}},
		Windows: []ranking.Window{ranking.WindowHour, ranking.WindowDay}, Top: 10, Refresh: 5 * time.Second,
	}}
	if err := c.Normalize(); err != nil {
		panic("demo config: " + err.Error()) // a programming error, caught by tests
	}
	return c
}

// Partitions lists every pool of the configuration: each (queue, region),
// split into its sub-pools and overflow pool for a sharded queue. Each is
// leased and matched on its own.
func (c Config) Partitions() []Partition {
	var ps []Partition
	for i := range c.Queues {
		q := &c.Queues[i]
		if !q.Matched() {
			continue
		}
		for _, r := range q.Regions {
			ps = append(ps, q.Pools(r)...)
		}
	}
	return ps
}
