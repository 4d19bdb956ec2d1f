// Package notify moves events from the record to the sockets: per-user
// publish over Redis pub/sub (channel mg:user:<id>), the outbox relay that
// publishes whatever a crash left behind, and the Hub through which a gateway
// receives the channels of the users it holds over one shared connection.
//
// Delivery is at least once. Publisher.Deliver and Hub.Subscribe are safe for
// concurrent use; Run methods own their goroutines and return when their
// context ends.
package notify
