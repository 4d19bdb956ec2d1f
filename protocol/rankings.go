package protocol

import (
	"math"
	"time"

	"github.com/matchgate/matchgate/ranking"
)

// The rankings on the wire (ARCHITECTURE.md §7): the events another
// service posts, a board's Top N of one window's period, one item's place,
// and the weights the admin API sets.

// RankingEventsRequest is POST /v1/rankings/{board}/events. The edge
// decodes each event strictly by itself (RankingEvent's fields exactly).
type RankingEventsRequest struct {
	Events []ranking.Event `json:"events"`
}

// RankingIngested answers POST /v1/rankings/{board}/events: the events
// counted, and those seen before (by id) that counted nothing.
type RankingIngested struct {
	Accepted   int `json:"accepted"`
	Duplicates int `json:"duplicates"`
}

// RankedItem is an item's place in one window's period. Scores, metrics
// and parts are numbers, or null where one is not finite (extreme weights
// can make a score infinite): JSON has no infinity.
type RankedItem struct {
	Item    string              `json:"item"`
	Rank    int                 `json:"rank"`
	Score   *float64            `json:"score"`
	Metrics map[string]*float64 `json:"metrics"`
	Parts   map[string]*float64 `json:"parts"`
}

// RankingView answers GET /v1/rankings/{board}: the Top of one window's
// period under one weights version, as of RefreshedAt.
type RankingView struct {
	Board          string       `json:"board"`
	Window         string       `json:"window"`
	Period         string       `json:"period"`
	WeightsVersion int64        `json:"weightsVersion"`
	RefreshedAt    wireTime     `json:"refreshedAt"`
	Items          []RankedItem `json:"items"`
}

// RankingItemBody answers GET /v1/rankings/{board}/items/{item}.
type RankingItemBody struct {
	Board  string     `json:"board"`
	Window string     `json:"window"`
	Period string     `json:"period"`
	Item   RankedItem `json:"item"`
}

// RankingWeightsRequest is PUT /v1/admin/rankings/{board}/weights: every
// metric of the board with its weight and transform, and who sets them
// (default "admin").
type RankingWeightsRequest struct {
	Metrics map[string]ranking.Metric `json:"metrics"`
	By      string                    `json:"by"`
}

// WireWeights is one version of a board's weights.
type WireWeights struct {
	Version int64                     `json:"version"`
	Metrics map[string]ranking.Metric `json:"metrics"`
	By      string                    `json:"by"`
	At      wireTime                  `json:"at"`
}

// RankingWeightsBody answers PUT /v1/admin/rankings/{board}/weights.
type RankingWeightsBody struct {
	Board   string      `json:"board"`
	Weights WireWeights `json:"weights"`
}

// RankingViewOf is a served view (ranking/service.View, given by its
// fields: protocol stays free of the service's Redis client) in its wire
// shape; items is never null.
func RankingViewOf(board string, window ranking.Window, period string, weightsVersion int64,
	refreshedAt time.Time, items []ranking.Ranked) RankingView {
	w := RankingView{Board: board, Window: string(window), Period: period, WeightsVersion: weightsVersion,
		RefreshedAt: wireTime(refreshedAt), Items: make([]RankedItem, len(items))}
	for i, r := range items {
		w.Items[i] = RankedItemOf(r)
	}
	return w
}

// RankedItemOf is r in its wire shape; metrics and parts are never null.
func RankedItemOf(r ranking.Ranked) RankedItem {
	return RankedItem{Item: r.Item, Rank: r.Rank, Score: finiteOrNil(r.Score),
		Metrics: finiteMap(r.Metrics), Parts: finiteMap(r.Parts)}
}

// WeightsOf is w in its wire shape; metrics is never null.
func WeightsOf(w ranking.Weights) WireWeights {
	m := w.Metrics
	if m == nil {
		m = map[string]ranking.Metric{}
	}
	return WireWeights{Version: w.Version, Metrics: m, By: w.By, At: wireTime(w.At)}
}

func finiteOrNil(f float64) *float64 {
	if math.IsNaN(f) || math.IsInf(f, 0) {
		return nil
	}
	return &f
}

func finiteMap(m map[string]float64) map[string]*float64 {
	out := make(map[string]*float64, len(m))
	for k, v := range m {
		out[k] = finiteOrNil(v)
	}
	return out
}

// The ranking pushes over the socket (ARCHITECTURE.md §8): a client
// subscribes to a board's window and is pushed its Top of the current
// period whenever the Top N changes or the period rolls over.
const (
	FrameSubscribe     = "subscribe"
	FrameUnsubscribe   = "unsubscribe"
	FrameSubscribed    = "subscribed"
	FrameUnsubscribed  = "unsubscribed"
	FrameRankingUpdate = "ranking.update"
)

// RankingClientFrameTypes are the ranking frame types a client may send.
// They are decoded as RankingCommand (their own members), as provider
// frames are decoded as ProviderCommand.
var RankingClientFrameTypes = []string{FrameSubscribe, FrameUnsubscribe}

// IsRankingFrame reports whether typ is subscribe or unsubscribe.
func IsRankingFrame(typ string) bool {
	return typ == FrameSubscribe || typ == FrameUnsubscribe
}

// RankingCommand is subscribe {id, ranking, window, limit?} (limit absent:
// the REST GET's default) and unsubscribe {id, ranking, window}. Ranking
// names the board.
type RankingCommand struct {
	Type    string `json:"type"`
	ID      string `json:"id"`
	Ranking string `json:"ranking"`
	Window  string `json:"window"`
	Limit   *int   `json:"limit,omitzero"`
}

// RankingFrame is subscribed (answering a subscribe, with re) and the
// ranking.update push (without): a board's Top of one window's current
// period, its items in the REST GET's shape. Items is never null.
type RankingFrame struct {
	Type           string       `json:"type"`
	Re             string       `json:"re,omitempty"`
	Ranking        string       `json:"ranking"`
	Window         string       `json:"window"`
	Period         string       `json:"period"`
	WeightsVersion int64        `json:"weightsVersion"`
	Items          []RankedItem `json:"items"`
}

// RankingFrameOf is a view's frame of type typ answering re ("" for a
// push).
func RankingFrameOf(typ, re, board string, window ranking.Window, period string, weightsVersion int64,
	items []ranking.Ranked) RankingFrame {
	f := RankingFrame{Type: typ, Re: re, Ranking: board, Window: string(window), Period: period,
		WeightsVersion: weightsVersion, Items: make([]RankedItem, len(items))}
	for i, r := range items {
		f.Items[i] = RankedItemOf(r)
	}
	return f
}
