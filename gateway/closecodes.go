package gateway

import (
	"strconv"

	"github.com/coder/websocket"
)

// WebSocket close codes the gateway sends. Each says whether a client should
// reconnect (with jittered backoff) or stop until something changes. Codes in
// 4000–4999 are matchgate's own meanings.
const (
	// CloseNormal (1000): the client asked to close. Terminal: the client
	// chose to leave.
	CloseNormal = websocket.StatusNormalClosure

	// CloseGoingAway (1001): this node is shutting down or restarting.
	// Reconnect: another node (or this one, restarted) will take the socket,
	// and the hello frame restores the state.
	CloseGoingAway = websocket.StatusGoingAway

	// CloseSlowConsumer (1008, reason "slow consumer"): the socket's send
	// queue overflowed because the client did not read fast enough. Reconnect:
	// the hello frame carries everything the dropped frames said.
	CloseSlowConsumer = websocket.StatusPolicyViolation

	// CloseTooBig (1009): a client frame exceeded Config.MaxFrameBytes.
	// Terminal for that frame: resending it fails again; fix the client.
	CloseTooBig = websocket.StatusMessageTooBig

	// CloseInternal (1011): the gateway failed unexpectedly. Reconnect.
	CloseInternal = websocket.StatusInternalError

	// CloseTryAgainLater (1013): a dependency (the user's channel or state)
	// was unavailable while the socket was set up. Reconnect with backoff.
	CloseTryAgainLater = websocket.StatusTryAgainLater

	// CloseUnauthorized (4401): the token expired while the socket was open.
	// Terminal: obtain a new token before reconnecting. (A missing or invalid
	// token never reaches a socket: the upgrade is refused with HTTP 401.)
	CloseUnauthorized websocket.StatusCode = 4401

	// CloseDisconnected (4000): an operator disconnected the user (admin
	// API). Reconnect with backoff; a banned user is closed with
	// CloseBanned instead, and refused at the reconnect.
	CloseDisconnected websocket.StatusCode = 4000

	// CloseBanned (4403): the user was banned. Terminal: reconnecting is
	// refused with HTTP 403 until the ban is lifted.
	CloseBanned websocket.StatusCode = 4403

	// CloseTooManyMessages (4429): the socket kept sending frames faster
	// than Config.MessageRate after being told RATE_LIMITED. Reconnect with
	// backoff, and send less.
	CloseTooManyMessages websocket.StatusCode = 4429

	// ClosePingTimeout (4408): a protocol ping went unanswered within
	// Config.PingTimeout, so the peer is presumed gone and the connection is
	// dropped without a close handshake; the code is what the metrics record.
	// Reconnect.
	ClosePingTimeout websocket.StatusCode = 4408

	// closeAbnormal (1006) is recorded when the connection ended without a
	// close frame; it is never sent.
	closeAbnormal = websocket.StatusAbnormalClosure
)

// closeLabel renders a close code as a bounded metrics label: the known codes
// by number, anything a peer might send otherwise as "other".
func closeLabel(code websocket.StatusCode) string {
	switch code {
	case CloseNormal, CloseGoingAway, CloseSlowConsumer, CloseTooBig, CloseInternal,
		CloseTryAgainLater, CloseUnauthorized, ClosePingTimeout, closeAbnormal,
		CloseDisconnected, CloseBanned, CloseTooManyMessages,
		websocket.StatusProtocolError, websocket.StatusUnsupportedData,
		websocket.StatusNoStatusRcvd, websocket.StatusInvalidFramePayloadData:
		return strconv.Itoa(int(code))
	}
	return "other"
}
