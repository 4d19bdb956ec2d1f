package ledger

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/matchgate/matchgate/internal/group"
	"github.com/matchgate/matchgate/matcher"
)

// Postgres is the matcher.Ledger of a PostgreSQL database migrated by
// Migrate. Each method is one transaction (joins, and accepts and dissolves,
// arriving together share one: see groupcommit.go); CommitMatches is one
// round trip.
type Postgres struct {
	pool      *pgxpool.Pool
	ins       *group.Group[insertReq, insertResult]
	decisions *group.Group[decisionReq, decisionResult]
}

// NewPostgres returns a ledger over pool. The caller owns the pool and
// closes it after the last call.
func NewPostgres(pool *pgxpool.Pool) *Postgres {
	l := &Postgres{pool: pool}
	l.ins = newInserter(l)
	l.decisions = newDecider(l)
	return l
}

var _ matcher.Ledger = (*Postgres)(nil)

const uniqueViolation = "23505"

// ticketColumns is what scanTicket reads. Ids are read as text so that they
// come back in the canonical form Memory produces too.
const ticketColumns = `id::text, user_id, queue, region, status, skill, estimated, activity, attributes,
	enqueued_at, head_start_ms, deadline, coalesce(match_id::text, ''), coalesce(cancel_reason, ''),
	updated_at, version, coalesce(name, '')`

// scanTicket reads ticketColumns, then any columns after them into more.
func scanTicket(row pgx.Row, more ...any) (matcher.Ticket, error) {
	var (
		t         matcher.Ticket
		attrs     []byte
		headStart int64
	)
	err := row.Scan(append([]any{&t.ID, &t.UserID, &t.Queue, &t.Region, &t.Status, &t.Skill, &t.Estimated, &t.Activity, &attrs,
		&t.EnqueuedAt, &headStart, &t.Deadline, &t.MatchID, &t.CancelReason, &t.UpdatedAt, &t.Version, &t.Name}, more...)...)
	if err != nil {
		return matcher.Ticket{}, err
	}
	if attrs != nil {
		if err := json.Unmarshal(attrs, &t.Attributes); err != nil {
			return matcher.Ticket{}, fmt.Errorf("attributes of ticket %s: %w", t.ID, err)
		}
		t.Attributes = cloneAttributes(t.Attributes) // {} reads back as nil
	}
	t.HeadStart = time.Duration(headStart) * time.Millisecond
	t.EnqueuedAt = t.EnqueuedAt.UTC()
	t.Deadline = t.Deadline.UTC()
	t.UpdatedAt = t.UpdatedAt.UTC()
	return t, nil
}

const matchColumns = `id::text, queue, region, state, formed_by, players, bots, spread,
	server_address, server_session, accept_by, accepted, created_at, version, provider`

func scanMatch(row pgx.Row) (matcher.Match, error) {
	var (
		m                           matcher.Match
		players, accepted, provider []byte
		address, sessID             *string
		acceptBy                    *time.Time
	)
	err := row.Scan(&m.ID, &m.Queue, &m.Region, &m.State, &m.FormedBy, &players, &m.Bots, &m.Spread,
		&address, &sessID, &acceptBy, &accepted, &m.CreatedAt, &m.Version, &provider)
	if err != nil {
		return matcher.Match{}, err
	}
	if err := json.Unmarshal(players, &m.Players); err != nil {
		return matcher.Match{}, fmt.Errorf("players of match %s: %w", m.ID, err)
	}
	if provider != nil { // NULL: not a provider match
		if err := json.Unmarshal(provider, &m.Provider); err != nil {
			return matcher.Match{}, fmt.Errorf("provider of match %s: %w", m.ID, err)
		}
	}
	if err := json.Unmarshal(accepted, &m.Accepted); err != nil {
		return matcher.Match{}, fmt.Errorf("accepts of match %s: %w", m.ID, err)
	}
	if len(m.Accepted) == 0 {
		m.Accepted = nil // as Memory: none is nil
	}
	if address != nil {
		m.Server = &matcher.Server{Address: *address}
		if sessID != nil {
			m.Server.Session = *sessID
		}
	}
	if acceptBy != nil {
		at := acceptBy.UTC()
		m.AcceptBy = &at
	}
	m.CreatedAt = m.CreatedAt.UTC()
	return m, nil
}

// nullIfEmpty maps "" to SQL NULL, as for cancel_reason.
func nullIfEmpty(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}

// CreateTicket implements matcher.Ledger. The unique partial index decides
// which of two concurrent joins of one user wins; the loser reads the
// winner's ticket. That ticket may be resolved before the read, in which case
// the user is free to join again and the insert is retried.
//
// Joins are group-committed (see groupcommit.go).
func (l *Postgres) CreateTicket(ctx context.Context, t matcher.Ticket) (matcher.Ticket, error) {
	t, err := newTicket(t)
	if err != nil {
		return matcher.Ticket{}, err
	}
	attrs, err := marshalAttributes(t)
	if err != nil {
		return matcher.Ticket{}, err
	}
	return l.create(ctx, t, attrs)
}

// refuseMatchedSQL deletes, of the tickets just inserted ($1 their ids, $2
// their users: a ticket of another user that holds a colliding id is left
// alone), those whose user is seated in a PENDING_ACCEPT match, and names
// that match. It runs as its own statement after the insert, in the
// insert's transaction: an insert that waited on the unique index for a
// commit moving the user's WAITING ticket into a match proceeds once that
// commit is done, and only a later statement's snapshot sees the match it
// wrote. The batch drives the join through the indexes whatever the
// table's statistics say, and the uncorrelated EXISTS (a one-time filter
// on the pending matches' partial index) skips it whole while no match
// waits for accepts (the former shape cost a batch of 64 joins eight times
// as much: docs/BENCHMARKS.md §5).
const refuseMatchedSQL = `DELETE FROM tickets t
	USING unnest($1::uuid[], $2::text[]) AS j(id, user_id)
	JOIN tickets p ON p.user_id = j.user_id AND p.status = 'MATCHED'
	JOIN matches m ON m.id = p.match_id AND m.state = 'PENDING_ACCEPT'
	WHERE t.id = j.id AND t.user_id = j.user_id AND t.status = 'WAITING'
	  AND EXISTS (SELECT 1 FROM matches WHERE state = 'PENDING_ACCEPT')
	RETURNING t.id::text, m.id::text`

// insertOne records one validated ticket: the insert and the refusal of a
// user with a pending match in one batch, one round trip and one implicit
// transaction.
func (l *Postgres) insertOne(ctx context.Context, t matcher.Ticket, attrs []byte) (matcher.Ticket, error) {
	for range createTicketAttempts {
		b := &pgx.Batch{}
		b.Queue(`INSERT INTO tickets (id, user_id, queue, region, status, skill,
			estimated, activity, attributes, enqueued_at, head_start_ms, deadline, updated_at, version, name)
			VALUES ($1, $2, $3, $4, 'WAITING', $5, $6, $7, $8, $9, $10, $11, $12, $13, $14)`,
			t.ID, t.UserID, t.Queue, t.Region, t.Skill, t.Estimated, t.Activity, attrs, t.EnqueuedAt,
			t.HeadStart.Milliseconds(), t.Deadline, t.UpdatedAt, t.Version, nullIfEmpty(t.Name))
		b.Queue(refuseMatchedSQL, [][16]byte{uuidParam(t.ID)}, []string{t.UserID})
		br := l.pool.SendBatch(ctx, b)
		_, err := br.Exec()
		var refused []string
		if err == nil {
			refused, err = scanRefused(br)
		}
		if cerr := br.Close(); err == nil {
			err = cerr
		}
		var pgErr *pgconn.PgError
		if !errors.As(err, &pgErr) || pgErr.Code != uniqueViolation {
			if err != nil {
				return matcher.Ticket{}, fmt.Errorf("create ticket %s: %w", t.ID, err)
			}
			if len(refused) > 0 {
				return matcher.Ticket{}, &matcher.AlreadyMatchedError{UserID: t.UserID, MatchID: refused[1]}
			}
			return t, nil
		}
		// Either the user already waits (tickets_one_waiting_per_user) or the
		// id is taken (tickets_pkey); the waiting ticket wins when both hold,
		// as in Memory.
		existing, err := scanTicket(l.pool.QueryRow(ctx,
			`SELECT `+ticketColumns+` FROM tickets WHERE user_id = $1 AND status = 'WAITING'`, t.UserID))
		switch {
		case err == nil:
			return matcher.Ticket{}, &matcher.AlreadyQueuedError{Existing: existing}
		case !errors.Is(err, pgx.ErrNoRows):
			return matcher.Ticket{}, fmt.Errorf("create ticket %s: read waiting ticket of %s: %w", t.ID, t.UserID, err)
		case pgErr.ConstraintName == "tickets_pkey":
			return matcher.Ticket{}, fmt.Errorf("create ticket %s: %w", t.ID, errIDInUse)
		}
	}
	return matcher.Ticket{}, fmt.Errorf("create ticket %s: waiting ticket of user %s kept changing", t.ID, t.UserID)
}

// scanRefused reads refuseMatchedSQL's answer as (ticket id, match id)
// pairs, flattened.
func scanRefused(br pgx.BatchResults) ([]string, error) {
	rows, err := br.Query()
	if err != nil {
		return nil, err
	}
	var out []string
	for rows.Next() {
		var ticket, match string
		if err := rows.Scan(&ticket, &match); err != nil {
			rows.Close()
			return nil, err
		}
		out = append(out, ticket, match)
	}
	rows.Close()
	return out, rows.Err()
}

// Ticket implements matcher.Ledger.
func (l *Postgres) Ticket(ctx context.Context, id string) (matcher.Ticket, error) {
	cid, ok := canonicalID(id)
	if !ok {
		// Not a uuid, so no such ticket; asking PostgreSQL would fail the cast.
		return matcher.Ticket{}, fmt.Errorf("ticket %s: %w", id, matcher.ErrNotFound)
	}
	t, err := scanTicket(l.pool.QueryRow(ctx, `SELECT `+ticketColumns+` FROM tickets WHERE id = $1`, cid))
	if errors.Is(err, pgx.ErrNoRows) {
		return matcher.Ticket{}, fmt.Errorf("ticket %s: %w", id, matcher.ErrNotFound)
	}
	if err != nil {
		return matcher.Ticket{}, fmt.Errorf("ticket %s: %w", id, err)
	}
	return t, nil
}

// uuids converts canonical ids (already checked) for uuid parameters.
func uuids(ids []string) [][16]byte {
	out := make([][16]byte, len(ids))
	for i, id := range ids {
		out[i] = uuidParam(id)
	}
	return out
}

// uuidParam is a canonical id (already checked) as a uuid parameter. Not a
// uuid.UUID: that is a driver.Valuer, which pgx prefers to the bytes, so
// every element of a []uuid.UUID was formatted as text and parsed back —
// 6% of the server's CPU samples offered 5,000 joins/s.
func uuidParam(id string) [16]byte { return uuid.MustParse(id) }

// Match implements matcher.Ledger.
func (l *Postgres) Match(ctx context.Context, id string) (matcher.Match, error) {
	cid, ok := canonicalID(id)
	if !ok {
		return matcher.Match{}, fmt.Errorf("match %s: %w", id, matcher.ErrNotFound)
	}
	m, err := scanMatch(l.pool.QueryRow(ctx, `SELECT `+matchColumns+` FROM matches WHERE id = $1`, cid))
	if errors.Is(err, pgx.ErrNoRows) {
		return matcher.Match{}, fmt.Errorf("match %s: %w", id, matcher.ErrNotFound)
	}
	if err != nil {
		return matcher.Match{}, fmt.Errorf("match %s: %w", id, err)
	}
	return m, nil
}

// UserState implements matcher.Ledger. The reads are not one snapshot; a
// match is never deleted, so every match id read first is found last. Each
// read walks tickets_by_user_updated backwards from the newest.
func (l *Postgres) UserState(ctx context.Context, userID string, since time.Time, limit int) (matcher.TicketPage, error) {
	since = stamp(since)
	live, err := l.tickets(ctx, `SELECT `+ticketColumns+` FROM tickets
		WHERE user_id = $1 AND (status = 'WAITING' OR status = 'MATCHED' AND updated_at >= $2
			AND EXISTS (SELECT 1 FROM matches m WHERE m.id = tickets.match_id AND m.state IN ('PENDING_ACCEPT', 'READY')))
		ORDER BY updated_at DESC, id DESC LIMIT $3`, userID, since, limit)
	if err != nil {
		return matcher.TicketPage{}, fmt.Errorf("user state %s: live tickets: %w", userID, err)
	}
	resolved, err := l.tickets(ctx, `SELECT `+ticketColumns+` FROM tickets
		WHERE user_id = $1 AND status <> 'WAITING' AND updated_at >= $2
		ORDER BY updated_at DESC, id DESC LIMIT $3`, userID, since, limit+1)
	if err != nil {
		return matcher.TicketPage{}, fmt.Errorf("user state %s: resolved tickets: %w", userID, err)
	}
	page := pageOf(resolved, limit)
	for _, t := range live {
		if !slices.ContainsFunc(page.Tickets, func(o matcher.Ticket) bool { return o.ID == t.ID }) {
			page.Tickets = append(page.Tickets, t)
		}
	}
	slices.SortFunc(page.Tickets, ticketOrder)
	if page.Matches, err = l.matchesOf(ctx, page.Tickets); err != nil {
		return matcher.TicketPage{}, fmt.Errorf("user state %s: %w", userID, err)
	}
	return page, nil
}

// UserTickets implements matcher.Ledger: a keyset page on
// tickets_by_user_updated, (updated_at, id) below the cursor.
func (l *Postgres) UserTickets(ctx context.Context, userID string, before matcher.TicketCursor, limit int) (matcher.TicketPage, error) {
	var ts []matcher.Ticket
	var err error
	if before.IsZero() {
		ts, err = l.tickets(ctx, `SELECT `+ticketColumns+` FROM tickets
			WHERE user_id = $1 AND status <> 'WAITING'
			ORDER BY updated_at DESC, id DESC LIMIT $2`, userID, limit+1)
	} else {
		id, ok := canonicalID(before.ID)
		if !ok {
			return matcher.TicketPage{}, fmt.Errorf("tickets of %s: cursor id %q is not a uuid", userID, before.ID)
		}
		ts, err = l.tickets(ctx, `SELECT `+ticketColumns+` FROM tickets
			WHERE user_id = $1 AND status <> 'WAITING' AND updated_at <= $2 AND (updated_at, id) < ($2, $3)
			ORDER BY updated_at DESC, id DESC LIMIT $4`, userID, stamp(before.At), id, limit+1)
	}
	if err != nil {
		return matcher.TicketPage{}, fmt.Errorf("tickets of %s: %w", userID, err)
	}
	page := pageOf(ts, limit)
	if page.Matches, err = l.matchesOf(ctx, page.Tickets); err != nil {
		return matcher.TicketPage{}, fmt.Errorf("tickets of %s: %w", userID, err)
	}
	return page, nil
}

// pageOf cuts newest-first tickets (read with one row more than limit) to
// a page: More when the extra row came, Next at the oldest kept.
func pageOf(ts []matcher.Ticket, limit int) matcher.TicketPage {
	var page matcher.TicketPage
	if len(ts) > limit {
		ts, page.More = ts[:limit], true
	}
	if len(ts) > 0 {
		last := ts[len(ts)-1]
		page.Next = matcher.TicketCursor{At: last.UpdatedAt, ID: last.ID}
		page.Tickets = ts
	}
	return page
}

func (l *Postgres) tickets(ctx context.Context, query string, args ...any) ([]matcher.Ticket, error) {
	rows, _ := l.pool.Query(ctx, query, args...)
	return pgx.CollectRows(rows, func(r pgx.CollectableRow) (matcher.Ticket, error) { return scanTicket(r) })
}

// matchesOf reads the matches of tickets, in created_at, id order.
func (l *Postgres) matchesOf(ctx context.Context, tickets []matcher.Ticket) ([]matcher.Match, error) {
	var ids []string
	for _, t := range tickets {
		if t.MatchID != "" && !slices.Contains(ids, t.MatchID) {
			ids = append(ids, t.MatchID)
		}
	}
	if len(ids) == 0 {
		return nil, nil
	}
	rows, _ := l.pool.Query(ctx, `SELECT `+matchColumns+` FROM matches
		WHERE id = ANY ($1) ORDER BY created_at, id`, uuids(ids))
	matches, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (matcher.Match, error) { return scanMatch(r) })
	if err != nil {
		return nil, fmt.Errorf("matches: %w", err)
	}
	if len(matches) == 0 {
		return nil, nil
	}
	return matches, nil
}

// Resolve implements matcher.Ledger.
func (l *Postgres) Resolve(ctx context.Context, id string, status matcher.TicketStatus, reason string, at time.Time) (matcher.Ticket, []matcher.Event, error) {
	if err := checkResolve(id, status); err != nil {
		return matcher.Ticket{}, nil, err
	}
	cid, ok := canonicalID(id)
	if !ok {
		return matcher.Ticket{}, nil, fmt.Errorf("resolve ticket %s: %w", id, matcher.ErrNotFound)
	}
	var (
		t matcher.Ticket
		e matcher.Event
	)
	err := pgx.BeginFunc(ctx, l.pool, func(tx pgx.Tx) error {
		var err error
		t, err = scanTicket(tx.QueryRow(ctx, `UPDATE tickets
			SET status = $2, cancel_reason = $3, updated_at = $4, version = version + 1
			WHERE id = $1 AND status = 'WAITING'
			RETURNING `+ticketColumns, cid, string(status), nullIfEmpty(reason), stamp(at)))
		if err != nil {
			return err
		}
		e = matcher.TicketUpdatedEvent(t)
		data, err := encodeEvent(e)
		if err != nil {
			return err
		}
		return tx.QueryRow(ctx, `INSERT INTO outbox (users, payload) VALUES ($1, $2) RETURNING id, created_at`,
			e.Users, data).Scan(&e.ID, &e.CreatedAt)
	})
	if errors.Is(err, pgx.ErrNoRows) {
		// Lost the compare-and-set (or no such ticket). A ticket goes back
		// to WAITING only when its match dissolves; if that happened just
		// now, the compare-and-set is tried again.
		cur, err := l.Ticket(ctx, cid)
		if err != nil {
			return matcher.Ticket{}, nil, fmt.Errorf("resolve %w", err)
		}
		if cur.Status == matcher.StatusWaiting {
			return l.Resolve(ctx, cid, status, reason, at)
		}
		return matcher.Ticket{}, nil, &matcher.NotWaitingError{Ticket: cur}
	}
	if err != nil {
		return matcher.Ticket{}, nil, fmt.Errorf("resolve ticket %s: %w", id, err)
	}
	e.CreatedAt = e.CreatedAt.UTC()
	return t, []matcher.Event{e}, nil
}

// CommitMatches implements matcher.Ledger with the commit_matches function
// of migration 0010, for a batch of one as for many: the whole
// batch in one statement, hence one round trip and one implicit transaction,
// and a fixed number of statements inside it however many matches. A batch
// holding a provider match adds setProviderSQL after it, both in one
// explicit transaction sent as one batch (see commitWithProviders).
func (l *Postgres) CommitMatches(ctx context.Context, ms []matcher.Match, epoch int64) ([]matcher.CommitResult, error) {
	if len(ms) == 0 {
		return nil, nil
	}
	n := len(ms)
	var (
		ids                      = make([][16]byte, n)
		queues, regions, states  = make([]string, n), make([]string, n), make([]string, n)
		formedBy, players, parts = make([]string, n), make([]string, n), make([]string, n)
		bots                     = make([]int32, n)
		spreads                  = make([]float64, n)
		addresses, sessions      = make([]*string, n), make([]*string, n)
		acceptBy                 = make([]*time.Time, n)
		created                  = make([]time.Time, n)
		versions                 = make([]int64, n)
		seatMatch, userMatch     []int32
		seats                    [][16]byte
		users                    []string
		payloads                 = make([][]byte, n)
		events                   = make([]matcher.Event, n)
		providerIDs              [][16]byte
		providers                []string
	)
	ms = slices.Clone(ms)
	for i := range ms {
		m, err := newMatch(ms[i])
		if err != nil {
			return nil, err
		}
		ms[i] = m
		p, err := json.Marshal(m.Players)
		if err != nil {
			return nil, fmt.Errorf("commit match %s: players: %w", m.ID, err)
		}
		ids[i], queues[i], regions[i], states[i] = uuidParam(m.ID), m.Queue, m.Region, m.State
		formedBy[i], players[i], parts[i] = m.FormedBy, string(p), partitionOf(m)
		bots[i], spreads[i], acceptBy[i], created[i], versions[i] = int32(m.Bots), m.Spread, m.AcceptBy, m.CreatedAt, m.Version
		if m.Server != nil {
			addresses[i], sessions[i] = &m.Server.Address, &m.Server.Session
		}
		if m.Provider != nil {
			seat, err := json.Marshal(m.Provider)
			if err != nil {
				return nil, fmt.Errorf("commit match %s: provider: %w", m.ID, err)
			}
			providerIDs, providers = append(providerIDs, ids[i]), append(providers, string(seat))
		}
		for _, id := range m.TicketIDs() {
			seatMatch = append(seatMatch, int32(i+1))
			seats = append(seats, uuidParam(id))
		}
		events[i] = matcher.MatchFoundEvent(m)
		for _, u := range events[i].Users {
			userMatch = append(userMatch, int32(i+1))
			users = append(users, u)
		}
		if payloads[i], err = encodeEvent(events[i]); err != nil {
			return nil, fmt.Errorf("commit match %s: %w", m.ID, err)
		}
	}
	args := []any{ids, queues, regions, states, formedBy, players, bots, spreads, addresses, sessions, acceptBy, created,
		versions, parts, epoch, seatMatch, seats, userMatch, users, payloads}
	if len(providers) > 0 {
		return l.commitWithProviders(ctx, ms, events, epoch, args, providerIDs, providers)
	}
	rows, err := l.pool.Query(ctx, commitMatchesSQL, args...)
	if err != nil {
		return nil, fmt.Errorf("commit %d matches: %w", n, err)
	}
	defer rows.Close()
	out, err := readCommits(rows, ms, events, epoch)
	if err != nil {
		return nil, err
	}
	// The transaction ends with the statement: an error from the server
	// here (the commit itself failing) means none of it was written, but a
	// connection lost here may have lost the reply of a commit that landed;
	// the engine settles that from the record (see CommitMatches).
	if err := rows.Err(); err != nil {
		return nil, commitError(n, err)
	}
	if len(out) != n {
		return nil, fmt.Errorf("commit %d matches: %d answers", n, len(out))
	}
	return out, nil
}

// commitMatchesSQL calls migration 0010's commit_matches with
// CommitMatches's twenty column-wise arguments.
const commitMatchesSQL = `SELECT outcome, still_waiting, event_id, event_at FROM commit_matches(
	$1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17, $18, $19, $20)`

// setProviderSQL writes the provider seats of a batch's matches ($1 their
// ids, $2 the seats) once commit_matches has inserted them. A match of the
// batch that was not committed has no row, so nothing is written for it;
// a seat is written once (provider IS NULL), so the retry of a commit whose
// reply was lost writes nothing again.
const setProviderSQL = `UPDATE matches SET provider = v.p
	FROM unnest($1::uuid[], $2::jsonb[]) AS v(id, p)
	WHERE matches.id = v.id AND matches.provider IS NULL`

// commitWithProviders is CommitMatches for a batch holding provider
// matches: commit_matches, then setProviderSQL, in one explicit
// transaction sent as one batch (one round trip), so that a match is
// recorded with its seat or not at all. The answers of commit_matches are
// only believed once COMMIT succeeded.
func (l *Postgres) commitWithProviders(ctx context.Context, ms []matcher.Match, events []matcher.Event, epoch int64,
	args []any, providerIDs [][16]byte, providers []string) ([]matcher.CommitResult, error) {
	n := len(ms)
	b := &pgx.Batch{}
	b.Queue(`BEGIN`)
	b.Queue(commitMatchesSQL, args...)
	b.Queue(setProviderSQL, providerIDs, providers)
	b.Queue(`COMMIT`)
	// An error leaves the connection in the failed transaction; the pool
	// closes a connection released in a transaction rather than reuse it.
	br := l.pool.SendBatch(ctx, b)
	out, err := func() ([]matcher.CommitResult, error) {
		if _, err := br.Exec(); err != nil {
			return nil, err
		}
		rows, err := br.Query()
		if err != nil {
			return nil, err
		}
		out, err := readCommits(rows, ms, events, epoch)
		rows.Close()
		if err != nil {
			return nil, err
		}
		if err := rows.Err(); err != nil {
			return nil, err
		}
		if _, err := br.Exec(); err != nil {
			return nil, fmt.Errorf("provider seats: %w", err)
		}
		if _, err := br.Exec(); err != nil {
			return nil, fmt.Errorf("commit: %w", err)
		}
		return out, nil
	}()
	if cerr := br.Close(); err == nil && cerr != nil {
		err = cerr
	}
	// As for the one statement: a failure reported by the server wrote
	// nothing; a connection lost before COMMIT's reply may have lost the
	// reply of a commit that landed, which committing again tells.
	if err != nil {
		return nil, commitError(n, err)
	}
	if len(out) != n {
		return nil, fmt.Errorf("commit %d matches: %d answers", n, len(out))
	}
	return out, nil
}

// commitError is the error of a batch that failed as a whole: a reused
// match id is errIDInUse.
func commitError(n int, err error) error {
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) && pgErr.Code == uniqueViolation && pgErr.ConstraintName == "matches_pkey" {
		return fmt.Errorf("commit %d matches: %w", n, errIDInUse)
	}
	return fmt.Errorf("commit %d matches: %w", n, err)
}

// readCommits reads commit_matches's answers, one per match of ms in order,
// into their results; events[i] is the match.found of ms[i].
func readCommits(rows pgx.Rows, ms []matcher.Match, events []matcher.Event, epoch int64) ([]matcher.CommitResult, error) {
	n := len(ms)
	out := make([]matcher.CommitResult, 0, n)
	for rows.Next() {
		i := len(out)
		if i == n {
			return nil, fmt.Errorf("commit %d matches: more answers than matches", n)
		}
		m := ms[i]
		var (
			outcome string
			waiting []string
			eventID *int64
			eventAt *time.Time
			r       matcher.CommitResult
		)
		if err := rows.Scan(&outcome, &waiting, &eventID, &eventAt); err != nil {
			return nil, fmt.Errorf("commit match %s: %w", m.ID, err)
		}
		switch outcome {
		case "committed":
			if eventID != nil { // else a retry of this very commit
				e := events[i]
				e.ID, e.CreatedAt = *eventID, eventAt.UTC()
				r.Events = []matcher.Event{e}
			}
		case "stale":
			r.Err = fmt.Errorf("commit match %s: epoch %d of %s: %w", m.ID, epoch, partitionOf(m), matcher.ErrStaleEpoch)
		case "shortfall":
			if waiting == nil {
				waiting = []string{}
			}
			r.Err = &matcher.ShortfallError{Waiting: waiting}
		default:
			return nil, fmt.Errorf("commit match %s: unknown outcome %q", m.ID, outcome)
		}
		out = append(out, r)
	}
	return out, nil
}

// Accept implements matcher.Ledger: the match row is locked, the rules of
// accept applied, and the row (and on READY the event) written back in the
// same transaction. Accepts and dissolves arriving together share one
// transaction (see decideBatch).
func (l *Postgres) Accept(ctx context.Context, matchID, userID string, at time.Time) (matcher.Match, []matcher.Event, error) {
	cid, ok := canonicalID(matchID)
	if !ok {
		return matcher.Match{}, nil, fmt.Errorf("accept match %s: %w", matchID, matcher.ErrNotFound)
	}
	r := l.decisions.Do(ctx, decisionReq{cid: cid, matchID: matchID, userID: userID, at: at})
	if r.err != nil {
		return matcher.Match{}, nil, r.err
	}
	return r.m, r.events, nil
}

// Dissolve implements matcher.Ledger. A dissolve shares its transaction
// with the accepts and dissolves arriving with it (see decideBatch): the
// engine closes every window that passed in one go, and declines arrive
// with the accepts of the same moment.
func (l *Postgres) Dissolve(ctx context.Context, req matcher.DissolveRequest) (matcher.Dissolution, []matcher.Event, error) {
	cid, ok := canonicalID(req.MatchID)
	if !ok {
		return matcher.Dissolution{}, nil, fmt.Errorf("dissolve match %s: %w", req.MatchID, matcher.ErrNotFound)
	}
	r := l.decisions.Do(ctx, decisionReq{cid: cid, matchID: req.MatchID, dissolve: &req})
	if r.err != nil {
		return matcher.Dissolution{}, nil, r.err
	}
	return r.d, r.events, nil
}

// Pending implements matcher.Ledger.
func (l *Postgres) Pending(ctx context.Context, p matcher.Partition) ([]matcher.Match, error) {
	rows, _ := l.pool.Query(ctx, `SELECT `+matchColumns+` FROM matches
		WHERE queue = $1 AND region = $2 AND state = 'PENDING_ACCEPT'
		ORDER BY accept_by, id`, p.Queue, p.Region)
	matches, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (matcher.Match, error) { return scanMatch(r) })
	if err != nil {
		return nil, fmt.Errorf("pending %s: %w", p.Base(), err)
	}
	if len(matches) == 0 {
		return nil, nil
	}
	return matches, nil
}

// Waiting implements matcher.Ledger.
func (l *Postgres) Waiting(ctx context.Context, p matcher.Partition) ([]matcher.Ticket, error) {
	rows, _ := l.pool.Query(ctx, `SELECT `+ticketColumns+` FROM tickets
		WHERE queue = $1 AND region = $2 AND status = 'WAITING'
		ORDER BY enqueued_at, id`, p.Queue, p.Region)
	tickets, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (matcher.Ticket, error) { return scanTicket(r) })
	if err != nil {
		return nil, fmt.Errorf("waiting %s: %w", p, err)
	}
	if len(tickets) == 0 {
		return nil, nil // as Memory: none is nil
	}
	return tickets, nil
}

// LivePartitions implements matcher.Ledger: both reads are served by the
// partial indexes on WAITING tickets and PENDING_ACCEPT matches.
func (l *Postgres) LivePartitions(ctx context.Context) ([]matcher.Partition, error) {
	rows, _ := l.pool.Query(ctx, `SELECT queue, region FROM tickets WHERE status = 'WAITING'
		UNION SELECT queue, region FROM matches WHERE state = 'PENDING_ACCEPT'`)
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (matcher.Partition, error) {
		var p matcher.Partition
		err := r.Scan(&p.Queue, &p.Region)
		return p, err
	})
	if err != nil {
		return nil, fmt.Errorf("live partitions: %w", err)
	}
	if len(out) == 0 {
		return nil, nil // as Memory: none is nil
	}
	// In Go, not in SQL: the same order as Memory whatever the collation.
	slices.SortFunc(out, partitionOrder)
	return out, nil
}

// DrainOutbox implements matcher.Ledger. The rows stay locked while fn runs,
// so a concurrent drain (SKIP LOCKED) takes the next ones; if this process
// dies meanwhile, the locks go with its connection and the rows are drained
// again: delivery is at least once.
func (l *Postgres) DrainOutbox(ctx context.Context, minAge time.Duration, limit int, fn func([]matcher.Event) error) (int, error) {
	if limit <= 0 {
		limit = defaultDrainLimit
	}
	tx, err := l.pool.Begin(ctx)
	if err != nil {
		return 0, fmt.Errorf("drain outbox: %w", err)
	}
	defer tx.Rollback(ctx) // a no-op after Commit
	// The age is judged by now(), the clock that stamped created_at: a
	// process clock compared with it would move the grace by their offset.
	rows, _ := tx.Query(ctx, `SELECT id, users, payload, created_at FROM outbox
		WHERE created_at < now() - $1 * interval '1 microsecond' ORDER BY id LIMIT $2
		FOR UPDATE SKIP LOCKED`, minAge.Microseconds(), limit)
	events, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (matcher.Event, error) {
		var (
			e       matcher.Event
			payload []byte
		)
		if err := r.Scan(&e.ID, &e.Users, &payload, &e.CreatedAt); err != nil {
			return e, err
		}
		e.CreatedAt = e.CreatedAt.UTC()
		// A row that cannot be read is handed on without a kind: the
		// publisher renders nothing for it and it is deleted with its
		// batch, rather than stop every drain behind it.
		if err := decodeEvent(payload, &e); err != nil {
			e.Kind = 0
		}
		return e, nil
	})
	if err != nil {
		return 0, fmt.Errorf("drain outbox: %w", err)
	}
	if len(events) == 0 {
		return 0, nil
	}
	if err := fn(events); err != nil {
		return len(events), fmt.Errorf("drain outbox: %w", err)
	}
	ids := make([]int64, len(events))
	for i, e := range events {
		ids[i] = e.ID
	}
	if _, err := tx.Exec(ctx, `DELETE FROM outbox WHERE id = ANY ($1)`, ids); err != nil {
		return len(events), fmt.Errorf("drain outbox: delete %d events: %w", len(ids), err)
	}
	if err := tx.Commit(ctx); err != nil {
		return len(events), fmt.Errorf("drain outbox: commit: %w", err)
	}
	return len(events), nil
}

// DeleteEvents implements matcher.Ledger.
func (l *Postgres) DeleteEvents(ctx context.Context, ids []int64) error {
	if len(ids) == 0 {
		return nil
	}
	if _, err := l.pool.Exec(ctx, `DELETE FROM outbox WHERE id = ANY ($1)`, ids); err != nil {
		return fmt.Errorf("delete events: %w", err)
	}
	return nil
}

// Ping implements matcher.Ledger.
func (l *Postgres) Ping(ctx context.Context) error {
	if err := l.pool.Ping(ctx); err != nil {
		return fmt.Errorf("ping postgres: %w", err)
	}
	return nil
}

// LeaseEpoch returns the partition's recorded epoch, 0 when it has none.
func (l *Postgres) LeaseEpoch(ctx context.Context, partition string) (int64, error) {
	var epoch int64
	err := l.pool.QueryRow(ctx, `SELECT epoch FROM leases WHERE partition = $1`, partition).Scan(&epoch)
	if errors.Is(err, pgx.ErrNoRows) {
		return 0, nil
	}
	if err != nil {
		return 0, fmt.Errorf("lease epoch %s: %w", partition, err)
	}
	return epoch, nil
}

// SetLeaseEpoch records the fencing epoch of the partition's new owner;
// CommitMatches then refuses every other epoch. The epoch only grows: one
// not above the recorded one is refused with an error wrapping
// matcher.ErrStaleEpoch, because its holder lost a race for the lease or
// another acquisition was handed the same token (a Redis that lost its
// fencing counter). The update waits for commits holding
// the old epoch (they lock the row FOR SHARE) to finish.
func (l *Postgres) SetLeaseEpoch(ctx context.Context, partition string, epoch int64) error {
	if epoch <= 0 {
		return fmt.Errorf("set lease epoch %s: epoch %d must be positive", partition, epoch)
	}
	var cur int64
	err := l.pool.QueryRow(ctx, `INSERT INTO leases AS l (partition, epoch) VALUES ($1, $2)
		ON CONFLICT (partition) DO UPDATE SET epoch = excluded.epoch WHERE l.epoch < excluded.epoch
		RETURNING epoch`, partition, epoch).Scan(&cur)
	if errors.Is(err, pgx.ErrNoRows) {
		if err := l.pool.QueryRow(ctx, `SELECT epoch FROM leases WHERE partition = $1`, partition).Scan(&cur); err != nil {
			return fmt.Errorf("set lease epoch %s: %w", partition, err)
		}
		return fmt.Errorf("set lease epoch %s: %d is not above %d: %w", partition, epoch, cur, matcher.ErrStaleEpoch)
	}
	if err != nil {
		return fmt.Errorf("set lease epoch %s: %w", partition, err)
	}
	return nil
}
