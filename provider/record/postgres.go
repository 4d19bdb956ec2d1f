package record

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/matchgate/matchgate/internal/pgtime"
	"github.com/matchgate/matchgate/provider"
)

// Postgres is the provider.Record of a PostgreSQL database migrated by
// ledger.Migrate (migrations/0013_assignments.sql). Each method is one
// statement or one transaction.
type Postgres struct {
	pool *pgxpool.Pool
}

// NewPostgres returns a record over pool. The caller owns the pool and
// closes it after the last call.
func NewPostgres(pool *pgxpool.Pool) *Postgres { return &Postgres{pool: pool} }

var _ provider.Record = (*Postgres)(nil)

// offerLockClass is the first key of the advisory locks of offers; the
// second is a hash of the schema, the queue and the provider, so that
// schemas sharing a database do not queue behind each other. The other
// classes of the schema's locks (ledger.Migrate, admission entries) are
// other numbers.
const offerLockClass = 0x6d70 // "mp"

// columns is what scan reads.
const columns = `id::text, queue, ticket_id::text, requester, provider, status, score, parts, offered_at,
	accept_by, accepted_at, ended_at, coalesce(end_reason, ''), version`

// live is the SQL of a non-final status, as the one-live index has it.
const live = `status IN ('OFFERED', 'ACCEPTED')`

func scan(row pgx.Row) (provider.Assignment, error) {
	var (
		a                         provider.Assignment
		parts                     []byte
		acceptBy, accepted, ended *time.Time
	)
	err := row.Scan(&a.ID, &a.Queue, &a.TicketID, &a.Requester, &a.Provider, &a.Status, &a.Score, &parts,
		&a.OfferedAt, &acceptBy, &accepted, &ended, &a.EndReason, &a.Version)
	if err != nil {
		return provider.Assignment{}, err
	}
	if err := json.Unmarshal(parts, &a.Parts); err != nil {
		return provider.Assignment{}, fmt.Errorf("parts of %s: %w", a.ID, err)
	}
	a.Parts = cloneParts(a.Parts)
	a.OfferedAt = a.OfferedAt.UTC()
	a.AcceptBy, a.AcceptedAt, a.EndedAt = pgtime.OrZero(acceptBy), pgtime.OrZero(accepted), pgtime.OrZero(ended)
	return a, nil
}

func (r *Postgres) list(ctx context.Context, query string, args ...any) ([]provider.Assignment, error) {
	rows, _ := r.pool.Query(ctx, query, args...)
	as, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (provider.Assignment, error) { return scan(row) })
	if err != nil || len(as) == 0 {
		return nil, err
	}
	return as, nil
}

// get reads one assignment by its canonical id.
func get(ctx context.Context, q interface {
	QueryRow(context.Context, string, ...any) pgx.Row
}, id string) (provider.Assignment, error) {
	return scan(q.QueryRow(ctx, `SELECT `+columns+` FROM assignments WHERE id = $1`, id))
}

// Offer implements provider.Record, in one transaction holding the
// advisory lock of the queue and provider: the count of the provider's
// live assignments and the insert are one step for every Offer to that
// provider, in any process. Offers of one ticket to two providers hold two
// locks; the one-live index refuses the second insert, which waits for the
// first to commit.
func (r *Postgres) Offer(ctx context.Context, a provider.Assignment, capacity int) (provider.Assignment, error) {
	a, err := checkOffer(a, capacity)
	if err != nil {
		return provider.Assignment{}, err
	}
	parts, err := json.Marshal(a.Parts)
	if err != nil {
		return provider.Assignment{}, fmt.Errorf("offer %s: parts: %w", a.ID, err)
	}
	if a.Parts == nil {
		parts = []byte(`{}`)
	}
	var (
		stored   provider.Assignment
		repeated bool
	)
	err = pgx.BeginFunc(ctx, r.pool, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock($1, hashtext(current_schema() || '/' || $2 || '/' || $3))`,
			offerLockClass, a.Queue, a.Provider); err != nil {
			return err
		}
		// The repeat first: a retry is answered even once the slots are full.
		var err error
		stored, err = get(ctx, tx, a.ID)
		if err == nil {
			repeated = true
			return nil
		}
		if !errors.Is(err, pgx.ErrNoRows) {
			return err
		}
		var ticketHeld bool
		var held int
		if err := tx.QueryRow(ctx, `SELECT
				EXISTS (SELECT 1 FROM assignments WHERE ticket_id = $1 AND `+live+`),
				(SELECT count(*) FROM assignments WHERE queue = $2 AND provider = $3 AND `+live+`)`,
			a.TicketID, a.Queue, a.Provider).Scan(&ticketHeld, &held); err != nil {
			return err
		}
		if ticketHeld {
			return fmt.Errorf("offer %s of ticket %s: %w", a.ID, a.TicketID, provider.ErrTicketAssigned)
		}
		if held >= capacity {
			return fmt.Errorf("offer %s to %s in %s: %d of %d slots held: %w",
				a.ID, a.Provider, a.Queue, held, capacity, provider.ErrOverCapacity)
		}
		stored, err = scan(tx.QueryRow(ctx, `INSERT INTO assignments (id, queue, ticket_id, requester, provider,
				status, score, parts, offered_at, accept_by, accepted_at, version)
			VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12)
			RETURNING `+columns,
			a.ID, a.Queue, a.TicketID, a.Requester, a.Provider, a.Status, a.Score, string(parts),
			a.OfferedAt, pgtime.OrNull(a.AcceptBy), pgtime.OrNull(a.AcceptedAt), a.Version))
		return err
	})
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) && pgErr.Code == "23505" {
		// Another Offer of the ticket, or a retry of this one on another
		// connection, committed first: which one is read once it has.
		stored, err = get(ctx, r.pool, a.ID)
		if errors.Is(err, pgx.ErrNoRows) {
			return provider.Assignment{}, fmt.Errorf("offer %s of ticket %s: %w", a.ID, a.TicketID, provider.ErrTicketAssigned)
		}
		repeated = err == nil
	}
	switch {
	case errors.Is(err, provider.ErrTicketAssigned), errors.Is(err, provider.ErrOverCapacity):
		return provider.Assignment{}, err
	case err != nil:
		return provider.Assignment{}, fmt.Errorf("offer %s: %w", a.ID, err)
	case repeated:
		return repeat(stored, a)
	}
	return stored, nil
}

// change is a compare-and-set of the assignment id: the update set ($1 is
// the id, $2 now) applies where cond holds; when it does not, the row is
// read back and answered unchanged if done holds of it (a repeat), else
// ErrConflict.
func (r *Postgres) change(ctx context.Context, what, id string, now time.Time, cond, set string,
	done func(provider.Assignment) bool, args ...any) (provider.Assignment, error) {
	id, now, err := checkChange(what, id, now)
	if err != nil {
		return provider.Assignment{}, err
	}
	a, err := scan(r.pool.QueryRow(ctx, `UPDATE assignments SET `+set+`, version = version + 1
		WHERE id = $1 AND `+cond+` RETURNING `+columns, append([]any{id, now}, args...)...))
	if err == nil {
		return a, nil
	}
	if !errors.Is(err, pgx.ErrNoRows) {
		return provider.Assignment{}, fmt.Errorf("%s %s: %w", what, id, err)
	}
	a, err = get(ctx, r.pool, id)
	switch {
	case errors.Is(err, pgx.ErrNoRows):
		return provider.Assignment{}, fmt.Errorf("%s %s: %w", what, id, provider.ErrNotFound)
	case err != nil:
		return provider.Assignment{}, fmt.Errorf("%s %s: %w", what, id, err)
	case done(a):
		return a, nil
	}
	return provider.Assignment{}, fmt.Errorf("%s %s: %s: %w", what, id, a.Status, provider.ErrConflict)
}

func has(s provider.Status) func(provider.Assignment) bool {
	return func(a provider.Assignment) bool { return a.Status == s }
}

// Accept implements provider.Record, a compare-and-set on OFFERED and the
// window at now.
func (r *Postgres) Accept(ctx context.Context, id string, now time.Time) (provider.Assignment, error) {
	return r.change(ctx, "accept", id, now, `status = 'OFFERED' AND accept_by > $2`,
		`status = 'ACCEPTED', accepted_at = $2`, has(provider.StatusAccepted))
}

// Decline implements provider.Record, a compare-and-set on OFFERED.
func (r *Postgres) Decline(ctx context.Context, id string, now time.Time) (provider.Assignment, error) {
	return r.change(ctx, "decline", id, now, `status = 'OFFERED'`,
		`status = 'DECLINED', ended_at = $2, end_reason = $3`, has(provider.StatusDeclined), reasonDeclined)
}

// End implements provider.Record, a compare-and-set on ACCEPTED.
func (r *Postgres) End(ctx context.Context, id, reason string, now time.Time) (provider.Assignment, error) {
	if reason == "" {
		return provider.Assignment{}, fmt.Errorf("end %s: no reason", id)
	}
	return r.change(ctx, "end", id, now, `status = 'ACCEPTED'`,
		`status = 'ENDED', ended_at = $2, end_reason = $3`, has(provider.StatusEnded), reason)
}

// Expire implements provider.Record. The offers are ended, and returned,
// in the order their windows closed (AcceptBy, then ID). An offer another
// transaction holds (an acceptance, a decline) is skipped: that change
// wins, and the next sweep finds the offer if it is still due.
func (r *Postgres) Expire(ctx context.Context, queue string, now time.Time, limit int) ([]provider.Assignment, error) {
	if err := checkExpire(queue, now, limit); err != nil {
		return nil, err
	}
	as, err := r.list(ctx, `WITH due AS (
			SELECT id FROM assignments
			 WHERE queue = $1 AND status = 'OFFERED' AND accept_by <= $2
			 ORDER BY accept_by, id LIMIT $3 FOR UPDATE SKIP LOCKED),
		ended AS (
			UPDATE assignments a SET status = 'EXPIRED', ended_at = $2, end_reason = $4, version = a.version + 1
			  FROM due WHERE a.id = due.id AND a.status = 'OFFERED'
			RETURNING a.*)
		SELECT `+columns+` FROM ended ORDER BY ended.accept_by, ended.id`, queue, pgtime.Stamp(now), limit, reasonExpired)
	if err != nil {
		return nil, fmt.Errorf("expire offers of %s: %w", queue, err)
	}
	return as, nil
}

// Get implements provider.Record.
func (r *Postgres) Get(ctx context.Context, id string) (provider.Assignment, error) {
	id, err := canonicalID("get assignment", id)
	if err != nil {
		return provider.Assignment{}, err
	}
	a, err := get(ctx, r.pool, id)
	switch {
	case errors.Is(err, pgx.ErrNoRows):
		return provider.Assignment{}, fmt.Errorf("get assignment %s: %w", id, provider.ErrNotFound)
	case err != nil:
		return provider.Assignment{}, fmt.Errorf("get assignment %s: %w", id, err)
	}
	return a, nil
}

// Live implements provider.Record, a walk of assignments_live: the
// provider's OFFERED and ACCEPTED assignments in the queue, by OfferedAt
// then ID; nil when none.
func (r *Postgres) Live(ctx context.Context, queue, providerID string) ([]provider.Assignment, error) {
	as, err := r.list(ctx, `SELECT `+columns+` FROM assignments
		WHERE queue = $1 AND provider = $2 AND `+live+` ORDER BY offered_at, id`, queue, providerID)
	if err != nil {
		return nil, fmt.Errorf("live assignments of %s in %s: %w", providerID, queue, err)
	}
	return as, nil
}

// Refused implements provider.Record, by the index of refused offers
// (migration 0015).
func (r *Postgres) Refused(ctx context.Context, queue string, ticketIDs []string) (map[string][]string, error) {
	ids := make([]string, 0, len(ticketIDs))
	asked := make(map[string]string, len(ticketIDs)) // canonical → as asked
	for _, t := range ticketIDs {
		if id, err := canonicalID("refused: ticket", t); err == nil {
			ids = append(ids, id)
			asked[id] = t
		}
	}
	out := map[string][]string{}
	if len(ids) == 0 {
		return out, nil
	}
	rows, err := r.pool.Query(ctx, `SELECT DISTINCT ticket_id::text, provider FROM assignments
		WHERE ticket_id = ANY ($1::uuid[]) AND queue = $2 AND status IN ('DECLINED', 'EXPIRED')
		ORDER BY 1, 2`, ids, queue)
	if err != nil {
		return nil, fmt.Errorf("refused providers in %s: %w", queue, err)
	}
	defer rows.Close()
	for rows.Next() {
		var t, p string
		if err := rows.Scan(&t, &p); err != nil {
			return nil, fmt.Errorf("refused providers in %s: %w", queue, err)
		}
		out[asked[t]] = append(out[asked[t]], p)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("refused providers in %s: %w", queue, err)
	}
	return out, nil
}

// OfferMany implements provider.Record in one transaction and one round
// trip for the offers that can be taken: the advisory locks of the
// offers' providers, taken in (queue, provider) order so that two batches
// never wait on each other in a cycle, then per offer an insert that
// counts the provider's live assignments under that lock and gives way to
// the one-live-per-ticket index and to a repeat of its id (ON CONFLICT DO
// NOTHING). Only an offer that inserted nothing is read back, to answer
// it as Offer would: a repeat, ErrTicketAssigned or ErrOverCapacity.
func (r *Postgres) OfferMany(ctx context.Context, offers []provider.OfferRequest) ([]provider.OfferResult, error) {
	out := make([]provider.OfferResult, len(offers))
	checked := make([]provider.Assignment, len(offers))
	parts := make([]string, len(offers))
	var order []int
	for i, o := range offers {
		a, err := checkOffer(o.Assignment, o.Capacity)
		if err != nil {
			out[i].Err = err
			continue
		}
		p := []byte(`{}`)
		if a.Parts != nil {
			if p, err = json.Marshal(a.Parts); err != nil {
				out[i].Err = fmt.Errorf("offer %s: parts: %w", a.ID, err)
				continue
			}
		}
		checked[i], parts[i] = a, string(p)
		order = append(order, i)
	}
	if len(order) == 0 {
		return out, nil
	}
	slices.SortStableFunc(order, func(x, y int) int {
		return cmp.Or(cmp.Compare(checked[x].Queue, checked[y].Queue), cmp.Compare(checked[x].Provider, checked[y].Provider))
	})
	err := pgx.BeginFunc(ctx, r.pool, func(tx pgx.Tx) error {
		b := &pgx.Batch{}
		locked := map[[2]string]bool{}
		for _, i := range order {
			a := checked[i]
			if k := [2]string{a.Queue, a.Provider}; !locked[k] {
				locked[k] = true
				b.Queue(`SELECT pg_advisory_xact_lock($1, hashtext(current_schema() || '/' || $2 || '/' || $3))`,
					offerLockClass, a.Queue, a.Provider)
			}
			b.Queue(`INSERT INTO assignments (id, queue, ticket_id, requester, provider,
					status, score, parts, offered_at, accept_by, accepted_at, version)
				SELECT $1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12
				 WHERE (SELECT count(*) FROM assignments WHERE queue = $2 AND provider = $5 AND `+live+`) < $13
				ON CONFLICT DO NOTHING
				RETURNING `+columns,
				a.ID, a.Queue, a.TicketID, a.Requester, a.Provider, a.Status, a.Score, parts[i],
				a.OfferedAt, pgtime.OrNull(a.AcceptBy), pgtime.OrNull(a.AcceptedAt), a.Version, offers[i].Capacity)
		}
		res := tx.SendBatch(ctx, b)
		var missed []int
		locked = map[[2]string]bool{}
		for _, i := range order {
			a := checked[i]
			if k := [2]string{a.Queue, a.Provider}; !locked[k] {
				locked[k] = true
				if _, err := res.Exec(); err != nil {
					res.Close()
					return err
				}
			}
			stored, err := scan(res.QueryRow())
			switch {
			case errors.Is(err, pgx.ErrNoRows):
				missed = append(missed, i)
			case err != nil:
				res.Close()
				return err
			default:
				out[i].Assignment = stored
			}
		}
		if err := res.Close(); err != nil {
			return err
		}
		// Why each offer inserted nothing, in the same transaction.
		for _, i := range missed {
			a := checked[i]
			stored, err := get(ctx, tx, a.ID)
			if err == nil {
				out[i].Assignment, out[i].Err = repeat(stored, a)
				continue
			}
			if !errors.Is(err, pgx.ErrNoRows) {
				return err
			}
			var ticketHeld bool
			if err := tx.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM assignments WHERE ticket_id = $1 AND `+live+`)`, a.TicketID).Scan(&ticketHeld); err != nil {
				return err
			}
			if ticketHeld {
				out[i].Err = fmt.Errorf("offer %s of ticket %s: %w", a.ID, a.TicketID, provider.ErrTicketAssigned)
			} else {
				out[i].Err = fmt.Errorf("offer %s to %s in %s: at its capacity of %d: %w", a.ID, a.Provider, a.Queue, offers[i].Capacity, provider.ErrOverCapacity)
			}
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("offer %d: %w", len(order), err)
	}
	return out, nil
}
