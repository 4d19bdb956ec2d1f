package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"net/url"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/redis/go-redis/v9"

	"github.com/matchgate/matchgate/internal/redistest"
	"github.com/matchgate/matchgate/internal/redisurl"
)

// deps are the run's slices of the shared Redis and PostgreSQL: a key
// prefix and a schema nobody else uses.
type deps struct {
	rdb       redis.UniversalClient
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
	rdb, err := redisurl.Open(o.RedisURL)
	if err != nil {
		return nil, fmt.Errorf("--redis-url: %w", err)
	}
	d.rdb = rdb
	pctx, cancel := context.WithTimeout(ctx, 3*time.Second)
	defer cancel()
	if err := d.rdb.Ping(pctx).Err(); err != nil {
		d.rdb.Close()
		return nil, fmt.Errorf("Redis at %s: %w", o.RedisURL, err)
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
// test Redis costs milliseconds. On a cluster it runs on each master (each
// atomic: as FLUSHALL sent to every master).
var wipeScript = redis.NewScript(`
local keys = redis.call('KEYS', ARGV[1])
for i = 1, #keys, 1000 do
  redis.call('UNLINK', unpack(keys, i, math.min(i + 999, #keys)))
end
return #keys
`)

// wipeClusterScript is wipeScript for a cluster's master, whose keys are in
// many slots: Redis refuses a script that reaches across slots unless it
// says it does, and a command naming keys of several slots whatever.
var wipeClusterScript = redis.NewScript(`#!lua flags=allow-cross-slot-keys
local keys = redis.call('KEYS', ARGV[1])
for _, k in ipairs(keys) do
  redis.call('UNLINK', k)
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
	var n atomic.Int64
	script := wipeScript
	if _, ok := d.rdb.(*redis.ClusterClient); ok {
		script = wipeClusterScript
	}
	err := eachMaster(ctx, d.rdb, func(ctx context.Context, node redis.Cmdable) error {
		if mode == wipeAtomic {
			k, err := script.Run(ctx, node, nil, d.prefix+"*").Int()
			n.Add(int64(k))
			return err
		}
		iter := node.Scan(ctx, 0, d.prefix+"*", 1000).Iterator()
		for iter.Next(ctx) {
			n.Add(1)
		}
		return iter.Err()
	})
	if err != nil || mode == wipeAtomic {
		return int(n.Load()), err
	}
	return int(n.Load()), redistest.DeletePrefix(ctx, d.rdb, d.prefix)
}

// eachMaster runs fn on the one server, or on every master of a cluster
// (concurrently).
func eachMaster(ctx context.Context, rdb redis.UniversalClient, fn func(context.Context, redis.Cmdable) error) error {
	if c, ok := rdb.(*redis.ClusterClient); ok {
		return c.ForEachMaster(ctx, func(ctx context.Context, node *redis.Client) error { return fn(ctx, node) })
	}
	return fn(ctx, rdb)
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
