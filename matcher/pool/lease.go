package pool

import (
	"context"
	"errors"
	"strconv"
	"time"
)

// LeaseKey is the partition's lease: "<owner> <token> <expiry, unix ms>",
// the expiry by the clock of the owner that took or renewed it. It shares
// the partition's hash tag with FenceKey, so the lease scripts touch one
// Redis Cluster slot.
func (p *Pool) LeaseKey(partition string) string { return p.Key(partition, "lease") }

// AcquireLease takes the partition's lease for owner until now + ttl unless
// someone holds it as of now (the caller's clock: a lease whose stored
// expiry is at or before now is free, whatever Redis's clock says), and
// returns the new fencing token (greater than floor and than every token
// issued before), or 0 when the lease is held by another.
func (p *Pool) AcquireLease(ctx context.Context, partition, owner string, now time.Time, ttl time.Duration, floor int64) (token int64, err error) {
	defer wrap(&err, "acquire lease of %s", partition)
	if err := checkLease(partition, owner, now, ttl); err != nil {
		return 0, err
	}
	keys := []string{p.LeaseKey(partition), p.FenceKey(partition)}
	return acquireScript.Run(ctx, p.rdb, keys, owner, msTime(now), msTime(now.Add(ttl)), ms(ttl+expirySlack), strconv.FormatInt(floor, 10)).Int64()
}

// RenewLease extends owner's lease holding token until now + ttl. False
// means the lease is lost (expired by now, taken over, or the counter moved
// on): stop at once.
func (p *Pool) RenewLease(ctx context.Context, partition, owner string, token int64, now time.Time, ttl time.Duration) (ok bool, err error) {
	defer wrap(&err, "renew lease of %s", partition)
	if err := checkLease(partition, owner, now, ttl); err != nil {
		return false, err
	}
	keys := []string{p.LeaseKey(partition), p.FenceKey(partition)}
	n, err := renewScript.Run(ctx, p.rdb, keys, owner, strconv.FormatInt(token, 10), msTime(now), msTime(now.Add(ttl)), ms(ttl+expirySlack)).Int()
	return n == 1, err
}

// ReleaseLease gives the lease up if owner still holds it with token, so
// another matcher can take the partition without waiting for the expiry.
func (p *Pool) ReleaseLease(ctx context.Context, partition, owner string, token int64) (ok bool, err error) {
	defer wrap(&err, "release lease of %s", partition)
	if err := checkOwner(partition, owner); err != nil {
		return false, err
	}
	n, err := releaseScript.Run(ctx, p.rdb, []string{p.LeaseKey(partition)}, owner, strconv.FormatInt(token, 10)).Int()
	return n == 1, err
}

func checkLease(partition, owner string, now time.Time, ttl time.Duration) error {
	if err := checkOwner(partition, owner); err != nil {
		return err
	}
	if now.IsZero() {
		return errors.New("zero now")
	}
	if ttl < time.Millisecond {
		return errors.New("lease ttl below 1ms")
	}
	return nil
}

func checkOwner(partition, owner string) error {
	if err := checkPartition(partition); err != nil {
		return err
	}
	if owner == "" {
		return errors.New("empty owner")
	}
	return nil
}
