package presence

import (
	"context"
	_ "embed"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/matchgate/matchgate/internal/slots"
)

// Config configures a Tracker.
type Config struct {
	Redis redis.UniversalClient
	// Prefix of the keys. Default "mg".
	Prefix string
	// Node names this gateway. Required for Connected.
	Node string
	// TTL is how long an "online" record lives without a refresh; a node that
	// dies stops refreshing and its users read as gone after at most TTL.
	// Refreshes run every TTL/3, so a record lost with Redis (a wipe) is
	// back within TTL/3. SetTTL changes it. Default 15s.
	TTL time.Duration
	// Linger is how long a "last seen" record outlives a disconnect. It must
	// exceed every queue's heartbeat timeout. Default 10m.
	Linger time.Duration
	// Now is the clock of "last seen" stamps and of LastSeen's "now". Other
	// processes judge those stamps, so every tracker of a deployment needs
	// the same clock (the server gives each the Redis server's TIME,
	// internal/clock). Default time.Now.
	Now    func() time.Time
	Logger *slog.Logger
}

// refreshSlots spreads the refresh over its period, as the gateway spreads
// its pings: a user gets one of up to this many slots when their first
// socket on this node opens, in turn, and every TTL/3 / slots Run rewrites
// the records of one slot. Rewriting every record at once is a burst of
// one SET per user each TTL/3 (19,000 at a full gateway) that joins in
// flight queue behind.
const refreshSlots = 50

// minRefreshStep keeps a short TTL (tests) from waking Run more often than
// this: it gets fewer slots instead.
const minRefreshStep = 10 * time.Millisecond

// MinTTL is the shortest TTL SetTTL takes: a refresh every second.
const MinTTL = 3 * time.Second

//go:embed lua/disconnect.lua
var disconnectSrc string

var disconnectScript = redis.NewScript(disconnectSrc)

// Tracker publishes the presence of this node's users and reads everyone's.
type Tracker struct {
	cfg   Config
	ttl   atomic.Int64 // the current TTL, ns (Config.TTL until SetTTL)
	mu    sync.Mutex
	local map[string]online  // this node's users
	slots *slots.Set[string] // the same users by refresh slot
}

// online is a user of this node: their open sockets and refresh slot.
type online struct {
	sockets, slot int
}

// New builds a Tracker; it starts nothing.
func New(cfg Config) *Tracker {
	if cfg.Prefix == "" {
		cfg.Prefix = "mg"
	}
	if cfg.TTL == 0 {
		cfg.TTL = 15 * time.Second
	}
	if cfg.Linger == 0 {
		cfg.Linger = 10 * time.Minute
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	t := &Tracker{cfg: cfg, local: map[string]online{}, slots: slots.New[string](cfg.TTL/3, minRefreshStep, refreshSlots)}
	t.ttl.Store(int64(cfg.TTL))
	return t
}

// TTL is the current life of an "online" record.
func (t *Tracker) TTL() time.Duration { return time.Duration(t.ttl.Load()) }

// SetTTL changes the life of the "online" records, no shorter than MinTTL,
// from the next refresh on. The server keeps it at or below the shortest
// heartbeat timeout of its queues, so that a record Redis lost is back
// well before the matcher would judge its user a ghost.
func (t *Tracker) SetTTL(d time.Duration) {
	t.ttl.Store(int64(max(d, MinTTL)))
}

// TTLFor is the TTL for queues whose shortest heartbeat timeout is
// minTimeout: the default (15s) or that timeout when shorter, so that
// refreshes run at least three times per timeout.
func TTLFor(minTimeout time.Duration) time.Duration {
	return max(min(15*time.Second, minTimeout), MinTTL)
}

// Key is the presence record of a user: "on <node>" while a socket is open,
// "off <unix ms>" after the last one closed.
func (t *Tracker) Key(user string) string { return t.cfg.Prefix + ":presence:" + user }

// Connected records a new socket of user on this node.
func (t *Tracker) Connected(ctx context.Context, user string) error {
	t.mu.Lock()
	o, ok := t.local[user]
	if !ok {
		o.slot = t.slots.Add(user)
	}
	o.sockets++
	t.local[user] = o
	t.mu.Unlock()
	if err := t.cfg.Redis.Set(ctx, t.Key(user), "on "+t.cfg.Node, t.TTL()).Err(); err != nil {
		return fmt.Errorf("presence of %s: %w", user, err)
	}
	return nil
}

// Disconnected records that a socket of user closed; when it was the last
// one on this node, the record becomes "last seen now".
func (t *Tracker) Disconnected(user string) {
	t.mu.Lock()
	o, ok := t.local[user]
	o.sockets--
	last := o.sockets <= 0
	switch {
	case last && ok:
		delete(t.local, user)
		t.slots.Remove(user, o.slot)
	case !last:
		t.local[user] = o
	}
	t.mu.Unlock()
	if !last {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	off := "off " + strconv.FormatInt(t.cfg.Now().UnixMilli(), 10)
	err := disconnectScript.Run(ctx, t.cfg.Redis, []string{t.Key(user)}, "on "+t.cfg.Node, off, t.cfg.Linger.Milliseconds()).Err()
	if err != nil {
		// The "on" record expires within TTL anyway.
		t.cfg.Logger.Debug("presence: record disconnect", "err", err)
	}
}

// Online is the number of distinct users with a socket on this node.
func (t *Tracker) Online() int {
	t.mu.Lock()
	defer t.mu.Unlock()
	return len(t.local)
}

// Run rewrites this node's records until ctx ends: each once every TTL/3,
// one slot at a time, at the TTL of the moment. (A draining node closes its
// sockets, and the last close of each user records them as last seen.)
func (t *Tracker) Run(ctx context.Context) error {
	timer := time.NewTimer(t.step())
	defer timer.Stop()
	for slot := 0; ; slot = (slot + 1) % t.slots.Len() {
		select {
		case <-ctx.Done():
			return nil
		case <-timer.C:
		}
		timer.Reset(t.step())
		if err := t.refresh(ctx, slot); err != nil && ctx.Err() == nil {
			t.cfg.Logger.Warn("presence refresh", "err", err)
		}
	}
}

// step is how often Run refreshes the next slot: each once per TTL/3.
func (t *Tracker) step() time.Duration {
	return max(t.TTL()/3/time.Duration(t.slots.Len()), time.Millisecond)
}

// refresh rewrites the records of one slot's users in pipelines of bounded
// size.
func (t *Tracker) refresh(ctx context.Context, slot int) error {
	t.mu.Lock()
	users := t.slots.Keys(slot)
	t.mu.Unlock()
	on, ttl := "on "+t.cfg.Node, t.TTL()
	for len(users) > 0 {
		n := min(len(users), 1000)
		pipe := t.cfg.Redis.Pipeline()
		for _, u := range users[:n] {
			pipe.Set(ctx, t.Key(u), on, ttl)
		}
		if _, err := pipe.Exec(ctx); err != nil {
			return fmt.Errorf("refresh %d users: %w", n, err)
		}
		users = users[n:]
	}
	return nil
}

// LastSeen tells, for each user, when they were last seen with a live
// socket: now for a user online on some node, the disconnect time for one
// who left, and no entry for a user with no record (never connected, or gone
// for longer than Linger, or on a node that died).
func (t *Tracker) LastSeen(ctx context.Context, users []string) (map[string]time.Time, error) {
	out := make(map[string]time.Time, len(users))
	if len(users) == 0 {
		return out, nil
	}
	keys := make([]string, len(users))
	for i, u := range users {
		keys[i] = t.Key(u)
	}
	vals, err := t.getAll(ctx, keys)
	if err != nil {
		return nil, fmt.Errorf("presence of %d users: %w", len(users), err)
	}
	now := t.cfg.Now()
	for i, v := range vals {
		s, _ := v.(string)
		switch {
		case strings.HasPrefix(s, "on "):
			out[users[i]] = now
		case strings.HasPrefix(s, "off "):
			if ms, err := strconv.ParseInt(s[4:], 10, 64); err == nil {
				out[users[i]] = time.UnixMilli(ms)
			}
		}
	}
	return out, nil
}

// getAll reads keys in one round trip per node: one MGET on a single Redis;
// on a cluster, whose MGET refuses keys of several slots, a pipeline of GETs
// that the client sends to every master at once.
func (t *Tracker) getAll(ctx context.Context, keys []string) ([]any, error) {
	if _, ok := t.cfg.Redis.(*redis.ClusterClient); !ok {
		return t.cfg.Redis.MGet(ctx, keys...).Result()
	}
	pipe := t.cfg.Redis.Pipeline()
	cmds := make([]*redis.StringCmd, len(keys))
	for i, k := range keys {
		cmds[i] = pipe.Get(ctx, k)
	}
	_, _ = pipe.Exec(ctx) // each command's own error is read below
	vals := make([]any, len(keys))
	for i, c := range cmds {
		switch v, err := c.Result(); {
		case err == nil:
			vals[i] = v
		case !errors.Is(err, redis.Nil):
			return nil, err
		}
	}
	return vals, nil
}

// Where returns the node holding a socket of user, if any.
func (t *Tracker) Where(ctx context.Context, user string) (string, bool, error) {
	s, err := t.cfg.Redis.Get(ctx, t.Key(user)).Result()
	if err == redis.Nil {
		return "", false, nil
	}
	if err != nil {
		return "", false, fmt.Errorf("presence of %s: %w", user, err)
	}
	if node, ok := strings.CutPrefix(s, "on "); ok {
		return node, true, nil
	}
	return "", false, nil
}
