package line

import (
	"cmp"
	"context"
	_ "embed"
	"errors"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/matchgate/matchgate/admission"
	"github.com/matchgate/matchgate/internal/redislease"
)

var (
	//go:embed lua/add.lua
	addSrc string
	//go:embed lua/take.lua
	takeSrc string
	//go:embed lua/ack.lua
	ackSrc string
	//go:embed lua/stale.lua
	staleSrc string
	//go:embed lua/return.lua
	returnSrc string
	//go:embed lua/remove.lua
	removeSrc string
	//go:embed lua/rank.lua
	rankSrc string
	//go:embed lua/head.lua
	headSrc string
	//go:embed lua/size.lua
	sizeSrc string
	//go:embed lua/touch.lua
	touchSrc string
	//go:embed lua/idle.lua
	idleSrc string
	//go:embed lua/ranks.lua
	ranksSrc string
)

var (
	addScript    = redis.NewScript(addSrc)
	takeScript   = redis.NewScript(takeSrc)
	ackScript    = redis.NewScript(ackSrc)
	staleScript  = redis.NewScript(staleSrc)
	returnScript = redis.NewScript(returnSrc)
	removeScript = redis.NewScript(removeSrc)
	rankScript   = redis.NewScript(rankSrc)
	headScript   = redis.NewScript(headSrc)
	sizeScript   = redis.NewScript(sizeSrc)
	touchScript  = redis.NewScript(touchSrc)
	idleScript   = redis.NewScript(idleSrc)
	ranksScript  = redis.NewScript(ranksSrc)

	allScripts = []struct {
		name string
		s    *redis.Script
	}{
		{"add", addScript}, {"take", takeScript}, {"ack", ackScript},
		{"stale", staleScript}, {"return", returnScript}, {"remove", removeScript},
		{"rank", rankScript}, {"head", headScript}, {"size", sizeScript},
		{"touch", touchScript}, {"idle", idleScript}, {"ranks", ranksScript},
		{"lease_acquire", redislease.Scripts["lease_acquire"]}, {"lease_renew", redislease.Scripts["lease_renew"]},
		{"lease_release", redislease.Scripts["lease_release"]},
	}
)

const (
	// span is the rate's interval: at most rate admissions in any span.
	span = time.Second
	// lag is how far behind the latest admission a caller's now may be
	// and still take: the window keeps admissions span+lag back.
	lag = 5 * time.Second
	// expirySlack is how much longer than the instants it records a key
	// lives in Redis: its expiry frees the memory and decides nothing.
	expirySlack = 5 * time.Second
	// DefaultAckedFor is how long an acknowledged place is remembered, so
	// that a rebuild's late Add does not put it back.
	DefaultAckedFor = time.Minute
	// maxSeq bounds a seq: a sorted set's score is a double.
	maxSeq = 1 << 53
	// chunk bounds the places or users one script call gets, so that no
	// call holds Redis for long; an Add, Ack, Return or Remove larger than
	// that runs as several calls, each atomic.
	chunk = 1000
)

// Option tunes a line at construction.
type Option func(*config)

type config struct {
	ackedFor time.Duration
}

// WithAckedFor sets how long an acknowledged place is remembered (default
// DefaultAckedFor), counted from the instant it was taken: choose more
// than a rebuild's read of the record takes. Values <= 0 keep the default.
func WithAckedFor(d time.Duration) Option {
	return func(c *config) {
		if d > 0 {
			c.ackedFor = d
		}
	}
}

func configOf(opts []Option) config {
	c := config{ackedFor: DefaultAckedFor}
	for _, o := range opts {
		o(&c)
	}
	return c
}

// Redis is the line of every admission queue under one key prefix.
type Redis struct {
	rdb    redis.UniversalClient
	prefix string
	cfg    config
}

var _ admission.Line = (*Redis)(nil)

// NewRedis returns the line on rdb. An empty prefix means "mg". It does
// not talk to Redis: each script falls back from EVALSHA to EVAL by itself.
func NewRedis(rdb redis.UniversalClient, prefix string, opts ...Option) *Redis {
	if prefix == "" {
		prefix = "mg"
	}
	return &Redis{rdb: rdb, prefix: prefix, cfg: configOf(opts)}
}

// Load registers every script with SCRIPT LOAD, for callers that pipeline
// them (a pipeline cannot fall back from EVALSHA to EVAL).
func (r *Redis) Load(ctx context.Context) error {
	for _, sc := range allScripts {
		if err := sc.s.Load(ctx, r.rdb).Err(); err != nil {
			return fmt.Errorf("load script %s: %w", sc.name, err)
		}
	}
	return nil
}

// Key returns the key of one structure of queue, e.g. Key("sale", "line")
// == "mg:{adm:sale}:line".
func (r *Redis) Key(queue, suffix string) string {
	return r.prefix + ":{adm:" + queue + "}:" + suffix
}

// Add puts places into the line at their Seq unless present: a user in the
// line keeps its place, one in processing is left to the admitter, and a
// place acknowledged within WithAckedFor is not put back. A place added is
// seen at now, as is a waiter present without a seen instant.
func (r *Redis) Add(ctx context.Context, queue string, places []admission.Place, now time.Time) (err error) {
	defer wrap(&err, "add %d places to %s", len(places), queue)
	if err := checkQueue(queue); err != nil {
		return err
	}
	if now.IsZero() {
		return errors.New("zero now")
	}
	args := make([]any, 0, 2*len(places))
	for _, p := range places {
		if err := checkPlace(queue, p); err != nil {
			return err
		}
		args = append(args, strconv.FormatInt(p.Seq, 10), p.UserID)
	}
	keys := []string{r.Key(queue, "line"), r.Key(queue, "proc"), r.Key(queue, "admitted"), r.Key(queue, "seen")}
	at := msTime(now)
	for len(args) > 0 {
		n := min(len(args), 2*chunk)
		if err := addScript.Run(ctx, r.rdb, keys, append([]any{at}, args[:n]...)...).Err(); err != nil {
			return err
		}
		args = args[n:]
	}
	return nil
}

// Rank returns the number of waiters ahead of userID and the line's
// length, read together.
func (r *Redis) Rank(ctx context.Context, queue, userID string) (rank, total int64, ok bool, err error) {
	defer wrap(&err, "rank of %s in %s", userID, queue)
	if err := checkQueue(queue); err != nil {
		return 0, 0, false, err
	}
	vals, err := rankScript.Run(ctx, r.rdb, []string{r.Key(queue, "line")}, userID).Int64Slice()
	if err != nil {
		return 0, 0, false, err
	}
	if len(vals) != 2 {
		return 0, 0, false, fmt.Errorf("reply of %d values", len(vals))
	}
	if vals[0] < 0 {
		return 0, vals[1], false, nil
	}
	return vals[0], vals[1], true, nil
}

// Ranks reads the ranks of userIDs and the passed counter, chunk users a
// script call; see admission.Line.
func (r *Redis) Ranks(ctx context.Context, queue string, userIDs []string) (ranks []admission.Rank, passed int64, err error) {
	defer wrap(&err, "ranks of %d in %s", len(userIDs), queue)
	if err := checkQueue(queue); err != nil {
		return nil, 0, err
	}
	keys := []string{r.Key(queue, "line"), r.Key(queue, "passed")}
	ranks = make([]admission.Rank, 0, len(userIDs))
	parts := slices.Collect(slices.Chunk(userIDs, chunk))
	if len(parts) == 0 {
		parts = [][]string{nil} // the counter alone
	}
	for i, part := range parts {
		args := make([]any, len(part))
		for i, id := range part {
			args[i] = id
		}
		vals, err := ranksScript.Run(ctx, r.rdb, keys, args...).Int64Slice()
		if err != nil {
			return nil, 0, err
		}
		if len(vals) != 2+len(part) {
			return nil, 0, fmt.Errorf("reply of %d values for %d users", len(vals), len(part))
		}
		if i == 0 {
			passed = vals[0]
		}
		ranks = appendRanks(ranks, vals[1], vals[2:], vals[0]-passed)
	}
	return ranks, passed, nil
}

// appendRanks appends one part's ranks (-1: not in the line) read at a
// counter shift above the first part's: each is told as of the first
// part's counter (what the shift's takes moved it up by is added back), so
// that rank - (passed - first's passed) still estimates it.
func appendRanks(out []admission.Rank, total int64, ranks []int64, shift int64) []admission.Rank {
	for _, rk := range ranks {
		if rk < 0 {
			out = append(out, admission.Rank{})
			continue
		}
		rk = max(rk+shift, 0)
		out = append(out, admission.Rank{Rank: rk, Total: max(total+shift, rk+1), OK: true})
	}
	return out
}

// Take moves up to n of the first waiters into processing, fenced, keeping
// the rate: see the package doc. A token that is not the lease's, or a
// lease expired by now, is refused with admission.ErrFenced before
// anything is touched. It returns the passed counter after the take.
func (r *Redis) Take(ctx context.Context, queue string, fence int64, n, rate int, now time.Time) (taken []admission.Taken, passed int64, err error) {
	defer wrap(&err, "take from %s", queue)
	if err := checkQueue(queue); err != nil {
		return nil, 0, err
	}
	if now.IsZero() {
		return nil, 0, errors.New("zero now")
	}
	keys := []string{
		r.Key(queue, "lease"), r.Key(queue, "fence"), r.Key(queue, "line"), r.Key(queue, "proc"),
		r.Key(queue, "window"), r.Key(queue, "window:n"), r.Key(queue, "admitted"),
		r.Key(queue, "seen"), r.Key(queue, "passed"),
	}
	vals, err := takeScript.Run(ctx, r.rdb, keys, strconv.FormatInt(fence, 10), msTime(now),
		max(n, 0), max(rate, 0), ms(span), ms(lag), ms(span+lag+expirySlack), ms(r.cfg.ackedFor)).StringSlice()
	if err != nil {
		if isFenced(err) {
			return nil, 0, fmt.Errorf("fence %d: %w", fence, admission.ErrFenced)
		}
		return nil, 0, err
	}
	if len(vals) == 0 {
		return nil, 0, errors.New("empty reply")
	}
	if passed, err = strconv.ParseInt(vals[0], 10, 64); err != nil {
		return nil, 0, fmt.Errorf("passed %q: %w", vals[0], err)
	}
	at := time.UnixMilli(now.UnixMilli())
	taken, err = parseTaken(vals[1:], 2, func([]string) time.Time { return at })
	if err != nil {
		return nil, 0, err
	}
	return taken, passed, nil
}

// Ack removes admitted waiters from processing and remembers their places
// (WithAckedFor).
func (r *Redis) Ack(ctx context.Context, queue string, userIDs []string) (err error) {
	defer wrap(&err, "ack %d in %s", len(userIDs), queue)
	if err := checkQueue(queue); err != nil {
		return err
	}
	keys := []string{r.Key(queue, "proc"), r.Key(queue, "admitted")}
	for ids := range slices.Chunk(userIDs, chunk) {
		args := make([]any, 0, 1+len(ids))
		args = append(args, ms(r.cfg.ackedFor+expirySlack))
		for _, id := range ids {
			args = append(args, id)
		}
		if err := ackScript.Run(ctx, r.rdb, keys, args...).Err(); err != nil {
			return err
		}
	}
	return nil
}

// Stale returns the waiters in processing taken before before (by the
// millisecond), in seq order.
func (r *Redis) Stale(ctx context.Context, queue string, before time.Time) (taken []admission.Taken, err error) {
	defer wrap(&err, "stale of %s", queue)
	if err := checkQueue(queue); err != nil {
		return nil, err
	}
	vals, err := staleScript.Run(ctx, r.rdb, []string{r.Key(queue, "proc")}, msTime(before)).StringSlice()
	if err != nil {
		return nil, err
	}
	var bad error
	taken, err = parseTaken(vals, 3, func(v []string) time.Time {
		at, err := strconv.ParseInt(v[2], 10, 64)
		if err != nil {
			bad = fmt.Errorf("taken at %q: %w", v[2], err)
		}
		return time.UnixMilli(at)
	})
	if err == nil {
		err = bad
	}
	if err != nil {
		return nil, err
	}
	sortTaken(taken)
	return taken, nil
}

// Return puts taken waiters back at their Seq, each only if it is still in
// processing under that seq, seen when it was before the take; the passed
// counter gives them back.
func (r *Redis) Return(ctx context.Context, queue string, taken []admission.Taken) (err error) {
	defer wrap(&err, "return %d to %s", len(taken), queue)
	if err := checkQueue(queue); err != nil {
		return err
	}
	keys := []string{r.Key(queue, "proc"), r.Key(queue, "line"), r.Key(queue, "seen"), r.Key(queue, "passed")}
	for ts := range slices.Chunk(taken, chunk) {
		args := make([]any, 0, 2*len(ts))
		for _, t := range ts {
			if err := checkSeq(t.Seq); err != nil {
				return err
			}
			args = append(args, t.UserID, strconv.FormatInt(t.Seq, 10))
		}
		if err := returnScript.Run(ctx, r.rdb, keys, args...).Err(); err != nil {
			return err
		}
	}
	return nil
}

// Remove takes users out of the line, and out of presence; one in
// processing stays there.
func (r *Redis) Remove(ctx context.Context, queue string, userIDs []string) error {
	_, err := r.remove(ctx, queue, userIDs)
	return err
}

// remove is Remove, telling how many it took out.
func (r *Redis) remove(ctx context.Context, queue string, userIDs []string) (removed int64, err error) {
	defer wrap(&err, "remove %d from %s", len(userIDs), queue)
	if err := checkQueue(queue); err != nil {
		return 0, err
	}
	for ids := range slices.Chunk(userIDs, chunk) {
		args := make([]any, len(ids))
		for i, id := range ids {
			args[i] = id
		}
		n, err := removeScript.Run(ctx, r.rdb, []string{r.Key(queue, "line"), r.Key(queue, "seen")}, args...).Int64()
		if err != nil {
			return removed, err
		}
		removed += n
	}
	return removed, nil
}

// Touch records that those of userIDs waiting in the line were seen at
// now (never earlier than they were); the others are ignored.
func (r *Redis) Touch(ctx context.Context, queue string, userIDs []string, now time.Time) (err error) {
	defer wrap(&err, "touch %d in %s", len(userIDs), queue)
	if err := checkQueue(queue); err != nil {
		return err
	}
	if now.IsZero() {
		return errors.New("zero now")
	}
	keys := []string{r.Key(queue, "seen")}
	for ids := range slices.Chunk(userIDs, chunk) {
		args := make([]any, 0, 1+len(ids))
		args = append(args, msTime(now))
		for _, id := range ids {
			args = append(args, id)
		}
		if err := touchScript.Run(ctx, r.rdb, keys, args...).Err(); err != nil {
			return err
		}
	}
	return nil
}

// Idle returns up to limit waiters last seen before before (by the
// millisecond), the longest unseen first, ties by user id.
func (r *Redis) Idle(ctx context.Context, queue string, before time.Time, limit int) (idle []string, err error) {
	defer wrap(&err, "idle of %s", queue)
	if err := checkQueue(queue); err != nil {
		return nil, err
	}
	if limit <= 0 {
		return nil, nil
	}
	return idleScript.Run(ctx, r.rdb, []string{r.Key(queue, "seen")}, msTime(before), limit).StringSlice()
}

// Head returns up to n waiters from the front, in order, with their seq.
func (r *Redis) Head(ctx context.Context, queue string, n int) (head []admission.Taken, err error) {
	defer wrap(&err, "head of %s", queue)
	if err := checkQueue(queue); err != nil {
		return nil, err
	}
	if n <= 0 {
		return nil, nil
	}
	vals, err := headScript.Run(ctx, r.rdb, []string{r.Key(queue, "line")}, n).StringSlice()
	if err != nil {
		return nil, err
	}
	return parseTaken(vals, 2, func([]string) time.Time { return time.Time{} })
}

// Size is the number of waiters in the line.
func (r *Redis) Size(ctx context.Context, queue string) (n int64, err error) {
	defer wrap(&err, "size of %s", queue)
	if err := checkQueue(queue); err != nil {
		return 0, err
	}
	return sizeScript.Run(ctx, r.rdb, []string{r.Key(queue, "line")}).Int64()
}

// AcquireLease takes the queue's admitter lease for owner until now + ttl
// unless someone holds it as of now (the caller's clock: a lease whose
// stored expiry is at or before now is free, whatever Redis's clock says),
// and returns the new fencing token, greater than floor and than every
// token issued before, or 0 when another owner holds the lease.
func (r *Redis) AcquireLease(ctx context.Context, queue, owner string, now time.Time, ttl time.Duration, floor int64) (token int64, err error) {
	defer wrap(&err, "acquire lease of %s", queue)
	if err := checkLease(queue, owner, now, ttl); err != nil {
		return 0, err
	}
	return redislease.Acquire(ctx, r.rdb, r.leaseKeys(queue), owner, now, ttl, expirySlack, floor)
}

// RenewLease extends owner's lease holding token until now + ttl. False
// means the lease is lost (expired by now, taken over, or the counter
// moved on): stop at once.
func (r *Redis) RenewLease(ctx context.Context, queue, owner string, token int64, now time.Time, ttl time.Duration) (ok bool, err error) {
	defer wrap(&err, "renew lease of %s", queue)
	if err := checkLease(queue, owner, now, ttl); err != nil {
		return false, err
	}
	return redislease.Renew(ctx, r.rdb, r.leaseKeys(queue), owner, token, now, ttl, expirySlack)
}

// ReleaseLease gives the lease up if owner still holds it with token, so
// another admitter takes the queue without waiting for the expiry.
func (r *Redis) ReleaseLease(ctx context.Context, queue, owner string, token int64) (ok bool, err error) {
	defer wrap(&err, "release lease of %s", queue)
	if err := checkOwner(queue, owner); err != nil {
		return false, err
	}
	return redislease.Release(ctx, r.rdb, r.leaseKeys(queue), owner, token)
}

func (r *Redis) leaseKeys(queue string) redislease.Keys {
	return redislease.Keys{Lease: r.Key(queue, "lease"), Fence: r.Key(queue, "fence")}
}

// parseTaken reads a flat reply of width fields per waiter, the first two
// the user id and the seq.
func parseTaken(vals []string, width int, at func(v []string) time.Time) ([]admission.Taken, error) {
	if len(vals)%width != 0 {
		return nil, fmt.Errorf("reply of %d values, not a multiple of %d", len(vals), width)
	}
	out := make([]admission.Taken, 0, len(vals)/width)
	for v := range slices.Chunk(vals, width) {
		seq, err := parseSeq(v[1])
		if err != nil {
			return nil, err
		}
		out = append(out, admission.Taken{UserID: v[0], Seq: seq, At: at(v)})
	}
	return out, nil
}

// parseSeq reads a seq as the scripts write it (a decimal integer), or as
// Redis writes a score.
func parseSeq(s string) (int64, error) {
	if n, err := strconv.ParseInt(s, 10, 64); err == nil {
		return n, nil
	}
	f, err := strconv.ParseFloat(s, 64)
	if err != nil || f != math.Trunc(f) || math.Abs(f) > maxSeq {
		return 0, fmt.Errorf("seq %q", s)
	}
	return int64(f), nil
}

func sortTaken(ts []admission.Taken) {
	slices.SortFunc(ts, func(a, b admission.Taken) int {
		if a.Seq != b.Seq {
			return cmp.Compare(a.Seq, b.Seq)
		}
		return strings.Compare(a.UserID, b.UserID)
	})
}

func checkQueue(queue string) error {
	// A brace would move the hash tag and split the queue's keys across
	// slots.
	if queue == "" || strings.ContainsAny(queue, "{}") {
		return fmt.Errorf("invalid queue %q", queue)
	}
	return nil
}

func checkPlace(queue string, p admission.Place) error {
	if p.Queue != "" && p.Queue != queue {
		return fmt.Errorf("place of %s in queue %s", p.Queue, queue)
	}
	if p.UserID == "" {
		return errors.New("place without a user")
	}
	return checkSeq(p.Seq)
}

func checkSeq(seq int64) error {
	if seq > maxSeq || seq < -maxSeq {
		return fmt.Errorf("seq %d beyond ±2^53", seq)
	}
	return nil
}

func checkLease(queue, owner string, now time.Time, ttl time.Duration) error {
	if err := checkQueue(queue); err != nil {
		return err
	}
	return redislease.CheckTimed(owner, now, ttl)
}

func checkOwner(queue, owner string) error {
	if err := checkQueue(queue); err != nil {
		return err
	}
	return redislease.Check(owner)
}

func isFenced(err error) bool {
	var re redis.Error
	return errors.As(err, &re) && strings.Contains(re.Error(), "FENCED")
}

func msTime(t time.Time) string { return strconv.FormatInt(t.UnixMilli(), 10) }

func ms(d time.Duration) string { return strconv.FormatInt(d.Milliseconds(), 10) }

// wrap adds the operation's context to a non-nil error.
func wrap(err *error, format string, args ...any) {
	if *err != nil {
		*err = fmt.Errorf(format+": %w", append(args, *err)...)
	}
}
