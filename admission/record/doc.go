// Package record is the admission queue's durable record (admission.Record,
// ARCHITECTURE.md §10): every place of every user in each admission queue,
// the tokens the admitter gives, and the admitter's lease epoch of each
// queue. It implements admission.Record twice:
//
//   - Postgres, over a pgx pool and the tables of
//     migrations/0012_admission.sql, applied by ledger.Migrate with the
//     rest of the schema; the production record.
//   - Memory, for the embedded single-node default and for tests.
//
// Both pass the same contract tests and return identical values: times in
// UTC truncated to microseconds (PostgreSQL's precision), the zero time for
// a time not set.
//
// # Order
//
// Seq is strictly increasing in the order the record took the entries, and
// an entry becomes visible only once every smaller Seq of its queue is:
// the line (admission.Line) is derived from the record in that order and
// rebuilt from it by paging Waiting, which must not skip an entry that
// commits late. Postgres group-commits entries one batch at a time and
// takes a lock per queue across processes (enter.go); Memory takes them
// under its mutex.
//
// # Concurrency
//
// Every method is safe for concurrent use, by goroutines and (Postgres) by
// processes, and atomic: one transaction, or one critical section in
// Memory. Every change of a place is a compare-and-set on its status, so of
// two racing changes (two claims of a token, a consumption and a release,
// an admission and a leave) exactly one wins and the other is told, and a
// place is admitted, and given a token, at most once. At most one live
// place (WAITING, READY, CLAIMED) exists per user and queue: a second Enter
// returns it. Admit is fenced by the admitter's epoch, which only grows.
//
// Claim, Consume and Release judge a token's life by the caller's now, the
// deployment's clock of decisions (internal/clock): a token past its life
// is refused whether or not Expire has ended it yet. Leave and Abandon
// store nothing of theirs: a place records no end time.
package record
