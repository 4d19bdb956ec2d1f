// Package client is a Go client for matchgate's WebSocket protocol
// (GET /v1/ws; every frame is in docs/asyncapi.yaml). It follows the
// reference JavaScript client, web/matchgate.js:
//
//   - Dial opens the socket (ws://host/v1/ws?token=…, or an http base URL)
//     and returns once the first hello is read. A TokenFunc gives the token
//     of each attempt, so a reconnect can use a fresh one; Guest signs in
//     as a guest (POST /v1/auth/guest) on servers that allow it.
//   - One method per command, players' and providers' alike: Join, Cancel,
//     Accept, Decline, Status, Ping; Enter, Position, Leave (admission
//     queues); Subscribe, Unsubscribe (ranking boards); ProviderOnline,
//     ProviderUpdate, ProviderOffline, AcceptAssignment,
//     DeclineAssignment, EndAssignment (provider queues). Each sends its
//     frame with a fresh id and returns what the reply (the frame whose re
//     is that id) carries, or the server's *Error.
//   - A lost socket is reconnected with full-jitter exponential backoff
//     (Backoff; the random source and the clock are Options). Close codes
//     and refusals that reconnecting cannot get past stop it: a banned user
//     (4403, HTTP 403), and a token the server refused (4401, HTTP 401)
//     that the TokenFunc gives again.
//   - The state the client holds (Ticket, Match, Tickets, Matches,
//     Admission, Provider, Assignments) is merged from every hello, reply
//     and push, keeping the highest version of each ticket, match and
//     assignment: a stale frame never overwrites a newer one. The hello
//     read at each reconnect catches up on what the socket missed.
//     Admission places have no version; the rule that stands in for one is
//     Client.Admission's.
//   - Events delivers typed events (a sealed Event interface) without
//     ever blocking the socket's reader: a slow consumer loses events, is
//     told how many by a GapEvent, and finds the state complete regardless
//     (see Client.Events).
//
// A command sent just before the socket is lost fails with ErrDisconnected:
// the server may have acted on it, and the hello after the reconnect shows
// whether it did. While the socket is down, the WAITING tickets are kept
// alive over REST heartbeats (Options.HeartbeatInterval), as
// web/matchgate.js does, so a ticket outlives an outage longer than its
// queue's heartbeat timeout.
package client
