package ledger

import (
	"context"
	"fmt"
	"io/fs"
	"slices"
	"strconv"
	"strings"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/matchgate/matchgate/migrations"
)

// Open connects to the PostgreSQL database at url (a postgres:// URL or a
// key=value connection string) and checks that it answers.
func Open(ctx context.Context, url string) (*pgxpool.Pool, error) {
	cfg, err := pgxpool.ParseConfig(url)
	if err != nil {
		return nil, fmt.Errorf("open postgres: %w", err)
	}
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("open postgres: %w", err)
	}
	if err := pool.Ping(ctx); err != nil {
		pool.Close()
		return nil, fmt.Errorf("open postgres %s:%d: %w", cfg.ConnConfig.Host, cfg.ConnConfig.Port, err)
	}
	return pool, nil
}

// migrationLockClass is the first key of the advisory lock that serialises
// Migrate; the second is a hash of the schema, so that tests migrating
// schemas of their own side by side do not queue behind each other.
const migrationLockClass = 0x6d67 // "mg"

// migration is one embedded file, NNNN_name.sql.
type migration struct {
	version int64
	name    string
	sql     string
}

// Migrate applies the migrations embedded in package migrations that the
// database (the first schema of the search path) lacks, in version order,
// each in its own transaction together with its row in schema_migrations.
// Processes starting together may all call it: an advisory lock lets one
// apply each file and the others find it applied. Versions recorded in the
// database but unknown to this binary are left alone, so that an older
// binary still starts during a rolling upgrade.
func Migrate(ctx context.Context, pool *pgxpool.Pool) error {
	files, err := readMigrations(migrations.FS)
	if err != nil {
		return fmt.Errorf("migrate: %w", err)
	}
	err = pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) error {
		if err := lockMigrations(ctx, tx); err != nil {
			return err
		}
		_, err := tx.Exec(ctx, `CREATE TABLE IF NOT EXISTS schema_migrations (
			version    bigint PRIMARY KEY,
			name       text NOT NULL,
			applied_at timestamptz NOT NULL DEFAULT now())`)
		return err
	})
	if err != nil {
		return fmt.Errorf("migrate: schema_migrations: %w", err)
	}
	for _, m := range files {
		err := pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) error {
			if err := lockMigrations(ctx, tx); err != nil {
				return err
			}
			var applied bool
			if err := tx.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM schema_migrations WHERE version = $1)`,
				m.version).Scan(&applied); err != nil {
				return err
			}
			if applied {
				return nil
			}
			// No arguments: pgx sends it as a simple query, which may hold
			// many statements.
			if _, err := tx.Exec(ctx, m.sql); err != nil {
				return err
			}
			_, err := tx.Exec(ctx, `INSERT INTO schema_migrations (version, name) VALUES ($1, $2)`, m.version, m.name)
			return err
		})
		if err != nil {
			return fmt.Errorf("migrate %s: %w", m.name, err)
		}
	}
	return nil
}

// lockMigrations takes the migration lock until the end of tx, so that it
// cannot outlive the transaction on a pooled connection.
func lockMigrations(ctx context.Context, tx pgx.Tx) error {
	_, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock($1, hashtext(current_schema()))`, migrationLockClass)
	return err
}

// readMigrations lists the NNNN_name.sql files of fsys in version order.
func readMigrations(fsys fs.FS) ([]migration, error) {
	entries, err := fs.ReadDir(fsys, ".")
	if err != nil {
		return nil, err
	}
	var out []migration
	for _, e := range entries {
		name := e.Name()
		if e.IsDir() || !strings.HasSuffix(name, ".sql") {
			continue
		}
		prefix, _, ok := strings.Cut(name, "_")
		version, err := strconv.ParseInt(prefix, 10, 64)
		if !ok || err != nil || version <= 0 {
			return nil, fmt.Errorf("migration %s: name is not NNNN_name.sql", name)
		}
		sql, err := fs.ReadFile(fsys, name)
		if err != nil {
			return nil, err
		}
		out = append(out, migration{version: version, name: name, sql: string(sql)})
	}
	slices.SortFunc(out, func(a, b migration) int { return int(a.version - b.version) })
	for i := 1; i < len(out); i++ {
		if out[i].version == out[i-1].version {
			return nil, fmt.Errorf("migrations %s and %s share version %d", out[i-1].name, out[i].name, out[i].version)
		}
	}
	return out, nil
}
