package ledger

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/matchgate/matchgate/internal/group"
	"github.com/matchgate/matchgate/matcher"
)

// Joins are group-committed (internal/group): a join arriving while
// maxInserters batches are being written waits and goes into the next
// batch. Under load a batch of joins costs one round trip (the insert and
// the refusal of players seated in a pending match) and one log flush
// instead of one each (the flush, not the row, was the bound), and a join
// that finds nobody writing is written at once, alone, as before. Every
// join is committed before CreateTicket returns; nothing is acknowledged
// from memory.
//
// One batch at a time: side by side at 2,000 joins/s (three runs each)
// against two, the database used 5.0 instead of 5.5 CPU-seconds in ten, and
// join→match.found p99 was 55-68 ms instead of 72-137.
//
// A batch lingers (internal/group): while joins come faster than one in
// joinLinger, a batch waits until its oldest join is joinLinger old.
// PostgreSQL's CPU goes by the statement and the commit more than by the
// row, and at 2,000 joins/s only two or three joins piled up behind a
// short insert. With the engine's pass gap (matcher.Timing.PassGap, 10 ms
// in that run), side by side at 2,000 joins/s the 3 ms linger cut a join's
// commits from 0.52–0.56 to 0.21–0.31 and its CPU in all by a sixth
// (docs/CAPACITY.md); alone, at 1,000 joins/s, a linger had cut little.
const (
	maxInserters = 1
	joinLinger   = 3 * time.Millisecond
	maxBatch     = 512
	// batchTimeout bounds one batch (of joins or of decisions) whatever the
	// callers' contexts.
	batchTimeout = 10 * time.Second
)

type insertReq struct {
	t     matcher.Ticket
	attrs []byte
}

type insertResult struct {
	t   matcher.Ticket
	err error
}

func newInserter(l *Postgres) *group.Group[insertReq, insertResult] {
	return group.New(maxInserters, maxBatch, batchTimeout, l.insertBatch).WithLinger(joinLinger)
}

// create records t through the group commit.
func (l *Postgres) create(ctx context.Context, t matcher.Ticket, attrs []byte) (matcher.Ticket, error) {
	r := l.ins.Do(ctx, insertReq{t: t, attrs: attrs})
	return r.t, r.err
}

// insertBatch writes a batch in one round trip and one implicit
// transaction: the insert, then refuseMatchedSQL. Rows it could not insert
// (the user already waits, or the id is taken) go through the single
// insert, which tells which and reads the waiting ticket.
func (l *Postgres) insertBatch(ctx context.Context, batch []insertReq) []insertResult {
	out := make([]insertResult, len(batch))
	if len(batch) == 1 {
		r := batch[0]
		out[0].t, out[0].err = l.insertOne(ctx, r.t, r.attrs)
		return out
	}
	n := len(batch)
	var (
		ids                    = make([][16]byte, n)
		users, queues, regions = make([]string, n), make([]string, n), make([]string, n)
		skills, activities     = make([]float64, n), make([]float64, n)
		estimated              = make([]bool, n)
		attrs, names           = make([]*string, n), make([]*string, n)
		enqueued, deadlines    = make([]time.Time, n), make([]time.Time, n)
		updated                = make([]time.Time, n)
		headStarts, versions   = make([]int64, n), make([]int64, n)
	)
	for i, r := range batch {
		t := r.t
		ids[i], users[i], queues[i], regions[i] = uuidParam(t.ID), t.UserID, t.Queue, t.Region
		skills[i], activities[i], estimated[i] = t.Skill, t.Activity, t.Estimated
		if r.attrs != nil {
			a := string(r.attrs)
			attrs[i] = &a
		}
		enqueued[i], deadlines[i], updated[i] = t.EnqueuedAt, t.Deadline, t.UpdatedAt
		headStarts[i], versions[i] = t.HeadStart.Milliseconds(), t.Version
		names[i] = nullIfEmpty(t.Name)
	}
	b := &pgx.Batch{}
	b.Queue(`INSERT INTO tickets (id, user_id, queue, region, status, skill,
		estimated, activity, attributes, enqueued_at, head_start_ms, deadline, updated_at, version, name)
		SELECT id, u, q, r, 'WAITING', s, e, a, at, enq, hs, dl, up, v, nm
		  FROM unnest($1::uuid[], $2::text[], $3::text[], $4::text[], $5::float8[], $6::bool[], $7::float8[],
		              $8::jsonb[], $9::timestamptz[], $10::int8[], $11::timestamptz[], $12::timestamptz[], $13::int8[],
		              $14::text[])
		       AS x(id, u, q, r, s, e, a, at, enq, hs, dl, up, v, nm)
		ON CONFLICT DO NOTHING
		RETURNING id::text`,
		ids, users, queues, regions, skills, estimated, activities, attrs, enqueued, headStarts, deadlines, updated, versions, names)
	// A user seated in a pending match may not join (see refuseMatchedSQL).
	b.Queue(refuseMatchedSQL, ids, users)
	br := l.pool.SendBatch(ctx, b)
	inserted := make(map[string]bool, n)
	rows, err := br.Query()
	if err == nil {
		for rows.Next() {
			var id string
			if err = rows.Scan(&id); err != nil {
				break
			}
			inserted[id] = true
		}
		rows.Close()
		if err == nil {
			err = rows.Err()
		}
	}
	var refused []string
	if err == nil {
		refused, err = scanRefused(br)
	}
	if cerr := br.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		// The batch is one implicit transaction: nothing of it was written.
		for i, r := range batch {
			out[i].err = fmt.Errorf("create ticket %s: %w", r.t.ID, err)
		}
		return out
	}
	matchOf := make(map[string]string, len(refused)/2)
	for i := 0; i < len(refused); i += 2 {
		matchOf[refused[i]] = refused[i+1]
	}
	for i, r := range batch {
		if m, ok := matchOf[r.t.ID]; ok {
			out[i].err = &matcher.AlreadyMatchedError{UserID: r.t.UserID, MatchID: m}
			continue
		}
		if inserted[r.t.ID] {
			out[i].t = r.t
			continue
		}
		out[i].t, out[i].err = l.insertOne(ctx, r.t, r.attrs)
	}
	return out
}

// marshalAttributes is the attributes column of t: nil for none.
func marshalAttributes(t matcher.Ticket) ([]byte, error) {
	if t.Attributes == nil {
		return nil, nil
	}
	b, err := json.Marshal(t.Attributes)
	if err != nil {
		return nil, fmt.Errorf("create ticket %s: attributes: %w", t.ID, err)
	}
	return b, nil
}

// Decisions on pending matches, accepts and dissolves, are group-committed
// the same way: the players of a pair accept within milliseconds of each
// other, each accept a transaction with a log flush of its own, and the
// second waiting on the first's row lock; the engine closes every accept
// window that passed at once. A batch applies its decisions in arrival order
// in one transaction (two of one match see each other, as in sequence); a
// decision the rules refuse writes nothing and takes nothing from the
// others. One batch at a time: a batch locks its matches, then the tickets
// of those it dissolves, and two batches holding one each could wait on
// the other.
const maxDeciders = 1

// dissolveAttempts bounds the tries of a dissolve alone when a player's
// concurrent join takes the one WAITING slot between the read and the
// update.
const dissolveAttempts = 3

// decisionReq is an accept of matchID by userID at at, or, with dissolve
// set, a dissolve.
type decisionReq struct {
	cid, matchID, userID string
	at                   time.Time
	dissolve             *matcher.DissolveRequest
	tries                int // a dissolve's failed tries alone so far
}

type decisionResult struct {
	m      matcher.Match       // an accept's
	d      matcher.Dissolution // a dissolve's
	events []matcher.Event
	err    error
}

func newDecider(l *Postgres) *group.Group[decisionReq, decisionResult] {
	return group.New(maxDeciders, maxBatch, batchTimeout, l.decideBatch)
}

// decideBatch commits a batch of decisions in one transaction. When the
// transaction fails, every decision of the batch is tried again alone, so
// that one decision's failure is its own.
func (l *Postgres) decideBatch(ctx context.Context, batch []decisionReq) []decisionResult {
	out := make([]decisionResult, len(batch))
	err := pgx.BeginFunc(ctx, l.pool, func(tx pgx.Tx) error {
		return decide(ctx, tx, batch, out)
	})
	if err == nil {
		return out
	}
	if len(batch) > 1 {
		for i := range batch {
			out[i] = l.decideBatch(ctx, batch[i:i+1])[0]
		}
		return out
	}
	var pgErr *pgconn.PgError
	if r := batch[0]; r.dissolve != nil && r.tries+1 < dissolveAttempts &&
		errors.As(err, &pgErr) && pgErr.Code == uniqueViolation {
		r.tries++
		return l.decideBatch(ctx, []decisionReq{r})
	}
	return []decisionResult{{err: err}}
}

// decide applies a batch's decisions in tx, in order, into out, in three
// round trips however many decisions: every match of the batch is locked
// and read in one statement (in id order), the tickets of the matches it
// may dissolve in a second (in id order, as commit_match locks them), the
// decisions are applied to those rows in memory, and every write goes in
// one batch. A round trip per statement per decision bounded the accepts at
// a few thousand a second, and a dissolve took seven.
//
// A decision the rules refuse (the match is gone, the window closed or
// still open, the user not seated) is its own error and writes nothing. A
// write that fails fails the transaction, among them the unique violation
// of a player whose concurrent join took the one WAITING slot after the
// read: decideBatch then tries each decision alone.
func decide(ctx context.Context, tx pgx.Tx, batch []decisionReq, out []decisionResult) error {
	ids := make([]string, 0, len(batch))
	seen := make(map[string]bool, len(batch))
	for _, r := range batch {
		if !seen[r.cid] {
			seen[r.cid] = true
			ids = append(ids, r.cid)
		}
	}
	// Both reads are planned for each call (the unnamed statement, not a
	// cached one): a plan cached while the tables were nearly empty read
	// them whole for as long as the connection lived
	// (TestPostgresDissolveReadsByKey).
	rows, _ := tx.Query(ctx, `SELECT `+matchColumns+` FROM matches WHERE id = ANY ($1) ORDER BY id FOR UPDATE`,
		pgx.QueryExecModeCacheDescribe, uuids(ids))
	locked, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (matcher.Match, error) { return scanMatch(r) })
	if err != nil {
		return fmt.Errorf("lock %d matches: %w", len(ids), err)
	}
	cur := make(map[string]matcher.Match, len(locked))
	for _, m := range locked {
		cur[m.ID] = m
	}
	seated, err := lockSeated(ctx, tx, batch, cur)
	if err != nil {
		return err
	}
	var (
		w        decisionWrites
		requeued = map[string]bool{} // users this batch put back to WAITING
	)
	for i, r := range batch {
		m, ok := cur[r.cid]
		if r.dissolve != nil {
			req := *r.dissolve
			if !ok {
				out[i].err = fmt.Errorf("dissolve match %s: %w", req.MatchID, matcher.ErrNotFound)
				continue
			}
			d, err := dissolveIn(m, req, seated, requeued, &w)
			if err != nil {
				out[i].err = err
				continue
			}
			cur[r.cid] = d.Match
			out[i].d = d
			w.events(i, req.MatchID, dissolveEvents(d, req.Reason())...)
			continue
		}
		if !ok {
			out[i].err = fmt.Errorf("accept match %s: %w", r.matchID, matcher.ErrNotFound)
			continue
		}
		next, changed, err := accept(m, r.userID, r.at)
		out[i] = decisionResult{m: next, err: err}
		if err != nil || !changed {
			continue
		}
		cur[r.cid] = next
		w.match(next)
		if next.State == matcher.MatchReady {
			w.events(i, r.matchID, matcher.MatchReadyEvent(next))
		}
	}
	return w.flush(ctx, tx, out)
}

// dissolveIn applies a dissolve of m to the tickets read for the batch and
// queues its writes on w. A player kept in place goes back to WAITING unless
// they already wait elsewhere, or an earlier decision of the batch put them
// back already: one WAITING ticket a user, as when applied one at a time.
func dissolveIn(m matcher.Match, req matcher.DissolveRequest, seated map[string]seatedTicket,
	requeued map[string]bool, w *decisionWrites) (matcher.Dissolution, error) {
	plan, err := dissolvePlan(m, req)
	if err != nil {
		return matcher.Dissolution{}, err
	}
	m.State = matcher.MatchDissolved
	m.Version++
	w.match(m)
	d := matcher.Dissolution{Match: m}
	for _, p := range m.Players { // seat order, as Memory
		st, ok := seated[p.TicketID]
		if !ok || st.t.MatchID != m.ID {
			continue
		}
		reason := plan[p.TicketID]
		if reason == "" && (st.waits || requeued[st.t.UserID]) {
			reason = matcher.ReasonSuperseded
		}
		t := dissolveTicket(st.t, reason, req.At)
		w.ticket(req.MatchID, t)
		if t.Status == matcher.StatusWaiting {
			requeued[t.UserID] = true
			d.Requeued = append(d.Requeued, t)
		} else {
			d.Cancelled = append(d.Cancelled, t)
		}
	}
	return d, nil
}

// seatedTicket is a ticket seated in a match the batch may dissolve, and
// whether its user already has a WAITING ticket (in another queue, say).
type seatedTicket struct {
	t     matcher.Ticket
	waits bool
}

// lockSeated locks and reads the MATCHED tickets of the batch's dissolves;
// a batch without dissolves reads nothing.
func lockSeated(ctx context.Context, tx pgx.Tx, batch []decisionReq, cur map[string]matcher.Match) (map[string]seatedTicket, error) {
	var tids, mids []string
	seen := map[string]bool{}
	for _, r := range batch {
		m, ok := cur[r.cid]
		if r.dissolve == nil || !ok || seen[r.cid] {
			continue
		}
		seen[r.cid] = true
		mids = append(mids, r.cid)
		tids = append(tids, m.TicketIDs()...)
	}
	if len(tids) == 0 {
		return nil, nil
	}
	rows, _ := tx.Query(ctx, `SELECT `+ticketColumns+`,
		       EXISTS (SELECT 1 FROM tickets w WHERE w.user_id = t.user_id AND w.status = 'WAITING')
		  FROM tickets t
		 WHERE t.id = ANY ($1) AND t.status = 'MATCHED' AND t.match_id = ANY ($2)
		 ORDER BY t.id FOR UPDATE OF t`,
		pgx.QueryExecModeCacheDescribe, uuids(tids), uuids(mids))
	defer rows.Close()
	seated := make(map[string]seatedTicket, len(tids))
	for rows.Next() {
		var st seatedTicket
		var err error
		if st.t, err = scanTicket(rows, &st.waits); err != nil {
			return nil, fmt.Errorf("lock the tickets of %d matches: %w", len(mids), err)
		}
		seated[st.t.ID] = st
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("lock the tickets of %d matches: %w", len(mids), err)
	}
	return seated, nil
}

// decisionWrites are a batch's decisions applied but not yet written: the
// last state of each ticket and match changed, and the events, each with
// the decision it belongs to.
type decisionWrites struct {
	tickets []ticketWrite
	order   []string
	matches map[string]matcher.Match
	evs     []decisionEvent
}

type ticketWrite struct {
	matchID string // the dissolve's, for errors
	t       matcher.Ticket
}

type decisionEvent struct {
	i       int    // the decision's index in the batch
	matchID string // for errors
	e       matcher.Event
}

func (w *decisionWrites) ticket(matchID string, t matcher.Ticket) {
	w.tickets = append(w.tickets, ticketWrite{matchID: matchID, t: t})
}

func (w *decisionWrites) match(m matcher.Match) {
	if w.matches == nil {
		w.matches = map[string]matcher.Match{}
	}
	if _, ok := w.matches[m.ID]; !ok {
		w.order = append(w.order, m.ID)
	}
	w.matches[m.ID] = m
}

func (w *decisionWrites) events(i int, matchID string, es ...matcher.Event) {
	for _, e := range es {
		w.evs = append(w.evs, decisionEvent{i: i, matchID: matchID, e: e})
	}
}

// flush writes everything in one round trip and gives each event its id.
func (w *decisionWrites) flush(ctx context.Context, tx pgx.Tx, out []decisionResult) error {
	if len(w.order) == 0 && len(w.tickets) == 0 && len(w.evs) == 0 {
		return nil
	}
	b := &pgx.Batch{}
	for _, tw := range w.tickets {
		t := tw.t
		b.Queue(`UPDATE tickets SET status = $2, cancel_reason = $3, match_id = NULL, updated_at = $4, version = $5 WHERE id = $1`,
			t.ID, string(t.Status), nullIfEmpty(t.CancelReason), t.UpdatedAt, t.Version)
	}
	for _, id := range w.order {
		m := w.matches[id]
		accepted, err := json.Marshal(m.Accepted)
		if err != nil {
			return fmt.Errorf("match %s: accepted: %w", id, err)
		}
		b.Queue(`UPDATE matches SET state = $2, accepted = $3, version = $4 WHERE id = $1`, id, m.State, accepted, m.Version)
	}
	for _, de := range w.evs {
		data, err := encodeEvent(de.e)
		if err != nil {
			return fmt.Errorf("match %s: %w", de.matchID, err)
		}
		b.Queue(`INSERT INTO outbox (users, payload) VALUES ($1, $2) RETURNING id, created_at`, de.e.Users, data)
	}
	br := tx.SendBatch(ctx, b)
	err := func() error {
		for _, tw := range w.tickets {
			if _, err := br.Exec(); err != nil {
				return fmt.Errorf("dissolve match %s: ticket %s: %w", tw.matchID, tw.t.ID, err)
			}
		}
		for _, id := range w.order {
			if _, err := br.Exec(); err != nil {
				return fmt.Errorf("match %s: %w", id, err)
			}
		}
		for _, de := range w.evs {
			e := de.e
			if err := br.QueryRow().Scan(&e.ID, &e.CreatedAt); err != nil {
				return fmt.Errorf("event of match %s: %w", de.matchID, err)
			}
			e.CreatedAt = e.CreatedAt.UTC()
			out[de.i].events = append(out[de.i].events, e)
		}
		return nil
	}()
	if cerr := br.Close(); err == nil && cerr != nil {
		err = fmt.Errorf("decisions: %w", cerr)
	}
	*w = decisionWrites{}
	return err
}
