package ledger_test

import (
	"context"
	"io/fs"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/matchgate/matchgate/internal/pgtest"
	"github.com/matchgate/matchgate/matcher/ledger"
	"github.com/matchgate/matchgate/migrations"
)

func TestMigrateIsIdempotentAndSafeInParallel(t *testing.T) {
	pool := pgtest.New(t) // migrated once already
	ctx := context.Background()
	var wg sync.WaitGroup
	errs := make(chan error, 4)
	for range 4 {
		wg.Go(func() { errs <- ledger.Migrate(ctx, pool) })
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	files, err := fs.Glob(migrations.FS, "*.sql")
	if err != nil || len(files) == 0 {
		t.Fatalf("embedded migrations: %v, %v", files, err)
	}
	var applied int
	if err := pool.QueryRow(ctx, `SELECT count(*) FROM schema_migrations`).Scan(&applied); err != nil {
		t.Fatal(err)
	}
	if applied != len(files) {
		t.Fatalf("schema_migrations holds %d rows for %d files", applied, len(files))
	}
}

func TestOpen(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if _, err := ledger.Open(ctx, "postgres://%zz"); err == nil {
		t.Fatal("Open accepted a malformed URL")
	}
	pgtest.New(t) // skips the test when PostgreSQL is unreachable
	pool, err := ledger.Open(ctx, pgtest.URL())
	if err != nil {
		t.Fatal(err)
	}
	defer pool.Close()
	if err := ledger.NewPostgres(pool).Ping(ctx); err != nil {
		t.Fatal(err)
	}
	_, err = ledger.Open(ctx, "postgres://postgres:secret@127.0.0.1:1/test?sslmode=disable&connect_timeout=2")
	if err == nil || strings.Contains(err.Error(), "secret") {
		t.Fatalf("Open of a closed port = %v; want an error without the password", err)
	}
}
