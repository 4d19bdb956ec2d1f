// Package record is the rankings' durable record (ranking.Record): the
// events of each board counted once into hourly buckets of metrics per
// item, and the versions of each board's weights. It implements
// ranking.Record twice:
//
//   - Postgres, over a pgx pool and the tables of
//     migrations/0016_rankings.sql, applied by ledger.Migrate with the
//     rest of the schema; the production record.
//   - Memory, for the embedded single-node default and for tests.
//
// Both pass the same contract tests and return identical values: times in
// UTC truncated to microseconds (PostgreSQL's precision), items in byte
// order.
//
// # Counting once
//
// An event is counted when its (board, ID) is first recorded; a second one
// of the same ID, in the same batch or a later one, is a duplicate and
// adds nothing, whatever its value. Within a batch the first occurrence
// counts. Postgres records the ids and the buckets in one statement, so a
// failed batch writes nothing and a batch whose reply was lost is counted
// as duplicates when retried. Small batches of concurrent callers share
// transactions (ingest.go).
//
// A board of source matchmaking has no events: its hours are counted from
// matchgate's own record and written whole by SetHours, which replaces the
// board's buckets of a span of hours in one transaction.
//
// # Concurrency
//
// Every method is safe for concurrent use, by goroutines and (Postgres) by
// processes. Ingest is atomic per call; Scan and Item read one consistent
// snapshot.
package record
