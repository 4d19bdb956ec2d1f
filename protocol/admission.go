package protocol

import (
	"math"
	"strconv"
	"time"

	"github.com/matchgate/matchgate/admission"
)

// The admission queue on the wire (ARCHITECTURE.md §10): a user's place
// (WirePosition) in the entered and position replies, the REST bodies, and
// the pushes; the protected downstream's token bodies.

// The statuses of a place, as the wire spells them.
const (
	PositionWaiting    = "WAITING"
	PositionReady      = "READY"
	PositionNotEntered = "NOT_ENTERED"
)

// WirePosition is a user's place in an admission queue: WAITING with its
// rank and ETA (WireWaiting), READY with the entry token (WireReady), or
// NOT_ENTERED (no live place: never entered, left, or the token's life
// ended) with neither.
type WirePosition struct {
	Status string `json:"status"`
	*WireWaiting
	*WireReady
}

// WireWaiting is a waiting place. Rank is zero-based (the waiters ahead),
// Total the line's length; PollAfter is when a client without a socket
// should ask again, in seconds.
type WireWaiting struct {
	Rank  int64    `json:"rank"`
	Total int64    `json:"total"`
	ETA   *WireETA `json:"eta,omitempty"`
	// PollAfter is in seconds, to a tenth.
	PollAfter float64 `json:"pollAfter"`
}

// WireETA is a waiter's predicted admission, in seconds from now to a
// tenth, within [Low, High]. A position whose admission cannot be
// predicted (no admission rate) has no ETA; High is null when only the
// slowest rate seen is zero (no upper bound).
type WireETA struct {
	Seconds float64  `json:"seconds"`
	Low     float64  `json:"low"`
	High    *float64 `json:"high"`
}

// WireReady is an admitted place: the one-use entry token for the
// protected downstream, and the end of its life.
type WireReady struct {
	Token     string   `json:"token"`
	ExpiresAt wireTime `json:"expiresAt"`
}

// WireQueuePosition is a user's place in one admission queue, as hello
// lists them.
type WireQueuePosition struct {
	Queue    string       `json:"queue"`
	Position WirePosition `json:"position"`
}

// PositionOf is p in its wire shape: no number in it is infinite, so
// every one can be written.
func PositionOf(p admission.Position) WirePosition {
	switch p.Status {
	case admission.StatusWaiting:
		return WirePosition{Status: PositionWaiting, WireWaiting: &WireWaiting{
			Rank: p.Rank, Total: p.Total, ETA: etaOf(p.ETA), PollAfter: tenths(p.PollAfter.Seconds()),
		}}
	case admission.StatusReady:
		return WirePosition{Status: PositionReady, WireReady: &WireReady{Token: p.Token, ExpiresAt: wireTime(p.ExpiresAt)}}
	}
	return WirePosition{Status: PositionNotEntered}
}

func etaOf(e admission.ETA) *WireETA {
	if !finite(e.Seconds) || !finite(e.Low) {
		return nil
	}
	w := &WireETA{Seconds: tenths(e.Seconds), Low: tenths(e.Low)}
	if finite(e.High) {
		h := tenths(e.High)
		w.High = &h
	}
	return w
}

func finite(f float64) bool { return !math.IsNaN(f) && !math.IsInf(f, 0) }

// tenths rounds seconds to a tenth: a wait is not told to the nanosecond.
// Rounding keeps the order of low, seconds and high.
func tenths(s float64) float64 {
	if math.Abs(s) >= 1e15 { // a float64 holds no tenths this large
		return s
	}
	return math.Round(s*10) / 10
}

// AppendJSON appends p as json.Marshal(p) writes it. Its numbers must be
// finite (PositionOf's are).
func (p WirePosition) AppendJSON(b []byte) []byte {
	b = append(b, `{"status":`...)
	b = AppendJSONString(b, p.Status)
	if w := p.WireWaiting; w != nil {
		b = append(b, `,"rank":`...)
		b = strconv.AppendInt(b, w.Rank, 10)
		b = append(b, `,"total":`...)
		b = strconv.AppendInt(b, w.Total, 10)
		if e := w.ETA; e != nil {
			b = append(b, `,"eta":{"seconds":`...)
			b = AppendJSONFloat(b, e.Seconds)
			b = append(b, `,"low":`...)
			b = AppendJSONFloat(b, e.Low)
			b = append(b, `,"high":`...)
			if e.High == nil {
				b = append(b, "null"...)
			} else {
				b = AppendJSONFloat(b, *e.High)
			}
			b = append(b, '}')
		}
		b = append(b, `,"pollAfter":`...)
		b = AppendJSONFloat(b, w.PollAfter)
	}
	if r := p.WireReady; r != nil {
		b = append(b, `,"token":`...)
		b = AppendJSONString(b, r.Token)
		b = append(b, `,"expiresAt":`...)
		b = r.ExpiresAt.appendJSON(b)
	}
	return append(b, '}')
}

// positionJSONCap holds an entered or position reply, or a push, in one
// allocation.
const positionJSONCap = 256

// AppendAdmissionPosition appends the admission.position push:
// {"type":"admission.position","queue":…,"position":P}.
func AppendAdmissionPosition(b []byte, queue string, p WirePosition) []byte {
	b = append(b, `{"type":`...)
	b = AppendJSONString(b, FrameAdmissionPosition)
	b = append(b, `,"queue":`...)
	b = AppendJSONString(b, queue)
	b = append(b, `,"position":`...)
	b = p.AppendJSON(b)
	return append(b, '}')
}

// AppendAdmissionReady appends the admission.ready push, the admission of
// a waiter: {"type":"admission.ready","queue":…,"token":…,"expiresAt":…}.
func AppendAdmissionReady(b []byte, queue, token string, expiresAt time.Time) []byte {
	b = append(b, `{"type":`...)
	b = AppendJSONString(b, FrameAdmissionReady)
	b = append(b, `,"queue":`...)
	b = AppendJSONString(b, queue)
	b = append(b, `,"token":`...)
	b = AppendJSONString(b, token)
	b = append(b, `,"expiresAt":`...)
	b = wireTime(expiresAt).appendJSON(b)
	return append(b, '}')
}

// PositionBody is the REST answer of an enter, a position and a leave
// (NOT_ENTERED).
type PositionBody struct {
	Position WirePosition `json:"position"`
}

// TokenRequest is the body of the protected downstream's claim, consume
// and release.
type TokenRequest struct {
	Token string `json:"token"`
}

// TokenBody is the answer of a claim, a consume and a release: whose token
// it is, its status after the call (CLAIMED, CONSUMED, READY), when it was
// claimed (null unless CLAIMED or CONSUMED) and the end of its life.
type TokenBody struct {
	UserID    string   `json:"userId"`
	Status    string   `json:"status"`
	ClaimedAt wireTime `json:"claimedAt"`
	ExpiresAt wireTime `json:"expiresAt"`
}

// TokenBodyOf is p as the token's answer.
func TokenBodyOf(p admission.Place) TokenBody {
	b := TokenBody{UserID: p.UserID, Status: string(p.Status), ExpiresAt: wireTime(p.ExpiresAt)}
	if p.Status == admission.StatusClaimed || p.Status == admission.StatusConsumed {
		b.ClaimedAt = wireTime(p.ClaimedAt)
	}
	return b
}
