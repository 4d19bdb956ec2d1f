package gateway

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"strconv"
	"strings"
	"sync"
	"unicode/utf8"

	"github.com/matchgate/matchgate/matcher"
	"github.com/matchgate/matchgate/protocol"
)

// JSON from clients is decoded strictly, REST bodies and WebSocket frames
// alike: a field the request does not have (names match exactly, where
// encoding/json would also take "Type" for "type"), a key given twice
// (encoding/json would silently keep the last), invalid UTF-8, deep nesting
// or anything after the object is refused with BAD_REQUEST naming the
// problem. A typo such as "regoin" must not quietly fall back to a default,
// and two parsers (a proxy, a WAF, this one) must never disagree on what a
// request said.

// maxJSONDepth bounds nesting: no request has more than three levels.
const maxJSONDepth = 8

// decodeStrict decodes the single JSON object in data into v. With emptyOK,
// data that is empty or all white space leaves v as it is (an absent body).
// When v points to a struct, its keys must be exactly its fields' JSON
// names: encoding/json alone would match "Type" to "type" as well, and
// keep the last of the two.
func decodeStrict(data []byte, v any, emptyOK bool) error {
	if emptyOK && len(bytes.TrimSpace(data)) == 0 {
		return nil
	}
	if !utf8.Valid(data) {
		// encoding/json would quietly turn invalid bytes into U+FFFD.
		return matcher.Errorf(matcher.CodeBadRequest, "malformed JSON: not valid UTF-8")
	}
	if err := checkKeys(data, fieldsOf(v)); err != nil {
		return matcher.Errorf(matcher.CodeBadRequest, "malformed JSON: %s", err.Error())
	}
	if err := json.Unmarshal(data, v); err != nil {
		return matcher.Errorf(matcher.CodeBadRequest, "malformed JSON: %s", jsonProblem(err))
	}
	return nil
}

// fieldNames caches fieldsOf per type.
var fieldNames sync.Map // reflect.Type → []string

// fieldsOf lists the JSON names of the fields of the struct v points to; nil
// (any key) for anything else.
func fieldsOf(v any) []string {
	t := reflect.TypeOf(v)
	if t == nil || t.Kind() != reflect.Pointer || t.Elem().Kind() != reflect.Struct {
		return nil
	}
	if names, ok := fieldNames.Load(t); ok {
		return names.([]string)
	}
	names := []string{} // not nil: a struct without fields takes no key
	for f := range t.Elem().Fields() {
		if !f.IsExported() {
			continue
		}
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		switch name {
		case "-":
			continue
		case "":
			name = f.Name
		}
		names = append(names, name)
	}
	fieldNames.Store(t, names)
	return names
}

// checkKeys scans the JSON text and refuses an object with a repeated key
// at any depth, a top-level key not in fields (unless fields is nil),
// nesting deeper than maxJSONDepth, and a top level that is not an object.
// Syntax errors are left to the decoder that follows. It is a single pass
// over the bytes that allocates only for escaped keys: every frame of every
// socket goes through it.
func checkKeys(data []byte, fields []string) error {
	s := keyScanner{data: data, fields: fields}
	s.ws()
	if s.pos >= len(data) || data[s.pos] != '{' {
		return errors.New("the message must be a JSON object")
	}
	if err := s.value(); err != nil && err != errJSONSyntax {
		return err
	}
	return nil
}

// errJSONSyntax stops the scan; the decoder reports the syntax error.
var errJSONSyntax = errors.New("syntax")

type keyScanner struct {
	data   []byte
	pos    int
	depth  int
	fields []string // the keys allowed at depth 1; nil: any
}

func (s *keyScanner) ws() {
	for s.pos < len(s.data) {
		switch s.data[s.pos] {
		case ' ', '\t', '\n', '\r':
			s.pos++
		default:
			return
		}
	}
}

func (s *keyScanner) peek() byte {
	if s.pos < len(s.data) {
		return s.data[s.pos]
	}
	return 0
}

func (s *keyScanner) value() error {
	s.ws()
	switch s.peek() {
	case '{':
		return s.object()
	case '[':
		return s.array()
	case '"':
		_, _, err := s.str()
		return err
	case 0:
		return errJSONSyntax
	}
	// A number or a literal: up to the next delimiter.
	start := s.pos
	for s.pos < len(s.data) {
		switch s.data[s.pos] {
		case ',', '}', ']', ' ', '\t', '\n', '\r':
			if s.pos == start {
				return errJSONSyntax
			}
			return nil
		}
		s.pos++
	}
	return nil
}

// str scans a string starting at its quote and returns its raw content and
// whether it has escapes.
func (s *keyScanner) str() (raw []byte, escaped bool, err error) {
	start := s.pos + 1
	for i := start; i < len(s.data); i++ {
		switch s.data[i] {
		case '\\':
			escaped = true
			i++
		case '"':
			s.pos = i + 1
			return s.data[start:i], escaped, nil
		}
	}
	return nil, false, errJSONSyntax
}

// known reports whether key is exactly one of the fields.
func (s *keyScanner) known(key []byte) bool {
	for _, f := range s.fields {
		if string(key) == f {
			return true
		}
	}
	return false
}

func (s *keyScanner) enter() error {
	s.depth++
	if s.depth > maxJSONDepth {
		return fmt.Errorf("nested deeper than %d levels", maxJSONDepth)
	}
	s.pos++
	return nil
}

func (s *keyScanner) object() error {
	if err := s.enter(); err != nil {
		return err
	}
	var small [16][]byte
	keys := small[:0]
	var many map[string]struct{} // past 64 keys
	s.ws()
	if s.peek() == '}' {
		s.pos++
		s.depth--
		return nil
	}
	for {
		s.ws()
		if s.peek() != '"' {
			return errJSONSyntax
		}
		start := s.pos
		key, escaped, err := s.str()
		if err != nil {
			return err
		}
		if escaped {
			var k string
			if json.Unmarshal(s.data[start:s.pos], &k) != nil {
				return errJSONSyntax
			}
			key = []byte(k)
		}
		if s.depth == 1 && s.fields != nil && !s.known(key) {
			return fmt.Errorf("unknown field %s", quoteField(string(key)))
		}
		if many != nil {
			if _, dup := many[string(key)]; dup {
				return fmt.Errorf("key %s given twice", quoteField(string(key)))
			}
			many[string(key)] = struct{}{}
		} else {
			for _, k := range keys {
				if bytes.Equal(k, key) {
					return fmt.Errorf("key %s given twice", quoteField(string(key)))
				}
			}
			keys = append(keys, key)
			if len(keys) > 64 {
				many = make(map[string]struct{}, 2*len(keys))
				for _, k := range keys {
					many[string(k)] = struct{}{}
				}
			}
		}
		s.ws()
		if s.peek() != ':' {
			return errJSONSyntax
		}
		s.pos++
		if err := s.value(); err != nil {
			return err
		}
		s.ws()
		switch s.peek() {
		case ',':
			s.pos++
		case '}':
			s.pos++
			s.depth--
			return nil
		default:
			return errJSONSyntax
		}
	}
}

func (s *keyScanner) array() error {
	if err := s.enter(); err != nil {
		return err
	}
	s.ws()
	if s.peek() == ']' {
		s.pos++
		s.depth--
		return nil
	}
	for {
		if err := s.value(); err != nil {
			return err
		}
		s.ws()
		switch s.peek() {
		case ',':
			s.pos++
		case ']':
			s.pos++
			s.depth--
			return nil
		default:
			return errJSONSyntax
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

// decodeFrame decodes one text frame, a protocol.Command, strictly: unknown
// fields, repeated keys and the fields of another command are refused. On
// error, the returned frame carries the request id when it could be read
// (for the "re" of the error reply).
func decodeFrame(data []byte) (protocol.Command, error) {
	var in protocol.Command
	if err := decodeStrict(data, &in, false); err != nil {
		// Salvage the id for the reply, from a frame that is at least JSON.
		var env struct {
			ID string `json:"id"`
		}
		if json.Unmarshal(data, &env) == nil && len(env.ID) <= maxClientIDLen {
			in = protocol.Command{ID: env.ID}
		} else {
			in = protocol.Command{}
		}
		return in, err
	}
	if len(in.ID) > maxClientIDLen {
		return protocol.Command{}, matcher.Errorf(matcher.CodeBadRequest, "id longer than %d bytes", maxClientIDLen)
	}
	if f := foreignField(in); f != "" {
		return in, matcher.Errorf(matcher.CodeBadRequest, "field %q is not part of %s", f, quoteField(in.Type))
	}
	return in, nil
}

// foreignField names a field set in the frame that its type does not have.
func foreignField(in protocol.Command) string {
	var allowed string
	switch in.Type {
	case protocol.FrameJoin:
		allowed = "queue region attributes"
	case protocol.FrameCancel:
		allowed = "ticketId"
	case protocol.FrameAccept, protocol.FrameDecline:
		allowed = "matchId"
	case protocol.FrameEnter, protocol.FramePosition, protocol.FrameLeave:
		allowed = "queue"
	case protocol.FrameStatus, protocol.FramePing:
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
