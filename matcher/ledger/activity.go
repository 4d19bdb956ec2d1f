package ledger

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/matchgate/matchgate/internal/pgtime"
	"github.com/matchgate/matchgate/matcher"
)

// Activity, on both ledgers, is the record's count of each queue's joins,
// matches and user cancels per UTC hour of [from, to) (matcher.QueueActivity),
// in queue then hour order. It reads what the join and match paths already
// write; nothing is written for it. It is not part of matcher.Ledger: the
// rankings' feed is its only consumer and declares what it needs.

// activitySQL counts the three metrics over [$1, $2), one grouped scan
// each, on the indexes of migrations/0017_ranking_activity.sql.
const activitySQL = `
SELECT queue, 0, date_trunc('hour', enqueued_at, 'UTC') AS h, count(*), min(enqueued_at)
  FROM tickets WHERE enqueued_at >= $1 AND enqueued_at < $2 GROUP BY queue, h
UNION ALL
SELECT queue, 1, date_trunc('hour', created_at, 'UTC') AS h, count(*), min(created_at)
  FROM matches WHERE created_at >= $1 AND created_at < $2 GROUP BY queue, h
UNION ALL
SELECT queue, 2, date_trunc('hour', updated_at, 'UTC') AS h, count(*), min(updated_at)
  FROM tickets WHERE status = 'CANCELLED' AND cancel_reason = 'user'
   AND updated_at >= $1 AND updated_at < $2 GROUP BY queue, h`

// The metrics of activitySQL's second column.
const (
	actJoins = iota
	actMatches
	actCancels
)

// activityKey names one queue's hour.
type activityKey struct {
	queue string
	hour  time.Time
}

// activities collects the counts of one Activity call.
type activities map[activityKey]*matcher.QueueActivity

func (as activities) add(queue string, metric int, at time.Time, n int64, first time.Time) {
	k := activityKey{queue: queue, hour: at.UTC().Truncate(time.Hour)}
	a, ok := as[k]
	if !ok {
		a = &matcher.QueueActivity{Queue: queue, Hour: k.hour}
		as[k] = a
	}
	first = first.UTC()
	switch metric {
	case actJoins:
		a.Joins += n
		a.FirstJoin = earliest(a.FirstJoin, first)
	case actMatches:
		a.Matches += n
		a.FirstMatch = earliest(a.FirstMatch, first)
	case actCancels:
		a.Cancels += n
		a.FirstCancel = earliest(a.FirstCancel, first)
	}
}

// earliest is the earlier of a and b, a zero a counting as none.
func earliest(a, b time.Time) time.Time {
	if a.IsZero() || b.Before(a) {
		return b
	}
	return a
}

// sorted is the counts in queue then hour order.
func (as activities) sorted() []matcher.QueueActivity {
	out := make([]matcher.QueueActivity, 0, len(as))
	for _, a := range as {
		out = append(out, *a)
	}
	slices.SortFunc(out, func(a, b matcher.QueueActivity) int {
		return cmp.Or(cmp.Compare(a.Queue, b.Queue), a.Hour.Compare(b.Hour))
	})
	return out
}

// checkSpan refuses a span Activity cannot count.
func checkSpan(from, to time.Time) error {
	if from.IsZero() || to.IsZero() || to.Before(from) {
		return fmt.Errorf("activity of [%v, %v): not a span", from, to)
	}
	return nil
}

// Activity counts the queues' activity of [from, to) in one statement.
func (l *Postgres) Activity(ctx context.Context, from, to time.Time) ([]matcher.QueueActivity, error) {
	if err := checkSpan(from, to); err != nil {
		return nil, err
	}
	rows, err := l.pool.Query(ctx, activitySQL, pgtime.Stamp(from), pgtime.Stamp(to))
	if err != nil {
		return nil, fmt.Errorf("activity of [%v, %v): %w", from, to, err)
	}
	defer rows.Close()
	as := activities{}
	var (
		queue       string
		metric      int
		hour, first time.Time
		n           int64
	)
	for rows.Next() {
		if err := rows.Scan(&queue, &metric, &hour, &n, &first); err != nil {
			return nil, fmt.Errorf("activity of [%v, %v): %w", from, to, err)
		}
		as.add(queue, metric, hour, n, first)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("activity of [%v, %v): %w", from, to, err)
	}
	return as.sorted(), nil
}

// Activity counts the queues' activity of [from, to) from every ticket and
// match the process has kept.
func (l *Memory) Activity(ctx context.Context, from, to time.Time) ([]matcher.QueueActivity, error) {
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("activity of [%v, %v): %w", from, to, err)
	}
	if err := checkSpan(from, to); err != nil {
		return nil, err
	}
	from, to = pgtime.Stamp(from), pgtime.Stamp(to)
	in := func(at time.Time) bool { return !at.Before(from) && at.Before(to) }
	as := activities{}
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, t := range l.tickets {
		if in(t.EnqueuedAt) {
			as.add(t.Queue, actJoins, t.EnqueuedAt, 1, t.EnqueuedAt)
		}
		if t.Status == matcher.StatusCancelled && t.CancelReason == matcher.ReasonUser && in(t.UpdatedAt) {
			as.add(t.Queue, actCancels, t.UpdatedAt, 1, t.UpdatedAt)
		}
	}
	for _, m := range l.matches {
		if in(m.CreatedAt) {
			as.add(m.Queue, actMatches, m.CreatedAt, 1, m.CreatedAt)
		}
	}
	return as.sorted(), nil
}
