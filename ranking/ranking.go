// Package ranking is the domain of rankings (boards): metrics per item per
// hour as the record, scores that weights turn them into, hour/day/week
// windows summed from the hourly buckets, a Top N per window and period,
// and the carry-over of a day's Top into the next. It holds the
// vocabulary and the pure functions (scoring, periods, ranks, carry); the
// record lives in ranking/record, the serving copy of each Top N in Redis.
//
// Metrics are policy-free: an event adds its value to its item's metric in
// the hour bucket of its instant, whatever the weights. Weights are
// versioned; a new version re-scores every retained period from the
// metrics, so the past can be ranked under new weights.
//
// Equal scores rank by Ahead: the item that reached the score first, then
// the smaller id. Periods are UTC (period.go); a board's buckets are kept
// for its Retention, twice its longest window.
package ranking

import (
	"context"
	"errors"
	"time"
)

// Sources of a board's events.
const (
	// SourceMatchmaking: matchgate's own activity, counted from its
	// record of tickets and matches (Record.SetHours); the item is the
	// queue (or room topic), the metrics joins, matches and cancels.
	SourceMatchmaking = "matchmaking"
	// SourceEvents: events posted by another service
	// (POST /v1/rankings/{board}/events).
	SourceEvents = "events"
)

// Transforms of a metric's value before its weight applies.
const (
	TransformNone  = ""
	TransformLog1p = "log1p" // ln(1 + v): a large count does not dominate
)

// Metric is one metric of a board: its weight, and the transform of its
// summed value.
type Metric struct {
	Weight    float64 `yaml:"weight" json:"weight"`
	Transform string  `yaml:"transform" json:"transform,omitempty"`
}

// Carry is a board's carry-over: the Top Top items of a day seed the next
// day at Fraction of their score.
type Carry struct {
	Top      int     `yaml:"top" json:"top"`
	Fraction float64 `yaml:"fraction" json:"fraction"`
}

// Board is one ranking board as the queue file declares it (beside
// queues:, under rankings:).
type Board struct {
	Name    string            `yaml:"name" json:"name"`
	Source  string            `yaml:"source" json:"source"`
	Metrics map[string]Metric `yaml:"metrics" json:"metrics"`
	// Windows ranked, of WindowHour, WindowDay, WindowWeek. Default all
	// three.
	Windows []Window `yaml:"windows" json:"windows"`
	// Top is N, the items served from Redis per window and period.
	// Default 100.
	Top   int   `yaml:"top" json:"top"`
	Carry Carry `yaml:"carry" json:"carry"`
	// Refresh is how often the Top N are recomputed from the record.
	// Default 1m.
	Refresh time.Duration `yaml:"refresh" json:"refresh"`
}

// Window is a ranking's span: an hour, a UTC day or an ISO week (Monday
// 00:00 UTC to the next).
type Window string

const (
	WindowHour Window = "hour"
	WindowDay  Window = "day"
	WindowWeek Window = "week"
)

// Event is one event of a board: Value added to Item's Metric at At. ID
// names it: a second event of the same ID on the board counts nothing.
type Event struct {
	ID     string    `json:"id"`
	Item   string    `json:"item"`
	Metric string    `json:"metric"`
	Value  float64   `json:"value"`
	At     time.Time `json:"at"`
}

// Weights is one version of a board's weights: the metrics with their
// weights and transforms, who set them and when. Version 0 is the queue
// file's, until the admin API sets another.
type Weights struct {
	Version int64             `json:"version"`
	Metrics map[string]Metric `json:"metrics"`
	By      string            `json:"by"`
	At      time.Time         `json:"at"`
}

// ItemMetrics are an item's metrics summed over a span of hour buckets,
// and the instant of its first event in the span (a tie's order).
type ItemMetrics struct {
	Item    string
	Metrics map[string]float64
	First   time.Time
}

// Record is the durable record of boards: events counted once into hourly
// buckets, and the weights' versions. Both implementations
// (ranking/record: PostgreSQL and memory) pass one contract suite.
type Record interface {
	// Ingest counts the events of board not seen before (by ID) into
	// their items' hour buckets, in one batch: accepted are the new,
	// duplicates those seen before (in this batch or an earlier one).
	// The events must be valid (Board.CheckEvent); an error for the
	// batch writes nothing, except when only its reply was lost: a retry
	// of the same events then counts them as duplicates.
	Ingest(ctx context.Context, board string, events []Event) (accepted, duplicates int, err error)
	// Scan hands fn, in item order, every item of board with an event in
	// the hour buckets of [from, to), its metrics summed over them. fn's
	// error stops the scan and is returned.
	Scan(ctx context.Context, board string, from, to time.Time, fn func(ItemMetrics) error) error
	// Item is one item's metrics over [from, to); ok false when it has no
	// event there.
	Item(ctx context.Context, board, item string, from, to time.Time) (m ItemMetrics, ok bool, err error)
	// SetWeights records w as the board's next version (the current one
	// plus 1; w.Version is ignored) and returns it as stored.
	SetWeights(ctx context.Context, board string, w Weights) (Weights, error)
	// Weights is the board's current version; ok false when none was set.
	Weights(ctx context.Context, board string) (w Weights, ok bool, err error)
	// SetHours replaces, in one transaction, every bucket of board whose
	// hour is in [from, to) by the tallies given (an hour or an item
	// absent from them is emptied; a metric of value 0 writes no
	// bucket). It never touches the event ids Ingest keeps. from and to
	// must be on the hour, each tally's hour in [from, to), each metric
	// with a finite value ≥ 0 and its First within its hour, no item
	// tallied twice in an hour; else ErrInvalidTally and nothing written.
	SetHours(ctx context.Context, board string, from, to time.Time, tallies []Tally) error
	// Prune forgets the board's buckets and events before before (the
	// retention's end).
	Prune(ctx context.Context, board string, before time.Time) error
}

// Errors of the domain.
var (
	// ErrInvalidEvent: an event the board refuses (unknown metric, a value
	// that is not a finite number ≥ 0, an id or item too long, …).
	ErrInvalidEvent = errors.New("ranking: invalid event")
	// ErrInvalidTally: tallies Record.SetHours refuses.
	ErrInvalidTally = errors.New("ranking: invalid tally")
	// ErrUnknownBoard: no board of that name.
	ErrUnknownBoard = errors.New("ranking: no such board")
)
