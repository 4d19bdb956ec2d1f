package admission

import (
	"cmp"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"
)

// AdmitterConfig configures the admitter of one queue.
type AdmitterConfig struct {
	Queue  Queue
	Record Record
	Line   Line
	// Owner names this process in the lease.
	Owner string
	// LeaseTTL is the life of the admitter's lease, renewed every tenth of
	// it; a dead admitter is replaced within about one. Default 4s.
	LeaseTTL time.Duration
	// Tick is the period of an admission pass. Default 100ms.
	Tick time.Duration
	// ProcessingGrace is how long a waiter taken into processing may wait
	// for its token before a sweep decides from the record. Default 5s.
	ProcessingGrace time.Duration
	// Announce is told of each admission batch (the gateway's pushes);
	// nil: none.
	Announce Announcer
	// Now is the clock of decisions; nil means time.Now.
	Now    func() time.Time
	Logger *slog.Logger
}

// Admitter admits the waiters of one queue, in order, at its rate, while it
// holds the queue's lease: any number of processes may run one, one admits
// (ARCHITECTURE.md §10).
type Admitter struct {
	cfg   AdmitterConfig
	log   *slog.Logger
	token int64     // the lease's fencing token; 0 when not held
	until time.Time // the lease's validity by this process's clock
	built bool      // the line was rebuilt from the record under this lease
	// renewed is when the lease was last renewed or acquired.
	renewed time.Time
	// swept is when a pass last settled processing, expired tokens and
	// abandoned the absent: once a second is enough for all three (grace,
	// lives and absences are seconds), so the record is not read on every
	// tick.
	swept time.Time

	// q is the queue's settings in force, changed at run time by SetQueue
	// from another goroutine; a pass reads them once, through queue().
	// cfg.Queue keeps the settings it started with (and the name).
	qmu sync.Mutex
	q   Queue
}

// NewAdmitter checks the configuration; it starts nothing.
func NewAdmitter(cfg AdmitterConfig) (*Admitter, error) {
	if cfg.Record == nil || cfg.Line == nil {
		return nil, errors.New("admitter: Record and Line are required")
	}
	if err := cfg.Queue.Normalize(); err != nil {
		return nil, err
	}
	if cfg.Owner == "" {
		cfg.Owner = "admitter-" + rand.Text()[:8]
	}
	cfg.LeaseTTL = cmp.Or(cfg.LeaseTTL, 4*time.Second)
	cfg.Tick = cmp.Or(cfg.Tick, 100*time.Millisecond)
	cfg.ProcessingGrace = cmp.Or(cfg.ProcessingGrace, 5*time.Second)
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	return &Admitter{cfg: cfg, log: cfg.Logger.With("admission", cfg.Queue.Name), q: cfg.Queue}, nil
}

// SetQueue puts new settings of the queue in force (a change made through
// the admin API): the next pass takes at the new rate, and gives the new
// token life to those it admits. The line's window bounds every one-second
// window by the rate each take passes, so a lower rate admits nobody until
// the last second's admissions are under it. The name cannot change.
func (a *Admitter) SetQueue(q Queue) error {
	if err := q.Normalize(); err != nil {
		return err
	}
	if q.Name != a.cfg.Queue.Name {
		return fmt.Errorf("admitter of %s: cannot become %s", a.cfg.Queue.Name, q.Name)
	}
	a.qmu.Lock()
	a.q = q
	a.qmu.Unlock()
	return nil
}

// queue is the queue's settings in force.
func (a *Admitter) queue() Queue {
	a.qmu.Lock()
	defer a.qmu.Unlock()
	return a.q
}

// Run steps every Tick until ctx ends, then gives the lease up.
func (a *Admitter) Run(ctx context.Context) error {
	t := time.NewTicker(a.cfg.Tick)
	defer t.Stop()
	for {
		if _, err := a.Step(ctx); err != nil && ctx.Err() == nil {
			a.log.Warn("admission pass", "err", err)
		}
		select {
		case <-ctx.Done():
			if a.token != 0 {
				rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), time.Second)
				_, _ = a.cfg.Line.ReleaseLease(rctx, a.cfg.Queue.Name, a.cfg.Owner, a.token)
				cancel()
			}
			return nil
		case <-t.C:
		}
	}
}

// Step is one turn of Run: the lease renewed when due (every tenth of its
// life) or acquired when not held, then a pass while it is held.
func (a *Admitter) Step(ctx context.Context) (PassResult, error) {
	now := a.cfg.Now()
	if a.token != 0 && now.Sub(a.renewed) >= a.cfg.LeaseTTL/10 {
		a.renew(ctx, now)
		a.renewed = now
	}
	if a.token == 0 {
		a.acquire(ctx, now)
		a.renewed = now
	}
	return a.Pass(ctx)
}

// Holding reports whether the admitter holds its queue's lease.
func (a *Admitter) Holding() bool { return a.token != 0 }

func (a *Admitter) acquire(ctx context.Context, now time.Time) {
	q := a.cfg.Queue.Name
	floor, err := a.cfg.Record.Epoch(ctx, q)
	if err != nil {
		a.log.Warn("read the admitter epoch", "err", err)
		return
	}
	token, err := a.cfg.Line.AcquireLease(ctx, q, a.cfg.Owner, now, a.cfg.LeaseTTL, floor)
	if err != nil || token == 0 {
		if err != nil {
			a.log.Warn("acquire the admitter lease", "err", err)
		}
		return
	}
	if err := a.cfg.Record.SetEpoch(ctx, q, token); err != nil {
		a.log.Warn("record the admitter epoch", "err", err)
		_, _ = a.cfg.Line.ReleaseLease(ctx, q, a.cfg.Owner, token)
		return
	}
	a.token, a.until, a.built = token, now.Add(a.cfg.LeaseTTL), false
	a.log.Info("admitter lease acquired", "token", token)
}

func (a *Admitter) renew(ctx context.Context, now time.Time) {
	ok, err := a.cfg.Line.RenewLease(ctx, a.cfg.Queue.Name, a.cfg.Owner, a.token, now, a.cfg.LeaseTTL)
	switch {
	case err != nil:
		// Unknown: keep admitting until the lease would have ended; the
		// fence refuses anything after.
		if !now.Before(a.until) {
			a.lost("lease unconfirmed past its expiry")
		}
	case !ok:
		a.lost("lease lost")
	default:
		a.until = now.Add(a.cfg.LeaseTTL)
	}
}

func (a *Admitter) lost(why string) {
	a.log.Warn("admitter lease dropped", "why", why, "token", a.token)
	a.token, a.built = 0, false
}

// PassResult counts what one pass did.
type PassResult struct {
	Admitted, Returned, Acked, Expired, Rebuilt, Abandoned int
}

// Pass is one admission pass under the lease: the line rebuilt from the
// record once per lease, the waiters left in processing by a dead pass
// settled from the record, tokens past their life expired and absent
// waiters abandoned (once a second), and up to the rate's allowance of the
// first waiters admitted.
func (a *Admitter) Pass(ctx context.Context) (PassResult, error) {
	var res PassResult
	if a.token == 0 {
		return res, nil
	}
	// In whole ms, the line's unit: the record's admitted_at is then the
	// instant the take's window judged, and no [t, t+1s) of the record
	// holds more than the rate.
	now := a.cfg.Now().Truncate(time.Millisecond)
	if !now.Before(a.until) {
		return res, nil // the lease's validity ran out: wait for the renewal
	}
	q := a.queue()
	if !a.built {
		n, err := a.rebuild(ctx)
		if err != nil {
			return res, err
		}
		res.Rebuilt, a.built = n, true
	}
	if now.Sub(a.swept) >= sweepEvery || now.Before(a.swept) {
		if err := a.settle(ctx, now, &res); err != nil {
			return res, err
		}
		expired, err := a.cfg.Record.Expire(ctx, q.Name, now, 256)
		if err != nil {
			return res, fmt.Errorf("expire tokens: %w", err)
		}
		res.Expired, a.swept = len(expired), now
		if err := a.abandon(ctx, q, now, &res); err != nil {
			// Left to the next sweep: admitting goes on meanwhile.
			a.log.Warn("abandon absent waiters", "err", err)
		}
	}
	taken, passed, err := a.cfg.Line.Take(ctx, q.Name, a.token, q.Rate, q.Rate, now)
	if errors.Is(err, ErrFenced) {
		a.lost("fenced")
		return res, nil
	}
	if err != nil || len(taken) == 0 {
		return res, err
	}
	admits := make([]Admit, len(taken))
	for i, t := range taken {
		admits[i] = Admit{UserID: t.UserID, Seq: t.Seq, Token: newToken()}
	}
	// Taken into processing, not yet acknowledged: if this process dies
	// now, the next pass's settle finds them there and asks the record.
	places, err := a.cfg.Record.Admit(ctx, q.Name, a.token, admits, now, q.TokenTTL)
	if errors.Is(err, ErrStaleEpoch) {
		a.lost("stale epoch")
		return res, nil
	}
	if err != nil {
		return res, fmt.Errorf("admit %d: %w", len(admits), err)
	}
	ready := a.ack(ctx, places, now, &res)
	res.Admitted = len(ready)
	a.announce(ctx, q.Name, ready, passed)
	return res, nil
}

// ack acknowledges the places an admission settled (READY with a token, or
// no longer waiting) and returns those admitted by the tokens given now.
func (a *Admitter) ack(ctx context.Context, places []Place, now time.Time, res *PassResult) []Place {
	var users []string
	var ready []Place
	for _, p := range places {
		if p.Status == StatusWaiting {
			continue // cannot be: Admit moves WAITING on; left to settle
		}
		users = append(users, p.UserID)
		if p.Status == StatusReady {
			ready = append(ready, p)
		}
	}
	if len(users) == 0 {
		return ready
	}
	if err := a.cfg.Line.Ack(ctx, a.cfg.Queue.Name, users); err != nil {
		// Left in processing: settle acknowledges them from the record.
		a.log.Warn("acknowledge admissions", "n", len(users), "err", err)
		return ready
	}
	res.Acked += len(users)
	a.readd(ctx, places, now)
	return ready
}

// readd puts back in the line the newer WAITING place of each user whose
// taken entry was an older place, ended since (left or abandoned, and the
// line's entry left behind by an admitter that died between the record and
// the line): the line held the user at the old place, so the new one was
// never added, and acknowledging the old entry would lose it.
func (a *Admitter) readd(ctx context.Context, places []Place, now time.Time) {
	var newer []Place
	for _, p := range places {
		if p.Status.Live() {
			continue
		}
		cur, err := a.cfg.Record.Place(ctx, a.cfg.Queue.Name, p.UserID)
		if err == nil && cur.Status == StatusWaiting && cur.Seq != p.Seq {
			newer = append(newer, cur)
		}
	}
	if len(newer) == 0 {
		return
	}
	if err := a.cfg.Line.Add(ctx, a.cfg.Queue.Name, newer, now); err != nil {
		// The next rebuild adds them: the record holds them WAITING.
		a.log.Warn("put newer places back in the line", "n", len(newer), "err", err)
	}
}

// settle decides the waiters left in processing past the grace: still
// WAITING in the record (no token was written) goes back to its place;
// anything else is acknowledged. Nobody is lost between take and token,
// and nobody gets a second token.
func (a *Admitter) settle(ctx context.Context, now time.Time, res *PassResult) error {
	q := a.cfg.Queue.Name
	stale, err := a.cfg.Line.Stale(ctx, q, now.Add(-a.cfg.ProcessingGrace))
	if err != nil || len(stale) == 0 {
		return err
	}
	var back []Taken
	var done []string
	var newer []Place
	for _, t := range stale {
		p, err := a.cfg.Record.Place(ctx, q, t.UserID)
		switch {
		case errors.Is(err, ErrNotFound):
			done = append(done, t.UserID)
		case err != nil:
			return fmt.Errorf("settle %s: %w", t.UserID, err)
		case p.Status == StatusWaiting && p.Seq == t.Seq:
			back = append(back, t)
		case p.Status == StatusWaiting:
			// A newer place than the taken entry's (see readd).
			done, newer = append(done, t.UserID), append(newer, p)
		default:
			done = append(done, t.UserID)
		}
	}
	if len(back) > 0 {
		if err := a.cfg.Line.Return(ctx, q, back); err != nil {
			return fmt.Errorf("return %d to the line: %w", len(back), err)
		}
		res.Returned += len(back)
		// Present from now: while taken, their polls and sockets could
		// not be seen, and the presence the take kept may be old enough
		// to abandon them at once.
		users := make([]string, len(back))
		for i, t := range back {
			users[i] = t.UserID
		}
		if err := a.cfg.Line.Touch(ctx, q, users, now); err != nil {
			a.log.Warn("see the returned as present", "n", len(users), "err", err)
		}
	}
	if len(done) > 0 {
		if err := a.cfg.Line.Ack(ctx, q, done); err != nil {
			return fmt.Errorf("acknowledge %d settled: %w", len(done), err)
		}
		res.Acked += len(done)
	}
	if len(newer) > 0 {
		if err := a.cfg.Line.Add(ctx, q, newer, now); err != nil {
			return fmt.Errorf("put %d newer places back in the line: %w", len(newer), err)
		}
	}
	return nil
}

// sweepEvery is the period of settling processing, expiring tokens and
// abandoning the absent.
const sweepEvery = time.Second

// abandon ends the places of the waiters unseen — no socket's Touch, no
// poll, not the entry itself — for the queue's AbandonAfter, and takes
// them out of the line, so admissions are not spent on people who left.
// The record first, the line second: a waiter is out of the line only once
// the record ended the place, or holds it no longer WAITING (then the line
// entry is a leftover, removed all the same). It reads abandonBatch at a
// time while batches come back full, within abandonRounds and
// abandonBudget of real time (ARCHITECTURE.md §7.6: a budget of I/O), so a
// crowd leaving at once is abandoned over a few sweeps without holding up
// admissions. A waiter who comes back in the instant between the read and
// the record's change loses the place all the same: the window is one
// sweep's few milliseconds, against an absence of AbandonAfter.
func (a *Admitter) abandon(ctx context.Context, q Queue, now time.Time, res *PassResult) error {
	before := now.Add(-q.AbandonAfter)
	start := time.Now()
	for range abandonRounds {
		idle, err := a.cfg.Line.Idle(ctx, q.Name, before, abandonBatch)
		if err != nil || len(idle) == 0 {
			return err
		}
		ended, err := a.cfg.Record.Abandon(ctx, q.Name, idle, now)
		if err != nil {
			return fmt.Errorf("abandon %d: %w", len(idle), err)
		}
		if err := a.cfg.Line.Remove(ctx, q.Name, idle); err != nil {
			return fmt.Errorf("remove %d abandoned from the line: %w", len(idle), err)
		}
		res.Abandoned += len(ended)
		if len(idle) < abandonBatch || time.Since(start) >= abandonBudget {
			return nil
		}
	}
	return nil
}

// The bounds of one sweep's abandonment: up to abandonRounds reads of
// abandonBatch waiters, stopping once abandonBudget of real time is spent.
const (
	abandonBatch  = 1000
	abandonRounds = 10
	abandonBudget = 250 * time.Millisecond
)

// rebuild adds every WAITING place of the record to the line, in order:
// after a loss of the line the waiters are back in their places, seen at
// the rebuild (Line.Add), so none is abandoned for the time the line was
// gone.
func (a *Admitter) rebuild(ctx context.Context) (int, error) {
	q := a.cfg.Queue.Name
	now := a.cfg.Now()
	var after int64
	n := 0
	for {
		page, err := a.cfg.Record.Waiting(ctx, q, after, 1000)
		if err != nil {
			return n, fmt.Errorf("rebuild the line: %w", err)
		}
		if len(page) == 0 {
			return n, nil
		}
		if err := a.cfg.Line.Add(ctx, q, page, now); err != nil {
			return n, fmt.Errorf("rebuild the line: %w", err)
		}
		n += len(page)
		after = page[len(page)-1].Seq
	}
}

// newToken is 128 random bits, hex.
func newToken() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}
