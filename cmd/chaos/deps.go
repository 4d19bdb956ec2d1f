package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"net/url"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/redis/go-redis/v9"

	"github.com/matchgate/matchgate/internal/redistest"
)

// deps are the run's slices of the shared Redis and PostgreSQL: a key
// prefix and a schema nobody else uses.
type deps struct {
	rdb       *redis.Client
	prefix    string
	pgURL     string // with search_path set to the run's schema
	ownSchema string // created by the run (dropped at the end), or ""
	baseURL   string
	pg        *pgxpool.Pool // reads of the record for the checks
}

func randomHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b) // never fails
	return hex.EncodeToString(b)
}

func openDeps(ctx context.Context, o options) (*deps, error) {
	d := &deps{prefix: o.RedisPrefix, baseURL: o.PostgresURL, pgURL: o.PostgresURL}
	if d.prefix == "" {
		d.prefix = "chaos-" + randomHex(8)
	}
	opt, err := redis.ParseURL(o.RedisURL)
	if err != nil {
		return nil, fmt.Errorf("--redis-url: %w", err)
	}
	d.rdb = redis.NewClient(opt)
	pctx, cancel := context.WithTimeout(ctx, 3*time.Second)
	defer cancel()
	if err := d.rdb.Ping(pctx).Err(); err != nil {
		d.rdb.Close()
		return nil, fmt.Errorf("Redis at %s: %w", opt.Addr, err)
	}

	if !hasSearchPath(o.PostgresURL) {
		schema := "chaos_" + randomHex(6)
		conn, err := pgx.Connect(pctx, o.PostgresURL)
		if err != nil {
			d.rdb.Close()
			return nil, fmt.Errorf("PostgreSQL: %w", err)
		}
		_, err = conn.Exec(pctx, "CREATE SCHEMA "+schema)
		conn.Close(context.Background())
		if err != nil {
			d.rdb.Close()
			return nil, fmt.Errorf("create schema %s: %w", schema, err)
		}
		d.ownSchema = schema
		u, err := url.Parse(o.PostgresURL)
		if err != nil {
			return nil, errors.Join(fmt.Errorf("--postgres-url: %w", err), d.close(ctx, false))
		}
		q := u.Query()
		q.Set("search_path", schema) // pgx passes it on as a run-time setting
		u.RawQuery = q.Encode()
		d.pgURL = u.String()
	}
	cfg, err := pgxpool.ParseConfig(d.pgURL)
	if err != nil {
		return nil, errors.Join(fmt.Errorf("--postgres-url: %w", err), d.close(ctx, false))
	}
	cfg.MaxConns = 4
	d.pg, err = pgxpool.NewWithConfig(ctx, cfg)
	if err == nil {
		err = d.pg.Ping(pctx)
	}
	if err != nil {
		return nil, errors.Join(fmt.Errorf("PostgreSQL: %w", err), d.close(ctx, false))
	}
	return d, nil
}

// wipeScript deletes every key matching ARGV[1] in one atomic step, as
// FLUSHALL would: no server write lands between the first deletion and the
// last. KEYS walks the whole keyspace, once per run, which for the shared
// test Redis costs milliseconds.
var wipeScript = redis.NewScript(`
local keys = redis.call('KEYS', ARGV[1])
for i = 1, #keys, 1000 do
  redis.call('UNLINK', unpack(keys, i, math.min(i + 999, #keys)))
end
return #keys
`)

// Wipe modes.
const (
	wipeAtomic = "atomic" // one script: the same as FLUSHALL, for this run
	wipeScan   = "scan"   // SCAN + UNLINK in batches: partial loss while the servers write
)

// wipe deletes every key of the run and returns how many there were. The
// atomic mode is FLUSHALL for this run; the scan mode
// (redistest.DeletePrefix) deletes in batches while the servers keep
// writing, so it can leave a partition half gone (a ticket hash without its
// pool entry, or the reverse): a harsher fault than a flush.
func (d *deps) wipe(ctx context.Context, mode string) (int, error) {
	if mode == wipeAtomic {
		return wipeScript.Run(ctx, d.rdb, nil, d.prefix+"*").Int()
	}
	n := 0
	iter := d.rdb.Scan(ctx, 0, d.prefix+"*", 1000).Iterator()
	for iter.Next(ctx) {
		n++
	}
	if err := iter.Err(); err != nil {
		return n, err
	}
	return n, redistest.DeletePrefix(ctx, d.rdb, d.prefix)
}

// close deletes the run's keys and, unless keep, the schema it created.
func (d *deps) close(ctx context.Context, keep bool) error {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
	defer cancel()
	var errs []error
	if d.pg != nil {
		d.pg.Close()
	}
	if d.rdb != nil {
		if err := redistest.DeletePrefix(ctx, d.rdb, d.prefix); err != nil {
			errs = append(errs, fmt.Errorf("delete keys %s*: %w", d.prefix, err))
		}
		d.rdb.Close()
	}
	if d.ownSchema != "" && !keep {
		conn, err := pgx.Connect(ctx, d.baseURL)
		if err == nil {
			_, err = conn.Exec(ctx, "DROP SCHEMA "+d.ownSchema+" CASCADE")
			conn.Close(context.Background())
		}
		if err != nil {
			errs = append(errs, fmt.Errorf("drop schema %s: %w", d.ownSchema, err))
		}
	}
	return errors.Join(errs...)
}
