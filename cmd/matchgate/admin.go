package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"go.yaml.in/yaml/v3"
)

const adminUsage = `Usage: matchgate admin [--url URL] [--admin-token T] [--json] VERB [args]

An operator's client of the admin API (/v1/admin/, docs/OPERATIONS.md). It
sends the admin token as a bearer token; any gateway of the deployment takes
the request for all of them.

Verbs:
  bans                              list the bans in force
  ban USER [--reason R] [--for D | --until T]
                                    ban a user (until lifted without --for or --until)
  unban USER                        lift a ban
  disconnect USER                   close the user's sockets on every gateway
  drain NODE                        drain the gateway started with --node NODE
  end-assignment ID                 end a provider's offer or session
  queues                            the queues in force and the stored changes
  queue put NAME FILE               store a queue: FILE holds one queue, YAML or JSON
  queue retire NAME                 retire a queue
  admission rate QUEUE [R]          show, or set to R a second, an admission queue's rate
  ranking weights BOARD METRIC=WEIGHT[:TRANSFORM]... [--by NAME]
                                    set a ranking board's weights (every metric of the board)

Human output by default; --json prints the server's answer as it is (an
error's body too). A refused request prints the server's error code and
message and exits non-zero. "matchgate admin VERB --help" describes a verb.

Flags (before or after the verb):
`

// adminVerb is one verb: its arguments, what it does, and its run.
type adminVerb struct {
	args, what string
	// flags adds the verb's own flags.
	flags func(fs *flag.FlagSet)
	// minPos and maxPos bound the positional arguments (maxPos -1: none).
	minPos, maxPos int
	run            func(a *adminCLI, pos []string) error
}

// adminCLI is one invocation's settings and output.
type adminCLI struct {
	base    string
	token   string
	json    bool
	timeout time.Duration
	ctx     context.Context
	stdout  io.Writer
	client  *http.Client
}

// adminCmd is the admin subcommand.
func adminCmd(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) error {
	fs := newFlagSet("matchgate admin", getenv, stderr)
	fs.Usage = func() {
		fmt.Fprint(stderr, adminUsage)
		fs.PrintDefaults()
	}
	a := &adminCLI{ctx: ctx, stdout: stdout}
	urlFlag := fs.String("url", "http://127.0.0.1:8080", "the server's base URL")
	token, _ := fs.env("admin-token")
	fs.Var(secretValue{&token}, "admin-token", fs.help("admin-token", "the admin `token` (of a comma-separated list, the first)"))
	// --json and --timeout describe one call, not a deployment: no twins.
	asJSON := fs.FlagSet.Bool("json", false, "print the server's JSON answer as it is")
	timeout := fs.FlagSet.Duration("timeout", 10*time.Second, "how long one request may take")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return errHelp
		}
		return err
	}
	if len(fs.errs) > 0 {
		return fs.errs[0]
	}
	a.base, a.token, a.json, a.timeout = *urlFlag, token, *asJSON, *timeout
	rest := fs.Args()
	if len(rest) == 0 {
		fs.Usage()
		return errors.New("admin: a verb is required")
	}
	verbs := adminVerbs()
	name, rest := rest[0], rest[1:]
	// Two-word verbs: "queue put", "admission rate", "ranking weights".
	if _, ok := verbs[name]; !ok && len(rest) > 0 {
		if _, ok := verbs[name+" "+rest[0]]; ok {
			name, rest = name+" "+rest[0], rest[1:]
		}
	}
	v, ok := verbs[name]
	if !ok {
		if name == "help" {
			fs.Usage()
			return errHelp
		}
		var subs []string
		for k := range verbs {
			if sub, ok := strings.CutPrefix(k, name+" "); ok {
				subs = append(subs, sub)
			}
		}
		fs.Usage()
		if len(subs) > 0 {
			slices.Sort(subs)
			return fmt.Errorf("admin %s: want %s", name, strings.Join(subs, " or "))
		}
		return fmt.Errorf("admin: unknown verb %q", name)
	}
	vfs := flag.NewFlagSet("matchgate admin "+name, flag.ContinueOnError)
	vfs.SetOutput(stderr)
	vfs.Usage = func() {
		fmt.Fprintf(stderr, "Usage: matchgate admin %s %s\n\n%s\n\nFlags:\n", name, v.args, v.what)
		vfs.PrintDefaults()
	}
	if v.flags != nil {
		v.flags(vfs)
	}
	// The global flags are taken after the verb too: "admin bans --json".
	vfs.StringVar(&a.base, "url", a.base, "the server's base URL")
	vfs.Var(secretValue{&a.token}, "admin-token", "the admin `token`")
	vfs.BoolVar(&a.json, "json", a.json, "print the server's JSON answer as it is")
	vfs.DurationVar(&a.timeout, "timeout", a.timeout, "how long one request may take")
	pos, err := parseInterleaved(vfs, rest)
	if err != nil {
		return err
	}
	switch {
	case len(pos) < v.minPos || (v.maxPos >= 0 && len(pos) > v.maxPos):
		vfs.Usage()
		return fmt.Errorf("admin %s: want %s, got %d argument(s)", name, v.args, len(pos))
	case a.timeout <= 0:
		return errors.New("admin: --timeout must be positive")
	}
	a.token = firstToken(a.token)
	u, err := url.Parse(a.base)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return fmt.Errorf("admin: --url %q: want http://host:port or https://host:port", a.base)
	}
	a.base = strings.TrimRight(a.base, "/")
	a.client = &http.Client{Timeout: a.timeout}
	return v.run(a, pos)
}

// firstToken is the first of a comma-separated list: the server's
// MATCHGATE_ADMIN_TOKEN may hold several during a rotation, and the
// environment may be shared with it.
func firstToken(s string) string {
	first, _, _ := strings.Cut(s, ",")
	return strings.TrimSpace(first)
}

// parseInterleaved parses flags placed anywhere among the positional
// arguments ("ban USER --reason R"); after "--" every argument is
// positional.
func parseInterleaved(fs *flag.FlagSet, args []string) ([]string, error) {
	var pos, tail []string
	if i := slices.Index(args, "--"); i >= 0 {
		args, tail = args[:i], args[i+1:]
	}
	for {
		if err := fs.Parse(args); err != nil {
			if errors.Is(err, flag.ErrHelp) {
				return nil, errHelp
			}
			return nil, err
		}
		args = fs.Args()
		if len(args) == 0 {
			return append(pos, tail...), nil
		}
		pos, args = append(pos, args[0]), args[1:]
	}
}

// adminVerbs are the verbs by name; their flags' variables are this
// invocation's.
func adminVerbs() map[string]adminVerb {
	var (
		reason, forD, until, by string
		setDefaults             bool
	)
	return map[string]adminVerb{
		"bans": {args: "", what: "Lists the bans in force: user, until when, since when, the reason.",
			maxPos: 0, run: (*adminCLI).bans},
		"ban": {args: "USER [--reason R] [--for D | --until T]",
			what: "Bans USER on every gateway: the user's sockets close with 4403, waiting tickets\nare cancelled, connects and requests are refused until the ban lapses or is lifted.",
			flags: func(fs *flag.FlagSet) {
				fs.StringVar(&reason, "reason", "", "why, for operators (never shown to the user)")
				fs.StringVar(&forD, "for", "", "how long, a Go duration such as 72h")
				fs.StringVar(&until, "until", "", "when the ban lapses, RFC 3339 (2026-12-31T00:00:00Z)")
			},
			minPos: 1, maxPos: 1,
			run: func(a *adminCLI, pos []string) error { return a.ban(pos[0], reason, forD, until) }},
		"unban": {args: "USER", what: "Lifts USER's ban.", minPos: 1, maxPos: 1, run: (*adminCLI).unban},
		"disconnect": {args: "USER", what: "Closes USER's sockets on every gateway with 4000; the user may reconnect and keeps its tickets.",
			minPos: 1, maxPos: 1, run: (*adminCLI).disconnect},
		"drain": {args: "NODE", what: "Drains the gateway started with --node NODE while its process keeps running\n(only a restart undoes it).",
			minPos: 1, maxPos: 1, run: (*adminCLI).drain},
		"end-assignment": {args: "ID", what: "Ends a provider's assignment: an open offer is declined, a running session\nended with reason operator.",
			minPos: 1, maxPos: 1, run: (*adminCLI).endAssignment},
		"queues": {args: "", what: "Lists the queues in force (from the queue file or a stored change) and the\nretired ones, with each stored change's version and configuration.",
			maxPos: 0, run: (*adminCLI).queues},
		"queue put": {args: "NAME FILE",
			what:   "Stores queue NAME: FILE holds one queue in the queue file's shape, YAML or JSON\n(durations as strings: \"2m\"). It replaces the queue of that name as a whole.",
			minPos: 2, maxPos: 2, run: (*adminCLI).queuePut},
		"queue retire": {args: "NAME", what: "Retires queue NAME (a file queue too) until it is stored again.",
			minPos: 1, maxPos: 1, run: (*adminCLI).queueRetire},
		"admission rate": {args: "QUEUE [R] [--defaults]",
			what: "Without R, shows the admission queue's configured and measured rate. With R,\n" +
				"stores the queue's last stored configuration with rate R (admissions a second).\n" +
				"A queue only the queue file defines has no stored configuration the admin API\n" +
				"shows: --defaults stores {kind: admission, rate: R}, its other settings at their\n" +
				"defaults, or store the whole queue with \"queue put\". The change is a read and\n" +
				"a write: one made by someone else between the two is replaced.",
			flags: func(fs *flag.FlagSet) {
				fs.BoolVar(&setDefaults, "defaults", false, "with no stored configuration, store kind and rate alone")
			},
			minPos: 1, maxPos: 2,
			run: func(a *adminCLI, pos []string) error {
				if len(pos) == 1 {
					return a.admissionRate(pos[0])
				}
				return a.setAdmissionRate(pos[0], pos[1], setDefaults)
			}},
		"ranking weights": {args: "BOARD METRIC=WEIGHT[:TRANSFORM]... [--by NAME]",
			what: "Records the next version of BOARD's weights (every metric of the board, none\nother) and re-ranks its retained periods: views=1 sales=5:log1p.",
			flags: func(fs *flag.FlagSet) {
				fs.StringVar(&by, "by", "", "the author recorded with the weights (server default: admin)")
			},
			minPos: 2, maxPos: -1,
			run: func(a *adminCLI, pos []string) error { return a.rankingWeights(pos[0], pos[1:], by) }},
	}
}

// apiError is a refused request: the server's status, code and message.
type apiError struct {
	status        int
	code, message string
	retryAfter    string
}

func (e *apiError) Error() string {
	s := fmt.Sprintf("%d %s: %s", e.status, e.code, e.message)
	if e.retryAfter != "" {
		s += " (retry after " + e.retryAfter + "s)"
	}
	if e.status == http.StatusNotFound && e.message == "no such route" {
		s += " (is the admin API enabled? the server needs --admin-token)"
	}
	return s
}

// maxAnswerBytes bounds an answer read (the queue list is the largest).
const maxAnswerBytes = 8 << 20

// do sends one request and returns the answer's body (2xx), or an
// *apiError. With --json, it prints the body as it is, an error's too.
func (a *adminCLI) do(method, path string, body any, admin bool) ([]byte, error) {
	if admin && a.token == "" {
		return nil, errors.New("no admin token: give --admin-token or set MATCHGATE_ADMIN_TOKEN")
	}
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			return nil, fmt.Errorf("encode the request: %w", err)
		}
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(a.ctx, method, a.base+path, rd)
	if err != nil {
		return nil, fmt.Errorf("build the request: %w", err)
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if admin {
		req.Header.Set("Authorization", "Bearer "+a.token)
	}
	resp, err := a.client.Do(req)
	if err != nil {
		return nil, err // a *url.Error names the method and the URL
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, maxAnswerBytes))
	if err != nil {
		return nil, fmt.Errorf("%s %s: read the answer: %w", method, path, err)
	}
	if resp.StatusCode/100 != 2 {
		if a.json && len(b) > 0 {
			a.printRaw(b)
		}
		e := &apiError{status: resp.StatusCode, retryAfter: resp.Header.Get("Retry-After")}
		var eb struct {
			Error struct{ Code, Message string }
		}
		if json.Unmarshal(b, &eb) == nil && eb.Error.Code != "" {
			e.code, e.message = eb.Error.Code, eb.Error.Message
		} else {
			e.code, e.message = http.StatusText(resp.StatusCode), strings.TrimSpace(string(b))
			if len(e.message) > 200 {
				e.message = e.message[:200] + "…"
			}
		}
		return nil, e
	}
	return b, nil
}

func (a *adminCLI) printRaw(b []byte) {
	a.stdout.Write(b)
	if len(b) > 0 && b[len(b)-1] != '\n' {
		fmt.Fprintln(a.stdout)
	}
}

// call is do for the verbs that print the answer as it is with --json and
// decode it into v (when not nil) otherwise.
func (a *adminCLI) call(method, path string, body, v any) (printed bool, err error) {
	b, err := a.do(method, path, body, true)
	if err != nil {
		return false, err
	}
	if a.json {
		a.printRaw(b)
		return true, nil
	}
	if v != nil {
		if err := json.Unmarshal(b, v); err != nil {
			return false, fmt.Errorf("%s %s: decode the answer: %w", method, path, err)
		}
	}
	return false, nil
}

func seg(s string) string { return url.PathEscape(s) }

type wireBan struct {
	UserID    string     `json:"userId"`
	Reason    string     `json:"reason"`
	Until     *time.Time `json:"until"`
	CreatedAt time.Time  `json:"createdAt"`
}

func untilText(t *time.Time) string {
	if t == nil {
		return "until lifted"
	}
	return t.UTC().Format(time.RFC3339)
}

// table prints rows in aligned columns under header, without the padding
// an empty last cell would leave.
func (a *adminCLI) table(header string, rows [][]string) error {
	var b bytes.Buffer
	tw := tabwriter.NewWriter(&b, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, header)
	for _, r := range rows {
		fmt.Fprintln(tw, strings.Join(r, "\t"))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	for line := range strings.Lines(b.String()) {
		if _, err := fmt.Fprintln(a.stdout, strings.TrimRight(line, " \n")); err != nil {
			return err
		}
	}
	return nil
}

func (a *adminCLI) bans(_ []string) error {
	var v struct{ Bans []wireBan }
	if printed, err := a.call(http.MethodGet, "/v1/admin/bans", nil, &v); err != nil || printed {
		return wrap("bans", err)
	}
	if len(v.Bans) == 0 {
		_, err := fmt.Fprintln(a.stdout, "no bans in force")
		return err
	}
	rows := make([][]string, 0, len(v.Bans))
	for _, b := range v.Bans {
		rows = append(rows, []string{b.UserID, untilText(b.Until), b.CreatedAt.UTC().Format(time.RFC3339), b.Reason})
	}
	return a.table("USER\tUNTIL\tSINCE\tREASON", rows)
}

func (a *adminCLI) ban(user, reason, forD, until string) error {
	body := map[string]any{"reason": reason}
	if forD != "" && until != "" {
		return errors.New("admin ban: give --for or --until, not both")
	}
	if forD != "" {
		if d, err := time.ParseDuration(forD); err != nil || d <= 0 {
			return fmt.Errorf("admin ban: --for %q: want a positive Go duration such as 72h", forD)
		}
		body["duration"] = forD
	}
	if until != "" {
		t, err := time.Parse(time.RFC3339, until)
		if err != nil {
			return fmt.Errorf("admin ban: --until: %w", err)
		}
		body["until"] = t
	}
	var v struct {
		Ban              wireBan
		CancelledTickets []string
	}
	if printed, err := a.call(http.MethodPut, "/v1/admin/bans/"+seg(user), body, &v); err != nil || printed {
		return wrap("ban "+user, err)
	}
	line := "banned " + v.Ban.UserID + " until lifted"
	if v.Ban.Until != nil {
		line = "banned " + v.Ban.UserID + " until " + untilText(v.Ban.Until)
	}
	if n := len(v.CancelledTickets); n > 0 {
		line += fmt.Sprintf("; cancelled %d waiting ticket(s): %s", n, strings.Join(v.CancelledTickets, ", "))
	}
	_, err := fmt.Fprintln(a.stdout, line)
	return err
}

func (a *adminCLI) unban(pos []string) error {
	if printed, err := a.call(http.MethodDelete, "/v1/admin/bans/"+seg(pos[0]), nil, nil); err != nil || printed {
		return wrap("unban "+pos[0], err)
	}
	_, err := fmt.Fprintf(a.stdout, "lifted the ban of %s\n", pos[0])
	return err
}

func (a *adminCLI) disconnect(pos []string) error {
	if printed, err := a.call(http.MethodPost, "/v1/admin/users/"+seg(pos[0])+"/disconnect", nil, nil); err != nil || printed {
		return wrap("disconnect "+pos[0], err)
	}
	_, err := fmt.Fprintf(a.stdout, "disconnect of %s sent to every gateway\n", pos[0])
	return err
}

func (a *adminCLI) drain(pos []string) error {
	if printed, err := a.call(http.MethodPost, "/v1/admin/nodes/"+seg(pos[0])+"/drain", nil, nil); err != nil || printed {
		return wrap("drain "+pos[0], err)
	}
	_, err := fmt.Fprintf(a.stdout, "drain of node %s sent to every gateway\n", pos[0])
	return err
}

func (a *adminCLI) endAssignment(pos []string) error {
	var v struct {
		Assignment struct {
			ID, Queue, Status, EndReason string
			Requester                    struct{ UserID string }
		}
	}
	if printed, err := a.call(http.MethodPost, "/v1/admin/assignments/"+seg(pos[0])+"/end", nil, &v); err != nil || printed {
		return wrap("end-assignment "+pos[0], err)
	}
	as := v.Assignment
	line := fmt.Sprintf("assignment %s (queue %s): %s", as.ID, as.Queue, as.Status)
	if as.EndReason != "" {
		line += ", reason " + as.EndReason
	}
	_, err := fmt.Fprintln(a.stdout, line)
	return err
}

type wireOverride struct {
	Name      string          `json:"name"`
	Config    json.RawMessage `json:"config"`
	Retired   bool            `json:"retired"`
	Version   int64           `json:"version"`
	UpdatedAt time.Time       `json:"updatedAt"`
}

type queuesView struct {
	Overrides []wireOverride `json:"overrides"`
	Effective []string       `json:"effective"`
}

// latest is the last stored change of each queue.
func (v queuesView) latest() map[string]wireOverride {
	m := make(map[string]wireOverride, len(v.Overrides))
	for _, o := range v.Overrides {
		if cur, ok := m[o.Name]; !ok || o.Version > cur.Version {
			m[o.Name] = o
		}
	}
	return m
}

func (a *adminCLI) queues(_ []string) error {
	var v queuesView
	if printed, err := a.call(http.MethodGet, "/v1/admin/queues", nil, &v); err != nil || printed {
		return wrap("queues", err)
	}
	last := v.latest()
	var rows [][]string
	for _, name := range v.Effective {
		o, ok := last[name]
		if !ok {
			rows = append(rows, []string{name, "in force", "file", "", ""})
			continue
		}
		rows = append(rows, []string{name, "in force", "v" + strconv.FormatInt(o.Version, 10),
			o.UpdatedAt.UTC().Format(time.RFC3339), compactJSON(o.Config)})
	}
	var retired []wireOverride
	for _, o := range last {
		if o.Retired && !slices.Contains(v.Effective, o.Name) {
			retired = append(retired, o)
		}
	}
	slices.SortFunc(retired, func(x, y wireOverride) int { return int(x.Version - y.Version) })
	for _, o := range retired {
		rows = append(rows, []string{o.Name, "retired", "v" + strconv.FormatInt(o.Version, 10),
			o.UpdatedAt.UTC().Format(time.RFC3339), ""})
	}
	return a.table("QUEUE\tSTATE\tSOURCE\tUPDATED\tCONFIG", rows)
}

func compactJSON(raw json.RawMessage) string {
	var b bytes.Buffer
	if json.Compact(&b, raw) != nil {
		return string(raw)
	}
	return b.String()
}

// readQueueFile reads one queue, YAML or JSON (JSON is YAML), as the JSON
// body of the put route.
func readQueueFile(path string) (any, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var v any
	if err := yaml.Unmarshal(b, &v); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	m, ok := v.(map[string]any)
	if !ok {
		return nil, fmt.Errorf("%s: want one queue (a mapping such as {kind: room, players: 6})", path)
	}
	if _, ok := m["queues"]; ok {
		return nil, fmt.Errorf("%s: this is a queue file; give one queue, without the queues list", path)
	}
	return m, nil
}

func (a *adminCLI) queuePut(pos []string) error {
	name, path := pos[0], pos[1]
	body, err := readQueueFile(path)
	if err != nil {
		return fmt.Errorf("admin queue put %s: %w", name, err)
	}
	return a.putQueue("queue put "+name, name, body, func(o wireOverride) string {
		return fmt.Sprintf("stored queue %s (version %d)", o.Name, o.Version)
	})
}

// putQueue stores one queue and prints line of the stored change.
func (a *adminCLI) putQueue(what, name string, body any, line func(wireOverride) string) error {
	var v struct{ Queue wireOverride }
	if printed, err := a.call(http.MethodPut, "/v1/admin/queues/"+seg(name), body, &v); err != nil || printed {
		return wrap(what, err)
	}
	_, err := fmt.Fprintln(a.stdout, line(v.Queue))
	return err
}

func (a *adminCLI) queueRetire(pos []string) error {
	var v struct{ Queue wireOverride }
	if printed, err := a.call(http.MethodDelete, "/v1/admin/queues/"+seg(pos[0]), nil, &v); err != nil || printed {
		return wrap("queue retire "+pos[0], err)
	}
	_, err := fmt.Fprintf(a.stdout, "retired queue %s (version %d)\n", v.Queue.Name, v.Queue.Version)
	return err
}

// publicAdmission is an admission queue's entry of the public queue list.
type publicAdmission struct {
	Name, Kind   string
	Rate         int
	Waiting      int
	MeasuredRate struct {
		Mean, Low, High float64
		Measured        bool
	}
}

// admissionEntry finds queue in the public queue list (GET /v1/queues)
// and checks it is an admission queue; raw is its entry as served.
func (a *adminCLI) admissionEntry(queue string) (q publicAdmission, raw json.RawMessage, err error) {
	b, err := a.do(http.MethodGet, "/v1/queues", nil, false)
	if err != nil {
		return q, nil, err
	}
	var list struct{ Queues []json.RawMessage }
	if err := json.Unmarshal(b, &list); err != nil {
		return q, nil, fmt.Errorf("decode the queue list: %w", err)
	}
	for _, raw := range list.Queues {
		if err := json.Unmarshal(raw, &q); err != nil {
			return q, nil, fmt.Errorf("decode the queue list: %w", err)
		}
		if q.Name != queue {
			continue
		}
		if q.Kind != "admission" {
			return q, nil, fmt.Errorf("the queue is of kind %s, not admission", q.Kind)
		}
		return q, raw, nil
	}
	return q, nil, fmt.Errorf("no queue named %s in force", queue)
}

// admissionRate shows an admission queue's configured and measured rate.
func (a *adminCLI) admissionRate(queue string) error {
	q, raw, err := a.admissionEntry(queue)
	if err != nil {
		return wrap("admission rate "+queue, err)
	}
	if a.json {
		a.printRaw(raw)
		return nil
	}
	measured := "none measured yet"
	if q.MeasuredRate.Measured {
		measured = fmt.Sprintf("measured %.2f/s (%.2f–%.2f)", q.MeasuredRate.Mean, q.MeasuredRate.Low, q.MeasuredRate.High)
	}
	_, err = fmt.Fprintf(a.stdout, "%s: rate %d/s, %d waiting, %s\n", q.Name, q.Rate, q.Waiting, measured)
	return err
}

// setAdmissionRate stores the queue's last stored configuration with its
// rate replaced.
func (a *adminCLI) setAdmissionRate(queue, rateArg string, defaults bool) error {
	what := "admission rate " + queue
	rate, err := strconv.Atoi(rateArg)
	if err != nil || rate < 1 {
		return fmt.Errorf("admin %s: rate %q: want a whole number of admissions a second, at least 1", what, rateArg)
	}
	b, err := a.do(http.MethodGet, "/v1/admin/queues", nil, true)
	if err != nil {
		return wrap(what, err)
	}
	var v queuesView
	if err := json.Unmarshal(b, &v); err != nil {
		return fmt.Errorf("admin %s: decode the queue list: %w", what, err)
	}
	if !slices.Contains(v.Effective, queue) {
		return fmt.Errorf("admin %s: no queue named %s in force", what, queue)
	}
	cfg := map[string]any{}
	var old string // the rate replaced, for the line printed
	o, stored := v.latest()[queue]
	switch {
	case stored && !o.Retired:
		dec := json.NewDecoder(bytes.NewReader(o.Config))
		dec.UseNumber() // the other settings go back as they came
		if err := dec.Decode(&cfg); err != nil {
			return fmt.Errorf("admin %s: decode the stored configuration: %w", what, err)
		}
		if cfg["kind"] != "admission" {
			return fmt.Errorf("admin %s: the queue is of kind %v, not admission", what, cfg["kind"])
		}
		old = fmt.Sprint(cfg["rate"])
		if cfg["rate"] == nil {
			old = "the default"
		}
	default:
		// Only the queue file defines it: its kind is in the public list.
		q, _, err := a.admissionEntry(queue)
		if err != nil {
			return wrap(what, err)
		}
		if defaults {
			cfg["kind"], old = "admission", strconv.Itoa(q.Rate)
			break
		}
		return fmt.Errorf("admin %s: the queue has no stored configuration (only the queue file defines it): "+
			"store it whole with \"matchgate admin queue put %s FILE\", or pass --defaults to store kind and rate alone", what, queue)
	}
	cfg["rate"] = rate
	return a.putQueue(what, queue, cfg, func(o wireOverride) string {
		return fmt.Sprintf("queue %s: rate %s → %d/s (version %d)", o.Name, old, rate, o.Version)
	})
}

func (a *adminCLI) rankingWeights(board string, specs []string, by string) error {
	what := "ranking weights " + board
	type metric struct {
		Weight    float64 `json:"weight"`
		Transform string  `json:"transform,omitempty"`
	}
	metrics := make(map[string]metric, len(specs))
	for _, s := range specs {
		name, rest, ok := strings.Cut(s, "=")
		if !ok || name == "" {
			return fmt.Errorf("admin %s: %q: want METRIC=WEIGHT or METRIC=WEIGHT:TRANSFORM", what, s)
		}
		w, tr, _ := strings.Cut(rest, ":")
		f, err := strconv.ParseFloat(w, 64)
		if err != nil {
			return fmt.Errorf("admin %s: %q: the weight: %w", what, s, err)
		}
		if _, dup := metrics[name]; dup {
			return fmt.Errorf("admin %s: metric %s given twice", what, name)
		}
		metrics[name] = metric{Weight: f, Transform: tr}
	}
	body := map[string]any{"metrics": metrics}
	if by != "" {
		body["by"] = by
	}
	var v struct {
		Board   string
		Weights struct {
			Version int64
			Metrics map[string]metric
			By      string
		}
	}
	if printed, err := a.call(http.MethodPut, "/v1/admin/rankings/"+seg(board)+"/weights", body, &v); err != nil || printed {
		return wrap(what, err)
	}
	names := make([]string, 0, len(v.Weights.Metrics))
	for n := range v.Weights.Metrics {
		names = append(names, n)
	}
	slices.Sort(names)
	parts := make([]string, 0, len(names))
	for _, n := range names {
		m := v.Weights.Metrics[n]
		p := n + "=" + strconv.FormatFloat(m.Weight, 'g', -1, 64)
		if m.Transform != "" {
			p += ":" + m.Transform
		}
		parts = append(parts, p)
	}
	_, err := fmt.Fprintf(a.stdout, "board %s: weights version %d by %s: %s\n", v.Board, v.Weights.Version, v.Weights.By, strings.Join(parts, " "))
	return err
}

func wrap(what string, err error) error {
	if err == nil {
		return nil
	}
	return fmt.Errorf("admin %s: %w", what, err)
}
