package record_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgconn"

	"github.com/matchgate/matchgate/internal/pgtest"
	"github.com/matchgate/matchgate/ranking"
	"github.com/matchgate/matchgate/ranking/record"
)

// Small batches racing each other are group-committed: each caller is
// answered for its own events exactly, and the rows share transactions.
func TestPostgresSmallBatchesShareTransactions(t *testing.T) {
	pgtest.Require(t)
	pool := pgtest.New(t)
	r := record.NewPostgres(pool)
	ctx := context.Background()
	const workers, per = 48, 20
	var (
		wg                   sync.WaitGroup
		mu                   sync.Mutex
		accepted, duplicates int
	)
	for w := range workers {
		wg.Go(func() {
			for i := range per {
				// Every event is sent twice, by two workers at once, and
				// once more inside the same batch.
				e := ev(fmt.Sprintf("gc-%d-%d", w/2, i), "q", "joins", 1, t0)
				a, d, err := r.Ingest(ctx, "b", []ranking.Event{e, e})
				mu.Lock()
				if err != nil {
					t.Error(err)
				}
				accepted, duplicates = accepted+a, duplicates+d
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	events := workers / 2 * per
	if accepted != events || duplicates != 3*events {
		t.Fatalf("accepted %d, duplicates %d; want %d and %d", accepted, duplicates, events, 3*events)
	}
	equal(t, "sums", scanAll(t, r, "b", h0, h0.Add(time.Hour)), []ranking.ItemMetrics{im("q", t0, "joins", float64(events))})
	var txs int
	if err := pool.QueryRow(ctx, `SELECT count(DISTINCT xmin::text) FROM ranking_events`).Scan(&txs); err != nil {
		t.Fatal(err)
	}
	t.Logf("%d events written in %d transactions", events, txs)
	if txs >= events {
		t.Fatalf("%d events in %d transactions: no batch shared a commit", events, txs)
	}
}

// Large batches go alone and at once; overlapping ones in opposite orders,
// over the same buckets, neither deadlock nor count an event twice.
func TestPostgresLargeBatchesOverlap(t *testing.T) {
	pgtest.Require(t)
	r := record.NewPostgres(pgtest.New(t))
	const workers, ids, size = 8, 1000, 250
	var (
		wg       sync.WaitGroup
		mu       sync.Mutex
		accepted int
		dups     int
	)
	for w := range workers {
		wg.Go(func() {
			order := rand.New(rand.NewPCG(uint64(w), 3)).Perm(ids)
			if w%2 == 1 {
				for i := range order {
					order[i] = ids - 1 - i
				}
			}
			for len(order) > 0 {
				batch := make([]ranking.Event, 0, size)
				for _, i := range order[:size] {
					batch = append(batch, ev(fmt.Sprint("id", i), fmt.Sprint("q", i%20), "joins", 1, t0.Add(time.Duration(i%3)*time.Hour)))
				}
				order = order[size:]
				a, d, err := r.Ingest(context.Background(), "b", batch)
				mu.Lock()
				if err != nil {
					t.Error(err)
				}
				accepted, dups = accepted+a, dups+d
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	if accepted != ids || accepted+dups != workers*ids {
		t.Fatalf("accepted %d, duplicates %d; want %d of %d", accepted, dups, ids, workers*ids)
	}
	var sum float64
	for _, m := range scanAll(t, r, "b", h0, h0.Add(24*time.Hour)) {
		sum += m.Metrics["joins"]
	}
	if sum != ids {
		t.Fatalf("summed %v, want %d", sum, ids)
	}
}

// The schema holds the buckets' rules even for a writer that is not this
// package.
func TestPostgresSchemaRefusesWhatTheRecordNeverWrites(t *testing.T) {
	pgtest.Require(t)
	pool := pgtest.New(t)
	ctx := context.Background()
	for name, sql := range map[string]string{
		"an hour not on the hour": `INSERT INTO ranking_buckets VALUES ('b', 'q', 'm', '2031-03-03 05:30Z', 1, '2031-03-03 05:31Z')`,
		"a first event outside":   `INSERT INTO ranking_buckets VALUES ('b', 'q', 'm', '2031-03-03 05:00Z', 1, '2031-03-03 06:00Z')`,
		"a negative value":        `INSERT INTO ranking_buckets VALUES ('b', 'q', 'm', '2031-03-03 05:00Z', -1, '2031-03-03 05:01Z')`,
		"version 0":               `INSERT INTO ranking_weights VALUES ('b', 0, '{}', '', now())`,
	} {
		_, err := pool.Exec(ctx, sql)
		var pgErr *pgconn.PgError
		if !errors.As(err, &pgErr) || pgErr.Code != "23514" {
			t.Errorf("%s: %v, want a check violation", name, err)
		}
	}
}
