package admission

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"sync"
	"sync/atomic"
	"time"
)

// Queue is one admission queue's configuration.
type Queue struct {
	Name string
	// Rate is the admissions per second of the queue as a whole, however
	// many processes run.
	Rate int
	// TokenTTL is a READY token's life.
	TokenTTL time.Duration
	// AbandonAfter: a waiter with no socket and no poll for this long
	// loses the place.
	AbandonAfter time.Duration
}

// Defaults of a Queue's zero fields.
const (
	DefaultTokenTTL     = 5 * time.Minute
	DefaultAbandonAfter = 60 * time.Second
	// MinAbandonAfter leaves room for a few of the gateways' touches of
	// the waiters holding a socket (every 3 s) within abandonAfter.
	MinAbandonAfter = 10 * time.Second
)

// Normalize fills the zero fields and checks the rest.
func (q *Queue) Normalize() error {
	if q.Name == "" {
		return errors.New("admission queue: no name")
	}
	if q.Rate <= 0 {
		return fmt.Errorf("admission queue %s: rate must be at least 1 a second", q.Name)
	}
	if q.TokenTTL == 0 {
		q.TokenTTL = DefaultTokenTTL
	}
	if q.AbandonAfter == 0 {
		q.AbandonAfter = DefaultAbandonAfter
	}
	if q.TokenTTL < time.Second {
		return fmt.Errorf("admission queue %s: tokenTTL must be at least 1s", q.Name)
	}
	if q.AbandonAfter < MinAbandonAfter {
		return fmt.Errorf("admission queue %s: abandonAfter must be at least %s", q.Name, MinAbandonAfter)
	}
	return nil
}

// ServiceConfig configures the admission Service.
type ServiceConfig struct {
	Queues []Queue
	Record Record
	Line   Line
	// Now is the clock of decisions; nil means time.Now.
	Now    func() time.Time
	Logger *slog.Logger
}

// Service is the player's and the protected downstream's side of the
// admission queues: enter, position, leave; claim, consume, release.
type Service struct {
	cfg ServiceConfig
	// qs are the queues in force, swapped whole by SetQueues, so that a
	// call sees either the old or the new queues, never a mix.
	qs  atomic.Pointer[queueSet]
	log *slog.Logger

	batches *lineBatches

	mu       sync.Mutex
	measured map[string]cachedRates
	figures  map[string]cachedStats
}

type queueSet struct {
	list   []Queue
	byName map[string]Queue
}

func newQueueSet(qs []Queue) (*queueSet, error) {
	set := &queueSet{byName: make(map[string]Queue, len(qs))}
	for _, q := range qs {
		if err := q.Normalize(); err != nil {
			return nil, err
		}
		if _, dup := set.byName[q.Name]; dup {
			return nil, fmt.Errorf("admission queue %s: defined twice", q.Name)
		}
		set.list = append(set.list, q)
		set.byName[q.Name] = q
	}
	return set, nil
}

type cachedRates struct {
	at    time.Time
	rates Rates
	// measuring while one caller reads the record for the next measure:
	// the others keep the last one meanwhile.
	measuring bool
}

type cachedStats struct {
	at    time.Time
	stats QueueStats
}

// NewService checks the configuration; it starts nothing.
func NewService(cfg ServiceConfig) (*Service, error) {
	if cfg.Record == nil || cfg.Line == nil {
		return nil, errors.New("admission: Record and Line are required")
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	s := &Service{cfg: cfg, log: cfg.Logger, batches: newLineBatches(cfg.Line), measured: map[string]cachedRates{}, figures: map[string]cachedStats{}}
	if err := s.SetQueues(cfg.Queues); err != nil {
		return nil, err
	}
	return s, nil
}

// SetQueues puts the admission queues in force at once (a change made
// through the admin API): a new queue takes entries, a changed one's
// predictions stand in with its new rate until admissions measure it, and
// a queue no longer in force (retired) takes no entry but still serves
// what its record holds (see known). A set that does not normalize is
// refused whole, and the queues in force stay.
func (s *Service) SetQueues(qs []Queue) error {
	set, err := newQueueSet(qs)
	if err != nil {
		return err
	}
	s.qs.Store(set)
	return nil
}

// ErrUnknownQueue is the answer for a queue that is not an admission
// queue.
var ErrUnknownQueue = errors.New("admission: no such admission queue")

func (s *Service) queue(name string) (Queue, error) {
	q, ok := s.qs.Load().byName[name]
	if !ok {
		return Queue{}, unknownQueue(name)
	}
	return q, nil
}

func unknownQueue(name string) error { return fmt.Errorf("%w: %q", ErrUnknownQueue, name) }

// known is the queue called name in force (live), or for a name not in
// force — a queue retired, or none ever — a Queue of the name alone (rate
// 0: nobody admits it). A retired queue takes no entry, but what its
// record holds is still the users': a place is told (WAITING with its rank
// and no ETA, READY with its token), given up, and a token claimed,
// consumed or released until its life ends; a name whose record holds
// nothing asked for is an unknown queue. Every process answers so, started
// before the retirement or after: it asks the record, not its memory.
func (s *Service) known(name string) (q Queue, live bool) {
	q, live = s.qs.Load().byName[name]
	if !live {
		q = Queue{Name: name}
	}
	return q, live
}

// Position is what a user is told of their place.
type Position struct {
	// Status is WAITING or READY; "" when the user holds no live place
	// (NOT_ENTERED on the wire).
	Status Status
	// Rank is the number of waiters ahead, Total the line's length.
	Rank, Total int64
	ETA         ETA
	// PollAfter is when a client without a socket should ask again.
	PollAfter time.Duration
	Token     string
	ExpiresAt time.Time
	Version   int64
}

// Enter takes a place for userID in queue, or returns the place the user
// already holds (created false): a retry, a double click, a second tab.
func (s *Service) Enter(ctx context.Context, queue, userID string) (Position, bool, error) {
	q, err := s.queue(queue)
	if err != nil {
		return Position{}, false, err
	}
	if userID == "" {
		return Position{}, false, errors.New("admission: no user")
	}
	now := s.cfg.Now()
	total, err := s.batches.size(ctx, q.Name)
	if err != nil {
		return Position{}, false, fmt.Errorf("line size of %s: %w", q.Name, err)
	}
	eta := s.rates(ctx, q, now).Predict(total)
	predicted := now.Add(seconds(eta.Seconds))
	p, created, err := s.cfg.Record.Enter(ctx, q.Name, userID, now, predicted)
	if err != nil {
		return Position{}, false, fmt.Errorf("enter %s: %w", q.Name, err)
	}
	s.seen(ctx, q.Name, p, !created, now)
	if p.Status == StatusWaiting {
		// Also for a repeat: the line is derived, and adding is idempotent,
		// so a place the line lost (a wipe) is back at once.
		r, err := s.batches.add(ctx, q.Name, p, now)
		if err == nil {
			return s.waiting(ctx, q, p, r, now), created, nil
		}
		// The record holds the place; the admitter's rebuild adds it.
		s.log.Warn("add to the line; left to the rebuild", "queue", q.Name, "user", userID, "err", err)
	}
	pos, err := s.position(ctx, q, p, now)
	return pos, created, err
}

// Position returns the user's place in queue.
func (s *Service) Position(ctx context.Context, queue, userID string) (Position, error) {
	q, live := s.known(queue)
	now := s.cfg.Now()
	p, err := s.cfg.Record.Place(ctx, q.Name, userID)
	switch {
	case errors.Is(err, ErrNotFound) && !live:
		return Position{}, unknownQueue(queue)
	case errors.Is(err, ErrNotFound):
		return Position{}, nil
	case err != nil:
		return Position{}, fmt.Errorf("place in %s: %w", q.Name, err)
	}
	s.seen(ctx, q.Name, p, true, now)
	return s.position(ctx, q, p, now)
}

func (s *Service) position(ctx context.Context, q Queue, p Place, now time.Time) (Position, error) {
	switch {
	case p.Status == StatusWaiting:
	case (p.Status == StatusReady || p.Status == StatusClaimed) && now.Before(p.ExpiresAt):
		return Position{Status: StatusReady, Token: p.Token, ExpiresAt: p.ExpiresAt, Version: p.Version}, nil
	default:
		return Position{Version: p.Version}, nil
	}
	rank, total, ok, err := s.cfg.Line.Rank(ctx, q.Name, p.UserID)
	if err != nil {
		return Position{}, fmt.Errorf("rank in %s: %w", q.Name, err)
	}
	return s.waiting(ctx, q, p, Rank{Rank: rank, Total: total, OK: ok}, now), nil
}

// waiting is the position of p, WAITING at r in the line.
func (s *Service) waiting(ctx context.Context, q Queue, p Place, r Rank, now time.Time) Position {
	if !r.OK {
		// Waiting in the record, not in the line: being admitted this very
		// moment, or about to be added back by the rebuild.
		r.Rank, r.Total = 0, max(r.Total, 1)
	}
	eta := s.rates(ctx, q, now).Predict(r.Rank)
	return Position{
		Status: StatusWaiting, Rank: r.Rank, Total: r.Total, ETA: eta,
		PollAfter: pollAfter(eta, q), Version: p.Version,
	}
}

// pollAfter spaces a polling client's questions: often near the front,
// every 20 s at most far back, and thrice within the queue's abandonAfter,
// so that a client that obeys it is never abandoned.
func pollAfter(eta ETA, q Queue) time.Duration {
	d := seconds(eta.Low / 4)
	return min(max(d, time.Second), 20*time.Second, q.AbandonAfter/3)
}

func seconds(s float64) time.Duration {
	if math.IsInf(s, 0) || math.IsNaN(s) || s > 1e9 {
		return time.Duration(math.MaxInt64)
	}
	return time.Duration(s * float64(time.Second))
}

// Leave gives the user's place up.
func (s *Service) Leave(ctx context.Context, queue, userID string) error {
	q, live := s.known(queue)
	if _, err := s.cfg.Record.Leave(ctx, q.Name, userID, s.cfg.Now()); err != nil {
		if !live && errors.Is(err, ErrNotFound) {
			return unknownQueue(queue)
		}
		return fmt.Errorf("leave %s: %w", q.Name, err)
	}
	if err := s.cfg.Line.Remove(ctx, q.Name, []string{userID}); err != nil {
		// The admitter acknowledges a LEFT place it takes without a token.
		s.log.Warn("remove from the line", "queue", q.Name, "user", userID, "err", err)
	}
	return nil
}

// Claim, Consume and Release are the protected downstream's: a token
// authorizes one action (ARCHITECTURE.md §10).
func (s *Service) Claim(ctx context.Context, queue, token string) (Place, error) {
	return s.tokenCall(ctx, queue, token, s.cfg.Record.Claim)
}

// Consume ends a claimed token: the protected action happened.
func (s *Service) Consume(ctx context.Context, queue, token string) (Place, error) {
	return s.tokenCall(ctx, queue, token, s.cfg.Record.Consume)
}

// Release gives a claimed token back: the protected action was rolled back.
func (s *Service) Release(ctx context.Context, queue, token string) (Place, error) {
	return s.tokenCall(ctx, queue, token, s.cfg.Record.Release)
}

func (s *Service) tokenCall(ctx context.Context, queue, token string,
	call func(context.Context, string, string, time.Time) (Place, error)) (Place, error) {
	q, live := s.known(queue)
	if token == "" {
		return Place{}, ErrNotFound
	}
	p, err := call(ctx, q.Name, token, s.cfg.Now())
	if err != nil && !live && errors.Is(err, ErrNotFound) {
		return Place{}, unknownQueue(queue)
	}
	return p, err
}

// QueueStats are an admission queue's figures for GET /v1/queues and
// the metrics.
type QueueStats struct {
	// Queue is the queue's settings in force.
	Queue   Queue
	Waiting int64
	// Rates are measured from the admissions of the last RateWindow (the
	// configured rate stands in until there are any).
	Rates Rates
	// ETAError is the error of the predictions made at entry, over the
	// admissions of the last ErrorWindow (the newest maxMeasured of them).
	ETAError ErrorStats
}

// ErrorWindow is how far back the ETA's error is measured.
const ErrorWindow = 10 * time.Minute

// Queues returns the figures of every admission queue in force, in the
// order of the configuration.
func (s *Service) Queues(ctx context.Context) ([]QueueStats, error) {
	list := s.qs.Load().list
	out := make([]QueueStats, 0, len(list))
	for _, q := range list {
		st, err := s.stats(ctx, q)
		if err != nil {
			return nil, err
		}
		out = append(out, st)
	}
	return out, nil
}

// Stats returns the queue's figures.
func (s *Service) Stats(ctx context.Context, queue string) (QueueStats, error) {
	q, err := s.queue(queue)
	if err != nil {
		return QueueStats{}, err
	}
	return s.stats(ctx, q)
}

// statsEvery is how long a queue's figures are reused: the listing is
// public, and each measure reads up to maxMeasured admissions twice.
const statsEvery = time.Second

func (s *Service) stats(ctx context.Context, q Queue) (QueueStats, error) {
	now := s.cfg.Now()
	s.mu.Lock()
	c, ok := s.figures[q.Name]
	s.mu.Unlock()
	if ok && now.Sub(c.at) < statsEvery && !now.Before(c.at) {
		c.stats.Queue = q // a change of the settings shows at once
		return c.stats, nil
	}
	n, err := s.cfg.Line.Size(ctx, q.Name)
	if err != nil {
		return QueueStats{}, fmt.Errorf("line size of %s: %w", q.Name, err)
	}
	admitted, err := s.cfg.Record.Admitted(ctx, q.Name, measureSince(now, ErrorWindow, q.Rate), maxMeasured)
	if err != nil {
		return QueueStats{}, fmt.Errorf("admissions of %s: %w", q.Name, err)
	}
	st := QueueStats{Queue: q, Waiting: n, Rates: s.rates(ctx, q, now), ETAError: ETAErrors(admitted)}
	s.mu.Lock()
	s.figures[q.Name] = cachedStats{at: now, stats: st}
	s.mu.Unlock()
	return st, nil
}

// measureSince is where a measure over window ending at now starts: in a
// queue fast enough to admit more than maxMeasured in it, later, so that
// the newest admissions (which Admitted, oldest first, would otherwise cut
// off) are the ones measured.
func measureSince(now time.Time, window time.Duration, rate int) time.Time {
	if rate > 0 && float64(rate)*window.Seconds() > maxMeasured {
		window = time.Duration(float64(maxMeasured) / float64(rate) * float64(time.Second))
	}
	return now.Add(-window)
}

// maxMeasured bounds the admissions one measurement reads.
const maxMeasured = 20000

// rates measures q's admission rate, at most once a second per process and
// by one caller at a time (it reads up to maxMeasured admissions, and every
// enter and poll asks); a failed read keeps the last measure (or the
// configured rate).
func (s *Service) rates(ctx context.Context, q Queue, now time.Time) Rates {
	r, due, _ := s.cachedRates(q, now)
	if !due {
		return r
	}
	return s.measure(ctx, q, now, r)
}

// ratesAhead is rates for the pushes' estimates (Estimate, Ranks): a due
// measure is read in the background and the last one answers meanwhile,
// so that the room's loop never waits on the record; only a queue never
// measured here waits for its first.
func (s *Service) ratesAhead(ctx context.Context, q Queue, now time.Time) Rates {
	r, due, ok := s.cachedRates(q, now)
	switch {
	case !due:
		return r
	case !ok:
		return s.measure(ctx, q, now, r)
	}
	go func() {
		mctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), measureTimeout)
		defer cancel()
		s.measure(mctx, q, now, r)
	}()
	return r
}

// measureTimeout bounds a background measure.
const measureTimeout = 5 * time.Second

// cachedRates returns q's last measure (the configured rate when none: ok
// false) and whether a new one is due, claiming it for the caller: a
// caller told due must call measure.
func (s *Service) cachedRates(q Queue, now time.Time) (r Rates, due, ok bool) {
	if q.Rate == 0 {
		// Not in force (known): nobody admits it, whatever it did before.
		return Rates{}, false, false
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	c, ok := s.measured[q.Name]
	if ok && (c.measuring || now.Sub(c.at) < time.Second && !now.Before(c.at)) {
		return c.rates, false, true
	}
	if ok {
		c.measuring = true
		s.measured[q.Name] = c
		return c.rates, true, true
	}
	configured := float64(q.Rate)
	return Rates{Mean: configured, Low: configured, High: configured}, true, false
}

// measure reads the admissions and stores the new measure, last (the
// measure to keep when the read fails) otherwise.
func (s *Service) measure(ctx context.Context, q Queue, now time.Time, last Rates) Rates {
	r := last
	places, err := s.cfg.Record.Admitted(ctx, q.Name, measureSince(now, RateWindow, q.Rate), maxMeasured)
	if err != nil {
		s.log.Warn("measure the admission rate", "queue", q.Name, "err", err)
	} else {
		at := make([]time.Time, 0, len(places))
		for _, p := range places {
			at = append(at, p.AdmittedAt)
		}
		r = MeasureRates(at, now, float64(q.Rate))
	}
	s.mu.Lock()
	s.measured[q.Name] = cachedRates{at: now, rates: r}
	s.mu.Unlock()
	return r
}
