// Package allocator hands out game servers for matches: it implements
// engine.Allocator twice.
//
//   - Static, a fixed fleet of addresses per region (from --fleet), handed
//     out round-robin with the match id as the session. It is what the
//     embedded default and demos use: nothing to run besides matchgate.
//   - HTTP, a client of a fleet manager (an Agones allocator front, a studio's
//     own service) speaking the small JSON protocol of docs/ALLOCATOR.md.
//
// Neither ever answers a server of another region than the one asked for.
// Both are safe for concurrent use; retries with backoff are the matcher's
// (engine.DefaultAllocateBackoff), not the allocator's.
package allocator
