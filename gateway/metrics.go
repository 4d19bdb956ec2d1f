package gateway

import (
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/matchgate/matchgate/protocol"
)

// Client→server frame types; anything else is counted as "other".
var inTypes = append(slices.Concat(protocol.ClientFrameTypes, protocol.ProviderClientFrameTypes, protocol.RankingClientFrameTypes), "other")

// Server→client frame types; anything else is counted as "other".
var outTypes = append(slices.Concat(protocol.ServerFrameTypes, protocol.ProviderServerFrameTypes), "other")

// metrics is the gateway's one metrics struct, built from the injected
// Registerer. Labels are bounded: no user ids, no client-sent strings.
type metrics struct {
	connections   prometheus.Gauge
	accepted      prometheus.Counter
	closed        *prometheus.CounterVec   // code
	messagesIn    *prometheus.CounterVec   // type
	messagesOut   *prometheus.CounterVec   // type
	overflows     prometheus.Counter       //
	pingRTT       prometheus.Histogram     //
	commandDur    *prometheus.HistogramVec // type
	httpRequests  *prometheus.CounterVec   // route, method, code
	httpDurations *prometheus.HistogramVec // route
	refusals      *prometheus.CounterVec   // reason
	limiterErrors prometheus.Counter       //
	adminActions  *prometheus.CounterVec   // action

	// Resolved children of the vectors above, keyed by label, so the hot
	// paths skip the label hashing.
	in  map[string]prometheus.Counter
	out map[string]prometheus.Counter
	cmd map[string]prometheus.Observer
}

func newMetrics(reg prometheus.Registerer) (*metrics, error) {
	m := &metrics{
		connections: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "matchgate_ws_connections",
			Help: "WebSocket connections currently open on this gateway.",
		}),
		accepted: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "matchgate_ws_connections_accepted_total",
			Help: "WebSocket connections accepted.",
		}),
		closed: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "matchgate_ws_connections_closed_total",
			Help: "WebSocket connections closed, by close code (1006: no close frame; 4408: ping timeout).",
		}, []string{"code"}),
		messagesIn: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "matchgate_ws_messages_received_total",
			Help: "WebSocket frames received, by message type.",
		}, []string{"type"}),
		messagesOut: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "matchgate_ws_messages_sent_total",
			Help: "WebSocket frames written, by message type.",
		}, []string{"type"}),
		overflows: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "matchgate_ws_send_queue_overflows_total",
			Help: "Sockets disconnected because their send queue overflowed (slow consumers).",
		}),
		pingRTT: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "matchgate_ws_ping_rtt_seconds",
			Help:    "Round trip time of protocol pings.",
			Buckets: []float64{.001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10},
		}),
		commandDur: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "matchgate_ws_command_duration_seconds",
			Help:    "Time to handle a WebSocket command, by message type.",
			Buckets: prometheus.DefBuckets,
		}, []string{"type"}),
		httpRequests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "matchgate_http_requests_total",
			Help: "HTTP requests, by route template, method and status class (WebSocket upgrades count when the socket closes).",
		}, []string{"route", "method", "code"}),
		httpDurations: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "matchgate_http_request_duration_seconds",
			Help:    "HTTP request handling time by route template (WebSocket upgrades excluded).",
			Buckets: prometheus.DefBuckets,
		}, []string{"route"}),
		refusals: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "matchgate_refusals_total",
			Help: "Requests, upgrades and frames refused by a limit or a ban, by reason (join_user, join_ip, cancel_user, accept_user, read_user, read_ip, heartbeat_user, connect_ip, guest_ip, node_cap, user_sockets, messages, banned).",
		}, []string{"reason"}),
		limiterErrors: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "matchgate_rate_limiter_errors_total",
			Help: "Shared rate limit checks that failed (Redis unreachable or slow); the event was let through.",
		}),
		adminActions: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "matchgate_admin_actions_total",
			Help: "Admin API requests carried out, by action.",
		}, []string{"action"}),
	}
	for _, c := range []prometheus.Collector{
		m.connections, m.accepted, m.closed, m.messagesIn, m.messagesOut,
		m.overflows, m.pingRTT, m.commandDur, m.httpRequests, m.httpDurations,
		m.refusals, m.limiterErrors, m.adminActions,
	} {
		if err := reg.Register(c); err != nil {
			var are prometheus.AlreadyRegisteredError
			if errors.As(err, &are) {
				return nil, fmt.Errorf("gateway metrics already registered (one Server per Registerer): %w", err)
			}
			return nil, fmt.Errorf("register gateway metrics: %w", err)
		}
	}
	// Resolving every known series also exposes it from the start, at zero.
	m.in = make(map[string]prometheus.Counter, len(inTypes))
	m.cmd = make(map[string]prometheus.Observer, len(inTypes))
	for _, t := range inTypes {
		m.in[t] = m.messagesIn.WithLabelValues(t)
		m.cmd[t] = m.commandDur.WithLabelValues(t)
	}
	for _, r := range refusalReasons {
		m.refusals.WithLabelValues(r)
	}
	for _, a := range adminActions {
		m.adminActions.WithLabelValues(a)
	}
	m.out = make(map[string]prometheus.Counter, len(outTypes))
	for _, t := range outTypes {
		m.out[t] = m.messagesOut.WithLabelValues(t)
	}
	return m, nil
}

// refusalReasons are the values of the refusals' reason label.
var refusalReasons = []string{
	limitJoinUser, limitJoinIP, limitCancelUser, limitAcceptUser, limitReadUser, limitReadIP,
	limitHeartbeatUser, limitConnectIP, limitGuestIP,
	refusedNodeCap, refusedUserSockets, refusedMessages, refusedBanned,
}

// refuse counts a refusal; reason must be one of refusalReasons.
func (m *metrics) refuse(reason string) { m.refusals.WithLabelValues(reason).Inc() }

// countIn counts a received frame; label must come from inLabel.
func (m *metrics) countIn(label string) { m.in[label].Inc() }

// countOut counts a written frame; label must come from outLabel.
func (m *metrics) countOut(label string) { m.out[label].Inc() }

// observeCommand records a command's duration; label must come from inLabel.
func (m *metrics) observeCommand(label string, d time.Duration) {
	m.cmd[label].Observe(d.Seconds())
}

// inLabel bounds a client-sent message type to the known set.
func inLabel(t string) string {
	switch t {
	case protocol.FrameJoin, protocol.FrameCancel, protocol.FrameAccept, protocol.FrameDecline,
		protocol.FrameStatus, protocol.FramePing, protocol.FrameEnter, protocol.FramePosition, protocol.FrameLeave,
		protocol.FrameSubscribe, protocol.FrameUnsubscribe:
		return t
	}
	if protocol.IsProviderFrame(t) {
		return t
	}
	return "other"
}

// outLabel bounds a server→client frame type (pushes come from elsewhere) to
// the known set.
func outLabel(t string) string {
	switch t {
	case protocol.FrameHello, protocol.FrameJoined, protocol.FrameCancelled, protocol.FrameMatchUpdate,
		protocol.FrameStatus, protocol.FramePong, protocol.FrameError, protocol.FrameTicketUpdate,
		protocol.FrameMatchFound, protocol.FrameMatchReady, protocol.FrameMatchDissolved,
		protocol.FrameEntered, protocol.FramePosition, protocol.FrameLeft, protocol.FrameAdmissionPosition, protocol.FrameAdmissionReady,
		protocol.FrameProvider, protocol.FrameAssignment, protocol.FrameAssignmentOffered, protocol.FrameAssignmentUpdate,
		protocol.FrameSubscribed, protocol.FrameUnsubscribed, protocol.FrameRankingUpdate:
		return t
	}
	return "other"
}

// methodLabel bounds the HTTP method label.
func methodLabel(m string) string {
	switch m {
	case "GET", "HEAD", "POST", "PUT", "DELETE", "PATCH", "OPTIONS":
		return m
	}
	return "OTHER"
}

// statusClass renders 404 as "4xx".
func statusClass(code int) string {
	if code < 100 || code > 599 {
		return "other"
	}
	return string(rune('0'+code/100)) + "xx"
}
