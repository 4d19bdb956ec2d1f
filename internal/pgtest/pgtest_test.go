package pgtest_test

import (
	"context"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/matchgate/matchgate/internal/pgtest"
)

func TestNewGivesAMigratedSchemaDroppedAtCleanup(t *testing.T) {
	ctx := context.Background()
	var schema string
	t.Run("inner", func(t *testing.T) {
		pool := pgtest.New(t)
		if err := pool.QueryRow(ctx, `SELECT current_schema()`).Scan(&schema); err != nil {
			t.Fatal(err)
		}
		if !strings.HasPrefix(schema, "mgtest_") {
			t.Fatalf("schema %q", schema)
		}
		// Every connection of the pool works in the schema, migrated.
		for range 3 {
			var n int
			if err := pool.QueryRow(ctx, `SELECT count(*) FROM tickets`).Scan(&n); err != nil {
				t.Fatal(err)
			}
		}
	})
	if schema == "" {
		t.Skip("inner test skipped")
	}
	conn, err := pgx.Connect(ctx, pgtest.URL())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	var exists bool
	if err := conn.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM pg_namespace WHERE nspname = $1)`, schema).Scan(&exists); err != nil {
		t.Fatal(err)
	}
	if exists {
		t.Fatalf("schema %s survived its test", schema)
	}
}

func TestNewURLUsesAFreshSchema(t *testing.T) {
	ctx := context.Background()
	url := pgtest.NewURL(t)
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	var schema string
	if err := conn.QueryRow(ctx, `SELECT current_schema()`).Scan(&schema); err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(schema, "mgtest_") {
		t.Fatalf("current schema %q, want a fresh mgtest_ one", schema)
	}
}
