package engine_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/matchgate/matchgate/internal/redistest"
	"github.com/matchgate/matchgate/matcher"
	"github.com/matchgate/matchgate/matcher/lease"
	"github.com/matchgate/matchgate/matcher/ledger"
)

// skillService answers from a table; users in slow hang until the caller
// gives up. It counts the questions.
type skillService struct {
	mu     sync.Mutex
	skills map[string]float64
	slow   map[string]bool
	asked  int
}

func (s *skillService) Skill(ctx context.Context, user string) (float64, error) {
	s.mu.Lock()
	s.asked++
	slow := s.slow[user]
	v, ok := s.skills[user]
	s.mu.Unlock()
	if slow {
		<-ctx.Done()
		return 0, ctx.Err()
	}
	if !ok {
		return 0, errors.New("unknown user")
	}
	return v, nil
}

func (s *skillService) setSlow(user string, slow bool) {
	s.mu.Lock()
	s.slow[user] = slow
	s.mu.Unlock()
}

func (s *skillService) count() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.asked
}

// The skill service is slow: the join does not wait for it past the
// timeout, the ticket carries the player's last known skill marked
// estimated, and the estimated player's window starts at estimatedMinWidth,
// which matches them where a known skill would not have been.
func TestSkillServiceSlow(t *testing.T) {
	svc := &skillService{skills: map[string]float64{"gia": 110}, slow: map[string]bool{}}
	q := matcher.QueueConfig{
		Name:       "duel",
		Seats:      matcher.Seats{Players: 2},
		SkillRules: matcher.SkillRules{EstimatedMinWidth: 15, Window: &matcher.Window{Points: []matcher.WindowPoint{{After: 0, Width: 5}}}},
	}
	h := newHarness(t, q, withSkill(svc, 30*time.Millisecond))
	ctx := context.Background()

	// A first join while the service answers: the skill is known (and
	// remembered); 10 away from the other player, it is outside ±5.
	first := h.joinReq(matcher.JoinRequest{UserID: "gia"})
	if first.Skill != 110 || first.Estimated {
		t.Fatalf("answered skill = %v estimated=%v", first.Skill, first.Estimated)
	}
	known := 100.0
	h.join("hal", known)
	if res := h.tick(); res.Matches != 0 {
		t.Fatal("matched 10 apart with ±5 windows")
	}
	if _, err := h.svc.Cancel(ctx, "gia", first.ID); err != nil {
		t.Fatal(err)
	}

	// The service turns slow: the join answers within the timeout, with
	// the last known skill, estimated.
	svc.setSlow("gia", true)
	start := time.Now()
	again := h.joinReq(matcher.JoinRequest{UserID: "gia"})
	if took := time.Since(start); took > time.Second {
		t.Fatalf("join waited %v for a slow skill service", took)
	}
	if again.Skill != 110 || !again.Estimated {
		t.Fatalf("slow service: skill %v estimated=%v, want the last known 110, estimated", again.Skill, again.Estimated)
	}
	// The estimated anchor's window is ±15: the match forms.
	if res := h.tick(); res.Matches != 1 {
		t.Fatal("the estimated player's wider window did not match")
	}
	if got := h.seated(again.ID); !slices.Equal(got, []string{"gia", "hal"}) {
		t.Fatalf("matched %v", got)
	}
	// Nobody known: the default 50, estimated. The token's skill needs
	// no question at all.
	svc.setSlow("ivo", true)
	def := h.joinReq(matcher.JoinRequest{UserID: "ivo"})
	if def.Skill != 50 || !def.Estimated {
		t.Fatalf("unknown player: skill %v estimated=%v", def.Skill, def.Estimated)
	}
	asked := svc.count()
	h.join("jan", 70)
	for range 3 {
		h.tick()
	}
	if svc.count() != asked {
		t.Fatal("the skill service was asked outside a join without a skill")
	}
}

// A priority head start moves the wait order, capped by priorityCap; the
// deadline ignores it.
func TestPriorityCapped(t *testing.T) {
	q := matcher.QueueConfig{
		Name:       "ranked",
		Seats:      matcher.Seats{Players: 3},
		SkillRules: matcher.SkillRules{Window: &matcher.Window{Points: []matcher.WindowPoint{{After: 0, Width: 100}}}},
		Timing:     matcher.Timing{PriorityCap: 30 * time.Second, Deadline: 5 * time.Minute},
	}
	h := newHarness(t, q)
	h.join("xia", 100)
	h.advance(20 * time.Second)
	h.join("yul", 100)
	h.advance(10 * time.Second)
	w := h.join("wes", 100)
	h.advance(10 * time.Second)
	// p asks for 2 minutes of head start and gets the cap, 30 s.
	p := h.joinReq(matcher.JoinRequest{UserID: "pam", Skill: ptr(100.0), Priority: 2 * time.Minute})
	if p.HeadStart != 30*time.Second || !p.Deadline.Equal(p.EnqueuedAt.Add(5*time.Minute)) {
		t.Fatalf("head start %v, deadline %v after %v", p.HeadStart, p.Deadline, p.EnqueuedAt)
	}
	// Wait order: xia (t0), pam (t0+40s-30s), yul (t0+20s), wes (t0+30s).
	var order []string
	for _, e := range h.entries("ranked:global") {
		order = append(order, e.UserID)
	}
	if !slices.Equal(order, []string{"xia", "pam", "yul", "wes"}) {
		t.Fatalf("wait order %v", order)
	}
	if res := h.tick(); res.Matches != 1 {
		t.Fatal("no match")
	}
	if got := h.seated(p.ID); !slices.Equal(got, []string{"pam", "xia", "yul"}) {
		t.Fatalf("matched %v; the head start should seat pam before wes", got)
	}
	if h.ticket(w.ID).Status != matcher.StatusWaiting {
		t.Fatal("wes was matched")
	}
	// The deadline is untouched: a priority player alone waits out their
	// full five minutes, and is resolved at it.
	lone := h.joinReq(matcher.JoinRequest{UserID: "zed", Skill: ptr(900.0), Priority: time.Minute})
	h.advance(5*time.Minute - 31*time.Second)
	h.tick()
	if h.ticket(lone.ID).Status != matcher.StatusWaiting {
		t.Fatal("the head start moved the deadline")
	}
	h.advance(31 * time.Second)
	h.tick()
	if st := h.ticket(lone.ID).Status; st == matcher.StatusWaiting {
		t.Fatal("not resolved at the deadline")
	}
	if _, err := h.svc.Join(context.Background(), matcher.JoinRequest{UserID: "neg", Queue: "ranked", Skill: ptr(1.0), Priority: -time.Hour}); err != nil {
		t.Fatalf("a negative priority is none: %v", err)
	}
}

func ptr[T any](v T) *T { return &v }

// Distance is a weighted sum of skill and activity, against the same
// window: with an activity weight, the player of similar activity is chosen
// over the one who joined first. The activity is on the record, so a
// rebuilt pool matches the same.
func TestActivityDimension(t *testing.T) {
	for _, wipe := range []bool{false, true} {
		t.Run(fmt.Sprintf("wiped=%v", wipe), func(t *testing.T) {
			rdb := redistest.Mini(t)
			q := matcher.QueueConfig{
				Name:       "casual",
				Seats:      matcher.Seats{Players: 2},
				SkillRules: matcher.SkillRules{Weights: map[string]float64{"skill": 1, "activity": 10}, Window: &matcher.Window{Points: []matcher.WindowPoint{{After: 0, Width: 5}}}},
			}
			h := newHarnessWith(t, q, rdb, "mg", ledger.NewMemory())
			a := h.joinReq(matcher.JoinRequest{UserID: "amy", Skill: ptr(100.0), Activity: ptr(0.1)})
			h.advance(time.Millisecond)
			h.joinReq(matcher.JoinRequest{UserID: "bo", Skill: ptr(102.0), Activity: ptr(0.9)}) // 2 + 8 = 10 away
			h.advance(time.Millisecond)
			h.joinReq(matcher.JoinRequest{UserID: "cy", Skill: ptr(103.0), Activity: ptr(0.15)}) // 3 + 0.5
			if got := h.ticket(a.ID).Activity; got != 0.1 {
				t.Fatalf("activity on the record %v", got)
			}
			if wipe {
				ctx := context.Background()
				if err := rdb.FlushAll(ctx).Err(); err != nil {
					t.Fatal(err)
				}
				if _, err := lease.Reconcile(ctx, h.led, h.pool, matcher.Partition{Queue: "casual", Region: "global"}, h.clock()); err != nil {
					t.Fatal(err)
				}
			}
			if res := h.tick(); res.Matches != 1 {
				t.Fatalf("formed %d", res.Matches)
			}
			if got := h.seated(a.ID); !slices.Equal(got, []string{"amy", "cy"}) {
				t.Fatalf("matched %v, want amy with cy (similar activity)", got)
			}
		})
	}
}
