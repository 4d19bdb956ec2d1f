package record

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/matchgate/matchgate/internal/group"
	"github.com/matchgate/matchgate/internal/pgtime"
	"github.com/matchgate/matchgate/ranking"
)

// Postgres is the ranking.Record of a PostgreSQL database migrated by
// ledger.Migrate (migrations/0016_rankings.sql). Each method is one
// transaction; small batches of events arriving together share one
// (ingest.go).
type Postgres struct {
	pool   *pgxpool.Pool
	ingest *group.Group[ingestReq, ingestRes]
}

// NewPostgres returns a record over pool. The caller owns the pool and
// closes it after the last call.
func NewPostgres(pool *pgxpool.Pool) *Postgres {
	r := &Postgres{pool: pool}
	r.ingest = newIngester(r)
	return r
}

var _ ranking.Record = (*Postgres)(nil)

// setWeightsAttempts bounds the tries of SetWeights when another writer
// takes the same next version first.
const setWeightsAttempts = 10

// Ingest implements ranking.Record; small batches are group-committed (see
// ingest.go).
func (r *Postgres) Ingest(ctx context.Context, board string, events []ranking.Event) (accepted, duplicates int, err error) {
	if err := ctx.Err(); err != nil {
		return 0, 0, fmt.Errorf("ingest %d events into %s: %w", len(events), board, err)
	}
	if err := checkEvents(board, events); err != nil {
		return 0, 0, err
	}
	if len(events) == 0 {
		return 0, 0, nil
	}
	stamped := make([]ranking.Event, len(events))
	for i, e := range events {
		stamped[i] = stampEvent(e)
	}
	req := ingestReq{board: board, events: stamped}
	var res ingestRes
	if len(events) >= directEvents {
		res = r.ingestBatch(ctx, []ingestReq{req})[0]
	} else {
		res = r.ingest.Do(ctx, req)
	}
	return res.accepted, res.duplicates, res.err
}

// sumSQL sums a board's buckets of [$2, $3) per item and metric. Items
// come in byte order, as Memory sorts them: the column is COLLATE "C".
const sumSQL = `SELECT item, metric, sum(value), min(first_at) FROM ranking_buckets
	 WHERE board = $1 AND hour >= $2 AND hour < $3`

// Scan implements ranking.Record. Rows stream from the server; an item is
// handed to fn once its last metric is read. The query is planned for each
// call (not a cached generic plan): an hour of a large board is best read
// by hour and sorted, a week by the primary key, already in order. fn runs
// while the scan holds one of the pool's connections.
func (r *Postgres) Scan(ctx context.Context, board string, from, to time.Time, fn func(ranking.ItemMetrics) error) error {
	rows, err := r.pool.Query(ctx, sumSQL+` GROUP BY item, metric ORDER BY item, metric`,
		pgx.QueryExecModeCacheDescribe, board, pgtime.Stamp(from), pgtime.Stamp(to))
	if err != nil {
		return fmt.Errorf("scan %s: %w", board, err)
	}
	defer rows.Close()
	var (
		cur     ranking.ItemMetrics
		item    string
		metric  string
		value   float64
		firstAt time.Time
	)
	for rows.Next() {
		if err := rows.Scan(&item, &metric, &value, &firstAt); err != nil {
			return fmt.Errorf("scan %s: %w", board, err)
		}
		firstAt = firstAt.UTC()
		if cur.Metrics != nil && item != cur.Item {
			if err := fn(cur); err != nil {
				return err
			}
			cur = ranking.ItemMetrics{}
		}
		if cur.Metrics == nil {
			cur = ranking.ItemMetrics{Item: item, Metrics: make(map[string]float64), First: firstAt}
		}
		cur.Metrics[metric] = value
		if firstAt.Before(cur.First) {
			cur.First = firstAt
		}
	}
	if err := rows.Err(); err != nil {
		return fmt.Errorf("scan %s: %w", board, err)
	}
	if cur.Metrics != nil {
		return fn(cur)
	}
	return nil
}

// Item implements ranking.Record.
func (r *Postgres) Item(ctx context.Context, board, item string, from, to time.Time) (ranking.ItemMetrics, bool, error) {
	rows, _ := r.pool.Query(ctx, sumSQL+` AND item = $4 GROUP BY item, metric`,
		board, pgtime.Stamp(from), pgtime.Stamp(to), item)
	m := ranking.ItemMetrics{Item: item}
	var (
		got     string
		metric  string
		value   float64
		firstAt time.Time
	)
	_, err := pgx.ForEachRow(rows, []any{&got, &metric, &value, &firstAt}, func() error {
		firstAt = firstAt.UTC()
		if m.Metrics == nil {
			m.Metrics, m.First = make(map[string]float64), firstAt
		}
		m.Metrics[metric] = value
		if firstAt.Before(m.First) {
			m.First = firstAt
		}
		return nil
	})
	if err != nil {
		return ranking.ItemMetrics{}, false, fmt.Errorf("item %s of %s: %w", item, board, err)
	}
	if m.Metrics == nil {
		return ranking.ItemMetrics{}, false, nil
	}
	return m, true, nil
}

// SetWeights implements ranking.Record: the next version is taken and
// written in one statement; of two writers taking the same, the second is
// refused by the primary key and tries again with the one after.
func (r *Postgres) SetWeights(ctx context.Context, board string, w ranking.Weights) (ranking.Weights, error) {
	if err := checkWeights(board, w); err != nil {
		return ranking.Weights{}, err
	}
	w = ranking.Weights{Metrics: copyMetrics(w.Metrics), By: w.By, At: pgtime.Stamp(w.At)}
	js, err := json.Marshal(w.Metrics)
	if err != nil {
		return ranking.Weights{}, fmt.Errorf("set weights of %s: %w", board, err)
	}
	for range setWeightsAttempts {
		err = r.pool.QueryRow(ctx, `INSERT INTO ranking_weights (board, version, metrics, set_by, set_at)
			SELECT $1, coalesce(max(version), 0) + 1, $2, $3, $4 FROM ranking_weights WHERE board = $1
			RETURNING version`, board, js, w.By, w.At).Scan(&w.Version)
		var pgErr *pgconn.PgError
		if errors.As(err, &pgErr) && pgErr.Code == "23505" {
			continue
		}
		if err != nil {
			return ranking.Weights{}, fmt.Errorf("set weights of %s: %w", board, err)
		}
		return w, nil
	}
	return ranking.Weights{}, fmt.Errorf("set weights of %s: the version kept being taken: %w", board, err)
}

// Weights implements ranking.Record.
func (r *Postgres) Weights(ctx context.Context, board string) (ranking.Weights, bool, error) {
	var (
		w  ranking.Weights
		js []byte
	)
	err := r.pool.QueryRow(ctx, `SELECT version, metrics, set_by, set_at FROM ranking_weights
		WHERE board = $1 ORDER BY version DESC LIMIT 1`, board).Scan(&w.Version, &js, &w.By, &w.At)
	if errors.Is(err, pgx.ErrNoRows) {
		return ranking.Weights{}, false, nil
	}
	if err != nil {
		return ranking.Weights{}, false, fmt.Errorf("weights of %s: %w", board, err)
	}
	if err := json.Unmarshal(js, &w.Metrics); err != nil {
		return ranking.Weights{}, false, fmt.Errorf("weights of %s, version %d: %w", board, w.Version, err)
	}
	w.Metrics, w.At = copyMetrics(w.Metrics), w.At.UTC()
	return w, true, nil
}

// Prune implements ranking.Record, in one transaction: a retried event
// older than the retention is then counted again, into a bucket the next
// Prune forgets.
func (r *Postgres) Prune(ctx context.Context, board string, before time.Time) error {
	before = pgtime.Stamp(before)
	err := pgx.BeginFunc(ctx, r.pool, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `DELETE FROM ranking_buckets WHERE board = $1 AND hour < $2`, board, before); err != nil {
			return err
		}
		_, err := tx.Exec(ctx, `DELETE FROM ranking_events WHERE board = $1 AND at < $2`, board, before)
		return err
	})
	if err != nil {
		return fmt.Errorf("prune %s before %v: %w", board, before, err)
	}
	return nil
}

// SetHours implements ranking.Record: one transaction deletes the span's
// buckets and inserts the tallies' (in key order, as Ingest upserts them).
// ranking_events is left alone: a matchmaking board has no event ids.
func (r *Postgres) SetHours(ctx context.Context, board string, from, to time.Time, tallies []ranking.Tally) error {
	rows, err := checkTallies(board, from, to, tallies)
	if err != nil {
		return err
	}
	n := len(rows)
	items, metrics := make([]string, n), make([]string, n)
	hours, firsts := make([]time.Time, n), make([]time.Time, n)
	values := make([]float64, n)
	for i, row := range rows {
		items[i], metrics[i], hours[i] = row.key.item, row.key.metric, row.key.hour
		values[i], firsts[i] = row.value, row.first
	}
	err = pgx.BeginFunc(ctx, r.pool, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `DELETE FROM ranking_buckets WHERE board = $1 AND hour >= $2 AND hour < $3`,
			board, from.UTC(), to.UTC()); err != nil {
			return err
		}
		if n == 0 {
			return nil
		}
		_, err := tx.Exec(ctx, `INSERT INTO ranking_buckets (board, item, metric, hour, value, first_at)
			SELECT $1, * FROM unnest($2::text[], $3::text[], $4::timestamptz[], $5::float8[], $6::timestamptz[])`,
			board, items, metrics, hours, values, firsts)
		return err
	})
	if err != nil {
		return fmt.Errorf("set hours of %s in [%v, %v): %w", board, from, to, err)
	}
	return nil
}
