package redistest

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// ClusterEnv names the Redis Cluster the tests use: a comma-separated list
// of seed nodes, e.g. "127.0.0.1:7000,127.0.0.1:7001,127.0.0.1:7002", as
// scripts/redis-cluster.sh starts it.
const ClusterEnv = "MATCHGATE_TEST_REDIS_CLUSTER"

// FailoverClusterEnv names a second cluster, which tests may fail over (see
// FailOver) without disturbing the tests of other packages that use the
// first one meanwhile; scripts/redis-cluster.sh starts it with
// REDIS_CLUSTER_PORT=7100.
const FailoverClusterEnv = "MATCHGATE_TEST_REDIS_CLUSTER_FAILOVER"

// ClusterAddrs are the seed nodes of ClusterEnv, or nil when it is unset.
func ClusterAddrs() []string { return addrsOf(ClusterEnv) }

// FailoverClusterAddrs are the seed nodes of FailoverClusterEnv.
func FailoverClusterAddrs() []string { return addrsOf(FailoverClusterEnv) }

// ClusterURL is the --redis-url of ClusterEnv's cluster.
func ClusterURL() string { return "redis+cluster://" + strings.Join(ClusterAddrs(), ",") }

// FailoverClusterURL is the --redis-url of FailoverClusterEnv's cluster.
func FailoverClusterURL() string {
	return "redis+cluster://" + strings.Join(FailoverClusterAddrs(), ",")
}

func addrsOf(env string) []string {
	v := strings.TrimSpace(os.Getenv(env))
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
	return clusterOf(t, ClusterEnv, "")
}

// FailoverCluster is Cluster for the cluster of FailoverClusterEnv. The
// tests of every package that fail it over take turns: each holds a lock
// (a file lock, across the test processes) from here to its cleanup, so no
// test sees another's failover.
func FailoverCluster(t testing.TB) *redis.ClusterClient {
	t.Helper()
	rdb := clusterOf(t, FailoverClusterEnv, "REDIS_CLUSTER_PORT=7100 ")
	lockPath := filepath.Join(os.TempDir(), "matchgate-failover-cluster-"+strings.ReplaceAll(FailoverClusterAddrs()[0], ":", "-")+".lock")
	f, err := os.OpenFile(lockPath, os.O_CREATE|os.O_RDWR, 0o600)
	if err != nil {
		t.Fatalf("redistest: %v", err)
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX); err != nil {
		t.Fatalf("redistest: lock %s: %v", lockPath, err)
	}
	// The cleanups of FailOver and KillMaster, registered later, run first:
	// the lock is let go once the cluster is whole again.
	t.Cleanup(func() {
		_ = syscall.Flock(int(f.Fd()), syscall.LOCK_UN)
		_ = f.Close()
	})
	return rdb
}

func clusterOf(t testing.TB, env, script string) *redis.ClusterClient {
	t.Helper()
	addrs := addrsOf(env)
	if addrs == nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("%s is not set: .ci/run starts scripts/redis-cluster.sh and sets it", env)
		}
		first := "7000"
		if script != "" {
			first = "7100"
		}
		t.Skipf("%s is not set (%sscripts/redis-cluster.sh start, then %s=127.0.0.1:%s)", env, script, env, first)
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

var errClusterNotOK = errors.New("cluster_state is not ok")

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

// FailOver promotes the replica of the master that serves key's slot (a
// manual CLUSTER FAILOVER, as an operator or a failing master's replicas
// would) and waits until the cluster agrees. The former master, now its
// replica, is promoted back at cleanup. Use it on FailoverCluster only.
func FailOver(t testing.TB, rdb *redis.ClusterClient, key string) (from, to string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	slot, err := rdb.ClusterKeySlot(ctx, key).Result()
	if err != nil {
		t.Fatalf("redistest: slot of %s: %v", key, err)
	}
	from, to = slotNodes(t, ctx, rdb, int(slot))
	replicaOf(t, ctx, to, from) // in sync, or it cannot take over
	promote(t, ctx, to, int(slot), false)
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		// The masters voted for this shard's failover just now and will not
		// again for twice the node timeout: the way back takes over without
		// a vote.
		replicaOf(t, ctx, from, to)
		promote(t, ctx, from, int(slot), true)
		replicaOf(t, ctx, to, from) // the cluster is as it was
		rdb.ReloadState(ctx)
	})
	rdb.ReloadState(ctx)
	return from, to
}

// slotNodes finds the master serving slot and one of its replicas, waiting
// (bounded by ctx) for the replica: one just demoted is listed again only
// once its replication link is up.
func slotNodes(t testing.TB, ctx context.Context, rdb *redis.ClusterClient, slot int) (master, replica string) {
	t.Helper()
	for {
		slots, err := rdb.ClusterSlots(ctx).Result()
		for _, s := range slots {
			if s.Start <= slot && slot <= s.End && len(s.Nodes) > 1 {
				return s.Nodes[0].Addr, s.Nodes[1].Addr
			}
		}
		select {
		case <-ctx.Done():
			t.Fatalf("redistest: no master with a replica serves slot %d (%v)", slot, err)
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// replicaOf waits (bounded by ctx) until the node at addr is a replica of
// master with its replication link up.
func replicaOf(t testing.TB, ctx context.Context, addr, master string) {
	t.Helper()
	node := redis.NewClient(&redis.Options{Addr: addr})
	defer node.Close()
	host, port, _ := strings.Cut(master, ":")
	for {
		role, err := node.Do(ctx, "role").Slice()
		if err == nil && len(role) >= 4 && role[0] == "slave" && role[1] == host &&
			fmt.Sprint(role[2]) == port && role[3] == "connected" {
			return
		}
		select {
		case <-ctx.Done():
			t.Fatalf("redistest: %s is not a connected replica of %s (role %v, %v)", addr, master, role, err)
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// promote makes the replica at addr the master of its shard and waits until
// it says it serves slot. A failover the masters do not vote for within the
// cluster's manual failover timeout (5 s), as when another test failed the
// same shard over moments ago, is taken over instead, as is every one with
// takeover set.
func promote(t testing.TB, ctx context.Context, addr string, slot int, takeover bool) {
	t.Helper()
	node := redis.NewClient(&redis.Options{Addr: addr})
	defer node.Close()
	failover := func(takeover bool) {
		args := []any{"cluster", "failover"}
		if takeover {
			args = append(args, "takeover")
		}
		if err := node.Do(ctx, args...).Err(); err != nil {
			t.Fatalf("redistest: %v on %s: %v", args, addr, err)
		}
	}
	failover(takeover)
	voteBy := time.Now().Add(6 * time.Second)
	for !servesSlot(ctx, node, addr, slot) {
		if !takeover && time.Now().After(voteBy) {
			takeover = true
			failover(true)
		}
		select {
		case <-ctx.Done():
			t.Fatalf("redistest: %s did not take over slot %d", addr, slot)
		case <-time.After(50 * time.Millisecond):
		}
	}
}

func servesSlot(ctx context.Context, node *redis.Client, addr string, slot int) bool {
	slots, err := node.ClusterSlots(ctx).Result()
	if err != nil {
		return false
	}
	for _, s := range slots {
		if s.Start <= slot && slot <= s.End {
			return len(s.Nodes) > 0 && s.Nodes[0].Addr == addr
		}
	}
	return false
}

// KillMaster stops the master that serves key's slot without saving (its
// replica then takes over once the cluster's node timeout has passed, as
// after a crash) and waits until the slot has a new master. At cleanup the
// stopped node is started again by scripts/redis-cluster.sh, rejoins as a
// replica, and the cluster is whole again. Use it on FailoverCluster only.
func KillMaster(t testing.TB, rdb *redis.ClusterClient, key string) (killed, promoted string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	slot, err := rdb.ClusterKeySlot(ctx, key).Result()
	if err != nil {
		t.Fatalf("redistest: slot of %s: %v", key, err)
	}
	killed, replica := slotNodes(t, ctx, rdb, int(slot))
	node := redis.NewClient(&redis.Options{Addr: killed})
	timeout, err := node.ConfigGet(ctx, "cluster-node-timeout").Result()
	if err != nil {
		t.Fatalf("redistest: node timeout of %s: %v", killed, err)
	}
	t.Cleanup(func() { restartNodes(t, killed, timeout["cluster-node-timeout"]) })
	_ = node.ShutdownNoSave(ctx).Err() // the connection drops: no answer
	_ = node.Close()
	rep := redis.NewClient(&redis.Options{Addr: replica})
	defer rep.Close()
	for !servesSlot(ctx, rep, replica, int(slot)) {
		select {
		case <-ctx.Done():
			t.Fatalf("redistest: %s did not take over from %s", replica, killed)
		case <-time.After(50 * time.Millisecond):
		}
	}
	rdb.ReloadState(ctx)
	return killed, replica
}

// restartNodes runs scripts/redis-cluster.sh start for the cluster whose
// node addr was stopped: it starts the nodes that are down and waits until
// the cluster is whole.
func restartNodes(t testing.TB, addr, nodeTimeout string) {
	t.Helper()
	_, port, _ := strings.Cut(addr, ":")
	p, err := strconv.Atoi(port)
	if err != nil {
		t.Fatalf("redistest: port of %s: %v", addr, err)
	}
	_, file, _, _ := runtime.Caller(0)
	script := filepath.Join(filepath.Dir(file), "..", "..", "scripts", "redis-cluster.sh")
	cmd := exec.Command(script, "start")
	// The script's nodes are numbered from its base port, a multiple of 100
	// here (7000, 7100).
	cmd.Env = append(os.Environ(), "REDIS_CLUSTER_PORT="+strconv.Itoa(p-p%100), "REDIS_CLUSTER_NODE_TIMEOUT="+nodeTimeout)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("redistest: restart %s: %v\n%s", addr, err, out)
	}
}
