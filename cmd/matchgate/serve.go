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
	"strings"
	"sync"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/redis/go-redis/v9"

	"github.com/matchgate/matchgate/allocator"
	"github.com/matchgate/matchgate/gateway"
	"github.com/matchgate/matchgate/internal/clock"
	"github.com/matchgate/matchgate/matcher"
	"github.com/matchgate/matchgate/matcher/ledger"
	"github.com/matchgate/matchgate/matcher/pool"
	"github.com/matchgate/matchgate/notify"
	"github.com/matchgate/matchgate/presence"
	"github.com/matchgate/matchgate/skill"
)

type serveFlags struct {
	addr, redisURL, postgresURL, roles, config, node, secret, guests, origins, logFormat, logLevel, prefix string
	migrate                                                                                                bool
	shutdownTimeout, leaseTTL                                                                              time.Duration
	clockSkew                                                                                              time.Duration
	fleet, allocatorURL, skillURL                                                                          string
	sec                                                                                                    securityFlags
}

func parseServe(args []string, getenv func(string) string, stderr io.Writer) (serveFlags, error) {
	var f serveFlags
	fs := newFlagSet("matchgate serve", getenv, stderr)
	fs.Usage = func() {
		fmt.Fprintln(stderr, "Usage: matchgate serve [flags]\n\nRuns the server. Flags:")
		fs.PrintDefaults()
	}
	addr := fs.String("addr", "127.0.0.1:8080", "address to listen on")
	redisURL := fs.String("redis-url", "", "Redis URL (redis://host:port/db); empty runs an in-process Redis (not durable)")
	pgURL := fs.String("postgres-url", "", "PostgreSQL URL; empty keeps the record in memory (not durable)")
	roles := fs.String("roles", "gateway,matcher,relay", "comma-separated roles this process runs")
	config := fs.String("config", "", "queue file (YAML); empty uses the built-in demo queues")
	node := fs.String("node", "", "node name shown to clients (default: host name)")
	secret := fs.String("secret", "", "HS256 token secret, at least 16 bytes; empty generates one for this process only")
	guests := fs.String("guests", "auto", "enable POST /v1/auth/guest: true, false, or auto (on only in the embedded default)")
	origins := fs.String("allowed-origins", "", "comma-separated extra Origin patterns allowed to open WebSockets")
	logFormat := fs.String("log-format", "text", "log format: text or json")
	logLevel := fs.String("log-level", "info", "log level: debug, info, warn, error")
	prefix := fs.String("redis-prefix", "mg", "prefix of every Redis key and channel")
	migrate := fs.Bool("migrate", true, "apply PostgreSQL migrations at start")
	shutdown := fs.Duration("shutdown-timeout", 10*time.Second, "how long a graceful shutdown may take")
	leaseTTL := fs.Duration("lease-ttl", 4*time.Second, "partition lease TTL: a dead matcher's partitions are taken over within about this long")
	fleet := fs.String("fleet", "", "static game-server fleet: comma-separated [region=]host:port (no region: any region); empty with no --allocator-url: the demo fleet "+allocator.DemoFleet)
	allocatorURL := fs.String("allocator-url", "", "base URL of an HTTP fleet manager (docs/ALLOCATOR.md); replaces --fleet")
	skillURL := fs.String("skill-url", "", "base URL of the skill service (GET {url}/skill/{userId}), asked at join when the token has no skill")
	clockSkew := fs.Duration("clock-skew", 0, "for testing only (fault injection): shift this process's clock by this much; the clock of decisions, synchronized with the Redis server's TIME, cancels it out")
	sec := addSecurityFlags(fs)
	if err := fs.parse(args); err != nil {
		return f, err
	}
	f = serveFlags{
		addr: *addr, redisURL: *redisURL, postgresURL: *pgURL, roles: *roles, config: *config,
		node: *node, secret: *secret, guests: *guests, origins: *origins, logFormat: *logFormat,
		logLevel: *logLevel, prefix: *prefix, migrate: *migrate, shutdownTimeout: *shutdown, leaseTTL: *leaseTTL,
		fleet: *fleet, allocatorURL: *allocatorURL, skillURL: *skillURL, clockSkew: *clockSkew,
	}
	sf, err := sec()
	if err != nil {
		return f, err
	}
	f.sec = sf
	return f, nil
}

func newLogger(w io.Writer, format, level string) (*slog.Logger, error) {
	var lv slog.Level
	if err := lv.UnmarshalText([]byte(level)); err != nil {
		return nil, fmt.Errorf("--log-level: %w", err)
	}
	opts := &slog.HandlerOptions{Level: lv}
	switch format {
	case "text":
		return slog.New(slog.NewTextHandler(w, opts)), nil
	case "json":
		return slog.New(slog.NewJSONHandler(w, opts)), nil
	}
	return nil, fmt.Errorf("--log-format must be text or json, not %q", format)
}

func parseRoles(s string) (map[string]bool, error) {
	roles := map[string]bool{}
	for _, r := range strings.Split(s, ",") {
		r = strings.TrimSpace(r)
		switch r {
		case "gateway", "matcher", "relay":
			roles[r] = true
		case "":
		default:
			return nil, fmt.Errorf("--roles: unknown role %q (gateway, matcher, relay)", r)
		}
	}
	if len(roles) == 0 {
		return nil, errors.New("--roles: no role given")
	}
	return roles, nil
}

func loadQueues(path string) (matcher.Config, error) {
	if path == "" {
		return matcher.DemoConfig(), nil
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return matcher.Config{}, fmt.Errorf("--config: %w", err)
	}
	return matcher.ParseConfig(b)
}

// newAllocator builds the server allocator: the HTTP fleet manager of
// --allocator-url, else the static --fleet, else the demo fleet.
func newAllocator(f serveFlags, log *slog.Logger) (matcher.Allocator, error) {
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
	if f.redisURL != "" || f.postgresURL != "" {
		log.Warn("no --fleet or --allocator-url: every match is sent to the demo fleet", "fleet", allocator.DemoFleet)
	}
	return allocator.ParseFleet(allocator.DemoFleet)
}

func serve(ctx context.Context, args []string, getenv func(string) string, stderr io.Writer, onListen func(net.Addr)) error {
	f, err := parseServe(args, getenv, stderr)
	if err != nil {
		return err
	}
	log, err := newLogger(stderr, f.logFormat, f.logLevel)
	if err != nil {
		return err
	}
	roles, err := parseRoles(f.roles)
	if err != nil {
		return err
	}
	queues, err := loadQueues(f.config)
	if err != nil {
		return err
	}
	embedded := f.redisURL == "" && f.postgresURL == ""
	guests := f.guests == "true" || (f.guests == "auto" && embedded)
	if f.guests != "true" && f.guests != "false" && f.guests != "auto" {
		return fmt.Errorf("--guests must be true, false or auto, not %q", f.guests)
	}
	secret := []byte(f.secret)
	if len(secret) == 0 {
		secret = []byte(rand.Text())
		log.Warn("no --secret given: tokens are signed with a random key valid for this process only")
	} else if len(secret) < 16 {
		return errors.New("--secret must be at least 16 bytes")
	}

	// Listen first, so a taken port fails before anything starts.
	var ln net.Listener
	if roles["gateway"] {
		ln, err = net.Listen("tcp", f.addr)
		if err != nil {
			return fmt.Errorf("listen %s: %w", f.addr, err)
		}
		defer ln.Close()
	}

	// Redis: real, or in-process running the very same Lua scripts.
	var rdb *redis.Client
	if f.redisURL != "" {
		opt, err := redis.ParseURL(f.redisURL)
		if err != nil {
			return fmt.Errorf("--redis-url: %w", err)
		}
		// Fail fast while Redis is away (unless the URL says otherwise): a
		// join should hear 503 in a moment, not after seconds of redials.
		if opt.MaxRetries == 0 {
			opt.MaxRetries = 1
		}
		if opt.DialerRetries == 0 {
			opt.DialerRetries = 1
		}
		if opt.DialTimeout == 0 {
			opt.DialTimeout = 2 * time.Second
		}
		rdb = redis.NewClient(opt)
	} else {
		mr := miniredis.NewMiniRedis()
		if err := mr.StartAddr("127.0.0.1:0"); err != nil {
			return fmt.Errorf("start in-process redis: %w", err)
		}
		defer mr.Close()
		rdb = redis.NewClient(&redis.Options{Addr: mr.Addr()})
	}
	defer rdb.Close()

	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))

	// The clock of every deadline, window and wait-order decision: the Redis
	// server's TIME, which every process of the deployment shares (README,
	// "Time"). Synchronized before anything stamps or judges a time.
	clk := clock.New(clock.Config{Source: clock.RedisTime(rdb), Skew: f.clockSkew, Logger: log, Metrics: reg})
	if err := clk.Sync(ctx); err != nil {
		log.Warn("clock not synchronized with Redis TIME yet: this process's clock decides until it is", "err", err)
	}

	// The record: PostgreSQL, or memory.
	var led matcher.Ledger
	var pg *pgxpool.Pool
	if f.postgresURL != "" {
		pg, err = ledger.Open(ctx, f.postgresURL)
		if err != nil {
			return fmt.Errorf("--postgres-url: %w", err)
		}
		defer pg.Close()
		if f.migrate {
			if err := ledger.Migrate(ctx, pg); err != nil {
				return err
			}
		}
		led = ledger.NewPostgres(pg)
	} else {
		led = ledger.NewMemoryAt(clk.Now)
	}
	if f.redisURL == "" || f.postgresURL == "" {
		log.Warn("NOTHING IS DURABLE: running with an in-process Redis and/or an in-memory record; pass --redis-url and --postgres-url for production",
			"redis", map[bool]string{true: "in-process", false: "external"}[f.redisURL == ""],
			"record", map[bool]string{true: "memory", false: "postgresql"}[f.postgresURL == ""])
	}

	mmetrics := matcher.NewMetrics(reg)
	nmetrics := notify.NewMetrics(reg)

	pl := pool.New(rdb, f.prefix)
	if err := pl.Load(ctx); err != nil {
		log.Warn("load Lua scripts (they load on first use)", "err", err)
	}
	publisher := notify.NewPublisher(notify.PublisherConfig{Redis: rdb, Outbox: led, Prefix: f.prefix, Logger: log, Metrics: nmetrics})
	node := f.node
	if node == "" {
		node, _ = os.Hostname()
	}
	tracker := presence.New(presence.Config{Redis: rdb, Prefix: f.prefix, Node: node, Now: clk.Now, Logger: log})
	// Limits, bans, the admin API, and the queue changes stored through it.
	// The watcher calls this only once sec starts, after svc and runner
	// exist.
	var onQueues func(matcher.Config)
	sec, effective, err := newSecurity(ctx, f.sec, rdb, pg, f.prefix, node, queues, func(c matcher.Config) { onQueues(c) }, clk.Now, log)
	if err != nil {
		return err
	}
	queues = effective

	alloc, err := newAllocator(f, log)
	if err != nil {
		return err
	}
	var skills matcher.SkillSource
	if f.skillURL != "" {
		if skills, err = skill.New(skill.Config{URL: f.skillURL}); err != nil {
			return fmt.Errorf("--skill-url: %w", err)
		}
	}

	var runner *matcher.Runner
	if roles["matcher"] {
		runner, err = matcher.NewRunner(matcher.RunnerConfig{
			Queues: queues, Pool: pl, Ledger: led, Notifier: publisher, Presence: tracker, Redis: rdb,
			Prefix: f.prefix, Owner: node + "-" + rand.Text()[:8], LeaseTTL: f.leaseTTL, Logger: log, Metrics: mmetrics,
			Allocator: alloc, Now: clk.Now,
		})
		if err != nil {
			return err
		}
	}
	deps := newHealth(time.Second, map[string]func(context.Context) error{
		"redis":  func(ctx context.Context) error { return rdb.Ping(ctx).Err() },
		"record": led.Ping,
	})
	wakes := matcher.NewWakes(rdb, f.prefix, log)
	svc, err := matcher.NewService(matcher.ServiceConfig{
		Queues: queues, Pool: pl, Ledger: led, Notifier: publisher, Logger: log, Metrics: mmetrics,
		Allocator: alloc, Skill: skills, Now: clk.Now,
		Available: deps.Err, Banned: sec.bans.Banned,
		Wake: func(p matcher.Partition) {
			if runner != nil && runner.Wake(p) {
				// Held here: no other process matches it, and a publish
				// per join would cost a round trip for nothing.
				return
			}
			// The matcher holding it is in another process.
			wakes.Wake(p)
		},
	})
	if err != nil {
		return err
	}

	// Workers stop after the gateway has drained, so in-flight commands
	// still reach a running matcher and publisher.
	workCtx, stopWork := context.WithCancel(context.WithoutCancel(ctx))
	defer stopWork()
	var workers sync.WaitGroup
	start := func(name string, fn func(context.Context) error) {
		workers.Go(func() {
			if err := fn(workCtx); err != nil {
				log.Error(name+" stopped", "err", err)
			}
		})
	}
	deps.check(ctx)
	start("clock", clk.Run)
	start("health", deps.Run)
	start("publisher", publisher.Run)
	start("wakes", wakes.Run)
	onQueues = applyQueues(log, svc, runner)
	sec.sweepBans(svc)
	reg.MustRegister(matcher.NewPoolCollector(pl, svc.QueueList))
	sec.start(start)
	if runner != nil {
		start("matcher", runner.Run)
	}
	if roles["relay"] {
		relay := notify.NewRelay(notify.RelayConfig{Redis: rdb, Outbox: led, Prefix: f.prefix, Now: clk.Now, Logger: log, Metrics: nmetrics})
		start("relay", relay.Run)
	}

	ready := func(context.Context) error { return deps.Err() }

	if !roles["gateway"] {
		log.Info("matchgate running", "roles", f.roles)
		<-ctx.Done()
	} else {
		var gw *gateway.Server
		hub := notify.NewHub(notify.HubConfig{Redis: rdb, Prefix: f.prefix, Logger: log, Metrics: nmetrics,
			// Pushes published while the connection was down are lost to
			// it: every connected player gets a fresh hello instead.
			OnResubscribe: func() { gw.Resync(workCtx) },
		})
		var origins []string
		if f.origins != "" {
			origins = strings.Split(f.origins, ",")
		}
		gw, err = gateway.New(sec.gateway(gateway.Config{
			Matchmaker: svc, Subscriber: hub, Presence: tracker, Ready: ready, Logger: log,
			Registerer: reg, Gatherer: reg, Node: node, Secret: secret, Guests: guests,
			AllowedOrigins: origins, ShutdownTimeout: f.shutdownTimeout, Now: clk.Now,
		}))
		if err != nil {
			return err
		}
		sec.bind(gw)
		start("pubsub hub", hub.Run)
		start("presence", tracker.Run)
		log.Info("matchgate listening", "url", "http://"+ln.Addr().String()+"/", "roles", f.roles, "guests", guests, "queues", len(queues.Queues))
		if onListen != nil {
			onListen(ln.Addr())
		}
		if err := gw.Run(ctx, ln); err != nil {
			stopWork()
			workers.Wait()
			return err
		}
	}
	log.Info("shutting down")
	stopWork()
	workers.Wait()
	log.Info("stopped")
	return nil
}
