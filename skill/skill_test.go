package skill_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/matchgate/matchgate/skill"
)

func TestClient(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.EscapedPath() {
		case "/skill/alice":
			_, _ = w.Write([]byte(`{"skill": 1432.5}`))
		case "/skill/a%2Fb":
			_, _ = w.Write([]byte(`{"skill": 7}`))
		case "/skill/nan":
			_, _ = w.Write([]byte(`{"skill": null}`))
		case "/skill/slow":
			select {
			case <-r.Context().Done():
			case <-time.After(time.Second):
			}
		default:
			http.NotFound(w, r)
		}
	}))
	defer srv.Close()
	c, err := skill.New(skill.Config{URL: srv.URL})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if s, err := c.Skill(ctx, "alice"); err != nil || s != 1432.5 {
		t.Fatalf("alice = %v, %v", s, err)
	}
	if s, err := c.Skill(ctx, "a/b"); err != nil || s != 7 {
		t.Fatalf("escaped id = %v, %v", s, err)
	}
	for _, u := range []string{"nan", "unknown"} {
		if _, err := c.Skill(ctx, u); err == nil {
			t.Errorf("%s answered a skill", u)
		}
	}
	sctx, cancel := context.WithTimeout(ctx, 50*time.Millisecond)
	defer cancel()
	start := time.Now()
	if _, err := c.Skill(sctx, "slow"); err == nil || time.Since(start) > 500*time.Millisecond {
		t.Fatalf("slow service = %v after %v", err, time.Since(start))
	}
	if _, err := skill.New(skill.Config{URL: "nope"}); err == nil {
		t.Fatal("bad URL accepted")
	}
}
