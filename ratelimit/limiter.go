package ratelimit

import (
	"context"
	_ "embed"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"
)

var (
	//go:embed lua/gcra.lua
	gcraSrc string
	//go:embed lua/socket_acquire.lua
	socketAcquireSrc string

	gcraScript          = redis.NewScript(gcraSrc)
	socketAcquireScript = redis.NewScript(socketAcquireSrc)
)

// Config configures a Limiter.
type Config struct {
	// Redis holds the limits. Required.
	Redis redis.UniversalClient
	// Prefix of every key. Default "mg".
	Prefix string
	// Now, when set, replaces the Redis server's clock (tests). Default:
	// nil, the server's TIME, shared by every gateway.
	Now func() time.Time
}

// Limiter counts events against limits shared by every process that uses
// the same Redis and prefix.
type Limiter struct {
	cfg Config
}

// New builds a Limiter; it starts nothing and does not contact Redis.
func New(cfg Config) (*Limiter, error) {
	if cfg.Redis == nil {
		return nil, errors.New("ratelimit: Config.Redis is required")
	}
	if cfg.Prefix == "" {
		cfg.Prefix = "mg"
	}
	return &Limiter{cfg: cfg}, nil
}

// Load registers the scripts (SCRIPT LOAD), so the first calls skip the
// EVALSHA → EVAL fallback. Calls work without it.
func (l *Limiter) Load(ctx context.Context) error {
	for _, s := range []*redis.Script{gcraScript, socketAcquireScript} {
		if err := s.Load(ctx, l.cfg.Redis).Err(); err != nil {
			return fmt.Errorf("ratelimit: load script: %w", err)
		}
	}
	return nil
}

// Key is the Redis key of one subject of one named limit.
func (l *Limiter) Key(name, subject string) string {
	return l.cfg.Prefix + ":rl:" + name + ":" + subject
}

// Allow counts one event of subject against the named limit lim and reports
// whether it fits: at most lim's burst at once, lim.N per lim.Per on
// average. An off limit allows everything without a round trip.
// Different limits on the same subject need different names.
func (l *Limiter) Allow(ctx context.Context, name, subject string, lim Limit) (Decision, error) {
	if lim.Off() {
		return Decision{Allowed: true, Remaining: -1}, nil
	}
	if err := lim.Validate(); err != nil {
		return Decision{}, err
	}
	now := ""
	if l.cfg.Now != nil {
		now = strconv.FormatInt(l.cfg.Now().UnixMicro(), 10)
	}
	interval := float64(lim.Per.Nanoseconds()) / float64(lim.N) / 1e3
	res, err := gcraScript.Run(ctx, l.cfg.Redis, []string{l.Key(name, subject)},
		strconv.FormatFloat(interval, 'f', -1, 64), lim.BurstOrN(), now).Int64Slice()
	if err != nil {
		return Decision{}, fmt.Errorf("ratelimit %s: %w", name, err)
	}
	if len(res) != 3 {
		return Decision{}, fmt.Errorf("ratelimit %s: unexpected reply %v", name, res)
	}
	return Decision{
		Allowed:    res[0] == 1,
		RetryAfter: time.Duration(res[1]) * time.Microsecond,
		Remaining:  int(res[2]),
	}, nil
}
