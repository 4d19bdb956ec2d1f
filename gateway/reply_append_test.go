package gateway

import (
	"bytes"
	"encoding/json"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/matchgate/matchgate/matcher"
	"github.com/matchgate/matchgate/protocol"
)

var replyFragments = []string{
	"", "joined", "pong", "match.update", "j17", `"`, `\`, "\n", "\x00", "\x1f", "\b", "\f",
	"<", ">", "&", "\u2028", "\u2029", "é", "😀", "\xff", "\xe2\x80",
}

func genReplyString(r *rand.Rand) string {
	var s string
	for range r.IntN(4) {
		s += replyFragments[r.IntN(len(replyFragments))]
	}
	return s
}

func genReplyTime(r *rand.Rand) time.Time {
	if r.IntN(4) == 0 {
		return time.Time{}
	}
	return time.Unix(1755530400+r.Int64N(1e6), r.Int64N(1e9)).In(time.FixedZone("x", 3600*(r.IntN(25)-12)))
}

func genReplyFrame(r *rand.Rand) replyFrame {
	f := replyFrame{Type: genReplyString(r), Re: genReplyString(r)}
	if r.IntN(2) == 0 {
		t := matcher.Ticket{ID: genReplyString(r), UserID: genReplyString(r), Queue: genReplyString(r),
			Region: genReplyString(r), Status: matcher.StatusWaiting, Skill: r.NormFloat64()*300 + 1500,
			EnqueuedAt: genReplyTime(r), Deadline: genReplyTime(r), UpdatedAt: genReplyTime(r),
			MatchID: genReplyString(r), CancelReason: genReplyString(r), Version: r.Int64N(50)}
		if r.IntN(2) == 0 {
			t.Attributes = map[string]string{genReplyString(r): genReplyString(r), genReplyString(r): genReplyString(r)}
		}
		f.Ticket = wireTicket(t)
	}
	if r.IntN(2) == 0 {
		m := matcher.Match{ID: genReplyString(r), Queue: genReplyString(r), Region: genReplyString(r),
			State:    []string{matcher.MatchPendingAccept, matcher.MatchReady, matcher.MatchDissolved}[r.IntN(3)],
			FormedBy: matcher.FormedFilled, Bots: r.IntN(3), Spread: r.Float64() * 100,
			Server: &matcher.Server{Address: genReplyString(r), Session: genReplyString(r)}, CreatedAt: genReplyTime(r),
			Version: r.Int64N(50)}
		for range r.IntN(4) {
			m.Players = append(m.Players, matcher.Player{TicketID: genReplyString(r), UserID: genReplyString(r), Skill: r.Float64() * 3000})
		}
		for range r.IntN(3) {
			m.Accepted = append(m.Accepted, genReplyString(r))
		}
		if r.IntN(2) == 0 {
			at := genReplyTime(r)
			m.AcceptBy = &at
		}
		f.Match = wireMatch(m)
	}
	if r.IntN(4) == 0 {
		f.Error = &wireError{Code: protocol.Code(genReplyString(r)), Message: genReplyString(r),
			TicketID: genReplyString(r), MatchID: genReplyString(r), RetryAfter: r.IntN(3)}
	}
	return f
}

// A reply written by hand must be the reply json.Marshal wrote.
func TestReplyAppendMatchesJSON(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	for i := range 3000 {
		f := genReplyFrame(r)
		want, err := json.Marshal(f)
		if err != nil {
			t.Fatalf("json.Marshal(%+v): %v", f, err)
		}
		if got := f.appendJSON([]byte("x")); !bytes.Equal(got[1:], want) || got[0] != 'x' {
			t.Fatalf("frame %d: appendJSON = %s\nwant x%s", i, got, want)
		}
	}
}
