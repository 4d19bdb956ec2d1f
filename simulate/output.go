package simulate

import (
	"encoding/csv"
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"
)

// WriteJSON writes the report as indented JSON.
func (r *Report) WriteJSON(w io.Writer) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	if err := enc.Encode(r); err != nil {
		return fmt.Errorf("write json: %w", err)
	}
	return nil
}

// row is one line of the side-by-side table: a label and each config's
// value.
type row struct {
	label string
	value func(c *ConfigReport) string
}

func f(x float64, places int) string { return strconv.FormatFloat(x, 'f', places, 64) }
func pct(x float64) string           { return f(100*x, 2) + "%" }
func n(x int64) string               { return strconv.FormatInt(x, 10) }

var tableRows = []row{
	{"joins", func(c *ConfigReport) string { return n(c.Joins) }},
	{"wait p50 (s)", func(c *ConfigReport) string { return f(c.WaitP50, 3) }},
	{"wait p90 (s)", func(c *ConfigReport) string { return f(c.WaitP90, 3) }},
	{"wait p99 (s)", func(c *ConfigReport) string { return f(c.WaitP99, 3) }},
	{"spread p50", unlessProvider(func(c *ConfigReport) string { return f(c.SpreadP50, 2) })},
	{"spread p90", unlessProvider(func(c *ConfigReport) string { return f(c.SpreadP90, 2) })},
	{"matches", func(c *ConfigReport) string { return n(c.Matches) }},
	{"matches / hour", func(c *ConfigReport) string { return f(c.MatchesPerHour, 1) }},
	{"FILLED", func(c *ConfigReport) string { return pct(c.FilledFraction) }},
	{"FALLBACK", func(c *ConfigReport) string { return pct(c.FallbackFraction) }},
	{"TIMEOUT", func(c *ConfigReport) string { return pct(c.TimeoutFraction) }},
	{"bots seated", unlessProvider(func(c *ConfigReport) string { return n(c.Bots) })},
	{"tickets matched", func(c *ConfigReport) string { return pct(c.MatchedFraction) }},
	{"tickets expired", func(c *ConfigReport) string { return pct(c.ExpiredFraction) }},
	{"tickets cancelled", func(c *ConfigReport) string { return pct(c.CancelledFraction) }},
	{"  by the player", func(c *ConfigReport) string { return n(c.Cancelled) }},
	{"  declined", func(c *ConfigReport) string { return n(c.Declined) }},
	{"  silent (accept)", func(c *ConfigReport) string { return n(c.AcceptTimeout) }},
	{"matches dissolved", func(c *ConfigReport) string { return n(c.Dissolved) }},
	{"passes", func(c *ConfigReport) string { return n(c.Passes) }},
	{"pass errors", func(c *ConfigReport) string { return n(c.PassErrors) }},
}

// unlessProvider leaves a figure that does not apply to a provider queue
// empty for one.
func unlessProvider(v func(c *ConfigReport) string) func(c *ConfigReport) string {
	return func(c *ConfigReport) string {
		if c.Provider != nil {
			return ""
		}
		return v(c)
	}
}

// providerRows follow tableRows when a config is a provider queue; other
// configs leave them empty.
var providerRows = []row{
	{"score p50", ifProvider(func(p *ProviderReport) string { return f(p.ScoreP50, 2) })},
	{"score p90", ifProvider(func(p *ProviderReport) string { return f(p.ScoreP90, 2) })},
	{"offers", ifProvider(func(p *ProviderReport) string { return n(p.Offers) })},
	{"  declined by provider", ifProvider(func(p *ProviderReport) string { return n(p.Declined) })},
	{"  let pass", ifProvider(func(p *ProviderReport) string { return n(p.Lapsed) })},
	{"  withdrawn (offline)", ifProvider(func(p *ProviderReport) string { return n(p.Withdrawn) })},
	{"sessions ended", ifProvider(func(p *ProviderReport) string { return n(p.SessionsEnded) })},
	{"utilisation", ifProvider(func(p *ProviderReport) string { return pct(p.Utilisation) })},
	{"over capacity", ifProvider(func(p *ProviderReport) string { return n(p.OverCapacity) })},
}

func ifProvider(v func(p *ProviderReport) string) func(c *ConfigReport) string {
	return func(c *ConfigReport) string {
		if c.Provider == nil {
			return ""
		}
		return v(c.Provider)
	}
}

// anyProvider reports whether a config of r is a provider queue.
func (r *Report) anyProvider() bool {
	for i := range r.Configs {
		if r.Configs[i].Provider != nil {
			return true
		}
	}
	return false
}

// WriteTable writes the configs side by side, then each config's hours of
// the day (those with joins or matches).
func (r *Report) WriteTable(w io.Writer) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	head := []string{""}
	for i := range r.Configs {
		head = append(head, r.Configs[i].Name)
	}
	fmt.Fprintln(tw, strings.Join(head, "\t")+"\t")
	rows := tableRows
	if r.anyProvider() {
		rows = append(slices.Clip(rows), providerRows...)
	}
	for _, rw := range rows {
		cells := []string{rw.label}
		for i := range r.Configs {
			cells = append(cells, rw.value(&r.Configs[i]))
		}
		fmt.Fprintln(tw, strings.Join(cells, "\t")+"\t")
	}
	if err := tw.Flush(); err != nil {
		return fmt.Errorf("write table: %w", err)
	}
	for i := range r.Configs {
		c := &r.Configs[i]
		fmt.Fprintf(w, "\nby hour of the day (UTC), %s:\n", c.Name)
		tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
		if c.Provider != nil {
			writeProviderHours(tw, c)
			if err := tw.Flush(); err != nil {
				return fmt.Errorf("write table: %w", err)
			}
			continue
		}
		fmt.Fprintln(tw, "hour\tjoins\tmatches\twait p50\twait p90\twait p99\tspread p50\tspread p90\tTIMEOUT\texpired\tcancelled\t")
		for _, h := range c.Hours {
			if h.Joins == 0 && h.Matches == 0 {
				continue
			}
			fmt.Fprintf(tw, "%02d\t%d\t%d\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t\n", h.Hour, h.Joins, h.Matches,
				f(h.WaitP50, 3), f(h.WaitP90, 3), f(h.WaitP99, 3), f(h.SpreadP50, 2), f(h.SpreadP90, 2),
				pct(h.TimeoutFraction), pct(h.ExpiredFraction), pct(h.CancelledFraction))
		}
		if err := tw.Flush(); err != nil {
			return fmt.Errorf("write table: %w", err)
		}
	}
	return nil
}

// writeProviderHours is a provider queue's hours: scores and utilisation
// instead of spreads and TIMEOUT.
func writeProviderHours(tw *tabwriter.Writer, c *ConfigReport) {
	fmt.Fprintln(tw, "hour\tjoins\tmatches\twait p50\twait p90\twait p99\tscore p50\tscore p90\tutilisation\texpired\tcancelled\t")
	for _, h := range c.Hours {
		p := h.Provider
		if h.Joins == 0 && h.Matches == 0 && (p == nil || p.SlotSeconds == 0) {
			continue
		}
		var sp50, sp90, util string
		if p != nil {
			sp50, sp90 = f(p.ScoreP50, 2), f(p.ScoreP90, 2)
			if p.SlotSeconds > 0 {
				util = pct(p.Utilisation)
			}
		}
		fmt.Fprintf(tw, "%02d\t%d\t%d\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t\n", h.Hour, h.Joins, h.Matches,
			f(h.WaitP50, 3), f(h.WaitP90, 3), f(h.WaitP99, 3), sp50, sp90, util,
			pct(h.ExpiredFraction), pct(h.CancelledFraction))
	}
}

// csvProvider are the columns added when a config is a provider queue.
var csvProvider = []string{"score_p50", "score_p90", "offers", "offers_declined", "offers_lapsed", "utilisation"}

// csvHeader are the CSV's columns: one row a config and hour of the day,
// and a row "all" a config for the whole run.
var csvHeader = []string{"config", "hour", "joins", "matches", "wait_p50_s", "wait_p90_s", "wait_p99_s",
	"spread_p50", "spread_p90", "filled_fraction", "fallback_fraction", "timeout_fraction",
	"expired_fraction", "cancelled_fraction", "bots", "matches_per_hour"}

// WriteCSV writes the report as CSV. With a provider queue among the
// configs, the columns of csvProvider follow; figures that do not apply
// to a config's kind are empty.
func (r *Report) WriteCSV(w io.Writer) error {
	cw := csv.NewWriter(w)
	prov := r.anyProvider()
	head := csvHeader
	if prov {
		head = append(slices.Clip(head), csvProvider...)
	}
	_ = cw.Write(head)
	for i := range r.Configs {
		c := &r.Configs[i]
		p := c.Provider
		spread50, spread90, bots := f(c.SpreadP50, 2), f(c.SpreadP90, 2), n(c.Bots)
		if p != nil {
			spread50, spread90, bots = "", "", ""
		}
		all := []string{c.Name, "all", n(c.Joins), n(c.Matches), f(c.WaitP50, 3), f(c.WaitP90, 3), f(c.WaitP99, 3),
			spread50, spread90, f(c.FilledFraction, 4), f(c.FallbackFraction, 4), f(c.TimeoutFraction, 4),
			f(c.ExpiredFraction, 4), f(c.CancelledFraction, 4), bots, f(c.MatchesPerHour, 1)}
		switch {
		case p != nil:
			all = append(all, f(p.ScoreP50, 2), f(p.ScoreP90, 2), n(p.Offers), n(p.Declined), n(p.Lapsed), f(p.Utilisation, 4))
		case prov:
			all = append(all, "", "", "", "", "", "")
		}
		_ = cw.Write(all)
		for _, h := range c.Hours {
			spread50, spread90 := f(h.SpreadP50, 2), f(h.SpreadP90, 2)
			if p != nil {
				spread50, spread90 = "", ""
			}
			row := []string{c.Name, strconv.Itoa(h.Hour), n(h.Joins), n(h.Matches), f(h.WaitP50, 3), f(h.WaitP90, 3), f(h.WaitP99, 3),
				spread50, spread90, "", "", f(h.TimeoutFraction, 4),
				f(h.ExpiredFraction, 4), f(h.CancelledFraction, 4), "", ""}
			switch hp := h.Provider; {
			case hp != nil && hp.SlotSeconds > 0:
				row = append(row, f(hp.ScoreP50, 2), f(hp.ScoreP90, 2), "", "", "", f(hp.Utilisation, 4))
			case hp != nil: // no provider online in the hour
				row = append(row, f(hp.ScoreP50, 2), f(hp.ScoreP90, 2), "", "", "", "")
			case prov:
				row = append(row, "", "", "", "", "", "")
			}
			_ = cw.Write(row)
		}
	}
	cw.Flush()
	if err := cw.Error(); err != nil {
		return fmt.Errorf("write csv: %w", err)
	}
	return nil
}
