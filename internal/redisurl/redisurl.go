// Package redisurl opens the Redis client a URL names: one node, or a Redis
// Cluster (docs/OPERATIONS.md, "Running").
package redisurl

import (
	"errors"
	"fmt"
	"net/url"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
)

// Open opens the client a URL names: one node for
// redis://host:port/db (or rediss://); a Redis Cluster for
// redis+cluster://host:port,host:port (or rediss+cluster://), or for a
// redis:// URL naming several nodes. The nodes are seeds: the client learns
// the others from the cluster. Query parameters are go-redis's (dial_timeout,
// pool_size, ...); a cluster has no database number.
func Open(raw string) (redis.UniversalClient, error) {
	scheme, rest, ok := strings.Cut(raw, "://")
	if !ok {
		return nil, errors.New("want redis://, rediss://, redis+cluster:// or rediss+cluster://")
	}
	hostPart, tail := rest, ""
	if i := strings.IndexAny(rest, "/?"); i >= 0 {
		hostPart, tail = rest[:i], rest[i:]
	}
	userInfo, hosts := "", hostPart
	if i := strings.LastIndexByte(hostPart, '@'); i >= 0 {
		userInfo, hosts = hostPart[:i+1], hostPart[i+1:]
	}
	nodes := strings.Split(hosts, ",")
	switch scheme {
	case "redis+cluster", "rediss+cluster":
		scheme = strings.TrimSuffix(scheme, "+cluster")
	case "redis", "rediss":
		if len(nodes) == 1 {
			opt, err := redis.ParseURL(raw)
			if err != nil {
				return nil, err
			}
			failFast(&opt.MaxRetries, &opt.DialerRetries, &opt.DialTimeout)
			return redis.NewClient(opt), nil
		}
	default:
		return nil, fmt.Errorf("scheme %q: want redis, rediss, redis+cluster or rediss+cluster", scheme)
	}
	path, query, _ := strings.Cut(tail, "?")
	if path != "" && path != "/" {
		return nil, fmt.Errorf("a cluster has no database: remove %q", path)
	}
	// go-redis reads a cluster URL as its first node plus addr= parameters.
	q, err := url.ParseQuery(query)
	if err != nil {
		return nil, err
	}
	for _, n := range nodes[1:] {
		if n == "" {
			return nil, errors.New("an empty node in the list")
		}
		q.Add("addr", n)
	}
	if nodes[0] == "" {
		return nil, errors.New("no node named")
	}
	opt, err := redis.ParseClusterURL(scheme + "://" + userInfo + nodes[0] + "?" + q.Encode())
	if err != nil {
		return nil, err
	}
	failFast(&opt.MaxRetries, &opt.DialerRetries, &opt.DialTimeout)
	// The client learns a failover from a MOVED answer, which a dead master
	// never gives, or from its periodic reading of the slots, every minute by
	// default: until then every command of the failed master's slots would
	// dial it in vain. One CLUSTER SLOTS a second is cheap.
	opt.ClusterStateReloadInterval = clusterStateReload
	return redis.NewClusterClient(opt), nil
}

// clusterStateReload is how often a cluster client reads the slots again.
const clusterStateReload = time.Second

// failFast keeps a join's answer quick while Redis is away (unless the URL
// says otherwise): 503 in a moment, not after seconds of redials.
func failFast(retries, dialerRetries *int, dialTimeout *time.Duration) {
	if *retries == 0 {
		*retries = 1
	}
	if *dialerRetries == 0 {
		*dialerRetries = 1
	}
	if *dialTimeout == 0 {
		*dialTimeout = 2 * time.Second
	}
}
