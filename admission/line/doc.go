// Package line holds the admission queue's line (admission.Line): Redis,
// every change one Lua script (lua/*.lua, embedded, EVALSHA with a NOSCRIPT
// fallback), and Memory, in pure Go, for tests and virtual-clock runs. One
// contract suite (contract_test.go) holds both to the same behaviour on
// real Redis, miniredis and memory.
//
// The line is derived data: the record gives every place its Seq, the line
// orders its waiters by it, and a rebuild re-adds the record's WAITING
// places (admission.Record.Waiting) after a loss (ARCHITECTURE.md §10).
//
// Layout of one queue, every key sharing the hash tag {adm:<queue>} so that
// each script touches one Redis Cluster slot:
//
//	<prefix>:{adm:<queue>}:line      ZSET    member user id, score seq
//	<prefix>:{adm:<queue>}:seen      ZSET    member user id, score last seen, unix ms:
//	                                         exactly the users in the line
//	<prefix>:{adm:<queue>}:passed    INT     waiters taken from the front,
//	                                         less those returned
//	<prefix>:{adm:<queue>}:proc      HASH    user id -> "<seq> <taken at> [<seen>]",
//	                                         unix ms: taken by the admitter, not
//	                                         yet acknowledged, with the seen
//	                                         instant a return restores
//	<prefix>:{adm:<queue>}:window    ZSET    one member per take that admitted
//	                                         anyone, "<number>:<admitted>", score
//	                                         its instant, unix ms
//	<prefix>:{adm:<queue>}:window:n  INT     numbers the window's members
//	<prefix>:{adm:<queue>}:admitted  ZSET    member seq, score taken at, unix ms:
//	                                         the places acknowledged lately
//	<prefix>:{adm:<queue>}:lease     STRING  "<owner> <token> <expiry, unix ms>"
//	<prefix>:{adm:<queue>}:fence     INT     the lease's fencing counter
//
// A seq is a sorted set's score, a double: seqs beyond ±2^53 are refused.
//
// The rate: Take counts, in the window, the admissions after now minus one
// second, later ones included, and takes no more than rate minus that
// count; one script reads and writes the window, so callers racing each
// other are judged one after another and no interval of one second by
// their clocks ever holds more than rate admissions. A take is dropped
// from the window once it is a second plus lag (5 s) before the earlier of
// now and the latest take, and a caller more than lag behind the latest
// take admits nobody: it could not count what was dropped. The window
// counts what was taken: a waiter returned to the line and taken again
// counts twice.
//
// Presence: the seen set holds when each waiter in the line was last seen,
// by the callers' nows: Add sees a place it adds (and a waiter present
// without an instant, so a line written before presence existed gets one
// at the first rebuild), Touch moves the instants of waiters in the line
// forward and ignores everyone else (the set holds exactly the users in the
// line, so that is one ZADD XX GT a chunk: Redis 6.2 or later), Idle reads
// the longest unseen first.
// Take moves a waiter's instant into its processing entry and Return puts
// it back, so a waiter returned is as absent as it was; Remove and Ack drop
// it. A line lost with Redis is rebuilt, and everyone in it is seen at the
// rebuild: none is abandoned for the time the line was gone.
//
// Passed: Take adds the number it took to the passed counter, Return
// subtracts the number it put back, and Take and Ranks return it, read in
// the same script as what they return: admission.Line says how a gateway
// estimates ranks with it. Ranks reads chunk users a call.
//
// Time: what the line decides by time it decides by the caller's now,
// never by Redis's clock (ARCHITECTURE.md §7.6): the lease's expiry (held
// in its value, as a partition's, §7.3), the window, processing's take
// instants (Stale), presence (the seen set), and how long an acknowledged
// place is remembered (the admitted set, WithAckedFor, counted from its
// take instant and dropped by Take). The keys that record instants (lease,
// window, window:n, admitted) expire in Redis 5 s after the last instant
// they need, a safety net that frees the memory; the line, the seen set,
// the passed counter, processing and the fence never expire.
//
// Add puts a place in unless its user is in the line (ZADD NX) or in
// processing, or its seq was acknowledged within WithAckedFor: the record
// read a rebuild adds from may be older than the admission.
package line
