// Package pgtest gives tests a PostgreSQL schema of their own in the real
// database, so that tests of many packages can share one server in parallel
// without seeing each other's rows.
package pgtest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"net/url"
	"os"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/matchgate/matchgate/matcher/ledger"
)

// DefaultURL is used when MATCHGATE_TEST_POSTGRES_URL is not set.
const DefaultURL = "postgres://postgres@127.0.0.1:5432/test?sslmode=disable"

// URL is the PostgreSQL the tests use: MATCHGATE_TEST_POSTGRES_URL, or
// DefaultURL when it is unset.
func URL() string {
	if u := os.Getenv("MATCHGATE_TEST_POSTGRES_URL"); u != "" {
		return u
	}
	return DefaultURL
}

// New returns a pool whose connections work in a fresh schema migrated by
// ledger.Migrate. When PostgreSQL is unreachable the test is skipped, except
// with CI=true where a missing database is a broken pipeline and fails the
// test. At cleanup the pool is closed and the schema dropped.
func New(t testing.TB) *pgxpool.Pool {
	t.Helper()
	schema := newSchema(t)
	pcfg, err := pgxpool.ParseConfig(URL())
	if err != nil {
		t.Fatalf("pgtest: MATCHGATE_TEST_POSTGRES_URL: %v", err)
	}
	pcfg.ConnConfig.RuntimeParams["search_path"] = schema
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	pool, err := pgxpool.NewWithConfig(ctx, pcfg)
	if err != nil {
		t.Fatalf("pgtest: pool for schema %s: %v", schema, err)
	}
	t.Cleanup(pool.Close) // runs before the schema is dropped: cleanups run last first
	if err := ledger.Migrate(ctx, pool); err != nil {
		t.Fatalf("pgtest: migrate schema %s: %v", schema, err)
	}
	return pool
}

// NewURL returns the test database's URL with a fresh, empty schema as its
// search path, for code under test that opens and migrates the database
// itself, as the server does at start. Skipping and cleanup are as for New;
// the caller closes whatever it opens before the test ends.
func NewURL(t testing.TB) string {
	t.Helper()
	schema := newSchema(t)
	u, err := url.Parse(URL())
	if err != nil || (u.Scheme != "postgres" && u.Scheme != "postgresql") {
		t.Fatalf("pgtest: NewURL needs a postgres:// URL in MATCHGATE_TEST_POSTGRES_URL")
	}
	q := u.Query()
	q.Set("search_path", schema) // pgx passes unknown parameters on as run-time settings
	u.RawQuery = q.Encode()
	return u.String()
}

// Require skips the test when PostgreSQL is unreachable (fails it with
// CI=true), for a test that wants to skip once rather than in each of its
// subtests.
func Require(t testing.TB) {
	t.Helper()
	conn, _ := connect(t)
	conn.Close(context.Background())
}

// connect opens a connection to the test database, skipping or failing t when
// it is unreachable.
func connect(t testing.TB) (*pgx.Conn, *pgx.ConnConfig) {
	t.Helper()
	cfg, err := pgx.ParseConfig(URL())
	if err != nil {
		t.Fatalf("pgtest: MATCHGATE_TEST_POSTGRES_URL: %v", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	conn, err := pgx.ConnectConfig(ctx, cfg.Copy())
	if err != nil {
		where := fmt.Sprintf("%s:%d/%s", cfg.Host, cfg.Port, cfg.Database) // no password in logs
		if os.Getenv("CI") == "true" {
			t.Fatalf("PostgreSQL not reachable at %s: %v", where, err)
		}
		t.Skipf("PostgreSQL not reachable at %s: %v", where, err)
	}
	return conn, cfg
}

// newSchema creates a schema named mgtest_<random> and registers its removal.
func newSchema(t testing.TB) string {
	t.Helper()
	conn, cfg := connect(t)
	defer conn.Close(context.Background())
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()

	b := make([]byte, 6)
	_, _ = rand.Read(b) // never fails
	schema := "mgtest_" + hex.EncodeToString(b)
	if _, err := conn.Exec(ctx, "CREATE SCHEMA "+schema); err != nil {
		t.Fatalf("pgtest: create schema %s: %v", schema, err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		conn, err := pgx.ConnectConfig(ctx, cfg.Copy())
		if err != nil {
			t.Errorf("pgtest: drop schema %s: %v", schema, err)
			return
		}
		defer conn.Close(context.Background())
		if _, err := conn.Exec(ctx, "DROP SCHEMA "+schema+" CASCADE"); err != nil {
			t.Errorf("pgtest: drop schema %s: %v", schema, err)
		}
	})
	return schema
}
