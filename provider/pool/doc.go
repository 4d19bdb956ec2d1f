// Package pool holds the live provider pool (provider.Live): Redis, every
// change one Lua script (lua/*.lua, embedded, EVALSHA with a NOSCRIPT
// fallback), and Memory, in pure Go, for tests and virtual-clock runs. One
// contract suite (contract_test.go) holds both to the same behaviour on
// real Redis, miniredis and memory.
//
// The pool is derived data: the record (provider.Record) is the truth of
// assignments, and Sync rebuilds a provider's held slots from it after
// Redis forgot them.
//
// Layout of one queue, every key sharing the hash tag {prov:<queue>} so that
// each script touches one Redis Cluster slot:
//
//	<prefix>:{prov:<queue>}:all          ZSET  member user id, score 0: the
//	                                           providers the pool knows, listed
//	                                           by user id (ZRANGE)
//	<prefix>:{prov:<queue>}:p:<user>     HASH  cap       capacity, slots in all
//	                                           attrs     provider.Attributes, JSON
//	                                           session   the session that put it online
//	                                           until     seen until, unix ms
//	                                           seen      last seen, unix ms (0: never)
//	                                           on        "1" online, "0" offline
//	<prefix>:{prov:<queue>}:held:<user>  SET   assignment ids holding its slots
//
// Scripts are given their keys in KEYS, except snapshot.lua and refresh.lua:
// they touch providers named by user ids (the all set's members, or the
// caller's list), so they get the queue's base key "<prefix>:{prov:<queue>}:"
// as KEYS[1] and build the provider keys from it. Every key built carries the
// base key's hash tag, so each script still touches one slot.
//
// Online: a provider is online at now when its flag is on and until is after
// now (by the millisecond). Online sets the flag, Offline clears it, and a
// provider not refreshed by until counts as offline with its flag still on.
// Offline answers true when the session named ("" for any) holds the flag,
// even if until has passed: it still ends that hold, so that a late Refresh
// cannot bring the provider back. Refresh moves until forward only, and
// only for providers whose flag is on and whose session is the one named.
// Held slots survive Online, Offline and lapses; only Release and Sync
// change them. A provider, once known, stays known (listed by Snapshot).
//
// Hold: an assignment already held is true whatever the provider's state (a
// retry never counts twice); otherwise it takes a slot when the provider is
// online at now and holds fewer than its capacity. A capacity lowered below
// the slots held takes no new hold and frees none.
//
// Time: every decision by time is taken by the caller's now, passed to the
// scripts in unix ms (ARCHITECTURE.md §7.6): scripts never read Redis's
// clock. The calls that take no now — Online and Refresh, which stamp last
// seen — read the pool's injected clock (WithClock). Offline stamps last
// seen with its now when the provider was fresh at it; a lapsed provider
// keeps its last refresh. Times returned are in UTC, to the millisecond.
// No key expires: the pool forgets nothing by itself.
//
// Snapshot reads the whole queue in one script, so that a pass sees one
// instant of it: two calls per provider, a few milliseconds of Redis per
// thousand providers (BenchmarkSnapshot1000). Refresh runs chunk users a
// call, each call atomic.
//
// Both implementations are safe for concurrent use; every call is atomic.
package pool
