package ranking

import (
	"math/rand/v2"
	"strings"
	"testing"
	"time"
)

func utc(y int, m time.Month, d, h, min int) time.Time {
	return time.Date(y, m, d, h, min, 0, 0, time.UTC)
}

func TestPeriodOf(t *testing.T) {
	cases := []struct {
		w     Window
		t     time.Time
		start time.Time
		end   time.Time
		name  string
	}{
		{WindowHour, utc(2026, 12, 1, 13, 59), utc(2026, 12, 1, 13, 0), utc(2026, 12, 1, 14, 0), "2026-12-01T13"},
		{WindowHour, utc(2026, 12, 31, 23, 0), utc(2026, 12, 31, 23, 0), utc(2027, 1, 1, 0, 0), "2026-12-31T23"},
		{WindowDay, utc(2026, 12, 1, 0, 0), utc(2026, 12, 1, 0, 0), utc(2026, 12, 2, 0, 0), "2026-12-01"},
		{WindowDay, utc(2028, 2, 29, 23, 59), utc(2028, 2, 29, 0, 0), utc(2028, 3, 1, 0, 0), "2028-02-29"},
		// Tuesday 2026-12-01 is in the ISO week from Monday 2026-11-30.
		{WindowWeek, utc(2026, 12, 1, 13, 0), utc(2026, 11, 30, 0, 0), utc(2026, 12, 7, 0, 0), "2026-W49"},
		// A Sunday belongs to the week of the Monday before.
		{WindowWeek, utc(2026, 12, 6, 23, 59), utc(2026, 11, 30, 0, 0), utc(2026, 12, 7, 0, 0), "2026-W49"},
		{WindowWeek, utc(2026, 12, 7, 0, 0), utc(2026, 12, 7, 0, 0), utc(2026, 12, 14, 0, 0), "2026-W50"},
		// 2026 has 53 ISO weeks: Monday 2026-12-28 starts W53, which
		// holds 2027-01-01 to 2027-01-03.
		{WindowWeek, utc(2026, 12, 28, 0, 0), utc(2026, 12, 28, 0, 0), utc(2027, 1, 4, 0, 0), "2026-W53"},
		{WindowWeek, utc(2027, 1, 3, 23, 59), utc(2026, 12, 28, 0, 0), utc(2027, 1, 4, 0, 0), "2026-W53"},
		{WindowWeek, utc(2027, 1, 4, 0, 0), utc(2027, 1, 4, 0, 0), utc(2027, 1, 11, 0, 0), "2027-W01"},
		// 2025-12-29 (a Monday) is already 2026-W01.
		{WindowWeek, utc(2025, 12, 31, 12, 0), utc(2025, 12, 29, 0, 0), utc(2026, 1, 5, 0, 0), "2026-W01"},
		// 2027 has 52 weeks: its last begins 2027-12-27.
		{WindowWeek, utc(2028, 1, 2, 0, 0), utc(2027, 12, 27, 0, 0), utc(2028, 1, 3, 0, 0), "2027-W52"},
		// Another zone's instant is placed by its UTC time.
		{WindowDay, time.Date(2026, 12, 2, 1, 0, 0, 0, time.FixedZone("KST", 9*3600)), utc(2026, 12, 1, 0, 0), utc(2026, 12, 2, 0, 0), "2026-12-01"},
	}
	for _, c := range cases {
		p := PeriodOf(c.w, c.t)
		if !p.Start.Equal(c.start) || !p.End().Equal(c.end) || p.String() != c.name || p.Window != c.w {
			t.Errorf("PeriodOf(%s, %s) = %s [%s, %s), want %s [%s, %s)", c.w, c.t, p, p.Start, p.End(), c.name, c.start, c.end)
		}
		if p.Start.Location() != time.UTC {
			t.Errorf("PeriodOf(%s, %s): start in %v", c.w, c.t, p.Start.Location())
		}
		q, err := ParsePeriod(c.w, c.name)
		if err != nil || q != p {
			t.Errorf("ParsePeriod(%s, %q) = %v, %v, want %v", c.w, c.name, q, err, p)
		}
	}
}

func TestPeriodOfUnknownWindowPanics(t *testing.T) {
	defer func() {
		if r := recover(); r == nil || !strings.Contains(r.(string), `"month"`) {
			t.Fatalf("recover() = %v", r)
		}
	}()
	PeriodOf("month", time.Now())
}

func TestParsePeriodRefuses(t *testing.T) {
	cases := []struct {
		w Window
		s string
	}{
		{WindowHour, ""},
		{WindowHour, "2026-12-01"},
		{WindowHour, "2026-12-01T24"},
		{WindowHour, "2026-12-01T13:00"},
		{WindowHour, "2026-12-1T13"},
		{WindowDay, "2026-12-01T13"},
		{WindowDay, "2026-02-29"},
		{WindowDay, "2026-13-01"},
		{WindowDay, "26-12-01"},
		{WindowDay, " 2026-12-01"},
		{WindowWeek, "2026-W1"},
		{WindowWeek, "2026-W00"},
		{WindowWeek, "2026-W54"},
		{WindowWeek, "2027-W53"}, // 2027 has 52 weeks
		{WindowWeek, "2026W49"},
		{WindowWeek, "2026-w49"},
		{WindowWeek, "+026-W49"},
		{WindowWeek, "2026-W+1"},
		{WindowWeek, "0000-W01"},
		{WindowWeek, "2026-12-01"},
		{"month", "2026-12"},
	}
	for _, c := range cases {
		if p, err := ParsePeriod(c.w, c.s); err == nil {
			t.Errorf("ParsePeriod(%s, %q) = %v, want an error", c.w, c.s, p)
		}
	}
	if _, err := ParsePeriod(WindowWeek, "2027-W53"); err == nil || !strings.Contains(err.Error(), "did you mean 2028-W01") {
		t.Errorf("ParsePeriod(week, 2027-W53) = %v", err)
	}
}

// Weeks with 53 ISO weeks between 2000 and 2040, as calendars list them:
// years whose January 1 is a Thursday, or a Wednesday in a leap year.
func TestISOWeek53(t *testing.T) {
	want := map[int]bool{2004: true, 2009: true, 2015: true, 2020: true, 2026: true, 2032: true, 2037: true}
	for y := 2000; y <= 2040; y++ {
		_, err := ParsePeriod(WindowWeek, strings.Replace("YYYY-W53", "YYYY", time.Date(y, 1, 1, 0, 0, 0, 0, time.UTC).Format("2006"), 1))
		if got := err == nil; got != want[y] {
			t.Errorf("%d has W53: %v, want %v (%v)", y, got, want[y], err)
		}
	}
}

// Properties over random instants from 1970 to 2100: the period holds the
// instant, starts on its window's boundary, chains with Prev and Next,
// spells its name back, and its hours tile it.
func TestPeriodProperties(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	lo, hi := utc(1970, 1, 1, 0, 0).UnixNano(), utc(2100, 1, 1, 0, 0).UnixNano()
	for range 20000 {
		at := time.Unix(0, lo+rng.Int64N(hi-lo)).UTC()
		for _, w := range Windows {
			p := PeriodOf(w, at)
			if !p.Contains(at) || p.Contains(p.End()) || !p.Contains(p.Start) {
				t.Fatalf("%s: %s [%s, %s) does not hold it", at, p, p.Start, p.End())
			}
			if h, m, s := p.Start.Clock(); m != 0 || s != 0 || p.Start.Nanosecond() != 0 || (w != WindowHour && h != 0) {
				t.Fatalf("%s: %s starts at %s", at, p, p.Start)
			}
			if w == WindowWeek && p.Start.Weekday() != time.Monday {
				t.Fatalf("%s: week %s starts on %s", at, p, p.Start.Weekday())
			}
			if w == WindowWeek {
				y, n := at.ISOWeek()
				if p.String() != time.Date(y, 1, 1, 0, 0, 0, 0, time.UTC).Format("2006")+"-W"+twoDigits(n) {
					t.Fatalf("%s: week %s, ISOWeek says %d-%d", at, p, y, n)
				}
			}
			if p.Next().Prev() != p || p.Prev().Next() != p || !p.Prev().End().Equal(p.Start) || p.Next().Start != p.End() {
				t.Fatalf("%s: %s does not chain with its neighbours", at, p)
			}
			if q, err := ParsePeriod(w, p.String()); err != nil || q != p {
				t.Fatalf("%s: ParsePeriod(%q) = %v, %v", at, p, q, err)
			}
			hs := p.Hours()
			want := map[Window]int{WindowHour: 1, WindowDay: 24, WindowWeek: 168}[w]
			if len(hs) != want || !hs[0].Equal(p.Start) || !hs[len(hs)-1].Add(time.Hour).Equal(p.End()) {
				t.Fatalf("%s: %s has %d hours from %s", at, p, len(hs), hs[0])
			}
			for i := 1; i < len(hs); i++ {
				if hs[i].Sub(hs[i-1]) != time.Hour || PeriodOf(WindowHour, hs[i]).Start != hs[i] {
					t.Fatalf("%s: hours of %s not contiguous at %d", at, p, i)
				}
			}
		}
	}
}

func twoDigits(n int) string {
	return string([]byte{byte('0' + n/10), byte('0' + n%10)})
}

// Every week of 2020 to 2030 in a row: consecutive, named 01.. in order,
// the week count restarting at each ISO year.
func TestWeeksInARow(t *testing.T) {
	p := PeriodOf(WindowWeek, utc(2020, 1, 1, 0, 0))
	if p.String() != "2020-W01" {
		t.Fatalf("first week %s", p)
	}
	year, n := 2020, 1
	for p.Start.Before(utc(2031, 1, 1, 0, 0)) {
		next := p.Next()
		ny, nn := next.Start.ISOWeek()
		switch {
		case ny == year && nn == n+1:
		case ny == year+1 && nn == 1 && (n == 52 || n == 53):
			year = ny
		default:
			t.Fatalf("%s followed by %s", p, next)
		}
		n = nn
		p = next
	}
}
