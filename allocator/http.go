package allocator

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/matchgate/matchgate/matcher"
	"github.com/matchgate/matchgate/matcher/engine"
)

// HTTP is a client of a fleet manager speaking the protocol of
// docs/ALLOCATOR.md:
//
//	POST {base}/allocate {"matchId","queue","region","players":[{"userId","ticketId"}],"bots"}
//	  → 200 {"address": "host:port", "session": "…"}
//	  → 503 (or any other status): no server now; the matcher retries
//	POST {base}/release  {"matchId","address","session"} → 2xx (404 is fine too)
type HTTP struct {
	base   string
	client *http.Client
}

var _ engine.Allocator = (*HTTP)(nil)

// HTTPConfig configures an HTTP allocator client.
type HTTPConfig struct {
	// URL is the fleet manager's base URL (http or https). Required.
	URL string
	// Client makes the requests. Default: a client with Timeout.
	Client *http.Client
	// Timeout bounds each request when Client is nil. Default 1s: the
	// allocation sits on the path from claim to push.
	Timeout time.Duration
}

// NewHTTP validates the configuration; it makes no request.
func NewHTTP(cfg HTTPConfig) (*HTTP, error) {
	u, err := url.Parse(cfg.URL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("allocator: URL %q must be an http(s) URL", cfg.URL)
	}
	if cfg.Timeout == 0 {
		cfg.Timeout = time.Second
	}
	if cfg.Client == nil {
		cfg.Client = &http.Client{Timeout: cfg.Timeout}
	}
	return &HTTP{base: strings.TrimRight(cfg.URL, "/"), client: cfg.Client}, nil
}

type wirePlayer struct {
	UserID   string `json:"userId"`
	TicketID string `json:"ticketId"`
}

type allocateBody struct {
	MatchID string       `json:"matchId"`
	Queue   string       `json:"queue"`
	Region  string       `json:"region"`
	Players []wirePlayer `json:"players"`
	Bots    int          `json:"bots"`
}

type serverBody struct {
	Address string `json:"address"`
	Session string `json:"session"`
}

type releaseBody struct {
	MatchID string `json:"matchId"`
	Address string `json:"address"`
	Session string `json:"session"`
}

// Allocate implements engine.Allocator.
func (h *HTTP) Allocate(ctx context.Context, req engine.AllocationRequest) (matcher.Server, error) {
	body := allocateBody{MatchID: req.MatchID, Queue: req.Queue, Region: req.Region, Players: []wirePlayer{}, Bots: req.Bots}
	for _, p := range req.Players {
		body.Players = append(body.Players, wirePlayer{UserID: p.UserID, TicketID: p.TicketID})
	}
	var out serverBody
	status, err := h.post(ctx, "/allocate", body, &out)
	if err != nil {
		return matcher.Server{}, fmt.Errorf("allocate %s in %s: %w", req.MatchID, req.Region, err)
	}
	if status != http.StatusOK {
		return matcher.Server{}, fmt.Errorf("allocate %s in %s: fleet manager answered %d", req.MatchID, req.Region, status)
	}
	if out.Address == "" {
		return matcher.Server{}, fmt.Errorf("allocate %s in %s: answer without an address", req.MatchID, req.Region)
	}
	if out.Session == "" {
		out.Session = req.MatchID
	}
	return matcher.Server{Address: out.Address, Session: out.Session}, nil
}

// Release implements engine.Allocator.
func (h *HTTP) Release(ctx context.Context, matchID string, s matcher.Server) error {
	status, err := h.post(ctx, "/release", releaseBody{MatchID: matchID, Address: s.Address, Session: s.Session}, nil)
	if err != nil {
		return fmt.Errorf("release %s: %w", matchID, err)
	}
	if status/100 != 2 && status != http.StatusNotFound {
		return fmt.Errorf("release %s: fleet manager answered %d", matchID, status)
	}
	return nil
}

// maxAnswer bounds the body read from the fleet manager.
const maxAnswer = 64 << 10

func (h *HTTP) post(ctx context.Context, path string, in, out any) (int, error) {
	b, err := json.Marshal(in)
	if err != nil {
		return 0, err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, h.base+path, bytes.NewReader(b))
	if err != nil {
		return 0, err
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := h.client.Do(req)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxAnswer))
	if err != nil {
		return resp.StatusCode, err
	}
	if out != nil && resp.StatusCode == http.StatusOK {
		if err := json.Unmarshal(body, out); err != nil {
			return resp.StatusCode, errors.New("answer is not the expected JSON")
		}
	}
	return resp.StatusCode, nil
}
