package protocol

import (
	"bytes"
	"math/rand/v2"
	"reflect"
	"testing"
)

func genReply(r *rand.Rand) Reply {
	f := Reply{Type: genString(r), Re: genString(r)}
	if r.IntN(2) == 0 {
		t := genTicket(r)
		f.Ticket = &t
	}
	if r.IntN(2) == 0 {
		m := genMatch(r)
		f.Match = &m
	}
	if r.IntN(2) == 0 {
		p := genPosition(r)
		f.Position = &p
	}
	if r.IntN(4) == 0 {
		f.Error = &WireError{Code: Code(genString(r)), Message: genString(r),
			TicketID: genString(r), MatchID: genString(r), RetryAfter: r.IntN(3)}
	}
	return f
}

// A reply written by hand must be the reply json.Marshal writes, appended
// to what the buffer holds.
func TestReplyAppendMatchesJSON(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	filled := map[string]bool{}
	for i := range 3000 {
		f := genReply(r)
		markFilled(filled, "Reply", reflect.ValueOf(f))
		want := mustMarshal(t, f)
		if got := f.AppendJSON([]byte("x")); !bytes.Equal(got[1:], want) || got[0] != 'x' {
			t.Fatalf("reply %d: AppendJSON = %s\nwant x%s", i, got, want)
		}
	}
	for _, path := range fieldPaths("Reply", reflect.TypeFor[Reply]()) {
		if !filled[path] {
			t.Errorf("genReply never fills %s: extend it (and check AppendJSON writes it)", path)
		}
	}
}
