// Package redislease is the fenced lease both the matcher's partitions
// (matcher/pool) and the admitters (admission/line) hold in Redis
// (ARCHITECTURE.md §7.3): the lease key holds "<owner> <token> <expiry,
// unix ms>", judged by the caller's clock, and a fencing counter issues a
// token greater than every one before and than the caller's floor. The
// key's own expiry, slack past the lease's, only frees the memory.
package redislease

import (
	"context"
	_ "embed"
	"errors"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"
)

var (
	//go:embed lua/acquire.lua
	acquireSrc string
	//go:embed lua/renew.lua
	renewSrc string
	//go:embed lua/release.lua
	releaseSrc string

	acquireScript = redis.NewScript(acquireSrc)
	renewScript   = redis.NewScript(renewSrc)
	releaseScript = redis.NewScript(releaseSrc)
)

// Scripts are the lease's scripts by name, for the callers' script loading.
var Scripts = map[string]*redis.Script{
	"lease_acquire": acquireScript,
	"lease_renew":   renewScript,
	"lease_release": releaseScript,
}

// Keys are one lease's key and its fencing counter (one hash tag, so each
// script touches one Redis Cluster slot).
type Keys struct{ Lease, Fence string }

// Acquire takes the lease for owner until now + ttl unless someone holds it
// as of now, and returns the new fencing token, or 0 when another holds it.
func Acquire(ctx context.Context, rdb redis.Scripter, k Keys, owner string, now time.Time, ttl, slack time.Duration, floor int64) (int64, error) {
	return acquireScript.Run(ctx, rdb, []string{k.Lease, k.Fence}, owner, msTime(now), msTime(now.Add(ttl)),
		ms(ttl+slack), strconv.FormatInt(floor, 10)).Int64()
}

// Renew extends owner's lease holding token until now + ttl; false means
// the lease is lost (expired by now, taken over, or the counter moved on).
func Renew(ctx context.Context, rdb redis.Scripter, k Keys, owner string, token int64, now time.Time, ttl, slack time.Duration) (bool, error) {
	n, err := renewScript.Run(ctx, rdb, []string{k.Lease, k.Fence}, owner, strconv.FormatInt(token, 10), msTime(now),
		msTime(now.Add(ttl)), ms(ttl+slack)).Int()
	return n == 1, err
}

// Release gives the lease up if owner still holds it with token. It reads
// no clock: an owner may give up a lease it still believes held.
func Release(ctx context.Context, rdb redis.Scripter, k Keys, owner string, token int64) (bool, error) {
	n, err := releaseScript.Run(ctx, rdb, []string{k.Lease}, owner, strconv.FormatInt(token, 10)).Int()
	return n == 1, err
}

func msTime(t time.Time) string { return strconv.FormatInt(t.UnixMilli(), 10) }

func ms(d time.Duration) string { return strconv.FormatInt(d.Milliseconds(), 10) }

// Check refuses a call without an owner.
func Check(owner string) error {
	if owner == "" {
		return errors.New("empty owner")
	}
	return nil
}

// CheckTimed is Check for the calls that judge time: a now and a ttl of at
// least a millisecond.
func CheckTimed(owner string, now time.Time, ttl time.Duration) error {
	switch {
	case owner == "":
		return errors.New("empty owner")
	case now.IsZero():
		return errors.New("zero now")
	case ttl < time.Millisecond:
		return errors.New("lease ttl below 1ms")
	}
	return nil
}
