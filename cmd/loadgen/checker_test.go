package main

import (
	"strings"
	"testing"
	"time"
)

var tm0 = time.Date(2025, 1, 1, 12, 0, 0, 0, time.UTC)

// clock is the instant at which the next test observation is told; at
// moves it forward, so observations are ordered as written.
var clock = tm0.Add(time.Hour)

func at() time.Time {
	clock = clock.Add(time.Millisecond)
	return clock
}

// cleanRun is what a correct server shows: two matches, a cancel, a cancel
// that lost, a reconnect learning its outcome from hello, a REST player.
func cleanRun() *Checker {
	c := NewChecker()
	c.SetCutoff(tm0.Add(time.Minute))
	for _, t := range []struct{ ticket, user string }{{"t1", "a"}, {"t2", "b"}, {"t3", "c"}, {"t4", "d"}, {"t5", "e"}, {"t6", "f"}} {
		c.Joined(t.ticket, t.user, t.user == "f")
	}
	c.Match("m1", []Seat{{"t1", "a"}, {"t2", "b"}}, tm0)
	c.Match("m1", []Seat{{"t2", "b"}, {"t1", "a"}}, tm0) // the other player's copy
	c.Tell("t1", "a", "MATCHED", "m1", srcPush, at())
	c.Tell("t2", "b", "MATCHED", "m1", srcPush, at())
	c.Tell("t2", "b", "MATCHED", "m1", srcReply, at()) // its cancel lost
	c.Tell("t2", "b", "MATCHED", "m1", srcVerify, at())
	c.Tell("t3", "c", "CANCELLED", "", srcReply, at())
	c.Tell("t3", "c", statusEnded, "", srcReply, at()) // a retried cancel: ALREADY_CANCELLED
	c.Tell("t3", "c", "CANCELLED", "", srcVerify, at())
	c.Match("m2", []Seat{{"t4", "d"}, {"t6", "f"}}, tm0)
	c.Tell("t4", "d", "MATCHED", "m2", srcHello, at())
	c.Tell("t6", "f", "MATCHED", "m2", srcPoll, at())
	c.Tell("t5", "e", "WAITING", "", srcHello, at()) // ignored: not an outcome
	c.Tell("t5", "e", "WAITING", "", srcVerify, at())
	return c
}

func TestCheckerCleanRun(t *testing.T) {
	c := cleanRun()
	if v := c.Check(); len(v) != 0 {
		t.Fatalf("violations in a clean run:\n%s", strings.Join(v, "\n"))
	}
	if u := c.Unresolved(); len(u) != 0 {
		t.Fatalf("unresolved %v: t5 has a verified WAITING", u)
	}
	if n, m := c.Counts(); n != 6 || m != 2 {
		t.Fatalf("counts %d %d", n, m)
	}
}

func TestCheckerViolations(t *testing.T) {
	cases := []struct {
		name string
		add  func(c *Checker)
		want string
	}{
		{"ticket in two matches", func(c *Checker) {
			c.Match("m9", []Seat{{"t1", "a"}, {"t5", "e"}}, tm0)
		}, "ticket t1 is in two matches"},
		{"user twice in a match", func(c *Checker) {
			c.Match("m9", []Seat{{"t7", "g"}, {"t8", "g"}}, tm0)
		}, "user g is seated twice in match m9"},
		{"match seen with other players", func(c *Checker) {
			c.Match("m1", []Seat{{"t1", "a"}, {"t5", "e"}}, tm0)
		}, "match m1 was seen with different players"},
		{"two outcomes", func(c *Checker) {
			c.Tell("t3", "c", "MATCHED", "m1", srcPush, at())
		}, "ticket t3 of c was told two outcomes"},
		{"two matches told", func(c *Checker) {
			c.Tell("t1", "a", "MATCHED", "m2", srcHello, at())
		}, "ticket t1 of a was told two outcomes"},
		{"GET disagrees", func(c *Checker) {
			c.Tell("t4", "d", "WAITING", "", srcVerify, at())
		}, "GET says WAITING after the client was told"},
		{"told a match that does not seat it", func(c *Checker) {
			c.Tell("t5", "e", "MATCHED", "m2", srcPush, at())
		}, "whose players do not include it"},
		{"cancelled but seated", func(c *Checker) {
			c.Match("m9", []Seat{{"t3", "c"}, {"t5", "e"}}, tm0)
		}, "was told CANCELLED but is seated in match m9"},
		{"push never arrived", func(c *Checker) {
			c.Joined("t7", "g", false)
			c.Match("m9", []Seat{{"t7", "g"}, {"t8", "h"}}, tm0)
			c.Tell("t7", "g", "MATCHED", "m9", srcVerify, at())
		}, "match.found never reached the player"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c := cleanRun()
			tc.add(c)
			v := c.Check()
			if len(v) == 0 || !strings.Contains(strings.Join(v, "\n"), tc.want) {
				t.Fatalf("want a violation containing %q, got %q", tc.want, v)
			}
		})
	}
}

func TestCheckerLateMatchIsNotAMissedPush(t *testing.T) {
	// Formed after the cutoff: the push may still be on its way.
	c := cleanRun()
	c.Joined("t7", "g", false)
	c.Match("m9", []Seat{{"t7", "g"}, {"t8", "h"}}, tm0.Add(2*time.Minute))
	c.Tell("t7", "g", "MATCHED", "m9", srcVerify, at())
	if v := c.Check(); len(v) != 0 {
		t.Fatalf("violations: %v", v)
	}
}

func TestCheckerMergeFindsCrossWorkerConflicts(t *testing.T) {
	// Worker 1's player a saw t1 in m1; worker 2's player x saw t1 in m9.
	// Neither worker alone sees a problem; the merge does.
	w1, w2 := NewChecker(), NewChecker()
	w1.Joined("t1", "a", false)
	w1.Match("m1", []Seat{{"t1", "a"}, {"t2", "b"}}, tm0)
	w1.Tell("t1", "a", "MATCHED", "m1", srcPush, at())
	w2.Match("m9", []Seat{{"t1", "a"}, {"t3", "x"}}, tm0)
	w2.Tell("t3", "x", "MATCHED", "m9", srcPush, at())
	if len(w1.Check())+len(w2.Check()) != 0 {
		t.Fatal("each worker alone is clean")
	}
	all := NewChecker()
	all.Merge(w1.Snapshot())
	all.Merge(w2.Snapshot())
	if v := all.Check(); !strings.Contains(strings.Join(v, "\n"), "ticket t1 is in two matches") {
		t.Fatalf("merged violations %v", v)
	}
}

func TestCheckerPushAfterTheGETIsNotAContradiction(t *testing.T) {
	// A saturated server: the verification GET still saw WAITING, the push
	// came after it. Only an outcome told before the GET contradicts it.
	c := cleanRun()
	c.Joined("t7", "g", false)
	c.Tell("t7", "g", "WAITING", "", srcVerify, at())
	c.Match("m9", []Seat{{"t7", "g"}, {"t8", "h"}}, tm0)
	c.Tell("t7", "g", "MATCHED", "m9", srcPush, at())
	if v := c.Check(); len(v) != 0 {
		t.Fatalf("violations: %v", v)
	}
}

// An accept window: a match dissolved (one player declined) is not live, so
// the accepter is seated again and the decliner is cancelled; the same
// observations without the dissolve are violations.
func TestCheckerDissolvedMatchIsNotLive(t *testing.T) {
	observe := func(dissolve bool) *Checker {
		c := NewChecker()
		c.SetCutoff(tm0.Add(time.Minute))
		for _, t := range []struct{ ticket, user string }{{"t1", "a"}, {"t2", "b"}, {"t3", "c"}} {
			c.Joined(t.ticket, t.user, false)
		}
		c.Match("m1", []Seat{{"t1", "a"}, {"t2", "b"}}, tm0)
		c.Tell("t1", "a", "MATCHED", "m1", srcPush, at())
		c.Tell("t2", "b", "MATCHED", "m1", srcPush, at())
		if dissolve {
			if !c.Dissolve("m1") || c.Dissolve("m1") {
				t.Fatal("Dissolve did not report the first record only")
			}
		}
		c.Tell("t2", "b", "CANCELLED", "", srcPush, at()) // b declined
		c.Tell("t1", "a", "WAITING", "", srcVerify, at()) // a is back in the queue...
		c.Match("m2", []Seat{{"t1", "a"}, {"t3", "c"}}, tm0.Add(time.Second))
		c.Tell("t1", "a", "MATCHED", "m2", srcPush, at()) // ... and seated again
		c.Tell("t3", "c", "MATCHED", "m2", srcPush, at())
		return c
	}
	if v := observe(true).Check(); len(v) != 0 {
		t.Fatalf("violations with m1 dissolved:\n%s", strings.Join(v, "\n"))
	}
	v := strings.Join(observe(false).Check(), "\n")
	for _, want := range []string{"ticket t1 is in two matches", "ticket t2 of b was told two outcomes"} {
		if !strings.Contains(v, want) {
			t.Errorf("without the dissolve, no %q in:\n%s", want, v)
		}
	}
	// Workers' dissolves merge.
	w, parent := NewChecker(), observe(false)
	w.Dissolve("m1")
	parent.Merge(w.Snapshot())
	if v := parent.Check(); len(v) != 0 {
		t.Fatalf("violations after merging a worker's dissolve:\n%s", strings.Join(v, "\n"))
	}
}
