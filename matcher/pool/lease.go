package pool

import (
	"context"
	"time"

	"github.com/matchgate/matchgate/internal/redislease"
)

// LeaseKey is the partition's lease: "<owner> <token> <expiry, unix ms>",
// the expiry by the clock of the owner that took or renewed it. It shares
// the partition's hash tag with FenceKey, so the lease scripts touch one
// Redis Cluster slot.
func (p *Pool) LeaseKey(partition string) string { return p.Key(partition, "lease") }

func (p *Pool) leaseKeys(partition string) redislease.Keys {
	return redislease.Keys{Lease: p.LeaseKey(partition), Fence: p.FenceKey(partition)}
}

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
	return redislease.Acquire(ctx, p.rdb, p.leaseKeys(partition), owner, now, ttl, expirySlack, floor)
}

// RenewLease extends owner's lease holding token until now + ttl. False
// means the lease is lost (expired by now, taken over, or the counter moved
// on): stop at once.
func (p *Pool) RenewLease(ctx context.Context, partition, owner string, token int64, now time.Time, ttl time.Duration) (ok bool, err error) {
	defer wrap(&err, "renew lease of %s", partition)
	if err := checkLease(partition, owner, now, ttl); err != nil {
		return false, err
	}
	return redislease.Renew(ctx, p.rdb, p.leaseKeys(partition), owner, token, now, ttl, expirySlack)
}

// ReleaseLease gives the lease up if owner still holds it with token, so
// another matcher can take the partition without waiting for the expiry.
func (p *Pool) ReleaseLease(ctx context.Context, partition, owner string, token int64) (ok bool, err error) {
	defer wrap(&err, "release lease of %s", partition)
	if err := checkOwner(partition, owner); err != nil {
		return false, err
	}
	return redislease.Release(ctx, p.rdb, p.leaseKeys(partition), owner, token)
}

func checkLease(partition, owner string, now time.Time, ttl time.Duration) error {
	if err := checkPartition(partition); err != nil {
		return err
	}
	return redislease.CheckTimed(owner, now, ttl)
}

func checkOwner(partition, owner string) error {
	if err := checkPartition(partition); err != nil {
		return err
	}
	return redislease.Check(owner)
}
