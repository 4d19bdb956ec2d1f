package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"net/url"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/matchgate/matchgate/gateway"
)

// Rankings mode (BENCHMARKS.md §8) drives one ranking board of source
// events in two phases. Ingest: --events distinct events (metric
// --ranking-metric, value 1, over --ranking-items items) posted in
// batches of --event-batch by --ingest-concurrency keep-alive clients,
// each batch carrying --dup-fraction more events re-sent from earlier
// batches; the server must count every distinct event once and every
// re-sent one as a duplicate. Verify: the board's Top (hour window) is
// read until it shows every item's exact count, within --verify-wait (the
// served Top N follows the record within one refresh). Reads: GET of the
// day's Top --read-limit at --read-rate (open model) for --duration, as
// --readers distinct users (the per-user read limit applies), with the
// latency measured from each read's due instant and, with --server-pid,
// the servers' CPU time per read.

// rankingRun is one rankings-mode run.
type rankingRun struct {
	cfg  Config
	dial *dialer
	out  io.Writer

	sent, accepted, duplicates, dupsSent atomic.Int64
	ingestErrors, readErrors             atomic.Int64
	ingest, reads                        Histogram

	errMu  sync.Mutex
	errors map[string]int64
}

func (g *rankingRun) fail(kind string) {
	g.errMu.Lock()
	defer g.errMu.Unlock()
	g.errors[kind]++
}

// rankingEvent is one event as POST …/events takes it.
type rankingEvent struct {
	ID     string  `json:"id"`
	Item   string  `json:"item"`
	Metric string  `json:"metric"`
	Value  float64 `json:"value"`
	At     string  `json:"at"`
}

// runRankings runs rankings mode in this process and prints its report.
func runRankings(ctx context.Context, cfg Config, stdout, stderr io.Writer) int {
	d, err := newDialer(cfg.SourceAddrs, max(cfg.IngestConcurrency, 512)+16)
	if err != nil {
		fmt.Fprintf(stderr, "loadgen: %v\n", err)
		return exitError
	}
	ctx, cancel := context.WithTimeout(ctx, cfg.Duration+cfg.VerifyWait+5*time.Minute)
	defer cancel()
	g := &rankingRun{cfg: cfg, dial: d, out: stdout, errors: map[string]int64{}}
	fmt.Fprintf(stdout, "loadgen rankings: run %s, board %s, %d events (+%.0f%% re-sent) over %d items, then %.0f reads/s for %s, targets %v\n",
		cfg.RunID, cfg.RankingBoard, cfg.Events, cfg.DupFraction*100, cfg.RankingItems, cfg.ReadRate, cfg.Duration, cfg.URLs)

	code := exitOK
	var ingestSeconds float64
	if cfg.Events > 0 {
		start := time.Now()
		g.ingestAll(ctx)
		ingestSeconds = time.Since(start).Seconds()
		if !g.verify(ctx) {
			code = exitError
		}
	}
	cpu0, cpuErr := cpuSeconds(cfg.ServerPIDs)
	readStart := time.Now()
	issued := g.readAll(ctx)
	readSeconds := time.Since(readStart).Seconds()
	cpu1, cpuErr1 := cpuSeconds(cfg.ServerPIDs)

	w := g.out
	fmt.Fprintf(w, "\nrankings run %s, board %s\n", cfg.RunID, cfg.RankingBoard)
	if cfg.Events > 0 {
		fmt.Fprintf(w, "  ingest: %d events sent (%d re-sent) in %.1fs = %.0f events/s; accepted %d, duplicates %d, errors %d\n",
			g.sent.Load(), g.dupsSent.Load(), ingestSeconds, float64(g.sent.Load())/max(ingestSeconds, 1e-9),
			g.accepted.Load(), g.duplicates.Load(), g.ingestErrors.Load())
		fmt.Fprintln(w, summaryLine("POST events (batch)", &g.ingest))
	}
	if issued > 0 {
		fmt.Fprintf(w, "  reads: %d issued in %.1fs = %.0f/s, errors %d\n", issued, readSeconds, float64(issued)/max(readSeconds, 1e-9), g.readErrors.Load())
		fmt.Fprintln(w, summaryLine("GET top (from due)", &g.reads))
		if len(cfg.ServerPIDs) > 0 && cpuErr == nil && cpuErr1 == nil {
			fmt.Fprintf(w, "  server CPU: %.2fs over the reads = %.3f ms per read (%.2f cores)\n",
				cpu1-cpu0, (cpu1-cpu0)*1000/float64(issued), (cpu1-cpu0)/max(readSeconds, 1e-9))
		}
	}
	g.errMu.Lock()
	if len(g.errors) > 0 {
		fmt.Fprintf(w, "  errors: %s\n", strings.Join(sortedCounts(g.errors), ", "))
	}
	g.errMu.Unlock()
	if cfg.JSONPath != "" {
		out := map[string]any{
			"mode": modeRankings, "runID": cfg.RunID, "board": cfg.RankingBoard,
			"sent": g.sent.Load(), "dupsSent": g.dupsSent.Load(), "accepted": g.accepted.Load(), "duplicates": g.duplicates.Load(),
			"ingestSeconds": ingestSeconds, "ingest": g.ingest.Summary(),
			"reads": issued, "readSeconds": readSeconds, "read": g.reads.Summary(), "errors": g.errors,
		}
		if b, err := json.MarshalIndent(out, "", "  "); err == nil {
			if err := os.WriteFile(cfg.JSONPath, append(b, '\n'), 0o644); err != nil {
				fmt.Fprintf(stderr, "loadgen: %v\n", err)
			}
		}
	}
	if g.ingestErrors.Load() > 0 || g.readErrors.Load() > 0 ||
		(cfg.Events > 0 && (g.accepted.Load() != int64(cfg.Events) || g.duplicates.Load() != g.dupsSent.Load())) {
		code = exitError
	}
	return code
}

// eventOf is distinct event i.
func (g *rankingRun) eventOf(i int, at string) rankingEvent {
	return rankingEvent{ID: fmt.Sprintf("lgr-%s-%d", g.cfg.RunID, i), Item: g.itemOf(i),
		Metric: g.cfg.RankingMetric, Value: 1, At: at}
}

func (g *rankingRun) itemOf(i int) string {
	return fmt.Sprintf("lgr-%s-item-%d", g.cfg.RunID, i%g.cfg.RankingItems)
}

// ingestAll posts the distinct events in batches, each with its share of
// events re-sent from the batches before it.
func (g *rankingRun) ingestAll(ctx context.Context) {
	n, size := g.cfg.Events, g.cfg.EventBatch
	batches := (n + size - 1) / size
	var next atomic.Int64
	var wg sync.WaitGroup
	at := time.Now().UTC().Format(time.RFC3339Nano)
	for w := range g.cfg.IngestConcurrency {
		wg.Go(func() {
			rng := rand.New(rand.NewPCG(g.cfg.Seed, uint64(w)))
			for ctx.Err() == nil {
				b := int(next.Add(1) - 1)
				if b >= batches {
					return
				}
				from, to := b*size, min((b+1)*size, n)
				events := make([]rankingEvent, 0, to-from+int(float64(size)*g.cfg.DupFraction)+1)
				for i := from; i < to; i++ {
					events = append(events, g.eventOf(i, at))
				}
				dups := 0
				if from > 0 {
					// Re-sent ids come from earlier batches, whether their
					// posts have finished or not: either way each id must
					// count once in all.
					dups = int(float64(to-from)*g.cfg.DupFraction + rng.Float64())
					for range dups {
						events = append(events, g.eventOf(rng.IntN(from), at))
					}
				}
				g.post(ctx, events, dups, w)
			}
		})
	}
	wg.Wait()
}

func (g *rankingRun) post(ctx context.Context, events []rankingEvent, dups, w int) {
	body, _ := json.Marshal(map[string]any{"events": events})
	base := g.cfg.URLs[w%len(g.cfg.URLs)]
	req, err := http.NewRequestWithContext(ctx, http.MethodPost,
		base+"/v1/rankings/"+url.PathEscape(g.cfg.RankingBoard)+"/events", bytes.NewReader(body))
	if err != nil {
		g.ingestErrors.Add(1)
		g.fail("request")
		return
	}
	req.Header.Set("Authorization", "Bearer "+g.cfg.AdminToken)
	req.Header.Set("Content-Type", "application/json")
	sent := time.Now()
	var out struct {
		Accepted   int64 `json:"accepted"`
		Duplicates int64 `json:"duplicates"`
	}
	if err := doJSON(g.dial.rest, req, &out); err != nil {
		if ctx.Err() == nil {
			g.ingestErrors.Add(1)
			g.fail("ingest_" + errKind(err))
		}
		return
	}
	g.ingest.Record(time.Since(sent))
	g.sent.Add(int64(len(events)))
	g.dupsSent.Add(int64(dups))
	g.accepted.Add(out.Accepted)
	g.duplicates.Add(out.Duplicates)
}

// errKind names a failed call for the error counts.
func errKind(err error) string {
	var he *httpError
	if errors.As(err, &he) && he.code != "" {
		return he.code
	}
	return dialErrorKind(err)
}

// verify reads each item's place in the hour until every one shows its
// exact count. Items are read one by one (GET …/items/{item}), so that
// other items of the board, from earlier runs, cannot hide them.
func (g *rankingRun) verify(ctx context.Context) bool {
	want := make(map[string]float64, g.cfg.RankingItems)
	for i := range g.cfg.Events {
		want[g.itemOf(i)]++
	}
	tokens := make([]string, 16) // the per-user read limit applies
	for i := range tokens {
		var err error
		if _, tokens[i], err = g.mint(i); err != nil {
			g.fail("mint")
			return false
		}
	}
	deadline := time.Now().Add(g.cfg.VerifyWait)
	var last string
	calls := 0
	for {
		wrong := 0
		for item, n := range want {
			calls++
			got, err := g.itemCount(ctx, tokens[calls%len(tokens)], item)
			if err != nil {
				last = err.Error()
				wrong++
				continue
			}
			if got != n {
				last = fmt.Sprintf("item %s counted %v, %v sent", item, got, n)
				wrong++
			}
		}
		if wrong == 0 {
			fmt.Fprintf(g.out, "  verified: each of the %d items shows its exact count in the hour (%d events in all)\n", len(want), g.cfg.Events)
			return true
		}
		if time.Now().After(deadline) || ctx.Err() != nil {
			fmt.Fprintf(g.out, "  NOT verified within %s: %d of %d items off (%s)\n", g.cfg.VerifyWait, wrong, len(want), last)
			g.fail("verify")
			return false
		}
		sleepCtx(ctx, 500*time.Millisecond)
	}
}

// itemCount is the item's metric in the hour.
func (g *rankingRun) itemCount(ctx context.Context, tok, item string) (float64, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, g.cfg.URLs[0]+"/v1/rankings/"+url.PathEscape(g.cfg.RankingBoard)+
		"/items/"+url.PathEscape(item)+"?window=hour", nil)
	if err != nil {
		return 0, err
	}
	req.Header.Set("Authorization", "Bearer "+tok)
	var out struct {
		Item struct {
			Metrics map[string]float64 `json:"metrics"`
		} `json:"item"`
	}
	if err := doJSON(g.dial.rest, req, &out); err != nil {
		return 0, err
	}
	return out.Item.Metrics[g.cfg.RankingMetric], nil
}

func (g *rankingRun) topURL(w int, window string, limit int) string {
	return g.cfg.URLs[w%len(g.cfg.URLs)] + "/v1/rankings/" + url.PathEscape(g.cfg.RankingBoard) +
		"?window=" + window + "&limit=" + strconv.Itoa(limit)
}

// mint returns reader i's id and a locally minted token.
func (g *rankingRun) mint(i int) (string, string, error) {
	user := fmt.Sprintf("lgr-%s-r%d", g.cfg.RunID, i)
	skill := 1500.0
	tok, err := gateway.MintToken([]byte(g.cfg.Secret), user, &skill, g.cfg.TokenTTL, time.Now())
	return user, tok, err
}

// maxReadsInFlight bounds the reads outstanding: past it a read due is
// counted as an error rather than queued without bound.
const maxReadsInFlight = 2048

// readAll issues the reads at --read-rate for --duration and returns how
// many were issued.
func (g *rankingRun) readAll(ctx context.Context) int {
	if g.cfg.ReadRate <= 0 || g.cfg.Duration <= 0 {
		return 0
	}
	tokens := make([]string, g.cfg.Readers)
	for i := range tokens {
		var err error
		if _, tokens[i], err = g.mint(i); err != nil {
			g.fail("mint")
			return 0
		}
	}
	urls := make([]string, len(g.cfg.URLs))
	for w := range urls {
		urls[w] = g.topURL(w, "day", g.cfg.ReadLimit)
	}
	sem := make(chan struct{}, maxReadsInFlight)
	var wg sync.WaitGroup
	start := time.Now()
	issued := pacer{rate: g.cfg.ReadRate}.run(ctx, start, start.Add(g.cfg.Duration), func(i int, due time.Time) {
		select {
		case sem <- struct{}{}:
		default:
			g.readErrors.Add(1)
			g.fail("reads_in_flight")
			return
		}
		wg.Go(func() {
			defer func() { <-sem }()
			g.read(ctx, urls[i%len(urls)], tokens[i%len(tokens)], due)
		})
	})
	wg.Wait()
	return issued
}

func (g *rankingRun) read(ctx context.Context, u, tok string, due time.Time) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		g.readErrors.Add(1)
		g.fail("request")
		return
	}
	req.Header.Set("Authorization", "Bearer "+tok)
	resp, err := g.dial.rest.Do(req)
	if err != nil {
		if ctx.Err() == nil {
			g.readErrors.Add(1)
			g.fail("read_" + dialErrorKind(err))
		}
		return
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		g.readErrors.Add(1)
		g.fail("read_http_" + strconv.Itoa(resp.StatusCode))
		return
	}
	g.reads.Record(time.Since(due))
}

// cpuSeconds is the user and system CPU time of the processes, summed,
// from /proc/<pid>/stat.
func cpuSeconds(pids []int) (float64, error) {
	var total float64
	for _, pid := range pids {
		b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
		if err != nil {
			return 0, err
		}
		s, err := parseStatCPU(b)
		if err != nil {
			return 0, fmt.Errorf("pid %d: %w", pid, err)
		}
		total += s
	}
	return total, nil
}

// clockTicks is USER_HZ, 100 on Linux.
const clockTicks = 100

// parseStatCPU reads utime and stime (fields 14 and 15) of a stat line;
// the command name, in parentheses, may hold spaces.
func parseStatCPU(stat []byte) (float64, error) {
	i := bytes.LastIndexByte(stat, ')')
	if i < 0 {
		return 0, fmt.Errorf("stat: no command name")
	}
	f := strings.Fields(string(stat[i+1:]))
	if len(f) < 13 {
		return 0, fmt.Errorf("stat: %d fields after the name", len(f))
	}
	ut, err1 := strconv.ParseFloat(f[11], 64)
	st, err2 := strconv.ParseFloat(f[12], 64)
	if err1 != nil || err2 != nil {
		return 0, fmt.Errorf("stat: utime %q stime %q", f[11], f[12])
	}
	return (ut + st) / clockTicks, nil
}
