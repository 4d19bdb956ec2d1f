package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/redis/go-redis/v9"

	"github.com/matchgate/matchgate/internal/redisurl"
)

// options are the command-line flags. Zero values of the derived ones
// (WipeAt, Timeout) mean "computed from the others", as each flag says.
type options struct {
	Players      int
	Duration     time.Duration
	KillEvery    time.Duration
	RestartAfter time.Duration
	GatewayKills int
	WipeAt       time.Duration
	WipeMode     string
	PGFaultAt    time.Duration
	PGFaultFor   time.Duration
	AllocHangAt  time.Duration
	AllocHangFor time.Duration
	AllocHang    time.Duration
	ClockSkew    time.Duration
	RetireAt     time.Duration
	RetireQueue  string
	Deadline     time.Duration
	Slack        time.Duration
	LateLimit    time.Duration
	Heartbeat    time.Duration
	MaxJoins     int
	// The admission queue (docs/CHAOS.md: waiters, downstream, checks).
	Waiters           int
	AdmitRate         int
	TokenTTL          time.Duration
	AbandonAfter      time.Duration
	AdmitterKillEvery time.Duration
	Seed              uint64
	Bin               string
	Race              bool
	RedisURL          string
	RedisPrefix       string
	PostgresURL       string
	JSON              string
	Dir               string
	KeepLogs          bool
	Timeout           time.Duration
	Quiet             bool
}

// Defaults of the long run (docs/CHAOS.md); the short run in chaos_test.go
// overrides them.
const (
	defaultRedisURL    = "redis://127.0.0.1:6379/0"
	defaultPostgresURL = "postgres://postgres@127.0.0.1:5432/test?sslmode=disable"
)

func parseOptions(args []string, stderr io.Writer) (options, error) {
	var o options
	fs := flag.NewFlagSet("chaos", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprintln(stderr, "Usage: go run ./cmd/chaos [flags]\n\nRuns a matchgate cluster under faults and checks its invariants. Flags:")
		fs.PrintDefaults()
	}
	fs.IntVar(&o.Players, "players", 3000, "simulated players")
	fs.DurationVar(&o.Duration, "duration", 3*time.Minute, "load and fault phase; then the run settles until the last deadline plus --slack")
	fs.DurationVar(&o.KillEvery, "kill-every", 5*time.Second, "kill -9 a random matcher this often (0: never)")
	fs.DurationVar(&o.RestartAfter, "restart-after", 1500*time.Millisecond, "a killed process is restarted after a random delay up to this")
	fs.IntVar(&o.GatewayKills, "gateway-kills", 1, "kill -9 a gateway this many times, evenly spread over --duration")
	fs.DurationVar(&o.WipeAt, "wipe-at", 0, "delete every Redis key of the run once, this long after the start (0: 40% of --duration; negative: never)")
	fs.StringVar(&o.WipeMode, "wipe-mode", wipeAtomic, "atomic: delete the run's keys in one step (FLUSHALL for this run); scan: SCAN+UNLINK in batches while the servers write (partial loss)")
	fs.DurationVar(&o.PGFaultFor, "pg-fault-for", 4*time.Second, "length of the PostgreSQL fault window: the servers reach PostgreSQL through a proxy that cuts requests and drops replies in it (0: no proxy, no fault)")
	fs.DurationVar(&o.PGFaultAt, "pg-fault-at", 0, "when the PostgreSQL fault window opens, after the start (0: 60% of --duration)")
	fs.DurationVar(&o.AllocHangFor, "alloc-hang-for", 3*time.Second, "length of the window in which the fleet manager's allocate calls hang (0: never)")
	fs.DurationVar(&o.AllocHangAt, "alloc-hang-at", 0, "when the allocator hang window opens, after the start (0: 75% of --duration)")
	fs.DurationVar(&o.AllocHang, "alloc-hang", 16*time.Second, "how long an allocate call in the hang window hangs (longer than a matching pass may take, 15s)")
	fs.DurationVar(&o.ClockSkew, "clock-skew", 0, "start each server with --clock-skew of a different value within ±this (0: the flag is not passed)")
	fs.DurationVar(&o.RetireAt, "retire-at", 0, "when --retire-queue is retired through the admin API, after the start (0: half of --duration; negative: never)")
	fs.StringVar(&o.RetireQueue, "retire-queue", "squad", "the queue retired at --retire-at; its waiting tickets must still resolve by their deadline")
	fs.DurationVar(&o.Deadline, "deadline", 20*time.Second, "queue deadline")
	fs.DurationVar(&o.Slack, "slack", 15*time.Second, "no ticket may still be WAITING this long after its deadline; later resolutions are counted and listed")
	fs.DurationVar(&o.LateLimit, "late-limit", 5*time.Second, "a resolution later than this after the deadline is a violation (0: only reported)")
	fs.DurationVar(&o.Heartbeat, "heartbeat-timeout", 8*time.Second, "queues' heartbeatTimeout; some players stay away longer than this")
	fs.IntVar(&o.MaxJoins, "max-joins", 12, "joins per player at most")
	fs.IntVar(&o.Waiters, "waiters", 600, "simulated users of the admission queue gate (0: no admission queue)")
	fs.IntVar(&o.AdmitRate, "admit-rate", 20, "the gate queue's rate, admissions a second")
	fs.DurationVar(&o.TokenTTL, "token-ttl", 15*time.Second, "the gate queue's tokenTTL")
	fs.DurationVar(&o.AbandonAfter, "abandon-after", 10*time.Second, "the gate queue's abandonAfter (at least 10s)")
	fs.DurationVar(&o.AdmitterKillEvery, "admitter-kill-every", 4*time.Second, "kill -9 the matcher holding the gate queue's admitter lease this often (0: never)")
	fs.Uint64Var(&o.Seed, "seed", 0, "random seed (0: from the clock; printed)")
	fs.StringVar(&o.Bin, "bin", "", "server binary to run (default: go build ./cmd/matchgate into the run directory)")
	fs.BoolVar(&o.Race, "race", false, "build the server with -race; data race reports count as violations")
	fs.StringVar(&o.RedisURL, "redis-url", defaultRedisURL, "Redis (loopback only), one server or a cluster (redis+cluster://…); the run uses its own key prefix")
	fs.StringVar(&o.RedisPrefix, "redis-prefix", "", "key prefix of the run (default: chaos-<random>); every key under it is deleted at the end")
	fs.StringVar(&o.PostgresURL, "postgres-url", defaultPostgresURL, "PostgreSQL (loopback only); without search_path the run creates a schema and drops it at the end")
	fs.StringVar(&o.JSON, "json", "", "write the report as JSON to this file")
	fs.StringVar(&o.Dir, "dir", "", "directory for the binary and server logs (default: a new temporary directory)")
	fs.BoolVar(&o.KeepLogs, "keep-logs", false, "keep the run directory (logs, frames) and the schema it created")
	fs.DurationVar(&o.Timeout, "timeout", 0, "hard bound on the whole run (0: --duration + --deadline + --slack + --heartbeat-timeout + 3m, plus the admission settle's bound with --waiters)")
	fs.BoolVar(&o.Quiet, "quiet", false, "print only the report, not the progress")
	if err := fs.Parse(args); err != nil {
		return o, err
	}
	if fs.NArg() > 0 {
		return o, fmt.Errorf("unexpected arguments: %v", fs.Args())
	}
	return o, o.validate()
}

func (o *options) validate() error {
	var errs []error
	check := func(ok bool, format string, args ...any) {
		if !ok {
			errs = append(errs, fmt.Errorf(format, args...))
		}
	}
	check(o.Players >= 2 && o.Players <= 20000, "--players must be 2–20000")
	check(o.Duration >= 5*time.Second && o.Duration <= 2*time.Hour, "--duration must be 5s–2h")
	check(o.KillEvery == 0 || o.KillEvery >= time.Second, "--kill-every must be 0 or at least 1s")
	check(o.RestartAfter >= 0 && o.RestartAfter <= time.Minute, "--restart-after must be 0–1m")
	check(o.GatewayKills >= 0 && o.GatewayKills <= 100, "--gateway-kills must be 0–100")
	check(o.Deadline >= 2*time.Second && o.Deadline <= 10*time.Minute, "--deadline must be 2s–10m")
	check(o.Slack >= time.Second, "--slack must be at least 1s")
	check(o.LateLimit >= 0, "--late-limit must not be negative")
	check(o.Heartbeat >= time.Second, "--heartbeat-timeout must be at least 1s")
	check(o.MaxJoins >= 1 && o.MaxJoins <= 1000, "--max-joins must be 1–1000")
	check(o.Waiters >= 0 && o.Waiters <= 20000, "--waiters must be 0–20000")
	check(o.AdmitRate >= 1 && o.AdmitRate <= 100000, "--admit-rate must be 1–100000")
	check(o.TokenTTL >= time.Second, "--token-ttl must be at least 1s")
	check(o.AbandonAfter >= 10*time.Second, "--abandon-after must be at least 10s (the server's minimum)")
	check(o.AdmitterKillEvery == 0 || o.AdmitterKillEvery >= time.Second, "--admitter-kill-every must be 0 or at least 1s")
	check(o.Timeout >= 0, "--timeout must not be negative")
	if o.WipeAt == 0 {
		o.WipeAt = o.Duration * 2 / 5
	}
	check(o.WipeAt < o.Duration, "--wipe-at must fall within --duration")
	if o.PGFaultAt == 0 {
		o.PGFaultAt = o.Duration * 3 / 5
	}
	if o.AllocHangAt == 0 {
		o.AllocHangAt = o.Duration * 3 / 4
	}
	if o.RetireAt == 0 {
		o.RetireAt = o.Duration / 2
	}
	check(o.PGFaultFor >= 0 && o.PGFaultFor <= time.Minute, "--pg-fault-for must be 0–1m")
	check(o.PGFaultFor == 0 || (o.PGFaultAt > 0 && o.PGFaultAt < o.Duration), "--pg-fault-at must fall within --duration")
	check(o.AllocHangFor >= 0 && o.AllocHangFor <= time.Minute, "--alloc-hang-for must be 0–1m")
	check(o.AllocHangFor == 0 || (o.AllocHangAt > 0 && o.AllocHangAt < o.Duration), "--alloc-hang-at must fall within --duration")
	check(o.AllocHang >= 0 && o.AllocHang <= 5*time.Minute, "--alloc-hang must be 0–5m")
	check(o.ClockSkew >= 0 && o.ClockSkew <= time.Hour, "--clock-skew must be 0–1h")
	check(o.RetireAt < o.Duration, "--retire-at must fall within --duration")
	check(o.RetireAt < 0 || slices.ContainsFunc(runQueues(o.Deadline), func(q queueSpec) bool { return q.Name == o.RetireQueue }),
		"--retire-queue must be one of the run's queues (pairs, squad, rooms)")
	check(o.WipeMode == wipeAtomic || o.WipeMode == wipeScan, "--wipe-mode must be atomic or scan")
	if o.Timeout == 0 {
		o.Timeout = o.Duration + o.Deadline + o.Slack + o.Heartbeat + 3*time.Minute
		if o.Waiters > 0 {
			o.Timeout += admissionSettle(*o)
		}
	}
	if err := loopbackRedis(o.RedisURL); err != nil {
		errs = append(errs, err)
	}
	if err := loopbackPostgres(o.PostgresURL); err != nil {
		errs = append(errs, err)
	}
	check(o.RedisPrefix == "" || !strings.ContainsAny(o.RedisPrefix, "*?[]\\"), "--redis-prefix must not contain glob characters")
	return errors.Join(errs...)
}

// isLoopback accepts loopback IPs and "localhost" only: the run kills
// processes and deletes keys, so it never aims at another machine.
func isLoopback(host string) bool {
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(strings.Trim(host, "[]"))
	return ip != nil && ip.IsLoopback()
}

// loopbackRedis checks the one server, or every seed node of a cluster.
func loopbackRedis(raw string) error {
	rdb, err := redisurl.Open(raw)
	if err != nil {
		return fmt.Errorf("--redis-url: %w", err)
	}
	defer rdb.Close()
	var addrs []string
	switch c := rdb.(type) {
	case *redis.Client:
		if c.Options().Network == "unix" {
			return nil
		}
		addrs = []string{c.Options().Addr}
	case *redis.ClusterClient:
		addrs = c.Options().Addrs
	}
	for _, a := range addrs {
		host, _, err := net.SplitHostPort(a)
		if err != nil || !isLoopback(host) {
			return fmt.Errorf("--redis-url: %s is not a loopback address", a)
		}
	}
	return nil
}

func loopbackPostgres(raw string) error {
	cfg, err := pgx.ParseConfig(raw)
	if err != nil {
		return fmt.Errorf("--postgres-url: %w", err)
	}
	hosts := []string{cfg.Host}
	for _, f := range cfg.Fallbacks {
		hosts = append(hosts, f.Host)
	}
	for _, h := range hosts {
		if !strings.HasPrefix(h, "/") && !isLoopback(h) { // a leading / is a Unix socket directory
			return fmt.Errorf("--postgres-url: %s is not a loopback address", h)
		}
	}
	return nil
}

// hasSearchPath reports whether the PostgreSQL URL names its schema already
// (as pgtest.NewURL does); otherwise the run creates one.
func hasSearchPath(raw string) bool {
	u, err := url.Parse(raw)
	return err == nil && u.Query().Get("search_path") != ""
}
