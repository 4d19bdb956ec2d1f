package control

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"sort"
	"sync"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/matchgate/matchgate/matcher"
)

// QueueOverride is one queue created, changed or retired through the admin
// API. It replaces the queue file's entry of the same name as a whole: the
// fields it leaves out come from the file's defaults, then the built-in
// ones, exactly as for a queue written in the file.
type QueueOverride struct {
	Name string `json:"name"`
	// Config is the queue in the queue file's shape, as JSON
	// ({"kind":"skill","players":4,"deadline":"2m",…}); absent when retired.
	Config json.RawMessage `json:"config"`
	// Retired: the queue is gone, whether the file defines it or not.
	Retired bool `json:"retired"`
	// Version orders every change of every queue; it only grows.
	Version   int64     `json:"version"`
	UpdatedAt time.Time `json:"updatedAt"`
}

// QueueStore keeps queue overrides.
type QueueStore interface {
	// PutQueue stores name's override (or its tombstone when retired) with a
	// version higher than every earlier one.
	PutQueue(ctx context.Context, name string, config json.RawMessage, retired bool) (QueueOverride, error)
	// Queues lists every override, tombstones included, by version.
	Queues(ctx context.Context) ([]QueueOverride, error)
	// QueuesVersion is the highest version stored (0 for none): a cheap
	// change detector.
	QueuesVersion(ctx context.Context) (int64, error)
}

// MaxQueueConfigBytes bounds one override's JSON text.
const MaxQueueConfigBytes = 16 << 10

// DecodeQueue reads one queue in the queue file's shape (JSON is YAML) for
// the queue called name: unknown fields, duplicate keys and a different
// "name" are errors, as in the file.
func DecodeQueue(name string, raw []byte) (matcher.QueueConfig, error) {
	var q matcher.QueueConfig
	if !matcher.ValidName(name) {
		return q, fmt.Errorf("queue name %q is not valid: lower-case letters, digits, '-' and '_', at most 48", name)
	}
	if len(raw) > MaxQueueConfigBytes {
		return q, fmt.Errorf("queue %s: configuration larger than %d bytes", name, MaxQueueConfigBytes)
	}
	dec := yaml.NewDecoder(bytes.NewReader(raw))
	dec.KnownFields(true)
	if err := dec.Decode(&q); err != nil {
		return q, fmt.Errorf("queue %s: %w", name, err)
	}
	switch q.Name {
	case "":
		q.Name = name
	case name:
	default:
		return q, fmt.Errorf("queue %s: the body names another queue (%q)", name, q.Name)
	}
	return q, nil
}

// Effective is the queue configuration in force: the file's (base, already
// normalized), with every override applied in version order, normalized
// and validated as a whole.
func Effective(base matcher.Config, overrides []QueueOverride) (matcher.Config, error) {
	sorted := append([]QueueOverride(nil), overrides...)
	sort.SliceStable(sorted, func(i, j int) bool { return sorted[i].Version < sorted[j].Version })
	order := make([]string, 0, len(base.Queues)+len(sorted))
	byName := make(map[string]matcher.QueueConfig, cap(order))
	for _, q := range base.Queues {
		if _, dup := byName[q.Name]; !dup {
			order = append(order, q.Name)
		}
		byName[q.Name] = q
	}
	for _, o := range sorted {
		if o.Retired {
			delete(byName, o.Name)
			continue
		}
		q, err := DecodeQueue(o.Name, o.Config)
		if err != nil {
			return matcher.Config{}, err
		}
		if !contains(order, o.Name) {
			order = append(order, o.Name)
		}
		byName[o.Name] = q
	}
	c := base
	c.Queues = make([]matcher.QueueConfig, 0, len(byName))
	for _, name := range order {
		if q, ok := byName[name]; ok {
			c.Queues = append(c.Queues, q)
		}
	}
	if err := c.Normalize(); err != nil {
		return matcher.Config{}, err
	}
	return c, nil
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// QueueWatcherConfig configures a QueueWatcher.
type QueueWatcherConfig struct {
	// Store holds the overrides. Required.
	Store QueueStore
	// Base is the queue file's configuration, normalized. Required.
	Base matcher.Config
	// Interval between version polls. Default 5s.
	Interval time.Duration
	// OnChange receives the new effective configuration after every change
	// (not for the one Load returns). It is called from Run's goroutine, one
	// call at a time. Default: none.
	OnChange func(matcher.Config)
	Logger   *slog.Logger
}

// QueueWatcher follows the queue overrides and hands every change to
// OnChange: within Interval, or at once after Nudge.
type QueueWatcher struct {
	cfg   QueueWatcherConfig
	nudge chan struct{}

	mu      sync.Mutex
	version int64 // of the overrides last applied, or last found invalid
	current matcher.Config
}

// NewQueueWatcher builds a watcher; it starts nothing.
func NewQueueWatcher(cfg QueueWatcherConfig) (*QueueWatcher, error) {
	if cfg.Store == nil {
		return nil, errors.New("control: QueueWatcherConfig.Store is required")
	}
	if len(cfg.Base.Queues) == 0 {
		return nil, errors.New("control: QueueWatcherConfig.Base has no queues")
	}
	if cfg.Interval <= 0 {
		cfg.Interval = 5 * time.Second
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	return &QueueWatcher{cfg: cfg, nudge: make(chan struct{}, 1), current: cfg.Base}, nil
}

// Load reads the overrides once and returns the effective configuration,
// for the process to start with.
func (w *QueueWatcher) Load(ctx context.Context) (matcher.Config, error) {
	os, err := w.cfg.Store.Queues(ctx)
	if err != nil {
		return matcher.Config{}, err
	}
	c, err := Effective(w.cfg.Base, os)
	if err != nil {
		return matcher.Config{}, fmt.Errorf("stored queue configuration: %w", err)
	}
	w.mu.Lock()
	w.version, w.current = maxVersion(os), c
	w.mu.Unlock()
	return c, nil
}

// Current is the effective configuration last loaded.
func (w *QueueWatcher) Current() matcher.Config {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.current
}

// Nudge asks Run to check now (a "queues" message on the control channel).
func (w *QueueWatcher) Nudge() {
	select {
	case w.nudge <- struct{}{}:
	default:
	}
}

// Run checks for changes every Interval and on every Nudge until ctx ends.
func (w *QueueWatcher) Run(ctx context.Context) error {
	t := time.NewTicker(w.cfg.Interval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		case <-w.nudge:
		}
		if err := w.Check(ctx); err != nil && ctx.Err() == nil {
			w.cfg.Logger.Warn("queue configuration check failed", "err", err)
		}
	}
}

// Check applies the overrides if they changed since the last check. An
// invalid set is logged and skipped: the configuration in force stays.
func (w *QueueWatcher) Check(ctx context.Context) error {
	v, err := w.cfg.Store.QueuesVersion(ctx)
	if err != nil {
		return err
	}
	w.mu.Lock()
	same := v == w.version
	w.mu.Unlock()
	if same {
		return nil
	}
	os, err := w.cfg.Store.Queues(ctx)
	if err != nil {
		return err
	}
	v = maxVersion(os)
	c, err := Effective(w.cfg.Base, os)
	w.mu.Lock()
	w.version = v
	if err == nil {
		w.current = c
	}
	w.mu.Unlock()
	if err != nil {
		w.cfg.Logger.Error("stored queue configuration is invalid; keeping the one in force", "version", v, "err", err)
		return nil
	}
	w.cfg.Logger.Info("queue configuration changed", "version", v, "queues", len(c.Queues))
	if w.cfg.OnChange != nil {
		w.cfg.OnChange(c)
	}
	return nil
}

func maxVersion(os []QueueOverride) int64 {
	var v int64
	for _, o := range os {
		v = max(v, o.Version)
	}
	return v
}
