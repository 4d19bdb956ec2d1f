// Command chaos is matchgate's chaos run: it starts a small cluster of the
// real server binary against real Redis and PostgreSQL, drives a few
// thousand simulated players over WebSockets, injects faults on a schedule,
// and then checks its invariants (docs/CHAOS.md) from the record
// (PostgreSQL), from a fake fleet manager's record and from every frame the
// players received.
//
// The cluster is 3 processes with --roles matcher, 2 with --roles gateway
// and 1 with --roles relay, all on loopback, sharing one --secret, one Redis
// key prefix unique to the run and one fresh PostgreSQL schema. The faults
// are: kill -9 of a random matcher every --kill-every (restarted after a
// moment), kill -9 of a gateway (restarted; its players reconnect with
// jittered backoff, to either gateway), one wipe of every Redis key
// under the run's prefix (for this run the same as FLUSHALL, without
// touching other users of the shared Redis), a window in which a proxy in
// front of PostgreSQL cuts requests and drops replies (ambiguous commits), a
// window in which the fake fleet manager's allocate calls hang, a queue
// retired through the admin API, and optionally skewed clocks.
//
// After the last deadline plus --slack, with every process restarted and
// healthy, it checks: no ticket in two matches; no user twice in a match;
// every ticket in exactly one outcome and none still WAITING after its
// deadline plus --slack (later resolutions are counted and the latest
// listed; later than --late-limit they are violations); the retired queue's
// tickets resolved by their deadline; every committed match's server handed
// to it and never released, and every other match's server released (unless
// its matcher was killed first); every player connected
// when its match was created received it (as match.found, or in hello after
// a reconnect); and
// every outcome a player was told (cancelled, ALREADY_MATCHED,
// ALREADY_CANCELLED, match.found, ticket.update, hello) agrees with the
// record. It prints a report, writes it as JSON with --json, and exits 1 on
// any violation (2 when the run itself could not be carried out).
//
// Files: main.go (entry and the run's phases), options.go (flags),
// queues.go (the queue file), deps.go (the Redis prefix, the PostgreSQL
// schema, the wipe), cluster.go, cluster_stop.go and proc_*.go (processes
// in process groups), faults.go (the schedule), pgproxy.go (the PostgreSQL
// proxy), fleet.go (the fake fleet manager), player.go,
// player_frames.go and conn.go (simulated players, speaking through the
// Go client, package client, with reconnecting off), wire.go (the
// protocol as a client sees it), record.go (what each player sent and received),
// settle.go (the end of the run), ledger.go (reading the record),
// findings.go and check*.go (the invariants), evidence.go (Redis state of a
// stuck ticket), logs.go (server log scan), report.go (the report).
//
// Concurrency: each player is one goroutine; per open socket the client
// reads on its own goroutine, a command waits for its reply on its own,
// and one goroutine hands the frames read and the commands written (the
// client's OnFrame and OnSend) to the player in order. A player's record
// is written only by its own goroutine and read only after every player
// has stopped. The fault schedule runs in one
// goroutine; restarts run in goroutines the run waits for. The proxy runs
// one goroutine per connection and direction, the fleet manager an HTTP
// server; both are closed, and waited for, after the cluster has stopped. Every loop is
// bounded by the run's hard timeout, and every process is started in its
// own process group and killed as a group on the way out.
//
// The command targets Unix (process groups); it only ever connects to
// loopback addresses.
package main
