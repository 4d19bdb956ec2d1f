package protocol

import (
	"net/http"

	"github.com/matchgate/matchgate/matcher"
)

// Code is an error code as the wire spells it, in REST error bodies and
// WebSocket error frames alike (README "Protocol").
type Code string

const (
	CodeBadRequest       Code = "BAD_REQUEST"
	CodeUnauthorized     Code = "UNAUTHORIZED"
	CodeForbidden        Code = "FORBIDDEN"
	CodeUnknownQueue     Code = "UNKNOWN_QUEUE"
	CodeAlreadyQueued    Code = "ALREADY_QUEUED"
	CodeAlreadyMatched   Code = "ALREADY_MATCHED"
	CodeAlreadyCancelled Code = "ALREADY_CANCELLED"
	CodeNotFound         Code = "NOT_FOUND"
	CodeRateLimited      Code = "RATE_LIMITED"
	CodeCooldown         Code = "COOLDOWN"
	CodeUnavailable      Code = "UNAVAILABLE"
	CodeInternal         Code = "INTERNAL"
)

// wireCode is the one table from the domain's error kinds to the wire:
// each kind's code and HTTP status. A kind missing here is INTERNAL.
var wireCode = map[matcher.Code]struct {
	code   Code
	status int
}{
	matcher.CodeBadRequest:       {CodeBadRequest, http.StatusBadRequest},
	matcher.CodeUnknownQueue:     {CodeUnknownQueue, http.StatusBadRequest},
	matcher.CodeUnauthorized:     {CodeUnauthorized, http.StatusUnauthorized},
	matcher.CodeForbidden:        {CodeForbidden, http.StatusForbidden},
	matcher.CodeNotFound:         {CodeNotFound, http.StatusNotFound},
	matcher.CodeAlreadyQueued:    {CodeAlreadyQueued, http.StatusConflict},
	matcher.CodeAlreadyMatched:   {CodeAlreadyMatched, http.StatusConflict},
	matcher.CodeAlreadyCancelled: {CodeAlreadyCancelled, http.StatusConflict},
	matcher.CodeRateLimited:      {CodeRateLimited, http.StatusTooManyRequests},
	matcher.CodeCooldown:         {CodeCooldown, http.StatusTooManyRequests},
	matcher.CodeUnavailable:      {CodeUnavailable, http.StatusServiceUnavailable},
	matcher.CodeInternal:         {CodeInternal, http.StatusInternalServerError},
}

// CodeOf is the wire code of a domain error kind and its HTTP status;
// INTERNAL and 500 for a kind the table does not know.
func CodeOf(c matcher.Code) (Code, int) {
	if w, ok := wireCode[c]; ok {
		return w.code, w.status
	}
	return CodeInternal, http.StatusInternalServerError
}

// Codes lists every wire code.
func Codes() []Code {
	return []Code{CodeBadRequest, CodeUnauthorized, CodeForbidden, CodeUnknownQueue, CodeAlreadyQueued,
		CodeAlreadyMatched, CodeAlreadyCancelled, CodeNotFound, CodeRateLimited, CodeCooldown,
		CodeUnavailable, CodeInternal}
}
