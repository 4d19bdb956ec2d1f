package redistest

import (
	"context"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/redis/go-redis/v9"
)

func TestRealCleanupDeletesOnlyItsPrefix(t *testing.T) {
	ctx := context.Background()
	outer := Real(t)
	other := Prefix(t)
	if err := outer.Set(ctx, other+":keep", "1", 0).Err(); err != nil {
		t.Fatal(err)
	}

	var inner string
	t.Run("inner", func(t *testing.T) {
		rdb := Real(t)
		inner = Prefix(t)
		for _, k := range []string{":a", ":{x}:b", ":c"} {
			if err := rdb.Set(ctx, inner+k, "1", 0).Err(); err != nil {
				t.Fatal(err)
			}
		}
	})

	keys, err := outer.Keys(ctx, inner+"*").Result()
	if err != nil {
		t.Fatal(err)
	}
	if len(keys) != 0 {
		t.Fatalf("keys left under %s: %v", inner, keys)
	}
	if n, err := outer.Exists(ctx, other+":keep").Result(); err != nil || n != 1 {
		t.Fatalf("key of another prefix: exists=%d err=%v", n, err)
	}
}

func TestPrefixUnique(t *testing.T) {
	a, b := Prefix(t), Prefix(t)
	if a == b || !strings.HasPrefix(a, "mgtest-") {
		t.Fatalf("prefixes %q %q", a, b)
	}
}

func TestDeletePrefixPages(t *testing.T) {
	ctx := context.Background()
	rdb := Mini(t)
	p := Prefix(t)
	pipe := rdb.Pipeline()
	for i := range 2500 {
		pipe.Set(ctx, p+":"+string(rune('a'+i%26))+":"+strconv.Itoa(i), "1", 0)
	}
	pipe.Set(ctx, "unrelated", "1", 0)
	if _, err := pipe.Exec(ctx); err != nil {
		t.Fatal(err)
	}
	if err := DeletePrefix(ctx, rdb, p); err != nil {
		t.Fatal(err)
	}
	if n := rdb.DBSize(ctx).Val(); n != 1 {
		t.Fatalf("dbsize after delete = %d, want 1", n)
	}
}

func TestBothRunsBoth(t *testing.T) {
	var ran []string
	Both(t, func(t *testing.T, rdb *redis.Client, prefix string) {
		if err := rdb.Ping(context.Background()).Err(); err != nil {
			t.Fatal(err)
		}
		if prefix == "" {
			t.Fatal("empty prefix")
		}
		ran = append(ran, t.Name())
	})
	if len(ran) == 0 {
		t.Fatal("fn never ran")
	}
	t.Log(ran)
}

// Cluster's cleanup deletes the keys of its prefix on every master, in
// whatever slot each one lives.
func TestClusterCleanupDeletesEverySlot(t *testing.T) {
	ctx := context.Background()
	outer := Cluster(t)
	var inner string
	t.Run("inner", func(t *testing.T) {
		rdb := Cluster(t)
		inner = Prefix(t)
		for i := range 50 {
			if err := rdb.Set(ctx, inner+":"+strconv.Itoa(i), "1", 0).Err(); err != nil {
				t.Fatal(err)
			}
		}
		var masters atomic.Int32 // ForEachMaster visits the masters at once
		_ = rdb.ForEachMaster(ctx, func(ctx context.Context, node *redis.Client) error {
			n, err := node.Keys(ctx, inner+"*").Result()
			if err == nil && len(n) > 0 {
				masters.Add(1)
			}
			return nil
		})
		if masters.Load() < 2 {
			t.Fatalf("50 keys on %d masters: the test needs them spread", masters.Load())
		}
	})
	var left atomic.Int32
	err := outer.ForEachMaster(ctx, func(ctx context.Context, node *redis.Client) error {
		keys, err := node.Keys(ctx, inner+"*").Result()
		left.Add(int32(len(keys)))
		return err
	})
	if err != nil || left.Load() != 0 {
		t.Fatalf("%d keys left under %s (err %v)", left.Load(), inner, err)
	}
}
