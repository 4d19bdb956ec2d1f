package main

import (
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"net"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/matchgate/matchgate/matcher"
)

// Modes of a run.
const (
	modePlayers = "players" // join, cancel, reconnect, accept… and measure
	modeIdle    = "idle"    // hold authenticated sockets; measure server memory
	modePush    = "push"    // hold sockets; publish to their channels; measure delivery
	// modeAdmission enters users in an admission queue; measures the
	// enters, the position pushes and the ETA (admission.go).
	modeAdmission = "admission"
	// modeProviders drives a provider queue: providers online, requesters
	// joining (providers.go).
	modeProviders = "providers"
	// modeRankings posts events to a ranking board, checks each counted
	// once, then reads its Top at a rate (rankings.go).
	modeRankings = "rankings"
)

// QueueChoice is one entry of the queue mix.
type QueueChoice struct {
	Queue  string  `json:"queue"`
	Region string  `json:"region,omitempty"`
	Weight float64 `json:"weight"`
}

// Config is a run's configuration: the flags, and what a parent hands each
// worker (as JSON).
type Config struct {
	Mode           string        `json:"mode"`
	URLs           []string      `json:"urls"` // http(s) bases
	AllowRemote    bool          `json:"allowRemote"`
	Sockets        int           `json:"sockets"`
	ConnectRate    float64       `json:"connectRate"`
	ConnectTimeout time.Duration `json:"connectTimeout"`
	Duration       time.Duration `json:"duration"`
	Drain          time.Duration `json:"drain"`
	SourceAddrs    []string      `json:"sourceAddrs"`
	PerProcess     int           `json:"perProcess"`
	Workers        int           `json:"workers"`

	Secret   string        `json:"secret"`
	Guest    bool          `json:"guest"`
	TokenTTL time.Duration `json:"tokenTTL"`

	JoinRate          float64       `json:"joinRate"`
	Queues            []QueueChoice `json:"queues"`
	SkillMean         float64       `json:"skillMean"`
	SkillStddev       float64       `json:"skillStddev"`
	CancelFraction    float64       `json:"cancelFraction"`
	CancelAfter       time.Duration `json:"cancelAfter"`
	ReconnectFraction float64       `json:"reconnectFraction"`
	ReconnectAfter    time.Duration `json:"reconnectAfter"`
	AcceptFraction    float64       `json:"acceptFraction"`
	DeclineFraction   float64       `json:"declineFraction"`
	RestPlayers       int           `json:"restPlayers"`
	PollInterval      time.Duration `json:"pollInterval"`
	HeartbeatInterval time.Duration `json:"heartbeatInterval"`
	PingInterval      time.Duration `json:"pingInterval"`
	ReconnectOnClose  bool          `json:"reconnectOnClose"`

	PushRate    float64 `json:"pushRate"`
	RedisURL    string  `json:"redisURL"`
	RedisPrefix string  `json:"redisPrefix"`

	AdmissionQueue   string        `json:"admissionQueue"`
	Enters           int           `json:"enters"`
	EnterConcurrency int           `json:"enterConcurrency"`
	EnterRate        float64       `json:"enterRate"`
	Hold             time.Duration `json:"hold"`
	UntilEmpty       bool          `json:"untilEmpty"`
	AdminToken       string        `json:"adminToken"`
	RateChanges      []RateChange  `json:"rateChanges"`
	QueueSettings    string        `json:"queueSettings"`

	ProviderQueue string        `json:"providerQueue"`
	Providers     int           `json:"providers"`
	Session       time.Duration `json:"session"`
	DropFraction  float64       `json:"dropFraction"`

	RankingBoard      string        `json:"rankingBoard"`
	RankingMetric     string        `json:"rankingMetric"`
	RankingItems      int           `json:"rankingItems"`
	Events            int           `json:"events"`
	EventBatch        int           `json:"eventBatch"`
	DupFraction       float64       `json:"dupFraction"`
	IngestConcurrency int           `json:"ingestConcurrency"`
	VerifyWait        time.Duration `json:"verifyWait"`
	ReadRate          float64       `json:"readRate"`
	ReadLimit         int           `json:"readLimit"`
	Readers           int           `json:"readers"`

	ServerPIDs []int         `json:"serverPIDs"`
	MetricsURL []string      `json:"metricsURL"`
	Settle     time.Duration `json:"settle"`

	Verify   int           `json:"verify"`
	Progress time.Duration `json:"progress"`
	JSONPath string        `json:"jsonPath"`
	Seed     uint64        `json:"seed"`

	// Set by the parent for its workers.
	RunID       string `json:"runID"`
	WorkerIndex int    `json:"workerIndex"` // 1-based; 0 = not a worker
	WorkerCount int    `json:"workerCount"`
}

// errUsage means the flags were wrong; the message has been printed.
var errUsage = errors.New("usage")

// parseConfig reads the command line.
func parseConfig(args []string, stderr io.Writer) (Config, string, error) {
	var c Config
	fs := flag.NewFlagSet("loadgen", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprintln(stderr, "Usage: loadgen [flags]\n\nDrives matchgate with WebSockets and REST players, checks the invariants,\nand reports latencies (see the package documentation). Flags:")
		fs.PrintDefaults()
	}
	mode := fs.String("mode", modePlayers, "players, idle, push, admission, providers or rankings")
	urls := fs.String("url", "http://127.0.0.1:8080", "comma-separated gateway base URLs (sockets are spread round-robin)")
	fs.BoolVar(&c.AllowRemote, "allow-remote", false, "allow targets that are not loopback addresses")
	fs.IntVar(&c.Sockets, "sockets", 100, "WebSockets to open (players mode: socket players)")
	fs.Float64Var(&c.ConnectRate, "connect-rate", 500, "new sockets per second (open model)")
	fs.DurationVar(&c.ConnectTimeout, "connect-timeout", 10*time.Second, "limit for one connect, upgrade and hello")
	fs.DurationVar(&c.Duration, "duration", 30*time.Second, "length of the measured phase, after the connect phase")
	fs.DurationVar(&c.Drain, "drain", 5*time.Second, "after the measured phase, how long outstanding tickets may take to resolve")
	src := fs.String("source-addrs", "auto", "local source addresses: a count N (127.0.0.1…127.0.0.N), a comma-separated list of IPs, or auto (one per 25,000 sockets)")
	fs.IntVar(&c.PerProcess, "per-process", 18000, "sockets per process; more start worker processes (a process may open at most 20,000 files here)")
	fs.IntVar(&c.Workers, "workers", 0, "worker processes (0: as many as --per-process requires; 1 runs in this process)")
	fs.StringVar(&c.Secret, "secret", "", "HS256 secret of the servers: mint tokens locally")
	fs.BoolVar(&c.Guest, "guest", false, "get tokens from POST /v1/auth/guest instead of minting them")
	fs.DurationVar(&c.TokenTTL, "token-ttl", 6*time.Hour, "lifetime of minted tokens")
	fs.Float64Var(&c.JoinRate, "join-rate", 100, "joins per second across all players (players mode, open model)")
	queues := fs.String("queues", "duel=1", "queue mix: name[:region]=weight,…")
	fs.Float64Var(&c.SkillMean, "skill-mean", 1500, "mean of the players' skill (normal distribution)")
	fs.Float64Var(&c.SkillStddev, "skill-stddev", 100, "standard deviation of the players' skill")
	fs.Float64Var(&c.CancelFraction, "cancel-fraction", 0, "fraction of joins cancelled after a random wait")
	fs.DurationVar(&c.CancelAfter, "cancel-after", 2*time.Second, "the cancel wait is uniform in [0, this]")
	fs.Float64Var(&c.ReconnectFraction, "reconnect-fraction", 0, "fraction of joins whose socket drops and reconnects after a random wait")
	fs.DurationVar(&c.ReconnectAfter, "reconnect-after", 2*time.Second, "the drop wait is uniform in [0, this]")
	fs.Float64Var(&c.AcceptFraction, "accept-fraction", 1, "fraction of PENDING_ACCEPT matches accepted")
	fs.Float64Var(&c.DeclineFraction, "decline-fraction", 0, "fraction declined (the rest stay silent)")
	fs.IntVar(&c.RestPlayers, "rest-players", 0, "players that use REST only: join, poll GET and heartbeat")
	fs.DurationVar(&c.PollInterval, "poll-interval", 500*time.Millisecond, "REST players' GET period")
	fs.DurationVar(&c.HeartbeatInterval, "heartbeat-interval", 5*time.Second, "REST players' heartbeat period")
	fs.DurationVar(&c.PingInterval, "ping-interval", 20*time.Second, "application ping period per socket, as the server's own pings (0: none)")
	fs.BoolVar(&c.ReconnectOnClose, "reconnect-on-close", true, "reconnect (with jittered backoff) when the server closes a socket")
	fs.Float64Var(&c.PushRate, "push-rate", 1000, "push mode: frames per second published to connected users' channels")
	fs.StringVar(&c.RedisURL, "redis-url", "redis://127.0.0.1:6379/0", "push and admission modes: the servers' Redis")
	fs.StringVar(&c.RedisPrefix, "redis-prefix", "mg", "push and admission modes: the servers' --redis-prefix")
	fs.StringVar(&c.AdmissionQueue, "admission-queue", "launch", "admission mode: the admission queue entered")
	fs.IntVar(&c.Enters, "enters", 0, "admission mode: users entering over REST (each once), within --duration")
	fs.IntVar(&c.EnterConcurrency, "enter-concurrency", 64, "admission mode: REST enters in flight (keep-alive connections)")
	fs.Float64Var(&c.EnterRate, "enter-rate", 0, "admission mode: REST enters per second (0: as fast as --enter-concurrency allows)")
	fs.DurationVar(&c.Hold, "hold", 10*time.Second, "admission mode: after the entries, how long the run holds (ended early by --until-empty, or once every socket is admitted)")
	fs.BoolVar(&c.UntilEmpty, "until-empty", false, "admission mode: end the hold once GET /v1/queues lists nobody waiting")
	fs.StringVar(&c.AdminToken, "admin-token", "", "admission mode: the servers' --admin-token, for --rate-change")
	rateChanges := fs.String("rate-change", "", "admission mode: AFTER=RATE,… PUT the queue's rate through the admin API AFTER the run's start")
	fs.StringVar(&c.QueueSettings, "queue-settings", "", `admission mode: the rest of the queue's definition for --rate-change, as JSON ({"tokenTTL":"30m","abandonAfter":"1h"}): a PUT replaces the queue whole`)
	fs.StringVar(&c.ProviderQueue, "provider-queue", "advice", "providers mode: the provider queue")
	fs.IntVar(&c.Providers, "providers", 100, "providers mode: provider sockets (capacity 1–3 each); --sockets requesters join once each at --join-rate")
	fs.DurationVar(&c.Session, "session", 5*time.Second, "providers mode: mean session length (exponential) before a provider ends it")
	fs.Float64Var(&c.DropFraction, "drop-fraction", 0, "providers mode: share of providers that drop their socket once mid-run and reconnect a second later")
	fs.StringVar(&c.RankingBoard, "ranking-board", "products", "rankings mode: the board (of source events)")
	fs.StringVar(&c.RankingMetric, "ranking-metric", "views", "rankings mode: the metric every event adds 1 to")
	fs.IntVar(&c.RankingItems, "ranking-items", 100, "rankings mode: the items the events spread over (at most the board's top: the check reads them all)")
	fs.IntVar(&c.Events, "events", 100_000, "rankings mode: distinct events posted before the reads (0: reads only)")
	fs.IntVar(&c.EventBatch, "event-batch", 500, "rankings mode: distinct events per POST")
	fs.Float64Var(&c.DupFraction, "dup-fraction", 0.05, "rankings mode: events re-sent from earlier batches, as a fraction of each batch")
	fs.IntVar(&c.IngestConcurrency, "ingest-concurrency", 8, "rankings mode: POSTs in flight")
	fs.DurationVar(&c.VerifyWait, "verify-wait", 2*time.Minute, "rankings mode: how long the served Top may take to show every count (one refresh)")
	fs.Float64Var(&c.ReadRate, "read-rate", 1000, "rankings mode: GETs of the day's Top per second for --duration (0: none)")
	fs.IntVar(&c.ReadLimit, "read-limit", 20, "rankings mode: the Top each GET asks for")
	fs.IntVar(&c.Readers, "readers", 1000, "rankings mode: distinct users reading (the per-user read limit applies)")
	pids := fs.String("server-pid", "", "comma-separated gateway pids whose VmRSS is read before and after (idle mode), or whose CPU time is read around the reads (rankings mode)")
	metrics := fs.String("metrics-url", "auto", "comma-separated /metrics URLs read with the RSS (auto: each --url's /metrics; none)")
	fs.DurationVar(&c.Settle, "settle", 5*time.Second, "idle mode: wait after the last connect before reading memory")
	fs.IntVar(&c.Verify, "verify", 200, "tickets with an outcome checked against GET /v1/tickets/{id} at the end (unresolved ones are always checked, up to 10x this)")
	fs.DurationVar(&c.Progress, "progress", 5*time.Second, "progress line period")
	fs.StringVar(&c.JSONPath, "json", "", "write the report as JSON to this file")
	fs.Uint64Var(&c.Seed, "seed", 0, "random seed (0: random)")
	workerConfig := fs.String("worker-config", "", "internal: run as a worker with this configuration file")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return c, "", errUsage
		}
		return c, "", err
	}
	if fs.NArg() > 0 {
		return c, "", fmt.Errorf("unexpected arguments: %v", fs.Args())
	}
	if *workerConfig != "" {
		return c, *workerConfig, nil
	}
	c.Mode = *mode
	if c.Mode == modeAdmission {
		set := false
		fs.Visit(func(f *flag.Flag) { set = set || f.Name == "sockets" })
		if !set {
			c.Sockets = 0 // --enters alone is a run
		}
	}
	var err error
	if c.URLs, err = parseURLs(*urls); err != nil {
		return c, "", err
	}
	if c.Queues, err = parseQueues(*queues); err != nil {
		return c, "", err
	}
	if c.RateChanges, err = parseRateChanges(*rateChanges); err != nil {
		return c, "", err
	}
	if c.ServerPIDs, err = parseInts(*pids); err != nil {
		return c, "", fmt.Errorf("--server-pid: %w", err)
	}
	switch *metrics {
	case "none":
	case "auto":
		for _, u := range c.URLs {
			c.MetricsURL = append(c.MetricsURL, u+"/metrics")
		}
	default:
		c.MetricsURL = splitList(*metrics)
	}
	if c.SourceAddrs, err = parseSources(*src, c.Sockets); err != nil {
		return c, "", err
	}
	return c, "", c.validate()
}

// validate checks a configuration.
func (c *Config) validate() error {
	var errs []error
	bad := func(format string, a ...any) { errs = append(errs, fmt.Errorf(format, a...)) }
	switch c.Mode {
	case modePlayers, modeIdle, modePush, modeAdmission, modeProviders, modeRankings:
	default:
		bad("--mode must be players, idle, push, admission, providers or rankings, not %q", c.Mode)
	}
	if len(c.URLs) == 0 {
		bad("--url: at least one target")
	}
	if !c.AllowRemote {
		for _, u := range c.URLs {
			if err := requireLoopback(u); err != nil {
				bad("--url: %v (pass --allow-remote to target it)", err)
			}
		}
		if c.Mode == modePush || c.Mode == modeAdmission {
			if err := requireLoopback(c.RedisURL); err != nil {
				bad("--redis-url: %v (pass --allow-remote to use it)", err)
			}
		}
	}
	if c.Mode == modeProviders {
		if c.Providers < 1 || c.Providers > 19_000 || c.Sockets+c.Providers > 19_500 {
			bad("--providers must be positive, and --providers plus --sockets at most 19,500 (one process)")
		}
		if c.Secret == "" || c.JoinRate <= 0 || c.Session <= 0 || c.DropFraction < 0 || c.DropFraction > 1 {
			bad("providers mode needs --secret (provider tokens are minted), a positive --join-rate and --session, and --drop-fraction in [0, 1]")
		}
	}
	if c.Mode == modeRankings {
		if c.Secret == "" || c.AdminToken == "" {
			bad("rankings mode needs --secret (reader tokens are minted) and --admin-token (events are posted with it)")
		}
		if c.Events < 0 || c.EventBatch < 1 || c.EventBatch > 10_000 || c.DupFraction < 0 || c.DupFraction > 1 ||
			c.IngestConcurrency < 1 || c.RankingItems < 1 || c.ReadRate < 0 || c.ReadLimit < 1 || c.Readers < 1 {
			bad("rankings mode: --events ≥ 0, --event-batch 1–10,000, --dup-fraction in [0, 1], and a positive --ingest-concurrency, --ranking-items, --read-limit and --readers")
		}
	} else if c.Mode == modeAdmission {
		c.validateAdmission(bad)
	} else if c.Sockets < 0 || (c.Sockets == 0 && c.RestPlayers == 0) {
		bad("--sockets must be positive")
	}
	if c.Sockets > 1_000_000 {
		bad("--sockets: at most 1,000,000")
	}
	if c.ConnectRate <= 0 || math.IsInf(c.ConnectRate, 0) {
		bad("--connect-rate must be positive")
	}
	if c.Duration <= 0 || c.Duration > 24*time.Hour {
		bad("--duration must be within (0, 24h]")
	}
	if c.Drain < 0 || c.Drain > 10*time.Minute || c.Settle < 0 || c.Settle > 10*time.Minute {
		bad("--drain and --settle must be within [0, 10m]")
	}
	if c.ConnectTimeout <= 0 || c.TokenTTL <= 0 || c.Progress <= 0 {
		bad("--connect-timeout, --token-ttl and --progress must be positive")
	}
	if c.Secret == "" && !c.Guest {
		bad("tokens: pass --secret (mint locally) or --guest (POST /v1/auth/guest)")
	}
	if c.Secret != "" && len(c.Secret) < 16 {
		bad("--secret must be at least 16 bytes")
	}
	if c.PerProcess < 1 || c.PerProcess > 19_500 {
		bad("--per-process must be within 1..19500 (a process may open at most 20,000 files)")
	}
	if c.Workers < 0 || c.Workers > 64 {
		bad("--workers must be within 0..64")
	}
	for _, f := range []struct {
		name string
		v    float64
	}{{"cancel-fraction", c.CancelFraction}, {"reconnect-fraction", c.ReconnectFraction},
		{"accept-fraction", c.AcceptFraction}, {"decline-fraction", c.DeclineFraction}} {
		if f.v < 0 || f.v > 1 || math.IsNaN(f.v) {
			bad("--%s must be within [0, 1]", f.name)
		}
	}
	if c.AcceptFraction+c.DeclineFraction > 1+1e-9 {
		bad("--accept-fraction + --decline-fraction must not exceed 1")
	}
	if c.Mode == modePlayers && (c.JoinRate <= 0 || math.IsInf(c.JoinRate, 0)) {
		bad("--join-rate must be positive")
	}
	if c.Mode == modePush && (c.PushRate <= 0 || math.IsInf(c.PushRate, 0)) {
		bad("--push-rate must be positive")
	}
	if c.SkillStddev < 0 || math.IsNaN(c.SkillMean) {
		bad("--skill-stddev must be ≥ 0")
	}
	if c.PollInterval < 10*time.Millisecond || c.HeartbeatInterval < 10*time.Millisecond {
		bad("--poll-interval and --heartbeat-interval must be at least 10ms")
	}
	if c.PingInterval < 0 || c.CancelAfter < 0 || c.ReconnectAfter < 0 {
		bad("--ping-interval, --cancel-after and --reconnect-after must be ≥ 0")
	}
	if c.Verify < 0 || c.RestPlayers < 0 {
		bad("--verify and --rest-players must be ≥ 0")
	}
	return errors.Join(errs...)
}

// validateAdmission checks admission mode's flags: one process, a
// minted token for each user.
func (c *Config) validateAdmission(bad func(string, ...any)) {
	if c.Sockets < 0 || c.Enters < 0 || c.Sockets+c.Enters == 0 {
		bad("admission mode: --sockets or --enters must be positive")
	}
	if c.Sockets > c.PerProcess {
		bad("admission mode runs in one process: --sockets at most --per-process (%d); run several loadgens for more", c.PerProcess)
	}
	if c.Enters > 10_000_000 {
		bad("--enters: at most 10,000,000")
	}
	if c.Secret == "" {
		bad("admission mode mints its tokens: pass --secret")
	}
	if c.EnterConcurrency < 1 || c.EnterConcurrency > 4096 {
		bad("--enter-concurrency must be within 1..4096")
	}
	if c.EnterRate < 0 || math.IsInf(c.EnterRate, 0) || math.IsNaN(c.EnterRate) {
		bad("--enter-rate must be ≥ 0")
	}
	if c.Hold < 0 || c.Hold > time.Hour {
		bad("--hold must be within [0, 1h]")
	}
	if len(c.RateChanges) > 0 && c.AdminToken == "" {
		bad("--rate-change needs --admin-token")
	}
	if c.QueueSettings != "" {
		var m map[string]any
		if err := json.Unmarshal([]byte(c.QueueSettings), &m); err != nil {
			bad("--queue-settings: a JSON object: %v", err)
		}
	}
	if !matcher.ValidName(c.AdmissionQueue) {
		bad("--admission-queue %q is not a queue name", c.AdmissionQueue)
	}
}

// parseURLs accepts http(s):// or ws(s):// bases and returns http(s) ones
// without a trailing slash.
func parseURLs(s string) ([]string, error) {
	var out []string
	for _, raw := range splitList(s) {
		u, err := url.Parse(raw)
		if err != nil || u.Host == "" {
			return nil, fmt.Errorf("--url %q: not a URL", raw)
		}
		switch u.Scheme {
		case "http", "https":
		case "ws":
			u.Scheme = "http"
		case "wss":
			u.Scheme = "https"
		default:
			return nil, fmt.Errorf("--url %q: scheme must be http, https, ws or wss", raw)
		}
		u.Path = strings.TrimSuffix(u.Path, "/")
		u.Path = strings.TrimSuffix(u.Path, "/v1/ws")
		u.RawQuery, u.Fragment = "", ""
		out = append(out, u.String())
	}
	return out, nil
}

// requireLoopback refuses a URL whose host is not (or does not resolve only
// to) a loopback address.
func requireLoopback(raw string) error {
	u, err := url.Parse(raw)
	if err != nil {
		return err
	}
	host := u.Hostname()
	if ip := net.ParseIP(host); ip != nil {
		if !ip.IsLoopback() {
			return fmt.Errorf("%s is not a loopback address", host)
		}
		return nil
	}
	if host != "localhost" {
		return fmt.Errorf("%s is not a loopback address", host)
	}
	return nil
}

// parseQueues reads "duel=0.8,ranked:eu=0.2".
func parseQueues(s string) ([]QueueChoice, error) {
	var out []QueueChoice
	total := 0.0
	for _, item := range splitList(s) {
		name, w, ok := strings.Cut(item, "=")
		weight := 1.0
		if ok {
			var err error
			weight, err = strconv.ParseFloat(w, 64)
			if err != nil || weight <= 0 || math.IsInf(weight, 0) {
				return nil, fmt.Errorf("--queues %q: weight must be a positive number", item)
			}
		}
		q, region, _ := strings.Cut(name, ":")
		if q == "" {
			return nil, fmt.Errorf("--queues %q: empty queue name", item)
		}
		out = append(out, QueueChoice{Queue: q, Region: region, Weight: weight})
		total += weight
	}
	if len(out) == 0 {
		return nil, errors.New("--queues: at least one queue")
	}
	for i := range out {
		out[i].Weight /= total
	}
	return out, nil
}

// parseSources reads --source-addrs.
func parseSources(s string, sockets int) ([]string, error) {
	n := 0
	switch {
	case s == "auto":
		n = max(1, (sockets+24_999)/25_000)
	case s != "" && strings.IndexFunc(s, func(r rune) bool { return r < '0' || r > '9' }) < 0:
		v, err := strconv.Atoi(s)
		if err != nil || v < 1 || v > 254 {
			return nil, fmt.Errorf("--source-addrs %q: a count must be within 1..254", s)
		}
		n = v
	default:
		var out []string
		for _, a := range splitList(s) {
			ip := net.ParseIP(a)
			if ip == nil {
				return nil, fmt.Errorf("--source-addrs: %q is not an IP address", a)
			}
			out = append(out, ip.String())
		}
		return out, nil
	}
	out := make([]string, n)
	for i := range out {
		out[i] = fmt.Sprintf("127.0.0.%d", i+1)
	}
	return out, nil
}

func parseInts(s string) ([]int, error) {
	var out []int
	for _, x := range splitList(s) {
		v, err := strconv.Atoi(x)
		if err != nil || v <= 0 {
			return nil, fmt.Errorf("%q is not a pid", x)
		}
		out = append(out, v)
	}
	return out, nil
}

func splitList(s string) []string {
	var out []string
	for _, x := range strings.Split(s, ",") {
		if x = strings.TrimSpace(x); x != "" {
			out = append(out, x)
		}
	}
	return out
}

// targetsLine describes the configured targets for the report.
func (c *Config) targetsLine() []string {
	t := []string{"urls=" + strings.Join(c.URLs, ","), fmt.Sprintf("sockets=%d", c.Sockets),
		fmt.Sprintf("connect-rate=%g/s", c.ConnectRate), "duration=" + c.Duration.String()}
	switch c.Mode {
	case modePlayers:
		mix := make([]string, len(c.Queues))
		for i, q := range c.Queues {
			name := q.Queue
			if q.Region != "" {
				name += ":" + q.Region
			}
			mix[i] = fmt.Sprintf("%s=%.2f", name, q.Weight)
		}
		t = append(t, fmt.Sprintf("join-rate=%g/s", c.JoinRate), "queues="+strings.Join(mix, ","),
			fmt.Sprintf("skill=N(%g,%g)", c.SkillMean, c.SkillStddev))
		if c.CancelFraction > 0 {
			t = append(t, fmt.Sprintf("cancel=%.2f", c.CancelFraction))
		}
		if c.ReconnectFraction > 0 {
			t = append(t, fmt.Sprintf("reconnect=%.2f", c.ReconnectFraction))
		}
		if c.RestPlayers > 0 {
			t = append(t, fmt.Sprintf("rest-players=%d", c.RestPlayers))
		}
	case modePush:
		t = append(t, fmt.Sprintf("push-rate=%g/s", c.PushRate))
	}
	return t
}
