package ratelimit

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/redis/go-redis/v9"
)

// SocketsConfig configures Sockets.
type SocketsConfig struct {
	// Redis holds the leases. Required.
	Redis redis.UniversalClient
	// Prefix of every key. Default "mg".
	Prefix string
	// TTL is how long a lease lives without a renewal: the time a dead
	// gateway's sockets keep counting against their users. Renew well within
	// it. Default 1m.
	TTL time.Duration
	// Now is the clock of lease expiries. Default time.Now.
	Now func() time.Time
}

// Lease names one open socket of a user.
type Lease struct {
	UserID   string
	SocketID string
}

// Sockets caps the sockets one user holds across every gateway.
type Sockets struct {
	cfg SocketsConfig
}

// renewBatch bounds the commands of one renewal pipeline.
const renewBatch = 512

// NewSockets builds Sockets; it starts nothing.
func NewSockets(cfg SocketsConfig) (*Sockets, error) {
	if cfg.Redis == nil {
		return nil, errors.New("ratelimit: SocketsConfig.Redis is required")
	}
	if cfg.Prefix == "" {
		cfg.Prefix = "mg"
	}
	if cfg.TTL <= 0 {
		cfg.TTL = time.Minute
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	return &Sockets{cfg: cfg}, nil
}

// Key is the sorted set of a user's leases.
func (s *Sockets) Key(userID string) string { return s.cfg.Prefix + ":sockets:" + userID }

// Acquire takes a lease for socketID unless userID already holds max
// (max ≤ 0: no cap, nothing is recorded). It reports whether it did.
func (s *Sockets) Acquire(ctx context.Context, userID, socketID string, max int) (bool, error) {
	if max <= 0 {
		return true, nil
	}
	res, err := socketAcquireScript.Run(ctx, s.cfg.Redis, []string{s.Key(userID)},
		socketID, max, s.cfg.Now().UnixMilli(), s.cfg.TTL.Milliseconds()).Int64Slice()
	if err != nil {
		return false, fmt.Errorf("socket lease of %s: %w", userID, err)
	}
	if len(res) != 2 {
		return false, fmt.Errorf("socket lease of %s: unexpected reply %v", userID, res)
	}
	return res[0] == 1, nil
}

// Release gives a lease back.
func (s *Sockets) Release(ctx context.Context, userID, socketID string) error {
	if err := s.cfg.Redis.ZRem(ctx, s.Key(userID), socketID).Err(); err != nil {
		return fmt.Errorf("release socket lease of %s: %w", userID, err)
	}
	return nil
}

// Renew extends every lease in leases by the TTL, in pipelines. A lease
// that expired meanwhile is not brought back (ZADD XX).
func (s *Sockets) Renew(ctx context.Context, leases []Lease) error {
	expiry := float64(s.cfg.Now().Add(s.cfg.TTL).UnixMilli())
	for len(leases) > 0 {
		n := min(len(leases), renewBatch)
		_, err := s.cfg.Redis.Pipelined(ctx, func(p redis.Pipeliner) error {
			for _, l := range leases[:n] {
				key := s.Key(l.UserID)
				p.ZAddXX(ctx, key, redis.Z{Score: expiry, Member: l.SocketID})
				p.PExpire(ctx, key, s.cfg.TTL)
			}
			return nil
		})
		if err != nil {
			return fmt.Errorf("renew socket leases: %w", err)
		}
		leases = leases[n:]
	}
	return nil
}
