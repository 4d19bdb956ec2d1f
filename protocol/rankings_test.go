package protocol

import (
	"encoding/json"
	"math"
	"testing"
	"time"

	"github.com/matchgate/matchgate/ranking"
)

// Non-finite numbers travel as null: json.Marshal refuses them, and a
// refused body would be a 500 for the whole Top.
func TestRankingViewOfNonFinite(t *testing.T) {
	items := []ranking.Ranked{
		{Item: "a", Rank: 1, Score: math.Inf(1), Metrics: map[string]float64{"views": 1e308}, Parts: map[string]float64{"views": math.Inf(1), "carry": math.NaN()}},
		{Item: "b", Rank: 2, Score: -0.5},
		{Item: "c", Rank: 3, Score: math.NaN(), Metrics: map[string]float64{"views": 0}},
	}
	v := RankingViewOf("shop", ranking.WindowDay, "2026-12-02", 4, time.Date(2026, 12, 2, 1, 2, 3, 4e6, time.UTC), items)
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	want := `{"board":"shop","window":"day","period":"2026-12-02","weightsVersion":4,"refreshedAt":"2026-12-02T01:02:03.004Z","items":[` +
		`{"item":"a","rank":1,"score":null,"metrics":{"views":1e+308},"parts":{"carry":null,"views":null}},` +
		`{"item":"b","rank":2,"score":-0.5,"metrics":{},"parts":{}},` +
		`{"item":"c","rank":3,"score":null,"metrics":{"views":0},"parts":{}}]}`
	if string(b) != want {
		t.Errorf("got  %s\nwant %s", b, want)
	}
	if b, _ := json.Marshal(RankingViewOf("shop", ranking.WindowHour, "p", 0, time.Time{}, nil)); string(b) !=
		`{"board":"shop","window":"hour","period":"p","weightsVersion":0,"refreshedAt":null,"items":[]}` {
		t.Errorf("empty view: %s", b)
	}
}

func TestWeightsOf(t *testing.T) {
	w := WeightsOf(ranking.Weights{Version: 2, Metrics: map[string]ranking.Metric{"sales": {Weight: 5, Transform: ranking.TransformLog1p}},
		By: "ops", At: time.Date(2026, 12, 2, 0, 0, 0, 0, time.UTC)})
	b, _ := json.Marshal(w)
	if string(b) != `{"version":2,"metrics":{"sales":{"weight":5,"transform":"log1p"}},"by":"ops","at":"2026-12-02T00:00:00.000Z"}` {
		t.Errorf("weights: %s", b)
	}
	if b, _ := json.Marshal(WeightsOf(ranking.Weights{})); string(b) != `{"version":0,"metrics":{},"by":"","at":null}` {
		t.Errorf("zero weights: %s", b)
	}
}
