package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/matchgate/matchgate/client"
	"github.com/matchgate/matchgate/gateway"
)

// dialer opens connections from a rotating set of local source addresses:
// each address has its own ~28,000 ephemeral ports, so more sockets than
// that need several.
type dialer struct {
	sources []*net.TCPAddr
	next    atomic.Uint64
	// ws upgrades: one TCP connection each, no pooling, no goroutine left
	// behind (rawTransport).
	ws *http.Client
	// rest: pooled keep-alive connections for REST players and checks.
	rest *http.Client
}

func newDialer(sources []string, restConns int) (*dialer, error) {
	d := &dialer{}
	for _, s := range sources {
		ip := net.ParseIP(s)
		if ip == nil {
			return nil, fmt.Errorf("source address %q", s)
		}
		d.sources = append(d.sources, &net.TCPAddr{IP: ip})
	}
	d.ws = &http.Client{Transport: rawTransport{dial: d.dialWSConn}}
	d.rest = &http.Client{Transport: &http.Transport{
		DialContext:         d.dialContext,
		MaxIdleConnsPerHost: restConns,
		MaxConnsPerHost:     restConns,
		IdleConnTimeout:     30 * time.Second,
		ForceAttemptHTTP2:   false,
	}, Timeout: 15 * time.Second}
	return d, nil
}

// dialContext dials from the next source address in turn.
//
// The source port is left to connect (IP_BIND_ADDRESS_NO_PORT), not chosen
// at bind: a port is then only unique per destination, and ports in
// TIME_WAIT can be reused, instead of every bound port being reserved for
// its address. WebSocket connections also get SO_LINGER 0 (see dialWSConn).
func (d *dialer) dialContext(ctx context.Context, network, addr string) (net.Conn, error) {
	nd := net.Dialer{Timeout: 10 * time.Second, KeepAlive: -1}
	if len(d.sources) > 0 {
		nd.LocalAddr = d.sources[(d.next.Add(1)-1)%uint64(len(d.sources))]
		nd.Control = bindNoPort
	}
	return nd.DialContext(ctx, network, addr)
}

// ipBindAddressNoPort is IP_BIND_ADDRESS_NO_PORT (linux/in.h).
const ipBindAddressNoPort = 24

func bindNoPort(_, _ string, c syscall.RawConn) error {
	var serr error
	err := c.Control(func(fd uintptr) {
		serr = syscall.SetsockoptInt(int(fd), syscall.IPPROTO_IP, ipBindAddressNoPort, 1)
	})
	if err != nil {
		return err
	}
	return serr
}

// dialWSConn is dialContext for WebSocket connections: they close with
// SO_LINGER 0, so a load test of 100,000 sockets does not leave 100,000
// client ports in TIME_WAIT for the next run (the close handshake, when
// there is one, has completed by then).
func (d *dialer) dialWSConn(ctx context.Context, network, addr string) (net.Conn, error) {
	c, err := d.dialContext(ctx, network, addr)
	if err != nil {
		return nil, err
	}
	if tc, ok := c.(*net.TCPConn); ok {
		_ = tc.SetLinger(0)
	}
	return c, nil
}

type httpError struct {
	status int
	code   string // the API's error code, when the body had one
	err    error
}

func (e *httpError) Error() string { return fmt.Sprintf("HTTP %d %s: %v", e.status, e.code, e.err) }

// dialErrorKind classifies a failed connect for the report.
func dialErrorKind(err error) string {
	var he *httpError
	var te *client.TerminalError
	var ne net.Error
	switch {
	case errors.As(err, &he):
		return fmt.Sprintf("http_%d", he.status)
	case errors.As(err, &te) && te.Status != 0:
		return fmt.Sprintf("http_%d", te.Status)
	case errors.Is(err, syscall.EADDRNOTAVAIL):
		return "no_source_port"
	case errors.Is(err, syscall.ECONNREFUSED):
		return "refused"
	case errors.Is(err, syscall.EMFILE), errors.Is(err, syscall.ENFILE):
		return "too_many_files"
	case errors.Is(err, syscall.ECONNRESET), errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF):
		return "reset"
	case errors.Is(err, context.DeadlineExceeded), errors.As(err, &ne) && ne.Timeout():
		return "timeout"
	case errors.Is(err, context.Canceled):
		return "cancelled"
	}
	return "other"
}

// rawTransport performs each request on its own TCP connection and keeps a
// 101 response's connection as the body, which is what coder/websocket
// expects; unlike http.Transport it starts no goroutine per connection.
type rawTransport struct {
	dial func(ctx context.Context, network, addr string) (net.Conn, error)
}

func (t rawTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	conn, err := t.dial(req.Context(), "tcp", req.URL.Host)
	if err != nil {
		return nil, err
	}
	if dl, ok := req.Context().Deadline(); ok {
		_ = conn.SetDeadline(dl)
	}
	if err := req.Write(conn); err != nil {
		conn.Close()
		return nil, err
	}
	br := bufio.NewReaderSize(conn, 1024)
	resp, err := http.ReadResponse(br, req)
	if err != nil {
		conn.Close()
		return nil, err
	}
	if resp.StatusCode == http.StatusSwitchingProtocols {
		_ = conn.SetDeadline(time.Time{})
		resp.Body = &upgraded{r: br, Conn: conn}
		return resp, nil
	}
	body, err := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
	conn.Close()
	if err != nil {
		return nil, err
	}
	resp.Body = io.NopCloser(bytes.NewReader(body))
	return resp, nil
}

type upgraded struct {
	r *bufio.Reader
	net.Conn
}

func (u *upgraded) Read(p []byte) (int, error) { return u.r.Read(p) }

// tokenSource gives each player a token: minted locally with the servers'
// secret (no server round trip, no bottleneck), or from the guest endpoint.
type tokenSource struct {
	secret []byte
	ttl    time.Duration
	client *http.Client
}

// token returns a token for a player and the user id it carries: user when
// minted, the server's choice for a guest.
func (s tokenSource) token(ctx context.Context, base, user string, skill float64) (tok, userID string, err error) {
	if len(s.secret) > 0 {
		tok, err = gateway.MintToken(s.secret, user, &skill, s.ttl, time.Now())
		return tok, user, err
	}
	body, _ := json.Marshal(map[string]float64{"skill": skill})
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, base+"/v1/auth/guest", bytes.NewReader(body))
	if err != nil {
		return "", "", err
	}
	req.Header.Set("Content-Type", "application/json")
	var out struct {
		Token  string `json:"token"`
		UserID string `json:"userId"`
	}
	if err := doJSON(s.client, req, &out); err != nil {
		return "", "", fmt.Errorf("guest token: %w", err)
	}
	return out.Token, out.UserID, nil
}

// doJSON performs req and decodes a 2xx JSON answer into out (nil: ignore
// the body). Other statuses become *httpError with the API's error code.
func doJSON(c *http.Client, req *http.Request, out any) error {
	resp, err := c.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if err != nil {
		return err
	}
	if resp.StatusCode/100 != 2 {
		var e struct {
			Error struct {
				Code    string `json:"code"`
				Message string `json:"message"`
			} `json:"error"`
		}
		_ = json.Unmarshal(b, &e)
		return &httpError{status: resp.StatusCode, code: e.Error.Code, err: errors.New(e.Error.Message)}
	}
	if out == nil || len(b) == 0 {
		return nil
	}
	return json.Unmarshal(b, out)
}

// raiseFileLimit raises the soft limit on open files to the hard limit and
// returns the new soft limit.
func raiseFileLimit() (uint64, error) {
	var rl syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &rl); err != nil {
		return 0, err
	}
	if rl.Cur < rl.Max {
		rl.Cur = rl.Max
		if err := syscall.Setrlimit(syscall.RLIMIT_NOFILE, &rl); err != nil {
			return 0, err
		}
	}
	return rl.Cur, nil
}
