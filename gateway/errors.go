package gateway

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"math"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/matchgate/matchgate/matcher"
	"github.com/matchgate/matchgate/protocol"
)

// defaultRetryAfter is sent with 429 and 503 when the error does not say
// how long to wait.
const defaultRetryAfter = time.Second

// retryAfterer is implemented by errors that know when a retry may succeed
// (a rate limiter's or a cooldown's remaining time); the outermost one in
// the chain wins.
type retryAfterer interface{ RetryAfter() time.Duration }

// classified is an error as the client will see it.
type classified struct {
	wire       protocol.WireError
	status     int
	retryAfter time.Duration // 0: no Retry-After
	internal   bool          // log it: the client sees a generic message
}

// classify maps any error to what the client is told. Domain errors keep
// their code, message and ids, admission refusals their code and the
// message the edge gave them; a timed-out or cancelled Matchmaker call is
// UNAVAILABLE;
// everything else (and a domain INTERNAL) is INTERNAL with a generic message.
func classify(err error) classified {
	var de *matcher.Error
	if !errors.As(err, &de) {
		if c, ok := classifyAdmission(err); ok {
			return c
		}
		if errors.Is(err, context.DeadlineExceeded) || errors.Is(err, context.Canceled) {
			de = matcher.Errorf(matcher.CodeUnavailable, "the matchmaker did not answer in time")
		} else if matcher.Transient(err) {
			de = matcher.Errorf(matcher.CodeUnavailable, "a dependency is unreachable; retry shortly")
		} else {
			de = &matcher.Error{Code: matcher.CodeInternal}
		}
	}
	code, status := protocol.CodeOf(de.Code)
	if code == protocol.CodeInternal {
		return classified{
			wire:     protocol.WireError{Code: protocol.CodeInternal, Message: "internal error"},
			status:   http.StatusInternalServerError,
			internal: true,
		}
	}
	c := classified{
		wire:   protocol.WireError{Code: code, Message: de.Message, TicketID: de.TicketID, MatchID: de.MatchID},
		status: status,
	}
	if status == http.StatusTooManyRequests || status == http.StatusServiceUnavailable {
		c.retryAfter = defaultRetryAfter
		var ra retryAfterer
		if errors.As(err, &ra) && ra.RetryAfter() > 0 {
			c.retryAfter = ra.RetryAfter()
		}
		c.wire.RetryAfter = retryAfterWhole(c.retryAfter)
	}
	return c
}

// retryAfterSeconds renders a Retry-After value: whole seconds, at least 1.
func retryAfterSeconds(d time.Duration) string {
	return strconv.Itoa(retryAfterWhole(d))
}

func retryAfterWhole(d time.Duration) int {
	return max(1, int(math.Ceil(d.Seconds())))
}

// writeError answers a REST request with err, logging internal errors with
// the request id.
func (s *Server) writeError(w http.ResponseWriter, r *http.Request, err error) {
	c := classify(err)
	if c.internal {
		s.log.LogAttrs(r.Context(), slog.LevelError, "request failed",
			slog.String("request_id", requestID(r.Context())),
			slog.String("method", r.Method), slog.String("path", r.URL.Path),
			slog.Any("error", err))
	}
	if c.retryAfter > 0 {
		w.Header().Set("Retry-After", retryAfterSeconds(c.retryAfter))
	}
	writeJSON(w, c.status, protocol.ErrorBody{Error: c.wire})
}

// writeJSON writes v as a JSON response.
func writeJSON(w http.ResponseWriter, status int, v any) {
	b, err := json.Marshal(v)
	if err != nil {
		// Plain data never fails to marshal; answer 500 rather than half a body.
		status = http.StatusInternalServerError
		b = []byte(`{"error":{"code":"INTERNAL","message":"internal error"}}`)
	}
	writeBody(w, status, append(b, '\n'))
}

// writeBody writes an encoded JSON answer, its newline included.
func writeBody(w http.ResponseWriter, status int, b []byte) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_, _ = w.Write(b)
}

// jsonProblem describes a JSON decoding error without echoing client data
// beyond a field name.
func jsonProblem(err error) string {
	var te *json.UnmarshalTypeError
	var se *json.SyntaxError
	switch {
	case errors.As(err, &te):
		if te.Field != "" {
			return "field " + strconv.Quote(te.Field) + " must be " + jsonKind(te.Type.Kind().String())
		}
		return "wrong JSON type"
	case errors.As(err, &se):
		return "syntax error at offset " + strconv.FormatInt(se.Offset, 10)
	case errors.Is(err, io.ErrUnexpectedEOF):
		return "unexpected end of input"
	}
	// encoding/json reports unknown fields (DisallowUnknownFields) only as
	// text.
	if f, ok := strings.CutPrefix(err.Error(), "json: unknown field "); ok {
		if name, err := strconv.Unquote(f); err == nil {
			return "unknown field " + quoteField(name)
		}
		return "unknown field"
	}
	return "invalid JSON"
}

func jsonKind(k string) string {
	switch k {
	case "string":
		return "a string"
	case "float64", "int", "int64":
		return "a number"
	case "map", "struct":
		return "an object"
	case "slice", "array":
		return "an array"
	case "bool":
		return "a boolean"
	case "ptr":
		return "a number or null"
	}
	return "of another type"
}
