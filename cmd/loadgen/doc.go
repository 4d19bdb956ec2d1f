// Command loadgen drives matchgate with thousands of WebSockets and REST
// players, checks the invariants of docs/ARCHITECTURE.md §7 from what the clients saw, and
// reports latencies the way k6 and Artillery do.
//
// # Modes
//
//   - players (default): open N sockets at --connect-rate, then for
//     --duration hand joins to idle players at --join-rate (open model: a
//     join falls due at its instant whether or not the server kept up; a due
//     join that finds no idle player is counted as starved). Players pick a
//     queue from --queues, carry a skill drawn from a normal distribution,
//     cancel (--cancel-fraction), drop their connection and reconnect
//     (--reconnect-fraction), answer PENDING_ACCEPT matches
//     (--accept-fraction, --decline-fraction, the rest stay silent; queues
//     without an accept window form READY matches and nothing is sent), and
//     ping. On an accept window an attempt lasts until match.ready, or until
//     its ticket's update after the match dissolved (CANCELLED ends it;
//     WAITING waits for the next match.found; join→match.found measures the
//     first). A join refused with a retry-after (a decline's cooldown) keeps
//     its player out of the join pacer until then. --rest-players join over REST and poll GET /v1/tickets/{id} and
//     heartbeat instead of holding a socket. After a --drain for outstanding
//     tickets, every unresolved ticket and a sample of --verify resolved ones
//     are compared with GET /v1/tickets/{id}.
//   - idle: open N sockets and hold them. With --server-pid (and the
//     servers' /metrics) it reads the gateways' VmRSS and goroutine counts
//     before connecting and --settle after the last connect: memory per idle
//     authenticated socket.
//   - push: open N sockets, then publish frames to their users' channels
//     through Redis (--redis-url, --redis-prefix: the servers' own) at
//     --push-rate, as the matcher's publisher does after a commit. Each frame
//     carries its publish time: publish → client delivery latency.
//   - admission: users enter one admission queue (--admission-queue): --enters
//     over REST (keep-alive clients, --enter-concurrency in flight, paced by
//     --enter-rate when set; each user once, within --duration), then
//     --sockets that send the enter frame after hello and hold their socket.
//     The run holds --hold, less once every socket is admitted or, with
//     --until-empty, once GET /v1/queues lists nobody waiting; --rate-change
//     PUTs new rates through the admin API (--admin-token, the rest of the
//     queue in --queue-settings). It subscribes to the queue's channel
//     (--redis-url, --redis-prefix) to stamp each batch's passed counter,
//     attributes each admission.position whose rank moved to the batch it
//     reflects (a waiter's rank plus the counter is its place in the line)
//     and reports, per batch, the delay to its last socket's push, per push,
//     and to admission.ready; enter latencies; and the queue's waiting,
//     measured rate and ETA error at the end. One process: more sockets than
//     --per-process take several loadgens.
//   - providers: --providers sockets with provider tokens (minted with
//     --secret) go online in --provider-queue with a capacity of 1–3 and
//     mixed attributes, accept every offer at once and end each session
//     after an exponential time of mean --session; --sockets requesters join
//     once each at --join-rate with mixed preferences. --drop-fraction of
//     the providers drop their socket once mid-run and reconnect a second
//     later, answering from the hello the offers pushed meanwhile. Reports
//     join→match.found and a freed slot→its next offer, and checks from the
//     clients and the presence endpoint that no provider held more than its
//     capacity and no requester was held by two. One process.
//   - rankings: --events distinct events (value 1 of --ranking-metric,
//     over --ranking-items items) are posted to --ranking-board with
//     --admin-token, in batches of --event-batch, --ingest-concurrency at a
//     time, each batch re-sending --dup-fraction of its size from earlier
//     batches; the answers must count every distinct event once and every
//     re-sent one as a duplicate, and each item's count is then read back
//     until exact (within --verify-wait: one refresh). Then GETs of the
//     day's Top --read-limit at --read-rate for --duration, as --readers
//     users, with the latency from each read's due instant and, with
//     --server-pid, the servers' CPU time per read. One process.
//
// # Scale
//
// Sockets are spread over --url (round-robin) and over --source-addrs
// (127.0.0.x; each source address has about 28,000 ephemeral ports). A
// process may open at most 20,000 files here, so past --per-process sockets
// (18,000) loadgen re-executes itself as worker processes, each with its
// share of the sockets and rates, prints their summed progress, and merges
// their reports: histograms bucket by bucket, counters summed, and the
// invariant observations of every worker checked together. The soft limit
// on open files is raised to the hard one at start. Targets must be
// loopback addresses unless --allow-remote is given. Every phase is bounded:
// connecting by the connect rate plus --connect-timeout, then --duration,
// --drain, 30s of verification and 15s of closing.
//
// # Tokens
//
// With --secret, tokens are minted locally (HS256, sub and skill, as
// gateway.MintToken does): no server round trip. With --guest, each player
// calls POST /v1/auth/guest.
//
// # Report
//
// A progress line every --progress (sockets, connects/s, joins/s, match.found
// per second, matches per second, waiting tickets, the p50 and p99 of
// join→match.found over the line's interval, errors, closes, reconnects;
// with worker processes, a match whose players are on two workers counts
// once in each worker's matches per second, and once in the final report),
// then a table: achieved against target rates; p50, p90, p95,
// p99 and max of connect (dial → upgraded), connect→hello, join→joined,
// join→match.found, push delivery (match createdAt, stamped by the matcher
// when its pass starts and sent with millisecond precision, or the publish
// time in push mode → receipt), ping round trip and the REST players' join
// and poll-observed match; error frames by code, connection ends by close
// code, failed connects by cause; reconnects; on an accept window, accepts,
// declines, silent players, attempts ended ready and matches seen dissolved
// (a dissolved match is not live: its players may be seated again without a
// violation). --json writes the same report.
// Latency histograms are log-linear (1/128 relative precision).
//
// # Invariants
//
// From what the clients saw (pushes, replies, hellos, polls, the final GETs):
// no ticket in two matches; no user twice in a match; a match seen with the
// same players by everyone (and by GET); every ticket told one outcome;
// nothing told contradicted by GET; no ticket told CANCELLED that a match
// seats; and every match formed before the end of the measured phase reached
// its socket players by the end of the drain. A violation prints the
// details and exits with status 2 (1 is a failed run).
//
// # Concurrency
//
// Every mode speaks through the Go client (package client,
// docs/CLIENT-GO.md) with reconnecting off: the run reconnects as its
// flags say. A socket player has no goroutine of its own while its socket
// is open: the client's goroutine reads it, and connecting, and
// reconnecting after the socket's end, run on short-lived goroutines. The
// players, idle and push modes check every frame as read (the client's
// OnFrame, on that reader: the invariants are checked on every frame as
// sent, which the client's version keeping would filter); their commands
// are sent from the pacers' short-lived goroutines, each waiting for its
// reply. One goroutine paces connects, one paces joins or publishes, one
// spreads pings; cancels and drops (the client's Drop: no close
// handshake) are timers. A player's state is guarded by its mutex; the
// stats are atomic counters and locked histograms. The providers and
// admission modes handle the client's events in the mode's own goroutine.
//
// Example, 2,000 joins/s on a pairs queue against two real-dependency
// servers (see docs/BENCHMARKS.md for the measured runs):
//
//	loadgen --url http://127.0.0.1:8080,http://127.0.0.1:8081 --secret $SECRET \
//	    --sockets 10000 --connect-rate 2000 --join-rate 2000 --duration 60s --json out.json
package main
