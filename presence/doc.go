// Package presence records which users have a live socket and on which
// gateway node, in Redis with expiry so that a node that dies ages out by
// itself, and answers when a user was last seen — the signal the matcher uses
// to tell a player who is still there from a ghost.
//
// A Tracker is safe for concurrent use; Run owns the refresh loop and returns
// when its context ends.
package presence
