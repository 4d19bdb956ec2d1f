package redisurl

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

func TestOpenURLs(t *testing.T) {
	for _, tc := range []struct {
		url     string
		cluster []string // nil: one node
		addr    string   // of one node
		db      int
		user    string
	}{
		{url: "redis://127.0.0.1:6379/2", addr: "127.0.0.1:6379", db: 2},
		{url: "redis://u:p@10.0.0.1:6380", addr: "10.0.0.1:6380", user: "u"},
		{url: "redis+cluster://127.0.0.1:7000", cluster: []string{"127.0.0.1:7000"}},
		{url: "redis+cluster://u:p@127.0.0.1:7000,127.0.0.1:7001/?dial_timeout=3s", cluster: []string{"127.0.0.1:7000", "127.0.0.1:7001"}, user: "u"},
		{url: "redis://127.0.0.1:7000,127.0.0.1:7001,127.0.0.1:7002", cluster: []string{"127.0.0.1:7000", "127.0.0.1:7001", "127.0.0.1:7002"}},
		{url: "rediss+cluster://h1:7000,h2:7000", cluster: []string{"h1:7000", "h2:7000"}},
	} {
		rdb, err := Open(tc.url)
		if err != nil {
			t.Errorf("%s: %v", tc.url, err)
			continue
		}
		switch c := rdb.(type) {
		case *redis.Client:
			o := c.Options()
			if tc.cluster != nil || o.Addr != tc.addr || o.DB != tc.db || o.Username != tc.user || o.MaxRetries != 1 {
				t.Errorf("%s: one node %s db %d user %q retries %d", tc.url, o.Addr, o.DB, o.Username, o.MaxRetries)
			}
		case *redis.ClusterClient:
			o := c.Options()
			if !slices.Equal(o.Addrs, tc.cluster) || o.Username != tc.user || o.MaxRetries != 1 {
				t.Errorf("%s: cluster %v user %q retries %d, want %v", tc.url, o.Addrs, o.Username, o.MaxRetries, tc.cluster)
			}
			if strings.HasPrefix(tc.url, "rediss") != (o.TLSConfig != nil) {
				t.Errorf("%s: TLS %v", tc.url, o.TLSConfig != nil)
			}
			if strings.Contains(tc.url, "dial_timeout=3s") && o.DialTimeout != 3*time.Second {
				t.Errorf("%s: dial timeout %s", tc.url, o.DialTimeout)
			}
		}
		_ = rdb.Close()
	}
	for _, bad := range []string{"127.0.0.1:6379", "http://x:1", "redis+cluster://a:1,b:1/3", "redis+cluster://a:1,,b:1", "redis+cluster://"} {
		if rdb, err := Open(bad); err == nil {
			_ = rdb.Close()
			t.Errorf("%s: accepted", bad)
		}
	}
}
