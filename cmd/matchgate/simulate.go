package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"runtime/debug"
	"time"

	"github.com/matchgate/matchgate/simulate"
)

const simulateUsage = `Usage: matchgate simulate [flags] scenario.yaml

Runs every queue config of the scenario through the real matcher (the
Service, the engines' passes, the memory pool and record) on a virtual
clock, on the same arrival stream, and prints them side by side: waits,
skill spread, how matches formed, expired and cancelled tickets, bots, and
the same by hour of the day. The same scenario and seed print the same
bytes. docs/SIMULATE.md describes the scenario file.

Flags:
`

// simulateCmd is the simulate subcommand.
func simulateCmd(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("matchgate simulate", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprint(stderr, simulateUsage)
		fs.PrintDefaults()
	}
	asJSON := fs.Bool("json", false, "print the report as JSON")
	asCSV := fs.Bool("csv", false, "print the report as CSV: a row per config and hour of the day, and one \"all\"")
	progress := fs.Bool("progress", false, "show progress on stderr even when it is not a terminal")
	svg := fs.String("svg", "", "also write an SVG plot to this file: wait p50 and spread p50 of each hour against its arrival rate, a line per config")
	seed := fs.Uint64("seed", 0, "the stream's seed, instead of the scenario's (0: the scenario's)")
	// Flags may come before or after the scenario.
	var rest []string
	for {
		if err := fs.Parse(args); err != nil {
			if errors.Is(err, flag.ErrHelp) {
				return errHelp
			}
			return err
		}
		if fs.NArg() == 0 {
			break
		}
		rest = append(rest, fs.Arg(0))
		args = fs.Args()[1:]
	}
	if len(rest) != 1 {
		fs.Usage()
		return errors.New("simulate: give one scenario file")
	}
	if *asJSON && *asCSV {
		return errors.New("simulate: --json or --csv, not both")
	}
	if getenv("GOGC") == "" {
		// A run holds every ticket and match in the memory record: at the
		// default, collecting that heap took most of a run's time
		// (docs/SIMULATE.md, "Speed").
		defer debug.SetGCPercent(debug.SetGCPercent(simulateGCPercent))
	}
	sc, err := simulate.ReadScenario(rest[0])
	if err != nil {
		return err
	}
	if *seed != 0 {
		sc.Seed = *seed
	}
	var opt simulate.Options
	if *progress || isTerminal(stderr) {
		opt.Progress = progressLine(stderr)
	}
	began := time.Now()
	rep, err := simulate.Run(ctx, sc, opt)
	if err != nil {
		return err
	}
	var joins int64
	for _, c := range rep.Configs {
		joins += c.Joins
	}
	// Real time is not part of the report, which must not vary between runs.
	took := time.Since(began)
	fmt.Fprintf(stderr, "simulated %d joins (%d configs) in %v: %.0f joins/s\n", joins, len(rep.Configs),
		took.Round(time.Millisecond), float64(joins)/max(took.Seconds(), 1e-9))
	if *svg != "" {
		if err := writeFile(*svg, rep.WriteSVG); err != nil {
			return err
		}
	}
	switch {
	case *asJSON:
		return rep.WriteJSON(stdout)
	case *asCSV:
		return rep.WriteCSV(stdout)
	}
	return rep.WriteTable(stdout)
}

// writeFile writes a file whole with write.
func writeFile(path string, write func(io.Writer) error) error {
	f, err := os.Create(path)
	if err != nil {
		return fmt.Errorf("simulate: %w", err)
	}
	if err := write(f); err != nil {
		f.Close()
		return fmt.Errorf("simulate: %s: %w", path, err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("simulate: %w", err)
	}
	return nil
}

// simulateGCPercent is the collector's target while simulate runs, unless
// GOGC is set: the heap grows to five times what the run holds live.
const simulateGCPercent = 400

// isTerminal reports whether w is a terminal.
func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	st, err := f.Stat()
	return err == nil && st.Mode()&os.ModeCharDevice != 0
}

// progressLine draws a progress bar on one line of w.
func progressLine(w io.Writer) func(simulate.Progress) {
	const width = 30
	return func(p simulate.Progress) {
		done := 0.0
		if p.End > 0 {
			done = min(float64(p.Virtual)/float64(p.End), 1)
		}
		if p.Done {
			done = 1
		}
		bar := make([]byte, width)
		for i := range bar {
			bar[i] = ' '
			if float64(i) < done*width {
				bar[i] = '#'
			}
		}
		fmt.Fprintf(w, "\r%s (%d/%d) [%s] %3.0f%%  %v virtual  %d joins", p.Config, p.Index+1, p.Of, bar, 100*done,
			p.Virtual.Truncate(time.Minute), p.Joins)
		if p.Done {
			fmt.Fprintln(w)
		}
	}
}
