package ledger_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/matchgate/matchgate/internal/pgtest"
	"github.com/matchgate/matchgate/matcher"
	"github.com/matchgate/matchgate/matcher/ledger"
)

// A connection caches the plans of commit_match and commit_matches the first
// time it commits, which on a new deployment is while tickets is nearly
// empty. Once the table has grown, a commit must still lock and update its
// tickets through the primary key rather than reading the whole table.
func TestPostgresCommitsReadTicketsByKey(t *testing.T) {
	ctx := context.Background()
	pool, l := oneBackend(t)

	user := 0
	pairs := func(n int) []matcher.Match {
		ms := make([]matcher.Match, n)
		for i := range ms {
			a := mustCreate(t, l, ticketFor(fmt.Sprintf("plan-%d", user), "ranked", "eu", t0))
			b := mustCreate(t, l, ticketFor(fmt.Sprintf("plan-%d", user+1), "ranked", "eu", t0))
			user += 2
			ms[i] = matchOf(t0, a, b)
		}
		return ms
	}
	// crossed is a batch whose two matches seat one ticket: commit_matches
	// hands it to commit_match, one match at a time, and the second falls
	// short.
	crossed := func() []matcher.Match {
		ms := pairs(2)
		ms[1].Players[0] = ms[0].Players[0]
		return ms
	}
	commit := func(ms []matcher.Match) {
		t.Helper()
		rs, err := l.CommitMatches(ctx, ms, 0)
		if err != nil {
			t.Fatal(err)
		}
		for i, r := range rs {
			if short := i == 1 && ms[1].Players[0] == ms[0].Players[0]; (r.Err != nil) != short {
				t.Fatalf("match %d of %d: %v", i, len(ms), r.Err)
			}
		}
	}
	// Past the five custom plans PL/pgSQL makes before it may settle on a
	// generic one, on every path.
	for range 8 {
		commit(pairs(1))
		commit(pairs(2))
		commit(crossed())
	}
	const grown = 3000
	addWaiting(t, pool, grown)

	for _, batch := range []struct {
		name string
		ms   []matcher.Match
	}{{"one match", pairs(1)}, {"ten matches", pairs(10)}, {"two matches sharing a ticket", crossed()}} {
		seats := 0
		for _, m := range batch.ms {
			seats += len(m.Players)
		}
		before := ticketScans(t, pool)
		commit(batch.ms)
		after := ticketScans(t, pool)
		seq, read := after.seq-before.seq, after.read-before.read
		t.Logf("%s: %d sequential scans, %d tuples read from tickets", batch.name, seq, read)
		if seq != 0 || read > 10*int64(seats)+50 {
			t.Errorf("%s over %d tickets: %d sequential scans, %d tuples read; want the %d seats looked up by key",
				batch.name, grown, seq, read, seats)
		}
	}
}

type scans struct{ seq, read int64 }

// ticketScans reads the scan statistics of tickets (see scansOf).
func ticketScans(t *testing.T, pool *pgxpool.Pool) scans {
	t.Helper()
	return scansOf(t, pool, "tickets")
}

// scansOf reads the scan statistics of tables, summed, after making this
// backend publish what it has counted so far (PostgreSQL 15 holds them back
// up to a second otherwise).
func scansOf(t *testing.T, pool *pgxpool.Pool, tables ...string) scans {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if _, err := pool.Exec(ctx, `SELECT pg_stat_force_next_flush()`); err != nil {
		t.Fatal(err)
	}
	var s scans
	if err := pool.QueryRow(ctx, `
		SELECT coalesce(sum(seq_scan), 0), coalesce(sum(seq_tup_read), 0) + coalesce(sum(idx_tup_fetch), 0)
		  FROM pg_stat_user_tables WHERE relid = ANY ($1::regclass[])`, tables).Scan(&s.seq, &s.read); err != nil {
		t.Fatal(err)
	}
	return s
}

// A dissolve reads which of its players already wait elsewhere. Planned
// while the tables are nearly empty, its reads walked every ticket; once the
// tables have grown it must still look each row up by key.
func TestPostgresDissolveReadsByKey(t *testing.T) {
	ctx := context.Background()
	pool, l := oneBackend(t)

	user := 0
	var seq, read int64
	dissolve := func() {
		t.Helper()
		a := mustCreate(t, l, ticketFor(fmt.Sprintf("dis-%d", user), "ranked", "eu", t0))
		b := mustCreate(t, l, ticketFor(fmt.Sprintf("dis-%d", user+1), "ranked", "eu", t0))
		user += 2
		m := pendingMatch(t, l, a, b)
		before := scansOf(t, pool, "tickets", "matches")
		// a declines: b goes back to waiting, the path that reads the most.
		if _, _, err := l.Dissolve(ctx, matcher.DissolveRequest{MatchID: m.ID, Decliner: a.UserID, At: m.CreatedAt}); err != nil {
			t.Fatal(err)
		}
		after := scansOf(t, pool, "tickets", "matches")
		seq, read = seq+after.seq-before.seq, read+after.read-before.read
	}
	// Past the five custom plans before a generic one may be chosen.
	for range 8 {
		dissolve()
	}
	const grown = 3000
	addWaiting(t, pool, grown)
	if _, err := pool.Exec(ctx, `
		INSERT INTO matches (id, queue, region, state, formed_by, players, created_at, version)
		SELECT gen_random_uuid(), 'ranked', 'eu', 'READY', 'filled', '[]', now(), 1
		  FROM generate_series(1, $1) g`, grown); err != nil {
		t.Fatal(err)
	}
	seq, read = 0, 0
	const n = 5
	for range n {
		dissolve()
	}
	t.Logf("%d dissolves: %d sequential scans, %d rows read from tickets and matches", n, seq, read)
	if seq != 0 || read > 20*n {
		t.Errorf("%d dissolves over %d waiting tickets and %d matches: %d sequential scans, %d rows read; want each row looked up by key",
			n, grown, grown, seq, read)
	}
}

// oneBackend is a migrated ledger over a pool of one connection: the plans
// a test warms are the ones it then measures.
func oneBackend(t *testing.T) (*pgxpool.Pool, *ledger.Postgres) {
	t.Helper()
	pool := migratedPool(t, func(c *pgxpool.Config) { c.MaxConns = 1 })
	return pool, ledger.NewPostgres(pool)
}

// migratedPool is a pool over a fresh schema, configured by configure and
// then migrated.
func migratedPool(t *testing.T, configure func(*pgxpool.Config)) *pgxpool.Pool {
	t.Helper()
	pgtest.Require(t)
	ctx := context.Background()
	cfg, err := pgxpool.ParseConfig(pgtest.NewURL(t))
	if err != nil {
		t.Fatal(err)
	}
	configure(cfg)
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close)
	if err := ledger.Migrate(ctx, pool); err != nil {
		t.Fatal(err)
	}
	return pool
}

// addWaiting adds n waiting tickets of other users behind the ledger's back.
func addWaiting(t *testing.T, pool *pgxpool.Pool, n int) {
	t.Helper()
	if _, err := pool.Exec(context.Background(), `
		INSERT INTO tickets (id, user_id, queue, region, status, skill, enqueued_at, deadline, updated_at, version)
		SELECT gen_random_uuid(), 'filler-' || g, 'ranked', 'eu', 'WAITING', 1500,
		       now(), now() + interval '5 minutes', now(), 1
		  FROM generate_series(1, $1) g`, n); err != nil {
		t.Fatal(err)
	}
}
