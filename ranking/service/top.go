package service

import (
	"context"
	_ "embed"
	"encoding/json"
	"fmt"
	"hash/fnv"
	"math"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/matchgate/matchgate/ranking"
)

var (
	//go:embed lua/put.lua
	putSrc    string
	putScript = redis.NewScript(putSrc)
)

// Scripts are the Service's scripts by name, for the callers' script loading.
var Scripts = map[string]*redis.Script{"ranking_put": putScript}

// View is one served ranking: a board's Top N of one window's period under
// one weights version, as of RefreshedAt. The items' Metrics and Parts maps
// may be shared with other reads: read them, do not change them.
type View struct {
	Board          string
	Window         ranking.Window
	Period         string
	WeightsVersion int64
	Items          []ranking.Ranked
	RefreshedAt    time.Time
	// Digest identifies the Top N's items: two views of one board, window
	// and period with the same WeightsVersion and Digest hold the same
	// items, so an edge may reuse what it encoded for one. "" for a view
	// answered but not stored (a period not begun, or past the retention).
	Digest string
}

// wireView is a View as Redis stores it, in the GET response's shape.
type wireView struct {
	Board          string         `json:"board"`
	Window         ranking.Window `json:"window"`
	Period         string         `json:"period"`
	WeightsVersion int64          `json:"weightsVersion"`
	RefreshedAt    time.Time      `json:"refreshedAt"`
	Items          []wireItem     `json:"items"`
}

type wireItem struct {
	Item    string               `json:"item"`
	Rank    int                  `json:"rank"`
	Score   jsonFloat            `json:"score"`
	Metrics map[string]jsonFloat `json:"metrics"`
	Parts   map[string]jsonFloat `json:"parts"`
	First   time.Time            `json:"first,omitzero"`
}

// jsonFloat is a float64 that JSON can carry whatever its value: a score
// may be infinite (or NaN) under extreme weights, which encoding/json
// refuses, so those travel as the strings "+Inf", "-Inf", "NaN".
type jsonFloat float64

func (f jsonFloat) MarshalJSON() ([]byte, error) {
	v := float64(f)
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return []byte(`"` + strconv.FormatFloat(v, 'g', -1, 64) + `"`), nil
	}
	return strconv.AppendFloat(nil, v, 'g', -1, 64), nil
}

func (f *jsonFloat) UnmarshalJSON(b []byte) error {
	s := string(b)
	if len(s) >= 2 && s[0] == '"' {
		s = s[1 : len(s)-1]
	}
	v, err := strconv.ParseFloat(s, 64)
	if err != nil {
		return fmt.Errorf("score %s: %w", b, err)
	}
	*f = jsonFloat(v)
	return nil
}

func toWire(v View) wireView {
	w := wireView{Board: v.Board, Window: v.Window, Period: v.Period, WeightsVersion: v.WeightsVersion,
		RefreshedAt: v.RefreshedAt, Items: make([]wireItem, len(v.Items))}
	for i, r := range v.Items {
		w.Items[i] = wireItem{Item: r.Item, Rank: r.Rank, Score: jsonFloat(r.Score),
			Metrics: wireMap(r.Metrics), Parts: wireMap(r.Parts), First: r.First}
	}
	return w
}

func fromWire(w wireView) View {
	v := View{Board: w.Board, Window: w.Window, Period: w.Period, WeightsVersion: w.WeightsVersion,
		RefreshedAt: w.RefreshedAt, Items: make([]ranking.Ranked, len(w.Items))}
	for i, r := range w.Items {
		v.Items[i] = ranking.Ranked{Item: r.Item, Rank: r.Rank, Score: float64(r.Score),
			Metrics: floatMap(r.Metrics), Parts: floatMap(r.Parts), First: r.First}
	}
	return v
}

func wireMap(m map[string]float64) map[string]jsonFloat {
	out := make(map[string]jsonFloat, len(m))
	for k, v := range m {
		out[k] = jsonFloat(v)
	}
	return out
}

func floatMap(m map[string]jsonFloat) map[string]float64 {
	out := make(map[string]float64, len(m))
	for k, v := range m {
		out[k] = float64(v)
	}
	return out
}

// topKey names the served Top N of one period; the board's hash tag keeps
// all its keys, lease included, in one Redis Cluster slot.
func (s *Service) topKey(board string, p ranking.Period) string {
	return s.cfg.Prefix + ":{rank:" + board + "}:top:" + string(p.Window) + ":" + p.String()
}

// channel is where a changed Top N of a board's window is announced.
func (s *Service) channel(board string, w ranking.Window) string {
	return s.cfg.Prefix + ":ranking:" + board + ":" + string(w)
}

// period resolves a request's window and period: "" is the current one.
func (s *Service) period(b ranking.Board, window, period string, now time.Time) (ranking.Period, error) {
	w := ranking.Window(window)
	if !w.Valid() || !b.Ranks(w) {
		return ranking.Period{}, fmt.Errorf("board %s, window %q: %w (it ranks %v)", b.Name, window, ErrUnknownWindow, b.Windows)
	}
	if period == "" {
		return ranking.PeriodOf(w, now), nil
	}
	p, err := ranking.ParsePeriod(w, period)
	if err != nil {
		return ranking.Period{}, fmt.Errorf("board %s: %w: %s", b.Name, ErrInvalidPeriod, err)
	}
	return p, nil
}

// Top is the board's Top limit (0: N; at most N) of the window's period
// (""; the current one at Now). It is read in one round trip from Redis;
// a view missing there (wiped, expired, never written) or of weights
// older than the newest this process knows is computed from the record,
// written and answered.
func (s *Service) Top(ctx context.Context, board, window, period string, limit int) (View, error) {
	b, err := s.board(board)
	if err != nil {
		return View{}, err
	}
	if limit < 0 || limit > b.Top {
		return View{}, fmt.Errorf("top of %s: limit %d: %w (want 0 to %d)", board, limit, ErrInvalidLimit, b.Top)
	}
	now := s.cfg.Now()
	p, err := s.period(b, window, period, now)
	if err != nil {
		return View{}, err
	}
	v, err := s.view(ctx, b, p, now)
	if err != nil {
		return View{}, err
	}
	if limit > 0 && len(v.Items) > limit {
		v.Items = v.Items[:limit]
	}
	return v, nil
}

// view is the served view of p, rebuilt when missing or outdated.
func (s *Service) view(ctx context.Context, b ranking.Board, p ranking.Period, now time.Time) (View, error) {
	v, ok, err := s.read(ctx, b, p)
	if err != nil {
		return View{}, err
	}
	if ok && v.WeightsVersion >= s.knownVersion(b.Name) {
		return v, nil
	}
	return s.rebuild(ctx, b, p, now)
}

// flight is one rebuild in progress; the reads that miss the same key
// meanwhile wait for it instead of scanning the record too, so a wiped key
// read thousands of times a second costs one scan per process.
type flight struct {
	done    chan struct{}
	waiters int // under flightMu (tests)
	v       View
	err     error
}

// rebuild computes and stores p's view once for the concurrent reads that
// missed it. The waiters share the first one's outcome, its error too.
func (s *Service) rebuild(ctx context.Context, b ranking.Board, p ranking.Period, now time.Time) (View, error) {
	key := s.topKey(b.Name, p)
	s.flightMu.Lock()
	if f, ok := s.flights[key]; ok {
		f.waiters++
		s.flightMu.Unlock()
		select {
		case <-f.done:
		case <-ctx.Done():
			return View{}, fmt.Errorf("top of %s %s: %w", b.Name, p, ctx.Err())
		}
		v := f.v
		v.Items = slices.Clone(v.Items)
		return v, f.err
	}
	f := &flight{done: make(chan struct{})}
	s.flights[key] = f
	s.flightMu.Unlock()
	f.v, _, f.err = s.refresh(ctx, b, p, now, true, 0, nil)
	s.flightMu.Lock()
	delete(s.flights, key)
	s.flightMu.Unlock()
	close(f.done)
	v := f.v
	v.Items = slices.Clone(v.Items)
	return v, f.err
}

// read is the stored view of p; ok false when there is none. It reads
// the version, digest and refresh time first, a few bytes, and the view
// itself only when those differ from the copy decoded before: a refresh
// that changed nothing costs neither the transfer of the view nor its
// decoding, which are most of a read's time.
func (s *Service) read(ctx context.Context, b ranking.Board, p ranking.Period) (View, bool, error) {
	key := s.topKey(b.Name, p)
	vals, err := s.cfg.Redis.HMGet(ctx, key, "v", "sum", "at").Result()
	if err != nil {
		return View{}, false, fmt.Errorf("top of %s %s: read: %w", b.Name, p, err)
	}
	version, _ := vals[0].(string)
	sum, _ := vals[1].(string)
	at, _ := vals[2].(string)
	if v, ok := s.cache.get(key, version, sum); ok {
		ns, _ := strconv.ParseInt(at, 10, 64)
		v.RefreshedAt = time.Unix(0, ns).UTC()
		return v, true, nil
	}
	// Missed: the whole hash, read again at once so that the view and
	// its version and digest are of one write.
	vals, err = s.cfg.Redis.HMGet(ctx, key, "v", "sum", "at", "view").Result()
	if err != nil {
		return View{}, false, fmt.Errorf("top of %s %s: read: %w", b.Name, p, err)
	}
	version, _ = vals[0].(string)
	sum, _ = vals[1].(string)
	at, _ = vals[2].(string)
	raw, _ := vals[3].(string)
	if raw == "" {
		return View{}, false, nil
	}
	var w wireView
	if err := json.Unmarshal([]byte(raw), &w); err != nil {
		// A view this code cannot read is rebuilt, not served.
		s.log.Warn("ranking view unreadable, rebuilt", "board", b.Name, "period", p.String(), "err", err)
		return View{}, false, nil
	}
	v := fromWire(w)
	v.Digest = sum
	s.cache.put(key, version, sum, v)
	ns, _ := strconv.ParseInt(at, 10, 64)
	v.RefreshedAt = time.Unix(0, ns).UTC()
	return v, true, nil
}

// viewCache holds the views decoded last, by key, with the version and
// digest they were decoded for. Bounded: past maxCached keys it starts
// again empty (the keys in use are boards × windows × retained periods).
type viewCache struct {
	mu sync.Mutex
	m  map[string]cachedView
}

type cachedView struct {
	version, sum string
	v            View
}

const maxCached = 4096

func (c *viewCache) get(key, version, sum string) (View, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	e, ok := c.m[key]
	if !ok || e.version != version || e.sum != sum {
		return View{}, false
	}
	v := e.v
	v.Items = slices.Clone(v.Items) // a caller's truncation or sort stays its own
	return v, true
}

func (c *viewCache) put(key, version, sum string, v View) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.m == nil || len(c.m) >= maxCached {
		c.m = make(map[string]cachedView)
	}
	v.Items = slices.Clone(v.Items)
	c.m[key] = cachedView{version, sum, v}
}

// refresh computes p's Top N from the record and stores it; rebuild marks
// a read's rebuild, which never replaces a view of its version (put.lua);
// token is the lease's fencing token of a refresh under it, else 0.
// changed reports a stored Top N that differs from the one before; a
// token no longer the lease's is errLeaseLost, nothing written.
func (s *Service) refresh(ctx context.Context, b ranking.Board, p ranking.Period, now time.Time, rebuild bool, token int64, memo ranks) (v View, changed bool, err error) {
	w, err := s.weights(ctx, b)
	if err != nil {
		return View{}, false, err
	}
	rs, err := s.ranked(ctx, b, w, p, now, memo)
	if err != nil {
		return View{}, false, err
	}
	rs = slices.Clone(rs[:min(len(rs), b.Top)])
	v = View{Board: b.Name, Window: p.Window, Period: p.String(), WeightsVersion: w.Version, Items: rs, RefreshedAt: now}
	ttl := p.End().Add(b.Retention()).Sub(now)
	if p.Start.After(now) || ttl <= 0 {
		// A period not begun, or past the retention: answered, not kept,
		// so no request can grow Redis beyond the retained periods.
		return v, false, nil
	}
	wire := toWire(v)
	raw, err := json.Marshal(wire)
	if err != nil {
		return View{}, false, fmt.Errorf("top of %s %s: encode: %w", b.Name, p, err)
	}
	v.Digest = itemsDigest(wire.Items)
	flag := "0"
	if rebuild {
		flag = "1"
	}
	n, err := putScript.Run(ctx, s.cfg.Redis, []string{s.topKey(b.Name, p), s.leaseKeys(b.Name).Lease},
		w.Version, v.Digest, raw, ttl.Milliseconds()+1, flag, now.UnixNano(), token).Int()
	if err != nil {
		return View{}, false, fmt.Errorf("top of %s %s: store: %w", b.Name, p, err)
	}
	if n == -1 {
		return View{}, false, fmt.Errorf("top of %s %s: %w", b.Name, p, errLeaseLost)
	}
	return v, n == 2, nil
}

// itemsDigest tells two Top N apart without comparing them: the items'
// JSON without the refresh time, hashed.
func itemsDigest(items []wireItem) string {
	raw, _ := json.Marshal(items) // jsonFloat always encodes
	h := fnv.New128a()
	h.Write(raw)
	return fmt.Sprintf("%x", h.Sum(nil))
}

// ranked is p's ranking under w with p's carry: its first depth(b)
// items, enough for the served Top N and for the carry into the next day.
// memo (nil: none) holds the rankings computed during one refresh or
// recompute; a day settled long enough ago is kept across them too
// (pastRanks).
func (s *Service) ranked(ctx context.Context, b ranking.Board, w ranking.Weights, p ranking.Period, now time.Time, memo ranks) ([]ranking.Ranked, error) {
	key := b.Name + " " + strconv.FormatInt(w.Version, 10) + " " + p.String()
	if rs, ok := memo[key]; ok {
		return rs, nil
	}
	settled := p.Window == ranking.WindowDay && p.End().Add(settleAfter(b)).Before(now)
	if settled {
		if rs, ok := s.past.get(key); ok {
			return rs, nil
		}
	}
	carry, err := s.carry(ctx, b, w, p, now, memo)
	if err != nil {
		return nil, err
	}
	// Streamed: only the first depth are held, whatever the catalogue.
	r := ranking.NewRanker(w.Metrics, carry, depth(b))
	err = s.cfg.Record.Scan(ctx, b.Name, p.Start, p.End(), func(m ranking.ItemMetrics) error {
		r.Add(m)
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("rank %s %s: scan: %w", b.Name, p, err)
	}
	rs := r.Result()
	if memo != nil {
		memo[key] = rs
	}
	if settled {
		s.past.put(key, rs)
	}
	return rs, nil
}

// depth is how many of a period's items a ranking keeps: the Top N, or
// the carry's top when that is deeper.
func depth(b ranking.Board) int { return max(b.Top, b.Carry.Top) }

// settleAfter is how long after its end a day's ranking is taken as
// settled: past the last refresh that recounts it (the feed's grace, a
// refresh's boundary pass) with a margin. Past views are recomputed after
// that only by new weights (RefreshAll), so a settled day's ranking may be
// kept by weights version.
func settleAfter(b ranking.Board) time.Duration { return max(FinalGrace, 2*b.Refresh) + time.Minute }

// carry is p's carry: for a day, CarryFrom the previous day's ranking
// (its first carry.top, ranked the same way, with its own carry), until a
// previous day that starts before now − retention, which gives none;
// nothing for hours and weeks. Ranking the previous day's first carry.top
// is enough: CarryFrom takes the first carry.top with a positive, finite
// score, and a non-positive score ranks behind every positive one (an
// infinite one, which only weights near the float64 limit make, would
// carry one item fewer).
func (s *Service) carry(ctx context.Context, b ranking.Board, w ranking.Weights, p ranking.Period, now time.Time, memo ranks) (map[string]float64, error) {
	if p.Window != ranking.WindowDay || b.Carry.Top == 0 {
		return nil, nil
	}
	prev := p.Prev()
	if prev.Start.Before(now.Add(-b.Retention())) {
		return nil, nil
	}
	rs, err := s.ranked(ctx, b, w, prev, now, memo)
	if err != nil {
		return nil, fmt.Errorf("carry into %s: %w", p, err)
	}
	return ranking.CarryFrom(rs[:min(len(rs), b.Carry.Top)], b.Carry), nil
}

// ranks are the rankings computed during one refresh of a board or one
// recompute of its periods, by board, weights version and period: each
// day's carry ranks the day before, whose own carry ranks the day before
// that, back to the retention, so without them recomputing every day
// would rank the first day once per day after it. Nil keeps none.
type ranks map[string][]ranking.Ranked

// pastRanks keeps settled days' rankings across refreshes, by board,
// weights version and day, so that a refresh of today does not rank the
// whole retention again for its carry. Bounded: past maxPast rankings it
// starts again empty (in use: boards × retained days × versions in play).
type pastRanks struct {
	mu sync.Mutex
	m  map[string][]ranking.Ranked
}

const maxPast = 512

func (c *pastRanks) get(key string) ([]ranking.Ranked, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	rs, ok := c.m[key]
	return rs, ok
}

func (c *pastRanks) put(key string, rs []ranking.Ranked) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.m == nil || len(c.m) >= maxPast {
		c.m = make(map[string][]ranking.Ranked)
	}
	c.m[key] = rs
}

// Item is one item's place in the window's period: from the served Top N
// when it is there, else computed on demand from the record (its exact
// rank among every item and carry). ok false when the item has neither an
// event in the period nor a carry into it.
func (s *Service) Item(ctx context.Context, board, window, period, item string) (ranking.Ranked, bool, error) {
	b, err := s.board(board)
	if err != nil {
		return ranking.Ranked{}, false, err
	}
	now := s.cfg.Now()
	p, err := s.period(b, window, period, now)
	if err != nil {
		return ranking.Ranked{}, false, err
	}
	v, err := s.view(ctx, b, p, now)
	if err != nil {
		return ranking.Ranked{}, false, err
	}
	for _, r := range v.Items {
		if r.Item == item {
			return r, true, nil
		}
	}
	w, err := s.weights(ctx, b)
	if err != nil {
		return ranking.Ranked{}, false, err
	}
	carry, err := s.carry(ctx, b, w, p, now, nil)
	if err != nil {
		return ranking.Ranked{}, false, err
	}
	m, ok, err := s.cfg.Reads.Item(ctx, b.Name, item, p.Start, p.End())
	if err != nil {
		return ranking.Ranked{}, false, fmt.Errorf("item %q of %s %s: %w", item, b.Name, p, err)
	}
	if _, carried := carry[item]; !ok && !carried {
		return ranking.Ranked{}, false, nil
	}
	if !ok {
		m = ranking.ItemMetrics{Item: item}
	}
	r, err := ranking.RankOf(w.Metrics, m, carry, func(fn func(ranking.ItemMetrics) error) error {
		return s.cfg.Reads.Scan(ctx, b.Name, p.Start, p.End(), fn)
	})
	if err != nil {
		return ranking.Ranked{}, false, fmt.Errorf("item of %s %s: %w", b.Name, p, err)
	}
	return r, true, nil
}
