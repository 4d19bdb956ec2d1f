package engine_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"testing"
	"time"

	"github.com/matchgate/matchgate/internal/pgtest"
	"github.com/matchgate/matchgate/internal/redistest"
	"github.com/matchgate/matchgate/matcher"
	"github.com/matchgate/matchgate/matcher/engine"
	"github.com/matchgate/matchgate/matcher/ledger"
)

// TestRaceClaimCancel races two engines on one partition against players
// cancelling, thousands of times, then checks the record: no ticket in two
// matches, no user twice in a match, every ticket exactly one outcome, and
// every cancel answer agreeing with the record.
func TestRaceClaimCancel(t *testing.T) {
	t.Run("memory+miniredis", func(t *testing.T) {
		raceClaimCancel(t, newHarness(t, raceQueue()), 2000)
	})
	t.Run("postgres+redis", func(t *testing.T) {
		rdb := redistest.Real(t)
		pg := pgtest.New(t)
		h := newHarnessWith(t, raceQueue(), rdb, redistest.Prefix(t), ledger.NewPostgres(pg))
		raceClaimCancel(t, h, 2000)
	})
}

func raceQueue() matcher.QueueConfig {
	// Everyone is in everyone's window, so every pass has plenty to claim and
	// the two engines collide on the same players.
	return matcher.QueueConfig{Name: "race", Seats: matcher.Seats{Players: 2}, SkillRules: matcher.SkillRules{Window: &matcher.Window{Points: []matcher.WindowPoint{{After: 0, Width: 1000}}}}}
}

type cancelAnswer struct {
	ticket  string
	ok      bool
	matchID string // when told ALREADY_MATCHED
}

func raceClaimCancel(t *testing.T, h *harness, players int) {
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	region := h.q.Regions[0]
	engines := []*engine.Engine{h.engines[region], h.newEngine(region)}

	tickets := make([]matcher.Ticket, players)
	for i := range tickets {
		tickets[i] = h.join(fmt.Sprintf("u%05d", i), float64(rand.IntN(100)))
	}

	var wg sync.WaitGroup
	stop := make(chan struct{})
	for _, e := range engines {
		wg.Go(func() {
			for {
				select {
				case <-stop:
					return
				default:
				}
				if _, err := e.Tick(ctx); err != nil {
					t.Errorf("tick: %v", err)
					return
				}
			}
		})
	}
	answers := make(chan cancelAnswer, players)
	var cw sync.WaitGroup
	for w := range 8 {
		cw.Go(func() {
			for i := w; i < players; i += 8 {
				if i%3 != 0 { // a third of the players try to cancel
					continue
				}
				tk := tickets[i]
				_, err := h.svc.Cancel(ctx, tk.UserID, tk.ID)
				var de *matcher.Error
				switch {
				case err == nil:
					answers <- cancelAnswer{ticket: tk.ID, ok: true}
				case errors.As(err, &de) && de.Code == matcher.CodeAlreadyMatched:
					answers <- cancelAnswer{ticket: tk.ID, matchID: de.MatchID}
				default:
					t.Errorf("cancel %s: %v", tk.ID, err)
				}
			}
		})
	}
	cw.Wait()
	close(answers)
	// Let the engines drain what is left (pairs, so at most one stays), for
	// as long as they make progress: under the race detector on a busy
	// machine this takes a while, and only a drain that stalls is a failure.
	// Progress is read from the record, not the pool: a pair claimed by a
	// pass whose commit then falls short is out of the pool until the pass
	// puts it back, while the record has it waiting all along.
	waiting := func() int {
		ws, err := h.led.Waiting(ctx, matcher.Partition{Queue: h.q.Name, Region: region})
		if err != nil {
			t.Fatal(err)
		}
		return len(ws)
	}
	last, lastChange := waiting(), time.Now()
	for d := last; d > 1 && time.Since(lastChange) < 15*time.Second && ctx.Err() == nil; d = waiting() {
		if d != last {
			last, lastChange = d, time.Now()
		}
		time.Sleep(10 * time.Millisecond)
	}
	close(stop)
	wg.Wait()

	inMatch := map[string]string{}
	outcomes := map[matcher.TicketStatus]int{}
	matches := map[string]bool{}
	for _, tk := range tickets {
		got := h.ticket(tk.ID)
		outcomes[got.Status]++
		if got.Status != matcher.StatusMatched {
			if got.MatchID != "" {
				t.Errorf("ticket %s is %s but names match %s", tk.ID, got.Status, got.MatchID)
			}
			continue
		}
		m := h.match(got.MatchID)
		matches[m.ID] = true
		seen := map[string]bool{}
		for _, p := range m.Players {
			if seen[p.UserID] {
				t.Errorf("match %s seats %s twice", m.ID, p.UserID)
			}
			seen[p.UserID] = true
			if prev, ok := inMatch[p.TicketID]; ok && prev != m.ID {
				t.Errorf("ticket %s in two matches: %s and %s", p.TicketID, prev, m.ID)
			}
			inMatch[p.TicketID] = m.ID
			if st := h.ticket(p.TicketID); st.Status != matcher.StatusMatched || st.MatchID != m.ID {
				t.Errorf("match %s seats ticket %s which the record has as %s/%s", m.ID, p.TicketID, st.Status, st.MatchID)
			}
		}
	}
	told := 0
	for a := range answers {
		told++
		got := h.ticket(a.ticket)
		switch {
		case a.ok && got.Status != matcher.StatusCancelled:
			t.Errorf("told cancelled, record says %s (match %s)", got.Status, got.MatchID)
		case !a.ok && (got.Status != matcher.StatusMatched || got.MatchID != a.matchID):
			t.Errorf("told matched in %s, record says %s/%s", a.matchID, got.Status, got.MatchID)
		}
	}
	if outcomes[matcher.StatusWaiting] > 1 {
		t.Errorf("%d tickets still waiting", outcomes[matcher.StatusWaiting])
	}
	if outcomes[matcher.StatusMatched] != 2*len(matches) {
		t.Errorf("%d matched tickets in %d pairs", outcomes[matcher.StatusMatched], len(matches))
	}
	t.Logf("%d players, %d cancel attempts: %d matched in %d matches, %d cancelled, %d waiting",
		players, told, outcomes[matcher.StatusMatched], len(matches), outcomes[matcher.StatusCancelled], outcomes[matcher.StatusWaiting])
}
