// Package notify moves events from the record to the sockets: per-user
// publish over Redis pub/sub (channel mg:user:<id>), the outbox relay that
// publishes whatever a crash left behind, and the Hub through which a gateway
// receives the channels of the users it holds over one shared connection.
//
// Delivery is at least once. Publisher.Deliver and Hub.Subscribe are safe for
// concurrent use; Run methods own their goroutines and return when their
// context ends.
//
// It takes of the record and of Redis only what it calls, through interfaces
// of its own: the relay drains an Outbox, the Publisher deletes through an
// Acknowledger, both publish through a Pipeliner, and the Hub opens its
// connection with a PubSubOpener. matcher.Ledger and the go-redis clients
// are all of them.
package notify
