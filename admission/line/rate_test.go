package line

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/matchgate/matchgate/admission"
	"github.com/matchgate/matchgate/internal/redistest"
)

// eachLine runs fn on a line in miniredis, in Redis and in memory.
func eachLine(t *testing.T, fn func(t *testing.T, l admission.Line)) {
	redistest.All(t, func(t *testing.T, rdb redis.UniversalClient, prefix string) {
		fn(t, NewRedis(rdb, prefix))
	})
	t.Run("memory", func(t *testing.T) { fn(t, NewMemory()) })
}

// checkRate fails when some interval of one second, (x-1s, x], holds more
// than rate of the instants (unix ms), and reports the fullest one's count.
func checkRate(t *testing.T, instants []int64, rate int) (fullest int) {
	t.Helper()
	s := slices.Clone(instants)
	slices.Sort(s)
	lo := 0
	for i, x := range s {
		for s[lo] <= x-1000 {
			lo++
		}
		if n := i - lo + 1; n > fullest {
			fullest = n
		}
	}
	if fullest > rate {
		t.Fatalf("an interval of one second holds %d admissions, rate %d", fullest, rate)
	}
	return fullest
}

// feeder keeps a queue's line stocked with places of growing seq.
type feeder struct {
	queue string
	next  int64
}

func (f *feeder) add(t *testing.T, l admission.Line, n int) {
	t.Helper()
	ps := make([]admission.Place, n)
	for i := range ps {
		f.next++
		ps[i] = place(f.queue, fmt.Sprintf("u%d", f.next), f.next)
	}
	mustAdd(t, l, f.queue, ps...)
}

// A single admitter on a simulated clock stepping 1–300 ms: each Take
// takes exactly min(n, rate - the admissions of the last second, the
// line's length), so no second ever holds more than rate, and the rate is
// reached.
func TestRateOnASimulatedClock(t *testing.T) {
	steps := 4000
	if testing.Short() {
		steps = 500
	}
	eachLine(t, func(t *testing.T, l admission.Line) {
		ctx := context.Background()
		const q, rate = "sim", 25
		rng := rand.New(rand.NewPCG(7, 11))
		f := &feeder{queue: q}
		f.add(t, l, 3*rate)
		tok, err := l.AcquireLease(ctx, q, "adm", t0, 24*time.Hour, 0)
		if err != nil || tok == 0 {
			t.Fatalf("acquire = %d, %v", tok, err)
		}
		var instants []int64
		now := t0
		size := int64(3 * rate)
		full := 0
		for step := range steps {
			now = now.Add(time.Duration(1+rng.IntN(300)) * time.Millisecond)
			n := 1 + rng.IntN(rate+rate/2)
			inWindow := 0
			for _, x := range instants[max(0, len(instants)-2*rate):] {
				if x > now.UnixMilli()-1000 {
					inWindow++
				}
			}
			want := min(int64(n), int64(rate-inWindow), size)
			got, _, err := l.Take(ctx, q, tok, n, rate, now)
			if err != nil {
				t.Fatalf("step %d: %v", step, err)
			}
			if int64(len(got)) != want {
				t.Fatalf("step %d at T+%v: took %d of n %d, want %d (%d in the last second, %d waiting)",
					step, now.Sub(t0), len(got), n, want, inWindow, size)
			}
			if inWindow+len(got) == rate {
				full++
			}
			size -= want
			var acks []string
			var back []admission.Taken
			for _, g := range got {
				instants = append(instants, g.At.UnixMilli())
				if rng.IntN(10) == 0 {
					back = append(back, g)
				} else {
					acks = append(acks, g.UserID)
				}
			}
			if err := l.Ack(ctx, q, acks); err != nil {
				t.Fatal(err)
			}
			if err := l.Return(ctx, q, back); err != nil {
				t.Fatal(err)
			}
			size += int64(len(back))
			// Now and then the line runs dry.
			if size < rate && rng.IntN(4) != 0 {
				f.add(t, l, 2*rate)
				size += 2 * rate
			}
		}
		if sz, _ := l.Size(ctx, q); sz != size {
			t.Fatalf("size %d, want %d", sz, size)
		}
		if fullest := checkRate(t, instants, rate); fullest != rate {
			t.Fatalf("no second reached the rate: fullest %d", fullest)
		}
		if full < steps/20 {
			t.Fatalf("the rate was reached in %d steps of %d: the test exercises too little", full, steps)
		}
	})
}

// Three admitters race, each with the token it was given: only the lease
// holder's takes succeed, the others are refused every time, and the
// holder keeps the rate.
func TestRacingAdmittersOnlyTheHolderTakes(t *testing.T) {
	eachLine(t, func(t *testing.T, l admission.Line) {
		ctx := context.Background()
		const q, rate, rounds = "race3", 10, 300
		f := &feeder{queue: q}
		f.add(t, l, 2000)
		// a, then b once a's lease ran out, then c once b's did.
		var tokens []int64
		for i, owner := range []string{"a", "b", "c"} {
			ttl := time.Second
			if owner == "c" {
				ttl = 24 * time.Hour
			}
			tok, err := l.AcquireLease(ctx, q, owner, t0.Add(time.Duration(i)*time.Second), ttl, 0)
			if err != nil || tok == 0 {
				t.Fatalf("acquire by %s = %d, %v", owner, tok, err)
			}
			tokens = append(tokens, tok)
		}
		var clock atomic.Int64
		clock.Store(t0.Add(3 * time.Second).UnixMilli())
		took := make([][]int64, 3)
		refused := make([]int, 3)
		var wg sync.WaitGroup
		for g, tok := range tokens {
			wg.Go(func() {
				rng := rand.New(rand.NewPCG(uint64(g), 3))
				for range rounds {
					now := time.UnixMilli(clock.Add(int64(1 + rng.IntN(100))))
					got, _, err := l.Take(ctx, q, tok, 1+rng.IntN(rate), rate, now)
					switch {
					case errors.Is(err, admission.ErrFenced):
						refused[g]++
					case err != nil:
						t.Error(err)
						return
					}
					for _, x := range got {
						took[g] = append(took[g], x.At.UnixMilli())
					}
				}
			})
		}
		wg.Wait()
		if refused[0] != rounds || refused[1] != rounds || len(took[0])+len(took[1]) != 0 {
			t.Fatalf("stale tokens: refused %v of %d, took %d and %d", refused[:2], rounds, len(took[0]), len(took[1]))
		}
		if refused[2] != 0 || len(took[2]) == 0 {
			t.Fatalf("the holder was refused %d times and took %d", refused[2], len(took[2]))
		}
		checkRate(t, took[2], rate)
	})
}

// Workers of one admitter race with the holder's token, each reading a
// shared clock before its call: their calls reach the line in another
// order than their instants, and still no second holds more than rate.
func TestRacingTakesKeepTheRate(t *testing.T) {
	eachLine(t, func(t *testing.T, l admission.Line) {
		ctx := context.Background()
		const q, rate, workers, rounds = "race-rate", 7, 4, 250
		f := &feeder{queue: q}
		f.add(t, l, 4000)
		tok, err := l.AcquireLease(ctx, q, "adm", t0, 24*time.Hour, 0)
		if err != nil || tok == 0 {
			t.Fatalf("acquire = %d, %v", tok, err)
		}
		var clock atomic.Int64
		clock.Store(t0.UnixMilli())
		var mu sync.Mutex
		var instants []int64
		var wg sync.WaitGroup
		for w := range workers {
			wg.Go(func() {
				rng := rand.New(rand.NewPCG(uint64(w), 5))
				for range rounds {
					now := time.UnixMilli(clock.Add(int64(rng.IntN(60))))
					got, _, err := l.Take(ctx, q, tok, 1+rng.IntN(rate), rate, now)
					if err != nil {
						t.Error(err)
						return
					}
					mu.Lock()
					for _, x := range got {
						instants = append(instants, x.At.UnixMilli())
					}
					mu.Unlock()
				}
			})
		}
		wg.Wait()
		if fullest := checkRate(t, instants, rate); fullest != rate {
			t.Fatalf("no second reached the rate: fullest %d", fullest)
		}
	})
}
