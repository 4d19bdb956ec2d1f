package simulate

import (
	"container/heap"
	"context"

	"github.com/matchgate/matchgate/matcher"
	"github.com/matchgate/matchgate/matcher/engine"
)

// passes are what every kind of run shares: the engines of its
// partitions, when each is woken, the players' and providers' timed
// actions, and the figures every run keeps. collect reads what a pass or
// an action published (the run's own take).
type passes struct {
	ctx     context.Context
	sc      *Scenario
	clock   *vclock
	acc     *accum
	collect func() error
	engines []*engine.Engine
	// byPart is each partition's engine, by index; wakeAt when each is to
	// pass for a wake (unix ns, 0: none), the earliest of them nextWake.
	byPart   map[string]int
	wakeAt   []int64
	nextWake int64
	timed    timedHeap
	seq      int64
	// live are the tickets not resolved yet, by id.
	live map[string]*live
}

func newPasses(ctx context.Context, sc *Scenario, clock *vclock) passes {
	return passes{ctx: ctx, sc: sc, clock: clock, acc: newAccum(), byPart: map[string]int{}, live: map[string]*live{}}
}

// add is the engine of one partition.
func (s *passes) add(partition string, e *engine.Engine) {
	s.byPart[partition] = len(s.engines)
	s.engines = append(s.engines, e)
	s.wakeAt = append(s.wakeAt, 0)
}

// woken is the Service's Wake: the partition's engine passes after the
// scenario's wake delay, unless a pass for a wake is due by then.
func (s *passes) woken(p matcher.Partition) {
	if i, ok := s.byPart[p.String()]; ok && !s.sc.Wake.Off {
		s.wakeEngine(i)
	}
}

// wakeEngine asks engine i for a pass after the wake delay.
func (s *passes) wakeEngine(i int) {
	at := s.clock.now.Add(s.sc.Wake.Delay).UnixNano()
	if s.wakeAt[i] == 0 || at < s.wakeAt[i] {
		s.wakeAt[i] = at
	}
	if s.nextWake == 0 || at < s.nextWake {
		s.nextWake = at
	}
}

// wakePass runs the passes of the engines woken for now.
func (s *passes) wakePass() error {
	now := s.clock.now.UnixNano()
	s.nextWake = 0
	for i, at := range s.wakeAt {
		if at == 0 {
			continue
		}
		if at <= now {
			s.wakeAt[i] = 0
			if err := s.passOne(i); err != nil {
				return err
			}
			continue
		}
		if s.nextWake == 0 || at < s.nextWake {
			s.nextWake = at
		}
	}
	// The passes may have woken engines again (a requeue): keep the
	// earliest.
	for _, at := range s.wakeAt {
		if at != 0 && (s.nextWake == 0 || at < s.nextWake) {
			s.nextWake = at
		}
	}
	return nil
}

// joined books a join the Service took: its ticket live, the hour's
// count, the player's cancel to come.
func (s *passes) joined(t matcher.Ticket, a *arrival) {
	hr := t.EnqueuedAt.Hour()
	s.live[t.ID] = &live{user: a.user, enq: t.EnqueuedAt, joinHr: hr, arrival: a}
	s.acc.joined(hr)
	if a.cancelAfter > 0 {
		s.schedule(timed{at: t.EnqueuedAt.Add(a.cancelAfter).UnixNano(), kind: evCancel, user: a.user, ticket: t.ID})
	}
}

func (s *passes) schedule(t timed) {
	s.seq++
	t.seq = s.seq
	heap.Push(&s.timed, t)
}

// pass is every engine's Tick at one instant, in partition order.
func (s *passes) pass() error {
	for i := range s.engines {
		if err := s.passOne(i); err != nil {
			return err
		}
	}
	return nil
}

// passOne is one engine's pass. As the engine's Run, a pass that formed
// matches wakes the engine again: its next pass comes after the wake
// delay, which stands for the time a pass takes; with wakes off, at once
// (a bounded number of times).
func (s *passes) passOne(i int) error {
	for range maxRepeats {
		res, err := s.engines[i].Tick(s.ctx)
		s.acc.passes++
		if err != nil {
			// The stores are in memory: a failed pass is a fault of the
			// run, counted and reported.
			s.acc.passErrors++
		}
		if err := s.collect(); err != nil {
			return err
		}
		if err != nil || res.Matches == 0 {
			return nil
		}
		if !s.sc.Wake.Off {
			s.wakeEngine(i)
			return nil
		}
	}
	return nil
}
