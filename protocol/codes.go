package protocol

import (
	"errors"
	"net/http"

	"github.com/matchgate/matchgate/admission"
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
	// CodeAlreadyClaimed: an admission token the protected downstream
	// claimed (or consumed) already.
	CodeAlreadyClaimed Code = "ALREADY_CLAIMED"
	// CodeNotClaimed: an admission token consumed or released without
	// being claimed first.
	CodeNotClaimed Code = "NOT_CLAIMED"
	// CodeAdmissionRequired: a join of a queue behind an admission queue
	// by a user who holds no READY token there.
	CodeAdmissionRequired Code = "ADMISSION_REQUIRED"
)

// statusOf is every code's HTTP status.
var statusOf = map[Code]int{
	CodeBadRequest:       http.StatusBadRequest,
	CodeUnknownQueue:     http.StatusBadRequest,
	CodeUnauthorized:     http.StatusUnauthorized,
	CodeForbidden:        http.StatusForbidden,
	CodeNotFound:         http.StatusNotFound,
	CodeAlreadyQueued:    http.StatusConflict,
	CodeAlreadyMatched:   http.StatusConflict,
	CodeAlreadyCancelled: http.StatusConflict,
	CodeAlreadyClaimed:   http.StatusConflict,
	CodeNotClaimed:       http.StatusConflict,
	CodeRateLimited:      http.StatusTooManyRequests,
	CodeCooldown:         http.StatusTooManyRequests,
	CodeUnavailable:      http.StatusServiceUnavailable,
	CodeInternal:         http.StatusInternalServerError,

	// A join without its admission token is refused, as FORBIDDEN is.
	CodeAdmissionRequired: http.StatusForbidden,
}

// kindCode is the one table from the domain's error kinds to the wire. A
// kind missing here is INTERNAL.
var kindCode = map[matcher.Code]Code{
	matcher.CodeBadRequest:       CodeBadRequest,
	matcher.CodeUnknownQueue:     CodeUnknownQueue,
	matcher.CodeUnauthorized:     CodeUnauthorized,
	matcher.CodeForbidden:        CodeForbidden,
	matcher.CodeNotFound:         CodeNotFound,
	matcher.CodeAlreadyQueued:    CodeAlreadyQueued,
	matcher.CodeAlreadyMatched:   CodeAlreadyMatched,
	matcher.CodeAlreadyCancelled: CodeAlreadyCancelled,
	matcher.CodeRateLimited:      CodeRateLimited,
	matcher.CodeCooldown:         CodeCooldown,
	matcher.CodeUnavailable:      CodeUnavailable,
	matcher.CodeInternal:         CodeInternal,

	matcher.CodeAdmissionRequired: CodeAdmissionRequired,
}

// admissionCodes maps the admission package's refusals, sentinel errors
// rather than kinds (that domain stands alone too), to the wire. An
// unknown admission queue is answered as a join to an unknown queue is.
var admissionCodes = []struct {
	err  error
	code Code
}{
	{admission.ErrUnknownQueue, CodeUnknownQueue},
	{admission.ErrNotFound, CodeNotFound},
	{admission.ErrAlreadyClaimed, CodeAlreadyClaimed},
	{admission.ErrNotClaimed, CodeNotClaimed},
}

// CodeOf is the wire code of a domain error kind and its HTTP status;
// INTERNAL and 500 for a kind the table does not know.
func CodeOf(c matcher.Code) (Code, int) {
	if w, ok := kindCode[c]; ok {
		return w, StatusOf(w)
	}
	return CodeInternal, http.StatusInternalServerError
}

// AdmissionCodeOf is the wire code and HTTP status of an admission
// refusal anywhere in err's chain; ok is false when err holds none (it is
// then internal, or a matcher error for CodeOf).
func AdmissionCodeOf(err error) (code Code, status int, ok bool) {
	for _, a := range admissionCodes {
		if errors.Is(err, a.err) {
			return a.code, StatusOf(a.code), true
		}
	}
	return "", 0, false
}

// StatusOf is the HTTP status of a wire code; 500 for one it does not
// know.
func StatusOf(c Code) int {
	if s, ok := statusOf[c]; ok {
		return s
	}
	return http.StatusInternalServerError
}

// Codes lists every wire code.
func Codes() []Code {
	return []Code{CodeBadRequest, CodeUnauthorized, CodeForbidden, CodeUnknownQueue, CodeAlreadyQueued,
		CodeAlreadyMatched, CodeAlreadyCancelled, CodeNotFound, CodeRateLimited, CodeCooldown,
		CodeUnavailable, CodeInternal, CodeAlreadyClaimed, CodeNotClaimed, CodeAdmissionRequired}
}
