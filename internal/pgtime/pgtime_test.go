package pgtime

import (
	"testing"
	"time"
)

func TestRoundTrip(t *testing.T) {
	at := time.Date(2026, 12, 2, 10, 0, 0, 123456789, time.FixedZone("x", 3600))
	s := Stamp(at)
	if s.Location() != time.UTC || s.Nanosecond() != 123456000 || !s.Equal(at.Truncate(time.Microsecond)) {
		t.Fatalf("Stamp(%v) = %v", at, s)
	}
	if !Stamp(time.Time{}).IsZero() || OrNull(time.Time{}) != nil || !OrZero(nil).IsZero() {
		t.Fatal("the zero time is not NULL")
	}
	if got := OrZero(OrNull(at)); !got.Equal(s) || got.Location() != time.UTC {
		t.Fatalf("OrZero(OrNull(%v)) = %v, want %v", at, got, s)
	}
}
