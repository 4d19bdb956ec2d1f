// Package ratelimit holds the limits that must hold across every gateway,
// kept in Redis, and the one that is local to a socket.
//
//   - Limiter: a GCRA rate limiter (lua/gcra.lua), a rate and a burst
//     apart (Limit: N per Per, at most Burst at once). One key per limited
//     subject (a user, an IP address) holds its theoretical arrival time; an
//     event is one atomic script run, so any number of gateways share one
//     budget. The clock is the Redis server's (TIME), so gateways with skewed
//     clocks still agree.
//   - Sockets: a per-user cap on open sockets across the cluster
//     (lua/socket_acquire.lua): a sorted set of leases per user, each lease
//     renewed while its socket lives and expiring on its own when the node
//     holding it dies.
//   - Bucket: a local token bucket for the frames of one socket, where a
//     Redis round trip per frame would cost more than the frame.
//
// Keys, all under the configured prefix:
//
//	<prefix>:rl:<name>:<subject>   STRING  GCRA theoretical arrival time, µs since the epoch
//	<prefix>:sockets:<user>        ZSET    socket id → lease expiry, ms since the epoch
//
// Concurrency: Limiter and Sockets are safe for concurrent use. A Bucket is
// not: it belongs to one socket's reader.
package ratelimit
