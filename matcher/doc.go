// Package matcher is the domain of matchgate: tickets, matches, queue
// configurations and window curves; the Service that joins, cancels and answers
// status; and the Engine that forms matches, one loop per partition.
//
// Beyond the core loop: the accept window (accept.go), server allocation
// through the Allocator interface (allocate.go; implementations in package
// allocator), the skill service asked at join (SkillSource), cross-region
// offers and the overflow pool of sharded queues (offers.go), and the
// explanations and wait estimates of stats.go.
//
// The durable record is reached through the Ledger interface (implemented in
// matcher/ledger), the live pool through matcher/pool. Service methods are safe
// for concurrent use; an Engine's Tick is serialised by the engine itself.
package matcher
