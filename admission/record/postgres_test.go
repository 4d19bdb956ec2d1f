package record_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"

	"github.com/jackc/pgx/v5/pgconn"

	"github.com/matchgate/matchgate/admission/record"
	"github.com/matchgate/matchgate/internal/pgtest"
)

// Entries racing each other are group-committed: each is recorded (or
// answered with the user's live place) exactly as alone, and the rows
// share transactions.
func TestPostgresEntriesShareTransactions(t *testing.T) {
	pgtest.Require(t)
	pool := pgtest.New(t)
	r := record.NewPostgres(pool)
	ctx := context.Background()
	const workers, per = 48, 25
	var (
		wg                sync.WaitGroup
		mu                sync.Mutex
		created, repeated int
	)
	for w := range workers {
		wg.Go(func() {
			for i := range per {
				// Every user enters twice, from two workers at once.
				_, isNew, err := r.Enter(ctx, "drop", fmt.Sprintf("gc-%d-%d", w/2, i), t0, t0)
				mu.Lock()
				switch {
				case err != nil:
					t.Error(err)
				case isNew:
					created++
				default:
					repeated++
				}
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	if users := workers / 2 * per; created != users || repeated != users {
		t.Fatalf("created %d, repeated %d; want %d each", created, repeated, users)
	}
	var txs int
	if err := pool.QueryRow(ctx, `SELECT count(DISTINCT xmin::text) FROM admission_places`).Scan(&txs); err != nil {
		t.Fatal(err)
	}
	t.Logf("%d places written in %d transactions", created, txs)
	if txs >= created {
		t.Fatalf("%d places in %d transactions: no entry shared a commit", created, txs)
	}
}

// Two records over one database are two gateways: their batches are in
// flight at once, and Seq order is still commit order.
func TestPostgresEntryOrderAcrossProcesses(t *testing.T) {
	pgtest.Require(t)
	pool := pgtest.New(t)
	testEntryOrder(t, record.NewPostgres(pool), record.NewPostgres(pool))
}

// The schema holds the rules even for a writer that is not this package:
// one live place per user and queue, a token given once, no token while
// WAITING.
func TestPostgresSchemaRefusesWhatTheRecordNeverWrites(t *testing.T) {
	pgtest.Require(t)
	pool := pgtest.New(t)
	ctx := context.Background()
	r := record.NewPostgres(pool)
	a, b := mustEnter(t, r, "drop", "a", t0), mustEnter(t, r, "drop", "b", t0)
	mustAdmit(t, r, "drop", 1, t0, a)
	for name, sql := range map[string]string{
		"a second live place": `INSERT INTO admission_places (queue, user_id, status, entered_at, version)
			VALUES ('drop', 'b', 'WAITING', now(), 1)`,
		"a token twice": `UPDATE admission_places SET status = 'READY', token = 'tok-drop-` + fmt.Sprint(a.Seq) + `',
			expires_at = now(), admitted_at = now() WHERE seq = ` + fmt.Sprint(b.Seq),
		"a waiting place with a token": `UPDATE admission_places SET token = 'x', expires_at = now(), admitted_at = now()
			WHERE seq = ` + fmt.Sprint(b.Seq),
		"a ready place without one": `UPDATE admission_places SET status = 'READY' WHERE seq = ` + fmt.Sprint(b.Seq),
		"a token without its life":  `UPDATE admission_places SET expires_at = NULL WHERE seq = ` + fmt.Sprint(a.Seq),
		"an unknown status":         `UPDATE admission_places SET status = 'GONE' WHERE seq = ` + fmt.Sprint(b.Seq),
		"epoch 0":                   `INSERT INTO admission_epochs (queue, epoch) VALUES ('x', 0)`,
	} {
		_, err := pool.Exec(ctx, sql)
		var pgErr *pgconn.PgError
		if !errors.As(err, &pgErr) || (pgErr.Code != "23505" && pgErr.Code != "23514") {
			t.Errorf("%s: %v, want a unique or check violation", name, err)
		}
	}
}
