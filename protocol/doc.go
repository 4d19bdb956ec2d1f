// Package protocol is matchgate's wire (README "Protocol"): the frame type
// names in both directions, every wire shape (the commands, the replies,
// hello and status, errors, tickets, matches and the REST bodies), the
// error codes and their HTTP statuses, the hand-written appenders that
// write the frames byte for byte as encoding/json would, and the client's
// view of what the server sends (the Client types, which the load tester
// and the chaos run decode with).
//
// The domain (package matcher) does not import this package. A domain error
// carries a typed kind (matcher.Code), and CodeOf maps each kind to its wire
// code and status: the wire strings live only here, so the domain stands
// alone, and the one table that turns kinds into codes is the one the
// OpenAPI description is checked against. The alternative, matcher errors
// holding the wire string, would have put the protocol back into the domain.
// The admission queue's refusals are sentinel errors of package admission;
// AdmissionCodeOf maps them the same way, and StatusOf gives any code's
// status.
package protocol
