package admission

import (
	"context"
	"crypto/rand"
	"errors"
	"log/slog"
	"slices"
	"sync"
	"time"
)

// SupervisorConfig configures the admitters of a process: one per
// admission queue in force, each as AdmitterConfig says.
type SupervisorConfig struct {
	Record Record
	Line   Line
	// Owner names this process; each admitter's lease owner is Owner and
	// a random suffix.
	Owner string
	// LeaseTTL, Tick and ProcessingGrace are every admitter's (zero: the
	// admitter's defaults).
	LeaseTTL, Tick, ProcessingGrace time.Duration
	// Announce is every admitter's (nil: none).
	Announce Announcer
	// Now is the clock of decisions; nil means time.Now.
	Now    func() time.Time
	Logger *slog.Logger
}

// Supervisor runs one admitter per admission queue in force and follows
// the changes of the queues at run time (ARCHITECTURE.md §9): an admitter
// starts for a queue created, stops (giving its lease up) for a queue
// retired, and takes a changed queue's settings at its next pass. Every
// admitter is a goroutine of Run, which stops them all before it returns.
type Supervisor struct {
	cfg     SupervisorConfig
	log     *slog.Logger
	changed chan struct{}

	mu   sync.Mutex
	want []Queue // the queues in force, as last set

	// running is Run's; runMu guards it for Running.
	runMu   sync.Mutex
	running map[string]*supervised
}

type supervised struct {
	a    *Admitter
	stop context.CancelFunc
	done chan struct{}
}

// NewSupervisor checks the configuration and the queues first in force;
// it starts nothing.
func NewSupervisor(cfg SupervisorConfig, queues []Queue) (*Supervisor, error) {
	if cfg.Record == nil || cfg.Line == nil {
		return nil, errors.New("admitters: Record and Line are required")
	}
	if cfg.Owner == "" {
		cfg.Owner = "admitter"
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if _, err := newQueueSet(queues); err != nil {
		return nil, err
	}
	return &Supervisor{
		cfg: cfg, log: cfg.Logger, changed: make(chan struct{}, 1),
		want: slices.Clone(queues), running: map[string]*supervised{},
	}, nil
}

// SetQueues hands the supervisor the admission queues now in force; Run
// puts them in force at once. It never blocks. A set that does not
// normalize is refused whole, and the queues in force stay.
func (s *Supervisor) SetQueues(queues []Queue) error {
	if _, err := newQueueSet(queues); err != nil {
		return err
	}
	s.mu.Lock()
	s.want = slices.Clone(queues)
	s.mu.Unlock()
	select {
	case s.changed <- struct{}{}:
	default:
	}
	return nil
}

// Running returns the names of the queues whose admitter runs, sorted.
func (s *Supervisor) Running() []string {
	s.runMu.Lock()
	defer s.runMu.Unlock()
	names := make([]string, 0, len(s.running))
	for name := range s.running {
		names = append(names, name)
	}
	slices.Sort(names)
	return names
}

// Run runs the admitters until ctx ends, then stops them, each giving its
// lease up, and returns.
func (s *Supervisor) Run(ctx context.Context) error {
	defer s.stopAll()
	for {
		s.reconcile(ctx)
		select {
		case <-ctx.Done():
			return nil
		case <-s.changed:
		}
	}
}

// reconcile starts, changes and stops admitters to match the queues in
// force.
func (s *Supervisor) reconcile(ctx context.Context) {
	s.mu.Lock()
	want := s.want
	s.mu.Unlock()
	inForce := make(map[string]bool, len(want))
	for _, q := range want {
		inForce[q.Name] = true
		s.runMu.Lock()
		r := s.running[q.Name]
		s.runMu.Unlock()
		if r != nil {
			if err := r.a.SetQueue(q); err != nil {
				s.log.Error("change an admitter's queue", "admission", q.Name, "err", err)
			}
			continue
		}
		if err := s.start(ctx, q); err != nil {
			s.log.Error("start an admitter", "admission", q.Name, "err", err)
		}
	}
	s.runMu.Lock()
	var gone []string
	for name := range s.running {
		if !inForce[name] {
			gone = append(gone, name)
		}
	}
	s.runMu.Unlock()
	for _, name := range gone {
		s.stop(name)
		s.log.Info("admitter stopped: the queue was retired", "admission", name)
	}
}

func (s *Supervisor) start(ctx context.Context, q Queue) error {
	a, err := NewAdmitter(AdmitterConfig{
		Queue: q, Record: s.cfg.Record, Line: s.cfg.Line,
		Owner:    s.cfg.Owner + "-" + rand.Text()[:8],
		LeaseTTL: s.cfg.LeaseTTL, Tick: s.cfg.Tick, ProcessingGrace: s.cfg.ProcessingGrace,
		Announce: s.cfg.Announce, Now: s.cfg.Now, Logger: s.cfg.Logger,
	})
	if err != nil {
		return err
	}
	actx, stop := context.WithCancel(ctx)
	r := &supervised{a: a, stop: stop, done: make(chan struct{})}
	go func() {
		defer close(r.done)
		_ = a.Run(actx) // returns only when actx ends
	}()
	s.runMu.Lock()
	s.running[q.Name] = r
	s.runMu.Unlock()
	return nil
}

// stop ends one admitter and waits for it: its lease is given up (within
// the second Run allows the release), so another process's admitter, or
// this one's if the queue comes back, takes over at once.
func (s *Supervisor) stop(name string) {
	s.runMu.Lock()
	r := s.running[name]
	s.runMu.Unlock()
	if r == nil {
		return
	}
	r.stop()
	<-r.done
	// Only now is it not running: Running never leaves out an admitter
	// that may still hold its lease.
	s.runMu.Lock()
	delete(s.running, name)
	s.runMu.Unlock()
}

func (s *Supervisor) stopAll() {
	for _, name := range s.Running() {
		s.stop(name)
	}
}
