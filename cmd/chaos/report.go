package main

import (
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/matchgate/matchgate/protocol"
)

// dur is a duration that reads well in JSON ("1.5s").
type dur time.Duration

func (d dur) MarshalJSON() ([]byte, error) { return json.Marshal(d.String()) }

func (d dur) String() string {
	return time.Duration(d).Round(time.Millisecond).String()
}

// report is the outcome of a run: what was done, what the record holds,
// what the players saw, and every violation.
type report struct {
	OK       bool   `json:"ok"`
	Seed     uint64 `json:"seed"`
	Elapsed  dur    `json:"elapsed"`
	Dir      string `json:"dir,omitempty"`
	Schema   string `json:"schema,omitempty"`
	Settings struct {
		Players           int    `json:"players"`
		Duration          dur    `json:"duration"`
		KillEvery         dur    `json:"killEvery"`
		GatewayKills      int    `json:"gatewayKills"`
		WipeAt            dur    `json:"wipeAt"`
		Deadline          dur    `json:"deadline"`
		Slack             dur    `json:"slack"`
		LateLimit         dur    `json:"lateLimit"`
		Heartbeat         dur    `json:"heartbeatTimeout"`
		MaxJoins          int    `json:"maxJoins"`
		Waiters           int    `json:"waiters"`
		AdmitRate         int    `json:"admitRate"`
		TokenTTL          dur    `json:"tokenTTL"`
		AbandonAfter      dur    `json:"abandonAfter"`
		AdmitterKillEvery dur    `json:"admitterKillEvery"`
		PGFaultAt         dur    `json:"pgFaultAt"`
		PGFaultFor        dur    `json:"pgFaultFor"`
		AllocHangAt       dur    `json:"allocHangAt"`
		AllocHangFor      dur    `json:"allocHangFor"`
		AllocHang         dur    `json:"allocHang"`
		ClockSkew         dur    `json:"clockSkew"`
		RetireAt          dur    `json:"retireAt"`
		RetireQueue       string `json:"retireQueue"`
		Race              bool   `json:"race"`
		Binary            string `json:"binary"`
		Processes         string `json:"processes"`
	} `json:"settings"`
	// Host is the machine's CPU count and load at the start and the end:
	// the run shares the machine, and its timings with it.
	Host    string `json:"host"`
	Tickets struct {
		Total         int            `json:"total"`
		ByStatus      map[string]int `json:"byStatus"`
		ByQueue       map[string]int `json:"byQueue"`
		CancelReasons map[string]int `json:"cancelReasons"`
	} `json:"tickets"`
	Matches struct {
		Total      int            `json:"total"`
		ByFormedBy map[string]int `json:"byFormedBy"`
		Seats      int            `json:"seats"`
		Bots       int            `json:"bots"`
	} `json:"matches"`
	Players struct {
		Players      int            `json:"players"`
		Sessions     int            `json:"sessions"`
		Reconnects   int            `json:"reconnects"`
		Drops        int            `json:"drops"`
		Ghosts       int            `json:"ghosts"`
		Lost         int            `json:"lostToServer"`
		DialFailures int            `json:"dialFailures"`
		GaveUp       int            `json:"gaveUp"`
		Joins        int            `json:"joinsSent"`
		Cancels      int            `json:"cancelsSent"`
		Frames       int            `json:"frames"`
		FramesByType map[string]int `json:"framesByType"`
	} `json:"players"`
	Faults struct {
		MatcherKills  int `json:"matcherKills"`
		AdmitterKills int `json:"admitterKills"`
		GatewayKills  int `json:"gatewayKills"`
		Wipes         int `json:"wipes"`
		WipedKeys     int `json:"wipedKeys"`
		Restarts      int `json:"restarts"`
		// The PostgreSQL proxy's fault windows, requests cut mid-message
		// (their connections with them) and requests forwarded whose reply
		// was dropped (ambiguous commits among them).
		PGWindows        int64 `json:"pgFaultWindows"`
		PGCuts           int64 `json:"pgConnectionsCut"`
		PGRepliesDropped int64 `json:"pgRepliesDropped"`
		PGConnections    int64 `json:"pgConnections"`
		// The fleet manager's hang windows and the allocate calls they held.
		AllocHangWindows int `json:"allocHangWindows"`
		AllocCallsHung   int `json:"allocCallsHung"`
		// The queue retired through the admin API, and when (since the start
		// of the load).
		RetiredQueue string         `json:"retiredQueue,omitempty"`
		RetiredAt    dur            `json:"retiredAt,omitempty"`
		ClockSkews   map[string]dur `json:"clockSkews,omitempty"`
		Timeline     []faultEvent   `json:"timeline"`
		Errors       []string       `json:"errors,omitempty"`
	} `json:"faults"`
	// Admission is the gate queue's part; nil without --waiters.
	Admission  *admStats  `json:"admission,omitempty"`
	Checks     checkStats `json:"checks"`
	Logs       logSummary `json:"serverLogs"`
	Crashes    []exitRec  `json:"crashes,omitempty"`
	Unclean    []exitRec  `json:"uncleanStops,omitempty"`
	Violations struct {
		Total    int            `json:"total"`
		ByKind   map[string]int `json:"byKind"`
		Examples []violation    `json:"examples"`
	} `json:"violations"`
}

func (r *report) fillRecord(tickets map[string]*dbTicket, matches []*dbMatch) {
	r.Tickets.Total = len(tickets)
	r.Tickets.ByStatus, r.Tickets.ByQueue, r.Tickets.CancelReasons = map[string]int{}, map[string]int{}, map[string]int{}
	for _, t := range tickets {
		r.Tickets.ByStatus[t.Status]++
		r.Tickets.ByQueue[t.Queue]++
		if t.Status == protocol.StatusCancelled {
			r.Tickets.CancelReasons[t.CancelReason]++
		}
	}
	r.Matches.Total = len(matches)
	r.Matches.ByFormedBy = map[string]int{}
	for _, m := range matches {
		r.Matches.ByFormedBy[m.FormedBy]++
		r.Matches.Seats += len(m.Players)
		r.Matches.Bots += m.Bots
	}
}

func (r *report) fillPlayers(recs []*playerRec) {
	p := &r.Players
	p.Players = len(recs)
	p.FramesByType = map[string]int{}
	for _, rec := range recs {
		p.Sessions += len(rec.Sessions)
		if len(rec.Sessions) > 1 {
			p.Reconnects += len(rec.Sessions) - 1
		}
		p.Drops += rec.Drops
		p.Ghosts += rec.Ghosts
		p.Lost += rec.Lost
		p.DialFailures += rec.DialFailures
		if rec.GaveUp {
			p.GaveUp++
		}
		for _, s := range rec.Sent {
			switch s.Type {
			case "join":
				p.Joins++
			case "cancel":
				p.Cancels++
			}
		}
		p.Frames += len(rec.Frames)
		for _, f := range rec.Frames {
			p.FramesByType[f.f.Type]++
		}
	}
}

func kv(m map[string]int) string {
	var parts []string
	for _, k := range slices.Sorted(maps.Keys(m)) {
		name := k
		if name == "" {
			name = "-"
		}
		parts = append(parts, fmt.Sprintf("%s %d", name, m[k]))
	}
	if len(parts) == 0 {
		return "none"
	}
	return strings.Join(parts, ", ")
}

// print writes the human report.
func (r *report) print(w io.Writer) {
	s := r.Settings
	verdict := "PASS"
	if !r.OK {
		verdict = "FAIL"
	}
	fmt.Fprintf(w, "matchgate chaos run: %s (seed %d, %s elapsed)\n", verdict, r.Seed, r.Elapsed)
	fmt.Fprintf(w, "  setup      %s; %d players, load %s, deadline %s, slack %s, heartbeatTimeout %s, race %v\n",
		s.Processes, s.Players, s.Duration, s.Deadline, s.Slack, s.Heartbeat, s.Race)
	if r.Host != "" {
		fmt.Fprintf(w, "  host       %s\n", r.Host)
	}
	f := r.Faults
	fmt.Fprintf(w, "  faults     %d matcher kills (every %s), %d gateway kills, %d wipes (%d keys), %d restarts\n",
		f.MatcherKills, s.KillEvery, f.GatewayKills, f.Wipes, f.WipedKeys, f.Restarts)
	if r.Admission != nil {
		fmt.Fprintf(w, "             %d kills of the admitter's lease holder (every %s when one holds it)\n", f.AdmitterKills, s.AdmitterKillEvery)
	}
	if s.PGFaultFor > 0 {
		fmt.Fprintf(w, "             %d PostgreSQL fault windows of %s: %d requests cut with their connections, %d replies dropped after the request went through (%d proxied connections)\n",
			f.PGWindows, s.PGFaultFor, f.PGCuts, f.PGRepliesDropped, f.PGConnections)
	}
	if s.AllocHangFor > 0 {
		fmt.Fprintf(w, "             %d allocator hang windows of %s: %d allocate calls hung\n", f.AllocHangWindows, s.AllocHangFor, f.AllocCallsHung)
	}
	if f.RetiredQueue != "" {
		fmt.Fprintf(w, "             queue %s retired at %s\n", f.RetiredQueue, f.RetiredAt)
	}
	if len(f.ClockSkews) > 0 {
		var parts []string
		for _, k := range slices.Sorted(maps.Keys(f.ClockSkews)) {
			parts = append(parts, fmt.Sprintf("%s %s", k, f.ClockSkews[k]))
		}
		fmt.Fprintf(w, "             clock skews %s\n", strings.Join(parts, ", "))
	}
	for _, e := range f.Errors {
		fmt.Fprintf(w, "             fault error: %s\n", e)
	}
	p := r.Players
	fmt.Fprintf(w, "  players    %d; %d sessions, %d reconnects (%d drops, %d ghosts, %d lost to the server), %d failed dials, %d gave up\n",
		p.Players, p.Sessions, p.Reconnects, p.Drops, p.Ghosts, p.Lost, p.DialFailures, p.GaveUp)
	fmt.Fprintf(w, "             %d joins, %d cancels sent; %d frames received (%s)\n", p.Joins, p.Cancels, p.Frames, kv(p.FramesByType))
	fmt.Fprintf(w, "  tickets    %d: %s; by queue %s; cancel reasons %s\n", r.Tickets.Total, kv(r.Tickets.ByStatus), kv(r.Tickets.ByQueue), kv(r.Tickets.CancelReasons))
	fmt.Fprintf(w, "  matches    %d: %s; %d seats, %d bots\n", r.Matches.Total, kv(r.Matches.ByFormedBy), r.Matches.Seats, r.Matches.Bots)
	c := r.Checks
	fmt.Fprintf(w, "  cancels    replies: %s\n", kv(c.CancelReplies))
	fmt.Fprintf(w, "  deadline   %d tickets resolved after their deadline, %d of them more than %s after; longest deadline→resolution %s (ticket %s; bound %s)\n",
		c.ResolvedAfterDeadline, c.ResolvedBeyondSlack, s.Slack, c.LongestDeadlineToRes, orDash(c.LongestTicket), lateBound(s.LateLimit))
	if f.RetiredQueue != "" {
		fmt.Fprintf(w, "             retired queue %s: %d tickets waiting when it was retired or admitted after, %d resolved since, longest deadline→resolution of them %s\n",
			f.RetiredQueue, c.RetiredWaiting, c.RetiredResolved, c.RetiredLongest)
	}
	if c.ResolvedBeyondSlack > 0 {
		for _, l := range c.Latest {
			if time.Duration(l.Late) <= time.Duration(s.Slack) {
				break
			}
			fmt.Fprintf(w, "             late %s: %s ticket %s, deadline %s, %s at %s\n", l.Late, l.Queue, l.Ticket,
				l.Deadline.Format("15:04:05.000"), l.Status, l.UpdatedAt.Format("15:04:05.000"))
		}
	}
	fmt.Fprintf(w, "  waits      join→match (FILLED) p50 %s, p99 %s\n", c.JoinToMatchP50, c.JoinToMatchP99)
	fmt.Fprintf(w, "  pushes     %d seats connected at match creation: %d told by match.found, %d by hello after a reconnect; %d seats away then, back later\n",
		c.SeatsConnected, c.SeatsByPush, c.SeatsByHelloOnly, c.SeatsAway)
	fmt.Fprintf(w, "             %d duplicate pushes; %d EXPIRED outcomes never shown to their player\n", c.DuplicatePushes, c.ExpiredUnseen)
	fl := c.Fleet
	fmt.Fprintf(w, "  fleet      %d servers handed out (%d asked again), %d released, %d unknown releases; %d committed matches hold one\n",
		fl.Allocations, fl.Repeats, fl.Releases, fl.UnknownReleases, fl.CommittedServers)
	fmt.Fprintf(w, "             of matches never committed: %d released, %d left by a killed matcher, %d leaked otherwise\n",
		fl.ReleasedUnused, fl.LeakedByKill, fl.Leaked)
	if a := r.Admission; a != nil {
		fmt.Fprintf(w, "  admission  queue %s, rate %d/s: %d waiters, %d entries answered, %d places (%s); %d admitted\n",
			gateQueue, s.AdmitRate, a.Waiters, a.Entries, a.Places, kv(a.ByStatus), a.Admitted)
		fmt.Fprintf(w, "             %d leaves sent, %d walked away; tokens told by %s (%d admission.ready pushes, %d READY polls)\n",
			a.Leaves, a.WalkedAway, kv(a.TokensTold), a.ReadyPushes, a.ReadyPolls)
		fmt.Fprintf(w, "             downstream: %d tokens, %d claims, %d releases, %d consumes answered 200; refused %s\n",
			a.Handed, a.Claims, a.Releases, a.Consumes, kv(a.Refusals))
		fmt.Fprintf(w, "             order: %d admissions out of Seq order after a fault that explains them; places seen ending under their waiters %s\n",
			a.Inversion.Excused, kv(a.Ended))
	}
	l := r.Logs
	fmt.Fprintf(w, "  logs       %d files: %d error lines, %d warnings, %d panics, %d data races\n", l.Files, l.ErrorLines, l.WarnLines, l.Panics, l.DataRaces)
	for _, m := range l.TopErrors {
		fmt.Fprintf(w, "             ERROR ×%d %q (%s)\n", m.Count, m.Msg, m.File)
	}
	for _, m := range l.TopWarnings {
		fmt.Fprintf(w, "             WARN  ×%d %q (%s)\n", m.Count, m.Msg, m.File)
	}
	for _, e := range r.Crashes {
		fmt.Fprintf(w, "  crash      %s #%d at %s: %s (log %s)\n", e.Proc, e.Incarnation, e.At.Format(time.TimeOnly), e.Err, e.Log)
	}
	for _, e := range r.Unclean {
		fmt.Fprintf(w, "  unclean    %s: %s\n", e.Proc, e.Err)
	}
	fmt.Fprintf(w, "  violations %d", r.Violations.Total)
	if r.Violations.Total > 0 {
		fmt.Fprintf(w, ": %s\n", kv(r.Violations.ByKind))
		for _, v := range r.Violations.Examples {
			fmt.Fprintf(w, "             %s ticket=%s match=%s user=%s: %s\n", v.Kind, orDash(v.Ticket), orDash(v.Match), orDash(v.User), v.Detail)
		}
	} else {
		fmt.Fprintln(w)
	}
	if r.Dir != "" {
		fmt.Fprintf(w, "  kept       logs and frames in %s", r.Dir)
		if r.Schema != "" {
			fmt.Fprintf(w, "; schema %s", r.Schema)
		}
		fmt.Fprintln(w)
	}
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

func (r *report) writeJSON(path string) error {
	b, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(path, append(b, '\n'), 0o644)
}

// loadAvg is the 1-minute load average, or "?" where /proc is absent.
func loadAvg() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "?"
	}
	f := strings.Fields(string(b))
	if len(f) == 0 {
		return "?"
	}
	return f[0]
}

func (r *report) fillSettings(o options, bin string) {
	s := &r.Settings
	s.Players, s.Duration, s.KillEvery, s.GatewayKills = o.Players, dur(o.Duration), dur(o.KillEvery), o.GatewayKills
	s.WipeAt, s.Deadline, s.Slack, s.Heartbeat = dur(o.WipeAt), dur(o.Deadline), dur(o.Slack), dur(o.Heartbeat)
	s.LateLimit = dur(o.LateLimit)
	s.PGFaultAt, s.PGFaultFor, s.AllocHangAt, s.AllocHangFor = dur(o.PGFaultAt), dur(o.PGFaultFor), dur(o.AllocHangAt), dur(o.AllocHangFor)
	s.AllocHang, s.ClockSkew, s.RetireAt, s.RetireQueue = dur(o.AllocHang), dur(o.ClockSkew), dur(o.RetireAt), o.RetireQueue
	s.MaxJoins, s.Race, s.Binary = o.MaxJoins, o.Race, bin
	s.Waiters, s.AdmitRate, s.TokenTTL, s.AbandonAfter = o.Waiters, o.AdmitRate, dur(o.TokenTTL), dur(o.AbandonAfter)
	s.AdmitterKillEvery = dur(o.AdmitterKillEvery)
	s.Processes = "3 matcher + 2 gateway + 1 relay processes"
}

func lateBound(d dur) string {
	if d == 0 {
		return "off"
	}
	return d.String()
}

func (r *report) fillSkews(skew time.Duration, skews map[string]time.Duration) {
	if skew > 0 {
		r.Faults.ClockSkews = map[string]dur{}
		for k, v := range skews {
			r.Faults.ClockSkews[k] = dur(v)
		}
	}
}

func (r *report) fillFaults(f *faults) {
	if f.proxy != nil {
		r.Faults.PGWindows, r.Faults.PGCuts = f.proxy.windows.Load(), f.proxy.cuts.Load()
		r.Faults.PGRepliesDropped, r.Faults.PGConnections = f.proxy.dropped.Load(), f.proxy.accepted.Load()
	}
	_, fs := f.fleet.snapshot()
	r.Faults.AllocHangWindows, r.Faults.AllocCallsHung = fs.Windows, fs.Hung
	f.mu.Lock()
	defer f.mu.Unlock()
	if !f.retiredAt.IsZero() {
		r.Faults.RetiredQueue = f.o.RetireQueue
		for _, e := range f.events {
			if e.Kind == faultRetireQueue {
				r.Faults.RetiredAt = e.At
			}
		}
	}
	r.Faults.MatcherKills, r.Faults.GatewayKills, r.Faults.Wipes = f.matcherKills, f.gatewayKills, f.wipes
	r.Faults.AdmitterKills = f.admitterKills
	r.Faults.WipedKeys, r.Faults.Restarts = f.wipedKeys, f.restarts
	r.Faults.Timeline = append([]faultEvent(nil), f.events...)
	r.Faults.Errors = append([]string(nil), f.errs...)
}

// fillServerFindings turns crashes, panics, data races, failed faults and
// unclean stops into violations.
func (r *report) fillServerFindings(c *cluster, fs *findings) {
	c.mu.Lock()
	r.Crashes = append([]exitRec(nil), c.crashes...)
	r.Unclean = append([]exitRec(nil), c.unclean...)
	c.mu.Unlock()
	for _, e := range r.Crashes {
		fs.addf(vServerCrash, "", "", "", "%s #%d exited on its own at %s: %s (log %s)", e.Proc, e.Incarnation, e.At.Format(time.RFC3339Nano), e.Err, e.Log)
	}
	for _, e := range r.Unclean {
		fs.addf(vUncleanStop, "", "", "", "%s #%d: %s", e.Proc, e.Incarnation, e.Err)
	}
	for _, e := range r.Faults.Errors {
		fs.addf(vFaultFailed, "", "", "", "%s", e)
	}
	for i := 0; i < r.Logs.Panics; i++ {
		fs.addf(vServerPanic, "", "", "", "see the crash excerpts of the server logs")
	}
	for i := 0; i < r.Logs.DataRaces; i++ {
		fs.addf(vDataRace, "", "", "", "see the crash excerpts of the server logs")
	}
}
