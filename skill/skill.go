// Package skill is the client of the external skill service (seed 001: "the
// skill API owns that"). engine.Service asks it once per join, for a player
// whose token carries no skill, under a short timeout, and falls back to the
// last known skill or a default when it is slow or down; the engine never
// asks it. A Client is safe for concurrent use.
package skill

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/matchgate/matchgate/matcher/engine"
)

// Client asks GET {URL}/skill/{userId} and reads {"skill": n}.
type Client struct {
	base   string
	client *http.Client
}

var _ engine.SkillSource = (*Client)(nil)

// Config configures a Client.
type Config struct {
	// URL is the skill service's base URL (http or https). Required.
	URL string
	// Client makes the requests. Default: a client with Timeout.
	Client *http.Client
	// Timeout is a backstop for each request when Client is nil; the
	// caller's context (300 ms in the join path) is normally shorter.
	// Default 2s.
	Timeout time.Duration
}

// New validates the configuration; it makes no request.
func New(cfg Config) (*Client, error) {
	u, err := url.Parse(cfg.URL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("skill: URL %q must be an http(s) URL", cfg.URL)
	}
	if cfg.Timeout == 0 {
		cfg.Timeout = 2 * time.Second
	}
	if cfg.Client == nil {
		cfg.Client = &http.Client{Timeout: cfg.Timeout}
	}
	return &Client{base: strings.TrimRight(cfg.URL, "/"), client: cfg.Client}, nil
}

// Skill implements engine.SkillSource. Anything but a 200 with a finite
// number is an error.
func (c *Client) Skill(ctx context.Context, userID string) (float64, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, c.base+"/skill/"+url.PathEscape(userID), nil)
	if err != nil {
		return 0, fmt.Errorf("skill of %s: %w", userID, err)
	}
	req.Header.Set("Accept", "application/json")
	resp, err := c.client.Do(req)
	if err != nil {
		return 0, fmt.Errorf("skill of %s: %w", userID, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return 0, fmt.Errorf("skill of %s: skill service answered %d", userID, resp.StatusCode)
	}
	var body struct {
		Skill *float64 `json:"skill"`
	}
	if err := json.NewDecoder(io.LimitReader(resp.Body, 64<<10)).Decode(&body); err != nil {
		return 0, fmt.Errorf("skill of %s: answer is not JSON: %w", userID, err)
	}
	if body.Skill == nil || math.IsNaN(*body.Skill) || math.IsInf(*body.Skill, 0) {
		return 0, fmt.Errorf("skill of %s: answer has no finite skill", userID)
	}
	return *body.Skill, nil
}
