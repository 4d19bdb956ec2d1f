package main

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
)

// dbTicket is a row of tickets (migrations/0001_init.sql), as the checks
// need it.
type dbTicket struct {
	ID, UserID, Queue, Region, Status, MatchID, CancelReason string
	EnqueuedAt, Deadline, UpdatedAt                          time.Time
}

// dbMatch is a row of matches.
type dbMatch struct {
	ID, Queue, FormedBy          string
	ServerAddress, ServerSession string // "" when none was allocated
	Players                      []wireSeat
	Bots                         int
	CreatedAt                    time.Time
}

// loadRecord reads every ticket and match of the run's schema.
func loadRecord(ctx context.Context, pg *pgxpool.Pool) (map[string]*dbTicket, []*dbMatch, error) {
	tickets := map[string]*dbTicket{}
	rows, err := pg.Query(ctx, `SELECT id::text, user_id, queue, region, status, coalesce(match_id::text, ''),
		coalesce(cancel_reason, ''), enqueued_at, deadline, updated_at FROM tickets`)
	if err != nil {
		return nil, nil, fmt.Errorf("read tickets: %w", err)
	}
	for rows.Next() {
		t := &dbTicket{}
		if err := rows.Scan(&t.ID, &t.UserID, &t.Queue, &t.Region, &t.Status, &t.MatchID, &t.CancelReason,
			&t.EnqueuedAt, &t.Deadline, &t.UpdatedAt); err != nil {
			rows.Close()
			return nil, nil, fmt.Errorf("read tickets: %w", err)
		}
		tickets[t.ID] = t
	}
	if err := rows.Err(); err != nil {
		return nil, nil, fmt.Errorf("read tickets: %w", err)
	}

	var matches []*dbMatch
	rows, err = pg.Query(ctx, `SELECT id::text, queue, formed_by, coalesce(server_address, ''), coalesce(server_session, ''),
		players, bots, created_at FROM matches ORDER BY created_at, id`)
	if err != nil {
		return nil, nil, fmt.Errorf("read matches: %w", err)
	}
	for rows.Next() {
		m := &dbMatch{}
		var players []byte
		if err := rows.Scan(&m.ID, &m.Queue, &m.FormedBy, &m.ServerAddress, &m.ServerSession, &players, &m.Bots, &m.CreatedAt); err != nil {
			rows.Close()
			return nil, nil, fmt.Errorf("read matches: %w", err)
		}
		if err := json.Unmarshal(players, &m.Players); err != nil {
			rows.Close()
			return nil, nil, fmt.Errorf("match %s: players: %w", m.ID, err)
		}
		matches = append(matches, m)
	}
	if err := rows.Err(); err != nil {
		return nil, nil, fmt.Errorf("read matches: %w", err)
	}
	return tickets, matches, nil
}

// waitingState is how many tickets still wait and the latest deadline of
// all tickets.
func waitingState(ctx context.Context, pg *pgxpool.Pool) (waiting int, lastDeadline time.Time, err error) {
	var last *time.Time
	err = pg.QueryRow(ctx, `SELECT count(*) FILTER (WHERE status = 'WAITING'), max(deadline) FROM tickets`).Scan(&waiting, &last)
	if last != nil {
		lastDeadline = *last
	}
	return waiting, lastDeadline, err
}
