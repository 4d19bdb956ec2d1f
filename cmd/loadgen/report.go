package main

import (
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"math"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"
)

// Report is the result of a run: printed as a table, written with --json,
// and what a worker hands its parent (with its Observations).
type Report struct {
	Mode           string                `json:"mode"`
	Targets        []string              `json:"targets"`
	Workers        int                   `json:"workers"`
	Sockets        int                   `json:"sockets"` // target socket count
	Start          time.Time             `json:"start"`
	ConnectSeconds float64               `json:"connectSeconds"` // the connect phase
	RunSeconds     float64               `json:"runSeconds"`     // the measured phase
	Rates          []Rate                `json:"rates"`
	Latency        map[string]*Histogram `json:"latency"`
	Counters       map[string]int64      `json:"counters"`
	Errors         map[string]int64      `json:"errors"`
	Closes         map[string]int64      `json:"closes"`
	DialErrors     map[string]int64      `json:"dialErrors"`
	// DialErrorSamples holds the first message of each dial error kind.
	DialErrorSamples map[string]string `json:"dialErrorSamples,omitempty"`
	// ClientRSS is the load generator's own resident memory (all its
	// processes) at the end of the measured phase.
	ClientRSS  int64         `json:"clientRSSBytes"`
	Memory     *MemoryReport `json:"memory,omitempty"`
	Invariants Invariants    `json:"invariants"`
	// Observations travel from a worker to its parent only.
	Observations *Observations `json:"observations,omitempty"`
	// Verified are the tickets a worker checked by GET (already folded into
	// its Observations); summed by Merge.
	Verified int `json:"verified"`
}

// Rate is a target against what was achieved.
type Rate struct {
	Name     string  `json:"name"`
	Target   float64 `json:"target"` // per second; 0 = none
	Count    int64   `json:"count"`
	Seconds  float64 `json:"seconds"`
	Achieved float64 `json:"achieved"` // Count / Seconds
}

// Invariants is the verdict of the checker.
type Invariants struct {
	Tickets    int      `json:"tickets"`
	Matches    int      `json:"matches"`
	Verified   int      `json:"verified"` // tickets checked against GET /v1/tickets/{id}
	Violations int      `json:"violations"`
	Details    []string `json:"details,omitempty"` // the first maxDetails
}

const maxDetails = 50

// MemoryReport is the server side of an idle run.
type MemoryReport struct {
	PIDs           []int   `json:"pids"`
	RSSBefore      int64   `json:"rssBeforeBytes"`
	RSSAfter       int64   `json:"rssAfterBytes"`
	Sockets        int64   `json:"sockets"`
	BytesPerSocket float64 `json:"bytesPerSocket"`
	// From the servers' /metrics, when reachable.
	GoroutinesBefore float64 `json:"goroutinesBefore,omitempty"`
	GoroutinesAfter  float64 `json:"goroutinesAfter,omitempty"`
	HeapBefore       float64 `json:"heapInuseBefore,omitempty"`
	HeapAfter        float64 `json:"heapInuseAfter,omitempty"`
	StackBefore      float64 `json:"stackInuseBefore,omitempty"`
	StackAfter       float64 `json:"stackInuseAfter,omitempty"`
}

func rate(name string, target float64, count int64, seconds float64) Rate {
	r := Rate{Name: name, Target: target, Count: count, Seconds: seconds}
	if seconds > 0 {
		r.Achieved = float64(count) / seconds
	}
	return r
}

// Merge folds a worker's report into r: counts and histograms add up,
// phases take the longest, rates are recomputed from the summed counts.
func (r *Report) Merge(o *Report) {
	r.Workers += max(o.Workers, 1)
	r.Sockets += o.Sockets
	if r.Start.IsZero() || (!o.Start.IsZero() && o.Start.Before(r.Start)) {
		r.Start = o.Start
	}
	r.ConnectSeconds = math.Max(r.ConnectSeconds, o.ConnectSeconds)
	r.RunSeconds = math.Max(r.RunSeconds, o.RunSeconds)
	for _, or := range o.Rates {
		found := false
		for i := range r.Rates {
			if r.Rates[i].Name == or.Name {
				x := &r.Rates[i]
				*x = rate(x.Name, x.Target+or.Target, x.Count+or.Count, math.Max(x.Seconds, or.Seconds))
				found = true
				break
			}
		}
		if !found {
			r.Rates = append(r.Rates, or)
		}
	}
	if r.Latency == nil {
		r.Latency = map[string]*Histogram{}
	}
	for k, h := range o.Latency {
		if r.Latency[k] == nil {
			r.Latency[k] = &Histogram{}
		}
		r.Latency[k].Merge(h)
	}
	r.Counters = addCounts(r.Counters, o.Counters)
	r.Errors = addCounts(r.Errors, o.Errors)
	r.Closes = addCounts(r.Closes, o.Closes)
	r.DialErrors = addCounts(r.DialErrors, o.DialErrors)
	for k, v := range o.DialErrorSamples {
		if r.DialErrorSamples == nil {
			r.DialErrorSamples = map[string]string{}
		}
		if _, ok := r.DialErrorSamples[k]; !ok {
			r.DialErrorSamples[k] = v
		}
	}
	r.ClientRSS += o.ClientRSS
	r.Verified += o.Verified
}

func addCounts(dst, src map[string]int64) map[string]int64 {
	if dst == nil {
		dst = map[string]int64{}
	}
	for k, v := range src {
		dst[k] += v
	}
	return dst
}

// WriteJSON writes the report (without observations) to path.
func (r *Report) WriteJSON(path string) error {
	cp := *r
	cp.Observations = nil
	b, err := json.MarshalIndent(&cp, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(path, append(b, '\n'), 0o644)
}

// readReport reads a report written by WriteJSON or a worker.
func readReport(path string) (*Report, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var r Report
	if err := json.Unmarshal(b, &r); err != nil {
		return nil, fmt.Errorf("report %s: %w", path, err)
	}
	return &r, nil
}

// PrintTable writes the k6-style summary.
func (r *Report) PrintTable(w io.Writer) {
	fmt.Fprintf(w, "\nloadgen %s: %d sockets target, %d process(es), connect phase %.1fs, measured phase %.1fs\n",
		r.Mode, r.Sockets, max(r.Workers, 1), r.ConnectSeconds, r.RunSeconds)
	fmt.Fprintf(w, "targets: %s\n\n", strings.Join(r.Targets, " "))

	if len(r.Rates) > 0 {
		fmt.Fprintf(w, "  %-22s %12s %12s %10s\n", "rate (/s)", "target", "achieved", "count")
		for _, x := range r.Rates {
			target := "-"
			if x.Target > 0 {
				target = strconv.FormatFloat(x.Target, 'f', 1, 64)
			}
			fmt.Fprintf(w, "  %-22s %12s %12.1f %10d\n", x.Name, target, x.Achieved, x.Count)
		}
		fmt.Fprintln(w)
	}

	fmt.Fprintf(w, "  %-26s %9s %9s %9s %9s %9s %9s %9s\n", "latency (ms)", "count", "p50", "p90", "p95", "p99", "max", "mean")
	for _, name := range histOrder {
		h := r.Latency[name]
		if h == nil || h.Count() == 0 {
			continue
		}
		s := h.Summary()
		fmt.Fprintf(w, "  %-26s %9d %9.2f %9.2f %9.2f %9.2f %9.2f %9.2f\n", name, s.Count, s.P50, s.P90, s.P95, s.P99, s.Max, s.Mean)
	}
	fmt.Fprintln(w)

	c := r.Counters
	fmt.Fprintf(w, "  sockets: %d connects, %d failed, %d reconnects, %d open at end\n",
		c["connects"], c["connect_failed"], c["reconnects"], c["sockets_open"])
	if c["joins_sent"] > 0 || r.Mode == "players" {
		fmt.Fprintf(w, "  tickets: %d joins sent, %d joined, %d join errors, %d starved (no idle player when due)\n",
			c["joins_sent"], c["joined"], c["join_errors"], c["joins_starved"])
		fmt.Fprintf(w, "  outcomes: %d match.found, %d matches, %d cancels sent (%d cancelled, %d already matched), %d ended, %d unresolved at end\n",
			c["match_found"], c["matches"], c["cancels_sent"], c["cancelled"], c["already_matched"], c["ended"], c["unresolved"])
		if c["accepts"]+c["declines"]+c["silent"] > 0 {
			fmt.Fprintf(w, "  accept window: %d accepts, %d declines, %d silent; %d attempts ended ready, %d matches dissolved\n",
				c["accepts"], c["declines"], c["silent"], c["ready"], c["dissolved"])
		}
		if c["rest_polls"] > 0 {
			fmt.Fprintf(w, "  rest players: %d polls, %d heartbeats\n", c["rest_polls"], c["rest_heartbeats"])
		}
	}
	if c["pushes_sent"] > 0 {
		fmt.Fprintf(w, "  pushes: %d published, %d received\n", c["pushes_sent"], c["pushes_received"])
	}
	if c["pings"] > 0 {
		fmt.Fprintf(w, "  pings: %d sent, %d pongs\n", c["pings"], c["pongs"])
	}
	printCounts(w, "errors", r.Errors)
	printCounts(w, "closes", r.Closes)
	printCounts(w, "dial errors", r.DialErrors)
	for _, k := range slices.Sorted(maps.Keys(r.DialErrorSamples)) {
		fmt.Fprintf(w, "    %s, e.g.: %s\n", k, r.DialErrorSamples[k])
	}
	if r.ClientRSS > 0 && r.Counters["sockets_open"]+r.Counters["connects"] > 0 {
		fmt.Fprintf(w, "  load generator RSS: %s\n", mib(r.ClientRSS))
	}

	if m := r.Memory; m != nil {
		fmt.Fprintf(w, "\n  server memory (pids %v): RSS %s → %s for %d sockets = %.1f KiB per socket\n",
			m.PIDs, mib(m.RSSBefore), mib(m.RSSAfter), m.Sockets, m.BytesPerSocket/1024)
		if m.GoroutinesAfter > 0 && m.Sockets > 0 {
			fmt.Fprintf(w, "  server goroutines %.0f → %.0f (%.2f per socket); heap in use %s → %s; stacks %s → %s\n",
				m.GoroutinesBefore, m.GoroutinesAfter, (m.GoroutinesAfter-m.GoroutinesBefore)/float64(m.Sockets),
				mib(int64(m.HeapBefore)), mib(int64(m.HeapAfter)), mib(int64(m.StackBefore)), mib(int64(m.StackAfter)))
		}
	}

	inv := r.Invariants
	verdict := "OK"
	if inv.Violations > 0 {
		verdict = fmt.Sprintf("%d VIOLATION(S)", inv.Violations)
	}
	fmt.Fprintf(w, "\n  invariants: %s (%d tickets, %d matches seen; %d tickets checked against GET)\n",
		verdict, inv.Tickets, inv.Matches, inv.Verified)
	for _, d := range inv.Details {
		fmt.Fprintf(w, "    - %s\n", d)
	}
	if inv.Violations > len(inv.Details) {
		fmt.Fprintf(w, "    … and %d more\n", inv.Violations-len(inv.Details))
	}
}

func printCounts(w io.Writer, what string, m map[string]int64) {
	if len(m) == 0 {
		return
	}
	fmt.Fprintf(w, "  %s: %s\n", what, strings.Join(sortedCounts(m), " "))
}

func mib(b int64) string { return fmt.Sprintf("%.1f MiB", float64(b)/(1<<20)) }

func itoa(n int64) string { return strconv.FormatInt(n, 10) }
