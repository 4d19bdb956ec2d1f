package record

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/matchgate/matchgate/admission"
	"github.com/matchgate/matchgate/internal/group"
	"github.com/matchgate/matchgate/internal/pgtime"
)

// Entries are group-committed (internal/group), as the matchmaking joins
// are (matcher/ledger/groupcommit.go): an entry arriving while a batch is
// being written waits and goes into the next, so under load a batch of
// entries costs one round trip and one log flush instead of one each, and
// an entry that finds nobody writing is written at once, alone. Every entry
// is committed before Enter returns.
//
// Seq order is commit order: a reader never sees an entry before every
// entry of its queue with a smaller Seq is visible, so a line rebuilt by
// paging Waiting by Seq misses nobody, and an Enter that returned before
// another began has the smaller Seq. Two things make it so:
//
//   - one batch in flight at a time (maxEnterers) in a process, so the Seqs
//     a batch takes from the identity are above those of every batch
//     committed before it;
//   - across processes, a batch takes the advisory lock of each of its
//     queues (in one order, so two batches never wait on each other in a
//     circle) before it takes any Seq, and holds it to its commit: the
//     batch of another gateway that took smaller Seqs is visible before
//     this one takes its own.
const (
	maxEnterers = 1
	maxBatch    = 512
	// batchTimeout bounds one batch whatever the callers' contexts.
	batchTimeout = 10 * time.Second
)

// enterLockClass is the first key of the advisory locks of entries; the
// second is a hash of the schema and the queue, so that schemas sharing a
// database do not queue behind each other. ledger.Migrate's lock is of
// another class.
const enterLockClass = 0x6d61 // "ma"

type enterReq struct {
	queue, userID  string
	now, predicted time.Time // stamped
}

type enterResult struct {
	p       admission.Place
	created bool
	err     error
}

func newEnterer(r *Postgres) *group.Group[enterReq, enterResult] {
	return group.New(maxEnterers, maxBatch, batchTimeout, r.enterBatch)
}

// placeKey names a live place: one per (queue, user).
type placeKey struct{ queue, userID string }

// enterBatch records a batch of entries. Those refused by a live place are
// answered with it; one whose live place ended before it was read is tried
// again, with the others of its kind, up to enterAttempts times.
func (r *Postgres) enterBatch(ctx context.Context, batch []enterReq) []enterResult {
	out := make([]enterResult, len(batch))
	todo := make([]int, len(batch))
	for i := range todo {
		todo[i] = i
	}
	for range enterAttempts {
		var err error
		if todo, err = r.enterOnce(ctx, batch, todo, out); err != nil {
			for _, i := range todo {
				out[i].err = fmt.Errorf("enter %s of %s: %w", batch[i].queue, batch[i].userID, err)
			}
			return out
		}
		if len(todo) == 0 {
			return out
		}
	}
	for _, i := range todo {
		out[i].err = fmt.Errorf("enter %s of %s: the live place kept changing", batch[i].queue, batch[i].userID)
	}
	return out
}

// enterOnce inserts the entries todo (indexes into batch) and answers them
// into out: in one round trip and one implicit transaction the queues'
// locks and the insert, then, only for the entries a live place refused,
// one round trip to read those places. It returns the entries to try
// again, or, on error, those it could not answer.
func (r *Postgres) enterOnce(ctx context.Context, batch []enterReq, todo []int, out []enterResult) ([]int, error) {
	n := len(todo)
	var (
		queues, users     = make([]string, n), make([]string, n)
		entered, predicts = make([]time.Time, n), make([]*time.Time, n)
	)
	for j, i := range todo {
		e := batch[i]
		queues[j], users[j], entered[j], predicts[j] = e.queue, e.userID, e.now, pgtime.OrNull(e.predicted)
	}
	b := &pgx.Batch{}
	// The locks are taken in the order of their keys; OFFSET 0 keeps the
	// sort below the calls.
	b.Queue(`SELECT pg_advisory_xact_lock($1, k) FROM (
		SELECT DISTINCT hashtext(current_schema() || '/' || q) AS k FROM unnest($2::text[]) AS q ORDER BY k OFFSET 0) AS keys`,
		enterLockClass, queues)
	// Seqs are taken in arrival order. A user entering twice in one batch
	// is inserted once: the second row is refused by the first.
	b.Queue(`INSERT INTO admission_places (queue, user_id, status, entered_at, predicted_at, version)
		SELECT q, u, 'WAITING', e, p, 1
		  FROM unnest($1::text[], $2::text[], $3::timestamptz[], $4::timestamptz[]) WITH ORDINALITY AS x(q, u, e, p, i)
		 ORDER BY i
		ON CONFLICT DO NOTHING
		RETURNING `+placeColumns, queues, users, entered, predicts)
	br := r.pool.SendBatch(ctx, b)
	_, err := br.Exec()
	inserted := make(map[placeKey]admission.Place, n)
	if err == nil {
		var rows pgx.Rows
		rows, err = br.Query()
		if err == nil {
			for rows.Next() {
				var p admission.Place
				if p, err = scanPlace(rows); err != nil {
					break
				}
				inserted[placeKey{p.Queue, p.UserID}] = p
			}
			rows.Close()
			if err == nil {
				err = rows.Err()
			}
		}
	}
	if cerr := br.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		// One implicit transaction: nothing of it was written.
		return todo, err
	}
	var refused []int
	answered := make(map[placeKey]bool, n)
	for _, i := range todo {
		k := placeKey{batch[i].queue, batch[i].userID}
		p, ok := inserted[k]
		switch {
		case !ok:
			refused = append(refused, i)
		case answered[k]:
			out[i] = enterResult{p: p} // the same user again in this batch
		default:
			out[i] = enterResult{p: p, created: true}
			answered[k] = true
		}
	}
	if len(refused) == 0 {
		return nil, nil
	}
	return r.readLive(ctx, batch, refused, out)
}

// readLive answers the entries refused by a live place with that place, in
// one round trip, and returns those whose place ended meanwhile.
func (r *Postgres) readLive(ctx context.Context, batch []enterReq, refused []int, out []enterResult) ([]int, error) {
	b := &pgx.Batch{}
	for _, i := range refused {
		b.Queue(`SELECT `+placeColumns+` FROM admission_places WHERE queue = $1 AND user_id = $2 AND `+live,
			batch[i].queue, batch[i].userID)
	}
	br := r.pool.SendBatch(ctx, b)
	var again []int
	for j, i := range refused {
		p, err := scanPlace(br.QueryRow())
		switch {
		case errors.Is(err, pgx.ErrNoRows):
			again = append(again, i)
		case err != nil:
			br.Close()
			return append(again, refused[j:]...), fmt.Errorf("read the live place: %w", err)
		default:
			out[i] = enterResult{p: p}
		}
	}
	if err := br.Close(); err != nil {
		return refused, fmt.Errorf("read the live places: %w", err)
	}
	return again, nil
}
