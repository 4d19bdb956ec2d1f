package record

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/matchgate/matchgate/internal/group"
	"github.com/matchgate/matchgate/ranking"
)

// Small batches are group-committed (internal/group), as the admission
// entries are (admission/record/enter.go): a call arriving while
// maxIngesters batches are being written waits and goes into the next, so
// many callers of a few events each share one statement, one transaction
// and one log flush. A batch of directEvents or more already pays for its
// own and is written alone, at once. Every call's events are committed
// before Ingest returns, and each caller is told exactly which of its own
// events were new.
//
// Concurrent writers cannot deadlock: every statement inserts its event ids
// in (board, id) order, then upserts its buckets in (board, item, metric,
// hour) order, so locks are always taken in one global order.
const (
	// maxIngesters: batches in flight at once. Several let PostgreSQL
	// flush their commits together and keep both cores busy while one
	// batch waits on its flush; on a 2-core machine 8 measured best (2
	// and 16 did worse).
	maxIngesters = 8
	maxBatch     = 256 // calls in one shared batch
	directEvents = 128
	// batchTimeout bounds one batch whatever the callers' contexts.
	batchTimeout = 10 * time.Second
)

type ingestReq struct {
	board  string
	events []ranking.Event // stamped
}

type ingestRes struct {
	accepted, duplicates int
	err                  error
}

func newIngester(r *Postgres) *group.Group[ingestReq, ingestRes] {
	return group.New(maxIngesters, maxBatch, batchTimeout, r.ingestBatch)
}

// eventKey names an event: its id is its board's.
type eventKey struct{ board, id string }

// ingestSQL records the distinct events given in one statement, hence one
// implicit transaction: the ids not seen before are inserted (in key
// order; ON CONFLICT DO NOTHING skips the seen), and only the events whose
// id went in are summed into their buckets, one upsert per bucket in key
// order. The aggregation reads every inserted id before the first bucket
// is written. It returns the ids inserted.
const ingestSQL = `WITH e AS (
		SELECT * FROM unnest($1::text[], $2::text[], $3::text[], $4::text[], $5::float8[],
			$6::timestamptz[], $7::timestamptz[]) AS e(board, id, item, metric, value, at, hour)),
	ins AS (
		INSERT INTO ranking_events (board, id, at)
		SELECT board, id, at FROM e ORDER BY board, id
		ON CONFLICT DO NOTHING
		RETURNING board, id),
	up AS (
		INSERT INTO ranking_buckets AS b (board, item, metric, hour, value, first_at)
		SELECT e.board, e.item, e.metric, e.hour, sum(e.value), min(e.at)
		  FROM e JOIN ins ON ins.board = e.board AND ins.id = e.id
		 GROUP BY e.board, e.item, e.metric, e.hour
		 ORDER BY e.board, e.item, e.metric, e.hour
		ON CONFLICT (board, item, metric, hour) DO UPDATE
		   SET value = b.value + excluded.value, first_at = least(b.first_at, excluded.first_at))
	SELECT board, id FROM ins`

// ingestBatch records the events of every request in one statement and
// answers each request for its own events. Of events sharing an id, in the
// order of the requests and then of their events, the first is the one
// sent; the others are duplicates whatever the database holds.
func (r *Postgres) ingestBatch(ctx context.Context, reqs []ingestReq) []ingestRes {
	out := make([]ingestRes, len(reqs))
	var n int
	for _, q := range reqs {
		n += len(q.events)
	}
	var (
		boards, ids, items, metrics = make([]string, 0, n), make([]string, 0, n), make([]string, 0, n), make([]string, 0, n)
		values                      = make([]float64, 0, n)
		ats, hours                  = make([]time.Time, 0, n), make([]time.Time, 0, n)
		// first holds the keys sent; an event whose key is there already
		// is a duplicate within the batch.
		first = make(map[eventKey]struct{}, n)
	)
	for _, q := range reqs {
		for _, e := range q.events {
			k := eventKey{q.board, e.ID}
			if _, dup := first[k]; dup {
				continue
			}
			first[k] = struct{}{}
			boards, ids, items, metrics = append(boards, q.board), append(ids, e.ID), append(items, e.Item), append(metrics, e.Metric)
			values, ats, hours = append(values, e.Value), append(ats, e.At), append(hours, hourOf(e.At))
		}
	}
	inserted := make(map[eventKey]struct{}, len(ids))
	rows, err := r.pool.Query(ctx, ingestSQL, boards, ids, items, metrics, values, ats, hours)
	if err == nil {
		var k eventKey
		_, err = pgx.ForEachRow(rows, []any{&k.board, &k.id}, func() error {
			inserted[k] = struct{}{}
			return nil
		})
	}
	if err != nil {
		// One statement: nothing of it was written.
		for i, q := range reqs {
			out[i].err = fmt.Errorf("ingest %d events into %s: %w", len(q.events), q.board, err)
		}
		return out
	}
	for i, q := range reqs {
		for _, e := range q.events {
			k := eventKey{q.board, e.ID}
			if _, ok := inserted[k]; ok {
				delete(inserted, k) // the first occurrence takes it
				out[i].accepted++
			} else {
				out[i].duplicates++
			}
		}
	}
	return out
}
