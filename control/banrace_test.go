package control

import (
	"context"
	"fmt"
	"math/rand/v2"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/matchgate/matchgate/internal/pgtest"
	"github.com/matchgate/matchgate/internal/redistest"
	"github.com/matchgate/matchgate/matcher"
	"github.com/matchgate/matchgate/matcher/engine"
	"github.com/matchgate/matchgate/matcher/ledger"
	"github.com/matchgate/matchgate/matcher/pool"
)

// slowJoins widens the window between a join's ban check and its commit.
type slowJoins struct{ matcher.Ledger }

func (l slowJoins) CreateTicket(ctx context.Context, t matcher.Ticket) (matcher.Ticket, error) {
	time.Sleep(time.Duration(rand.IntN(300)) * time.Microsecond)
	return l.Ledger.CreateTicket(ctx, t)
}

// sweepOnBan is what every process does when a ban enters its list
// (cmd/matchgate: security.sweepBans): cancel the user's waiting tickets.
func sweepOnBan(t *testing.T, list *BanList, svc *engine.Service) {
	list.OnBan(func(b Ban) {
		ctx := context.Background()
		st, err := svc.UserState(ctx, b.UserID)
		if err != nil {
			t.Error(err)
			return
		}
		for _, tk := range st.Tickets {
			if tk.Status == matcher.StatusWaiting {
				_, _ = svc.Cancel(ctx, b.UserID, tk.ID)
			}
		}
	})
}

// A join on gateway B racing a ban made on gateway A: whatever the order,
// no ticket of the banned user is left waiting.
func TestJoinRacingABanKeepsNoTicket(t *testing.T) {
	type env struct {
		rdb    *redis.Client
		prefix string
		led    matcher.Ledger
		store  BanStore
	}
	run := func(t *testing.T, e env) {
		ctx := context.Background()
		cfg := matcher.Config{Queues: []matcher.QueueConfig{{Name: "duel", Seats: matcher.Seats{Players: 2}}}}
		if err := cfg.Normalize(); err != nil {
			t.Fatal(err)
		}
		listA, _ := NewBanList(BanListConfig{Store: e.store})
		listB, _ := NewBanList(BanListConfig{Store: e.store})
		service := func(list *BanList) *engine.Service {
			svc, err := engine.NewService(engine.ServiceConfig{
				Deps:   engine.Deps{Pool: pool.New(e.rdb, e.prefix), Ledger: slowJoins{e.led}},
				Queues: cfg,
				Banned: list.Banned,
			})
			if err != nil {
				t.Fatal(err)
			}
			return svc
		}
		svcA, svcB := service(listA), service(listB)
		sweepOnBan(t, listA, svcA)
		sweepOnBan(t, listB, svcB)
		const rounds = 300
		outcomes := map[string]int{}
		for i := range rounds {
			user := fmt.Sprint("racer-", i)
			var joinErr error
			checked := true
			var wg sync.WaitGroup
			wg.Go(func() { // gateway B: its own check, then the join
				if listB.Banned(user) {
					checked = false
					return
				}
				skill := 50.0
				_, joinErr = svcB.Join(ctx, matcher.JoinRequest{UserID: user, Queue: "duel", Skill: &skill})
			})
			wg.Go(func() { // the admin API on gateway A, then the channel to B
				b := Ban{UserID: user, CreatedAt: time.Now().UTC()}
				if err := e.store.PutBan(ctx, b); err != nil {
					t.Error(err)
					return
				}
				listA.Apply(b)
				listB.Apply(b)
			})
			wg.Wait()
			switch {
			case !checked:
				outcomes["refused by the gateway's check"]++
			case matcher.ErrorCode(joinErr) == matcher.CodeForbidden:
				outcomes["refused after the commit"]++
			case joinErr == nil:
				outcomes["joined, then swept"]++
			default:
				t.Fatalf("round %d: join %v", i, joinErr)
			}
			page, err := e.led.UserState(ctx, user, time.Time{}, 100)
			if err != nil {
				t.Fatal(err)
			}
			for _, tk := range page.Tickets {
				if tk.Status == matcher.StatusWaiting {
					t.Fatalf("round %d: ticket %s of banned %s survived the ban (outcomes so far %v)", i, tk.ID, user, outcomes)
				}
			}
		}
		t.Logf("%d rounds: %v", rounds, outcomes)
	}
	t.Run("embedded", func(t *testing.T) {
		rdb := redistest.Mini(t)
		run(t, env{rdb: rdb, prefix: "mg", led: ledger.NewMemory(), store: NewRedisBans(rdb, "mg")})
	})
	t.Run("redis+postgres", func(t *testing.T) {
		rdb, pg := redistest.Real(t), pgtest.New(t)
		run(t, env{rdb: rdb, prefix: redistest.Prefix(t), led: ledger.NewPostgres(pg), store: NewPostgresBans(pg)})
	})
}

// OnBan runs once a ban enters the list: on Apply, and on a Reload for
// each ban the list did not have; a lapsed ban does not count.
func TestBanListOnBan(t *testing.T) {
	rdb := redistest.Mini(t)
	ctx := context.Background()
	store := NewRedisBans(rdb, "mg")
	now := time.Now().UTC()
	list, _ := NewBanList(BanListConfig{Store: store, Now: func() time.Time { return now }})
	var got []string
	list.OnBan(func(b Ban) {
		if !list.Banned(b.UserID) {
			t.Errorf("OnBan(%s) before the ban is in force", b.UserID)
		}
		got = append(got, b.UserID)
	})
	list.Apply(Ban{UserID: "ann", CreatedAt: now})
	past := now.Add(-time.Minute)
	list.Apply(Ban{UserID: "lapsed", Until: &past, CreatedAt: now})
	for _, b := range []Ban{{UserID: "ann", CreatedAt: now}, {UserID: "bob", CreatedAt: now}, {UserID: "old", Until: &past, CreatedAt: now}} {
		if err := store.PutBan(ctx, b); err != nil {
			t.Fatal(err)
		}
	}
	if err := list.Reload(ctx); err != nil {
		t.Fatal(err)
	}
	if err := list.Reload(ctx); err != nil { // nothing new
		t.Fatal(err)
	}
	if fmt.Sprint(got) != "[ann bob]" {
		t.Fatalf("OnBan ran for %v, want [ann bob]", got)
	}
}
