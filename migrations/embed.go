// Package migrations holds the PostgreSQL schema as numbered SQL files
// (NNNN_name.sql), embedded so that the binary can migrate the database it is
// pointed at. ledger.Migrate applies them in order, each in its own
// transaction. A file that has been released is never edited: a change is a
// new, higher-numbered file.
package migrations

import "embed"

// FS holds every migration file. It lives here rather than in the ledger
// package because go:embed cannot reach into a parent directory.
//
//go:embed *.sql
var FS embed.FS
