package matcher

import "time"

// QueueActivity is what the record tells of one queue (or room topic) in
// one UTC hour: the tickets that joined it, the matches formed in it and
// the tickets their players cancelled, each with the instant of its first
// in the hour (zero when the count is 0). The rankings' matchmaking boards
// are fed from it (ARCHITECTURE.md §10).
type QueueActivity struct {
	Queue string
	Hour  time.Time // UTC, on the hour
	// Joins counts tickets by their enqueue time: a ticket requeued after
	// a dissolved match keeps its row and its enqueue time, so it counts
	// once.
	Joins int64
	// Matches counts matches by their creation time, of every kind and
	// state (a dissolved match was formed all the same).
	Matches int64
	// Cancels counts tickets CANCELLED with ReasonUser, by the time of
	// the cancel.
	Cancels                            int64
	FirstJoin, FirstMatch, FirstCancel time.Time
}
