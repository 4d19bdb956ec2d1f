package main

import (
	"crypto/rand"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strings"
	"time"

	"github.com/matchgate/matchgate/allocator"
	"github.com/matchgate/matchgate/matcher"
)

type serveFlags struct {
	addr, redisURL, postgresURL, postgresReplicaURL, roles, config, node, secret, guests, origins, logFormat, logLevel, prefix string
	migrate                                                                                                                    bool
	shutdownTimeout, leaseTTL, providerGrace                                                                                   time.Duration
	clockSkew                                                                                                                  time.Duration
	fleet, allocatorURL, skillURL                                                                                              string
	sec                                                                                                                        securityFlags
}

func parseServe(args []string, getenv func(string) string, stderr io.Writer) (serveFlags, error) {
	var f serveFlags
	fs := newFlagSet("matchgate serve", getenv, stderr)
	fs.Usage = func() {
		fmt.Fprintln(stderr, "Usage: matchgate serve [flags]\n\nRuns the server. Flags:")
		fs.PrintDefaults()
	}
	addr := fs.String("addr", "127.0.0.1:8080", "address to listen on")
	redisURL := fs.Secret("redis-url", "Redis URL: redis://host:port/db, or a Redis Cluster as redis+cluster://host:port,host:port; empty runs an in-process Redis (not durable)")
	pgURL := fs.Secret("postgres-url", "PostgreSQL URL; empty keeps the record in memory (not durable)")
	pgReplicaURL := fs.Secret("postgres-replica-url", "PostgreSQL URL of a read replica for GET of a ticket, the ticket history and a ranking item's GET; empty reads the primary")
	roles := fs.String("roles", "gateway,matcher,relay", "comma-separated roles this process runs")
	config := fs.String("config", "", "queue file (YAML); empty uses the built-in demo queues")
	node := fs.String("node", "", "node name shown to clients (default: host name)")
	secret := fs.Secret("secret", "HS256 token secret, at least 16 bytes; empty generates one for this process only")
	guests := fs.String("guests", "auto", "enable POST /v1/auth/guest: true, false, or auto (on only in the embedded default)")
	origins := fs.String("allowed-origins", "", "comma-separated extra Origin patterns allowed to open WebSockets")
	logFormat := fs.String("log-format", "text", "log format: text or json")
	logLevel := fs.String("log-level", "info", "log level: debug, info, warn, error")
	prefix := fs.String("redis-prefix", "mg", "prefix of every Redis key and channel")
	migrate := fs.Bool("migrate", true, "apply PostgreSQL migrations at start")
	shutdown := fs.Duration("shutdown-timeout", 10*time.Second, "how long a graceful shutdown may take")
	providerGrace := fs.Duration("provider-grace", 3*time.Second, "how long a provider's closed socket keeps it online: a reconnect within it keeps its offers")
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
		addr: *addr, redisURL: *redisURL, postgresURL: *pgURL, postgresReplicaURL: *pgReplicaURL, roles: *roles, config: *config,
		node: *node, secret: *secret, guests: *guests, origins: *origins, logFormat: *logFormat,
		logLevel: *logLevel, prefix: *prefix, migrate: *migrate, shutdownTimeout: *shutdown, leaseTTL: *leaseTTL, providerGrace: *providerGrace,
		fleet: *fleet, allocatorURL: *allocatorURL, skillURL: *skillURL, clockSkew: *clockSkew,
	}
	sf, err := sec()
	if err != nil {
		return f, err
	}
	f.sec = sf
	return f, nil
}

// embedded reports the embedded default: neither Redis nor PostgreSQL given.
func (f serveFlags) embedded() bool { return f.redisURL == "" && f.postgresURL == "" }

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

// parseGuests reads --guests: auto is on only in the embedded default.
func (f serveFlags) parseGuests() (bool, error) {
	if f.guests != "true" && f.guests != "false" && f.guests != "auto" {
		return false, fmt.Errorf("--guests must be true, false or auto, not %q", f.guests)
	}
	return f.guests == "true" || (f.guests == "auto" && f.embedded()), nil
}

// tokenSecret reads --secret; without one, tokens are signed with a random
// key that dies with the process.
func (f serveFlags) tokenSecret(log *slog.Logger) ([]byte, error) {
	secret := []byte(f.secret)
	if len(secret) == 0 {
		secret = []byte(rand.Text())
		log.Warn("no --secret given: tokens are signed with a random key valid for this process only")
	} else if len(secret) < 16 {
		return nil, errors.New("--secret must be at least 16 bytes")
	}
	return secret, nil
}
