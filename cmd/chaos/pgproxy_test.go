package main

import (
	"context"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/matchgate/matchgate/internal/pgtest"
)

// proxyFixture starts a proxy in front of a fresh schema with the given
// chances and returns the proxied URL and a direct connection.
func proxyFixture(t *testing.T, cut, drop float64) (*pgProxy, string, *pgx.Conn) {
	t.Helper()
	raw := pgtest.NewURL(t)
	up, err := pgUpstream(raw)
	if err != nil {
		t.Fatal(err)
	}
	p, err := startPGProxy(up, 1)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(p.close)
	p.cutChance, p.dropChance = cut, drop
	via, err := p.proxiedURL(raw)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	direct, err := pgx.Connect(ctx, raw)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { direct.Close(context.Background()) })
	if _, err := direct.Exec(ctx, "CREATE TABLE t (n int)"); err != nil {
		t.Fatal(err)
	}
	return p, via, direct
}

func countRows(t *testing.T, c *pgx.Conn) int {
	t.Helper()
	var n int
	if err := c.QueryRow(context.Background(), "SELECT count(*) FROM t").Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

// TestPGProxy: outside a fault window every statement goes through and is
// answered; in one, a dropped reply leaves the statement committed with the
// client told nothing (an ambiguous commit), and a cut statement is not
// committed.
func TestPGProxy(t *testing.T) {
	ctx := context.Background()
	for _, tc := range []struct {
		name      string
		cut, drop float64
		wantRows  int
		counter   func(p *pgProxy) int64
	}{
		{"reply dropped", 0, 1, 1, func(p *pgProxy) int64 { return p.dropped.Load() }},
		{"cut", 1, 0, 0, func(p *pgProxy) int64 { return p.cuts.Load() }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p, via, direct := proxyFixture(t, tc.cut, tc.drop)
			conn, err := pgx.Connect(ctx, via)
			if err != nil {
				t.Fatal(err)
			}
			defer conn.Close(ctx)
			for i := range 20 { // outside the window: all pass, with their replies
				if _, err := conn.Exec(ctx, "INSERT INTO t VALUES ($1)", i); err != nil {
					t.Fatalf("insert %d outside the fault window: %v", i, err)
				}
			}
			if _, err := direct.Exec(ctx, "TRUNCATE t"); err != nil {
				t.Fatal(err)
			}
			p.fault(time.Minute)
			if _, err := conn.Exec(ctx, "INSERT INTO t VALUES ($1)", 42); err == nil {
				t.Fatal("insert in the fault window answered")
			}
			if got := tc.counter(p); got != 1 {
				t.Errorf("fault counter %d, want 1", got)
			}
			// The dropped statement's reply is lost, not the statement: it
			// lands within the proxy's 2 s drain.
			deadline := time.Now().Add(3 * time.Second)
			for countRows(t, direct) != tc.wantRows && time.Now().Before(deadline) {
				time.Sleep(50 * time.Millisecond)
			}
			if got := countRows(t, direct); got != tc.wantRows {
				t.Errorf("%d rows after the faulted insert, want %d", got, tc.wantRows)
			}
		})
	}
}
