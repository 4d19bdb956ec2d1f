package redistest

import (
	"context"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// ClusterEnv names the Redis Cluster the tests use: a comma-separated list
// of seed nodes, e.g. "127.0.0.1:7000,127.0.0.1:7001,127.0.0.1:7002", as
// scripts/redis-cluster.sh starts it.
const ClusterEnv = "MATCHGATE_TEST_REDIS_CLUSTER"

// ClusterAddrs are the seed nodes of ClusterEnv, or nil when it is unset.
func ClusterAddrs() []string {
	v := strings.TrimSpace(os.Getenv(ClusterEnv))
	if v == "" {
		return nil
	}
	var addrs []string
	for _, a := range strings.Split(v, ",") {
		if a = strings.TrimSpace(a); a != "" {
			addrs = append(addrs, a)
		}
	}
	return addrs
}

// Cluster connects to the Redis Cluster of MATCHGATE_TEST_REDIS_CLUSTER. The
// test is skipped when the variable is unset or the cluster is not reachable,
// except with CI=true, where .ci/run has started one and its absence fails
// the test. At cleanup every key under the prefixes Prefix gave the same t is
// deleted on every master, and the client is closed.
func Cluster(t testing.TB) *redis.ClusterClient {
	t.Helper()
	addrs := ClusterAddrs()
	if addrs == nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("%s is not set: .ci/run starts scripts/redis-cluster.sh and sets it", ClusterEnv)
		}
		t.Skipf("%s is not set (scripts/redis-cluster.sh start, then %s=127.0.0.1:7000)", ClusterEnv, ClusterEnv)
	}
	if err := probeCluster(addrs); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("Redis Cluster not usable at %v: %v", addrs, err)
		}
		t.Skipf("Redis Cluster not usable at %v: %v", addrs, err)
	}
	rdb := redis.NewClusterClient(&redis.ClusterOptions{Addrs: addrs})
	registerCleanup(t, func(ctx context.Context, prefix string) error {
		return DeletePrefix(ctx, rdb, prefix)
	}, func() { _ = rdb.Close() })
	return rdb
}

// probeCluster asks one seed for the cluster's state, without retries, so
// that a missing cluster skips at once.
func probeCluster(addrs []string) error {
	rdb := redis.NewClient(&redis.Options{Addr: addrs[0], MaxRetries: -1, DialTimeout: time.Second})
	defer rdb.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	info, err := rdb.ClusterInfo(ctx).Result()
	if err != nil {
		return err
	}
	if !strings.Contains(info, "cluster_state:ok") {
		return errClusterNotOK
	}
	return nil
}

type clusterError string

func (e clusterError) Error() string { return string(e) }

const errClusterNotOK = clusterError("cluster_state is not ok")

// deletePrefixBySlot is DeletePrefix for one node of a cluster: the keys of
// one SCAN page may live in several slots, which one UNLINK refuses, so each
// is unlinked on its own, in one pipeline per page.
func deletePrefixBySlot(ctx context.Context, node *redis.Client, prefix string) error {
	var cursor uint64
	for {
		keys, next, err := node.Scan(ctx, cursor, prefix+"*", 1000).Result()
		if err != nil {
			return err
		}
		if len(keys) > 0 {
			pipe := node.Pipeline()
			for _, k := range keys {
				pipe.Unlink(ctx, k)
			}
			if _, err := pipe.Exec(ctx); err != nil {
				return err
			}
		}
		if next == 0 {
			return nil
		}
		cursor = next
	}
}

// All runs fn as the subtests "miniredis", "redis" and "cluster" (the last two
// skipped when their Redis is not there, as Real and Cluster say), each with
// its own client and prefix: one contract checked on the fake, one node and a
// cluster.
func All(t *testing.T, fn func(t *testing.T, rdb redis.UniversalClient, prefix string)) {
	t.Helper()
	Both(t, func(t *testing.T, rdb *redis.Client, prefix string) { fn(t, rdb, prefix) })
	t.Run("cluster", func(t *testing.T) {
		rdb := Cluster(t)
		fn(t, rdb, Prefix(t))
	})
}

// Clone is a new client to the same Redis as rdb (one node or a cluster),
// closed at cleanup, for a test that adds hooks of its own.
func Clone(t testing.TB, rdb redis.UniversalClient) redis.UniversalClient {
	t.Helper()
	var c redis.UniversalClient
	switch r := rdb.(type) {
	case *redis.Client:
		o := *r.Options()
		c = redis.NewClient(&o)
	case *redis.ClusterClient:
		o := *r.Options()
		c = redis.NewClusterClient(&o)
	default:
		t.Fatalf("redistest: Clone of a %T", rdb)
	}
	t.Cleanup(func() { _ = c.Close() })
	return c
}
