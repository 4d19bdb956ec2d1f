package ranking

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"time"

	"github.com/matchgate/matchgate/internal/names"
)

// MatchmakingMetrics are the metrics a matchmaking board may weigh: what
// the record of tickets and matches tells of a queue.
var MatchmakingMetrics = []string{"joins", "matches", "cancels"}

// Windows are the known windows, shortest first: the default of a board
// that names none.
var Windows = []Window{WindowHour, WindowDay, WindowWeek}

// Defaults and bounds of a board.
const (
	DefaultTop     = 100
	MaxTop         = 10000
	DefaultRefresh = time.Minute
	MinRefresh     = time.Second
	MaxMetrics     = 32

	// PartCarry is the key of the carry's contribution in a score's parts;
	// no metric may take that name.
	PartCarry = "carry"
)

// Valid reports whether w is one of the known windows.
func (w Window) Valid() bool { return slices.Contains(Windows, w) }

// ValidBoardName reports whether s may name a board: the rule of queue
// names (^[a-z0-9][a-z0-9_-]{0,47}$), since a name ends up in Redis keys,
// URLs and metric labels.
func ValidBoardName(s string) bool { return names.Valid(s) }

// ValidMetricName reports whether s may name a metric:
// ^[a-z][a-z0-9_]{0,31}$.
func ValidMetricName(s string) bool {
	if s == "" || len(s) > 32 || s[0] < 'a' || s[0] > 'z' {
		return false
	}
	for i := 1; i < len(s); i++ {
		switch c := s[i]; {
		case 'a' <= c && c <= 'z', '0' <= c && c <= '9', c == '_':
		default:
			return false
		}
	}
	return true
}

// CheckMetrics validates a board's metrics for source: 1 to 32 of them,
// named by ValidMetricName and not PartCarry, finite weights (negative
// ones allowed: a cancel may lower a score), a known transform, and for a
// matchmaking board only MatchmakingMetrics. The admin API's weights go
// through it too.
func CheckMetrics(source string, ms map[string]Metric) error {
	if len(ms) == 0 || len(ms) > MaxMetrics {
		return fmt.Errorf("metrics: want 1 to %d, have %d", MaxMetrics, len(ms))
	}
	// Sorted, so the first error reported is the same on every run.
	for _, name := range sortedNames(ms) {
		m := ms[name]
		switch {
		case !ValidMetricName(name):
			return fmt.Errorf("metric %q: name must match ^[a-z][a-z0-9_]{0,31}$", name)
		case name == PartCarry:
			return fmt.Errorf("metric %q: reserved for the carry's part", name)
		case source == SourceMatchmaking && !slices.Contains(MatchmakingMetrics, name):
			return fmt.Errorf("metric %q: a matchmaking board counts only %v", name, MatchmakingMetrics)
		case math.IsNaN(m.Weight) || math.IsInf(m.Weight, 0):
			return fmt.Errorf("metric %q: weight must be a finite number", name)
		case m.Transform != TransformNone && m.Transform != TransformLog1p:
			return fmt.Errorf("metric %q: transform %q unknown (want \"\" or %q)", name, m.Transform, TransformLog1p)
		}
	}
	return nil
}

// Normalize fills b's zero fields with their defaults (all three windows,
// Top 100, Refresh 1m) and validates it. Carry applies to the day window
// (the Top of one UTC day seeds the next), so a board with a carry must
// rank days.
func (b *Board) Normalize() error {
	if !ValidBoardName(b.Name) {
		return fmt.Errorf("board %q: name must match ^[a-z0-9][a-z0-9_-]{0,47}$", b.Name)
	}
	if err := b.normalize(); err != nil {
		return fmt.Errorf("board %q: %w", b.Name, err)
	}
	return nil
}

func (b *Board) normalize() error {
	switch b.Source {
	case SourceMatchmaking, SourceEvents:
	case "":
		return fmt.Errorf("source required (%s or %s)", SourceMatchmaking, SourceEvents)
	default:
		return fmt.Errorf("source %q unknown (want %s or %s)", b.Source, SourceMatchmaking, SourceEvents)
	}
	if err := CheckMetrics(b.Source, b.Metrics); err != nil {
		return err
	}
	if len(b.Windows) == 0 {
		b.Windows = slices.Clone(Windows)
	}
	for i, w := range b.Windows {
		if !w.Valid() {
			return fmt.Errorf("window %q unknown (want one of %v)", w, Windows)
		}
		if slices.Contains(b.Windows[:i], w) {
			return fmt.Errorf("window %q listed twice", w)
		}
	}
	if b.Top == 0 {
		b.Top = DefaultTop
	}
	if b.Top < 1 || b.Top > MaxTop {
		return fmt.Errorf("top %d: want 1 to %d", b.Top, MaxTop)
	}
	if b.Carry.Top < 0 || b.Carry.Top > b.Top {
		return fmt.Errorf("carry.top %d: want 0 (no carry) to top (%d)", b.Carry.Top, b.Top)
	}
	if !(b.Carry.Fraction >= 0 && b.Carry.Fraction <= 1) { // NaN fails too
		return fmt.Errorf("carry.fraction %v: want a number in [0, 1]", b.Carry.Fraction)
	}
	if b.Carry.Top > 0 && !slices.Contains(b.Windows, WindowDay) {
		return errors.New("carry: a day's Top seeds the next day, so windows must include day")
	}
	if b.Refresh == 0 {
		b.Refresh = DefaultRefresh
	}
	if b.Refresh < MinRefresh {
		return fmt.Errorf("refresh %v: want at least %v", b.Refresh, MinRefresh)
	}
	return nil
}

// NormalizeBoards normalizes every board and refuses a name used twice.
func NormalizeBoards(bs []Board) error {
	seen := make(map[string]bool, len(bs))
	for i := range bs {
		if err := bs[i].Normalize(); err != nil {
			return err
		}
		if seen[bs[i].Name] {
			return fmt.Errorf("board %q: defined twice", bs[i].Name)
		}
		seen[bs[i].Name] = true
	}
	return nil
}

// Ranks reports whether b ranks window w.
func (b *Board) Ranks(w Window) bool { return slices.Contains(b.Windows, w) }

// Retention is how long b's hour buckets and event ids are kept: twice
// its longest window, so the previous period of every window it ranks is
// whole until the current one ends (the previous period starts at most
// two spans before now) — 2 hours for hours only, 2 days when days are
// ranked (the day a carry is taken from), 14 days when weeks are.
// Ranking the previous day with its own carry reaches one day further,
// beyond the retention: that carry is computed from what is left
// (carry.go).
func (b *Board) Retention() time.Duration {
	switch {
	case b.Ranks(WindowWeek):
		return 14 * 24 * time.Hour
	case b.Ranks(WindowDay):
		return 2 * 24 * time.Hour
	default:
		return 2 * time.Hour
	}
}
