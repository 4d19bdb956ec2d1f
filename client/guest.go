package client

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/matchgate/matchgate/protocol"
)

// GuestToken is a guest sign-in's answer: the token and the guest's user id.
type GuestToken struct {
	Token  string `json:"token"`
	UserID string `json:"userId"`
}

// GuestRequest is the body of POST /v1/auth/guest. Skill nil is the
// server's default (1500); Role "provider" asks for a provider's token.
type GuestRequest struct {
	Name  string   `json:"name,omitempty"`
	Skill *float64 `json:"skill,omitempty"`
	Role  string   `json:"role,omitempty"`
}

// Guest signs in as a new guest with the given skill (servers with guests
// enabled only). baseURL is the server's http(s) base. Each call is a new
// user: pass the token to Dial with StaticToken.
func Guest(ctx context.Context, baseURL string, skill float64) (GuestToken, error) {
	return GuestWith(ctx, http.DefaultClient, baseURL, GuestRequest{Skill: &skill})
}

// GuestWith is Guest with the whole request and the HTTP client to send
// it with (nil: http.DefaultClient).
func GuestWith(ctx context.Context, hc *http.Client, baseURL string, req GuestRequest) (GuestToken, error) {
	if hc == nil {
		hc = http.DefaultClient
	}
	u, err := url.Parse(baseURL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") {
		return GuestToken{}, fmt.Errorf("matchgate client: guest: base url %q must be http(s)", baseURL)
	}
	u.Path = strings.TrimSuffix(u.Path, "/") + "/v1/auth/guest"
	body, err := json.Marshal(req)
	if err != nil {
		return GuestToken{}, fmt.Errorf("matchgate client: guest: %w", err)
	}
	r, err := http.NewRequestWithContext(ctx, http.MethodPost, u.String(), bytes.NewReader(body))
	if err != nil {
		return GuestToken{}, fmt.Errorf("matchgate client: guest: %w", err)
	}
	r.Header.Set("Content-Type", "application/json")
	resp, err := hc.Do(r)
	if err != nil {
		return GuestToken{}, fmt.Errorf("matchgate client: guest: %w", err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if err != nil {
		return GuestToken{}, fmt.Errorf("matchgate client: guest: read: %w", err)
	}
	if resp.StatusCode != http.StatusOK {
		return GuestToken{}, fmt.Errorf("matchgate client: guest: %w", restError(resp, b))
	}
	var g GuestToken
	if err := json.Unmarshal(b, &g); err != nil || g.Token == "" {
		return GuestToken{}, fmt.Errorf("matchgate client: guest: bad answer %.80q", b)
	}
	return g, nil
}

// restError is a REST error body as an *Error, the Retry-After header
// included.
func restError(resp *http.Response, b []byte) error {
	var body struct {
		Error protocol.ClientError `json:"error"`
	}
	if err := json.Unmarshal(b, &body); err != nil || body.Error.Code == "" {
		return errors.New(resp.Status)
	}
	e := errorOf(&body.Error)
	if s, err := strconv.Atoi(resp.Header.Get("Retry-After")); err == nil && s > 0 {
		e.RetryAfter = time.Duration(s) * time.Second
	}
	return e
}
