package engine_test

import (
	"context"
	"testing"
	"time"

	"github.com/matchgate/matchgate/internal/pgtest"
	"github.com/matchgate/matchgate/internal/redistest"
	"github.com/matchgate/matchgate/matcher"
	"github.com/matchgate/matchgate/matcher/ledger"
)

// One live match at a time (README): a player whose match waits for the
// accepts is refused ALREADY_MATCHED, naming it; once it is READY the
// player may join again.
func TestJoinRefusedWhileAMatchWaitsForAccepts(t *testing.T) {
	for name, led := range map[string]func(t *testing.T) matcher.Ledger{
		"memory":   func(*testing.T) matcher.Ledger { return ledger.NewMemory() },
		"postgres": func(t *testing.T) matcher.Ledger { return ledger.NewPostgres(pgtest.New(t)) },
	} {
		t.Run(name, func(t *testing.T) {
			q := matcher.QueueConfig{Name: "arena", Seats: matcher.Seats{Players: 2}, AcceptRules: matcher.AcceptRules{AcceptWindow: 10 * time.Second}}
			h := newHarnessWith(t, q, redistest.Mini(t), "mg", led(t))
			ctx := context.Background()
			h.join("ann", 50)
			h.join("ben", 50)
			if res := h.tick(); res.Matches != 1 {
				t.Fatalf("tick = %+v, want one match", res)
			}
			st, err := h.svc.UserState(ctx, "ann")
			if err != nil || len(st.Matches) != 1 || st.Matches[0].State != matcher.MatchPendingAccept {
				t.Fatalf("state of ann = %+v, %v", st, err)
			}
			m := st.Matches[0]
			skill := 50.0
			_, err = h.svc.Join(ctx, matcher.JoinRequest{UserID: "ann", Queue: "arena", Skill: &skill})
			if e := mustCode(t, "join while pending", err, matcher.CodeAlreadyMatched); e.MatchID != m.ID {
				t.Fatalf("ALREADY_MATCHED names %q, want %s", e.MatchID, m.ID)
			}
			for _, u := range []string{"ann", "ben"} {
				if _, err := h.svc.Accept(ctx, u, m.ID); err != nil {
					t.Fatal(err)
				}
			}
			if got := h.match(m.ID); got.State != matcher.MatchReady {
				t.Fatalf("match is %s, want READY", got.State)
			}
			// READY: matchgate does not learn when the game ends.
			if tk := h.join("ann", 50); tk.Status != matcher.StatusWaiting {
				t.Fatalf("join after READY = %+v", tk)
			}
		})
	}
}
