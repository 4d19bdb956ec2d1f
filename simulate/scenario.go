package simulate

import (
	"bytes"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"sort"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/matchgate/matchgate/matcher"
)

// Scenario is one simulation: an arrival stream and the queue configs that
// are compared on it (docs/SIMULATE.md describes the file).
type Scenario struct {
	// Seed draws the stream and the players' behaviour; the same scenario
	// and seed give the same report byte for byte.
	Seed uint64 `yaml:"seed"`
	// Start is the virtual instant the stream begins. Default
	// 2026-01-01T00:00:00Z, a midnight, so that hours of the stream are
	// hours of the day; with Arrivals.File, the first record's instant.
	Start time.Time `yaml:"start"`
	// Duration is how long joins arrive. Required.
	Duration time.Duration `yaml:"duration"`
	Arrivals Arrivals      `yaml:"arrivals"`
	Skill    Normal        `yaml:"skill"`
	// Regions is the share of joins from each region (weights, normalized).
	// Empty: every join goes to the queue's only region.
	Regions map[string]float64 `yaml:"regions"`
	Cancel  Cancel             `yaml:"cancel"`
	// Accept is how players answer a match of a queue with an accept window.
	Accept Accept `yaml:"accept"`
	// Wake is how long after a join (or a decline) its partition's engine
	// passes, as a server's engine passes at once when woken: the wakes
	// that come meanwhile collapse into that pass, as they do while a
	// server's pass runs. Default 10ms; "off": passes only every Tick.
	Wake Wake `yaml:"wake"`
	// Defaults are queue settings every config inherits (the queue file's
	// defaults).
	Defaults matcher.QueueConfig `yaml:"defaults"`
	Configs  []Config            `yaml:"configs"`
	// Providers and Requesters are the two sides of a provider queue
	// (providers.go); a provider queue's config needs Providers.
	Providers  *Providers `yaml:"providers"`
	Requesters Requesters `yaml:"requesters"`

	dir      string // the scenario file's directory: arrivals.file is relative to it
	recorded bool   // Arrivals.List was read from Arrivals.File
}

// Arrivals is the rate of joins through the day.
type Arrivals struct {
	// Rate is joins per second at multiplier 1.
	Rate float64 `yaml:"rate"`
	// Shape is the multiplier of each hour of the day: "flat" (default),
	// "day" (a named curve whose mean is 1), or a list of 24 numbers.
	Shape Shape `yaml:"shape"`
	// List, instead of a rate, is every join of the stream, in time order.
	List []Join `yaml:"list"`
	// File, instead of a rate or a list, is a recorded stream (see
	// Recorded), read into List.
	File string `yaml:"file"`
}

// Join is one join of a listed stream. Its player's cancel and answer to
// an accept window are drawn as for a generated join.
type Join struct {
	// At is the join's time from the start.
	At     time.Duration `yaml:"at"`
	User   string        `yaml:"user"`
	Skill  float64       `yaml:"skill"`
	Region string        `yaml:"region"`
	// told is what a recorded stream says the player did (nil for a
	// listed join: the scenario's cancel and accept sections decide).
	told *toldBehaviour
}

// toldBehaviour is a recorded join's behaviour, as far as the record
// tells it: whether and when the player cancelled, and their answer to an
// accept window when known (replyKnown), with its delay when known.
type toldBehaviour struct {
	cancelAfter            time.Duration // 0: did not cancel while waiting
	replyKnown, afterKnown bool
	reply                  reply
	replyAfter             time.Duration
}

// Shape is 24 hourly multipliers of the rate.
type Shape [24]float64

// dayShape is the named "day" curve: quiet before dawn, a peak in the
// evening, scaled below so that its mean is 1.
var dayShape = [24]float64{0.45, 0.35, 0.28, 0.24, 0.22, 0.25, 0.35, 0.5, 0.65, 0.75, 0.85, 0.95,
	1.05, 1.1, 1.1, 1.15, 1.25, 1.45, 1.7, 1.9, 2.0, 1.85, 1.4, 0.8}

// namedShape returns a named shape.
func namedShape(name string) (Shape, bool) {
	var s Shape
	switch name {
	case "", "flat":
		for i := range s {
			s[i] = 1
		}
	case "day":
		sum := 0.0
		for _, v := range dayShape {
			sum += v
		}
		for i, v := range dayShape {
			s[i] = v * 24 / sum
		}
	default:
		return s, false
	}
	return s, true
}

// UnmarshalYAML takes a name or a list of 24 multipliers.
func (s *Shape) UnmarshalYAML(n *yaml.Node) error {
	switch n.Kind {
	case yaml.ScalarNode:
		sh, ok := namedShape(n.Value)
		if !ok {
			return fmt.Errorf("line %d: shape %q: want flat, day or 24 numbers", n.Line, n.Value)
		}
		*s = sh
		return nil
	case yaml.SequenceNode:
		var xs []float64
		if err := n.Decode(&xs); err != nil {
			return err
		}
		if len(xs) != 24 {
			return fmt.Errorf("line %d: shape has %d multipliers, want 24 (one an hour)", n.Line, len(xs))
		}
		copy(s[:], xs)
		return nil
	}
	return fmt.Errorf("line %d: shape: want a name or a list", n.Line)
}

// Wake is the delay of a pass after a wake, or off.
type Wake struct {
	Delay time.Duration
	Off   bool
	set   bool
}

// defaultWake is a pass's wake delay unless the scenario sets one: about
// a pass's time on a busy server.
const defaultWake = 10 * time.Millisecond

// UnmarshalYAML takes a duration or "off".
func (w *Wake) UnmarshalYAML(n *yaml.Node) error {
	if n.Kind == yaml.ScalarNode && n.Value == "off" {
		*w = Wake{Off: true, set: true}
		return nil
	}
	var d time.Duration
	if err := n.Decode(&d); err != nil {
		return fmt.Errorf("line %d: wake: a duration or off", n.Line)
	}
	*w = Wake{Delay: d, set: true}
	return nil
}

// Normal is a normal distribution of skill.
type Normal struct {
	Mean float64 `yaml:"mean"`
	SD   float64 `yaml:"sd"`
}

// Dist is a distribution of durations: {exponential: 40s},
// {uniform: [1s, 8s]} or {fixed: 5s}.
type Dist struct {
	Exponential time.Duration   `yaml:"exponential"`
	Uniform     []time.Duration `yaml:"uniform"`
	Fixed       time.Duration   `yaml:"fixed"`
}

func (d Dist) set() int {
	n := 0
	if d.Exponential != 0 {
		n++
	}
	if d.Uniform != nil {
		n++
	}
	if d.Fixed != 0 {
		n++
	}
	return n
}

func (d Dist) validate(what string) error {
	switch {
	case d.set() != 1:
		return fmt.Errorf("%s: give exactly one of exponential, uniform, fixed", what)
	case d.Exponential < 0 || d.Fixed < 0:
		return fmt.Errorf("%s: durations must be ≥ 0", what)
	case d.Uniform != nil && (len(d.Uniform) != 2 || d.Uniform[0] < 0 || d.Uniform[1] < d.Uniform[0]):
		return fmt.Errorf("%s: uniform is [min, max] with 0 ≤ min ≤ max", what)
	}
	return nil
}

// draw is one duration of d, in whole milliseconds.
func (d Dist) draw(rng *rand.Rand) time.Duration {
	var x float64
	switch {
	case d.Exponential > 0:
		x = rng.ExpFloat64() * float64(d.Exponential)
	case d.Uniform != nil:
		x = float64(d.Uniform[0]) + rng.Float64()*float64(d.Uniform[1]-d.Uniform[0])
	default:
		x = float64(d.Fixed)
	}
	return time.Duration(x).Truncate(time.Millisecond)
}

// Cancel is the share of joins cancelled by their player, and when.
type Cancel struct {
	Fraction float64 `yaml:"fraction"`
	After    Dist    `yaml:"after"`
}

// Accept is how players answer a match with an accept window: the
// fractions that accept, decline or stay silent (normalized), and how long
// an answer takes.
type Accept struct {
	Accept  float64 `yaml:"accept"`
	Decline float64 `yaml:"decline"`
	Silence float64 `yaml:"silence"`
	After   Dist    `yaml:"after"`
}

// Config is one queue configuration to compare: a queue of the queue file.
type Config struct {
	Name  string              `yaml:"name"`
	Queue matcher.QueueConfig `yaml:"queue"`
}

// defaultStart is a midnight, so that hours of the stream are hours of
// the day.
var defaultStart = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

// ReadScenario reads a scenario file.
func ReadScenario(path string) (*Scenario, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("read scenario: %w", err)
	}
	sc, err := parseScenario(b, filepath.Dir(path))
	if err != nil {
		return nil, fmt.Errorf("scenario %s: %w", path, err)
	}
	return sc, nil
}

// ParseScenario reads a scenario (YAML), strictly: an unknown field is an
// error, as in the queue file. Its queue configs are normalized.
func ParseScenario(data []byte) (*Scenario, error) { return parseScenario(data, "") }

// parseScenario is ParseScenario with arrivals.file relative to dir.
func parseScenario(data []byte, dir string) (*Scenario, error) {
	sc := Scenario{dir: dir}
	dec := yaml.NewDecoder(bytes.NewReader(data))
	dec.KnownFields(true)
	if err := dec.Decode(&sc); err != nil {
		return nil, fmt.Errorf("parse scenario: %w", err)
	}
	if err := sc.Normalize(); err != nil {
		return nil, err
	}
	return &sc, nil
}

// Normalize fills defaults, normalizes each queue config as the queue file
// does and validates the whole.
func (sc *Scenario) Normalize() error {
	if err := sc.loadRecorded(); err != nil {
		return err
	}
	var errs []error
	if sc.Start.IsZero() {
		sc.Start = defaultStart
	}
	sc.Start = sc.Start.UTC()
	if sc.Arrivals.Shape == (Shape{}) {
		sc.Arrivals.Shape, _ = namedShape("flat")
	}
	if !sc.Wake.set && sc.Wake == (Wake{}) {
		// Unset in the file, or a zero Wake from Go: the default.
		sc.Wake = Wake{Delay: defaultWake}
	}
	sc.Wake.set = true
	if sc.Wake.Delay < 0 {
		errs = append(errs, errors.New("wake: must be ≥ 0, or off"))
	}
	if l := sc.Arrivals.List; len(l) > 0 && sc.Duration == 0 {
		sc.Duration = l[len(l)-1].At + time.Millisecond
	}
	if sc.Duration <= 0 {
		errs = append(errs, errors.New("duration must be > 0"))
	}
	if len(sc.Arrivals.List) > 0 {
		if sc.Arrivals.Rate != 0 {
			errs = append(errs, errors.New("arrivals: a rate or a list, not both"))
		}
		users := map[string]bool{}
		for i, j := range sc.Arrivals.List {
			switch {
			case j.At < 0 || (i > 0 && j.At < sc.Arrivals.List[i-1].At):
				errs = append(errs, fmt.Errorf("arrivals: list[%d]: at must be ≥ 0 and in order", i))
			case j.At >= sc.Duration:
				errs = append(errs, fmt.Errorf("arrivals: list[%d]: at %v is past the duration", i, j.At))
			case j.User == "" || users[j.User]:
				errs = append(errs, fmt.Errorf("arrivals: list[%d]: user must be set and unique", i))
			case math.IsNaN(j.Skill) || math.IsInf(j.Skill, 0):
				errs = append(errs, fmt.Errorf("arrivals: list[%d]: skill must be finite", i))
			}
			users[j.User] = true
		}
	} else if !(sc.Arrivals.Rate > 0) || math.IsInf(sc.Arrivals.Rate, 0) {
		errs = append(errs, errors.New("arrivals: rate must be > 0 joins/s"))
	}
	for h, m := range sc.Arrivals.Shape {
		if !(m >= 0) || math.IsInf(m, 0) {
			errs = append(errs, fmt.Errorf("arrivals: shape: hour %d: multiplier must be ≥ 0", h))
		}
	}
	if !(sc.Skill.SD >= 0) || math.IsNaN(sc.Skill.Mean) || math.IsInf(sc.Skill.Mean, 0) || math.IsInf(sc.Skill.SD, 0) {
		errs = append(errs, errors.New("skill: mean must be finite and sd ≥ 0"))
	}
	sum := 0.0
	for r, w := range sc.Regions {
		if !(w >= 0) || math.IsInf(w, 0) {
			errs = append(errs, fmt.Errorf("regions: %s: weight must be ≥ 0", r))
		}
		sum += w
	}
	if len(sc.Regions) > 0 && !(sum > 0) {
		errs = append(errs, errors.New("regions: weights sum to 0"))
	}
	if c := sc.Cancel; c.Fraction < 0 || c.Fraction > 1 {
		errs = append(errs, errors.New("cancel: fraction must be in [0, 1]"))
	} else if c.Fraction > 0 {
		if err := c.After.validate("cancel: after"); err != nil {
			errs = append(errs, err)
		}
	}
	a := sc.Accept
	if a.Accept < 0 || a.Decline < 0 || a.Silence < 0 {
		errs = append(errs, errors.New("accept: fractions must be ≥ 0"))
	}
	if a.Accept+a.Decline+a.Silence == 0 {
		sc.Accept.Accept = 1 // everyone accepts
	}
	if a.After.set() == 0 {
		sc.Accept.After = Dist{Fixed: time.Second}
	} else if err := a.After.validate("accept: after"); err != nil {
		errs = append(errs, err)
	}
	errs = append(errs, sc.normalizeProviders()...)
	if len(sc.Configs) == 0 {
		errs = append(errs, errors.New("configs: none to simulate"))
	}
	seen := map[string]bool{}
	for i := range sc.Configs {
		if err := sc.normalizeConfig(&sc.Configs[i]); err != nil {
			errs = append(errs, fmt.Errorf("configs[%d] %s: %w", i, sc.Configs[i].Name, err))
		}
		if seen[sc.Configs[i].Name] {
			errs = append(errs, fmt.Errorf("configs[%d]: name %q used twice", i, sc.Configs[i].Name))
		}
		seen[sc.Configs[i].Name] = true
	}
	return errors.Join(errs...)
}

// normalizeConfig normalizes one config's queue as the queue file does,
// and refuses what the simulator does not run yet.
func (sc *Scenario) normalizeConfig(c *Config) error {
	if !matcher.ValidName(c.Name) {
		return fmt.Errorf("name %q: lower-case letters, digits, '-' and '_'", c.Name)
	}
	if c.Queue.Name == "" {
		c.Queue.Name = c.Name
	}
	qc := matcher.Config{Defaults: sc.Defaults, Queues: []matcher.QueueConfig{c.Queue}}
	if err := qc.Normalize(); err != nil {
		return err
	}
	q := qc.Queues[0]
	switch {
	case q.Kind == matcher.KindProvider && sc.Providers == nil:
		return errors.New("a provider queue needs the scenario's providers")
	case !q.Matched():
		return errors.New("admission queues are not simulated")
	case q.Admission != "":
		return errors.New("a queue behind an admission queue is not simulated yet")
	}
	for r := range sc.Regions {
		if sc.Regions[r] > 0 && !q.HasRegion(r) {
			return fmt.Errorf("the scenario sends joins to region %q, which the queue does not run in (%v)", r, q.Regions)
		}
	}
	if len(sc.Regions) == 0 && len(q.Regions) != 1 {
		return fmt.Errorf("the queue runs in %d regions: give the scenario's regions", len(q.Regions))
	}
	c.Queue = q
	return nil
}

// regionPicker draws a region by the scenario's weights, in name order so
// that a draw does not depend on map order.
type regionPicker struct {
	names []string
	cum   []float64
}

func newRegionPicker(regions map[string]float64) regionPicker {
	var p regionPicker
	for r, w := range regions {
		if w > 0 {
			p.names = append(p.names, r)
		}
	}
	sort.Strings(p.names)
	sum := 0.0
	for _, r := range p.names {
		sum += regions[r]
		p.cum = append(p.cum, sum)
	}
	for i := range p.cum {
		p.cum[i] /= sum
	}
	return p
}

// pick draws a region; "" when the scenario names none.
func (p regionPicker) pick(rng *rand.Rand) string {
	if len(p.names) == 0 {
		return ""
	}
	if len(p.names) == 1 {
		return p.names[0]
	}
	u := rng.Float64()
	for i, c := range p.cum {
		if u < c {
			return p.names[i]
		}
	}
	return p.names[len(p.names)-1]
}
