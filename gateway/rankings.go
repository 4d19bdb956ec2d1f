package gateway

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"sync"

	"github.com/gorilla/mux"

	"github.com/matchgate/matchgate/matcher"
	"github.com/matchgate/matchgate/protocol"
	"github.com/matchgate/matchgate/ranking"
	"github.com/matchgate/matchgate/ranking/service"
)

// The rankings at the edge (ARCHITECTURE.md §7). Another service posts its
// events with the service credential (the admin token, as the admission
// token routes take it); any authenticated user reads a board's Top and
// an item's place, counted against the per-user read limit; the admin API
// sets a board's weights. Without Config.Rankings every ranking route
// answers NOT_FOUND.

// Rankings is the rankings Service (ranking/service) as the edge sees it.
type Rankings interface {
	Ingest(ctx context.Context, board string, events []ranking.Event) (accepted, duplicates int, err error)
	Top(ctx context.Context, board, window, period string, limit int) (service.View, error)
	Item(ctx context.Context, board, window, period, item string) (ranking.Ranked, bool, error)
	SetWeights(ctx context.Context, board string, metrics map[string]ranking.Metric, by string) (ranking.Weights, error)
}

var errNoRankings = matcher.Errorf(matcher.CodeNotFound, "rankings are not enabled on this server")

const (
	// maxRankingEventsBytes bounds POST …/events: MaxBatch events of
	// about 200 bytes each.
	maxRankingEventsBytes = 2 << 20
	// defaultRankingLimit is a GET's Top when it names no limit.
	defaultRankingLimit = 20
	// defaultWeightsBy names the author of weights set without one.
	defaultWeightsBy = "admin"
	maxWeightsByLen  = 128
)

func (s *Server) rankingRoutes(r *mux.Router) {
	reader := func(h func(w http.ResponseWriter, r *http.Request, p principal)) http.HandlerFunc {
		return s.withRankings(s.withAuth(h))
	}
	r.HandleFunc("/v1/rankings/{board}/events", s.withRankings(s.handleRankingEvents)).Methods(http.MethodPost)
	r.HandleFunc("/v1/rankings/{board}", reader(s.handleRankingTop)).Methods(http.MethodGet)
	r.HandleFunc("/v1/rankings/{board}/items/{item}", reader(s.handleRankingItem)).Methods(http.MethodGet)
}

// withRankings answers 404 before anything else (the token too) when the
// server has no rankings.
func (s *Server) withRankings(h http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if s.cfg.Rankings == nil {
			s.writeError(w, r, errNoRankings)
			return
		}
		h(w, r)
	}
}

// rankingBoard checks a board name before the service sees it: a name
// that cannot be a board's is an unknown board.
func rankingBoard(board string) error {
	if !ranking.ValidBoardName(board) {
		return matcher.Errorf(matcher.CodeNotFound, "no such ranking board (names are lower-case letters, digits, '-' and '_')")
	}
	return nil
}

// refuseRanking maps the rankings' sentinel errors to what the client is
// told; anything else is left to classify (UNAVAILABLE or INTERNAL).
func refuseRanking(err error, board string) error {
	switch {
	case errors.Is(err, ranking.ErrUnknownBoard):
		return matcher.Errorf(matcher.CodeNotFound, "no such ranking board %q", board)
	case errors.Is(err, ranking.ErrInvalidEvent), errors.Is(err, service.ErrTooMany),
		errors.Is(err, service.ErrUnknownWindow), errors.Is(err, service.ErrInvalidPeriod),
		errors.Is(err, service.ErrInvalidLimit), errors.Is(err, service.ErrInvalidWeights):
		return matcher.Errorf(matcher.CodeBadRequest, "%s", err.Error())
	}
	return err
}

// handleRankingEvents: POST /v1/rankings/{board}/events {"events":[…]} →
// 202 {"accepted","duplicates"}, for the holder of the service credential
// only. Not limited: the credential is the service's, and the batch is
// bounded.
func (s *Server) handleRankingEvents(w http.ResponseWriter, r *http.Request) {
	if !s.adminAuthorized(w, r, "ranking_events",
		matcher.Errorf(matcher.CodeNotFound, "posting ranking events needs a service credential: no admin token is configured")) {
		return
	}
	var body struct {
		Events []json.RawMessage `json:"events"`
	}
	if err := s.decodeBodyLimit(w, r, &body, maxRankingEventsBytes); err != nil {
		s.writeError(w, r, err)
		return
	}
	board := mux.Vars(r)["board"]
	if err := rankingBoard(board); err != nil {
		s.writeError(w, r, err)
		return
	}
	switch {
	case body.Events == nil:
		s.writeError(w, r, matcher.Errorf(matcher.CodeBadRequest, "events is required"))
		return
	case len(body.Events) > service.MaxBatch:
		s.writeError(w, r, matcher.Errorf(matcher.CodeBadRequest, "%d events, at most %d in one batch", len(body.Events), service.MaxBatch))
		return
	}
	// Each event strictly too: decodeStrict checks the top level's keys only.
	events := make([]ranking.Event, len(body.Events))
	for i, raw := range body.Events {
		if err := decodeStrict(raw, &events[i], false); err != nil {
			s.writeError(w, r, matcher.Errorf(matcher.CodeBadRequest, "event %d: %s", i, messageOf(err)))
			return
		}
	}
	ctx, cancel := s.callCtx(r)
	defer cancel()
	accepted, duplicates, err := s.cfg.Rankings.Ingest(ctx, board, events)
	if err != nil {
		s.writeError(w, r, refuseRanking(err, board))
		return
	}
	writeJSON(w, http.StatusAccepted, protocol.RankingIngested{Accepted: accepted, Duplicates: duplicates})
}

// messageOf is a domain error's message, without its code.
func messageOf(err error) string {
	var de *matcher.Error
	if errors.As(err, &de) {
		return de.Message
	}
	return err.Error()
}

// rankingQuery reads window (default day) and period ("" the current one)
// of a GET, refusing any other parameter but limit: a typo must not fall
// back to a default.
func rankingQuery(r *http.Request, limitOK bool) (window, period string, err error) {
	q := r.URL.Query()
	for k, vs := range q {
		if k != "window" && k != "period" && (k != "limit" || !limitOK) {
			return "", "", matcher.Errorf(matcher.CodeBadRequest, "unknown query parameter %s", quoteField(k))
		}
		if len(vs) > 1 {
			return "", "", matcher.Errorf(matcher.CodeBadRequest, "query parameter %s given twice", quoteField(k))
		}
	}
	window = q.Get("window")
	if window == "" {
		window = string(ranking.WindowDay)
	}
	return window, q.Get("period"), nil
}

// handleRankingTop: GET /v1/rankings/{board}?window=&period=&limit= →
// 200 the Top limit (default 20, at most the board's N) of the period.
func (s *Server) handleRankingTop(w http.ResponseWriter, r *http.Request, p principal) {
	board := mux.Vars(r)["board"]
	window, period, err := rankingQuery(r, true)
	if err == nil {
		err = rankingBoard(board)
	}
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	// No limit asks the service for its N and keeps the first 20: a
	// board whose N is below 20 answers its N, not a refusal.
	limit, cut := 0, defaultRankingLimit
	if l := r.URL.Query().Get("limit"); l != "" {
		n, err := strconv.Atoi(l)
		if err != nil || n < 1 {
			s.writeError(w, r, matcher.Errorf(matcher.CodeBadRequest, "limit must be a whole number of at least 1"))
			return
		}
		limit, cut = n, n
	}
	ctx, cancel := s.callCtx(r)
	defer cancel()
	if err := s.limit(ctx, limitReadUser, p.UserID, s.cfg.Limits.ReadsPerUser); err != nil {
		s.writeError(w, r, err)
		return
	}
	v, err := s.cfg.Rankings.Top(ctx, board, window, period, limit)
	if err != nil {
		s.writeError(w, r, refuseRanking(err, board))
		return
	}
	// A view stored in Redis is encoded once per refresh and length, not
	// once per read: most reads of a board find the same Top N.
	key := ""
	if v.Digest != "" {
		key = v.Board + "\x00" + string(v.Window) + "\x00" + v.Period + "\x00" + strconv.FormatInt(v.WeightsVersion, 10) +
			"\x00" + v.Digest + "\x00" + strconv.FormatInt(v.RefreshedAt.UnixNano(), 10) + "\x00" + strconv.Itoa(cut)
		if b, ok := s.topBodies.get(key); ok {
			writeBody(w, http.StatusOK, b)
			return
		}
	}
	items := v.Items
	if len(items) > cut {
		items = items[:cut]
	}
	b, err := json.Marshal(protocol.RankingViewOf(v.Board, v.Window, v.Period, v.WeightsVersion, v.RefreshedAt, items))
	if err != nil {
		s.writeError(w, r, fmt.Errorf("encode the ranking: %w", err))
		return
	}
	b = append(b, '\n')
	if key != "" {
		s.topBodies.put(key, b)
	}
	writeBody(w, http.StatusOK, b)
}

// bodyCache holds encoded answers by key. Bounded: past maxBodies keys it
// starts again empty (the keys in use are boards × windows × periods read
// × lengths asked, and each refresh makes new ones).
type bodyCache struct {
	mu sync.Mutex
	m  map[string][]byte
}

const maxBodies = 1024

func (c *bodyCache) get(key string) ([]byte, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	b, ok := c.m[key]
	return b, ok
}

func (c *bodyCache) put(key string, b []byte) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.m == nil || len(c.m) >= maxBodies {
		c.m = make(map[string][]byte)
	}
	c.m[key] = b
}

// handleRankingItem: GET /v1/rankings/{board}/items/{item}?window=&period=
// → 200 the item's place; 404 when it has no event in the period.
func (s *Server) handleRankingItem(w http.ResponseWriter, r *http.Request, p principal) {
	vars := mux.Vars(r)
	board, item := vars["board"], vars["item"]
	window, period, err := rankingQuery(r, false)
	if err == nil {
		err = rankingBoard(board)
	}
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	// The answer names its period: the current one is resolved here, on
	// this server's clock, and asked for by name.
	if wd := ranking.Window(window); period == "" && wd.Valid() {
		period = ranking.PeriodOf(wd, s.cfg.Now()).String()
	}
	ctx, cancel := s.callCtx(r)
	defer cancel()
	if err := s.limit(ctx, limitReadUser, p.UserID, s.cfg.Limits.ReadsPerUser); err != nil {
		s.writeError(w, r, err)
		return
	}
	rk, ok, err := s.cfg.Rankings.Item(ctx, board, window, period, item)
	if err != nil {
		s.writeError(w, r, refuseRanking(err, board))
		return
	}
	if !ok {
		s.writeError(w, r, matcher.Errorf(matcher.CodeNotFound, "the item has no event in this period"))
		return
	}
	writeJSON(w, http.StatusOK, protocol.RankingItemBody{Board: board, Window: window, Period: period, Item: protocol.RankedItemOf(rk)})
}

// handleSetRankingWeights: PUT /v1/admin/rankings/{board}/weights
// {"metrics":{name:{"weight","transform"}},"by"} → 200 {"board","weights"}.
func (s *Server) handleSetRankingWeights(w http.ResponseWriter, r *http.Request) error {
	if s.cfg.Rankings == nil {
		return errNoRankings
	}
	var body struct {
		Metrics map[string]json.RawMessage `json:"metrics"`
		By      string                     `json:"by"`
	}
	if err := s.decodeBodyLimit(w, r, &body, maxAdminBodyBytes); err != nil {
		return err
	}
	board := mux.Vars(r)["board"]
	if err := rankingBoard(board); err != nil {
		return err
	}
	if body.Metrics == nil {
		return matcher.Errorf(matcher.CodeBadRequest, "metrics is required")
	}
	if len(body.By) > maxWeightsByLen {
		return matcher.Errorf(matcher.CodeBadRequest, "by is longer than %d bytes", maxWeightsByLen)
	}
	if body.By == "" {
		body.By = defaultWeightsBy
	}
	metrics := make(map[string]ranking.Metric, len(body.Metrics))
	for name, raw := range body.Metrics {
		var m ranking.Metric
		if err := decodeStrict(raw, &m, false); err != nil {
			return matcher.Errorf(matcher.CodeBadRequest, "metric %s: %s", quoteField(name), messageOf(err))
		}
		metrics[name] = m
	}
	ctx, cancel := s.adminCtx(r)
	defer cancel()
	wt, err := s.cfg.Rankings.SetWeights(ctx, board, metrics, body.By)
	if err != nil {
		return refuseRanking(err, board)
	}
	writeJSON(w, http.StatusOK, protocol.RankingWeightsBody{Board: board, Weights: protocol.WeightsOf(wt)})
	return nil
}
