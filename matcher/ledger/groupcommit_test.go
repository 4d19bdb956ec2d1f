package ledger_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"

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
	txs := transactions(t, pool)
	t.Logf("%d tickets written in %d transactions", created, txs)
	if txs >= created {
		t.Fatalf("%d tickets in %d transactions: no join shared a commit", created, txs)
	}
}

// transactions counts the transactions that wrote the tickets.
func transactions(t *testing.T, pool *pgxpool.Pool) int {
	t.Helper()
	var n int
	if err := pool.QueryRow(context.Background(), `SELECT count(DISTINCT xmin::text) FROM tickets`).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}
