// Package matcher is the domain of matchgate: tickets, matches, queue
// configurations and window curves; the Service that joins, cancels and answers
// status; and the Engine that forms matches, one loop per partition.
//
// The durable record is reached through the Ledger interface (implemented in
// matcher/ledger), the live pool through matcher/pool. Service methods are safe
// for concurrent use; an Engine's Tick is serialised by the engine itself.
package matcher
