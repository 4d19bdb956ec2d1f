// Package pool owns the live pool: the Redis copy of the tickets that are
// waiting to be matched, one partition per (queue, region).
//
// The pool is derived data. PostgreSQL holds the record of every ticket and
// match; everything here can be rebuilt from it (the reconciler re-adds WAITING
// tickets with Requeue and removes strays with Remove), so the pool trades
// durability for the speed of a sorted-set scan and an atomic claim.
//
// Layout of one partition, every key sharing the hash tag {<partition>} so a
// script touches a single Redis Cluster slot:
//
//	<prefix>:{<partition>}:pool        ZSET  skill
//	<prefix>:{<partition>}:enq         ZSET  effective enqueue time, unix ms
//	<prefix>:{<partition>}:watch       ZSET  when a pass is to look, unix ms: the
//	                                         sooner of the deadline and the last
//	                                         sign of life plus the heartbeat timeout
//	<prefix>:{<partition>}:t:<ticket>  HASH  m (the member) state hb exp, name
//	                                         (the display name, when there is
//	                                         one), and once claimed match from
//	                                         fence
//	<prefix>:{<partition>}:fence       INT   fencing counter of the partition lease
//	<prefix>:{<partition>}:lease       STR   "<owner> <token> <expiry, unix ms>"
//	<prefix>:{<partition>}:offers      ZSET  offers from adjacent regions, by expiry
//	<prefix>:{<partition>}:o:<ticket>  HASH  an offered entry and its home partition
//	<prefix>:{<partition>}:pending     ZSET  PENDING_ACCEPT match ids, by accept deadline
//	<prefix>:{<partition>}:waits       LIST  recent resolved tickets (capped)
//	<prefix>:{<partition>}:matches     LIST  recent match times (capped)
//
// A sharded queue's region "q:r" has sub-pools named "q:r/s0"… and the
// overflow pool "q:r/ov". They keep the region's hash tag and put their name
// before the suffix ("<prefix>:{q:r}:s0:pool", "<prefix>:{q:r}:ov:lease"), and
// all of them share the region's ticket hashes ("<prefix>:{q:r}:t:<ticket>"):
// so promote.lua moves a player between two of them atomically, and an
// enqueue is idempotent across them. Per-user keys outside any partition:
// "<prefix>:cd:<queue>:<user>" (join cooldown) and "<prefix>:skill:<user>"
// (last known skill).
//
// Every set names a ticket by a member that carries the fields a matching
// pass reads, "<ticket>|<skill>|<enq>|<deadline>|<est>|<activity>|<user>"
// (see member): a scan is its range reads, with no hash read per entry. The
// hash names the member too, for those who know only the ticket id (a
// cancel), and holds the player's display name, which is no field of the
// member (a pass parses every member it reads, and a name may hold the
// separator): the claim, which writes the hash anyway, reads it back
// (ClaimResult.Names). A member that is a bare ticket id, written by a
// layout without the fields, and a watched member whose hash is gone, are
// read as entries without a user, which the matcher restores from the
// record (Requeue replaces the member).
//
// The watch set holds the deadline and the heartbeat timeout in one score,
// and a claim leaves it alone: a removal from the middle of a sorted set of
// a million costs microseconds of cache misses, and a claim's removals were
// most of a tick. A claimed member reaches the head of watch within a
// heartbeat timeout (by its deadline in a queue without one), where the
// scan that reads it finds it out of the pool and drops it, for far less.
//
// Every change goes through one Lua script (lua/*.lua), so that the pool
// and enq sets hold the same members, every one of them is in watch too,
// and the hash agrees (watch may also hold members a claim left, above).
// The reconciler's Rewatch repairs a pool whose members are missing from
// watch. A ticket is in the pool exactly when it is a member
// of the pool ZSET; Claim and Remove both test that membership inside their
// script, which is what makes exactly one of a racing claim and cancel win.
// A claimed ticket keeps its hash, marked with the match id, for the claim
// TTL (DefaultClaimTTL) so that the losing cancel can be told which match
// won; the mark names the pool claimed from and the fence token claimed
// under, so that the reconciler puts back at once the tickets of a dead
// claim (an older token than the pool's: its owner lost the lease) and
// leaves a live one to its owner (RequeueMissing), and a requeue never puts
// a ticket waiting or claimed in a sibling pool into a second one
// (RequeueGuarded).
//
// Time: what the pool decides by time it decides by the matcher's clock,
// never by Redis's (ARCHITECTURE.md §7.6). Calls that take a now compare
// with it: scans (Watched, PendingDue, Offers, Promote's cutoff) compare
// scores; the lease holds the unix ms it expires at, the acquirer's or
// renewer's now plus the TTL, and is free once a caller's now reaches it;
// a join cooldown ("<prefix>:cd:<queue>:<user>") and an allocation failure
// ("<prefix>:{<partition>}:allocfail") hold the unix ms they end at. Calls
// that take none (Enqueue, Claim, Remove, Requeue, Heartbeat, Locate, and
// the hashes a watch scan reads) read the pool's clock (WithClock, which a
// server sets to the matcher's): a ticket hash holds its end, exp, "<unix
// ms>" while waiting (its TTL from the enqueue or requeue; while it lasts
// an enqueue of the ticket is a no-op) and "<unix ms> <match id>" once
// claimed (the claim TTL; while it lasts the mark answers a losing cancel
// and a live owner's claim is left to it); from its end on the hash is
// read as gone. Each of these keys, and an offer's hash, expires in Redis
// expirySlack (5 s) after the instant it records: that only frees the
// memory, and decides only for a clock more than that far behind the one
// that wrote the key. A lease, or a ticket hash, that holds no end that
// fits it (the previous version's format, "<owner> <token>", or a hash a
// script of that version claimed or put back) lasts until Redis expires
// it, as it did then. The one expiry left to Redis's clock is the
// remembered skill's ("<prefix>:skill:<user>", 30 days), a cache of the
// skill service that no rule reads the age of. The memory pool (Memory)
// decides the same by the clock it is given and the caller's now.
//
// Concurrency: a Pool is safe for concurrent use. Writers of one partition need
// no coordination among themselves for correctness of a single call; the
// partition lease (its fence token checked by Claim) is what keeps two matcher
// loops from forming matches from the same pool.
package pool
