package main

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/redis/go-redis/v9"

	"github.com/matchgate/matchgate/admission"
	"github.com/matchgate/matchgate/allocator"
	"github.com/matchgate/matchgate/internal/clock"
	"github.com/matchgate/matchgate/internal/redisurl"
	"github.com/matchgate/matchgate/matcher"
	"github.com/matchgate/matchgate/matcher/engine"
	"github.com/matchgate/matchgate/matcher/lease"
	"github.com/matchgate/matchgate/matcher/ledger"
	"github.com/matchgate/matchgate/matcher/pool"
	"github.com/matchgate/matchgate/notify"
	"github.com/matchgate/matchgate/presence"
	"github.com/matchgate/matchgate/provider"
	providerpool "github.com/matchgate/matchgate/provider/pool"
	providerrecord "github.com/matchgate/matchgate/provider/record"
	"github.com/matchgate/matchgate/ranking"
	rankingrecord "github.com/matchgate/matchgate/ranking/record"
	rankingservice "github.com/matchgate/matchgate/ranking/service"
	"github.com/matchgate/matchgate/skill"
)

// deps is what the roles of one process are built from and share. newDeps
// opens it in order; close releases it in the reverse order.
type deps struct {
	f      serveFlags
	log    *slog.Logger
	roles  map[string]bool
	queues matcher.Config // in force: the file's with the admin API's changes
	guests bool
	secret []byte
	node   string

	ln        net.Listener // nil without the gateway role
	rdb       redis.UniversalClient
	reg       *prometheus.Registry
	clk       *clock.Synced
	pg        *pgxpool.Pool // nil with the record in memory
	replica   *pgxpool.Pool // nil without --postgres-replica-url
	led       matcher.Ledger
	mmetrics  *engine.Metrics
	nmetrics  *notify.Metrics
	pool      *pool.Pool
	publisher *notify.Publisher
	tracker   *presence.Tracker
	sec       *security
	alloc     engine.Allocator
	skills    engine.SkillSource // nil without --skill-url
	health    *health
	wakes     *lease.Wakes
	svc       *engine.Service
	// core are the dependencies the Service and the Runner share.
	core engine.Deps
	// rankings serves the queue file's ranking boards.
	rankings *rankingservice.Service
	// The admission queues' Service, record and line.
	adm       *admission.Service
	admRecord admission.Record
	admLine   admission.Line
	// admitters are the matcher role's, nil without it.
	admitters *admission.Supervisor

	// runner is the matcher role's, nil without it. matcherRole sets it
	// before anything runs; joins' wake-ups and queue changes reach it.
	runner *lease.Runner

	closers []func()
}

// newDeps reads what the flags mean and opens everything the roles share.
// On an error it releases what it had opened.
func newDeps(ctx context.Context, f serveFlags, stderr io.Writer) (_ *deps, err error) {
	d := &deps{f: f}
	defer func() {
		if err != nil {
			d.close()
		}
	}()
	if d.log, err = newLogger(stderr, f.logFormat, f.logLevel); err != nil {
		return nil, err
	}
	log := d.log
	if d.roles, err = parseRoles(f.roles); err != nil {
		return nil, err
	}
	queues, err := loadQueues(f.config)
	if err != nil {
		return nil, err
	}
	if d.guests, err = f.parseGuests(); err != nil {
		return nil, err
	}
	if d.secret, err = f.tokenSecret(log); err != nil {
		return nil, err
	}

	// Listen first, so a taken port fails before anything starts.
	if d.roles["gateway"] {
		if d.ln, err = net.Listen("tcp", f.addr); err != nil {
			return nil, fmt.Errorf("listen %s: %w", f.addr, err)
		}
		d.onClose(func() { _ = d.ln.Close() })
	}
	if err := d.openRedis(); err != nil {
		return nil, err
	}

	d.reg = prometheus.NewRegistry()
	d.reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))

	// The clock of every deadline, window and wait-order decision: the Redis
	// server's TIME, which every process of the deployment shares (README,
	// "Time"). Synchronized before anything stamps or judges a time.
	d.clk = clock.New(clock.Config{Source: clock.RedisTime(d.rdb), Skew: f.clockSkew, Logger: log, Metrics: d.reg})
	if err := d.clk.Sync(ctx); err != nil {
		log.Warn("clock not synchronized with Redis TIME yet: this process's clock decides until it is", "err", err)
	}

	if err := d.openRecord(ctx); err != nil {
		return nil, err
	}
	if f.redisURL == "" || f.postgresURL == "" {
		log.Warn("NOTHING IS DURABLE: running with an in-process Redis and/or an in-memory record; pass --redis-url and --postgres-url for production",
			"redis", map[bool]string{true: "in-process", false: "external"}[f.redisURL == ""],
			"record", map[bool]string{true: "memory", false: "postgresql"}[f.postgresURL == ""])
	}

	d.mmetrics = engine.NewMetrics(d.reg)
	d.nmetrics = notify.NewMetrics(d.reg)

	d.pool = pool.New(d.rdb, f.prefix, pool.WithClock(d.clk.Now))
	if err := d.pool.Load(ctx); err != nil {
		log.Warn("load Lua scripts (they load on first use)", "err", err)
	}
	d.publisher = notify.NewPublisher(notify.PublisherConfig{Redis: d.rdb, Outbox: d.led, Prefix: f.prefix, Logger: log, Metrics: d.nmetrics})
	d.node = f.node
	if d.node == "" {
		d.node, _ = os.Hostname()
	}
	d.tracker = presence.New(presence.Config{Redis: d.rdb, Prefix: f.prefix, Node: d.node, Now: d.clk.Now, Logger: log})
	// Limits, bans, the admin API, and the queue changes stored through it.
	// The watcher calls applyQueues only once its task runs, after the
	// Service and the runner exist.
	if d.sec, d.queues, err = newSecurity(ctx, f.sec, d.rdb, d.pg, f.prefix, d.node, queues, d.applyQueues, d.clk.Now, log); err != nil {
		return nil, err
	}
	d.tracker.SetTTL(presenceTTL(d.queues))

	if d.alloc, err = newAllocator(f, log); err != nil {
		return nil, err
	}
	if f.skillURL != "" {
		if d.skills, err = skill.New(skill.Config{URL: f.skillURL}); err != nil {
			return nil, fmt.Errorf("--skill-url: %w", err)
		}
	}

	d.health = newHealth(time.Second, map[string]func(context.Context) error{
		"redis":  func(ctx context.Context) error { return d.rdb.Ping(ctx).Err() },
		"record": d.led.Ping,
	})
	d.wakes = lease.NewWakes(d.rdb, f.prefix, log)
	d.core = engine.Deps{
		Pool: d.pool, Ledger: d.led, Allocator: d.alloc, Notifier: d.publisher, Presence: d.tracker,
		Now: d.clk.Now, Logger: log, Metrics: d.mmetrics,
		// Provider queues: the live pool in Redis beside the pool, the
		// assignments in the record's database (or memory).
		Providers: providerpool.NewRedis(d.rdb, f.prefix, providerpool.WithClock(d.clk.Now)), Assignments: d.assignments(),
	}
	if d.svc, err = engine.NewService(engine.ServiceConfig{
		Deps:      d.core,
		Queues:    d.queues,
		Skill:     d.skills,
		Available: d.health.Err,
		Banned:    d.sec.bans.Banned,
		Wake:      d.wake,
		Admission: admissionGate{d},
		Reads:     d.replicaReads(),
	}); err != nil {
		return nil, err
	}
	d.sec.sweepBans(d.svc)
	d.reg.MustRegister(engine.NewPoolCollector(d.pool, d.svc.QueueList))
	if err := d.openAdmission(); err != nil {
		return nil, err
	}
	if err := d.openRankings(); err != nil {
		return nil, err
	}
	return d, nil
}

// openRankings builds the rankings Service on the record (PostgreSQL beside
// the matchmaking record, or memory) and Redis, its matchmaking boards fed
// from the ledger built (ARCHITECTURE.md §10). It is built whether or not
// a board is configured, so the routes answer NOT_FOUND for an unknown one
// rather than not at all.
func (d *deps) openRankings() error {
	var rec ranking.Record = rankingrecord.NewMemory()
	var reads rankingservice.RecordReads
	if d.pg != nil {
		rec = rankingrecord.NewPostgres(d.pg)
	}
	if d.replica != nil {
		reads = rankingrecord.NewPostgres(d.replica)
	}
	var act rankingservice.Activity
	if c, ok := d.led.(activityCounter); ok {
		act = ledgerActivity{c}
	}
	svc, err := rankingservice.New(rankingservice.Config{Boards: d.queues.Rankings, Record: rec, Reads: reads, Redis: d.rdb,
		Prefix: d.f.prefix, Now: d.clk.Now, Logger: d.log, Owner: d.node + "-" + rand.Text()[:8], Activity: act})
	if err != nil {
		return fmt.Errorf("rankings: %w", err)
	}
	d.rankings = svc
	return nil
}

// assignments is the record of the provider queues' assignments: in
// PostgreSQL beside the matchmaking record, or in memory with it.
func (d *deps) assignments() provider.Record {
	if d.pg != nil {
		return providerrecord.NewPostgres(d.pg)
	}
	return providerrecord.NewMemory()
}

// openRedis connects to --redis-url, or starts an in-process Redis running
// the very same Lua scripts.
func (d *deps) openRedis() error {
	if d.f.redisURL == "" {
		mr := miniredis.NewMiniRedis()
		if err := mr.StartAddr("127.0.0.1:0"); err != nil {
			return fmt.Errorf("start in-process redis: %w", err)
		}
		d.onClose(mr.Close)
		d.rdb = redis.NewClient(&redis.Options{Addr: mr.Addr()})
		d.onClose(func() { _ = d.rdb.Close() })
		return nil
	}
	rdb, err := redisurl.Open(d.f.redisURL)
	if err != nil {
		return fmt.Errorf("--redis-url: %w", err)
	}
	d.rdb = rdb
	d.onClose(func() { _ = d.rdb.Close() })
	return nil
}

// activityCounter is what both ledgers count of their record for the
// matchmaking boards.
type activityCounter interface {
	Activity(ctx context.Context, from, to time.Time) ([]matcher.QueueActivity, error)
}

// ledgerActivity adapts the ledger's counts to the rankings' tallies: the
// item is the queue, a metric of count 0 is left out.
type ledgerActivity struct{ c activityCounter }

func (a ledgerActivity) Activity(ctx context.Context, from, to time.Time) ([]ranking.Tally, error) {
	as, err := a.c.Activity(ctx, from, to)
	if err != nil {
		return nil, err
	}
	out := make([]ranking.Tally, 0, len(as))
	for _, qa := range as {
		t := ranking.Tally{Item: qa.Queue, Hour: qa.Hour, Metrics: map[string]float64{}, First: map[string]time.Time{}}
		for _, m := range []struct {
			name  string
			n     int64
			first time.Time
		}{
			{name: "joins", n: qa.Joins, first: qa.FirstJoin},
			{name: "matches", n: qa.Matches, first: qa.FirstMatch},
			{name: "cancels", n: qa.Cancels, first: qa.FirstCancel},
		} {
			if m.n > 0 {
				t.Metrics[m.name], t.First[m.name] = float64(m.n), m.first
			}
		}
		out = append(out, t)
	}
	return out, nil
}

// openRecord opens the record: PostgreSQL (migrated unless --migrate=false),
// or memory on the process's clock of decisions.
func (d *deps) openRecord(ctx context.Context) error {
	if d.f.postgresURL == "" {
		if d.f.postgresReplicaURL != "" {
			return errors.New("--postgres-replica-url needs --postgres-url")
		}
		d.led = ledger.NewMemoryAt(d.clk.Now)
		return nil
	}
	pg, err := ledger.Open(ctx, d.f.postgresURL)
	if err != nil {
		return fmt.Errorf("--postgres-url: %w", err)
	}
	d.pg = pg
	d.onClose(pg.Close)
	if d.f.migrate {
		if err := ledger.Migrate(ctx, pg); err != nil {
			return err
		}
	}
	d.led = ledger.NewPostgres(pg)
	if d.f.postgresReplicaURL != "" {
		rp, err := ledger.Open(ctx, d.f.postgresReplicaURL)
		if err != nil {
			return fmt.Errorf("--postgres-replica-url: %w", err)
		}
		d.replica = rp
		d.onClose(rp.Close)
	}
	return nil
}

// replicaReads is the record on the replica, nil without one (a nil
// interface, not a nil pointer in one: the Service reads the primary then).
func (d *deps) replicaReads() engine.RecordReads {
	if d.replica == nil {
		return nil
	}
	return ledger.NewPostgres(d.replica)
}

// newAllocator builds the server allocator: the HTTP fleet manager of
// --allocator-url, else the static --fleet, else the demo fleet.
func newAllocator(f serveFlags, log *slog.Logger) (engine.Allocator, error) {
	switch {
	case f.allocatorURL != "" && f.fleet != "":
		return nil, errors.New("--allocator-url and --fleet are exclusive")
	case f.allocatorURL != "":
		a, err := allocator.NewHTTP(allocator.HTTPConfig{URL: f.allocatorURL})
		if err != nil {
			return nil, fmt.Errorf("--allocator-url: %w", err)
		}
		return a, nil
	case f.fleet != "":
		a, err := allocator.ParseFleet(f.fleet)
		if err != nil {
			return nil, fmt.Errorf("--fleet: %w", err)
		}
		return a, nil
	}
	if !f.embedded() {
		log.Warn("no --fleet or --allocator-url: every match is sent to the demo fleet", "fleet", allocator.DemoFleet)
	}
	return allocator.ParseFleet(allocator.DemoFleet)
}

// wake tells the matcher holding a join's partition: this process's runner
// when it holds it, else the others through Redis.
func (d *deps) wake(p matcher.Partition) {
	if d.runner != nil && d.runner.Wake(p) {
		// Held here: no other process matches it, and a publish per join
		// would cost a round trip for nothing.
		return
	}
	d.wakes.Wake(p)
}

// applyQueues puts a queue change made through the admin API in force in
// this process (called from the queue watcher's goroutine, one at a time):
// the Service takes new joins by the new queues at once, the admission
// queues follow (applyAdmission), and the matcher starts, restarts or
// keeps engines to match.
func (d *deps) applyQueues(c matcher.Config) {
	names := make([]string, 0, len(c.Queues))
	for _, q := range c.Queues {
		names = append(names, q.Name)
	}
	d.svc.SetQueues(c)
	d.tracker.SetTTL(presenceTTL(c))
	d.applyAdmission(c)
	if err := d.rankings.SetBoards(c.Rankings); err != nil {
		d.log.Error("apply ranking boards", "err", err)
	}
	if d.runner != nil {
		if err := d.runner.SetQueues(c); err != nil {
			d.log.Error("apply queue configuration to the matcher", "err", err)
			return
		}
	}
	d.log.Info("queue configuration applied", "queues", strings.Join(names, ","))
}

// presenceTTL keeps the presence records' refresh (a third of their life)
// at a third of the shortest heartbeat timeout or less, so that a record
// Redis lost (a wipe) is back long before the matcher's ghost check would
// evict a player who is still connected.
func presenceTTL(c matcher.Config) time.Duration {
	shortest := matcher.HeartbeatTimeoutOf(nil)
	for i := range c.Queues {
		if c.Queues[i].Matched() {
			shortest = min(shortest, matcher.HeartbeatTimeoutOf(&c.Queues[i]))
		}
	}
	return presence.TTLFor(shortest)
}

// tasks are the goroutines every process runs, whatever its roles.
func (d *deps) tasks() []task {
	return append([]task{
		{"clock", d.clk.Run},
		{"health", d.health.Run},
		{"publisher", d.publisher.Run},
		{"wakes", d.wakes.Run},
	}, d.sec.tasks()...)
}

func (d *deps) onClose(fn func()) { d.closers = append(d.closers, fn) }

// close releases what newDeps opened, the last opened first: the record,
// Redis, the in-process Redis, the listener.
func (d *deps) close() {
	for _, fn := range slices.Backward(d.closers) {
		fn()
	}
	d.closers = nil
}
