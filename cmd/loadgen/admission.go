package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/matchgate/matchgate/client"
	"github.com/matchgate/matchgate/gateway"
	"github.com/matchgate/matchgate/notify"
	"github.com/matchgate/matchgate/protocol"
)

// Admission mode (BENCHMARKS.md §6): users enter one
// admission queue over REST (--enters, keep-alive clients, --enter-concurrency
// at a time, paced by --enter-rate when set) and over sockets (--sockets,
// each sending the enter frame after hello and holding the socket); the run
// then holds for --hold, ended early by an empty line (--until-empty) or
// by every socket admitted. --rate-change PUTs new rates through the admin
// API at set times. loadgen subscribes to the queue's channel itself (the
// admitter publishes the passed counter there after each batch) to stamp
// each batch, and measures, per batch, the delay to the last socket whose
// admission.position reflects it.

// RateChange is one scheduled PUT of the admission queue's rate.
type RateChange struct {
	After time.Duration `json:"after"` // from the run's start
	Rate  int           `json:"rate"`
}

// parseRateChanges reads "75s=40,2m=10".
func parseRateChanges(s string) ([]RateChange, error) {
	var out []RateChange
	for _, item := range splitList(s) {
		at, r, ok := strings.Cut(item, "=")
		d, err := time.ParseDuration(at)
		rate, rerr := strconv.Atoi(r)
		if !ok || err != nil || rerr != nil || d < 0 || rate < 1 {
			return nil, fmt.Errorf("--rate-change %q: want AFTER=RATE (a duration, a positive rate)", item)
		}
		out = append(out, RateChange{After: d, Rate: rate})
	}
	return out, nil
}

// batch is one admission batch as loadgen heard it: the queue's passed
// counter after it, and when the message arrived.
type batch struct {
	passed int64
	at     time.Time
}

// batchLog records the queue channel's messages.
type batchLog struct {
	mu      sync.Mutex
	batches []batch // in arrival order; counters only grow
	at      map[int64]time.Time
}

func (l *batchLog) add(passed int64, at time.Time) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.at == nil {
		l.at = map[int64]time.Time{}
	}
	if _, dup := l.at[passed]; dup {
		return
	}
	l.at[passed] = at
	l.batches = append(l.batches, batch{passed, at})
}

func (l *batchLog) snapshot() ([]batch, map[int64]time.Time) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]batch(nil), l.batches...), l.at
}

// push is one admission.position received: the rank and when.
type push struct {
	rank int64
	at   time.Time
}

// waiter is one socket user of admission mode. Its reader goroutine is the
// only one that writes its fields after the enter; the summary reads them
// once every reader has ended.
type waiter struct {
	user, token, base string

	sent, entered time.Time
	rank0         int64 // the rank told by the entered reply
	pushes        []push
	moved         int // pushes whose rank moved by the gateway's step
	ready         time.Time
}

// admissionRun is one admission-mode run.
type admissionRun struct {
	cfg   Config
	dial  *dialer
	out   io.Writer
	start time.Time
	log   batchLog

	entersDone, entersNew, entersRepeat, enterErrors atomic.Int64
	socketsOpen, socketsEntered, readies             atomic.Int64
	positionPushes                                   atomic.Int64
	restEnter, wsEnter, connect                      Histogram

	errMu  sync.Mutex
	errors map[string]int64

	waiters []*waiter
}

func (a *admissionRun) fail(kind string) {
	a.errMu.Lock()
	defer a.errMu.Unlock()
	a.errors[kind]++
}

// runAdmission runs admission mode in this process and prints its report.
func runAdmission(ctx context.Context, cfg Config, stdout, stderr io.Writer) int {
	d, err := newDialer(cfg.SourceAddrs, cfg.EnterConcurrency+16)
	if err != nil {
		fmt.Fprintf(stderr, "loadgen: %v\n", err)
		return exitError
	}
	limit := cfg.Duration + cfg.Hold + time.Duration(float64(cfg.Sockets)/cfg.ConnectRate*float64(time.Second)) +
		cfg.ConnectTimeout + time.Minute
	ctx, cancel := context.WithTimeout(ctx, limit)
	defer cancel()
	// The progress line and the rate changes print from their goroutines.
	stdout = &lockedWriter{w: stdout}
	a := &admissionRun{cfg: cfg, dial: d, out: stdout, start: time.Now(), errors: map[string]int64{}}
	fmt.Fprintf(stdout, "loadgen admission: run %s, queue %s, %d REST enters, %d sockets, targets %v\n",
		cfg.RunID, cfg.AdmissionQueue, cfg.Enters, cfg.Sockets, cfg.URLs)

	subCtx, stopSub := context.WithCancel(ctx)
	defer stopSub()
	var bg sync.WaitGroup
	if err := a.subscribe(subCtx, &bg); err != nil {
		fmt.Fprintf(stderr, "loadgen: %v\n", err)
		return exitError
	}
	bg.Go(func() { a.changeRates(subCtx) })
	bg.Go(func() { a.progress(subCtx) })

	entersStart := time.Now()
	a.restEnters(ctx)
	entersSeconds := time.Since(entersStart).Seconds()

	var readers sync.WaitGroup
	connCtx, closeSockets := context.WithCancel(ctx)
	a.openSockets(connCtx, &readers)
	a.hold(ctx)
	closeSockets()
	readers.Wait()
	stopSub()
	bg.Wait()

	final, err := a.queueInfo(context.Background())
	if err != nil {
		a.fail("queues_" + dialErrorKind(err))
	}
	a.report(entersSeconds, final)
	if a.enterErrors.Load() > 0 {
		return exitError
	}
	return exitOK
}

// lockedWriter serializes writes to w.
type lockedWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}

// subscribe listens to the queue's channel and logs every batch's counter,
// in a goroutine of wg that ends with ctx.
func (a *admissionRun) subscribe(ctx context.Context, wg *sync.WaitGroup) error {
	opts, err := redis.ParseURL(a.cfg.RedisURL)
	if err != nil {
		return fmt.Errorf("--redis-url: %w", err)
	}
	opts.PoolSize = 2
	rdb := redis.NewClient(opts)
	ps := rdb.Subscribe(ctx, notify.QueueChannel(a.cfg.RedisPrefix, a.cfg.AdmissionQueue))
	// The confirmation: batches from here on are heard.
	if _, err := ps.Receive(ctx); err != nil {
		_ = ps.Close()
		_ = rdb.Close()
		return fmt.Errorf("subscribe to the queue's channel: %w", err)
	}
	wg.Go(func() {
		defer rdb.Close()
		defer ps.Close()
		ch := ps.Channel(redis.WithChannelSize(4096))
		for {
			select {
			case <-ctx.Done():
				return
			case m, ok := <-ch:
				if !ok {
					return
				}
				now := time.Now()
				if n, err := strconv.ParseInt(m.Payload, 10, 64); err == nil {
					a.log.add(n, now)
				}
			}
		}
	})
	return nil
}

// changeRates PUTs each --rate-change at its time.
func (a *admissionRun) changeRates(ctx context.Context) {
	for _, c := range a.cfg.RateChanges {
		sleepCtx(ctx, time.Until(a.start.Add(c.After)))
		if ctx.Err() != nil {
			return
		}
		body := map[string]any{}
		if a.cfg.QueueSettings != "" {
			_ = json.Unmarshal([]byte(a.cfg.QueueSettings), &body) // validated at parse
		}
		body["kind"], body["rate"] = "admission", c.Rate
		b, _ := json.Marshal(body)
		req, err := http.NewRequestWithContext(ctx, http.MethodPut,
			a.cfg.URLs[0]+"/v1/admin/queues/"+url.PathEscape(a.cfg.AdmissionQueue), bytes.NewReader(b))
		if err != nil {
			a.fail("rate_change")
			continue
		}
		req.Header.Set("Authorization", "Bearer "+a.cfg.AdminToken)
		req.Header.Set("Content-Type", "application/json")
		if err := doJSON(a.dial.rest, req, nil); err != nil {
			a.fail("rate_change")
			fmt.Fprintf(a.out, "rate change to %d: %v\n", c.Rate, err)
			continue
		}
		fmt.Fprintf(a.out, "[%6.1fs] rate changed to %d/s at %s\n", time.Since(a.start).Seconds(), c.Rate,
			time.Now().UTC().Format(time.RFC3339Nano))
	}
}

// mint returns user i's id and a locally minted token.
func (a *admissionRun) mint(kind string, i int) (string, string, error) {
	user := fmt.Sprintf("lga-%s-%s%d", a.cfg.RunID, kind, i)
	skill := 1500.0
	tok, err := gateway.MintToken([]byte(a.cfg.Secret), user, &skill, a.cfg.TokenTTL, time.Now())
	return user, tok, err
}

// restEnters enters --enters users over REST, --enter-concurrency at a
// time, each once, within --duration.
func (a *admissionRun) restEnters(ctx context.Context) {
	n := a.cfg.Enters
	if n == 0 {
		return
	}
	ctx, cancel := context.WithTimeout(ctx, a.cfg.Duration)
	defer cancel()
	var next atomic.Int64
	start := time.Now()
	path := "/v1/admission/" + url.PathEscape(a.cfg.AdmissionQueue) + "/enter"
	var wg sync.WaitGroup
	for w := range a.cfg.EnterConcurrency {
		wg.Go(func() {
			for ctx.Err() == nil {
				i := int(next.Add(1) - 1)
				if i >= n {
					return
				}
				if r := a.cfg.EnterRate; r > 0 {
					sleepCtx(ctx, time.Until(start.Add(time.Duration(float64(i)/r*float64(time.Second)))))
					if ctx.Err() != nil {
						return
					}
				}
				a.enterREST(ctx, path, i, w)
			}
		})
	}
	wg.Wait()
}

func (a *admissionRun) enterREST(ctx context.Context, path string, i, w int) {
	_, tok, err := a.mint("r", i)
	if err != nil {
		a.enterErrors.Add(1)
		a.fail("mint")
		return
	}
	base := a.cfg.URLs[w%len(a.cfg.URLs)]
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, base+path, strings.NewReader("{}"))
	if err != nil {
		a.enterErrors.Add(1)
		a.fail("request")
		return
	}
	req.Header.Set("Authorization", "Bearer "+tok)
	req.Header.Set("Content-Type", "application/json")
	sent := time.Now()
	resp, err := a.dial.rest.Do(req)
	if err != nil {
		if ctx.Err() == nil {
			a.enterErrors.Add(1)
			a.fail("rest_" + dialErrorKind(err))
		}
		return
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	switch resp.StatusCode {
	case http.StatusAccepted:
		a.entersNew.Add(1)
	case http.StatusOK:
		a.entersRepeat.Add(1)
	default:
		a.enterErrors.Add(1)
		a.fail("http_" + strconv.Itoa(resp.StatusCode))
		return
	}
	a.restEnter.Record(time.Since(sent))
	a.entersDone.Add(1)
}

// openSockets connects --sockets waiters at --connect-rate; each enters
// over its socket and reads until ctx ends.
func (a *admissionRun) openSockets(ctx context.Context, readers *sync.WaitGroup) {
	n := a.cfg.Sockets
	if n == 0 {
		return
	}
	a.waiters = make([]*waiter, n)
	for i := range a.waiters {
		user, tok, err := a.mint("s", i)
		if err != nil {
			a.fail("mint")
			continue
		}
		a.waiters[i] = &waiter{user: user, token: tok, base: a.cfg.URLs[i%len(a.cfg.URLs)]}
	}
	start := time.Now()
	limit := time.Duration(float64(n)/a.cfg.ConnectRate*float64(time.Second)) + time.Second
	pc := pacer{rate: a.cfg.ConnectRate, total: n}
	pc.run(ctx, start, start.Add(limit), func(i int, due time.Time) {
		if w := a.waiters[i]; w != nil {
			readers.Go(func() { a.runWaiter(ctx, w, due) })
		}
	})
	// Wait (bounded) for the entries to be answered.
	deadline := time.Now().Add(a.cfg.ConnectTimeout)
	for time.Now().Before(deadline) && ctx.Err() == nil && a.socketsEntered.Load()+int64(a.failedSockets()) < int64(n) {
		sleepCtx(ctx, 20*time.Millisecond)
	}
}

func (a *admissionRun) failedSockets() int {
	a.errMu.Lock()
	defer a.errMu.Unlock()
	t := 0
	for k, v := range a.errors {
		if strings.HasPrefix(k, "socket_") {
			t += int(v)
		}
	}
	return t
}

// runWaiter connects, enters and reads the socket until ctx ends.
func (a *admissionRun) runWaiter(ctx context.Context, w *waiter, due time.Time) {
	c, err := client.Dial(ctx, w.base, client.StaticToken(w.token), &client.Options{
		HTTPClient: a.dial.ws, DialTimeout: a.cfg.ConnectTimeout, RequestTimeout: a.cfg.ConnectTimeout,
		// A socket the server closes is counted, not reconnected.
		DisableReconnect: true,
		// The server pings every socket; one goroutine reads each.
		PingInterval: -1,
	})
	if err != nil {
		a.fail("socket_" + dialErrorKind(err))
		return
	}
	defer c.Close()
	// Dial returns with the hello read: the connect is timed to it.
	a.connect.Record(time.Since(due))
	a.socketsOpen.Add(1)
	defer a.socketsOpen.Add(-1)
	// Closing ends the events: the run's end is the reader's end.
	stop := context.AfterFunc(ctx, func() { _ = c.Close() })
	defer stop()
	w.sent = time.Now()
	if _, err := c.Enter(ctx, a.cfg.AdmissionQueue); err != nil {
		var e *client.Error
		switch {
		case errors.As(err, &e):
			a.fail("frame_" + string(e.Code))
			a.fail("socket_enter_refused")
		case ctx.Err() == nil:
			a.fail("socket_write")
		}
		return
	}
	// Each event is stamped by the client as its frame was read.
	for e := range c.Events() {
		switch e := e.(type) {
		case client.AdmissionEvent:
			switch e.Frame {
			case protocol.FrameEntered:
				if w.entered.IsZero() {
					w.entered, w.rank0 = e.At, e.Position.Rank
					a.wsEnter.Record(e.At.Sub(w.sent))
					a.socketsEntered.Add(1)
				}
			case protocol.FrameAdmissionPosition:
				if e.Position.Status == protocol.PositionWaiting {
					a.positionPushes.Add(1)
					w.pushes = append(w.pushes, push{rank: e.Position.Rank, at: e.At})
				}
			case protocol.FrameAdmissionReady:
				if w.ready.IsZero() {
					w.ready = e.At
					a.readies.Add(1)
				}
			}
		case client.ErrorEvent:
			code := "error"
			var ce *client.Error
			if errors.As(e.Err, &ce) {
				code = string(ce.Code)
			}
			a.fail("frame_" + code)
		case client.GapEvent:
			// Pushes this reader fell behind on are not in the figures.
			a.fail("socket_events_dropped")
		}
	}
	if err := c.Err(); err != nil && ctx.Err() == nil {
		a.fail("socket_closed_" + closeKind(err))
	}
}

// hold waits --hold, less once the line is empty (--until-empty) or every
// socket is admitted (sockets only).
func (a *admissionRun) hold(ctx context.Context) {
	end := time.Now().Add(a.cfg.Hold)
	lastCheck := time.Time{}
	for ctx.Err() == nil && time.Now().Before(end) {
		if a.cfg.Enters == 0 && a.cfg.Sockets > 0 && a.readies.Load() >= a.socketsEntered.Load() {
			return
		}
		if a.cfg.UntilEmpty && time.Since(lastCheck) >= time.Second {
			lastCheck = time.Now()
			if q, err := a.queueInfo(ctx); err == nil && q != nil && q.Waiting == 0 {
				return
			}
		}
		sleepCtx(ctx, 50*time.Millisecond)
	}
}

// admissionInfo is the queue as GET /v1/queues lists it.
type admissionInfo struct {
	Name         string `json:"name"`
	Kind         string `json:"kind"`
	Rate         int    `json:"rate"`
	Waiting      int64  `json:"waiting"`
	MeasuredRate struct {
		Mean float64 `json:"mean"`
		Low  float64 `json:"low"`
		High float64 `json:"high"`
	} `json:"measuredRate"`
	ETAError struct {
		P50        *float64 `json:"p50"`
		P90        *float64 `json:"p90"`
		Admissions int      `json:"admissions"`
	} `json:"etaError"`
}

// queueInfo reads the admission queue from GET /v1/queues (nil when not
// listed).
func (a *admissionRun) queueInfo(ctx context.Context) (*admissionInfo, error) {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	_, tok, err := a.mint("q", 0)
	if err != nil {
		return nil, err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, a.cfg.URLs[0]+"/v1/queues", nil)
	if err != nil {
		return nil, err
	}
	req.Header.Set("Authorization", "Bearer "+tok)
	var body struct {
		Queues []admissionInfo `json:"queues"`
	}
	if err := doJSON(a.dial.rest, req, &body); err != nil {
		return nil, err
	}
	for i := range body.Queues {
		if body.Queues[i].Name == a.cfg.AdmissionQueue && body.Queues[i].Kind == "admission" {
			return &body.Queues[i], nil
		}
	}
	return nil, nil
}

// progress prints a line every --progress.
func (a *admissionRun) progress(ctx context.Context) {
	t := time.NewTicker(a.cfg.Progress)
	defer t.Stop()
	last, prev := time.Now(), int64(0)
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		now := time.Now()
		done := a.entersDone.Load()
		bs, _ := a.log.snapshot()
		passed := int64(0)
		if len(bs) > 0 {
			passed = bs[len(bs)-1].passed
		}
		fmt.Fprintf(a.out, "[%6.1fs] enters %d (%.0f/s) errors %d  sockets %d entered %d  pushes %d ready %d  batches %d passed %d\n",
			now.Sub(a.start).Seconds(), done, float64(done-prev)/now.Sub(last).Seconds(), a.enterErrors.Load(),
			a.socketsOpen.Load(), a.socketsEntered.Load(), a.positionPushes.Load(), a.readies.Load(), len(bs), passed)
		last, prev = now, done
	}
}

// pushFigures are the position-push delays of a run.
type pushFigures struct {
	perPush, perBatch, ready Histogram
	moved, early, unmatched  int
	// worst is each batch's (by the passed counter after it) slowest push
	// here: several loadgens' runs merge into one figure by the largest
	// of each batch.
	worst map[int64]time.Duration
}

// pushDelays attributes every moved push to the batch it reflects and
// measures the delays. A waiter's rank plus the queue's passed counter is
// its place in the line, fixed while nobody ahead leaves (loadgen's
// sockets stay): a push of rank r reflects the counter place − r. The
// place starts as the entered rank plus the last counter heard before the
// answer, and each push is matched to the published counter nearest its
// own (closer than half the way to the next one), which corrects a place
// misjudged by a batch heard around the enter. Only pushes whose rank
// moved by the gateway's step (a hundredth of the rank, at least one) are
// batch pushes; the periodic exact reads push the rest.
func (a *admissionRun) pushDelays() *pushFigures {
	bs, at := a.log.snapshot()
	pf := &pushFigures{}
	counters := make([]int64, len(bs))
	for i, b := range bs {
		counters[i] = b.passed
	}
	sort.Slice(counters, func(i, j int) bool { return counters[i] < counters[j] })
	// nearest returns the published counter nearest c, if within half the
	// gap to its neighbour on c's side (at least two places).
	nearest := func(c int64) (int64, bool) {
		i := sort.Search(len(counters), func(i int) bool { return counters[i] >= c })
		best, ok := int64(0), false
		for _, j := range []int{i - 1, i} {
			if j >= 0 && j < len(counters) && (!ok || abs64(counters[j]-c) < abs64(best-c)) {
				best, ok = counters[j], true
			}
		}
		if !ok {
			return 0, false
		}
		// The gap on c's side; past either end, the one inside.
		gap := int64(0)
		j := sort.Search(len(counters), func(i int) bool { return counters[i] >= best })
		below, above := j > 0, j+1 < len(counters)
		switch {
		case below && (c < best || !above):
			gap = best - counters[j-1]
		case above:
			gap = counters[j+1] - best
		}
		return best, abs64(best-c) <= max(2, gap/2-1)
	}
	lastBefore := func(t time.Time) int64 {
		i := sort.Search(len(bs), func(i int) bool { return !bs[i].at.Before(t) })
		if i == 0 {
			return 0
		}
		return bs[i-1].passed
	}
	// Batches heard before the last socket entered are the connect
	// phase's: its pushes count, the batch is not one of all the sockets.
	var allIn time.Time
	for _, w := range a.waiters {
		if w != nil && w.entered.After(allIn) {
			allIn = w.entered
		}
	}
	worst := map[int64]time.Duration{}
	for _, w := range a.waiters {
		if w == nil || w.entered.IsZero() {
			continue
		}
		place := w.rank0 + lastBefore(w.entered)
		prev := w.rank0
		for _, p := range w.pushes {
			moved := p.rank < prev && prev-p.rank >= max(1, prev/100)
			prev = min(prev, p.rank)
			if !moved {
				continue
			}
			c, ok := nearest(place - p.rank)
			if !ok {
				pf.unmatched++
				continue
			}
			place = p.rank + c
			pf.moved++
			d := p.at.Sub(at[c])
			if d < 0 {
				pf.early++
				d = 0
			}
			pf.perPush.Record(d)
			if !at[c].Before(allIn) {
				worst[c] = max(worst[c], d)
			}
		}
		if !w.ready.IsZero() {
			// Admitted by the first batch whose counter passed its place.
			i := sort.Search(len(bs), func(i int) bool { return bs[i].passed > place })
			if i < len(bs) {
				pf.ready.Record(max(0, w.ready.Sub(bs[i].at)))
			}
		}
	}
	for _, d := range worst {
		pf.perBatch.Record(d)
	}
	pf.worst = worst
	return pf
}

func abs64(x int64) int64 {
	if x < 0 {
		return -x
	}
	return x
}

func ms(us float64) string { return fmt.Sprintf("%.1f", us/1000) }

func summaryLine(name string, h *Histogram) string {
	n := h.Count()
	if n == 0 {
		return fmt.Sprintf("  %-28s -", name)
	}
	return fmt.Sprintf("  %-28s n=%d p50 %s p90 %s p99 %s max %s ms", name, n,
		ms(h.Quantile(0.50)), ms(h.Quantile(0.90)), ms(h.Quantile(0.99)), ms(h.Quantile(1)))
}

// report prints the run's figures.
func (a *admissionRun) report(entersSeconds float64, q *admissionInfo) {
	w := a.out
	fmt.Fprintf(w, "\nadmission run %s, queue %s\n", a.cfg.RunID, a.cfg.AdmissionQueue)
	if a.cfg.Enters > 0 {
		done := a.entersDone.Load()
		fmt.Fprintf(w, "  REST enters: %d of %d in %.1fs = %.0f/s (new %d, repeated %d, errors %d)\n",
			done, a.cfg.Enters, entersSeconds, float64(done)/max(entersSeconds, 1e-9),
			a.entersNew.Load(), a.entersRepeat.Load(), a.enterErrors.Load())
		fmt.Fprintln(w, summaryLine("rest enter", &a.restEnter))
	}
	if a.cfg.Sockets > 0 {
		pf := a.pushDelays()
		fmt.Fprintf(w, "  sockets: %d entered of %d; %d admission.position pushes (%d moved and matched to a batch, %d early, %d unmatched); %d admission.ready\n",
			a.socketsEntered.Load(), a.cfg.Sockets, a.positionPushes.Load(), pf.moved, pf.early, pf.unmatched, a.readies.Load())
		fmt.Fprintln(w, summaryLine("connect", &a.connect))
		fmt.Fprintln(w, summaryLine("ws enter→entered", &a.wsEnter))
		fmt.Fprintln(w, summaryLine("batch→last socket's push", &pf.perBatch)+" (batches after the last enter)")
		fmt.Fprintln(w, summaryLine("batch→push (each)", &pf.perPush))
		fmt.Fprintln(w, summaryLine("batch→admission.ready", &pf.ready))
	}
	bs, _ := a.log.snapshot()
	if len(bs) > 0 {
		fmt.Fprintf(w, "  batches heard: %d, passed %d → %d\n", len(bs), bs[0].passed, bs[len(bs)-1].passed)
	}
	if q != nil {
		etaP := func(p *float64) string {
			if p == nil {
				return "null"
			}
			return strconv.FormatFloat(*p, 'f', 3, 64)
		}
		fmt.Fprintf(w, "  GET /v1/queues: rate %d, waiting %d, measuredRate %.2f (%.2f–%.2f), etaError p50 %s p90 %s over %d\n",
			q.Rate, q.Waiting, q.MeasuredRate.Mean, q.MeasuredRate.Low, q.MeasuredRate.High,
			etaP(q.ETAError.P50), etaP(q.ETAError.P90), q.ETAError.Admissions)
	}
	a.errMu.Lock()
	defer a.errMu.Unlock()
	if len(a.errors) > 0 {
		fmt.Fprintf(w, "  errors: %s\n", strings.Join(sortedCounts(a.errors), ", "))
	}
	if a.cfg.JSONPath != "" {
		a.writeJSON(q)
	}
}

// writeJSON writes the counts and the GET /v1/queues figures.
func (a *admissionRun) writeJSON(q *admissionInfo) {
	out := map[string]any{
		"mode": modeAdmission, "runID": a.cfg.RunID, "queue": a.cfg.AdmissionQueue,
		"entersDone": a.entersDone.Load(), "entersNew": a.entersNew.Load(), "enterErrors": a.enterErrors.Load(),
		"socketsEntered": a.socketsEntered.Load(), "positionPushes": a.positionPushes.Load(), "readies": a.readies.Load(),
		"restEnter": a.restEnter.Summary(), "errors": a.errors, "queueInfo": q,
	}
	if a.cfg.Sockets > 0 {
		pf := a.pushDelays()
		out["batchToLastPush"], out["batchToPush"], out["batchToReady"] = pf.perBatch.Summary(), pf.perPush.Summary(), pf.ready.Summary()
		worst := make(map[string]float64, len(pf.worst))
		for c, d := range pf.worst {
			worst[strconv.FormatInt(c, 10)] = float64(d.Microseconds()) / 1000
		}
		out["batchWorstMs"] = worst
	}
	b, err := json.MarshalIndent(out, "", "  ")
	if err == nil {
		err = os.WriteFile(a.cfg.JSONPath, append(b, '\n'), 0o644)
	}
	if err != nil {
		a.fail("json")
		fmt.Fprintf(a.out, "write %s: %v\n", a.cfg.JSONPath, err)
	}
}
