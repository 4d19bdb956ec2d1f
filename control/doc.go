// Package control is the operators' side of matchgate, shared by every
// process: bans, per-queue configuration changes, and the control channel
// that tells every gateway about them at once.
//
//   - BanStore keeps bans durably (PostgresBans, or RedisBans where there is
//     no PostgreSQL); BanList is a gateway's in-memory copy of the active
//     bans, checked on every connect and join without I/O, reloaded
//     periodically and updated at once from the control channel.
//   - QueueStore keeps queues created, changed or retired through the admin
//     API (PostgresQueues in the queue_configs table, or RedisQueues); each
//     entry replaces the queue file's entry of the same name. Effective
//     merges them with the file; QueueWatcher notices changes (a version
//     that only grows, polled, and nudged from the control channel) and
//     hands every process the new configuration through a callback.
//   - Bus is the control channel, one Redis pub/sub channel
//     (<prefix>:control) that every process subscribes to: ban, unban,
//     disconnect a user, drain a node, queues changed.
//   - Admin carries out the admin API's requests: validate, store, publish.
//
// Everything published on the channel is also durable where it must be
// (bans, queues) and is reloaded periodically, so a missed message costs a
// delay, never a lost ban. Disconnects and drains are not stored: they act
// on what is open when they are published.
//
// Concurrency: every type is safe for concurrent use. Run methods block
// until their context ends; constructors start nothing.
package control
