package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/matchgate/matchgate/matcher"
	"github.com/matchgate/matchgate/matcher/ledger"
	"github.com/matchgate/matchgate/simulate"
)

const exportUsage = `Usage: matchgate export-arrivals --postgres-url URL --since T [--until T] [--queue Q] > arrivals.jsonl

Writes to stdout one JSON line per ticket of the record that joined in
[since, until), in join order: the stream a scenario's arrivals.file reads
(docs/SIMULATE.md). Times are RFC 3339.

Flags:
`

// exportPage is how many tickets one query reads: the export never holds
// more than a page, whatever the span.
var exportPage = 1000

// exportArrivals is the export-arrivals subcommand.
func exportArrivals(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) error {
	fs := newFlagSet("matchgate export-arrivals", getenv, stderr)
	fs.Usage = func() {
		fmt.Fprint(stderr, exportUsage)
		fs.PrintDefaults()
	}
	url := fs.Secret("postgres-url", "PostgreSQL URL of the record (required)")
	// The span and the queue have no environment twins: they describe one
	// export, not a deployment.
	since := fs.FlagSet.String("since", "", "first join time exported, RFC 3339 (required)")
	until := fs.FlagSet.String("until", "", "joins from this time on are left out, RFC 3339 (default: none)")
	queue := fs.FlagSet.String("queue", "", "export only this queue's tickets (default: every queue)")
	if err := fs.parse(args); err != nil {
		return err
	}
	if *url == "" {
		return errors.New("export-arrivals: --postgres-url (or MATCHGATE_POSTGRES_URL) is required")
	}
	if *since == "" {
		return errors.New("export-arrivals: --since is required")
	}
	from, err := time.Parse(time.RFC3339Nano, *since)
	if err != nil {
		return fmt.Errorf("export-arrivals: --since: %w", err)
	}
	var to *time.Time
	if *until != "" {
		t, err := time.Parse(time.RFC3339Nano, *until)
		if err != nil {
			return fmt.Errorf("export-arrivals: --until: %w", err)
		}
		to = &t
	}
	pg, err := ledger.Open(ctx, *url)
	if err != nil {
		return fmt.Errorf("export-arrivals: %w", err)
	}
	defer pg.Close()
	w := bufio.NewWriter(stdout)
	n, err := writeArrivals(ctx, pg, from, to, *queue, w)
	if err != nil {
		return fmt.Errorf("export-arrivals: after %d tickets: %w", n, err)
	}
	if err := w.Flush(); err != nil {
		return fmt.Errorf("export-arrivals: %w", err)
	}
	fmt.Fprintf(stderr, "exported %d tickets\n", n)
	return nil
}

// arrivalsQuery reads one page of tickets after the key ($4, $5), in join
// order, with what the record tells of their players' behaviour: a
// MATCHED ticket's player accepted when the match's accept list holds
// them; a declined ticket no longer names its match (a dissolve clears
// it), so the match is found among those formed while the ticket lived
// (the BRIN index on matches.created_at bounds that read) that seated it.
const arrivalsQuery = `
SELECT t.id::text, t.enqueued_at, t.user_id, t.queue, t.region, t.skill, t.estimated, t.status,
       coalesce(t.cancel_reason, ''), t.updated_at,
       coalesce(m.accept_by IS NOT NULL AND jsonb_exists(m.accepted, t.user_id), false),
       d.created_at
  FROM tickets t
  LEFT JOIN matches m ON m.id = t.match_id
  LEFT JOIN LATERAL (
        SELECT dm.created_at FROM matches dm
         WHERE t.cancel_reason = 'declined'
           AND dm.created_at >= t.enqueued_at AND dm.created_at <= t.updated_at
           AND dm.players @> jsonb_build_array(jsonb_build_object('ticketId', t.id::text))
         ORDER BY dm.created_at DESC LIMIT 1) d ON true
 WHERE t.enqueued_at >= $1
   AND ($2::timestamptz IS NULL OR t.enqueued_at < $2)
   AND ($3 = '' OR t.queue = $3)
   AND ($4::timestamptz IS NULL OR (t.enqueued_at, t.id) > ($4, $5::uuid))
 ORDER BY t.enqueued_at, t.id
 LIMIT $6`

// writeArrivals writes the tickets joined in [from, to) (to nil: no end)
// of queue ("" every queue) as simulate.Recorded lines, a page at a time,
// and returns how many it wrote.
func writeArrivals(ctx context.Context, pg *pgxpool.Pool, from time.Time, to *time.Time, queue string, w io.Writer) (int, error) {
	enc := json.NewEncoder(w)
	var (
		n       int
		lastAt  *time.Time
		lastID  = "00000000-0000-0000-0000-000000000000" // unused until a page was read
		decided *time.Time
	)
	for {
		rows, err := pg.Query(ctx, arrivalsQuery, from, to, queue, lastAt, lastID, exportPage)
		if err != nil {
			return n, fmt.Errorf("read tickets: %w", err)
		}
		got := 0
		for rows.Next() {
			var (
				id, reason, status string
				rec                simulate.Recorded
				updated            time.Time
				accepted           bool
			)
			if err := rows.Scan(&id, &rec.At, &rec.User, &rec.Queue, &rec.Region, &rec.Skill, &rec.Estimated,
				&status, &reason, &updated, &accepted, &decided); err != nil {
				rows.Close()
				return n, fmt.Errorf("read tickets: %w", err)
			}
			at := rec.At
			lastAt, lastID = &at, id
			got++
			rec.At = rec.At.UTC()
			rec.Status, rec.CancelReason = status, reason
			switch {
			case matcher.TicketStatus(status) == matcher.StatusMatched && accepted:
				rec.Reply = simulate.ReplyAccept
			case reason == matcher.ReasonUser:
				rec.CancelledAfter = simulate.Duration(updated.Sub(at))
			case reason == matcher.ReasonDeclined:
				rec.Reply = simulate.ReplyDecline
				if decided != nil {
					rec.ReplyAfter = simulate.Duration(updated.Sub(*decided))
				}
			case reason == matcher.ReasonAcceptTimeout:
				rec.Reply = simulate.ReplySilence
			}
			decided = nil
			if err := enc.Encode(rec); err != nil {
				rows.Close()
				return n, fmt.Errorf("write: %w", err)
			}
			n++
		}
		if err := rows.Err(); err != nil {
			return n, fmt.Errorf("read tickets: %w", err)
		}
		if got < exportPage {
			return n, nil
		}
	}
}
