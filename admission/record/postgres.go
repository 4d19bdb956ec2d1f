package record

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/matchgate/matchgate/admission"
	"github.com/matchgate/matchgate/internal/group"
	"github.com/matchgate/matchgate/internal/pgtime"
)

// Postgres is the admission.Record of a PostgreSQL database migrated by
// ledger.Migrate (migrations/0012_admission.sql). Each method is one
// transaction; entries arriving together share one (enter.go).
type Postgres struct {
	pool  *pgxpool.Pool
	enter *group.Group[enterReq, enterResult]
}

// NewPostgres returns a record over pool. The caller owns the pool and
// closes it after the last call.
func NewPostgres(pool *pgxpool.Pool) *Postgres {
	r := &Postgres{pool: pool}
	r.enter = newEnterer(r)
	return r
}

var _ admission.Record = (*Postgres)(nil)

// placeColumns is what scanPlace reads.
const placeColumns = `queue, user_id, seq, status, entered_at, coalesce(token, ''), expires_at, predicted_at,
	admitted_at, claimed_at, consumed_at, version`

// live is the SQL of admission.Status.Live, as the one-live index has it.
const live = `status IN ('WAITING', 'READY', 'CLAIMED')`

func scanPlace(row pgx.Row) (admission.Place, error) {
	var (
		p                                   admission.Place
		expires, predicted, admitted, claim *time.Time
		consumed                            *time.Time
	)
	err := row.Scan(&p.Queue, &p.UserID, &p.Seq, &p.Status, &p.EnteredAt, &p.Token, &expires, &predicted,
		&admitted, &claim, &consumed, &p.Version)
	if err != nil {
		return admission.Place{}, err
	}
	p.EnteredAt = p.EnteredAt.UTC()
	p.ExpiresAt, p.PredictedAt, p.AdmittedAt = pgtime.OrZero(expires), pgtime.OrZero(predicted), pgtime.OrZero(admitted)
	p.ClaimedAt, p.ConsumedAt = pgtime.OrZero(claim), pgtime.OrZero(consumed)
	return p, nil
}

func (r *Postgres) places(ctx context.Context, query string, args ...any) ([]admission.Place, error) {
	rows, _ := r.pool.Query(ctx, query, args...)
	return pgx.CollectRows(rows, func(row pgx.CollectableRow) (admission.Place, error) { return scanPlace(row) })
}

// Enter implements admission.Record; entries are group-committed (see
// enter.go).
func (r *Postgres) Enter(ctx context.Context, queue, userID string, now, predicted time.Time) (admission.Place, bool, error) {
	if err := ctx.Err(); err != nil {
		return admission.Place{}, false, fmt.Errorf("enter %s of %s: %w", queue, userID, err)
	}
	if err := checkEnter(queue, userID, now); err != nil {
		return admission.Place{}, false, err
	}
	res := r.enter.Do(ctx, enterReq{queue: queue, userID: userID, now: pgtime.Stamp(now), predicted: pgtime.Stamp(predicted)})
	return res.p, res.created, res.err
}

// Place implements admission.Record.
func (r *Postgres) Place(ctx context.Context, queue, userID string) (admission.Place, error) {
	p, err := scanPlace(r.pool.QueryRow(ctx, `SELECT `+placeColumns+` FROM admission_places
		WHERE queue = $1 AND user_id = $2 ORDER BY seq DESC LIMIT 1`, queue, userID))
	if errors.Is(err, pgx.ErrNoRows) {
		return admission.Place{}, fmt.Errorf("place of %s in %s: %w", userID, queue, admission.ErrNotFound)
	}
	if err != nil {
		return admission.Place{}, fmt.Errorf("place of %s in %s: %w", userID, queue, err)
	}
	return p, nil
}

// Leave implements admission.Record: a WAITING or READY place ends LEFT. A
// CLAIMED one is refused with ErrAlreadyClaimed (the downstream is acting
// on its token); no such place is ErrNotFound.
func (r *Postgres) Leave(ctx context.Context, queue, userID string, now time.Time) (admission.Place, error) {
	p, err := scanPlace(r.pool.QueryRow(ctx, `UPDATE admission_places SET status = 'LEFT', version = version + 1
		WHERE queue = $1 AND user_id = $2 AND status IN ('WAITING', 'READY')
		RETURNING `+placeColumns, queue, userID))
	if err == nil {
		return p, nil
	}
	if !errors.Is(err, pgx.ErrNoRows) {
		return admission.Place{}, fmt.Errorf("leave %s of %s: %w", queue, userID, err)
	}
	var claimed bool
	if err := r.pool.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM admission_places
		WHERE queue = $1 AND user_id = $2 AND status = 'CLAIMED')`, queue, userID).Scan(&claimed); err != nil {
		return admission.Place{}, fmt.Errorf("leave %s of %s: %w", queue, userID, err)
	}
	if claimed {
		return admission.Place{}, fmt.Errorf("leave %s of %s: %w", queue, userID, admission.ErrAlreadyClaimed)
	}
	return admission.Place{}, fmt.Errorf("leave %s of %s: %w", queue, userID, admission.ErrNotFound)
}

// Abandon implements admission.Record. The places are locked in Seq order,
// as Admit locks its own, so that the two never wait on each other in a
// circle; they are returned in Seq order.
func (r *Postgres) Abandon(ctx context.Context, queue string, userIDs []string, now time.Time) ([]admission.Place, error) {
	if len(userIDs) == 0 {
		return nil, nil
	}
	// Planned for each call (not a cached plan): one cached while the table
	// was nearly empty would read it whole for as long as the connection
	// lived.
	ps, err := r.places(ctx, `WITH w AS (
			SELECT seq AS s FROM admission_places
			 WHERE queue = $1 AND user_id = ANY ($2) AND status = 'WAITING'
			 ORDER BY seq FOR UPDATE)
		UPDATE admission_places p SET status = 'ABANDONED', version = p.version + 1
		  FROM w WHERE p.seq = w.s AND p.status = 'WAITING'
		RETURNING `+placeColumns, pgx.QueryExecModeCacheDescribe, queue, userIDs)
	if err != nil {
		return nil, fmt.Errorf("abandon %d places of %s: %w", len(userIDs), queue, err)
	}
	slices.SortFunc(ps, bySeq)
	if len(ps) == 0 {
		return nil, nil
	}
	return ps, nil
}

// Admit implements admission.Record, in one transaction: the epoch, then
// the places in Seq order, then the places read back. The epoch row stays
// locked until the commit, so a new admitter's SetEpoch waits for an
// admission of the old one in flight and none lands after the handover. An
// epoch above the recorded one is recorded, as SetEpoch would: the first
// admission of a new admitter fences the old one even when its SetEpoch was
// lost.
func (r *Postgres) Admit(ctx context.Context, queue string, epoch int64, admits []admission.Admit, now time.Time, ttl time.Duration) ([]admission.Place, error) {
	if err := checkAdmit(queue, epoch, admits, now, ttl); err != nil {
		return nil, err
	}
	now = pgtime.Stamp(now)
	var (
		seqs   = make([]int64, len(admits))
		users  = make([]string, len(admits))
		tokens = make([]string, len(admits))
	)
	for i, a := range admits {
		seqs[i], users[i], tokens[i] = a.Seq, a.UserID, a.Token
	}
	var out []admission.Place
	err := pgx.BeginFunc(ctx, r.pool, func(tx pgx.Tx) error {
		var recorded int64
		if err := tx.QueryRow(ctx, `INSERT INTO admission_epochs AS e (queue, epoch) VALUES ($1, $2)
			ON CONFLICT (queue) DO UPDATE SET epoch = greatest(e.epoch, excluded.epoch)
			RETURNING epoch`, queue, epoch).Scan(&recorded); err != nil {
			return err
		}
		if recorded > epoch {
			return fmt.Errorf("epoch %d is below %d: %w", epoch, recorded, admission.ErrStaleEpoch)
		}
		if len(admits) == 0 {
			return nil
		}
		// Both statements are planned for each call, as Abandon's.
		if _, err := tx.Exec(ctx, `WITH a AS (
				SELECT * FROM unnest($2::bigint[], $3::text[], $4::text[]) AS a(seq, user_id, token)),
			w AS (
				SELECT p.seq, a.token FROM admission_places p JOIN a ON a.seq = p.seq AND a.user_id = p.user_id
				 WHERE p.queue = $1 AND p.seq = ANY ($2) AND p.status = 'WAITING'
				 ORDER BY p.seq FOR UPDATE OF p)
			UPDATE admission_places p
			   SET status = 'READY', token = w.token, expires_at = $5, admitted_at = $6, version = p.version + 1
			  FROM w WHERE p.seq = w.seq`,
			pgx.QueryExecModeCacheDescribe, queue, seqs, users, tokens, now.Add(ttl), now); err != nil {
			return err
		}
		rows, _ := tx.Query(ctx, `SELECT `+placeColumns+` FROM admission_places WHERE queue = $1 AND seq = ANY ($2)`,
			pgx.QueryExecModeCacheDescribe, queue, seqs)
		read, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (admission.Place, error) { return scanPlace(row) })
		if err != nil {
			return err
		}
		bySeq := make(map[int64]admission.Place, len(read))
		for _, p := range read {
			bySeq[p.Seq] = p
		}
		out = make([]admission.Place, len(admits))
		for i, a := range admits {
			p, ok := bySeq[a.Seq]
			if !ok || p.UserID != a.UserID {
				// Rolls the admission back: all or nothing.
				return fmt.Errorf("%s (seq %d): %w", a.UserID, a.Seq, admission.ErrNotFound)
			}
			out[i] = p
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("admit %d to %s: %w", len(admits), queue, err)
	}
	return out, nil
}

// Claim implements admission.Record, a compare-and-set on READY and the
// token's life at now. A CLAIMED token past its life at now is
// ErrNotFound, as it is once Expire has ended it.
func (r *Postgres) Claim(ctx context.Context, queue, token string, now time.Time) (admission.Place, error) {
	now = pgtime.Stamp(now)
	p, err := scanPlace(r.pool.QueryRow(ctx, `WITH t AS MATERIALIZED (`+lockToken+`)
		UPDATE admission_places p SET status = 'CLAIMED', claimed_at = $3, version = p.version + 1
		  FROM t WHERE p.seq = t.s AND t.st = 'READY' AND t.e > $3
		RETURNING `+placeColumns, queue, token, now))
	if err == nil {
		return p, nil
	}
	if !errors.Is(err, pgx.ErrNoRows) {
		return admission.Place{}, fmt.Errorf("claim a token of %s: %w", queue, err)
	}
	p, err = r.byToken(ctx, queue, token)
	switch {
	case errors.Is(err, pgx.ErrNoRows):
		return admission.Place{}, fmt.Errorf("claim a token of %s: %w", queue, admission.ErrNotFound)
	case err != nil:
		return admission.Place{}, fmt.Errorf("claim a token of %s: %w", queue, err)
	case p.Status == admission.StatusConsumed,
		p.Status == admission.StatusClaimed && !expired(p.ExpiresAt, now):
		return admission.Place{}, fmt.Errorf("claim the token of %s in %s: %w", p.UserID, queue, admission.ErrAlreadyClaimed)
	}
	return admission.Place{}, fmt.Errorf("claim the token of %s in %s: %w", p.UserID, queue, admission.ErrNotFound)
}

// lockToken locks and reads the place of token $2 in queue $1 by the
// token's index alone; Claim, Consume and Release then compare its status
// and life and change the row by its key. With those conditions on the
// row itself they matched admission_places_expiring too, and the plan
// PostgreSQL chose while the table was small walked every live token of
// the queue to find one. The lock makes the comparison a compare-and-set:
// a racing change commits first, and the row is read as it left it.
const lockToken = `SELECT seq AS s, status AS st, expires_at AS e FROM admission_places
	WHERE token = $2 AND queue = $1 FOR UPDATE`

func (r *Postgres) byToken(ctx context.Context, queue, token string) (admission.Place, error) {
	return scanPlace(r.pool.QueryRow(ctx, `SELECT `+placeColumns+` FROM admission_places
		WHERE token = $2 AND queue = $1`, queue, token))
}

// Consume implements admission.Record, a compare-and-set on CLAIMED and the
// token's life at now. An unknown token is ErrNotFound; a CLAIMED one past
// its life at now is ErrNotClaimed.
func (r *Postgres) Consume(ctx context.Context, queue, token string, now time.Time) (admission.Place, error) {
	return r.settle(ctx, "consume", queue, token, now, `status = 'CONSUMED', consumed_at = $3`)
}

// Release implements admission.Record: the place is READY again, its claim
// forgotten. An unknown token is ErrNotFound; a CLAIMED one past its life
// at now is ErrNotClaimed.
func (r *Postgres) Release(ctx context.Context, queue, token string, now time.Time) (admission.Place, error) {
	return r.settle(ctx, "release", queue, token, now, `status = 'READY', claimed_at = NULL`)
}

// settle applies set ($3 is now) to the CLAIMED, unexpired place of token.
func (r *Postgres) settle(ctx context.Context, what, queue, token string, now time.Time, set string) (admission.Place, error) {
	now = pgtime.Stamp(now)
	p, err := scanPlace(r.pool.QueryRow(ctx, `WITH t AS MATERIALIZED (`+lockToken+`)
		UPDATE admission_places p SET `+set+`, version = p.version + 1
		  FROM t WHERE p.seq = t.s AND t.st = 'CLAIMED' AND t.e > $3::timestamptz
		RETURNING `+placeColumns, queue, token, now))
	if err == nil {
		return p, nil
	}
	if !errors.Is(err, pgx.ErrNoRows) {
		return admission.Place{}, fmt.Errorf("%s a token of %s: %w", what, queue, err)
	}
	p, err = r.byToken(ctx, queue, token)
	switch {
	case errors.Is(err, pgx.ErrNoRows):
		return admission.Place{}, fmt.Errorf("%s a token of %s: %w", what, queue, admission.ErrNotFound)
	case err != nil:
		return admission.Place{}, fmt.Errorf("%s a token of %s: %w", what, queue, err)
	}
	return admission.Place{}, fmt.Errorf("%s the token of %s in %s: %w", what, p.UserID, queue, admission.ErrNotClaimed)
}

// Expire implements admission.Record. The places are ended, and returned,
// in the order their tokens' lives ended (ExpiresAt, then Seq). A place
// another transaction holds (a claim, a consumption) is skipped: the next
// sweep finds it if it is still due.
func (r *Postgres) Expire(ctx context.Context, queue string, now time.Time, limit int) ([]admission.Place, error) {
	if err := checkLimit("expire tokens of "+queue, limit); err != nil {
		return nil, err
	}
	ps, err := r.places(ctx, `WITH due AS (
			SELECT seq AS s FROM admission_places
			 WHERE queue = $1 AND status IN ('READY', 'CLAIMED') AND expires_at <= $2
			 ORDER BY expires_at, seq LIMIT $3 FOR UPDATE SKIP LOCKED)
		UPDATE admission_places p SET status = 'EXPIRED', version = p.version + 1
		  FROM due WHERE p.seq = due.s
		RETURNING `+placeColumns, queue, pgtime.Stamp(now), limit)
	if err != nil {
		return nil, fmt.Errorf("expire tokens of %s: %w", queue, err)
	}
	if len(ps) == 0 {
		return nil, nil
	}
	slices.SortFunc(ps, func(a, b admission.Place) int {
		if c := a.ExpiresAt.Compare(b.ExpiresAt); c != 0 {
			return c
		}
		return bySeq(a, b)
	})
	return ps, nil
}

// Waiting implements admission.Record, a walk of admission_places_waiting.
func (r *Postgres) Waiting(ctx context.Context, queue string, after int64, limit int) ([]admission.Place, error) {
	if err := checkLimit("waiting of "+queue, limit); err != nil {
		return nil, err
	}
	ps, err := r.places(ctx, `SELECT `+placeColumns+` FROM admission_places
		WHERE queue = $1 AND status = 'WAITING' AND seq > $2 ORDER BY seq LIMIT $3`, queue, after, limit)
	if err != nil {
		return nil, fmt.Errorf("waiting of %s: %w", queue, err)
	}
	if len(ps) == 0 {
		return nil, nil
	}
	return ps, nil
}

// SetEpoch implements admission.Record: the recorded epoch only grows, and
// setting the same one again is no change. The update waits for an Admit
// holding the row (see Admit).
func (r *Postgres) SetEpoch(ctx context.Context, queue string, epoch int64) error {
	if err := checkEpoch(queue, epoch); err != nil {
		return err
	}
	var cur int64
	err := r.pool.QueryRow(ctx, `INSERT INTO admission_epochs AS e (queue, epoch) VALUES ($1, $2)
		ON CONFLICT (queue) DO UPDATE SET epoch = excluded.epoch WHERE e.epoch <= excluded.epoch
		RETURNING epoch`, queue, epoch).Scan(&cur)
	if errors.Is(err, pgx.ErrNoRows) {
		if err := r.pool.QueryRow(ctx, `SELECT epoch FROM admission_epochs WHERE queue = $1`, queue).Scan(&cur); err != nil {
			return fmt.Errorf("set admitter epoch of %s: %w", queue, err)
		}
		return fmt.Errorf("set admitter epoch of %s: %d is below %d: %w", queue, epoch, cur, admission.ErrStaleEpoch)
	}
	if err != nil {
		return fmt.Errorf("set admitter epoch of %s: %w", queue, err)
	}
	return nil
}

// Epoch implements admission.Record: 0 before any.
func (r *Postgres) Epoch(ctx context.Context, queue string) (int64, error) {
	var epoch int64
	err := r.pool.QueryRow(ctx, `SELECT epoch FROM admission_epochs WHERE queue = $1`, queue).Scan(&epoch)
	if errors.Is(err, pgx.ErrNoRows) {
		return 0, nil
	}
	if err != nil {
		return 0, fmt.Errorf("admitter epoch of %s: %w", queue, err)
	}
	return epoch, nil
}

// Admitted implements admission.Record: the places admitted at or after
// since, in (AdmittedAt, Seq) order, whatever they became since.
func (r *Postgres) Admitted(ctx context.Context, queue string, since time.Time, limit int) ([]admission.Place, error) {
	if err := checkLimit("admitted to "+queue, limit); err != nil {
		return nil, err
	}
	ps, err := r.places(ctx, `SELECT `+placeColumns+` FROM admission_places
		WHERE queue = $1 AND admitted_at >= $2 ORDER BY admitted_at, seq LIMIT $3`, queue, pgtime.Stamp(since), limit)
	if err != nil {
		return nil, fmt.Errorf("admitted to %s: %w", queue, err)
	}
	if len(ps) == 0 {
		return nil, nil
	}
	return ps, nil
}
