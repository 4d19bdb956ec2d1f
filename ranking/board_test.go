package ranking

import (
	"errors"
	"math"
	"slices"
	"strings"
	"testing"
	"time"
)

func trending() Board {
	return Board{
		Name:    "trending",
		Source:  SourceMatchmaking,
		Metrics: map[string]Metric{"joins": {Weight: 1}, "matches": {Weight: 3}, "cancels": {Weight: -1}},
		Windows: []Window{WindowHour, WindowDay, WindowWeek},
		Top:     100,
		Carry:   Carry{Top: 100, Fraction: 0.1},
		Refresh: time.Minute,
	}
}

func products() Board {
	return Board{
		Name:    "products",
		Source:  SourceEvents,
		Metrics: map[string]Metric{"views": {Weight: 1}, "likes": {Weight: 3}, "sales": {Weight: 5, Transform: TransformLog1p}},
	}
}

func TestNormalizeDefaults(t *testing.T) {
	b := products()
	if err := b.Normalize(); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(b.Windows, []Window{WindowHour, WindowDay, WindowWeek}) {
		t.Errorf("windows = %v", b.Windows)
	}
	if b.Top != 100 || b.Refresh != time.Minute || b.Carry != (Carry{}) {
		t.Errorf("top %d refresh %v carry %+v", b.Top, b.Refresh, b.Carry)
	}
	// The default windows are a copy: changing one board's leaves the next alone.
	b.Windows[0] = "x"
	if Windows[0] != WindowHour {
		t.Fatal("Normalize shared the Windows slice")
	}

	tr := trending()
	if err := tr.Normalize(); err != nil {
		t.Fatal(err)
	}
	if tr.Carry != (Carry{Top: 100, Fraction: 0.1}) {
		t.Errorf("carry = %+v", tr.Carry)
	}
}

func TestNormalizeRefuses(t *testing.T) {
	metrics := func(n int) map[string]Metric {
		m := map[string]Metric{}
		for i := range n {
			m["m"+strings.Repeat("x", i%5)+string(rune('a'+i%26))+string(rune('a'+i/26))] = Metric{Weight: 1}
		}
		return m
	}
	cases := []struct {
		name string
		edit func(*Board)
		want string // in the error
	}{
		{"empty name", func(b *Board) { b.Name = "" }, "name must match"},
		{"upper-case name", func(b *Board) { b.Name = "Trending" }, "name must match"},
		{"name starting with dash", func(b *Board) { b.Name = "-x" }, "name must match"},
		{"name of 49", func(b *Board) { b.Name = strings.Repeat("a", 49) }, "name must match"},
		{"name with colon", func(b *Board) { b.Name = "a:b" }, "name must match"},
		{"no source", func(b *Board) { b.Source = "" }, "source required"},
		{"unknown source", func(b *Board) { b.Source = "kafka" }, `source "kafka" unknown`},
		{"no metrics", func(b *Board) { b.Metrics = nil }, "want 1 to 32, have 0"},
		{"33 metrics", func(b *Board) { b.Source = SourceEvents; b.Metrics = metrics(33) }, "have 33"},
		{"matchmaking metric unknown", func(b *Board) { b.Metrics["views"] = Metric{Weight: 1} }, `metric "views": a matchmaking board counts only`},
		{"metric upper-case", func(b *Board) { b.Source = SourceEvents; b.Metrics["Views"] = Metric{} }, `metric "Views": name must match`},
		{"metric digit first", func(b *Board) { b.Source = SourceEvents; b.Metrics["1x"] = Metric{} }, "name must match"},
		{"metric dash", func(b *Board) { b.Source = SourceEvents; b.Metrics["a-b"] = Metric{} }, "name must match"},
		{"metric of 33", func(b *Board) { b.Source = SourceEvents; b.Metrics["a"+strings.Repeat("b", 32)] = Metric{} }, "name must match"},
		{"metric named carry", func(b *Board) { b.Source = SourceEvents; b.Metrics["carry"] = Metric{} }, "reserved"},
		{"NaN weight", func(b *Board) { b.Metrics["joins"] = Metric{Weight: math.NaN()} }, "finite"},
		{"+Inf weight", func(b *Board) { b.Metrics["joins"] = Metric{Weight: math.Inf(1)} }, "finite"},
		{"-Inf weight", func(b *Board) { b.Metrics["joins"] = Metric{Weight: math.Inf(-1)} }, "finite"},
		{"unknown transform", func(b *Board) { b.Metrics["joins"] = Metric{Weight: 1, Transform: "sqrt"} }, `transform "sqrt" unknown`},
		{"unknown window", func(b *Board) { b.Windows = []Window{"month"} }, `window "month" unknown`},
		{"window twice", func(b *Board) { b.Windows = []Window{WindowDay, WindowHour, WindowDay} }, `window "day" listed twice`},
		{"negative top", func(b *Board) { b.Top = -1 }, "top -1"},
		{"top too large", func(b *Board) { b.Top = 10001 }, "top 10001"},
		{"carry top negative", func(b *Board) { b.Carry.Top = -1 }, "carry.top -1"},
		{"carry top above top", func(b *Board) { b.Top = 50; b.Carry.Top = 51 }, "carry.top 51"},
		{"carry fraction above 1", func(b *Board) { b.Carry.Fraction = 1.5 }, "carry.fraction 1.5"},
		{"carry fraction negative", func(b *Board) { b.Carry.Fraction = -0.1 }, "carry.fraction -0.1"},
		{"carry fraction NaN", func(b *Board) { b.Carry.Fraction = math.NaN() }, "carry.fraction NaN"},
		{"carry without days", func(b *Board) { b.Windows = []Window{WindowHour, WindowWeek} }, "windows must include day"},
		{"refresh below 1s", func(b *Board) { b.Refresh = 999 * time.Millisecond }, "refresh 999ms"},
		{"refresh negative", func(b *Board) { b.Refresh = -time.Minute }, "refresh -1m0s"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			b := trending()
			c.edit(&b)
			err := b.Normalize()
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("Normalize() = %v, want an error containing %q", err, c.want)
			}
			if b.Name != "" && ValidBoardName(b.Name) && !strings.HasPrefix(err.Error(), `board "`+b.Name+`": `) {
				t.Errorf("error %q does not name the board", err)
			}
		})
	}
}

func TestNormalizeAccepts(t *testing.T) {
	cases := []struct {
		name string
		edit func(*Board)
	}{
		{"name of 48", func(b *Board) { b.Name = "a" + strings.Repeat("-_9", 15) + "xy" }},
		{"name digit first", func(b *Board) { b.Name = "9lives" }},
		{"one metric", func(b *Board) { b.Metrics = map[string]Metric{"matches": {Weight: 2}} }},
		{"32 metrics", func(b *Board) {
			b.Source = SourceEvents
			b.Metrics = map[string]Metric{}
			for i := range 32 {
				b.Metrics[string(rune('a'+i%26))+strings.Repeat("_", i/26)+"x"] = Metric{Weight: -float64(i)}
			}
		}},
		{"metric of 32", func(b *Board) { b.Source = SourceEvents; b.Metrics["a"+strings.Repeat("b", 31)] = Metric{} }},
		{"zero and negative weights", func(b *Board) { b.Metrics["joins"] = Metric{Weight: 0}; b.Metrics["cancels"] = Metric{Weight: -1e300} }},
		{"log1p on matchmaking", func(b *Board) { b.Metrics["joins"] = Metric{Weight: 1, Transform: TransformLog1p} }},
		{"no carry", func(b *Board) { b.Carry = Carry{}; b.Windows = []Window{WindowHour} }},
		{"carry top 0 with a fraction, no days", func(b *Board) { b.Carry = Carry{Fraction: 0.5}; b.Windows = []Window{WindowWeek} }},
		{"carry all of top, fraction 1", func(b *Board) { b.Top = 7; b.Carry = Carry{Top: 7, Fraction: 1} }},
		{"top 1", func(b *Board) { b.Top = 1; b.Carry.Top = 1 }},
		{"top 10000", func(b *Board) { b.Top = 10000 }},
		{"refresh 1s", func(b *Board) { b.Refresh = time.Second }},
		{"windows in any order", func(b *Board) { b.Windows = []Window{WindowWeek, WindowDay} }},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			b := trending()
			c.edit(&b)
			if err := b.Normalize(); err != nil {
				t.Fatal(err)
			}
		})
	}
}

func TestNormalizeBoards(t *testing.T) {
	bs := []Board{trending(), products()}
	if err := NormalizeBoards(bs); err != nil {
		t.Fatal(err)
	}
	if bs[1].Top != 100 {
		t.Error("NormalizeBoards did not normalize in place")
	}
	bs = []Board{trending(), products(), trending()}
	if err := NormalizeBoards(bs); err == nil || err.Error() != `board "trending": defined twice` {
		t.Fatalf("NormalizeBoards = %v", err)
	}
	bad := products()
	bad.Source = ""
	if err := NormalizeBoards([]Board{trending(), bad}); err == nil || !strings.Contains(err.Error(), `board "products": source required`) {
		t.Fatalf("NormalizeBoards = %v", err)
	}
	if err := NormalizeBoards(nil); err != nil {
		t.Fatal(err)
	}
}

// The first error is the same on every run, whatever the metrics map's order.
func TestCheckMetricsDeterministic(t *testing.T) {
	ms := map[string]Metric{"b_bad": {Weight: math.NaN()}, "a_bad": {Transform: "x"}, "Z": {}, "ok": {}}
	want := CheckMetrics(SourceEvents, ms).Error()
	for range 200 {
		if got := CheckMetrics(SourceEvents, ms).Error(); got != want {
			t.Fatalf("%q then %q", want, got)
		}
	}
	if !strings.HasPrefix(want, `metric "Z"`) {
		t.Errorf("first error %q, want the first name in byte order", want)
	}
}

func TestValidNamesMatchPatterns(t *testing.T) {
	// Every string over a small alphabet up to length 3, and the edges of
	// the length limits, against the documented patterns' meaning.
	alpha := "aZ0-_:é"
	var all []string
	var gen func(string, int)
	gen = func(p string, n int) {
		all = append(all, p)
		if n == 0 {
			return
		}
		for _, r := range alpha {
			gen(p+string(r), n-1)
		}
	}
	gen("", 3)
	for _, s := range all {
		wantBoard := s != "" && isAny(s[0], "a0") && allAny(s, "a0-_")
		if got := ValidBoardName(s); got != wantBoard {
			t.Errorf("ValidBoardName(%q) = %v", s, got)
		}
		wantMetric := s != "" && s[0] == 'a' && allAny(s, "a0_")
		if got := ValidMetricName(s); got != wantMetric {
			t.Errorf("ValidMetricName(%q) = %v", s, got)
		}
	}
	if !ValidBoardName(strings.Repeat("a", 48)) || ValidBoardName(strings.Repeat("a", 49)) {
		t.Error("board name length limit is not 48")
	}
	if !ValidMetricName(strings.Repeat("a", 32)) || ValidMetricName(strings.Repeat("a", 33)) {
		t.Error("metric name length limit is not 32")
	}
}

func isAny(c byte, set string) bool { return strings.IndexByte(set, c) >= 0 }

func allAny(s, set string) bool {
	for i := 0; i < len(s); i++ {
		if !isAny(s[i], set) {
			return false
		}
	}
	return true
}

func TestRetention(t *testing.T) {
	cases := []struct {
		windows []Window
		want    time.Duration
	}{
		{[]Window{WindowHour}, 2 * time.Hour},
		{[]Window{WindowDay}, 48 * time.Hour},
		{[]Window{WindowHour, WindowDay}, 48 * time.Hour},
		{[]Window{WindowWeek}, 14 * 24 * time.Hour},
		{[]Window{WindowDay, WindowWeek, WindowHour}, 14 * 24 * time.Hour},
	}
	for _, c := range cases {
		b := Board{Windows: c.windows}
		if got := b.Retention(); got != c.want {
			t.Errorf("Retention(%v) = %v, want %v", c.windows, got, c.want)
		}
	}
}

// The retention keeps the whole previous period of every ranked window,
// at any instant: checked for every minute of three weeks around a year's
// end.
func TestRetentionCoversPreviousPeriod(t *testing.T) {
	start := time.Date(2026, 12, 20, 0, 0, 0, 0, time.UTC)
	for _, ws := range [][]Window{{WindowHour}, {WindowHour, WindowDay}, {WindowHour, WindowDay, WindowWeek}} {
		b := Board{Windows: ws}
		for now := start; now.Before(start.AddDate(0, 0, 21)); now = now.Add(time.Minute) {
			for _, w := range ws {
				prev := PeriodOf(w, now).Prev()
				if prev.Start.Before(now.Add(-b.Retention())) {
					t.Fatalf("windows %v at %s: previous %s starts before the retention", ws, now, prev)
				}
			}
		}
	}
}

func TestCheckEvent(t *testing.T) {
	now := time.Date(2026, 12, 2, 13, 30, 0, 0, time.UTC)
	day := products()
	day.Windows = []Window{WindowHour, WindowDay}
	if err := day.Normalize(); err != nil {
		t.Fatal(err)
	}
	ok := Event{ID: "e-1", Item: "sku-42", Metric: "views", Value: 1, At: now}
	cases := []struct {
		name string
		edit func(*Event)
		want string // "" when valid
	}{
		{"valid", func(*Event) {}, ""},
		{"value 0", func(e *Event) { e.Value = 0 }, ""},
		{"value -0", func(e *Event) { e.Value = math.Copysign(0, -1) }, ""},
		{"largest value", func(e *Event) { e.Value = MaxValue }, ""},
		{"value past the largest", func(e *Event) { e.Value = math.Nextafter(MaxValue, math.Inf(1)) }, "a number from 0 to"},
		{"id of 128", func(e *Event) { e.ID = strings.Repeat("i", 128) }, ""},
		{"item of 128", func(e *Event) { e.Item = strings.Repeat("é", 64) }, ""},
		{"item with spaces and unicode", func(e *Event) { e.Item = "Café crème 🍰" }, ""},
		{"at 5m ahead", func(e *Event) { e.At = now.Add(5 * time.Minute) }, ""},
		{"at just inside retention", func(e *Event) { e.At = now.Add(-48 * time.Hour) }, ""},
		{"at in another zone", func(e *Event) { e.At = now.In(time.FixedZone("x", 9*3600)) }, ""},
		{"no id", func(e *Event) { e.ID = "" }, "id: want 1 to 128 bytes, have 0"},
		{"id of 129", func(e *Event) { e.ID = strings.Repeat("i", 129) }, "have 129"},
		{"id with newline", func(e *Event) { e.ID = "a\nb" }, "control character U+000A"},
		{"id with NUL", func(e *Event) { e.ID = "a\x00" }, "control character U+0000"},
		{"id with DEL", func(e *Event) { e.ID = "a\x7f" }, "control character U+007F"},
		{"id with C1", func(e *Event) { e.ID = "a\u0085" }, "control character U+0085"},
		{"id invalid UTF-8", func(e *Event) { e.ID = "a\xff" }, "not valid UTF-8"},
		{"no item", func(e *Event) { e.Item = "" }, "item: want 1 to 128 bytes"},
		{"item of 129 bytes", func(e *Event) { e.Item = strings.Repeat("é", 64) + "x" }, "have 129"},
		{"item with tab", func(e *Event) { e.Item = "a\tb" }, "item \"a\\tb\": control character"},
		{"unknown metric", func(e *Event) { e.Metric = "clicks" }, `counts no metric "clicks"`},
		{"no metric", func(e *Event) { e.Metric = "" }, `counts no metric ""`},
		{"negative value", func(e *Event) { e.Value = -1 }, "a number from 0 to"},
		{"NaN value", func(e *Event) { e.Value = math.NaN() }, "a number from 0 to"},
		{"+Inf value", func(e *Event) { e.Value = math.Inf(1) }, "a number from 0 to"},
		{"no at", func(e *Event) { e.At = time.Time{} }, "at required"},
		{"at too far ahead", func(e *Event) { e.At = now.Add(5*time.Minute + time.Nanosecond) }, "ahead of now"},
		{"at before retention", func(e *Event) { e.At = now.Add(-48*time.Hour - time.Nanosecond) }, "older than the board's retention (48h0m0s)"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			e := ok
			c.edit(&e)
			err := day.CheckEvent(e, now)
			if c.want == "" {
				if err != nil {
					t.Fatal(err)
				}
				return
			}
			if !errors.Is(err, ErrInvalidEvent) || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("CheckEvent = %v, want ErrInvalidEvent containing %q", err, c.want)
			}
		})
	}
}

// The retention CheckEvent applies follows the windows.
func TestCheckEventRetentionFollowsWindows(t *testing.T) {
	now := time.Date(2026, 12, 2, 13, 30, 0, 0, time.UTC)
	for _, c := range []struct {
		windows []Window
		oldest  time.Duration
	}{{[]Window{WindowHour}, 2 * time.Hour}, {[]Window{WindowDay}, 48 * time.Hour}, {nil, 14 * 24 * time.Hour}} {
		b := products()
		b.Windows = c.windows
		if err := b.Normalize(); err != nil {
			t.Fatal(err)
		}
		e := Event{ID: "e", Item: "i", Metric: "likes", Value: 2, At: now.Add(-c.oldest)}
		if err := b.CheckEvent(e, now); err != nil {
			t.Errorf("%v: at the retention's edge: %v", c.windows, err)
		}
		e.At = e.At.Add(-time.Second)
		if err := b.CheckEvent(e, now); !errors.Is(err, ErrInvalidEvent) {
			t.Errorf("%v: past the retention: %v", c.windows, err)
		}
	}
}
