package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"net/http"
	"net/url"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/coder/websocket"

	"github.com/matchgate/matchgate/gateway"
	"github.com/matchgate/matchgate/protocol"
)

// Providers mode (BENCHMARKS.md §7): --providers sockets with provider
// tokens go online in one provider queue (--provider-queue) with a capacity
// of 1–3 and mixed attributes, accept every offer at once and end each
// session after an exponential time of mean --session; --sockets requesters
// join it once each, paced at --join-rate, with mixed preferences. With
// --drop-fraction, that share of the providers drops its socket once,
// mid-run, and reconnects a second later (its running sessions go on: the
// hello lists them). Measured: join → match.found, and a freed slot → the
// provider's next offer; checked from what the clients saw and from the
// presence endpoint at the end: no provider ever holds more assignments
// than its capacity, and no requester is ever held by two providers.

// providerSocket is one provider of the run.
type providerSocket struct {
	user, token, base string
	capacity          int
	attrs             map[string]any

	mu    sync.Mutex
	conn  *websocket.Conn
	live  map[string]string // assignment id → requester's ticket id
	freed []time.Time       // ends not yet followed by an offer
}

// providersRun is one providers-mode run.
type providersRun struct {
	cfg   Config
	dial  *dialer
	out   io.Writer
	start time.Time

	found, freedToOffer Histogram
	joins, matched      atomic.Int64
	offers, ends        atomic.Int64
	overCapacity, twice atomic.Int64
	drops, errorsSeen   atomic.Int64

	mu      sync.Mutex
	held    map[string]string // requester ticket → the provider holding it
	errKind map[string]int64
}

var providerLanguages = []string{"en", "en", "en", "fr", "de", "es", "ja"}

func runProviders(ctx context.Context, cfg Config, stdout, stderr io.Writer) int {
	d, err := newDialer(cfg.SourceAddrs, 16)
	if err != nil {
		fmt.Fprintf(stderr, "loadgen: %v\n", err)
		return exitError
	}
	limit := cfg.Duration + cfg.Drain + time.Duration(float64(cfg.Sockets+cfg.Providers)/cfg.ConnectRate*float64(time.Second)) +
		cfg.ConnectTimeout + time.Minute
	ctx, cancel := context.WithTimeout(ctx, limit)
	defer cancel()
	stdout = &lockedWriter{w: stdout}
	r := &providersRun{cfg: cfg, dial: d, out: stdout, start: time.Now(), held: map[string]string{}, errKind: map[string]int64{}}
	fmt.Fprintf(stdout, "loadgen providers: run %s, queue %s, %d providers, %d requesters at %.0f/s, targets %v\n",
		cfg.RunID, cfg.ProviderQueue, cfg.Providers, cfg.Sockets, cfg.JoinRate, cfg.URLs)
	rng := rand.New(rand.NewPCG(cfg.Seed, 3))

	connCtx, closeAll := context.WithCancel(ctx)
	defer closeAll()
	var readers sync.WaitGroup
	ps := make([]*providerSocket, cfg.Providers)
	for i := range ps {
		p, err := r.newProvider(i, rng)
		if err != nil {
			fmt.Fprintf(stderr, "loadgen: %v\n", err)
			return exitError
		}
		ps[i] = p
		if err := r.connectProvider(connCtx, p, &readers); err != nil {
			r.fail("provider_connect_" + dialErrorKind(err))
		}
		pace(connCtx, r.start, i+1, cfg.ConnectRate)
	}
	fmt.Fprintf(stdout, "providers online: %d\n", cfg.Providers)

	runStart := time.Now()
	var requesters sync.WaitGroup
	for i := range cfg.Sockets {
		if connCtx.Err() != nil {
			break
		}
		pace(connCtx, runStart, i, cfg.JoinRate)
		prefs := map[string]string{"language": providerLanguages[rng.IntN(len(providerLanguages))],
			"specialty": fmt.Sprintf("s%d", rng.IntN(10)), "sessionType": []string{"chat", "video"}[rng.IntN(2)],
			"minRating": fmt.Sprint(rng.IntN(4))}
		requesters.Go(func() { r.request(connCtx, i, prefs) })
		if cfg.DropFraction > 0 && i == cfg.Sockets/2 {
			r.dropSome(connCtx, ps, rng, &readers)
		}
	}
	waitOrDone(&requesters, cfg.Duration+cfg.Drain)
	presence := r.checkPresence(ctx)
	closeAll()
	readers.Wait()
	r.report(time.Since(runStart), presence)
	if r.overCapacity.Load() > 0 || r.twice.Load() > 0 || r.errorsSeen.Load() > 0 {
		return exitError
	}
	return exitOK
}

// pace sleeps until the n-th event of a rate-paced stream falls due.
func pace(ctx context.Context, start time.Time, n int, rate float64) {
	sleepCtx(ctx, time.Until(start.Add(time.Duration(float64(n)/rate*float64(time.Second)))))
}

// waitOrDone waits for wg, at most d.
func waitOrDone(wg *sync.WaitGroup, d time.Duration) {
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(d):
	}
}

func (r *providersRun) fail(kind string) {
	r.errorsSeen.Add(1)
	r.mu.Lock()
	r.errKind[kind]++
	r.mu.Unlock()
}

func (r *providersRun) token(user, role string) (string, error) {
	return gateway.SignToken([]byte(r.cfg.Secret), gateway.TokenSpec{Subject: user, Role: role, TTL: r.cfg.TokenTTL})
}

func (r *providersRun) newProvider(i int, rng *rand.Rand) (*providerSocket, error) {
	user := fmt.Sprintf("lg-%s-pro-%d", r.cfg.RunID, i)
	tok, err := r.token(user, gateway.RoleProvider)
	if err != nil {
		return nil, err
	}
	langs := []string{"en"}
	if other := providerLanguages[3+rng.IntN(4)]; rng.IntN(2) == 0 {
		langs = append(langs, other)
	}
	return &providerSocket{
		user: user, token: tok, base: r.cfg.URLs[i%len(r.cfg.URLs)], capacity: 1 + rng.IntN(3),
		attrs: map[string]any{"languages": langs, "specialties": []string{fmt.Sprintf("s%d", rng.IntN(10)), fmt.Sprintf("s%d", rng.IntN(10))},
			"sessionTypes": []string{"chat", "video"}, "rating": math.Round((2+3*rng.Float64())*10) / 10},
		live: map[string]string{},
	}, nil
}

// wireFrame is what loadgen reads of a server frame.
type wireFrame struct {
	Type       string                   `json:"type"`
	Re         string                   `json:"re"`
	Error      *struct{ Code string }   `json:"error"`
	Assignment *protocol.AssignmentView `json:"assignment"`
	Providers  []protocol.ProviderView  `json:"providers"`
	Match      *protocol.ClientMatch    `json:"match"`
}

func readFrame(ctx context.Context, c *websocket.Conn) (wireFrame, error) {
	_, b, err := c.Read(ctx)
	if err != nil {
		return wireFrame{}, err
	}
	var f wireFrame
	if err := json.Unmarshal(b, &f); err != nil {
		return wireFrame{}, fmt.Errorf("frame %q: %w", b, err)
	}
	return f, nil
}

func writeJSON(ctx context.Context, c *websocket.Conn, v any) error {
	b, _ := json.Marshal(v)
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	return c.Write(ctx, websocket.MessageText, b)
}

// connectProvider dials p, takes its running assignments from the hello
// (a reconnect), goes online and starts its reader.
func (r *providersRun) connectProvider(ctx context.Context, p *providerSocket, readers *sync.WaitGroup) error {
	dctx, cancel := context.WithTimeout(ctx, r.cfg.ConnectTimeout)
	defer cancel()
	c, err := r.dial.dialWS(dctx, p.base, p.token)
	if err != nil {
		return err
	}
	hello, err := readFrame(dctx, c)
	if err != nil || hello.Type != "hello" {
		c.CloseNow()
		return fmt.Errorf("hello: %v %s", err, hello.Type)
	}
	// The hello lists what the provider holds: the running sessions, and
	// the offers pushed while its socket was down, answered now.
	var offered []string
	p.mu.Lock()
	p.conn = c
	for _, v := range hello.Providers {
		for _, a := range v.Assignments {
			if v.Queue != r.cfg.ProviderQueue {
				continue
			}
			p.live[a.ID] = a.Requester.TicketID
			if a.Status == "OFFERED" {
				offered = append(offered, a.ID)
			}
		}
	}
	p.mu.Unlock()
	if err := writeJSON(ctx, c, map[string]any{"type": protocol.FrameProviderOnline, "id": "on", "queue": r.cfg.ProviderQueue,
		"capacity": p.capacity, "attributes": p.attrs}); err != nil {
		c.CloseNow()
		return err
	}
	for _, id := range offered {
		if err := writeJSON(ctx, c, map[string]any{"type": protocol.FrameAssignmentAccept, "id": "a", "assignmentId": id}); err != nil {
			c.CloseNow()
			return err
		}
	}
	readers.Go(func() { r.readProvider(ctx, p, c) })
	return nil
}

func (r *providersRun) readProvider(ctx context.Context, p *providerSocket, c *websocket.Conn) {
	defer c.CloseNow()
	rng := rand.New(rand.NewPCG(uint64(len(p.user)), uint64(time.Now().UnixNano())))
	for {
		f, err := readFrame(ctx, c)
		if err != nil {
			return
		}
		now := time.Now()
		switch {
		case f.Type == "error":
			code := "?"
			if f.Error != nil {
				code = f.Error.Code
			}
			r.fail("provider_error_" + code)
		case f.Type == protocol.FrameAssignmentOffered && f.Assignment != nil:
			a := f.Assignment
			r.offers.Add(1)
			p.mu.Lock()
			if len(p.freed) > 0 {
				r.freedToOffer.Record(now.Sub(p.freed[0]))
				p.freed = p.freed[1:]
			}
			p.live[a.ID] = a.Requester.TicketID
			if len(p.live) > p.capacity {
				r.overCapacity.Add(1)
			}
			p.mu.Unlock()
			r.hold(a.Requester.TicketID, p.user, a.ID)
			if a.Status == "OFFERED" {
				_ = writeJSON(ctx, c, map[string]any{"type": protocol.FrameAssignmentAccept, "id": "a", "assignmentId": a.ID})
			} else {
				r.endLater(ctx, p, c, a.ID, rng)
			}
		case f.Type == protocol.FrameAssignment && f.Assignment != nil:
			a := f.Assignment
			switch a.Status {
			case "ACCEPTED":
				r.endLater(ctx, p, c, a.ID, rng)
			case "ENDED":
				r.ends.Add(1)
				r.release(p, a, now, true)
			case "DECLINED", "EXPIRED":
				r.release(p, a, now, false)
			}
		case f.Type == protocol.FrameAssignmentUpdate && f.Assignment != nil:
			if s := f.Assignment.Status; s == "DECLINED" || s == "EXPIRED" {
				r.release(p, f.Assignment, now, false)
			}
		}
	}
}

// hold notes that provider holds ticket's requester; a second live holder
// is a double assignment.
func (r *providersRun) hold(ticket, provider, id string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if prev, ok := r.held[ticket]; ok && prev != id {
		r.twice.Add(1)
	}
	r.held[ticket] = id
}

func (r *providersRun) release(p *providerSocket, a *protocol.AssignmentView, now time.Time, freed bool) {
	p.mu.Lock()
	ticket, ok := p.live[a.ID]
	delete(p.live, a.ID)
	if ok && freed {
		p.freed = append(p.freed, now)
	}
	p.mu.Unlock()
	r.mu.Lock()
	if r.held[ticket] == a.ID {
		delete(r.held, ticket)
	}
	r.mu.Unlock()
}

// endLater ends assignment id after an exponential session.
func (r *providersRun) endLater(ctx context.Context, p *providerSocket, c *websocket.Conn, id string, rng *rand.Rand) {
	d := time.Duration(rng.ExpFloat64() * float64(r.cfg.Session))
	go func() {
		if sleepCtx(ctx, d); ctx.Err() != nil {
			return
		}
		p.mu.Lock()
		conn := p.conn
		p.mu.Unlock()
		_ = writeJSON(ctx, conn, map[string]any{"type": protocol.FrameAssignmentEnd, "id": "e", "assignmentId": id})
	}()
}

// dropSome closes a share of the providers' sockets and reconnects them a
// second later.
func (r *providersRun) dropSome(ctx context.Context, ps []*providerSocket, rng *rand.Rand, readers *sync.WaitGroup) {
	for _, p := range ps {
		if rng.Float64() >= r.cfg.DropFraction {
			continue
		}
		p.mu.Lock()
		c := p.conn
		p.mu.Unlock()
		c.CloseNow()
		r.drops.Add(1)
		go func() {
			if sleepCtx(ctx, time.Second); ctx.Err() != nil {
				return
			}
			if err := r.connectProvider(ctx, p, readers); err != nil && ctx.Err() == nil {
				r.fail("provider_reconnect_" + dialErrorKind(err))
			}
		}()
	}
}

// request is one requester: join with prefs, wait for its match to be
// READY (a decline or an expired offer puts it back: it waits on).
func (r *providersRun) request(ctx context.Context, i int, prefs map[string]string) {
	user := fmt.Sprintf("lg-%s-req-%d", r.cfg.RunID, i)
	tok, err := r.token(user, "")
	if err != nil {
		r.fail("token")
		return
	}
	dctx, cancel := context.WithTimeout(ctx, r.cfg.ConnectTimeout)
	c, err := r.dial.dialWS(dctx, r.cfg.URLs[i%len(r.cfg.URLs)], tok)
	cancel()
	if err != nil {
		r.fail("requester_connect_" + dialErrorKind(err))
		return
	}
	defer c.CloseNow()
	if f, err := readFrame(ctx, c); err != nil || f.Type != "hello" {
		r.fail("requester_hello")
		return
	}
	sent := time.Now()
	if err := writeJSON(ctx, c, map[string]any{"type": protocol.FrameJoin, "id": "j", "queue": r.cfg.ProviderQueue, "attributes": prefs}); err != nil {
		r.fail("requester_join")
		return
	}
	r.joins.Add(1)
	first := true
	for {
		f, err := readFrame(ctx, c)
		if err != nil {
			return
		}
		switch f.Type {
		case "error":
			r.fail("requester_error_" + f.Error.Code)
			return
		case protocol.FrameMatchFound:
			if first {
				r.found.Record(time.Since(sent))
				first = false
			}
			if f.Match != nil && f.Match.State == "READY" {
				r.matched.Add(1)
				return
			}
		case protocol.FrameMatchReady:
			r.matched.Add(1)
			return
		}
	}
}

// checkPresence reads the presence endpoint once the requests are done:
// every provider's used slots against its capacity, as the server holds
// them.
func (r *providersRun) checkPresence(ctx context.Context) int {
	tok, err := r.token(fmt.Sprintf("lg-%s-observer", r.cfg.RunID), "")
	if err != nil {
		return -1
	}
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, r.cfg.URLs[0]+"/v1/presence/providers?queue="+url.QueryEscape(r.cfg.ProviderQueue), nil)
	req.Header.Set("Authorization", "Bearer "+tok)
	var body protocol.PresenceBody
	if err := doJSON(r.dial.rest, req, &body); err != nil {
		r.fail("presence_" + dialErrorKind(err))
		return -1
	}
	over := 0
	for _, list := range [][]protocol.ProviderView{body.Online, body.Busy, body.Offline} {
		for _, p := range list {
			if p.Used > p.Capacity && p.Online {
				over++
			}
		}
	}
	return over
}

// providersReport is the --json of a providers run.
type providersReport struct {
	Mode            string           `json:"mode"`
	Seconds         float64          `json:"seconds"`
	Providers       int              `json:"providers"`
	Joins           int64            `json:"joins"`
	Matched         int64            `json:"matched"`
	Offers          int64            `json:"offers"`
	Ends            int64            `json:"ends"`
	Drops           int64            `json:"drops"`
	OverCapacity    int64            `json:"overCapacity"`
	DoubleAssigned  int64            `json:"doubleAssigned"`
	PresenceOver    int              `json:"presenceOverCapacity"`
	JoinToFound     Summary          `json:"joinToMatchFound"`
	FreedToOffer    Summary          `json:"freedToOffer"`
	Errors          map[string]int64 `json:"errors"`
	JoinToFoundHist *Histogram       `json:"joinToMatchFoundHist"`
}

func (r *providersRun) report(took time.Duration, presenceOver int) {
	r.mu.Lock()
	errs := make(map[string]int64, len(r.errKind))
	for k, v := range r.errKind {
		errs[k] = v
	}
	r.mu.Unlock()
	rep := providersReport{Mode: modeProviders, Seconds: took.Seconds(), Providers: r.cfg.Providers,
		Joins: r.joins.Load(), Matched: r.matched.Load(), Offers: r.offers.Load(), Ends: r.ends.Load(), Drops: r.drops.Load(),
		OverCapacity: r.overCapacity.Load(), DoubleAssigned: r.twice.Load(), PresenceOver: presenceOver,
		JoinToFound: r.found.Summary(), FreedToOffer: r.freedToOffer.Summary(), Errors: errs, JoinToFoundHist: &r.found}
	fmt.Fprintf(r.out, "\n%d joins, %d matched READY, %d offers, %d ended, %d provider sockets dropped, in %.1fs\n",
		rep.Joins, rep.Matched, rep.Offers, rep.Ends, rep.Drops, rep.Seconds)
	for _, l := range []struct {
		name string
		s    Summary
	}{{"join → match.found", rep.JoinToFound}, {"freed slot → offer", rep.FreedToOffer}} {
		fmt.Fprintf(r.out, "%-20s n=%d  p50 %.1f ms  p90 %.1f ms  p99 %.1f ms  max %.1f ms\n", l.name, l.s.Count, l.s.P50, l.s.P90, l.s.P99, l.s.Max)
	}
	fmt.Fprintf(r.out, "over capacity (clients) %d, requester held twice %d, over capacity (presence) %d, errors %v\n",
		rep.OverCapacity, rep.DoubleAssigned, rep.PresenceOver, errs)
	if r.cfg.JSONPath != "" {
		b, _ := json.MarshalIndent(rep, "", "  ")
		if err := os.WriteFile(r.cfg.JSONPath, b, 0o644); err != nil {
			fmt.Fprintf(r.out, "write %s: %v\n", r.cfg.JSONPath, err)
		}
	}
}
