package ledger_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/matchgate/matchgate/internal/pgtest"
	"github.com/matchgate/matchgate/matcher"
	"github.com/matchgate/matchgate/matcher/ledger"
)

// Joins racing each other are group-committed: each is recorded (or told
// its user already waits) exactly as alone, and the rows share
// transactions.
func TestPostgresGroupCommit(t *testing.T) {
	pgtest.Require(t)
	pool := pgtest.New(t)
	l := ledger.NewPostgres(pool)
	ctx := context.Background()
	const workers, per = 48, 25
	var (
		wg                sync.WaitGroup
		mu                sync.Mutex
		created, repeated int
		ids               = map[string]string{} // ticket id → user
	)
	for w := range workers {
		wg.Go(func() {
			for i := range per {
				// Every user joins twice, from two workers at once: one
				// ticket, one ALREADY_QUEUED.
				user := fmt.Sprintf("gc-%d-%d", w/2, i)
				got, err := l.CreateTicket(ctx, ticketFor(user, "ranked", "eu", t0))
				var aq *matcher.AlreadyQueuedError
				mu.Lock()
				switch {
				case err == nil:
					created++
					ids[got.ID] = user
				case errors.As(err, &aq):
					repeated++
					if aq.Existing.UserID != user {
						t.Errorf("user %s told %s waits", user, aq.Existing.UserID)
					}
				default:
					t.Error(err)
				}
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	users := workers / 2 * per
	if created != users || repeated != users {
		t.Fatalf("created %d, already queued %d; want %d each", created, repeated, users)
	}
	for id, user := range ids {
		got, err := l.Ticket(ctx, id)
		if err != nil || got.UserID != user || got.Status != matcher.StatusWaiting {
			t.Fatalf("ticket %s = %+v, %v", id, got, err)
		}
	}
	txs := transactions(t, pool, "tickets")
	t.Logf("%d tickets written in %d transactions", created, txs)
	if txs >= created {
		t.Fatalf("%d tickets in %d transactions: no join shared a commit", created, txs)
	}
}

// transactions counts the transactions that last wrote the rows of table.
func transactions(t *testing.T, pool *pgxpool.Pool, table string) int {
	t.Helper()
	var n int
	if err := pool.QueryRow(context.Background(), `SELECT count(DISTINCT xmin::text) FROM `+table).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

// Accepts racing each other are group-committed: both players of every
// pair accept at once, with an outsider's refused accepts among them; every
// match ends READY with one READY event, the refusals change nothing, and
// the accepts share transactions.
func TestPostgresGroupCommitAccepts(t *testing.T) {
	pgtest.Require(t)
	pool := pgtest.New(t)
	l := ledger.NewPostgres(pool)
	ctx := context.Background()
	const pairs = 100
	ms := pendingPairs(t, l, "acc", pairs)
	var (
		wg      sync.WaitGroup
		mu      sync.Mutex
		ready   = map[string]int{} // match → READY events
		refused int
	)
	at := t0.Add(2 * time.Second)
	for _, m := range ms {
		for _, user := range append(m.UserIDs(), "outsider") {
			wg.Go(func() {
				got, events, err := l.Accept(ctx, m.ID, user, at)
				mu.Lock()
				defer mu.Unlock()
				switch {
				case user == "outsider":
					if err == nil {
						t.Errorf("outsider's accept of %s taken: %+v", m.ID, got)
					}
					refused++
				case err != nil:
					t.Errorf("accept of %s by %s: %v", m.ID, user, err)
				default:
					ready[m.ID] += len(events)
				}
			})
		}
	}
	wg.Wait()
	for _, m := range ms {
		got, err := l.Match(ctx, m.ID)
		if err != nil || got.State != matcher.MatchReady || len(got.Accepted) != 2 || got.Version != m.Version+2 {
			t.Fatalf("match %s = %+v, %v; want READY, both accepted, version %d", m.ID, got, err, m.Version+2)
		}
		if ready[m.ID] != 1 {
			t.Fatalf("match %s: %d READY events, want 1", m.ID, ready[m.ID])
		}
	}
	if refused != pairs {
		t.Fatalf("%d outsider accepts refused, want %d", refused, pairs)
	}
	txs := transactions(t, pool, "matches")
	t.Logf("%d accepts written in %d transactions", 2*pairs, txs)
	if txs >= pairs {
		t.Fatalf("%d matches last written by %d transactions: no accepts shared a commit", pairs, txs)
	}
}

// Dissolves share the accepts' group commit: two closers of every window
// and an accept sent just before it closed race each other. Every match is
// dissolved once, by one of its closers; the other is told it is already
// DISSOLVED; the accept counts exactly when it was applied first; and the
// decisions share transactions.
func TestPostgresGroupCommitDissolves(t *testing.T) {
	pgtest.Require(t)
	pool := pgtest.New(t)
	l := ledger.NewPostgres(pool)
	ctx := context.Background()
	const pairs = 100
	ms := pendingPairs(t, l, "dis", pairs)
	type outcome struct {
		dissolved, refused int
		accepted           bool
		d                  matcher.Dissolution
		events             int
	}
	var (
		wg  sync.WaitGroup
		mu  sync.Mutex
		out = map[string]*outcome{}
	)
	// Every outcome exists before the first goroutine reads the map.
	for _, m := range ms {
		out[m.ID] = &outcome{}
	}
	for _, m := range ms {
		accepter := m.Players[0].UserID
		wg.Go(func() {
			_, _, err := l.Accept(ctx, m.ID, accepter, m.AcceptBy.Add(-time.Millisecond))
			var se *matcher.MatchStateError
			mu.Lock()
			defer mu.Unlock()
			switch {
			case err == nil:
				out[m.ID].accepted = true
			case errors.As(err, &se) && se.Match.State == matcher.MatchDissolved:
			default:
				t.Errorf("accept of %s: %v", m.ID, err)
			}
		})
		for range 2 {
			wg.Go(func() {
				d, events, err := l.Dissolve(ctx, matcher.DissolveRequest{MatchID: m.ID, At: *m.AcceptBy})
				var se *matcher.MatchStateError
				mu.Lock()
				defer mu.Unlock()
				o := out[m.ID]
				switch {
				case err == nil:
					o.dissolved++
					o.d, o.events = d, len(events)
				case errors.As(err, &se) && se.Match.State == matcher.MatchDissolved:
					o.refused++
				default:
					t.Errorf("dissolve of %s: %v", m.ID, err)
				}
			})
		}
	}
	wg.Wait()
	accepted := 0
	for _, m := range ms {
		o := out[m.ID]
		if o.dissolved != 1 || o.refused != 1 || o.events == 0 {
			t.Fatalf("match %s: dissolved %d times, refused %d, %d events; want once, once, some", m.ID, o.dissolved, o.refused, o.events)
		}
		// The accepter goes back to waiting exactly when the accept came first.
		requeued := len(o.d.Requeued) == 1 && o.d.Requeued[0].UserID == m.Players[0].UserID
		if requeued != o.accepted || len(o.d.Requeued)+len(o.d.Cancelled) != 2 {
			t.Fatalf("match %s: accepted %v, dissolution %+v", m.ID, o.accepted, o.d)
		}
		if o.accepted {
			accepted++
		}
		got, err := l.Match(ctx, m.ID)
		if err != nil || got.State != matcher.MatchDissolved {
			t.Fatalf("match %s = %+v, %v; want DISSOLVED", m.ID, got, err)
		}
	}
	txs := transactions(t, pool, "matches")
	t.Logf("%d matches dissolved (%d after an accept) by %d transactions", pairs, accepted, txs)
	if txs >= pairs {
		t.Fatalf("%d matches last written by %d transactions: no decisions shared a commit", pairs, txs)
	}
}

// pendingPairs commits n PENDING_ACCEPT matches of two new tickets each.
func pendingPairs(t *testing.T, l matcher.Ledger, prefix string, n int) []matcher.Match {
	t.Helper()
	ms := make([]matcher.Match, n)
	for i := range ms {
		a := mustCreate(t, l, ticketFor(fmt.Sprint(prefix, "-a", i), "ranked", "eu", t0))
		b := mustCreate(t, l, ticketFor(fmt.Sprint(prefix, "-b", i), "ranked", "eu", t0))
		ms[i] = pendingMatch(t, l, a, b)
	}
	return ms
}

// insertRaw writes a WAITING ticket straight into the tickets table.
func insertRaw(t *testing.T, pool *pgxpool.Pool, tk matcher.Ticket) matcher.Ticket {
	t.Helper()
	tk.Status, tk.UpdatedAt, tk.Version = matcher.StatusWaiting, tk.EnqueuedAt, 1
	if _, err := pool.Exec(context.Background(), `INSERT INTO tickets (id, user_id, queue, region, status, skill,
		enqueued_at, deadline, updated_at, version) VALUES ($1, $2, $3, $4, 'WAITING', $5, $6, $7, $8, 1)`,
		tk.ID, tk.UserID, tk.Queue, tk.Region, tk.Skill, tk.EnqueuedAt, tk.Deadline, tk.UpdatedAt); err != nil {
		t.Fatal(err)
	}
	return tk
}

// A batch of dissolves is read and written in a few round trips, however
// many it holds, and applies its decisions in order: a player kept in two
// dissolved matches goes back to waiting once, superseded in the other,
// without failing the batch on the one-WAITING-ticket rule.
func TestPostgresDissolvesShareRoundTrips(t *testing.T) {
	ctx := context.Background()
	var trips roundTrips
	pool := migratedPool(t, func(c *pgxpool.Config) { c.ConnConfig.Tracer = &trips })
	l := ledger.NewPostgres(pool)

	// "kit" sits in one pending match per queue and accepts each; every
	// partner declines, which puts kit back to waiting each time.
	const queues, pairs = 10, 90
	type dissolve struct {
		req  matcher.DissolveRequest
		kits bool
	}
	var ds []dissolve
	for i := range queues {
		q := fmt.Sprint("q", i)
		// CreateTicket refuses a player seated in a pending match; a record
		// written before that rule may still seat one in several.
		kit := insertRaw(t, pool, ticketFor("kit", q, "eu", t0))
		partner := mustCreate(t, l, ticketFor(fmt.Sprint("partner", i), q, "eu", t0))
		m := pendingMatch(t, l, kit, partner)
		if _, _, err := l.Accept(ctx, m.ID, "kit", m.CreatedAt); err != nil {
			t.Fatal(err)
		}
		ds = append(ds, dissolve{req: matcher.DissolveRequest{MatchID: m.ID, Decliner: partner.UserID, At: m.CreatedAt}, kits: true})
	}
	for _, m := range pendingPairs(t, l, "rt", pairs) {
		ds = append(ds, dissolve{req: matcher.DissolveRequest{MatchID: m.ID, At: *m.AcceptBy}})
	}

	// The first dissolve's batch waits on a row lock while the others
	// gather behind it, so that they share the next batch.
	blocker, err := pool.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer blocker.Rollback(ctx)
	first := ds[len(ds)-1]
	ds = ds[:len(ds)-1]
	if _, err := blocker.Exec(ctx, `SELECT 1 FROM matches WHERE id = $1 FOR UPDATE`, first.req.MatchID); err != nil {
		t.Fatal(err)
	}
	trips.n.Store(0)
	var (
		wg               sync.WaitGroup
		mu               sync.Mutex
		kitBack, kitGone int
	)
	wg.Go(func() {
		if _, _, err := l.Dissolve(ctx, first.req); err != nil {
			t.Errorf("dissolve %s: %v", first.req.MatchID, err)
		}
	})
	time.Sleep(100 * time.Millisecond)
	for _, d := range ds {
		wg.Go(func() {
			got, _, err := l.Dissolve(ctx, d.req)
			if err != nil {
				t.Errorf("dissolve %s: %v", d.req.MatchID, err)
				return
			}
			if !d.kits {
				return
			}
			mu.Lock()
			defer mu.Unlock()
			for _, tk := range got.Requeued {
				if tk.UserID == "kit" {
					kitBack++
				}
			}
			for _, tk := range got.Cancelled {
				if tk.UserID == "kit" && tk.CancelReason == matcher.ReasonSuperseded {
					kitGone++
				}
			}
		})
	}
	time.Sleep(200 * time.Millisecond)
	if err := blocker.Rollback(ctx); err != nil {
		t.Fatal(err)
	}
	wg.Wait()
	n := trips.n.Load()
	t.Logf("%d dissolves in %d round trips", len(ds)+1, n)
	if kitBack != 1 || kitGone != queues-1 {
		t.Errorf("kit back to waiting %d times and superseded %d times; want once and %d", kitBack, kitGone, queues-1)
	}
	// One at a time, a dissolve takes seven round trips and its transaction
	// two more.
	if n >= int64(2*len(ds)) {
		t.Errorf("%d dissolves took %d round trips; want them batched", len(ds)+1, n)
	}
}

// roundTrips counts the statements and batches sent.
type roundTrips struct{ n atomic.Int64 }

func (r *roundTrips) TraceQueryStart(ctx context.Context, _ *pgx.Conn, _ pgx.TraceQueryStartData) context.Context {
	r.n.Add(1)
	return ctx
}

func (r *roundTrips) TraceQueryEnd(context.Context, *pgx.Conn, pgx.TraceQueryEndData) {}

func (r *roundTrips) TraceBatchStart(ctx context.Context, _ *pgx.Conn, _ pgx.TraceBatchStartData) context.Context {
	r.n.Add(1)
	return ctx
}

func (r *roundTrips) TraceBatchQuery(context.Context, *pgx.Conn, pgx.TraceBatchQueryData) {}

func (r *roundTrips) TraceBatchEnd(context.Context, *pgx.Conn, pgx.TraceBatchEndData) {}
