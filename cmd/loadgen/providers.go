package main

import (
	"context"
	"encoding/json"
	"errors"
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

	"github.com/matchgate/matchgate/client"
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
	attrs             client.Attributes

	mu    sync.Mutex
	conn  *client.Client
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
		attrs: client.Attributes{Languages: langs, Specialties: []string{fmt.Sprintf("s%d", rng.IntN(10)), fmt.Sprintf("s%d", rng.IntN(10))},
			SessionTypes: []string{"chat", "video"}, Rating: math.Round((2+3*rng.Float64())*10) / 10},
		live: map[string]string{},
	}, nil
}

// dialClient opens a client/ connection to base with tok, through the
// run's dialer, and returns once its hello is read.
func (r *providersRun) dialClient(ctx context.Context, base, tok string) (*client.Client, error) {
	return client.Dial(ctx, base, client.StaticToken(tok), &client.Options{
		HTTPClient: r.dial.ws, DialTimeout: r.cfg.ConnectTimeout, RequestTimeout: 5 * time.Second,
		// A lost socket is the run's to reconnect (dropSome), or the end of
		// a requester.
		DisableReconnect: true,
		// The server pings every socket; one goroutine reads each.
		PingInterval: -1,
	})
}

// failed records a refused or lost command under prefix and its code.
func (r *providersRun) failed(prefix string, err error) {
	var e *client.Error
	switch {
	case errors.As(err, &e):
		r.fail(prefix + string(e.Code))
	case errors.Is(err, client.ErrClosed), errors.Is(err, context.Canceled):
		// the socket was dropped or the run is over
	default:
		r.fail(prefix + "lost")
	}
}

// connectProvider dials p, takes its running assignments from the hello
// (a reconnect), goes online and starts its reader.
func (r *providersRun) connectProvider(ctx context.Context, p *providerSocket, readers *sync.WaitGroup) error {
	c, err := r.dialClient(ctx, p.base, p.token)
	if err != nil {
		return err
	}
	// The hello lists what the provider holds: the running sessions, and
	// the offers pushed while its socket was down, answered now.
	var offered []string
	p.mu.Lock()
	p.conn = c
	for _, v := range c.Hello().Providers {
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
	readers.Go(func() { r.readProvider(ctx, p, c, readers) })
	if _, err := c.ProviderOnline(ctx, r.cfg.ProviderQueue, p.capacity, &p.attrs); err != nil {
		r.failed("provider_error_", err)
	}
	for _, id := range offered {
		r.acceptLater(ctx, p, c, id, readers)
	}
	return nil
}

// acceptLater accepts an offer from its own goroutine (the reply comes
// through the client's reader, which the events loop must not hold up)
// and acts on the reply: an accepted session is ended later.
//
// The replies, not the events, drive the sessions: the client delivers an
// assignment's state once per version, and the accept's reply carries the
// version its assignment.update push may have brought first.
func (r *providersRun) acceptLater(ctx context.Context, p *providerSocket, c *client.Client, id string, wg *sync.WaitGroup) {
	wg.Go(func() {
		a, err := c.AcceptAssignment(ctx, id)
		if err != nil {
			r.failed("provider_error_", err)
			return
		}
		r.settled(ctx, p, a, wg)
	})
}

// settled acts on an assignment's state in a reply.
func (r *providersRun) settled(ctx context.Context, p *providerSocket, a client.Assignment, wg *sync.WaitGroup) {
	now := time.Now()
	switch a.Status {
	case "ACCEPTED":
		rng := rand.New(rand.NewPCG(uint64(len(p.user)), uint64(now.UnixNano())))
		r.endLater(ctx, p, a.ID, rng, wg)
	case "ENDED":
		r.ends.Add(1)
		r.release(p, a, now, true)
	case "DECLINED", "EXPIRED":
		r.release(p, a, now, false)
	}
}

// readProvider handles a provider's events until its client is closed
// (a drop, or the end of the run).
func (r *providersRun) readProvider(ctx context.Context, p *providerSocket, c *client.Client, wg *sync.WaitGroup) {
	stop := context.AfterFunc(ctx, func() { _ = c.Close() })
	defer stop()
	rng := rand.New(rand.NewPCG(uint64(len(p.user)), uint64(time.Now().UnixNano())))
	for e := range c.Events() {
		now := time.Now()
		switch e := e.(type) {
		case client.ErrorEvent:
			var ce *client.Error
			code := "?"
			if errors.As(e.Err, &ce) {
				code = string(ce.Code)
			}
			r.fail("provider_error_" + code)
		case client.AssignmentEvent:
			a := e.Assignment
			switch e.Frame {
			case protocol.FrameAssignmentOffered:
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
					r.acceptLater(ctx, p, c, a.ID, wg)
				} else {
					r.endLater(ctx, p, a.ID, rng, wg)
				}
			case protocol.FrameAssignmentUpdate, protocol.FrameAssignment:
				// A push or an end's reply, in the order read: a slot is
				// free before an offer read after it is counted (the end's
				// own goroutine may see its reply later, and the client
				// delivers each version once, whichever frame carried it).
				switch a.Status {
				case "ENDED":
					r.release(p, a, now, true)
				case "DECLINED", "EXPIRED":
					r.release(p, a, now, false)
				}
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

func (r *providersRun) release(p *providerSocket, a client.Assignment, now time.Time, freed bool) {
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

// endLater ends assignment id after an exponential session, on the
// provider's client of then (a dropped provider's is a new one).
func (r *providersRun) endLater(ctx context.Context, p *providerSocket, id string, rng *rand.Rand, wg *sync.WaitGroup) {
	d := time.Duration(rng.ExpFloat64() * float64(r.cfg.Session))
	wg.Go(func() {
		if sleepCtx(ctx, d); ctx.Err() != nil {
			return
		}
		p.mu.Lock()
		c := p.conn
		p.mu.Unlock()
		a, err := c.EndAssignment(ctx, id)
		if err != nil {
			r.failed("provider_error_", err)
			return
		}
		r.settled(ctx, p, a, wg)
	})
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
		if c == nil {
			continue // its connect failed, and was counted
		}
		_ = c.Close()
		r.drops.Add(1)
		readers.Go(func() {
			if sleepCtx(ctx, time.Second); ctx.Err() != nil {
				return
			}
			if err := r.connectProvider(ctx, p, readers); err != nil && ctx.Err() == nil {
				r.fail("provider_reconnect_" + dialErrorKind(err))
			}
		})
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
	c, err := r.dialClient(ctx, r.cfg.URLs[i%len(r.cfg.URLs)], tok)
	if err != nil {
		r.fail("requester_connect_" + dialErrorKind(err))
		return
	}
	defer c.Close()
	sent := time.Now()
	if _, err := c.Join(ctx, r.cfg.ProviderQueue, client.JoinOptions{Attributes: prefs}); err != nil {
		r.failed("requester_error_", err)
		return
	}
	r.joins.Add(1)
	first := true
	for {
		var e client.Event
		select {
		case <-ctx.Done():
			return
		case e = <-c.Events():
		}
		switch e := e.(type) {
		case nil:
			return // the client stopped: its socket was lost
		case client.ErrorEvent:
			r.failed("requester_error_", e.Err)
			return
		case client.MatchEvent:
			switch e.Frame {
			case protocol.FrameMatchFound:
				if first {
					r.found.Record(time.Since(sent))
					first = false
				}
				if e.Match.State == client.MatchReady {
					r.matched.Add(1)
					return
				}
			case protocol.FrameMatchReady:
				r.matched.Add(1)
				return
			}
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
