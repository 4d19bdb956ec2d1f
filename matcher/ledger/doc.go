// Package ledger owns matchgate's durable record (ARCHITECTURE.md §3): tickets,
// matches, the outbox of events still to be pushed (§7.5) and the lease epochs
// that fence commits of a matcher that lost its partition. It implements
// matcher.Ledger twice:
//
//   - Postgres, over a pgx pool and the schema of package migrations, applied
//     by Migrate; the production record.
//   - Memory, for the embedded single-node default and for tests.
//
// Both pass the same contract tests and return identical values: ids in
// canonical uuid form, times in UTC truncated to microseconds (PostgreSQL's
// precision), attributes nil when empty, and the same typed events from the
// outbox. Postgres stores an event as a versioned JSON of its data (see
// encodeEvent), never as a frame: frames are rendered when published.
//
// # Concurrency
//
// Every method is safe for concurrent use, by goroutines and (Postgres) by
// processes. Each method is atomic: one transaction, or one critical section
// in Memory. Resolve and CommitMatches are compare-and-set on WAITING, so of a
// cancel and a claim racing for a ticket exactly one wins and the other is
// told so (NotWaitingError, ShortfallError). A ticket returns to WAITING only
// when its PENDING_ACCEPT match dissolves (Dissolve, which locks the match
// row, a compare-and-set on its state, like Accept), so a ticket is never in
// two live matches. At most one WAITING ticket exists per user. Concurrent
// DrainOutbox calls never hand the same event to two callbacks; an event is
// deleted only after a callback accepted it, so delivery is at least once.
//
// Outbox events are stamped with the ledger's clock (PostgreSQL's now(), the
// clock of NewMemoryAt in Memory), not with the caller's, and DrainOutbox
// judges their age by that same clock: the one place where time is not the
// deployment's clock of decisions (internal/clock), so that no process clock
// is ever compared with PostgreSQL's. Every other time the ledger judges —
// an accept against accept_by, a resolution's stamp — is the `at` its
// caller passes, taken from that clock.
package ledger
