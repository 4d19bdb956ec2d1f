package gateway

import (
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"
)

// The priority claim (seconds of head start) reaches the JoinRequest; the
// queue caps it.
func TestPriorityClaim(t *testing.T) {
	srv, err := New(Config{Matchmaker: &fakeMatchmaker{}, Subscriber: newFakeSubscriber(), Secret: testSecret})
	if err != nil {
		t.Fatal(err)
	}
	sign := func(c jwt.MapClaims) string {
		t.Helper()
		c["sub"], c["exp"] = "pia", time.Now().Add(time.Hour).Unix()
		s, err := jwt.NewWithClaims(jwt.SigningMethodHS256, c).SignedString(testSecret)
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	for _, tc := range []struct {
		claim any
		want  time.Duration
	}{{12.5, 12500 * time.Millisecond}, {-3, 0}, {nil, 0}, {1e12, 24 * time.Hour}} {
		c := jwt.MapClaims{}
		if tc.claim != nil {
			c["priority"] = tc.claim
		}
		p, err := srv.parseToken(sign(c))
		if err != nil || p.Priority != tc.want || p.joinRequest("q", "", nil).Priority != tc.want {
			t.Errorf("priority %v: %+v, %v; want %v", tc.claim, p, err, tc.want)
		}
	}
	if _, err := srv.parseToken(sign(jwt.MapClaims{"priority": "high"})); err == nil {
		t.Error("a priority that is not a number was accepted")
	}
}
