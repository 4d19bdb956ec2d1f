package record

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/matchgate/matchgate/internal/pgtime"
	"github.com/matchgate/matchgate/ranking"
)

// Memory is a ranking.Record held in process memory, for the embedded
// single-node default and for tests. One mutex serialises every method,
// which gives it the isolation PostgreSQL's transactions give Postgres.
type Memory struct {
	mu     sync.Mutex
	boards map[string]*memBoard
}

type memBoard struct {
	events  map[string]time.Time // id → at
	buckets map[bucketKey]*bucket
	weights []ranking.Weights // version i+1 at i
}

// NewMemory returns an empty in-memory record.
func NewMemory() *Memory { return &Memory{boards: make(map[string]*memBoard)} }

var _ ranking.Record = (*Memory)(nil)

// board returns the state of name, made on first use.
func (m *Memory) board(name string) *memBoard {
	b, ok := m.boards[name]
	if !ok {
		b = &memBoard{events: make(map[string]time.Time), buckets: make(map[bucketKey]*bucket)}
		m.boards[name] = b
	}
	return b
}

// Ingest implements ranking.Record.
func (m *Memory) Ingest(ctx context.Context, board string, events []ranking.Event) (accepted, duplicates int, err error) {
	if err := ctx.Err(); err != nil {
		return 0, 0, fmt.Errorf("ingest %d events into %s: %w", len(events), board, err)
	}
	if err := checkEvents(board, events); err != nil {
		return 0, 0, err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	b := m.board(board)
	for _, e := range events {
		e = stampEvent(e)
		if _, seen := b.events[e.ID]; seen {
			duplicates++
			continue
		}
		b.events[e.ID] = e.At
		accepted++
		k := bucketKey{item: e.Item, metric: e.Metric, hour: hourOf(e.At)}
		if bk, ok := b.buckets[k]; ok {
			bk.value += e.Value
			if e.At.Before(bk.first) {
				bk.first = e.At
			}
		} else {
			b.buckets[k] = &bucket{value: e.Value, first: e.At}
		}
	}
	return accepted, duplicates, nil
}

// Scan implements ranking.Record. It sums under the mutex and calls fn
// after releasing it, so that fn may call the record.
func (m *Memory) Scan(ctx context.Context, board string, from, to time.Time, fn func(ranking.ItemMetrics) error) error {
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("scan %s: %w", board, err)
	}
	items := m.sum(board, "", from, to)
	for _, it := range items {
		if err := ctx.Err(); err != nil {
			return fmt.Errorf("scan %s: %w", board, err)
		}
		if err := fn(it); err != nil {
			return err
		}
	}
	return nil
}

// Item implements ranking.Record.
func (m *Memory) Item(ctx context.Context, board, item string, from, to time.Time) (ranking.ItemMetrics, bool, error) {
	if err := ctx.Err(); err != nil {
		return ranking.ItemMetrics{}, false, fmt.Errorf("item %s of %s: %w", item, board, err)
	}
	if item == "" {
		return ranking.ItemMetrics{}, false, nil
	}
	items := m.sum(board, item, from, to)
	if len(items) == 0 {
		return ranking.ItemMetrics{}, false, nil
	}
	return items[0], true, nil
}

// sum is the items of board (only item, unless it is "") with a bucket
// whose hour is in [from, to), their metrics summed, in item order.
func (m *Memory) sum(board, item string, from, to time.Time) []ranking.ItemMetrics {
	from, to = pgtime.Stamp(from), pgtime.Stamp(to)
	m.mu.Lock()
	defer m.mu.Unlock()
	b, ok := m.boards[board]
	if !ok {
		return nil
	}
	byItem := make(map[string]*ranking.ItemMetrics)
	for k, bk := range b.buckets {
		if (item != "" && k.item != item) || k.hour.Before(from) || !k.hour.Before(to) {
			continue
		}
		it, ok := byItem[k.item]
		if !ok {
			it = &ranking.ItemMetrics{Item: k.item, Metrics: make(map[string]float64), First: bk.first}
			byItem[k.item] = it
		}
		it.Metrics[k.metric] += bk.value
		if bk.first.Before(it.First) {
			it.First = bk.first
		}
	}
	out := make([]ranking.ItemMetrics, 0, len(byItem))
	for _, it := range byItem {
		out = append(out, *it)
	}
	slices.SortFunc(out, func(a, b ranking.ItemMetrics) int { return cmp.Compare(a.Item, b.Item) })
	return out
}

// SetWeights implements ranking.Record.
func (m *Memory) SetWeights(ctx context.Context, board string, w ranking.Weights) (ranking.Weights, error) {
	if err := ctx.Err(); err != nil {
		return ranking.Weights{}, fmt.Errorf("set weights of %s: %w", board, err)
	}
	if err := checkWeights(board, w); err != nil {
		return ranking.Weights{}, err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	b := m.board(board)
	w = ranking.Weights{Version: int64(len(b.weights)) + 1, Metrics: copyMetrics(w.Metrics), By: w.By, At: pgtime.Stamp(w.At)}
	b.weights = append(b.weights, w)
	w.Metrics = copyMetrics(w.Metrics)
	return w, nil
}

// Weights implements ranking.Record.
func (m *Memory) Weights(ctx context.Context, board string) (ranking.Weights, bool, error) {
	if err := ctx.Err(); err != nil {
		return ranking.Weights{}, false, fmt.Errorf("weights of %s: %w", board, err)
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	b, ok := m.boards[board]
	if !ok || len(b.weights) == 0 {
		return ranking.Weights{}, false, nil
	}
	w := b.weights[len(b.weights)-1]
	w.Metrics = copyMetrics(w.Metrics)
	return w, true, nil
}

// Prune implements ranking.Record.
func (m *Memory) Prune(ctx context.Context, board string, before time.Time) error {
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("prune %s: %w", board, err)
	}
	before = pgtime.Stamp(before)
	m.mu.Lock()
	defer m.mu.Unlock()
	b, ok := m.boards[board]
	if !ok {
		return nil
	}
	for id, at := range b.events {
		if at.Before(before) {
			delete(b.events, id)
		}
	}
	for k := range b.buckets {
		if k.hour.Before(before) {
			delete(b.buckets, k)
		}
	}
	return nil
}

// SetHours implements ranking.Record.
func (m *Memory) SetHours(ctx context.Context, board string, from, to time.Time, tallies []ranking.Tally) error {
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("set hours of %s: %w", board, err)
	}
	rows, err := checkTallies(board, from, to, tallies)
	if err != nil {
		return err
	}
	from, to = from.UTC(), to.UTC()
	m.mu.Lock()
	defer m.mu.Unlock()
	b := m.board(board)
	for k := range b.buckets {
		if !k.hour.Before(from) && k.hour.Before(to) {
			delete(b.buckets, k)
		}
	}
	for _, r := range rows {
		bk := r.bucket
		b.buckets[r.key] = &bk
	}
	return nil
}
