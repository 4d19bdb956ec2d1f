package record_test

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/matchgate/matchgate/internal/pgtest"
	"github.com/matchgate/matchgate/matcher/ledger"
	"github.com/matchgate/matchgate/provider"
	"github.com/matchgate/matchgate/provider/record"
)

// Two gateways over one database are two pools: offers for one
// provider's last slots, half from each, still take exactly capacity.
func TestPostgresOffersAcrossProcesses(t *testing.T) {
	pgtest.Require(t)
	url := pgtest.NewURL(t)
	ctx := context.Background()
	var records [2]*record.Postgres
	for i := range records {
		pool, err := pgxpool.New(ctx, url)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(pool.Close)
		if err := ledger.Migrate(ctx, pool); err != nil {
			t.Fatal(err)
		}
		records[i] = record.NewPostgres(pool)
	}
	const rounds, callers, capacity = 10, 32, 2
	for round := range rounds {
		prov := fmt.Sprint("p", round)
		var won, full count
		race(callers, func(i int) {
			_, err := records[i%2].Offer(ctx, offer(round*callers+i, "care", prov), capacity)
			switch {
			case err == nil:
				won.add(i)
			case errors.Is(err, provider.ErrOverCapacity):
				full.add(i)
			default:
				t.Error(err)
			}
		})
		if won.len() != capacity || full.len() != callers-capacity {
			t.Fatalf("round %d: %d offers won, %d told ErrOverCapacity; want %d and %d",
				round, won.len(), full.len(), capacity, callers-capacity)
		}
	}
}

// The schema holds the rules even for a writer that is not this package:
// one live assignment per ticket, the five statuses, a window for every
// offer, and the times and reason each state has.
func TestPostgresSchemaRefusesWhatTheRecordNeverWrites(t *testing.T) {
	pgtest.Require(t)
	pool := pgtest.New(t)
	ctx := context.Background()
	r := record.NewPostgres(pool)
	mustOffer(t, r, offer(1, "care", "p1"), 3)
	const insert = `INSERT INTO assignments (id, queue, ticket_id, requester, provider, status, score,
		offered_at, accept_by, accepted_at, ended_at, end_reason, version) VALUES `
	for name, sql := range map[string]string{
		"a second live assignment of a ticket": insert + `(gen_random_uuid(), 'care', '` + ticket(1) + `', 'r', 'p2',
			'OFFERED', 0, now(), now() + interval '1s', NULL, NULL, NULL, 1)`,
		"an unknown status": `UPDATE assignments SET status = 'GONE' WHERE id = '` + id(1) + `'`,
		"an offer without a window": insert + `(gen_random_uuid(), 'care', gen_random_uuid(), 'r', 'p2',
			'OFFERED', 0, now(), NULL, NULL, NULL, NULL, 1)`,
		"a window closing at the offer":  `UPDATE assignments SET accept_by = offered_at WHERE id = '` + id(1) + `'`,
		"an acceptance without its time": `UPDATE assignments SET status = 'ACCEPTED' WHERE id = '` + id(1) + `'`,
		"an end without its time": `UPDATE assignments SET status = 'DECLINED', end_reason = 'declined'
			WHERE id = '` + id(1) + `'`,
		"an end without its reason": `UPDATE assignments SET status = 'EXPIRED', ended_at = now() WHERE id = '` + id(1) + `'`,
		"version 0":                 `UPDATE assignments SET version = 0 WHERE id = '` + id(1) + `'`,
	} {
		_, err := pool.Exec(ctx, sql)
		var pgErr *pgconn.PgError
		if !errors.As(err, &pgErr) || (pgErr.Code != "23505" && pgErr.Code != "23514") {
			t.Errorf("%s: %v, want a unique or check violation", name, err)
		}
	}
	getIs(t, r, stored(offer(1, "care", "p1")))
}
