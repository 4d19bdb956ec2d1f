// Package redistest gives tests a Redis to talk to: the real one (isolated by a
// key prefix, because tests of many packages share it in parallel) or an
// in-process miniredis.
package redistest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/redis/go-redis/v9"
)

// DefaultURL is used when MATCHGATE_TEST_REDIS_URL is not set.
const DefaultURL = "redis://127.0.0.1:6379/0"

// URL is the real Redis the tests use: MATCHGATE_TEST_REDIS_URL, or
// DefaultURL when it is unset.
func URL() string {
	if u := os.Getenv("MATCHGATE_TEST_REDIS_URL"); u != "" {
		return u
	}
	return DefaultURL
}

// prefixes holds, per test, the prefixes handed out by Prefix, so that the
// cleanup registered by Real can delete their keys whichever was called first.
var prefixes sync.Map // testing.TB → *prefixList

type prefixList struct {
	mu   sync.Mutex
	list []string
	real bool // Real(t) was called and its cleanup will consume the entry
}

func prefixesOf(t testing.TB) *prefixList {
	v, _ := prefixes.LoadOrStore(t, &prefixList{})
	return v.(*prefixList)
}

// Real connects to MATCHGATE_TEST_REDIS_URL (default DefaultURL). When Redis is
// unreachable the test is skipped, except with CI=true where a missing Redis
// is a broken pipeline and fails the test. At cleanup every key under the
// prefixes that Prefix gave the same t is deleted (SCAN, never FLUSHDB: other
// tests use the same database meanwhile) and the client is closed.
func Real(t testing.TB) *redis.Client {
	t.Helper()
	url := URL()
	opts, err := redis.ParseURL(url)
	if err != nil {
		t.Fatalf("redistest: MATCHGATE_TEST_REDIS_URL %q: %v", url, err)
	}
	if err := probe(opts); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("Redis not reachable at %s: %v", url, err)
		}
		t.Skipf("Redis not reachable at %s: %v", url, err)
	}
	rdb := redis.NewClient(opts)
	registerCleanup(t, func(ctx context.Context, prefix string) error {
		return DeletePrefix(ctx, rdb, prefix)
	}, func() { _ = rdb.Close() })
	return rdb
}

// registerCleanup marks t as having a real Redis and, at its cleanup, deletes
// with del every prefix Prefix gave t, then calls closeClient.
func registerCleanup(t testing.TB, del func(ctx context.Context, prefix string) error, closeClient func()) {
	pl := prefixesOf(t)
	pl.mu.Lock()
	pl.real = true
	pl.mu.Unlock()
	t.Cleanup(func() {
		defer closeClient()
		v, ok := prefixes.LoadAndDelete(t)
		if !ok {
			return
		}
		pl := v.(*prefixList)
		pl.mu.Lock()
		defer pl.mu.Unlock()
		for _, p := range pl.list {
			if err := del(context.Background(), p); err != nil {
				t.Errorf("redistest: cleanup of %s*: %v", p, err)
			}
		}
	})
}

// probe pings once, without the client's retries and backoff, so that a
// machine without Redis skips each test at once instead of after seconds.
func probe(opts *redis.Options) error {
	o := *opts
	o.MaxRetries = -1
	o.DialTimeout = time.Second
	rdb := redis.NewClient(&o)
	defer rdb.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	return rdb.Ping(ctx).Err()
}

// Prefix returns a key prefix unique to this test run, "mgtest-<16 hex>". Keys
// under it are deleted when the client from Real(t) (same t) is cleaned up.
func Prefix(t testing.TB) string {
	t.Helper()
	var b [8]byte
	if _, err := rand.Read(b[:]); err != nil {
		t.Fatalf("redistest: random prefix: %v", err)
	}
	p := "mgtest-" + hex.EncodeToString(b[:])
	pl := prefixesOf(t)
	pl.mu.Lock()
	pl.list = append(pl.list, p)
	pl.mu.Unlock()
	t.Cleanup(func() {
		// Without Real(t) (miniredis only) nobody else forgets the entry.
		pl.mu.Lock()
		real := pl.real
		pl.mu.Unlock()
		if !real {
			prefixes.Delete(t)
		}
	})
	return p
}

// DeletePrefix deletes every key starting with prefix, in SCAN pages; on a
// cluster, on every master. The prefix must not contain glob characters.
func DeletePrefix(ctx context.Context, rdb redis.UniversalClient, prefix string) error {
	if c, ok := rdb.(*redis.ClusterClient); ok {
		return c.ForEachMaster(ctx, func(ctx context.Context, node *redis.Client) error {
			return deletePrefixBySlot(ctx, node, prefix)
		})
	}
	iter := rdb.Scan(ctx, 0, prefix+"*", 1000).Iterator()
	batch := make([]string, 0, 500)
	flush := func() error {
		if len(batch) == 0 {
			return nil
		}
		err := rdb.Unlink(ctx, batch...).Err()
		batch = batch[:0]
		return err
	}
	for iter.Next(ctx) {
		batch = append(batch, iter.Val())
		if len(batch) == cap(batch) {
			if err := flush(); err != nil {
				return err
			}
		}
	}
	if err := iter.Err(); err != nil {
		return err
	}
	return flush()
}

// Mini starts an in-process miniredis, closed (with its client) at cleanup.
// miniredis does not expire keys by itself: use its FastForward to test TTLs.
func Mini(t testing.TB) *redis.Client {
	t.Helper()
	rdb, _ := MiniServer(t)
	return rdb
}

// MiniServer is Mini that also returns the server, for FastForward and
// inspection.
func MiniServer(t testing.TB) (*redis.Client, *miniredis.Miniredis) {
	t.Helper()
	s, err := miniredis.Run()
	if err != nil {
		t.Fatalf("redistest: start miniredis: %v", err)
	}
	rdb := redis.NewClient(&redis.Options{Addr: s.Addr()})
	t.Cleanup(func() {
		_ = rdb.Close()
		s.Close()
	})
	return rdb, s
}

// Both runs fn as the subtest "miniredis" and then as the subtest "redis"
// (skipped when Redis is not reachable), each with its own client and prefix,
// so one contract is checked against the fake and the real thing.
func Both(t *testing.T, fn func(t *testing.T, rdb *redis.Client, prefix string)) {
	t.Helper()
	t.Run("miniredis", func(t *testing.T) {
		fn(t, Mini(t), Prefix(t))
	})
	t.Run("redis", func(t *testing.T) {
		rdb := Real(t)
		fn(t, rdb, Prefix(t))
	})
}
