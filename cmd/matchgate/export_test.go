package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/matchgate/matchgate/internal/pgtest"
	"github.com/matchgate/matchgate/matcher/ledger"
	"github.com/matchgate/matchgate/simulate"
)

// export-arrivals writes the tickets of the span in join order, a page at
// a time, with the players' cancels and answers the record tells.
func TestExportArrivals(t *testing.T) {
	url := pgtest.NewURL(t)
	ctx := context.Background()
	pg, err := ledger.Open(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer pg.Close()
	if err := ledger.Migrate(ctx, pg); err != nil {
		t.Fatal(err)
	}
	t0 := time.Date(2026, 3, 4, 18, 0, 0, 0, time.UTC)
	at := func(s float64) time.Time { return t0.Add(time.Duration(s * float64(time.Second))) }
	id := func(n int) string { return fmt.Sprintf("00000000-0000-4000-8000-%012d", n) }
	seats := func(ns ...int) string {
		var b []string
		for _, n := range ns {
			b = append(b, fmt.Sprintf(`{"ticketId": "%s", "userId": "u%d", "skill": 1500}`, id(n), n))
		}
		return "[" + strings.Join(b, ",") + "]"
	}
	// Match 101 was accepted by both; 102 dissolved when ticket 3 declined.
	for _, m := range []struct {
		id            int
		state         string
		players       string
		accepted      string
		created, acBy time.Time
	}{
		{id: 101, state: "READY", players: seats(1, 2), accepted: `["u1", "u2"]`, created: at(1.5), acBy: at(11.5)},
		{id: 102, state: "DISSOLVED", players: seats(3, 8), accepted: `["u8"]`, created: at(5), acBy: at(15)},
	} {
		if _, err := pg.Exec(ctx, `INSERT INTO matches (id, queue, region, state, formed_by, players, accepted, accept_by, created_at, version)
			VALUES ($1, 'duel', 'eu', $2, 'FILLED', $3, $4, $5, $6, 1)`, id(m.id), m.state, m.players, m.accepted, m.acBy, m.created); err != nil {
			t.Fatal(err)
		}
	}
	for _, tk := range []struct {
		n              int
		queue, status  string
		reason         string
		match          int
		enq, updated   time.Time
		skill          float64
		estimatedSkill bool
	}{
		{n: 7, queue: "duel", status: "MATCHED", enq: at(-1), updated: at(0), skill: 1400}, // before --since
		{n: 1, queue: "duel", status: "MATCHED", match: 101, enq: at(0), updated: at(1.5), skill: 1500},
		{n: 2, queue: "duel", status: "MATCHED", match: 101, enq: at(1), updated: at(1.5), skill: 1510.5, estimatedSkill: true},
		{n: 3, queue: "duel", status: "CANCELLED", reason: "declined", enq: at(2), updated: at(7), skill: 1600},
		{n: 4, queue: "duel", status: "CANCELLED", reason: "user", enq: at(3), updated: at(13), skill: 1700},
		{n: 5, queue: "four", status: "CANCELLED", reason: "accept_timeout", enq: at(4), updated: at(20), skill: 1800},
		{n: 6, queue: "duel", status: "EXPIRED", enq: at(4), updated: at(64), skill: 1900},
		{n: 8, queue: "duel", status: "WAITING", enq: at(30), updated: at(30), skill: 2000}, // past --until
	} {
		var match any
		if tk.match != 0 {
			match = id(tk.match)
		}
		var reason any
		if tk.reason != "" {
			reason = tk.reason
		}
		if _, err := pg.Exec(ctx, `INSERT INTO tickets (id, user_id, queue, region, status, skill, estimated, enqueued_at, deadline, match_id, cancel_reason, updated_at, version)
			VALUES ($1, $2, $3, 'eu', $4, $5, $6, $7, $7::timestamptz + interval '1 minute', $8, $9, $10, 1)`,
			id(tk.n), fmt.Sprint("u", tk.n), tk.queue, tk.status, tk.skill, tk.estimatedSkill, tk.enq, match, reason, tk.updated); err != nil {
			t.Fatal(err)
		}
	}

	defer func(p int) { exportPage = p }(exportPage)
	exportPage = 2 // several pages, one of them short

	export := func(args ...string) []simulate.Recorded {
		t.Helper()
		var out, errOut bytes.Buffer
		args = append([]string{"export-arrivals", "--postgres-url", url}, args...)
		if err := run(ctx, args, func(string) string { return "" }, &out, &errOut, nil); err != nil {
			t.Fatalf("%v: %s", err, errOut.String())
		}
		var recs []simulate.Recorded
		dec := json.NewDecoder(&out)
		for dec.More() {
			var r simulate.Recorded
			if err := dec.Decode(&r); err != nil {
				t.Fatal(err)
			}
			recs = append(recs, r)
		}
		if want := fmt.Sprintf("exported %d tickets\n", len(recs)); errOut.String() != want {
			t.Errorf("stderr %q, want %q", errOut.String(), want)
		}
		return recs
	}
	recs := export("--since", t0.Format(time.RFC3339), "--until", at(30).Format(time.RFC3339))
	want := []simulate.Recorded{
		{At: at(0), User: "u1", Queue: "duel", Region: "eu", Skill: 1500, Status: "MATCHED", Reply: "accept"},
		{At: at(1), User: "u2", Queue: "duel", Region: "eu", Skill: 1510.5, Estimated: true, Status: "MATCHED", Reply: "accept"},
		{At: at(2), User: "u3", Queue: "duel", Region: "eu", Skill: 1600, Status: "CANCELLED", CancelReason: "declined",
			Reply: "decline", ReplyAfter: simulate.Duration(2 * time.Second)},
		{At: at(3), User: "u4", Queue: "duel", Region: "eu", Skill: 1700, Status: "CANCELLED", CancelReason: "user",
			CancelledAfter: simulate.Duration(10 * time.Second)},
		{At: at(4), User: "u5", Queue: "four", Region: "eu", Skill: 1800, Status: "CANCELLED", CancelReason: "accept_timeout", Reply: "silence"},
		{At: at(4), User: "u6", Queue: "duel", Region: "eu", Skill: 1900, Status: "EXPIRED"},
	}
	if len(recs) != len(want) {
		t.Fatalf("%d records, want %d: %+v", len(recs), len(want), recs)
	}
	for i := range want {
		if !recs[i].At.Equal(want[i].At) {
			t.Errorf("record %d at %v, want %v", i, recs[i].At, want[i].At)
		}
		recs[i].At = want[i].At
		if recs[i] != want[i] {
			t.Errorf("record %d:\n got %+v\nwant %+v", i, recs[i], want[i])
		}
	}

	// Without --until the span has no end; --queue keeps one queue.
	if recs := export("--since", t0.Format(time.RFC3339), "--queue", "duel"); len(recs) != 6 || recs[5].User != "u8" {
		t.Fatalf("duel since t0: %+v, want u1 u2 u3 u4 u6 u8", recs)
	}
	if recs := export("--since", at(4).Format(time.RFC3339), "--queue", "four"); len(recs) != 1 || recs[0].User != "u5" {
		t.Fatalf("four: %+v", recs)
	}
	// The output is what a scenario's arrivals.file reads.
	var lines bytes.Buffer
	enc := json.NewEncoder(&lines)
	for _, r := range want {
		_ = enc.Encode(r)
	}
	if !strings.Contains(lines.String(), `"replyAfter":"2s"`) || !strings.Contains(lines.String(), `"cancelledAfter":"10s"`) {
		t.Errorf("durations are not written as text:\n%s", lines.String())
	}
}

func TestExportArrivalsRefuses(t *testing.T) {
	for _, c := range []struct {
		args []string
		want string
	}{
		{args: []string{"--since", "2026-03-04T18:00:00Z"}, want: "--postgres-url"},
		{args: []string{"--postgres-url", "postgres://x@127.0.0.1:1/x"}, want: "--since is required"},
		{args: []string{"--postgres-url", "postgres://x@127.0.0.1:1/x", "--since", "yesterday"}, want: "--since"},
		{args: []string{"--postgres-url", "postgres://x@127.0.0.1:1/x", "--since", "2026-03-04T18:00:00Z", "--until", "1h"}, want: "--until"},
	} {
		var out, errOut bytes.Buffer
		err := run(context.Background(), append([]string{"export-arrivals"}, c.args...), func(string) string { return "" }, &out, &errOut, nil)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%v: error %v, want %q", c.args, err, c.want)
		}
	}
}
