package protocol

import (
	"bytes"
	"encoding/json"
	"math"
	"math/rand/v2"
	"reflect"
	"testing"
	"time"

	"github.com/matchgate/matchgate/admission"
)

func genPosition(r *rand.Rand) WirePosition {
	p := WirePosition{Status: genString(r)}
	if r.IntN(2) == 0 {
		w := &WireWaiting{Rank: r.Int64() - r.Int64(), Total: r.Int64N(1e6), PollAfter: genFloat(r)}
		if r.IntN(4) > 0 {
			w.ETA = &WireETA{Seconds: genFloat(r), Low: genFloat(r)}
			if r.IntN(2) == 0 {
				h := genFloat(r)
				w.ETA.High = &h
			}
		}
		p.WireWaiting = w
	}
	if r.IntN(2) == 0 {
		p.WireReady = &WireReady{Token: genString(r), ExpiresAt: genTime(r)}
	}
	return p
}

// A place written by hand is the place json.Marshal writes, and the
// generator fills every field of it.
func TestPositionAppendMatchesJSON(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 8))
	filled := map[string]bool{}
	for i := range 3000 {
		p := genPosition(r)
		markFilled(filled, "WirePosition", reflect.ValueOf(p))
		want := mustMarshal(t, p)
		if got := p.AppendJSON([]byte("x")); !bytes.Equal(got[1:], want) || got[0] != 'x' {
			t.Fatalf("position %d: AppendJSON = %s\nwant x%s", i, got, want)
		}
	}
	for _, path := range fieldPaths("WirePosition", reflect.TypeFor[WirePosition]()) {
		if !filled[path] {
			t.Errorf("genPosition never fills %s: extend it (and check AppendJSON writes it)", path)
		}
	}
}

// The pushes write what encoding/json writes of their frames.
func TestAdmissionPushesMatchJSON(t *testing.T) {
	r := rand.New(rand.NewPCG(9, 10))
	for i := range 2000 {
		queue, p := genString(r), genPosition(r)
		want := mustMarshal(t, struct {
			Type     string       `json:"type"`
			Queue    string       `json:"queue"`
			Position WirePosition `json:"position"`
		}{FrameAdmissionPosition, queue, p})
		if got := AppendAdmissionPosition([]byte("x"), queue, p); !bytes.Equal(got[1:], want) {
			t.Fatalf("admission.position %d:\n got %s\nwant x%s", i, got, want)
		}
		token, at := genString(r), genTime(r)
		want = mustMarshal(t, struct {
			Type      string   `json:"type"`
			Queue     string   `json:"queue"`
			Token     string   `json:"token"`
			ExpiresAt wireTime `json:"expiresAt"`
		}{FrameAdmissionReady, queue, token, at})
		if got := AppendAdmissionReady([]byte("x"), queue, token, time.Time(at)); !bytes.Equal(got[1:], want) {
			t.Fatalf("admission.ready %d:\n got %s\nwant x%s", i, got, want)
		}
	}
}

// The places as the wire tells them: seconds to a tenth, nothing
// infinite written, each status with its own members only.
func TestPositionOf(t *testing.T) {
	at := time.Date(2031, 3, 4, 5, 6, 7, 891_234_567, time.FixedZone("CET", 3600))
	inf := math.Inf(1)
	for _, c := range []struct {
		name string
		p    admission.Position
		want string
	}{
		{"waiting", admission.Position{Status: admission.StatusWaiting, Rank: 0, Total: 12,
			ETA:       admission.ETA{Seconds: 1.2345, Low: 0.96, High: 2.04999, Measured: true},
			PollAfter: 1500 * time.Millisecond, Version: 3},
			`{"status":"WAITING","rank":0,"total":12,"eta":{"seconds":1.2,"low":1,"high":2},"pollAfter":1.5}`},
		{"no upper bound", admission.Position{Status: admission.StatusWaiting, Rank: 4, Total: 5,
			ETA: admission.ETA{Seconds: 40, Low: 20.05, High: inf}, PollAfter: 5 * time.Second},
			`{"status":"WAITING","rank":4,"total":5,"eta":{"seconds":40,"low":20.1,"high":null},"pollAfter":5}`},
		{"no rate", admission.Position{Status: admission.StatusWaiting, Rank: 4, Total: 5,
			ETA: admission.ETA{Seconds: inf, Low: inf, High: inf}, PollAfter: time.Duration(math.MaxInt64)},
			`{"status":"WAITING","rank":4,"total":5,"pollAfter":9223372036.9}`},
		{"not a number", admission.Position{Status: admission.StatusWaiting, Rank: 1, Total: 2,
			ETA: admission.ETA{Seconds: math.NaN(), Low: 1, High: 2}, PollAfter: time.Second},
			`{"status":"WAITING","rank":1,"total":2,"pollAfter":1}`},
		{"ready", admission.Position{Status: admission.StatusReady, Token: "9f2c", ExpiresAt: at, Rank: 3, Version: 9},
			`{"status":"READY","token":"9f2c","expiresAt":"2031-03-04T04:06:07.891Z"}`},
		{"not entered", admission.Position{Version: 4}, `{"status":"NOT_ENTERED"}`},
		{"ended", admission.Position{Status: admission.StatusConsumed}, `{"status":"NOT_ENTERED"}`},
	} {
		w := PositionOf(c.p)
		if got := string(w.AppendJSON(nil)); got != c.want {
			t.Errorf("%s:\n got %s\nwant %s", c.name, got, c.want)
		}
		if got := string(mustMarshal(t, PositionBody{Position: w})); got != `{"position":`+c.want+`}` {
			t.Errorf("%s as a body: %s", c.name, got)
		}
	}
}

func TestTokenBodyOf(t *testing.T) {
	at := time.Date(2031, 3, 4, 5, 6, 7, 891_000_000, time.UTC)
	for _, c := range []struct {
		p    admission.Place
		want string
	}{
		{admission.Place{UserID: "u-ada", Status: admission.StatusClaimed, ClaimedAt: at, ExpiresAt: at.Add(time.Minute)},
			`{"userId":"u-ada","status":"CLAIMED","claimedAt":"2031-03-04T05:06:07.891Z","expiresAt":"2031-03-04T05:07:07.891Z"}`},
		{admission.Place{UserID: "u-ada", Status: admission.StatusConsumed, ClaimedAt: at, ExpiresAt: at.Add(time.Minute)},
			`{"userId":"u-ada","status":"CONSUMED","claimedAt":"2031-03-04T05:06:07.891Z","expiresAt":"2031-03-04T05:07:07.891Z"}`},
		// Released: no longer claimed, whatever the record kept.
		{admission.Place{UserID: "u-ada", Status: admission.StatusReady, ClaimedAt: at, ExpiresAt: at.Add(time.Minute)},
			`{"userId":"u-ada","status":"READY","claimedAt":null,"expiresAt":"2031-03-04T05:07:07.891Z"}`},
	} {
		b, err := json.Marshal(TokenBodyOf(c.p))
		if err != nil || string(b) != c.want {
			t.Errorf("%s:\n got %s, %v\nwant %s", c.p.Status, b, err, c.want)
		}
	}
}
