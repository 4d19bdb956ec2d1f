package pool

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"reflect"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/matchgate/matchgate/internal/redistest"
	"github.com/matchgate/matchgate/provider"
)

// Random calls on Redis and on Memory, side by side on one clock, return
// the same values call for call, and the same snapshot after each.
func TestRedisAgreesWithMemory(t *testing.T) {
	steps := 1500
	if testing.Short() {
		steps = 300
	}
	redistest.All(t, func(t *testing.T, rdb redis.UniversalClient, prefix string) {
		ctx := context.Background()
		c := &clock{now: t0}
		pools := []provider.Live{NewRedis(rdb, prefix, WithClock(c.Now)), NewMemory(WithClock(c.Now))}
		rng := rand.New(rand.NewPCG(3, 5))
		const q = "agree"
		users := []string{"u0", "u1", "u2", "u3", "u4"}
		sessions := []string{"", "s1", "s2"}
		attrs := []provider.Attributes{{}, attrsA, attrsB}
		now := t0
		outcomes := map[string]int{} // by outcome(), to see the walk reach each case
		pick := func(xs []string) string { return xs[rng.IntN(len(xs))] }
		id := func() string { return fmt.Sprintf("a%d", rng.IntN(12)) }
		for step := range steps {
			// Time moves on by up to 800 ms a step, sub-millisecond digits
			// included; presence lasts up to 15 s.
			now = now.Add(time.Duration(rng.Int64N(int64(800 * time.Millisecond))))
			c.Set(now)
			until := now.Add(time.Duration(rng.Int64N(int64(15 * time.Second))))
			user, session := pick(users), pick(sessions)
			var op string
			results := make([][]any, len(pools))
			// Every draw is made before the calls, so both pools get the
			// same arguments.
			kind := rng.IntN(8)
			capacity := rng.IntN(5) - 1
			onlineAttrs, onlineCap := attrs[rng.IntN(len(attrs))], rng.IntN(5)
			a := &attrs[rng.IntN(len(attrs))]
			if rng.IntN(3) == 0 {
				a = nil
			}
			aid := id()
			ids := make([]string, rng.IntN(4))
			for i := range ids {
				ids[i] = id()
			}
			refreshed := []string{pick(users), pick(users)}
			for i, l := range pools {
				var res []any
				switch kind {
				case 0:
					op = "online"
					p, err := l.Online(ctx, q, prov(user, onlineCap, onlineAttrs), session, until)
					res = []any{p, errOf(err)}
				case 1:
					op = "update"
					p, err := l.Update(ctx, q, user, capacity, a, now)
					res = []any{p, errOf(err)}
				case 2:
					op = "offline"
					ok, err := l.Offline(ctx, q, user, session, now)
					res = []any{ok, errOf(err)}
				case 3:
					op = "refresh"
					res = []any{errOf(l.Refresh(ctx, q, refreshed, session, until))}
				case 4, 5:
					op = "hold"
					ok, err := l.Hold(ctx, q, user, aid, now)
					res = []any{ok, errOf(err)}
				case 6:
					op = "release"
					res = []any{errOf(l.Release(ctx, q, user, aid))}
				case 7:
					op = "sync"
					res = []any{errOf(l.Sync(ctx, q, user, ids))}
				}
				snap, err := l.Snapshot(ctx, q, now)
				if err != nil {
					t.Fatalf("step %d: snapshot: %v", step, err)
				}
				results[i] = append(res, snap)
			}
			if !reflect.DeepEqual(results[0], results[1]) {
				t.Fatalf("step %d: %s of %s: redis %+v, memory %+v", step, op, user, results[0], results[1])
			}
			outcomes[outcome(op, results[0])]++
		}
		t.Logf("%d steps: %v", steps, outcomes)
		// The walk must reach the cases that matter, or it tested little.
		for _, o := range []string{"hold true", "hold false", "update ok", "update offline", "offline true", "offline false"} {
			if outcomes[o] == 0 {
				t.Fatalf("no %q in %d steps", o, steps)
			}
		}
	})
}

// outcome names a call's result for the tally: the op and its bool, or
// its error class.
func outcome(op string, res []any) string {
	if b, ok := res[0].(bool); ok {
		return fmt.Sprintf("%s %v", op, b)
	}
	e := res[len(res)-2].(string)
	if e == "" {
		e = "ok"
	}
	return op + " " + e
}

// errOf names an error's class: the value is the same, the wrapped text
// need not be.
func errOf(err error) string {
	switch {
	case err == nil:
		return ""
	case errors.Is(err, provider.ErrOffline):
		return "offline"
	default:
		return "error"
	}
}
