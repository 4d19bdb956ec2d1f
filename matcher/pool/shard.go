package pool

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/matchgate/matchgate/matcher"
	"github.com/redis/go-redis/v9"
)

// Promote moves up to n entries of the sub-pool from whose effective enqueue
// time is at or before cutoff into the pool to, keeping every score: one
// script, so a player is never in both pools nor in neither. Both must be
// pools of one (queue, region) (one hash tag). It returns the ids moved,
// oldest first.
func (p *Pool) Promote(ctx context.Context, from, to string, cutoff time.Time, n int) (moved []string, err error) {
	defer wrap(&err, "promote from %s to %s", from, to)
	if err := checkPromote(from, to); err != nil || n <= 0 {
		return nil, err
	}
	keys := append(p.setKeys(from), p.setKeys(to)...)
	vals, err := promoteScript.Run(ctx, p.rdb, keys, msTime(cutoff), strconv.Itoa(n)).Slice()
	if err != nil {
		return nil, err
	}
	moved = make([]string, 0, len(vals))
	for _, v := range vals {
		moved = append(moved, memberID(str(v)))
	}
	return moved, nil
}

// Locate finds a ticket in whichever of partitions (every pool it may be in,
// of one (queue, region)) holds it, and returns that pool and its entry;
// found is false when none does (claimed, resolved or not yet added), or
// when its hash has ended by the pool's clock.
func (p *Pool) Locate(ctx context.Context, partitions []string, ticketID string) (partition string, e matcher.Entry, found bool, err error) {
	defer wrap(&err, "locate %s", ticketID)
	if err := checkSiblings(partitions); err != nil {
		return "", matcher.Entry{}, false, err
	}
	f, err := p.rdb.HMGet(ctx, p.ticketKey(partitions[0], ticketID), "m", "hb", "state", "match", "exp").Result()
	if err != nil {
		return "", matcher.Entry{}, false, err
	}
	m := str(f[0])
	if m == "" || ended(str(f[2]), str(f[3]), str(f[4]), p.now()) {
		return "", matcher.Entry{}, false, nil
	}
	pipe := p.rdb.Pipeline()
	scores := make([]*redis.FloatCmd, len(partitions))
	for i, part := range partitions {
		scores[i] = pipe.ZScore(ctx, p.Key(part, "pool"), m)
	}
	_, _ = pipe.Exec(ctx) // a missing member is redis.Nil; read each result
	for i, sc := range scores {
		if _, err := sc.Result(); err == nil {
			partition = partitions[i]
			break
		}
	}
	if partition == "" {
		return "", matcher.Entry{}, false, nil
	}
	if e, err = parseMember(m); err != nil {
		return "", matcher.Entry{}, false, err
	}
	if e.Heartbeat, err = parseMs(str(f[1])); err != nil {
		return "", matcher.Entry{}, false, fmt.Errorf("ticket %s: heartbeat: %w", ticketID, err)
	}
	return partition, e, true, nil
}

// ended reports whether a ticket hash, read as its state, match and exp,
// has ended by now: as the scripts' ended (see enqueue.lua), exp is
// "<unix ms>" for a waiting ticket and "<unix ms> <match id>" for a claim's
// mark, and one that does not fit the present state leaves the hash to
// Redis's expiry.
func ended(state, match, exp string, now time.Time) bool {
	at, of, claim := strings.Cut(exp, " ")
	ms, err := strconv.ParseInt(at, 10, 64)
	switch {
	case err != nil:
		return false
	case claim && (of == "" || state != "claimed" || of != match):
		return false
	case !claim && state != "waiting":
		return false
	}
	return ms <= now.UnixMilli()
}
