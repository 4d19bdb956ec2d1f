package gateway

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/matchgate/matchgate/matcher"
)

// JSON from clients is decoded strictly, REST bodies and WebSocket frames
// alike: a field the request does not have, a key given twice (encoding/json
// would silently keep the last) or anything after the object is refused
// with BAD_REQUEST naming the problem. A typo such as "regoin" must not
// quietly fall back to a default, and two parsers (a proxy, a WAF, this one)
// must never disagree on what a request said.

// maxJSONDepth bounds nesting: no request has more than three levels.
const maxJSONDepth = 8

// decodeStrict decodes the single JSON object in data into v. With emptyOK,
// data that is empty or all white space leaves v as it is (an absent body).
func decodeStrict(data []byte, v any, emptyOK bool) error {
	if emptyOK && len(bytes.TrimSpace(data)) == 0 {
		return nil
	}
	if !utf8.Valid(data) {
		// encoding/json would quietly turn invalid bytes into U+FFFD.
		return matcher.Errorf(matcher.CodeBadRequest, "malformed JSON: not valid UTF-8")
	}
	if err := checkKeys(data); err != nil {
		return matcher.Errorf(matcher.CodeBadRequest, "malformed JSON: %s", err.Error())
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return matcher.Errorf(matcher.CodeBadRequest, "malformed JSON: %s", jsonProblem(err))
	}
	if _, err := dec.Token(); err != io.EOF {
		return matcher.Errorf(matcher.CodeBadRequest, "malformed JSON: trailing data after the object")
	}
	return nil
}

// checkKeys walks the JSON text and refuses an object with a repeated key
// at any depth, nesting deeper than maxJSONDepth, and a top level that is
// not an object. Syntax errors are left to the decoder that follows.
func checkKeys(data []byte) error {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	type frame struct {
		object bool
		keys   map[string]struct{}
		expect bool // object: the next token is a key
	}
	var stack []*frame
	for first := true; ; first = false {
		tok, err := dec.Token()
		if err != nil {
			return nil // io.EOF, or a syntax error reported by the decoder
		}
		d, isDelim := tok.(json.Delim)
		if first && (!isDelim || d != '{') {
			return errors.New("the message must be a JSON object")
		}
		var top *frame
		if len(stack) > 0 {
			top = stack[len(stack)-1]
		}
		if top != nil && top.object && top.expect && !isDelim {
			key, _ := tok.(string)
			if _, dup := top.keys[key]; dup {
				return fmt.Errorf("key %s given twice", quoteField(key))
			}
			top.keys[key] = struct{}{}
			top.expect = false
			continue
		}
		if isDelim {
			switch d {
			case '{', '[':
				if len(stack) >= maxJSONDepth {
					return fmt.Errorf("nested deeper than %d levels", maxJSONDepth)
				}
				stack = append(stack, &frame{object: d == '{', keys: map[string]struct{}{}, expect: d == '{'})
				continue
			case '}', ']':
				stack = stack[:len(stack)-1]
				if len(stack) == 0 {
					// The top-level object is done; anything after it is the
					// decoder's "trailing data".
					return nil
				}
			}
		}
		// A value ended: the enclosing object expects a key next.
		if len(stack) > 0 && stack[len(stack)-1].object {
			stack[len(stack)-1].expect = true
		}
	}
}

// quoteField renders a client-sent field name for an error message: quoted,
// at most 32 bytes.
func quoteField(s string) string {
	if len(s) > 32 {
		s = s[:32] + "…"
	}
	return strconv.Quote(s)
}

// inbound is a client→server frame: the envelope and every command's
// fields. Decoded strictly: unknown fields, repeated keys and the fields of
// another command are refused.
type inbound struct {
	Type       string            `json:"type"`
	ID         string            `json:"id"`
	Queue      string            `json:"queue"`
	Region     string            `json:"region"`
	Attributes map[string]string `json:"attributes"`
	TicketID   string            `json:"ticketId"`
	MatchID    string            `json:"matchId"`
}

// decodeFrame decodes one text frame. On error, the returned frame carries
// the request id when it could be read (for the "re" of the error reply).
func decodeFrame(data []byte) (inbound, error) {
	var in inbound
	if err := decodeStrict(data, &in, false); err != nil {
		// Salvage the id for the reply, from a frame that is at least JSON.
		var env struct {
			ID string `json:"id"`
		}
		if json.Unmarshal(data, &env) == nil && len(env.ID) <= maxClientIDLen {
			in = inbound{ID: env.ID}
		} else {
			in = inbound{}
		}
		return in, err
	}
	if len(in.ID) > maxClientIDLen {
		return inbound{}, matcher.Errorf(matcher.CodeBadRequest, "id longer than %d bytes", maxClientIDLen)
	}
	if f := foreignField(in); f != "" {
		return in, matcher.Errorf(matcher.CodeBadRequest, "field %q is not part of %s", f, quoteField(in.Type))
	}
	return in, nil
}

// foreignField names a field set in the frame that its type does not have.
func foreignField(in inbound) string {
	var allowed string
	switch in.Type {
	case "join":
		allowed = "queue region attributes"
	case "cancel":
		allowed = "ticketId"
	case "accept", "decline":
		allowed = "matchId"
	case "status", "ping":
		allowed = ""
	default:
		return "" // unknown types are refused by dispatch
	}
	set := []struct {
		name string
		set  bool
	}{
		{"queue", in.Queue != ""}, {"region", in.Region != ""}, {"attributes", in.Attributes != nil},
		{"ticketId", in.TicketID != ""}, {"matchId", in.MatchID != ""},
	}
	for _, f := range set {
		if f.set && !strings.Contains(" "+allowed+" ", " "+f.name+" ") {
			return f.name
		}
	}
	return ""
}
