package simulate

import (
	"math"
	"math/rand/v2"
	"strconv"
	"time"
)

// arrival is one join of the stream, with what its player will do: the
// same player behaves alike in every config compared.
type arrival struct {
	n      int64 // its place in the stream
	at     time.Time
	user   string
	region string
	skill  float64
	// cancelAfter > 0: the player cancels this long after joining, if still
	// waiting.
	cancelAfter time.Duration
	// reply is how the player answers an accept window, and replyAfter how
	// long they take.
	reply      reply
	replyAfter time.Duration
}

type reply uint8

const (
	replyAccept reply = iota
	replyDecline
	replySilence
)

// stream draws the arrivals of a scenario in time order, one at a time (a
// day at 300 joins/s is 26 million of them): a Poisson process whose rate
// is constant within each hour, rate × the hour's multiplier.
type stream struct {
	sc      *Scenario
	rng     *rand.Rand
	regions regionPicker
	end     time.Time
	t       time.Time // the last arrival, or the start
	n       int64
	next    *arrival // drawn and not yet taken
	done    bool
}

func newStream(sc *Scenario) *stream {
	return &stream{
		sc: sc, rng: rand.New(rand.NewPCG(sc.Seed, 0x617272697661)), // "arriva"
		regions: newRegionPicker(sc.Regions), end: sc.Start.Add(sc.Duration), t: sc.Start,
	}
}

// peek returns the next arrival without taking it; nil once the stream
// has ended.
func (s *stream) peek() *arrival {
	if s.next == nil && !s.done {
		s.next = s.draw()
		s.done = s.next == nil
	}
	return s.next
}

// take returns the next arrival and moves on.
func (s *stream) take() *arrival {
	a := s.peek()
	s.next = nil
	return a
}

// draw is the next arrival: an exponential gap at the current hour's rate;
// a gap that crosses into the next hour starts again at its beginning,
// which the memoryless gap allows.
func (s *stream) draw() *arrival {
	if l := s.sc.Arrivals.List; len(l) > 0 {
		if s.n == int64(len(l)) {
			return nil
		}
		j := l[s.n]
		s.n++
		region := j.Region
		if region == "" {
			region = s.regions.pick(s.rng)
		}
		a := &arrival{n: s.n, at: s.sc.Start.Add(j.At), user: j.User, region: region, skill: j.Skill}
		s.behave(a)
		if t := j.told; t != nil {
			// The record's account wins where it has one; what it cannot
			// tell (an accept's delay, an answer never asked) stays drawn.
			a.cancelAfter = t.cancelAfter
			if t.replyKnown {
				a.reply = t.reply
			}
			if t.afterKnown {
				a.replyAfter = t.replyAfter
			}
		}
		return a
	}
	for {
		if !s.t.Before(s.end) {
			return nil
		}
		hourEnd := s.t.Truncate(time.Hour).Add(time.Hour)
		rate := s.sc.Arrivals.Rate * s.sc.Arrivals.Shape[s.t.Hour()]
		if rate <= 0 {
			s.t = hourEnd
			continue
		}
		gap := time.Duration(s.rng.ExpFloat64() / rate * float64(time.Second))
		at := s.t.Add(gap)
		if !at.Before(hourEnd) {
			s.t = hourEnd
			continue
		}
		s.t = at
		if !at.Before(s.end) {
			return nil
		}
		break
	}
	s.n++
	a := &arrival{n: s.n, at: s.t, user: "u" + strconv.FormatInt(s.n, 36), region: s.regions.pick(s.rng)}
	a.skill = math.Round((s.sc.Skill.Mean+s.rng.NormFloat64()*s.sc.Skill.SD)*100) / 100
	s.behave(a)
	return a
}

// behave draws what the player of a will do: cancel, and answer an accept
// window.
func (s *stream) behave(a *arrival) {
	if c := s.sc.Cancel; c.Fraction > 0 && s.rng.Float64() < c.Fraction {
		a.cancelAfter = max(c.After.draw(s.rng), time.Millisecond)
	}
	ac := s.sc.Accept
	u := s.rng.Float64() * (ac.Accept + ac.Decline + ac.Silence)
	switch {
	case u < ac.Accept:
		a.reply = replyAccept
	case u < ac.Accept+ac.Decline:
		a.reply = replyDecline
	default:
		a.reply = replySilence
	}
	a.replyAfter = ac.After.draw(s.rng)
}
