// Package service is the rankings' Service: events ingested into the
// record (ranking.Record), each board's Top N per window and period served
// from Redis, items ranked on demand, and the weights' versions.
//
// Redis holds only the Top N per board, window and period: one hash per
// period (<prefix>:{rank:<board>}:top:<window>:<period>) holding the view
// as JSON with its weights version, written whole by one script (put.lua)
// and expiring past the period's end plus the board's retention, so Redis
// memory stays bounded by boards × windows × retained periods × N. A key
// wiped or expired is rebuilt from the record on the next read or refresh.
//
// Carry: a day's ranking carries CarryFrom(the previous day's ranking), the
// previous day ranked the same way, recursively, until a day that starts
// before now − retention, which carries nothing. Hours and weeks carry
// nothing (the board's carry is a day's, ranking.Board.Normalize).
//
// Run refreshes each board every board.Refresh under a fenced lease per
// board (internal/redislease), so one process refreshes a board at a time;
// a refresh whose Top N changed publishes <prefix>:ranking:<board>:<window>.
// A board of source matchmaking is fed at each refresh, before its periods
// are recomputed: its hours not yet final are recounted from the record of
// tickets and matches (Config.Activity) and replaced whole (feed.go).
package service

import (
	"cmp"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/matchgate/matchgate/ranking"
)

// MaxBatch is the most events one Ingest takes.
const MaxBatch = 10000

// Errors of the Service besides the domain's (ranking.ErrUnknownBoard,
// ranking.ErrInvalidEvent).
var (
	// ErrTooMany: a batch of more than MaxBatch events.
	ErrTooMany = errors.New("ranking: too many events in one batch")
	// ErrUnknownWindow: a window the board does not rank.
	ErrUnknownWindow = errors.New("ranking: window not ranked by the board")
	// ErrInvalidPeriod: a period not spelled as Period.String spells it.
	ErrInvalidPeriod = errors.New("ranking: invalid period")
	// ErrInvalidLimit: a limit below 0 or above the board's N.
	ErrInvalidLimit = errors.New("ranking: invalid limit")
	// ErrInvalidWeights: weights the board refuses.
	ErrInvalidWeights = errors.New("ranking: invalid weights")
)

// Config configures a Service.
type Config struct {
	// Boards served, normalized (ranking.NormalizeBoards); New checks.
	Boards []ranking.Board
	// Record is the durable record. Required.
	Record ranking.Record
	// Reads, when set, answers an item's GET (its metrics and its rank among
	// the board's) from a replica of the record (--postgres-replica-url);
	// everything else uses Record.
	Reads RecordReads
	// Redis serves the Top N. Required.
	Redis redis.UniversalClient
	// Prefix starts every key and channel. Default "matchgate".
	Prefix string
	// Now is the clock. Default time.Now.
	Now func() time.Time
	// Logger logs what fails in the background. Default slog.Default().
	Logger *slog.Logger
	// Owner names this process in the refresh leases. Default random.
	Owner string
	// Tick is how often Run looks for a board due for its refresh.
	// Default 1s (ranking.MinRefresh).
	Tick time.Duration
	// Activity feeds the boards of source matchmaking, recounted at each
	// of their refreshes (feed.go). Without it such a board is served but
	// stays empty, and SetBoards logs a warning.
	Activity Activity
}

// Service ingests events and serves rankings. Safe for concurrent use.
type Service struct {
	cfg    Config
	log    *slog.Logger
	boards atomic.Pointer[map[string]ranking.Board]

	// known is, per board, the newest weights version this process has
	// seen: a served view of an older one is rebuilt on read, so a change
	// made by another process shows here within one refresh.
	knownMu sync.Mutex
	known   map[string]int64

	cache viewCache // the views decoded last (read)
	past  pastRanks // settled days' rankings (ranked)

	flightMu sync.Mutex
	flights  map[string]*flight // rebuilds in progress, by key

	refreshMu sync.Mutex // one Tick at a time
	state     map[string]*boardState
	// refreshes counts the boards' refreshes done under a lease (tests).
	refreshes atomic.Int64
}

// RecordReads is what an item's GET reads of the record: a ranking.Record
// on a replica's pool is one.
type RecordReads interface {
	Scan(ctx context.Context, board string, from, to time.Time, fn func(ranking.ItemMetrics) error) error
	Item(ctx context.Context, board, item string, from, to time.Time) (m ranking.ItemMetrics, ok bool, err error)
}

// New checks cfg and builds a Service; it starts nothing (Run does).
func New(cfg Config) (*Service, error) {
	if cfg.Record == nil {
		return nil, errors.New("ranking service: no record")
	}
	if cfg.Reads == nil {
		cfg.Reads = cfg.Record
	}
	if cfg.Redis == nil {
		return nil, errors.New("ranking service: no redis")
	}
	cfg.Prefix = cmp.Or(cfg.Prefix, "matchgate")
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if cfg.Owner == "" {
		var b [8]byte
		if _, err := rand.Read(b[:]); err != nil {
			return nil, fmt.Errorf("ranking service: owner id: %w", err)
		}
		cfg.Owner = "ranking-" + hex.EncodeToString(b[:])
	}
	cfg.Tick = cmp.Or(cfg.Tick, ranking.MinRefresh)
	s := &Service{cfg: cfg, log: cfg.Logger, known: map[string]int64{}, state: map[string]*boardState{},
		flights: map[string]*flight{}}
	if err := s.SetBoards(cfg.Boards); err != nil {
		return nil, err
	}
	return s, nil
}

// SetBoards swaps the boards in force at once. Each is normalized (a
// normalized board is unchanged); one refused refuses the whole set, and
// the boards before stay in force.
func (s *Service) SetBoards(bs []ranking.Board) error {
	m := make(map[string]ranking.Board, len(bs))
	for _, b := range bs {
		n := b
		n.Metrics = maps.Clone(b.Metrics)
		n.Windows = slices.Clone(b.Windows)
		if err := n.Normalize(); err != nil {
			return fmt.Errorf("ranking service: %w", err)
		}
		if _, dup := m[n.Name]; dup {
			return fmt.Errorf("ranking service: board %q: defined twice", n.Name)
		}
		m[n.Name] = n
	}
	for _, name := range slices.Sorted(maps.Keys(m)) {
		if m[name].Source == ranking.SourceMatchmaking && s.cfg.Activity == nil {
			s.log.Warn("a ranking board of source matchmaking is served but not fed: no activity to count it from", "board", name)
		}
	}
	s.boards.Store(&m)
	return nil
}

// board is the board in force named name.
func (s *Service) board(name string) (ranking.Board, error) {
	b, ok := (*s.boards.Load())[name]
	if !ok {
		return ranking.Board{}, fmt.Errorf("board %q: %w", name, ranking.ErrUnknownBoard)
	}
	return b, nil
}

// boardNames are the boards in force, in name order.
func (s *Service) boardNames() []string {
	return slices.Sorted(maps.Keys(*s.boards.Load()))
}

// Ingest checks every event against the board at Now — the first invalid
// one refuses the batch, nothing written — and counts them into the record.
// A board of source matchmaking takes no events: its hours are recounted
// from matchgate's record and replaced whole (feed.go), which would erase
// them.
func (s *Service) Ingest(ctx context.Context, board string, events []ranking.Event) (accepted, duplicates int, err error) {
	b, err := s.board(board)
	if err != nil {
		return 0, 0, err
	}
	if b.Source == ranking.SourceMatchmaking {
		return 0, 0, fmt.Errorf("ingest into %s: a board of source %s counts matchgate's own activity, not events: %w",
			board, ranking.SourceMatchmaking, ranking.ErrInvalidEvent)
	}
	if len(events) > MaxBatch {
		return 0, 0, fmt.Errorf("ingest into %s: %d events, at most %d: %w", board, len(events), MaxBatch, ErrTooMany)
	}
	if len(events) == 0 {
		return 0, 0, nil
	}
	now := s.cfg.Now()
	for i, e := range events {
		if err := b.CheckEvent(e, now); err != nil {
			return 0, 0, fmt.Errorf("ingest into %s: event %d: %w", board, i, err)
		}
	}
	accepted, duplicates, err = s.cfg.Record.Ingest(ctx, board, events)
	if err != nil {
		return 0, 0, fmt.Errorf("ingest into %s: %w", board, err)
	}
	return accepted, duplicates, nil
}

// Weights are the board's weights in force: the record's latest version,
// else version 0, the board's configured metrics.
func (s *Service) Weights(ctx context.Context, board string) (ranking.Weights, error) {
	b, err := s.board(board)
	if err != nil {
		return ranking.Weights{}, err
	}
	return s.weights(ctx, b)
}

func (s *Service) weights(ctx context.Context, b ranking.Board) (ranking.Weights, error) {
	w, ok, err := s.cfg.Record.Weights(ctx, b.Name)
	if err != nil {
		return ranking.Weights{}, fmt.Errorf("weights of %s: %w", b.Name, err)
	}
	if !ok {
		return ranking.Weights{Version: 0, Metrics: maps.Clone(b.Metrics)}, nil
	}
	s.see(b.Name, w.Version)
	return w, nil
}

// see notes a weights version read or written.
func (s *Service) see(board string, v int64) {
	s.knownMu.Lock()
	if v > s.known[board] {
		s.known[board] = v
	}
	s.knownMu.Unlock()
}

func (s *Service) knownVersion(board string) int64 {
	s.knownMu.Lock()
	defer s.knownMu.Unlock()
	return s.known[board]
}

// SetWeights records new weights for the board's own metrics (the same
// names: metrics are the record's, only their weights and transforms
// change), by whom, and recomputes every retained period under them
// (RefreshAll) before it returns, bounded by ctx. When the recompute fails
// the weights are recorded all the same and returned with the error;
// periods not recomputed are rebuilt on their next read or refresh, since
// a view of an older version is not served once this version is known.
func (s *Service) SetWeights(ctx context.Context, board string, metrics map[string]ranking.Metric, by string) (ranking.Weights, error) {
	b, err := s.board(board)
	if err != nil {
		return ranking.Weights{}, err
	}
	if err := ranking.CheckMetrics(b.Source, metrics); err != nil {
		return ranking.Weights{}, fmt.Errorf("weights of %s: %w: %s", board, ErrInvalidWeights, err)
	}
	for _, name := range slices.Sorted(maps.Keys(b.Metrics)) {
		if _, ok := metrics[name]; !ok {
			return ranking.Weights{}, fmt.Errorf("weights of %s: %w: metric %q missing (the board's are %v)",
				board, ErrInvalidWeights, name, slices.Sorted(maps.Keys(b.Metrics)))
		}
	}
	for _, name := range slices.Sorted(maps.Keys(metrics)) {
		if _, ok := b.Metrics[name]; !ok {
			return ranking.Weights{}, fmt.Errorf("weights of %s: %w: metric %q is not the board's (%v)",
				board, ErrInvalidWeights, name, slices.Sorted(maps.Keys(b.Metrics)))
		}
	}
	w, err := s.cfg.Record.SetWeights(ctx, board, ranking.Weights{Metrics: maps.Clone(metrics), By: by, At: s.cfg.Now()})
	if err != nil {
		return ranking.Weights{}, fmt.Errorf("weights of %s: %w", board, err)
	}
	s.see(board, w.Version)
	if err := s.RefreshAll(ctx, board); err != nil {
		return w, fmt.Errorf("weights of %s recorded as version %d: %w", board, w.Version, err)
	}
	return w, nil
}
