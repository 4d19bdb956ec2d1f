package pool

import (
	"context"
	"fmt"
	"math"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"
)

// The pending index of a (queue, region): the matches whose accept window
// is open, by the time it closes. It is derived from the record (the
// reconciler rebuilds it) and lets the engine find the windows that passed
// with one range read per pass.

// Pending is a PENDING_ACCEPT match as the index holds it.
type Pending struct {
	MatchID  string
	AcceptBy time.Time
}

// AddPending indexes PENDING_ACCEPT matches until their AcceptBy, all in one
// command: a pass that formed many matches indexes them in one round trip.
func (p *Pool) AddPending(ctx context.Context, partition string, ms ...Pending) error {
	if err := checkPartition(partition); err != nil {
		return fmt.Errorf("add pending: %w", err)
	}
	if len(ms) == 0 {
		return nil
	}
	tag, _ := splitPartition(partition)
	zs := make([]redis.Z, len(ms))
	for i, m := range ms {
		zs[i] = redis.Z{Score: float64(m.AcceptBy.UnixMilli()), Member: m.MatchID}
	}
	if err := p.rdb.ZAdd(ctx, p.Key(tag, "pending"), zs...).Err(); err != nil {
		return fmt.Errorf("add %d pending matches (first %s): %w", len(ms), ms[0].MatchID, err)
	}
	return nil
}

// RemovePending drops matches from the index (READY, DISSOLVED).
func (p *Pool) RemovePending(ctx context.Context, partition string, matchIDs ...string) error {
	if err := checkPartition(partition); err != nil {
		return fmt.Errorf("remove pending: %w", err)
	}
	if len(matchIDs) == 0 {
		return nil
	}
	tag, _ := splitPartition(partition)
	members := make([]any, len(matchIDs))
	for i, id := range matchIDs {
		members[i] = id
	}
	if err := p.rdb.ZRem(ctx, p.Key(tag, "pending"), members...).Err(); err != nil {
		return fmt.Errorf("remove pending: %w", err)
	}
	return nil
}

// PendingDue returns up to n indexed matches whose window closed at or
// before now, soonest first. With n <= 0 it returns every indexed match
// (the reconciler's view).
func (p *Pool) PendingDue(ctx context.Context, partition string, now time.Time, n int) ([]string, error) {
	if err := checkPartition(partition); err != nil {
		return nil, fmt.Errorf("pending of %s: %w", partition, err)
	}
	tag, _ := splitPartition(partition)
	by := &redis.ZRangeBy{Min: "-inf", Max: strconv.FormatInt(now.UnixMilli(), 10), Count: int64(n)}
	if n <= 0 {
		by = &redis.ZRangeBy{Min: "-inf", Max: "+inf"}
	}
	ids, err := p.rdb.ZRangeByScore(ctx, p.Key(tag, "pending"), by).Result()
	if err != nil {
		return nil, fmt.Errorf("pending of %s: %w", partition, err)
	}
	return ids, nil
}

// MarkAllocationFailure remembers, until now + ttl by the caller's clock,
// that the partition could not get a server: what an explain reports as
// missing. The key's expiry, a little later, only frees the memory.
func (p *Pool) MarkAllocationFailure(ctx context.Context, partition string, now time.Time, ttl time.Duration) error {
	if err := checkPartition(partition); err != nil {
		return err
	}
	ttl = max(ttl, time.Millisecond)
	return p.rdb.Set(ctx, p.Key(partition, "allocfail"), msTime(now.Add(ttl)), ttl+expirySlack).Err()
}

// AllocationFailing reports whether the partition failed to get a server
// recently, as of now (see MarkAllocationFailure).
func (p *Pool) AllocationFailing(ctx context.Context, partition string, now time.Time) (bool, error) {
	if err := checkPartition(partition); err != nil {
		return false, err
	}
	until, err := p.until(ctx, p.Key(partition, "allocfail"))
	return until.After(now), err
}

// until reads a key holding a time, unix ms; a missing key is the zero time.
func (p *Pool) until(ctx context.Context, key string) (time.Time, error) {
	s, err := p.rdb.Get(ctx, key).Result()
	if err == redis.Nil {
		return time.Time{}, nil
	}
	if err != nil {
		return time.Time{}, err
	}
	ms, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		return time.Time{}, fmt.Errorf("%s: %w", key, err)
	}
	return time.UnixMilli(ms), nil
}

// Cooldown keys are per queue and user, outside any partition.
func (p *Pool) cooldownKey(queue, userID string) string {
	return p.prefix + ":cd:" + queue + ":" + userID
}

// SetCooldown refuses the user's joins of queue from now for d, by the
// caller's clock.
func (p *Pool) SetCooldown(ctx context.Context, queue, userID string, now time.Time, d time.Duration) error {
	if d <= 0 {
		return nil
	}
	if err := p.rdb.Set(ctx, p.cooldownKey(queue, userID), msTime(now.Add(d)), d+expirySlack).Err(); err != nil {
		return fmt.Errorf("cooldown of %s in %s: %w", userID, queue, err)
	}
	return nil
}

// Cooldown is how long, from now, the user's cooldown in queue still lasts
// (0: none).
func (p *Pool) Cooldown(ctx context.Context, queue, userID string, now time.Time) (time.Duration, error) {
	until, err := p.until(ctx, p.cooldownKey(queue, userID))
	if err != nil {
		return 0, fmt.Errorf("cooldown of %s in %s: %w", userID, queue, err)
	}
	return max(0, until.Sub(now)), nil
}

// lastSkillTTL is how long a player's last known skill is kept.
const lastSkillTTL = 30 * 24 * time.Hour

// RememberSkill keeps the skill the skill service last answered for a user,
// for joins while the service is slow or down.
func (p *Pool) RememberSkill(ctx context.Context, userID string, skill float64) error {
	if math.IsNaN(skill) || math.IsInf(skill, 0) {
		return fmt.Errorf("remember skill of %s: %v not finite", userID, skill)
	}
	return p.rdb.Set(ctx, p.prefix+":skill:"+userID, score(skill), lastSkillTTL).Err()
}

// LastSkill returns the user's remembered skill; ok is false when none is.
func (p *Pool) LastSkill(ctx context.Context, userID string) (skill float64, ok bool, err error) {
	s, err := p.rdb.Get(ctx, p.prefix+":skill:"+userID).Result()
	if err == redis.Nil {
		return 0, false, nil
	}
	if err != nil {
		return 0, false, fmt.Errorf("last skill of %s: %w", userID, err)
	}
	skill, err = strconv.ParseFloat(s, 64)
	if err != nil {
		return 0, false, fmt.Errorf("last skill of %s: %w", userID, err)
	}
	return skill, true, nil
}
