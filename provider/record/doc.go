// Package record is the durable record of assignments of the provider
// queues (provider.Record): each requester's ticket given to a provider's
// slot, from the offer to its end. It implements provider.Record twice:
//
//   - Postgres, over a pgx pool and the table of
//     migrations/0013_assignments.sql, applied by ledger.Migrate with the
//     rest of the schema; the production record.
//   - Memory, for the embedded single-node default and for tests.
//
// Both pass the same contract tests and return identical values: ids in
// the canonical lower-case form of a UUID, times in UTC truncated to
// microseconds (PostgreSQL's precision), the zero time for a time not set,
// nil Parts for no parts.
//
// # Concurrency
//
// Every method is safe for concurrent use, by goroutines and (Postgres) by
// processes, and atomic: one transaction, or one critical section in
// Memory. Offer holds the lock of its queue and provider while it counts
// the provider's live assignments and inserts, so that two offers cannot
// both take the last slot; the one-live index refuses a second live
// assignment of a ticket offered to two providers at once. Every change
// of an assignment is a compare-and-set on its status, so of two racing
// changes (an acceptance and the expiry of the offer) exactly one wins and
// the other is told.
//
// Accept judges the offer's window by the caller's now, the deployment's
// clock of decisions (internal/clock): an offer past its AcceptBy is
// refused whether or not Expire has ended it yet.
package record
