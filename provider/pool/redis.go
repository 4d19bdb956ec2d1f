package pool

import (
	"context"
	_ "embed"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/matchgate/matchgate/provider"
)

var (
	//go:embed lua/online.lua
	onlineSrc string
	//go:embed lua/update.lua
	updateSrc string
	//go:embed lua/offline.lua
	offlineSrc string
	//go:embed lua/refresh.lua
	refreshSrc string
	//go:embed lua/hold.lua
	holdSrc string
	//go:embed lua/release.lua
	releaseSrc string
	//go:embed lua/sync.lua
	syncSrc string
	//go:embed lua/get.lua
	getSrc string
	//go:embed lua/snapshot.lua
	snapshotSrc string
)

var (
	onlineScript   = redis.NewScript(onlineSrc)
	updateScript   = redis.NewScript(updateSrc)
	offlineScript  = redis.NewScript(offlineSrc)
	refreshScript  = redis.NewScript(refreshSrc)
	holdScript     = redis.NewScript(holdSrc)
	releaseScript  = redis.NewScript(releaseSrc)
	syncScript     = redis.NewScript(syncSrc)
	getScript      = redis.NewScript(getSrc)
	snapshotScript = redis.NewScript(snapshotSrc)

	allScripts = []struct {
		name string
		s    *redis.Script
	}{
		{"online", onlineScript}, {"update", updateScript}, {"offline", offlineScript},
		{"refresh", refreshScript}, {"hold", holdScript}, {"release", releaseScript},
		{"sync", syncScript}, {"get", getScript}, {"snapshot", snapshotScript},
	}
)

// Redis is the live pool of every provider queue under one key prefix.
type Redis struct {
	rdb    redis.UniversalClient
	prefix string
	cfg    config
}

var _ provider.Live = (*Redis)(nil)

// NewRedis returns the pool on rdb. An empty prefix means "mg". It does not
// talk to Redis: each script falls back from EVALSHA to EVAL by itself.
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
			return fmt.Errorf("provider pool: load script %s: %w", sc.name, err)
		}
	}
	return nil
}

// base is the prefix of every key of queue, hash tag included.
func (r *Redis) base(queue string) string { return r.prefix + ":{prov:" + queue + "}:" }

// Key returns the key of one structure of queue, e.g. Key("care", "p:u1")
// == "mg:{prov:care}:p:u1".
func (r *Redis) Key(queue, suffix string) string { return r.base(queue) + suffix }

// Online puts p.UserID online; see provider.Live.
func (r *Redis) Online(ctx context.Context, queue string, p provider.Provider, session string, until time.Time) (_ provider.Provider, err error) {
	defer wrap(&err, "online %s/%s", queue, p.UserID)
	if err := checkUser(queue, p.UserID); err != nil {
		return provider.Provider{}, err
	}
	if p.Capacity < 0 {
		return provider.Provider{}, fmt.Errorf("negative capacity %d", p.Capacity)
	}
	attrs, err := json.Marshal(p.Attributes)
	if err != nil {
		return provider.Provider{}, fmt.Errorf("attributes: %w", err)
	}
	now := r.cfg.now()
	keys := []string{r.Key(queue, "all"), r.Key(queue, "p:"+p.UserID), r.Key(queue, "held:"+p.UserID)}
	v, err := onlineScript.Run(ctx, r.rdb, keys, p.UserID, p.Capacity, attrs, session,
		until.UnixMilli(), now.UnixMilli()).Slice()
	if err != nil {
		return provider.Provider{}, err
	}
	return parseRow(queue, p.UserID, v, now)
}

// Update changes an online provider's capacity (when ≥ 0) and attributes
// (when not nil); provider.ErrOffline otherwise.
func (r *Redis) Update(ctx context.Context, queue, userID string, capacity int, attrs *provider.Attributes, now time.Time) (_ provider.Provider, err error) {
	defer wrap(&err, "update %s/%s", queue, userID)
	if err := checkUser(queue, userID); err != nil {
		return provider.Provider{}, err
	}
	capArg, attrsArg := "", ""
	if capacity >= 0 {
		capArg = strconv.Itoa(capacity)
	}
	if attrs != nil {
		b, err := json.Marshal(attrs)
		if err != nil {
			return provider.Provider{}, fmt.Errorf("attributes: %w", err)
		}
		attrsArg = string(b)
	}
	keys := []string{r.Key(queue, "p:"+userID), r.Key(queue, "held:"+userID)}
	v, err := updateScript.Run(ctx, r.rdb, keys, now.UnixMilli(), capArg, attrsArg).Slice()
	if err != nil {
		return provider.Provider{}, err
	}
	if len(v) == 0 {
		return provider.Provider{}, provider.ErrOffline
	}
	return parseRow(queue, userID, v, now)
}

// Offline takes userID offline if session ("" for any) holds it.
func (r *Redis) Offline(ctx context.Context, queue, userID, session string, now time.Time) (_ bool, err error) {
	defer wrap(&err, "offline %s/%s", queue, userID)
	if err := checkUser(queue, userID); err != nil {
		return false, err
	}
	n, err := offlineScript.Run(ctx, r.rdb, []string{r.Key(queue, "p:"+userID)}, session, now.UnixMilli()).Int()
	return n == 1, err
}

// Refresh extends "seen until" of the userIDs session holds, chunk users a
// script call, each call atomic.
func (r *Redis) Refresh(ctx context.Context, queue string, userIDs []string, session string, until time.Time) (err error) {
	defer wrap(&err, "refresh %d in %s", len(userIDs), queue)
	if err := checkQueue(queue); err != nil {
		return err
	}
	now := r.cfg.now()
	for ids := range slices.Chunk(userIDs, chunk) {
		args := make([]any, 0, 3+len(ids))
		args = append(args, session, until.UnixMilli(), now.UnixMilli())
		for _, id := range ids {
			if id == "" {
				return errors.New("empty user id")
			}
			args = append(args, id)
		}
		if err := refreshScript.Run(ctx, r.rdb, []string{r.base(queue)}, args...).Err(); err != nil {
			return err
		}
	}
	return nil
}

// Hold takes one of userID's slots for assignmentID; see provider.Live.
func (r *Redis) Hold(ctx context.Context, queue, userID, assignmentID string, now time.Time) (_ bool, err error) {
	defer wrap(&err, "hold %s/%s", queue, userID)
	if err := checkUser(queue, userID); err != nil {
		return false, err
	}
	if err := checkAssignment(assignmentID); err != nil {
		return false, err
	}
	keys := []string{r.Key(queue, "p:"+userID), r.Key(queue, "held:"+userID)}
	n, err := holdScript.Run(ctx, r.rdb, keys, assignmentID, now.UnixMilli()).Int()
	return n == 1, err
}

// Release frees the slot assignmentID holds.
func (r *Redis) Release(ctx context.Context, queue, userID, assignmentID string) (err error) {
	defer wrap(&err, "release %s/%s", queue, userID)
	if err := checkUser(queue, userID); err != nil {
		return err
	}
	if err := checkAssignment(assignmentID); err != nil {
		return err
	}
	return releaseScript.Run(ctx, r.rdb, []string{r.Key(queue, "held:"+userID)}, assignmentID).Err()
}

// Snapshot lists the providers of queue by user id, online judged at now.
func (r *Redis) Snapshot(ctx context.Context, queue string, now time.Time) (_ []provider.Provider, err error) {
	defer wrap(&err, "snapshot of %s", queue)
	if err := checkQueue(queue); err != nil {
		return nil, err
	}
	rows, err := snapshotScript.Run(ctx, r.rdb, []string{r.base(queue)}).Slice()
	if err != nil {
		return nil, err
	}
	out := make([]provider.Provider, 0, len(rows))
	for _, row := range rows {
		vals, ok := row.([]any)
		if !ok || len(vals) != 7 {
			return nil, fmt.Errorf("row %v", row)
		}
		user, ok := vals[0].(string)
		if !ok {
			return nil, fmt.Errorf("user id %v", vals[0])
		}
		p, err := parseRow(queue, user, vals[1:], now)
		if err != nil {
			return nil, err
		}
		out = append(out, p)
	}
	// ZRANGE lists them by user id already; sort anyway, it costs little
	// and does not rest on Redis's ordering of equal scores.
	slices.SortFunc(out, func(a, b provider.Provider) int { return strings.Compare(a.UserID, b.UserID) })
	return out, nil
}

// Get returns one provider, online judged at now.
func (r *Redis) Get(ctx context.Context, queue, userID string, now time.Time) (_ provider.Provider, _ bool, err error) {
	defer wrap(&err, "get %s/%s", queue, userID)
	if err := checkUser(queue, userID); err != nil {
		return provider.Provider{}, false, err
	}
	keys := []string{r.Key(queue, "p:"+userID), r.Key(queue, "held:"+userID)}
	v, err := getScript.Run(ctx, r.rdb, keys).Slice()
	if err != nil {
		return provider.Provider{}, false, err
	}
	if len(v) == 0 {
		return provider.Provider{}, false, nil
	}
	p, err := parseRow(queue, userID, v, now)
	return p, err == nil, err
}

// Sync sets userID's held slots to exactly ids.
func (r *Redis) Sync(ctx context.Context, queue, userID string, ids []string) (err error) {
	defer wrap(&err, "sync %s/%s", queue, userID)
	if err := checkUser(queue, userID); err != nil {
		return err
	}
	args := make([]any, 0, 2+len(ids))
	args = append(args, userID, emptyAttrs)
	for _, id := range ids {
		if err := checkAssignment(id); err != nil {
			return err
		}
		args = append(args, id)
	}
	keys := []string{r.Key(queue, "all"), r.Key(queue, "p:"+userID), r.Key(queue, "held:"+userID)}
	return syncScript.Run(ctx, r.rdb, keys, args...).Err()
}

// parseRow reads {cap, attrs, until, seen, on, {held}} into a provider,
// online judged at now.
func parseRow(queue, user string, v []any, now time.Time) (provider.Provider, error) {
	if len(v) != 6 {
		return provider.Provider{}, fmt.Errorf("reply of %d values for %s", len(v), user)
	}
	var s [5]string
	for i := range s {
		str, ok := v[i].(string)
		if !ok {
			return provider.Provider{}, fmt.Errorf("field %d of %s: %v", i, user, v[i])
		}
		s[i] = str
	}
	capacity, err := strconv.Atoi(s[0])
	if err != nil {
		return provider.Provider{}, fmt.Errorf("capacity of %s: %w", user, err)
	}
	until, err := strconv.ParseInt(s[2], 10, 64)
	if err != nil {
		return provider.Provider{}, fmt.Errorf("until of %s: %w", user, err)
	}
	seen, err := strconv.ParseInt(s[3], 10, 64)
	if err != nil {
		return provider.Provider{}, fmt.Errorf("seen of %s: %w", user, err)
	}
	heldV, ok := v[5].([]any)
	if !ok {
		return provider.Provider{}, fmt.Errorf("held of %s: %v", user, v[5])
	}
	held := make([]string, 0, len(heldV))
	for _, h := range heldV {
		id, ok := h.(string)
		if !ok {
			return provider.Provider{}, fmt.Errorf("held of %s: %v", user, h)
		}
		held = append(held, id)
	}
	return build(queue, user, capacity, []byte(s[1]), until, seen, s[4] == "1", held, now)
}
