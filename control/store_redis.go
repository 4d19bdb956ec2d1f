package control

import (
	"context"
	_ "embed"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"time"

	"github.com/redis/go-redis/v9"
)

var (
	//go:embed lua/queue_put.lua
	queuePutSrc    string
	queuePutScript = redis.NewScript(queuePutSrc)
)

// RedisBans keeps bans in one Redis hash, <prefix>:{control}:bans (user id →
// JSON): for deployments without PostgreSQL, where nothing is durable
// beyond Redis.
type RedisBans struct {
	rdb redis.UniversalClient
	key string
}

// NewRedisBans uses rdb with the key prefix (default "mg").
func NewRedisBans(rdb redis.UniversalClient, prefix string) *RedisBans {
	if prefix == "" {
		prefix = "mg"
	}
	return &RedisBans{rdb: rdb, key: prefix + ":{control}:bans"}
}

// PutBan implements BanStore.
func (s *RedisBans) PutBan(ctx context.Context, b Ban) error {
	v, err := json.Marshal(b)
	if err != nil {
		return fmt.Errorf("store ban of %s: %w", b.UserID, err)
	}
	if err := s.rdb.HSet(ctx, s.key, b.UserID, v).Err(); err != nil {
		return fmt.Errorf("store ban of %s: %w", b.UserID, err)
	}
	return nil
}

// DeleteBan implements BanStore.
func (s *RedisBans) DeleteBan(ctx context.Context, userID string) (bool, error) {
	n, err := s.rdb.HDel(ctx, s.key, userID).Result()
	if err != nil {
		return false, fmt.Errorf("lift ban of %s: %w", userID, err)
	}
	return n > 0, nil
}

// Bans implements BanStore.
func (s *RedisBans) Bans(ctx context.Context) ([]Ban, error) {
	all, err := s.rdb.HGetAll(ctx, s.key).Result()
	if err != nil {
		return nil, fmt.Errorf("list bans: %w", err)
	}
	bans := make([]Ban, 0, len(all))
	for user, v := range all {
		var b Ban
		if err := json.Unmarshal([]byte(v), &b); err != nil {
			return nil, fmt.Errorf("ban of %s: %w", user, err)
		}
		bans = append(bans, b)
	}
	sortBans(bans)
	return bans, nil
}

// RedisQueues keeps queue overrides in one Redis hash,
// <prefix>:{control}:queues, with the version counter
// <prefix>:{control}:queues:version.
type RedisQueues struct {
	rdb        redis.UniversalClient
	key, verKy string
	now        func() time.Time
}

// NewRedisQueues uses rdb with the key prefix (default "mg").
func NewRedisQueues(rdb redis.UniversalClient, prefix string) *RedisQueues {
	if prefix == "" {
		prefix = "mg"
	}
	return &RedisQueues{rdb: rdb, key: prefix + ":{control}:queues", verKy: prefix + ":{control}:queues:version", now: time.Now}
}

// redisQueueEntry is the stored form; Version must stay the last field (the
// script splices the version in at the end).
type redisQueueEntry struct {
	Config    json.RawMessage `json:"config"`
	Retired   bool            `json:"retired"`
	UpdatedAt time.Time       `json:"updatedAt"`
}

// PutQueue implements QueueStore.
func (s *RedisQueues) PutQueue(ctx context.Context, name string, config json.RawMessage, retired bool) (QueueOverride, error) {
	if retired || len(config) == 0 {
		config = json.RawMessage("null")
	}
	e := redisQueueEntry{Config: config, Retired: retired, UpdatedAt: s.now().UTC()}
	b, err := json.Marshal(e)
	if err != nil {
		return QueueOverride{}, fmt.Errorf("store queue %s: %w", name, err)
	}
	// {"config":…,"retired":…,"updatedAt":"…","version":<v>}
	head := string(b[:len(b)-1]) + `,"version":`
	v, err := queuePutScript.Run(ctx, s.rdb, []string{s.key, s.verKy}, name, head, "}").Int64()
	if err != nil {
		return QueueOverride{}, fmt.Errorf("store queue %s: %w", name, err)
	}
	return QueueOverride{Name: name, Config: normalizeRaw(config), Retired: retired, Version: v, UpdatedAt: e.UpdatedAt}, nil
}

// Queues implements QueueStore.
func (s *RedisQueues) Queues(ctx context.Context) ([]QueueOverride, error) {
	all, err := s.rdb.HGetAll(ctx, s.key).Result()
	if err != nil {
		return nil, fmt.Errorf("list queues: %w", err)
	}
	out := make([]QueueOverride, 0, len(all))
	for name, v := range all {
		var e struct {
			redisQueueEntry
			Version int64 `json:"version"`
		}
		if err := json.Unmarshal([]byte(v), &e); err != nil {
			return nil, fmt.Errorf("queue %s: %w", name, err)
		}
		out = append(out, QueueOverride{Name: name, Config: normalizeRaw(e.Config), Retired: e.Retired, Version: e.Version, UpdatedAt: e.UpdatedAt})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Version < out[j].Version })
	return out, nil
}

// QueuesVersion implements QueueStore.
func (s *RedisQueues) QueuesVersion(ctx context.Context) (int64, error) {
	v, err := s.rdb.Get(ctx, s.verKy).Int64()
	if errors.Is(err, redis.Nil) {
		return 0, nil
	}
	if err != nil {
		return 0, fmt.Errorf("queue config version: %w", err)
	}
	return v, nil
}
