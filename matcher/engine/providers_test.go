package engine_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/matchgate/matchgate/matcher"
	"github.com/matchgate/matchgate/provider"
	providerpool "github.com/matchgate/matchgate/provider/pool"
	"github.com/matchgate/matchgate/provider/record"
)

// providerHarness is a harness for a provider queue, with the live pool
// and the record of assignments in memory.
type providerHarness struct {
	*harness
	live *providerpool.Memory
	rec  *record.Memory
}

func newProviderHarness(t *testing.T, q matcher.QueueConfig) *providerHarness {
	t.Helper()
	q.Kind = matcher.KindProvider
	live, rec := providerpool.NewMemory(), record.NewMemory()
	return &providerHarness{harness: newHarness(t, q, withProviders(live, rec)), live: live, rec: rec}
}

func (h *providerHarness) online(user string, capacity int, a provider.Attributes) {
	h.t.Helper()
	if _, err := h.svc.ProviderOnline(context.Background(), h.q.Name, user, "s-"+user, capacity, a); err != nil {
		h.t.Fatalf("online %s: %v", user, err)
	}
}

func (h *providerHarness) request(user string, attrs map[string]string) matcher.Ticket {
	h.t.Helper()
	t, err := h.svc.Join(context.Background(), matcher.JoinRequest{UserID: user, Queue: h.q.Name, Region: h.q.Regions[0], Attributes: attrs})
	if err != nil {
		h.t.Fatalf("join %s: %v", user, err)
	}
	return t
}

func (h *providerHarness) held(user string) int {
	h.t.Helper()
	p, _, err := h.live.Get(context.Background(), h.q.Name, user, h.clock())
	if err != nil {
		h.t.Fatal(err)
	}
	return p.Used
}

func en(rating float64, specialties ...string) provider.Attributes {
	return provider.Attributes{Languages: []string{"en"}, Specialties: specialties, SessionTypes: []string{"chat"}, Rating: rating}
}

func TestProviderQueueGivesEachRequesterTheBestFreeProvider(t *testing.T) {
	ctx := context.Background()
	h := newProviderHarness(t, matcher.QueueConfig{Name: "advice",
		SkillRules: matcher.SkillRules{Weights: map[string]float64{"specialty": 2, "rating": 1, "load": 1, "wait": 1}}})
	h.online("ana", 1, en(4.9, "tax"))
	h.online("bo", 1, en(3.0, "law"))
	h.online("cy", 2, provider.Attributes{Languages: []string{"fr"}, Rating: 5})

	a := h.request("u1", map[string]string{"language": "en", "specialty": "tax"})
	if res := h.tick(); res.Matches != 1 {
		t.Fatalf("tick formed %d matches, want 1", res.Matches)
	}
	m := h.match(h.ticket(a.ID).MatchID)
	if m.Provider == nil || m.Provider.UserID != "ana" || m.State != matcher.MatchReady || len(m.Players) != 1 {
		t.Fatalf("match = %+v provider %+v, want READY with ana", m, m.Provider)
	}
	if m.Provider.Score <= 0 || m.Provider.Parts["specialty"] == 0 {
		t.Fatalf("score %v parts %v: want the specialty's part", m.Provider.Score, m.Provider.Parts)
	}
	as, err := h.rec.Live(ctx, "advice", "ana")
	if err != nil || len(as) != 1 || as[0].ID != m.ID || as[0].Status != provider.StatusAccepted {
		t.Fatalf("ana's live assignments = %+v, %v", as, err)
	}
	if h.held("ana") != 1 {
		t.Fatalf("ana holds %d slots, want 1", h.held("ana"))
	}

	// ana is full, cy speaks no English: bo takes the next one, and the
	// third waits, told why.
	b := h.request("u2", map[string]string{"language": "en"})
	h.advance(time.Second) // u2 waits longer: its wait term wins the tie
	c := h.request("u3", map[string]string{"language": "en"})
	h.tick()
	if got := h.match(h.ticket(b.ID).MatchID).Provider.UserID; got != "bo" {
		t.Fatalf("u2 went to %s, want bo", got)
	}
	if st := h.ticket(c.ID).Status; st != matcher.StatusWaiting {
		t.Fatalf("u3 is %s, want WAITING", st)
	}
	v, err := h.svc.Ticket(ctx, "u3", c.ID)
	if err != nil {
		t.Fatal(err)
	}
	if v.Explain == nil || v.Explain.Missing != matcher.MissingProvider || !strings.Contains(v.Explain.NoProvider, "2 at capacity") ||
		!strings.Contains(v.Explain.NoProvider, "1 without language en") {
		t.Fatalf("explain = %+v", v.Explain)
	}

	// ana ends her session: her slot takes u3.
	if _, err := h.svc.EndAssignment(ctx, "bo", m.ID); err == nil {
		t.Fatal("bo ended ana's assignment")
	}
	ended, err := h.svc.EndAssignment(ctx, "ana", m.ID)
	if err != nil || ended.Status != provider.StatusEnded {
		t.Fatalf("end = %+v, %v", ended, err)
	}
	h.tick()
	if got := h.match(h.ticket(c.ID).MatchID).Provider.UserID; got != "ana" {
		t.Fatalf("u3 went to %s, want ana", got)
	}
}

func TestProviderQueueRefusesPreferencesThatDoNotParse(t *testing.T) {
	h := newProviderHarness(t, matcher.QueueConfig{Name: "advice"})
	_, err := h.svc.Join(context.Background(), matcher.JoinRequest{UserID: "u", Queue: "advice", Attributes: map[string]string{"minRating": "lots"}})
	var me *matcher.Error
	if !errors.As(err, &me) || me.Code != matcher.CodeBadRequest {
		t.Fatalf("join = %v, want BAD_REQUEST", err)
	}
}

func TestProviderAcceptWindow(t *testing.T) {
	ctx := context.Background()
	q := matcher.QueueConfig{Name: "advice", AcceptRules: matcher.AcceptRules{AcceptWindow: 15 * time.Second}}

	t.Run("accepted by the provider only", func(t *testing.T) {
		h := newProviderHarness(t, q)
		h.online("ana", 1, en(4))
		tk := h.request("u1", nil)
		h.tick()
		m := h.match(h.ticket(tk.ID).MatchID)
		if m.State != matcher.MatchPendingAccept || m.Provider.UserID != "ana" {
			t.Fatalf("match %+v", m)
		}
		if _, err := h.svc.Accept(ctx, "u1", m.ID); err == nil {
			t.Fatal("the requester accepted the provider's offer")
		}
		got, err := h.svc.Accept(ctx, "ana", m.ID)
		if err != nil || got.State != matcher.MatchReady {
			t.Fatalf("accept = %+v, %v", got, err)
		}
		if a, err := h.rec.Get(ctx, m.ID); err != nil || a.Status != provider.StatusAccepted {
			t.Fatalf("assignment = %+v, %v", a, err)
		}
	})

	t.Run("declined: the requester keeps the place, the slot is freed, the next provider is offered it", func(t *testing.T) {
		h := newProviderHarness(t, q)
		h.online("ana", 1, en(4))
		tk := h.request("u1", nil)
		h.tick()
		id := h.ticket(tk.ID).MatchID
		if _, err := h.svc.Decline(ctx, "ana", id); err != nil {
			t.Fatal(err)
		}
		back := h.ticket(tk.ID)
		if back.Status != matcher.StatusWaiting || !back.EnqueuedAt.Equal(tk.EnqueuedAt) || !back.Deadline.Equal(tk.Deadline) {
			t.Fatalf("after the decline the ticket is %+v, want WAITING in its place", back)
		}
		if a, _ := h.rec.Get(ctx, id); a.Status != provider.StatusDeclined {
			t.Fatalf("assignment is %s", a.Status)
		}
		if h.held("ana") != 0 {
			t.Fatal("the declined slot is still held")
		}
		// Never to ana again: it waits, told why, until another provider
		// comes.
		h.tick()
		if again := h.ticket(tk.ID); again.Status != matcher.StatusWaiting {
			t.Fatalf("after the next pass the ticket is %+v: offered again to the provider that declined it", again)
		}
		if v, err := h.svc.Ticket(ctx, "u1", tk.ID); err != nil || v.Explain.NoProvider != "1 online: 1 refused an offer of this requester" {
			t.Fatalf("explain = %+v, %v", v.Explain, err)
		}
		h.online("bo", 1, en(3))
		h.tick()
		if again := h.ticket(tk.ID); again.Status != matcher.StatusMatched || h.match(again.MatchID).Provider.UserID != "bo" {
			t.Fatalf("after bo came the ticket is %+v", again)
		}
	})

	t.Run("silent provider: the window passes, the requester keeps the place", func(t *testing.T) {
		h := newProviderHarness(t, q)
		h.online("ana", 1, en(4))
		tk := h.request("u1", nil)
		h.tick()
		id := h.ticket(tk.ID).MatchID
		h.advance(16 * time.Second)
		h.online("ana", 1, en(4)) // still connected: refreshed
		h.tick()
		if m := h.match(id); m.State != matcher.MatchDissolved {
			t.Fatalf("match is %s after its window", m.State)
		}
		if a, _ := h.rec.Get(ctx, id); !a.Status.Final() {
			t.Fatalf("assignment is %s after its window", a.Status)
		}
		if st := h.ticket(tk.ID); st.Status == matcher.StatusCancelled || st.Status == matcher.StatusExpired {
			t.Fatalf("the requester lost the place: %+v", st)
		}
	})
}

// Requesters of two regions race for the same providers, each region's
// engine passing concurrently, while sessions end at random: no provider
// ever holds more live assignments than its capacity, in the live pool or
// in the record, and every requester is served once.
func TestProviderCapacityHoldsUnderRacingPasses(t *testing.T) {
	ctx := context.Background()
	h := newProviderHarness(t, matcher.QueueConfig{Name: "advice", RegionRules: matcher.RegionRules{Regions: []string{"eu", "na"}}})
	const providers, capacity, requesters = 5, 3, 400
	for i := range providers {
		h.online(fmt.Sprintf("p%d", i), capacity, en(float64(i)))
	}
	regions := []string{"eu", "na"}
	for i := range requesters {
		r := regions[i%2]
		if _, err := h.svc.Join(ctx, matcher.JoinRequest{UserID: fmt.Sprintf("u%d", i), Queue: "advice", Region: r}); err != nil {
			t.Fatal(err)
		}
	}
	rng := rand.New(rand.NewPCG(1, 2))
	served := map[string]bool{}
	violations, rounds := 0, 0
	for ; rounds < 400 && len(served) < requesters; rounds++ {
		var wg sync.WaitGroup
		for _, r := range regions {
			wg.Go(func() {
				if _, err := h.engines[r].Tick(ctx); err != nil {
					t.Error(err)
				}
			})
		}
		wg.Wait()
		for i := range providers {
			p := fmt.Sprintf("p%d", i)
			as, err := h.rec.Live(ctx, "advice", p)
			if err != nil {
				t.Fatal(err)
			}
			if len(as) > capacity || h.held(p) > capacity {
				violations++
			}
			for _, a := range as {
				served[a.TicketID] = true
				if rng.IntN(3) == 0 {
					if _, err := h.svc.EndAssignment(ctx, p, a.ID); err != nil {
						t.Fatal(err)
					}
				}
			}
		}
	}
	if violations > 0 {
		t.Fatalf("%d capacity violations in %d rounds", violations, rounds)
	}
	if len(served) != requesters {
		t.Fatalf("%d of %d requesters served in %d rounds", len(served), requesters, rounds)
	}
	t.Logf("%d requesters served by %d providers of capacity %d in %d racing rounds", requesters, providers, capacity, rounds)
}

func TestProviderGoingOfflineWithdrawsItsOffers(t *testing.T) {
	ctx := context.Background()
	h := newProviderHarness(t, matcher.QueueConfig{Name: "advice", AcceptRules: matcher.AcceptRules{AcceptWindow: 15 * time.Second},
		SkillRules: matcher.SkillRules{Weights: map[string]float64{"rating": 1}}})
	h.online("ana", 1, en(5))
	h.online("bo", 1, en(3))
	tk := h.request("u1", nil)
	h.tick()
	first := h.match(h.ticket(tk.ID).MatchID)
	if first.Provider.UserID != "ana" {
		t.Fatalf("offered to %s, want ana (better rated)", first.Provider.UserID)
	}
	if ok, err := h.svc.ProviderOffline(ctx, "advice", "ana", "another session"); err != nil || ok {
		t.Fatalf("offline by another session = %v, %v: want refused", ok, err)
	}
	if ok, err := h.svc.ProviderOffline(ctx, "advice", "ana", "s-ana"); err != nil || !ok {
		t.Fatalf("offline = %v, %v", ok, err)
	}
	if m := h.match(first.ID); m.State != matcher.MatchDissolved {
		t.Fatalf("ana's open offer is %s after she went offline", m.State)
	}
	if st := h.ticket(tk.ID); st.Status != matcher.StatusWaiting || !st.EnqueuedAt.Equal(tk.EnqueuedAt) {
		t.Fatalf("the requester is %+v", st)
	}
	h.tick()
	if got := h.match(h.ticket(tk.ID).MatchID).Provider.UserID; got != "bo" {
		t.Fatalf("offered next to %s, want bo", got)
	}
}

func TestProviderConstraintsRelaxWithTheWait(t *testing.T) {
	ctx := context.Background()
	h := newProviderHarness(t, matcher.QueueConfig{Name: "advice",
		ProviderRules: matcher.ProviderRules{Relax: []provider.Relax{{After: 20 * time.Second, Drop: provider.ConstraintSpecialty}},
			Shed: []provider.Tier{{Above: 0, Drop: []string{provider.TermLoad}}}}})
	h.online("ana", 1, en(4, "law"))
	tk := h.request("u1", map[string]string{"language": "en", "specialty": "tax"})
	h.tick()
	v, err := h.svc.Ticket(ctx, "u1", tk.ID)
	if err != nil {
		t.Fatal(err)
	}
	if v.Ticket.Status != matcher.StatusWaiting || v.Explain.NoProvider != "1 online: 1 without specialty tax" || len(v.Explain.Relaxed) != 0 || v.Explain.ShedTier != 1 {
		t.Fatalf("before the relax: %+v %+v", v.Ticket.Status, v.Explain)
	}
	h.advance(20 * time.Second)
	h.online("ana", 1, en(4, "law"))
	h.tick()
	m := h.match(h.ticket(tk.ID).MatchID)
	if m.Provider.UserID != "ana" {
		t.Fatalf("after the relax: %+v", m)
	}
	if _, shed := m.Provider.Parts[provider.TermLoad]; shed {
		t.Fatalf("parts %v: the load term is shed at tier 1", m.Provider.Parts)
	}
}

// A head of the line nobody online can serve leaves no slot idle for the
// requesters behind it: the pass reads on past the oldest 512.
func TestProviderPassReadsOnPastAnUnservableHead(t *testing.T) {
	h := newProviderHarness(t, matcher.QueueConfig{Name: "advice"})
	h.online("ana", 100, en(4))
	for i := range 600 {
		lang := "xx"
		if i >= 550 {
			lang = "en"
		}
		h.request(fmt.Sprintf("u%d", i), map[string]string{"language": lang})
		h.advance(time.Millisecond)
	}
	if res := h.tick(); res.Matches != 50 {
		t.Fatalf("one pass formed %d matches, want the 50 that ana can serve behind 550 she cannot", res.Matches)
	}
	if h.held("ana") != 50 {
		t.Fatalf("ana holds %d", h.held("ana"))
	}
}

// A requester still waiting when its wait drops a constraint is pushed a
// ticket.update naming the constraints dropped; one matched by that pass
// is pushed the match instead.
func TestProviderRelaxIsPushed(t *testing.T) {
	h := newProviderHarness(t, matcher.QueueConfig{Name: "advice",
		ProviderRules: matcher.ProviderRules{Relax: []provider.Relax{
			{After: 10 * time.Second, Drop: provider.ConstraintSpecialty}, {After: 30 * time.Second, Drop: provider.ConstraintLanguage}}}})
	h.online("cy", 1, provider.Attributes{Languages: []string{"fr"}, Rating: 4})
	tk := h.request("u1", map[string]string{"language": "en", "specialty": "tax"})
	relaxPushes := func() [][]string {
		h.pushed.mu.Lock()
		defer h.pushed.mu.Unlock()
		var out [][]string
		for _, e := range h.pushed.events {
			if e.Kind == matcher.EventTicketUpdated && e.Ticket.ID == tk.ID && e.Ticket.Relaxed != nil {
				out = append(out, e.Ticket.Relaxed)
			}
		}
		return out
	}
	h.tick()
	if got := relaxPushes(); len(got) != 0 {
		t.Fatalf("pushed %v before any relax", got)
	}
	h.advance(11 * time.Second)
	h.online("cy", 1, provider.Attributes{Languages: []string{"fr"}, Rating: 4})
	h.tick()
	h.tick() // told once
	if got := relaxPushes(); len(got) != 1 || len(got[0]) != 1 || got[0][0] != provider.ConstraintSpecialty {
		t.Fatalf("relax pushes %v, want one naming specialty", got)
	}
	if st := h.ticket(tk.ID); st.Status != matcher.StatusWaiting || st.Version != tk.Version {
		t.Fatalf("the relax changed the ticket: %+v", st)
	}
	h.advance(20 * time.Second)
	h.online("cy", 1, provider.Attributes{Languages: []string{"fr"}, Rating: 4})
	h.tick()
	if got := relaxPushes(); len(got) != 1 {
		t.Fatalf("relax pushes %v: the pass that matched it pushed a relax too", got)
	}
	if m := h.match(h.ticket(tk.ID).MatchID); m.Provider.UserID != "cy" {
		t.Fatalf("matched %+v", m)
	}
}

// An assignment recorded by a pass that died before its commit (no match
// in the record) holds no slot once its provider comes online again.
func TestProviderOrphanedAssignmentIsEnded(t *testing.T) {
	ctx := context.Background()
	h := newProviderHarness(t, matcher.QueueConfig{Name: "advice"})
	tk := h.request("u1", nil)
	orphan := provider.Assignment{ID: "0a0a0000-0000-4000-8000-000000000001", Queue: "advice", TicketID: tk.ID,
		Requester: "u1", Provider: "ana", Score: 1, OfferedAt: h.clock()}
	if _, err := h.rec.Offer(ctx, orphan, 1); err != nil {
		t.Fatal(err)
	}
	h.online("ana", 1, en(4))
	if h.held("ana") != 1 {
		t.Fatalf("a fresh assignment without its match yet holds %d slots, want 1 (its commit may be under way)", h.held("ana"))
	}
	h.advance(2 * time.Minute)
	h.online("ana", 1, en(4))
	if a, _ := h.rec.Get(ctx, orphan.ID); a.Status != provider.StatusEnded || h.held("ana") != 0 {
		t.Fatalf("the orphan is %s and ana holds %d slots", a.Status, h.held("ana"))
	}
}

// A requester no provider can serve expires at its deadline, and the
// pass goes on: the requester behind it is still offered a provider.
func TestProviderRequesterExpiresAtItsDeadline(t *testing.T) {
	h := newProviderHarness(t, matcher.QueueConfig{Name: "advice", Timing: matcher.Timing{Deadline: time.Minute}})
	h.online("ana", 1, en(4))
	lost := h.request("u1", map[string]string{"language": "fr"})
	h.tick()
	if got := h.ticket(lost.ID).Status; got != matcher.StatusWaiting {
		t.Fatalf("before its deadline: %s", got)
	}
	h.advance(time.Minute + time.Second)
	h.online("ana", 1, en(4))
	served := h.request("u2", map[string]string{"language": "en"})
	h.tick()
	h.tick()
	if got := h.ticket(lost.ID).Status; got != matcher.StatusExpired {
		t.Fatalf("past its deadline: %s, want EXPIRED", got)
	}
	if tk := h.ticket(served.ID); tk.Status != matcher.StatusMatched || h.match(tk.MatchID).Provider.UserID != "ana" {
		t.Fatalf("the requester behind it: %+v", tk)
	}
}
