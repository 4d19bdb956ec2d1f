// Package gateway is the HTTP and WebSocket edge of matchgate: it
// authenticates players, holds their sockets, turns protocol frames and REST
// calls into Matchmaker calls, and forwards the pushes of each user's channel
// to every socket that user holds.
//
// # Ownership
//
// The gateway owns the sockets, the per-socket send queues, the protocol
// pings, the edge's metrics and the mapping of domain error codes to HTTP
// statuses and WebSocket error frames (errors.go). It owns no matchmaking
// state: tickets and matches belong to the Matchmaker, and a closing socket
// never cancels a ticket. It declares the small interfaces it consumes
// (Matchmaker, Admissions, Subscriber, ReadyChecker, RateLimiter,
// SocketLimiter, BanChecker, Admin); the composition root wires real
// implementations. The admission queue's routes and frames (admission.go)
// turn into Admissions calls the same way.
//
// # Hardening
//
// The edge is where hostile input stops (SECURITY.md): tokens (tokens.go:
// HS256 pinned, key rotation by kid, never logged), strict decoding of
// bodies and frames (decode.go), names and ids checked before the
// Matchmaker sees them, limits (limits.go: shared ones through the
// RateLimiter, the per-socket message bucket, the node and per-user socket
// caps), bans (a BanChecker without I/O) and the admin API under /v1/admin/
// with its own tokens (admin.go), which are also the service credential of
// the admission token routes. Refusals cost the least work that can
// decide them: caps and limits before the token is checked, the token
// before the upgrade, names before any Redis key.
//
// # Concurrency contract
//
//   - New starts no goroutine. Handler may serve without Run (tests do), but
//     only Run pings sockets and drains them; Run may be called once.
//   - Each socket costs one goroutine while idle: the HTTP handler goroutine,
//     which becomes the socket's reader. coder/websocket needs a concurrent
//     reader for pongs and close frames, so the reader never blocks on the
//     Matchmaker; commands are queued (bounded) and run in order by a worker
//     goroutine that exists only while commands are pending.
//   - Outgoing frames go through one bounded queue per socket. Enqueueing
//     never blocks: it is called from the Subscriber's shared dispatch
//     goroutine, and one slow player must not delay anyone else. A writer
//     goroutine exists only while the queue is non-empty; a full queue
//     (Config.SendQueue frames or Config.SendQueueBytes bytes) disconnects
//     the socket with CloseSlowConsumer. Every write has a
//     deadline (Config.WriteTimeout).
//   - On connect the session subscribes to the user's channel before it
//     loads the user's state, holds pushes until the hello frame is queued,
//     and sends hello first: a push published during the load is delivered
//     after hello, never lost (clients keep the highest version they see).
//   - One pinger per Server pings each socket once per Config.PingInterval,
//     at a phase of its own: a socket gets one of up to 100 slots when it
//     registers, and the pinger visits one slot per PingInterval/slots, so
//     thousands of sockets never ping at once. Pings in flight are bounded;
//     a failed ping closes the socket.
//   - Disconnects are detected from read errors, never from the upgrade
//     request's context.
//   - Run drains in order: mark draining (/readyz fails, upgrades get 503),
//     close every socket with CloseGoingAway in bounded batches, shut the
//     HTTP server down, wait for every goroutine the Server started.
//   - Drain and DisconnectUser may be called from any goroutine (the
//     control channel's): they mark sockets closing and hand the close
//     handshakes to goroutines Run waits for; neither blocks on a socket.
//   - The pinger also renews the per-user socket leases of every open
//     socket once per PingInterval.
package gateway
