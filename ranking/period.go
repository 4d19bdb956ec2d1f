package ranking

import (
	"fmt"
	"strconv"
	"time"
)

// Period is one span of a window: the hour, UTC day or ISO week (Monday
// 00:00 UTC to the next Monday) that starts at Start. Every period is in
// UTC, so no daylight saving time ever lengthens or shortens one.
type Period struct {
	Window Window
	Start  time.Time
}

// Layouts of Period.String for hours and days; weeks are "2026-W49".
const (
	hourLayout = "2006-01-02T15"
	dayLayout  = "2006-01-02"
)

// PeriodOf is the period of window w that holds t. w must be a known
// window (boards are normalized before anything asks for a period); an
// unknown one panics, as a programming error.
func PeriodOf(w Window, t time.Time) Period {
	t = t.UTC()
	y, m, d := t.Date()
	day := time.Date(y, m, d, 0, 0, 0, 0, time.UTC)
	switch w {
	case WindowHour:
		return Period{w, day.Add(time.Duration(t.Hour()) * time.Hour)}
	case WindowDay:
		return Period{w, day}
	case WindowWeek:
		// time.Weekday counts from Sunday; ISO weeks from Monday.
		back := (int(day.Weekday()) + 6) % 7
		return Period{w, day.AddDate(0, 0, -back)}
	}
	panic(fmt.Sprintf("ranking: PeriodOf: unknown window %q", w))
}

// End is the instant after p: the start of the next period.
func (p Period) End() time.Time {
	switch p.Window {
	case WindowHour:
		return p.Start.Add(time.Hour)
	case WindowDay:
		return p.Start.AddDate(0, 0, 1)
	case WindowWeek:
		return p.Start.AddDate(0, 0, 7)
	}
	panic(fmt.Sprintf("ranking: Period.End: unknown window %q", p.Window))
}

// Next is the period after p.
func (p Period) Next() Period { return Period{p.Window, p.End()} }

// Prev is the period before p.
func (p Period) Prev() Period { return PeriodOf(p.Window, p.Start.Add(-time.Nanosecond)) }

// Contains reports whether t is in [Start, End).
func (p Period) Contains(t time.Time) bool { return !t.Before(p.Start) && t.Before(p.End()) }

// Hours are the starts of p's hour buckets, in order: 1 for an hour, 24
// for a day, 168 for a week.
func (p Period) Hours() []time.Time {
	end := p.End()
	hs := make([]time.Time, 0, int(end.Sub(p.Start)/time.Hour))
	for h := p.Start; h.Before(end); h = h.Add(time.Hour) {
		hs = append(hs, h)
	}
	return hs
}

// String names p as URLs and keys spell it: "2026-12-01T13" for an hour,
// "2026-12-01" for a day, "2026-W49" for an ISO week (its ISO year, which
// differs from the calendar year near New Year: 2026-12-28 starts
// 2026-W53, 2027-01-04 starts 2027-W01).
func (p Period) String() string {
	switch p.Window {
	case WindowHour:
		return p.Start.UTC().Format(hourLayout)
	case WindowDay:
		return p.Start.UTC().Format(dayLayout)
	case WindowWeek:
		y, w := p.Start.UTC().ISOWeek()
		return fmt.Sprintf("%04d-W%02d", y, w)
	}
	return fmt.Sprintf("%s@%s", p.Window, p.Start.UTC().Format(time.RFC3339))
}

// ParsePeriod reads a period of w as String spells it, and only so: a
// string that parses but is spelled otherwise ("2026-W1", a week 53 of a
// year of 52) is refused, so each period has one name.
func ParsePeriod(w Window, s string) (Period, error) {
	var p Period
	switch w {
	case WindowHour, WindowDay:
		layout := hourLayout
		if w == WindowDay {
			layout = dayLayout
		}
		t, err := time.Parse(layout, s)
		if err != nil {
			return Period{}, fmt.Errorf("period %q: want a %s as %s: %w", s, w, layout, err)
		}
		p = Period{w, t}
	case WindowWeek:
		if len(s) != 8 || s[4] != '-' || s[5] != 'W' {
			return Period{}, fmt.Errorf("period %q: want an ISO week as 2026-W49", s)
		}
		y, err1 := strconv.Atoi(s[:4])
		n, err2 := strconv.Atoi(s[6:])
		if err1 != nil || err2 != nil || y < 1 || n < 1 || n > 53 {
			return Period{}, fmt.Errorf("period %q: want an ISO week as 2026-W49", s)
		}
		// January 4 is always in week 1 of its ISO year.
		p = PeriodOf(WindowWeek, time.Date(y, time.January, 4, 0, 0, 0, 0, time.UTC).AddDate(0, 0, 7*(n-1)))
	default:
		return Period{}, fmt.Errorf("period %q: unknown window %q", s, w)
	}
	if p.String() != s {
		return Period{}, fmt.Errorf("period %q: no such %s (did you mean %s?)", s, w, p)
	}
	return p, nil
}
