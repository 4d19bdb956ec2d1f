package pool

import (
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

	"github.com/matchgate/matchgate/internal/group"
	"github.com/matchgate/matchgate/internal/redislease"
	"github.com/matchgate/matchgate/matcher"
)

var (
	//go:embed lua/ended.lua
	endedSrc string
	//go:embed lua/enqueue.lua
	enqueueSrc string
	//go:embed lua/claim.lua
	claimSrc string
	//go:embed lua/cancel.lua
	cancelSrc string
	//go:embed lua/requeue.lua
	requeueSrc string
	//go:embed lua/heartbeat.lua
	heartbeatSrc string
	//go:embed lua/scan.lua
	scanSrc string
	//go:embed lua/promote.lua
	promoteSrc string
	//go:embed lua/offer.lua
	offerSrc string
	//go:embed lua/offers.lua
	offersSrc string
	//go:embed lua/rewatch.lua
	rewatchSrc string
)

var (
	enqueueScript   = redis.NewScript(endedSrc + enqueueSrc)
	claimScript     = redis.NewScript(claimSrc)
	cancelScript    = redis.NewScript(endedSrc + cancelSrc)
	requeueScript   = redis.NewScript(endedSrc + requeueSrc)
	heartbeatScript = redis.NewScript(endedSrc + heartbeatSrc)
	scanScript      = redis.NewScript(endedSrc + scanSrc)
	promoteScript   = redis.NewScript(promoteSrc)
	offerScript     = redis.NewScript(offerSrc)
	offersScript    = redis.NewScript(offersSrc)
	rewatchScript   = redis.NewScript(rewatchSrc)

	allScripts = []struct {
		name string
		s    *redis.Script
	}{
		{"enqueue", enqueueScript},
		{"claim", claimScript},
		{"cancel", cancelScript},
		{"requeue", requeueScript},
		{"heartbeat", heartbeatScript},
		{"scan", scanScript},
		{"lease_acquire", redislease.Scripts["lease_acquire"]},
		{"lease_renew", redislease.Scripts["lease_renew"]},
		{"lease_release", redislease.Scripts["lease_release"]},
		{"promote", promoteScript},
		{"offer", offerScript},
		{"offers", offersScript},
		{"rewatch", rewatchScript},
	}
)

// ErrStaleFence is returned (wrapped) by Claim when the caller's fence token is
// no longer the partition's current one: its lease was taken over, and the new
// owner's view of the pool wins.
var ErrStaleFence = errors.New("stale fence token")

// DefaultClaimTTL is how long a claimed ticket's mark lasts by default, by
// the pool's clock. It has to outlive the window in which a racing cancel
// may still ask who won (PostgreSQL answers after that), and no more: while
// the mark lasts, an idempotent enqueue of the ticket is a no-op, and the
// reconciler leaves a claim made under the current fence token to its
// owner.
const DefaultClaimTTL = 30 * time.Second

// expirySlack is how much longer than the time it records a key of a
// decision taken by a clock of the matcher (a lease, a ticket hash, a
// claim's mark, an offer, a cooldown, an allocation failure) lives in
// Redis: its expiry frees the memory, it decides nothing, and the clock
// that decides may be a little behind Redis's.
const expirySlack = 5 * time.Second

// Pool is the live pool of every partition under one key prefix.
type Pool struct {
	rdb      redis.UniversalClient
	prefix   string
	claimTTL time.Duration
	now      func() time.Time
	enqueues *group.Group[enqueueCall, enqueueResult]
}

// Option tunes a Pool at construction.
type Option func(*Pool)

// WithClaimTTL sets how long a claimed ticket's hash is kept (default
// DefaultClaimTTL). Values <= 0 keep the default.
func WithClaimTTL(d time.Duration) Option {
	return func(p *Pool) {
		if d > 0 {
			p.claimTTL = d
		}
	}
}

// WithClock sets the clock by which the ticket hashes and claims' marks
// end (default time.Now): the calls that take no now of their own
// (Enqueue, Claim, Remove, Requeue, Heartbeat, Locate, and the hashes a
// watch scan reads) read it. A server passes the clock of its matcher's
// decisions (ARCHITECTURE.md §7.6), so that every process judges a hash
// alike; nil keeps the default.
func WithClock(now func() time.Time) Option {
	return func(p *Pool) {
		if now != nil {
			p.now = now
		}
	}
}

// New returns a Pool on rdb. An empty prefix means "mg". New does not talk to
// Redis: call Load at start when the scripts will be pipelined.
func New(rdb redis.UniversalClient, prefix string, opts ...Option) *Pool {
	if prefix == "" {
		prefix = "mg"
	}
	p := &Pool{rdb: rdb, prefix: prefix, claimTTL: DefaultClaimTTL, now: time.Now}
	for _, o := range opts {
		o(p)
	}
	p.enqueues = group.New(maxEnqueuers, maxEnqueueBatch, enqueueTimeout, p.enqueueBatch)
	return p
}

// Load registers every script with SCRIPT LOAD (on every master of a cluster).
// Run falls back from EVALSHA to EVAL by itself, but that fallback cannot
// happen inside a pipeline, so pipelining callers load first.
func (p *Pool) Load(ctx context.Context) error {
	for _, sc := range allScripts {
		if err := sc.s.Load(ctx, p.rdb).Err(); err != nil {
			return fmt.Errorf("load script %s: %w", sc.name, err)
		}
	}
	return nil
}

// Key returns the key of one partition structure, e.g.
// Key("ranked:eu", "pool") == "mg:{ranked:eu}:pool". A sub-pool of a
// sharded queue, "ranked:eu/s2", keeps the hash tag of its (queue, region):
// Key("ranked:eu/s2", "pool") == "mg:{ranked:eu}:s2:pool", so that one script
// may move a player between a sub-pool and the overflow pool atomically.
func (p *Pool) Key(partition, suffix string) string {
	tag, sub := splitPartition(partition)
	if sub == "" {
		return p.prefix + ":{" + tag + "}:" + suffix
	}
	return p.prefix + ":{" + tag + "}:" + sub + ":" + suffix
}

// splitPartition splits "queue:region/sub" into its hash tag and sub-pool.
func splitPartition(partition string) (tag, sub string) {
	if i := strings.IndexByte(partition, '/'); i >= 0 {
		return partition[:i], partition[i+1:]
	}
	return partition, ""
}

// FenceKey is the partition lease's fencing counter, checked by Claim. The
// lease owner INCRs it on acquisition; its value is the token to pass to Claim.
func (p *Pool) FenceKey(partition string) string { return p.Key(partition, "fence") }

// ticketKey is a ticket's hash. All the pools of one (queue, region) share
// the hashes: a ticket has one hash wherever it waits, which keeps an
// enqueue idempotent across them.
func (p *Pool) ticketKey(partition, id string) string {
	tag, _ := splitPartition(partition)
	return p.prefix + ":{" + tag + "}:t:" + id
}

// setKeys are the three ZSETs, in the order every script expects them.
func (p *Pool) setKeys(partition string) []string {
	return []string{p.Key(partition, "pool"), p.Key(partition, "enq"), p.Key(partition, "watch")}
}

// ClaimResult is the outcome of a Claim that was not refused for its fence.
type ClaimResult struct {
	OK      bool
	Missing []string // tickets no longer in the pool when OK is false
	// Names are, when OK, the display names the claimed tickets' hashes
	// hold ("" for none), in the order of the claim's entries: the pool
	// keeps a name out of the members, so the claim is where a pass
	// learns it.
	Names []string
}

// RemoveResult is the outcome of a Remove.
type RemoveResult struct {
	Removed   bool
	ClaimedBy string // match id if a claim won the ticket
}

// Enqueue adds e to the partition unless its ticket hash already exists, in
// which case the pool is left as it is and added is false: a retried join keeps
// its original place. ttl bounds the hash's life (choose more than the time to
// the deadline) so that nothing leaks if the ticket is never matched. timeout
// is the queue's heartbeat timeout (0 for none), which with the deadline says
// when a pass is to look at the ticket (see Watched).
// Concurrent calls share a round trip: a call returns once its batch has run,
// whatever ctx does, within enqueueTimeout.
func (p *Pool) Enqueue(ctx context.Context, partition string, e matcher.Entry, ttl, timeout time.Duration) (added bool, err error) {
	defer wrap(&err, "enqueue %s in %s", e.TicketID, partition)
	if err := checkPartition(partition); err != nil {
		return false, err
	}
	if err := checkEntry(e); err != nil {
		return false, err
	}
	if ttl < time.Millisecond {
		return false, fmt.Errorf("ttl %v below 1ms", ttl)
	}
	r := p.enqueues.Do(ctx, enqueueCall{
		partition: partition,
		key:       p.ticketKey(partition, e.TicketID),
		args:      p.enqueueArgs(e, ttl, timeout),
	})
	return r.added, r.err
}

// enqueueArgs is one ticket's arguments to enqueue.lua: its hash ends ttl
// from now by the pool's clock.
func (p *Pool) enqueueArgs(e matcher.Entry, ttl, timeout time.Duration) []any {
	now := p.now()
	return []any{member(e), score(e.Skill), msTime(e.Enqueue), msTime(watchAt(e, timeout)), heartbeatArg(e),
		msTime(now), msTime(now.Add(ttl)), ms(ttl + expirySlack), e.Name}
}

// Enqueues of concurrent joins share round trips (internal/group): one
// arriving while maxEnqueuers pipelines are out goes into the next.
const (
	maxEnqueuers    = 1
	maxEnqueueBatch = 256
	enqueueTimeout  = 10 * time.Second
)

// enqueueCall is one ticket of enqueue.lua: its hash key and its nine
// arguments.
type enqueueCall struct {
	partition string
	key       string
	args      []any
}

type enqueueResult struct {
	added bool
	err   error
}

// enqueueBatch runs the enqueue script once per partition of the calls,
// all in one pipeline.
func (p *Pool) enqueueBatch(ctx context.Context, calls []enqueueCall) []enqueueResult {
	var parts []string
	of := map[string][]int{} // partition → indices of its calls
	for i, c := range calls {
		if _, ok := of[c.partition]; !ok {
			parts = append(parts, c.partition)
		}
		of[c.partition] = append(of[c.partition], i)
	}
	cmds := p.pipelined(ctx, len(parts), func(pipe redis.Pipeliner, j int) *redis.Cmd {
		idx := of[parts[j]]
		keys := append(make([]string, 0, 3+len(idx)), p.setKeys(parts[j])...)
		args := make([]any, 0, 9*len(idx))
		for _, i := range idx {
			keys = append(keys, calls[i].key)
			args = append(args, calls[i].args...)
		}
		return enqueueScript.EvalSha(ctx, pipe, keys, args...)
	})
	out := make([]enqueueResult, len(calls))
	for j, part := range parts {
		idx := of[part]
		vals, err := cmds[j].Slice()
		if err == nil && len(vals) != len(idx) {
			err = fmt.Errorf("%d replies for %d tickets", len(vals), len(idx))
		}
		for k, i := range idx {
			if err != nil {
				out[i].err = err
				continue
			}
			n, _ := vals[k].(int64)
			out[i].added = n == 1
		}
	}
	return out
}

// Claim removes entries from the pool for match matchID, all of them or none.
// The entries are as read from the pool (or rebuilt from the record): an
// entry is found by all of its fields, so one whose fields differ from the
// pool's is missing. fence is the caller's lease token (0 skips the check);
// a token that is not the current value of FenceKey is refused with
// ErrStaleFence before anything is touched. When a ticket is gone
// (cancelled, claimed by someone else) the result lists its id in Missing
// and the others stay in the pool.
func (p *Pool) Claim(ctx context.Context, partition string, fence int64, matchID string, entries []matcher.Entry) (res ClaimResult, err error) {
	defer wrap(&err, "claim %s in %s", matchID, partition)
	if err := checkPartition(partition); err != nil {
		return ClaimResult{}, err
	}
	keys, args, err := p.claimCall(partition, fence, []ClaimRequest{{MatchID: matchID, Entries: entries}})
	if err != nil {
		return ClaimResult{}, err
	}
	rs, err := claimResults(claimScript.Run(ctx, p.rdb, keys, args...), 1)
	if err != nil {
		return ClaimResult{}, err
	}
	return rs[0], nil
}

// claimCall is the keys and arguments of claim.lua for reqs.
func (p *Pool) claimCall(partition string, fence int64, reqs []ClaimRequest) ([]string, []any, error) {
	if fence < 0 {
		return nil, nil, fmt.Errorf("negative fence token %d", fence)
	}
	n := 0
	for _, r := range reqs {
		n += len(r.Entries)
	}
	keys := make([]string, 0, 4+n)
	keys = append(keys, p.FenceKey(partition))
	keys = append(keys, p.setKeys(partition)...)
	args := make([]any, 0, 3+2*len(reqs)+n)
	args = append(args, strconv.FormatInt(fence, 10), msTime(p.now().Add(p.claimTTL)), ms(p.claimTTL+expirySlack))
	for _, r := range reqs {
		if r.MatchID == "" {
			return nil, nil, errors.New("empty match id")
		}
		if len(r.Entries) == 0 {
			return nil, nil, fmt.Errorf("match %s: no tickets", r.MatchID)
		}
		args = append(args, r.MatchID, strconv.Itoa(len(r.Entries)))
		for i, e := range r.Entries {
			if err := checkEntry(e); err != nil {
				return nil, nil, fmt.Errorf("match %s: %w", r.MatchID, err)
			}
			// A duplicate would pass the membership check twice and claim
			// a group one player short.
			if slices.ContainsFunc(r.Entries[:i], func(o matcher.Entry) bool { return o.TicketID == e.TicketID }) {
				return nil, nil, fmt.Errorf("match %s: ticket %s listed twice", r.MatchID, e.TicketID)
			}
			keys = append(keys, p.ticketKey(partition, e.TicketID))
			args = append(args, member(e))
		}
	}
	return keys, args, nil
}

// claimResults reads claim.lua's reply for n groups; a refused fence is
// ErrStaleFence.
func claimResults(cmd *redis.Cmd, n int) ([]ClaimResult, error) {
	vals, err := cmd.Slice()
	if isStaleFence(err) {
		return nil, ErrStaleFence
	}
	if err != nil {
		return nil, err
	}
	if len(vals) != n {
		return nil, fmt.Errorf("%d replies for %d groups", len(vals), n)
	}
	out := make([]ClaimResult, n)
	for i, v := range vals {
		g, _ := v.([]any)
		if out[i], err = claimResult(g); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// claimResult reads claim.lua's reply.
func claimResult(vals []any) (ClaimResult, error) {
	if len(vals) == 0 {
		return ClaimResult{}, errors.New("empty reply")
	}
	if ok, _ := vals[0].(int64); ok == 1 {
		names := make([]string, len(vals)-1)
		for i, v := range vals[1:] {
			names[i] = str(v)
		}
		return ClaimResult{OK: true, Names: names}, nil
	}
	missing := make([]string, 0, len(vals)-1)
	for _, v := range vals[1:] {
		missing = append(missing, memberID(str(v)))
	}
	return ClaimResult{Missing: missing}, nil
}

// Remove takes a waiting ticket out of the pool (a cancel, an expiry, a
// reconciler repair). When the ticket is not there, ClaimedBy tells whether a
// claim won it; an unknown ticket reports neither.
func (p *Pool) Remove(ctx context.Context, partition, ticketID string) (res RemoveResult, err error) {
	return p.RemoveAny(ctx, []string{partition}, ticketID)
}

// RemoveAny is Remove for a ticket that may be in any of partitions, which
// must be every pool it may be in (a sharded queue's sub-pool and overflow
// pool), all of one (queue, region): it is taken out of whichever holds it,
// atomically.
func (p *Pool) RemoveAny(ctx context.Context, partitions []string, ticketID string) (res RemoveResult, err error) {
	return p.remove(ctx, partitions, ticketID, "")
}

// RemoveEntry is RemoveAny for an entry read from the pool (or rebuilt from
// the record): it is found by its member even when the ticket's hash is
// gone. An entry read without its fields (a member that is a bare ticket
// id) is removed by that id.
func (p *Pool) RemoveEntry(ctx context.Context, partitions []string, e matcher.Entry) (res RemoveResult, err error) {
	hint := e.TicketID
	if checkEntry(e) == nil {
		hint = member(e)
	} else if strings.IndexByte(e.TicketID, memberSep) >= 0 {
		// It would name another ticket's member.
		return RemoveResult{}, fmt.Errorf("remove from %v: ticket id %q holds %q", partitions, e.TicketID, memberSep)
	}
	return p.remove(ctx, partitions, e.TicketID, hint)
}

func (p *Pool) remove(ctx context.Context, partitions []string, ticketID, hint string) (res RemoveResult, err error) {
	defer wrap(&err, "remove %s from %v", ticketID, partitions)
	if err := checkSiblings(partitions); err != nil {
		return RemoveResult{}, err
	}
	if ticketID == "" {
		return RemoveResult{}, errors.New("empty ticket id")
	}
	keys := make([]string, 0, 3*len(partitions)+1)
	for _, part := range partitions {
		keys = append(keys, p.setKeys(part)...)
	}
	keys = append(keys, p.ticketKey(partitions[0], ticketID))
	vals, err := cancelScript.Run(ctx, p.rdb, keys, hint, msTime(p.now())).Slice()
	if err != nil {
		return RemoveResult{}, err
	}
	if len(vals) == 0 {
		return RemoveResult{}, errors.New("empty reply")
	}
	if ok, _ := vals[0].(int64); ok == 1 {
		return RemoveResult{Removed: true}, nil
	}
	if len(vals) >= 3 && str(vals[1]) == "claimed" {
		return RemoveResult{ClaimedBy: str(vals[2])}, nil
	}
	return RemoveResult{}, nil
}

// Requeue puts entries back with the scores they carry, which must be their
// original ones (as read before the claim, or from PostgreSQL): a player whose
// match failed to commit keeps its place in the wait order. A claimed hash is
// turned back to waiting. An entry whose hash is gone (the pool lost it while
// it was out, with its heartbeats and its player's presence) gets the later
// of its heartbeat and lost; a zero lost keeps its own. timeout is the
// queue's heartbeat timeout, as for Enqueue. It returns how many entries were
// not in the pool.
func (p *Pool) Requeue(ctx context.Context, partition string, entries []matcher.Entry, ttl time.Duration, lost time.Time, timeout time.Duration) (n int, err error) {
	return p.requeue(ctx, partition, nil, false, entries, ttl, lost, timeout)
}

// RequeueGuarded is Requeue for tickets that may be waiting, or claimed,
// in a sibling pool meanwhile: a ticket whose entry is in one of siblings
// (other pools of the same (queue, region)), or whose hash says it was
// claimed from a pool other than partition, is left alone, in the same
// script, so that no ticket is ever in two pools. No siblings is Requeue.
func (p *Pool) RequeueGuarded(ctx context.Context, partition string, siblings []string, entries []matcher.Entry, ttl time.Duration, lost time.Time, timeout time.Duration) (n int, err error) {
	return p.requeue(ctx, partition, siblings, false, entries, ttl, lost, timeout)
}

// RequeueMissing is the reconciler's RequeueGuarded, for WAITING tickets
// found in none of the pools: a ticket whose hash says claimed is put back
// only when the claim is dead, made from partition under a fence token
// below partition's current one (its owner lost the lease, and the record
// refuses its commit); a live claim is left to its owner, who commits it
// or puts it back. Unfenced claims (token 0: tools, and a neighbour's claim
// of offered players) count as dead once the partition is leased.
func (p *Pool) RequeueMissing(ctx context.Context, partition string, siblings []string, entries []matcher.Entry, ttl time.Duration, lost time.Time, timeout time.Duration) (n int, err error) {
	return p.requeue(ctx, partition, siblings, true, entries, ttl, lost, timeout)
}

// checkRequeue checks a requeue's partition, siblings (partition itself
// left out of them) and ttl, for both pools.
func checkRequeue(partition string, siblings []string, ttl time.Duration) ([]string, error) {
	if err := checkPartition(partition); err != nil {
		return nil, err
	}
	siblings = slices.DeleteFunc(slices.Clone(siblings), func(s string) bool { return s == partition })
	if len(siblings) > 0 {
		if err := checkSiblings(append([]string{partition}, siblings...)); err != nil {
			return nil, err
		}
	}
	if ttl < time.Millisecond {
		return nil, fmt.Errorf("ttl %v below 1ms", ttl)
	}
	return siblings, nil
}

func (p *Pool) requeue(ctx context.Context, partition string, siblings []string, deadOnly bool, entries []matcher.Entry, ttl time.Duration, lost time.Time, timeout time.Duration) (n int, err error) {
	defer wrap(&err, "requeue %d tickets in %s", len(entries), partition)
	siblings, err = checkRequeue(partition, siblings, ttl)
	if err != nil || len(entries) == 0 {
		return 0, err
	}
	keys := make([]string, 0, 4+len(entries)+len(siblings))
	keys = append(keys, p.setKeys(partition)...)
	args := make([]any, 0, 7+7*len(entries))
	lostMS := "0"
	if !lost.IsZero() {
		lostMS = msTime(lost)
	}
	mode := "0"
	if deadOnly {
		mode = "1"
	}
	now := p.now()
	args = append(args, msTime(now), msTime(now.Add(ttl)), ms(ttl+expirySlack), lostMS, ms(max(timeout, 0)), strconv.Itoa(len(siblings)), mode)
	seen := make(map[string]struct{}, len(entries))
	for _, e := range entries {
		if err := checkEntry(e); err != nil {
			return 0, err
		}
		if _, dup := seen[e.TicketID]; dup {
			return 0, fmt.Errorf("ticket %s listed twice", e.TicketID)
		}
		seen[e.TicketID] = struct{}{}
		keys = append(keys, p.ticketKey(partition, e.TicketID))
		args = append(args, e.TicketID, member(e), score(e.Skill), msTime(e.Enqueue), msTime(e.Deadline), heartbeatArg(e), e.Name)
	}
	for _, s := range siblings {
		keys = append(keys, p.Key(s, "pool"))
	}
	if deadOnly {
		keys = append(keys, p.FenceKey(partition))
	}
	return requeueScript.Run(ctx, p.rdb, keys, args...).Int()
}

// Heartbeat records that a waiting player is alive at at, and moves the
// ticket's place in watch to the sooner of its deadline and its last sign of
// life plus timeout, the queue's heartbeat timeout (0 for none). It reports
// false for a ticket that is claimed or unknown, which the caller may take
// as "stop heartbeating".
func (p *Pool) Heartbeat(ctx context.Context, partition, ticketID string, at time.Time, timeout time.Duration) (ok bool, err error) {
	return p.HeartbeatAny(ctx, []string{partition}, ticketID, at, timeout)
}

// HeartbeatAny is Heartbeat for a ticket that may be in any of partitions
// (see RemoveAny).
func (p *Pool) HeartbeatAny(ctx context.Context, partitions []string, ticketID string, at time.Time, timeout time.Duration) (ok bool, err error) {
	defer wrap(&err, "heartbeat %s in %v", ticketID, partitions)
	if err := checkHeartbeat(partitions, ticketID); err != nil {
		return false, err
	}
	keys := []string{p.ticketKey(partitions[0], ticketID)}
	for _, part := range partitions {
		keys = append(keys, p.Key(part, "pool"), p.Key(part, "watch"))
	}
	n, err := heartbeatScript.Run(ctx, p.rdb, keys, msTime(at), ms(max(timeout, 0)), msTime(p.now())).Int()
	if err != nil {
		return false, err
	}
	return n == 1, nil
}

// Size is the number of tickets waiting in the partition.
func (p *Pool) Size(ctx context.Context, partition string) (int64, error) {
	if err := checkPartition(partition); err != nil {
		return 0, fmt.Errorf("size of %s: %w", partition, err)
	}
	n, err := p.rdb.ZCard(ctx, p.Key(partition, "pool")).Result()
	if err != nil {
		return 0, fmt.Errorf("size of %s: %w", partition, err)
	}
	return n, nil
}

// Sizes is Size of each of partitions, in one round trip.
func (p *Pool) Sizes(ctx context.Context, partitions []string) ([]int64, error) {
	for _, part := range partitions {
		if err := checkPartition(part); err != nil {
			return nil, fmt.Errorf("sizes: %w", err)
		}
	}
	if len(partitions) == 0 {
		return nil, nil
	}
	pipe := p.rdb.Pipeline()
	cmds := make([]*redis.IntCmd, len(partitions))
	for i, part := range partitions {
		cmds[i] = pipe.ZCard(ctx, p.Key(part, "pool"))
	}
	if _, err := pipe.Exec(ctx); err != nil {
		return nil, fmt.Errorf("sizes of %v: %w", partitions, err)
	}
	out := make([]int64, len(partitions))
	for i, c := range cmds {
		out[i] = c.Val()
	}
	return out, nil
}

// Members lists every entry in the partition's pool, for the reconciler.
// It pages with ZSCAN rather than one ZRANGE so that a large pool does not
// block Redis; like ZSCAN, it is not a snapshot: a ticket present for the whole
// call is listed, one added or removed meanwhile may or may not be. Order is
// unspecified. A member that is not an entry (a bare ticket id) is listed
// with its TicketID alone.
func (p *Pool) Members(ctx context.Context, partition string) ([]matcher.Entry, error) {
	if err := checkPartition(partition); err != nil {
		return nil, fmt.Errorf("members of %s: %w", partition, err)
	}
	key := p.Key(partition, "pool")
	seen := make(map[string]struct{})
	var out []matcher.Entry
	var cursor uint64
	for {
		kv, next, err := p.rdb.ZScan(ctx, key, cursor, "", 1000).Result()
		if err != nil {
			return nil, fmt.Errorf("members of %s: %w", partition, err)
		}
		// ZSCAN replies member, score, member, score...
		for i := 0; i < len(kv); i += 2 {
			if _, dup := seen[kv[i]]; !dup {
				seen[kv[i]] = struct{}{}
				e, err := parseMember(kv[i])
				if err != nil {
					e = matcher.Entry{TicketID: memberID(kv[i])}
				}
				out = append(out, e)
			}
		}
		if next == 0 {
			return out, nil
		}
		cursor = next
	}
}

// Rewatch puts those of es, entries read from the partition's pool, that
// are still in it but missing from its watch set back into watch, each at
// its place for timeout, the queue's heartbeat timeout (0 for none), and
// returns how many it put back. Entries read without their fields are
// skipped. A member is checked and added in one script, so that one
// claimed since es was read stays out.
func (p *Pool) Rewatch(ctx context.Context, partition string, es []matcher.Entry, timeout time.Duration) (n int, err error) {
	defer wrap(&err, "rewatch %s", partition)
	if err := checkPartition(partition); err != nil {
		return 0, err
	}
	var full []matcher.Entry
	for _, e := range es {
		if e.UserID != "" && checkEntry(e) == nil {
			full = append(full, e)
		}
	}
	// Redis's Lua takes a few thousand arguments to one call at most.
	const page = 500
	keys := []string{p.Key(partition, "pool"), p.Key(partition, "watch")}
	cmds := p.pipelined(ctx, (len(full)+page-1)/page, func(pipe redis.Pipeliner, i int) *redis.Cmd {
		part := full[i*page : min((i+1)*page, len(full))]
		args := make([]any, 0, 2*len(part))
		for _, e := range part {
			args = append(args, msTime(watchAt(e, timeout)), member(e))
		}
		return rewatchScript.EvalSha(ctx, pipe, keys, args...)
	})
	for _, c := range cmds {
		added, err := c.Int()
		if err != nil {
			return n, err
		}
		n += added
	}
	return n, nil
}

// DropLegacy deletes, without blocking Redis, the sets a layout before the
// watch set kept (due and hb), which nothing reads any more.
func (p *Pool) DropLegacy(ctx context.Context, partition string) error {
	if err := checkPartition(partition); err != nil {
		return fmt.Errorf("drop legacy sets of %s: %w", partition, err)
	}
	if err := p.rdb.Unlink(ctx, p.Key(partition, "due"), p.Key(partition, "hb")).Err(); err != nil {
		return fmt.Errorf("drop legacy sets of %s: %w", partition, err)
	}
	return nil
}

func checkPartition(partition string) error {
	// A brace inside the partition would move the hash tag and split the
	// partition's keys across slots.
	tag, sub := splitPartition(partition)
	if tag == "" || strings.ContainsAny(partition, "{}") || strings.Contains(sub, "/") ||
		(strings.Contains(partition, "/") && sub == "") {
		return fmt.Errorf("invalid partition %q", partition)
	}
	return nil
}

// checkSiblings checks partitions that one script touches together: valid,
// at least one, and all of one hash tag.
func checkSiblings(partitions []string) error {
	if len(partitions) == 0 {
		return errors.New("no partition")
	}
	tag, _ := splitPartition(partitions[0])
	for _, part := range partitions {
		if err := checkPartition(part); err != nil {
			return err
		}
		if t, _ := splitPartition(part); t != tag {
			return fmt.Errorf("partitions %q and %q do not share a hash tag", partitions[0], part)
		}
	}
	return nil
}

func checkEntry(e matcher.Entry) error {
	switch {
	case e.TicketID == "":
		return errors.New("empty ticket id")
	case strings.IndexByte(e.TicketID, memberSep) >= 0:
		return fmt.Errorf("ticket id %q holds %q", e.TicketID, memberSep)
	case math.IsNaN(e.Skill) || math.IsInf(e.Skill, 0):
		return fmt.Errorf("ticket %s: skill %v not finite", e.TicketID, e.Skill)
	case math.IsNaN(e.Activity) || math.IsInf(e.Activity, 0):
		return fmt.Errorf("ticket %s: activity %v not finite", e.TicketID, e.Activity)
	case e.Enqueue.IsZero():
		return fmt.Errorf("ticket %s: zero enqueue time", e.TicketID)
	case e.Deadline.IsZero():
		return fmt.Errorf("ticket %s: zero deadline", e.TicketID)
	}
	return nil
}

// watchAt is when a pass is to look at e: the sooner of its deadline and its
// last sign of life (its heartbeat, else its enqueue) plus timeout, the
// queue's heartbeat timeout (0 for none).
func watchAt(e matcher.Entry, timeout time.Duration) time.Time {
	// The scripts take the timeout in whole ms, "0" for none.
	if timeout < time.Millisecond {
		return e.Deadline
	}
	last := e.Heartbeat
	if last.IsZero() {
		last = e.Enqueue
	}
	if at := last.Add(timeout); at.Before(e.Deadline) {
		return at
	}
	return e.Deadline
}

// heartbeatArg is e's heartbeat for a script, "0" for none.
func heartbeatArg(e matcher.Entry) string {
	if e.Heartbeat.IsZero() {
		return "0"
	}
	return msTime(e.Heartbeat)
}

// memberSep separates the fields of a member; a ticket id may not hold it.
const memberSep = '|'

// member is an entry's name in the partition's sets: its ticket id, then
// every field a matching pass reads, user id last (it may hold anything),
// e.g. "t1|1500|1700000000000|1700000300000|0|0.5|u1". Reading those sets
// is then reading the entries: a pass costs its range reads and no hash
// read per entry, which were half of Redis's time in a tick over a large
// pool. The skill comes second so that a script finds it with one match,
// the deadline fourth for heartbeat.lua. The fields never change while the
// ticket waits (the heartbeat, which does, is in the hash), and formatting
// the fields parsed from a member gives the member back, so the entries a
// pass read name their members.
//
// It is written into one buffer, a single allocation where the fields
// formatted apart and joined took five: a member is formatted on every
// enqueue, requeue and claim.
func member(e matcher.Entry) string {
	var buf [96]byte
	return string(appendMember(buf[:0], e))
}

// appendMember appends member(e) to b.
func appendMember(b []byte, e matcher.Entry) []byte {
	b = append(b, e.TicketID...)
	b = append(b, '|')
	b = appendScore(b, e.Skill)
	b = append(b, '|')
	b = strconv.AppendInt(b, e.Enqueue.UnixMilli(), 10)
	b = append(b, '|')
	b = strconv.AppendInt(b, e.Deadline.UnixMilli(), 10)
	b = append(b, '|', '0', '|')
	if e.Estimated {
		b[len(b)-2] = '1'
	}
	b = appendScore(b, e.Activity)
	b = append(b, '|')
	return append(b, e.UserID...)
}

// parseMember reads a member written by member.
func parseMember(m string) (matcher.Entry, error) {
	var f [6]string
	rest := m
	for i := range f {
		var ok bool
		if f[i], rest, ok = strings.Cut(rest, "|"); !ok {
			return matcher.Entry{}, fmt.Errorf("member %q: %d fields, want 7", m, i+1)
		}
	}
	e := matcher.Entry{TicketID: f[0], UserID: rest, Estimated: f[4] == "1"}
	skill, err1 := strconv.ParseFloat(f[1], 64)
	enq, err2 := strconv.ParseInt(f[2], 10, 64)
	dl, err3 := strconv.ParseInt(f[3], 10, 64)
	act, err4 := strconv.ParseFloat(f[5], 64)
	if err := errors.Join(err1, err2, err3, err4); err != nil {
		return matcher.Entry{}, fmt.Errorf("member %q: %w", m, err)
	}
	e.Skill, e.Activity = skill, act
	// As parseMs reads them: 0 is no time.
	if enq != 0 {
		e.Enqueue = time.UnixMilli(enq)
	}
	if dl != 0 {
		e.Deadline = time.UnixMilli(dl)
	}
	return e, nil
}

// memberSkill reads the skill of a member written by member; ok is false
// for a bare ticket id.
func memberSkill(m string) (skill float64, ok bool, err error) {
	_, rest, ok := strings.Cut(m, "|")
	if !ok {
		return 0, false, nil
	}
	f, _, _ := strings.Cut(rest, "|")
	if skill, err = strconv.ParseFloat(f, 64); err != nil {
		return 0, false, fmt.Errorf("member %q: skill: %w", m, err)
	}
	return skill, true, nil
}

// memberID is the ticket id a member names.
func memberID(m string) string {
	id, _, _ := strings.Cut(m, "|")
	return id
}

// score formats a float so that Redis parses back exactly the same double.
func score(x float64) string {
	switch {
	case math.IsInf(x, 1):
		return "+inf"
	case math.IsInf(x, -1):
		return "-inf"
	}
	return strconv.FormatFloat(x, 'f', -1, 64)
}

// appendScore appends score(x) to b.
func appendScore(b []byte, x float64) []byte {
	switch {
	case math.IsInf(x, 1):
		return append(b, "+inf"...)
	case math.IsInf(x, -1):
		return append(b, "-inf"...)
	}
	return strconv.AppendFloat(b, x, 'f', -1, 64)
}

func msTime(t time.Time) string { return strconv.FormatInt(t.UnixMilli(), 10) }

func ms(d time.Duration) string { return strconv.FormatInt(d.Milliseconds(), 10) }

func str(v any) string {
	switch s := v.(type) {
	case string:
		return s
	case nil:
		return ""
	default:
		return fmt.Sprint(s)
	}
}

func isStaleFence(err error) bool {
	var re redis.Error
	return errors.As(err, &re) && strings.Contains(re.Error(), "STALE_FENCE")
}

// wrap adds the operation's context to a non-nil error.
func wrap(err *error, format string, args ...any) {
	if *err != nil {
		*err = fmt.Errorf(format+": %w", append(args, *err)...)
	}
}
