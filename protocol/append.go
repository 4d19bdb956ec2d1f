package protocol

import (
	"encoding/json"
	"math"
	"slices"
	"strconv"
	"time"
	"unicode/utf8"

	"github.com/matchgate/matchgate/matcher"
)

// The appenders below write the wire shapes byte for byte as encoding/json
// writes them (the tests hold them to it): the frames are built on every
// join and every match, and reflection, plus the re-scan of every wireTime's
// MarshalJSON output, cost more than the bytes themselves. The JSON
// primitives (AppendJSONString, AppendJSONFloat, AppendJSONStringMap) are
// exported for the ledger's outbox data, held to encoding/json likewise.

// AppendJSON appends w as json.Marshal(w) writes it.
func (w WireTicket) AppendJSON(b []byte) []byte {
	b = append(b, `{"id":`...)
	b = AppendJSONString(b, w.ID)
	b = append(b, `,"userId":`...)
	b = AppendJSONString(b, w.UserID)
	if w.Name != "" {
		b = append(b, `,"name":`...)
		b = AppendJSONString(b, w.Name)
	}
	b = append(b, `,"queue":`...)
	b = AppendJSONString(b, w.Queue)
	b = append(b, `,"region":`...)
	b = AppendJSONString(b, w.Region)
	b = append(b, `,"status":`...)
	b = AppendJSONString(b, string(w.Status))
	b = append(b, `,"skill":`...)
	b = AppendJSONFloat(b, w.Skill)
	b = append(b, `,"estimated":`...)
	b = strconv.AppendBool(b, w.Estimated)
	if len(w.Attributes) > 0 {
		b = append(b, `,"attributes":`...)
		b = AppendJSONStringMap(b, w.Attributes)
	}
	b = append(b, `,"enqueuedAt":`...)
	b = w.EnqueuedAt.appendJSON(b)
	b = append(b, `,"deadline":`...)
	b = w.Deadline.appendJSON(b)
	b = append(b, `,"matchId":`...)
	b = appendJSONStringPtr(b, w.MatchID)
	b = append(b, `,"cancelReason":`...)
	b = appendJSONStringPtr(b, w.CancelReason)
	b = append(b, `,"updatedAt":`...)
	b = w.UpdatedAt.appendJSON(b)
	b = append(b, `,"version":`...)
	b = strconv.AppendInt(b, w.Version, 10)
	if len(w.Relaxed) > 0 {
		b = append(b, `,"relaxed":[`...)
		for i, c := range w.Relaxed {
			if i > 0 {
				b = append(b, ',')
			}
			b = AppendJSONString(b, c)
		}
		b = append(b, ']')
	}
	return append(b, '}')
}

// AppendJSON appends w as json.Marshal(w) writes it.
func (w WireMatch) AppendJSON(b []byte) []byte {
	b = append(b, `{"id":`...)
	b = AppendJSONString(b, w.ID)
	b = append(b, `,"queue":`...)
	b = AppendJSONString(b, w.Queue)
	b = append(b, `,"region":`...)
	b = AppendJSONString(b, w.Region)
	b = append(b, `,"state":`...)
	b = AppendJSONString(b, w.State)
	b = append(b, `,"formedBy":`...)
	b = AppendJSONString(b, w.FormedBy)
	b = append(b, `,"players":`...)
	if w.Players == nil {
		b = append(b, "null"...)
	} else {
		b = append(b, '[')
		for i, p := range w.Players {
			if i > 0 {
				b = append(b, ',')
			}
			b = appendPlayer(b, p)
		}
		b = append(b, ']')
	}
	if w.Provider != nil {
		b = append(b, `,"provider":`...)
		b = AppendProviderSeat(b, w.Provider)
	}
	b = append(b, `,"bots":`...)
	b = strconv.AppendInt(b, int64(w.Bots), 10)
	b = append(b, `,"spread":`...)
	b = AppendJSONFloat(b, w.Spread)
	b = append(b, `,"server":`...)
	if w.Server == nil {
		b = append(b, "null"...)
	} else {
		b = append(b, `{"address":`...)
		b = AppendJSONString(b, w.Server.Address)
		b = append(b, `,"session":`...)
		b = AppendJSONString(b, w.Server.Session)
		b = append(b, '}')
	}
	b = append(b, `,"acceptBy":`...)
	if w.AcceptBy == nil {
		b = append(b, "null"...)
	} else {
		b = w.AcceptBy.appendJSON(b)
	}
	b = append(b, `,"accepted":`...)
	if w.Accepted == nil {
		b = append(b, "null"...)
	} else {
		b = append(b, '[')
		for i, u := range w.Accepted {
			if i > 0 {
				b = append(b, ',')
			}
			b = AppendJSONString(b, u)
		}
		b = append(b, ']')
	}
	b = append(b, `,"createdAt":`...)
	b = w.CreatedAt.appendJSON(b)
	b = append(b, `,"version":`...)
	b = strconv.AppendInt(b, w.Version, 10)
	return append(b, '}')
}

// AppendJSON appends r as json.Marshal(r) writes it. An error's member,
// rarer, is left to json.Marshal, which cannot fail on its strings and
// ints.
func (r Reply) AppendJSON(b []byte) []byte {
	b = append(b, `{"type":`...)
	b = AppendJSONString(b, r.Type)
	if r.Re != "" {
		b = append(b, `,"re":`...)
		b = AppendJSONString(b, r.Re)
	}
	if r.Ticket != nil {
		b = append(b, `,"ticket":`...)
		b = r.Ticket.AppendJSON(b)
	}
	if r.Match != nil {
		b = append(b, `,"match":`...)
		b = r.Match.AppendJSON(b)
	}
	if r.Position != nil {
		b = append(b, `,"position":`...)
		b = r.Position.AppendJSON(b)
	}
	if r.Error != nil {
		e, _ := json.Marshal(r.Error)
		b = append(append(b, `,"error":`...), e...)
	}
	return append(b, '}')
}

func appendPlayer(b []byte, p matcher.Player) []byte {
	b = append(b, `{"ticketId":`...)
	b = AppendJSONString(b, p.TicketID)
	b = append(b, `,"userId":`...)
	b = AppendJSONString(b, p.UserID)
	if p.Name != "" {
		b = append(b, `,"name":`...)
		b = AppendJSONString(b, p.Name)
	}
	b = append(b, `,"skill":`...)
	b = AppendJSONFloat(b, p.Skill)
	return append(b, '}')
}

// appendJSON appends what t.MarshalJSON returns. The layout is written by
// hand: AppendFormat walks the layout on every call, and that was some 40%
// of encoding a ticket.update.
func (t wireTime) appendJSON(b []byte) []byte {
	tt := time.Time(t)
	if tt.IsZero() {
		return append(b, "null"...)
	}
	tt = tt.UTC()
	year, month, day := tt.Date()
	if year < 0 || year > 9999 { // not four digits: left to the formatter
		b = append(b, '"')
		b = tt.AppendFormat(b, wireTimeLayout)
		return append(b, '"')
	}
	hour, minute, sec := tt.Clock()
	ms := tt.Nanosecond() / 1e6 // truncated, as the formatter does
	b = append(b, '"')
	b = appendTwoDigits(b, year/100)
	b = appendTwoDigits(b, year%100)
	b = append(b, '-')
	b = appendTwoDigits(b, int(month))
	b = append(b, '-')
	b = appendTwoDigits(b, day)
	b = append(b, 'T')
	b = appendTwoDigits(b, hour)
	b = append(b, ':')
	b = appendTwoDigits(b, minute)
	b = append(b, ':')
	b = appendTwoDigits(b, sec)
	b = append(b, '.', byte('0'+ms/100))
	b = appendTwoDigits(b, ms%100)
	return append(b, 'Z', '"')
}

func appendTwoDigits(b []byte, v int) []byte {
	return append(b, byte('0'+v/10), byte('0'+v%10))
}

func appendJSONStringPtr(b []byte, s *string) []byte {
	if s == nil {
		return append(b, "null"...)
	}
	return AppendJSONString(b, *s)
}

// AppendJSONStringMap appends m as json.Marshal writes a map that is not
// nil: the keys sorted, so that equal maps give equal bytes.
func AppendJSONStringMap(b []byte, m map[string]string) []byte {
	var onStack [8]string // tickets carry a few attributes: no allocation
	keys := onStack[:0]
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	b = append(b, '{')
	for i, k := range keys {
		if i > 0 {
			b = append(b, ',')
		}
		b = AppendJSONString(b, k)
		b = append(b, ':')
		b = AppendJSONString(b, m[k])
	}
	return append(b, '}')
}

// AppendJSONFloatMap appends m as json.Marshal writes a map[string]float64
// that is not nil: the keys sorted. Its values must be finite (see
// AppendJSONFloat).
func AppendJSONFloatMap(b []byte, m map[string]float64) []byte {
	var onStack [8]string // a provider's score has a few terms: no allocation
	keys := onStack[:0]
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	b = append(b, '{')
	for i, k := range keys {
		if i > 0 {
			b = append(b, ',')
		}
		b = AppendJSONString(b, k)
		b = append(b, ':')
		b = AppendJSONFloat(b, m[k])
	}
	return append(b, '}')
}

// AppendProviderSeat appends p as json.Marshal writes a
// matcher.ProviderSeat. Its score and parts must be finite: the ledger
// refuses others at the commit.
func AppendProviderSeat(b []byte, p *matcher.ProviderSeat) []byte {
	b = append(b, `{"userId":`...)
	b = AppendJSONString(b, p.UserID)
	b = append(b, `,"score":`...)
	b = AppendJSONFloat(b, p.Score)
	if len(p.Parts) > 0 {
		b = append(b, `,"parts":`...)
		b = AppendJSONFloatMap(b, p.Parts)
	}
	return append(b, '}')
}

// jsonSafe marks the ASCII bytes encoding/json copies as they are: with its
// default HTML escaping, everything but the control bytes, '"', '\\', '<',
// '>' and '&'.
var jsonSafe = func() (safe [utf8.RuneSelf]bool) {
	for c := 0x20; c < utf8.RuneSelf; c++ {
		safe[c] = true
	}
	for _, c := range `"\<>&` {
		safe[c] = false
	}
	return safe
}()

const lowerHex = "0123456789abcdef"

// AppendJSONString appends s as a JSON string exactly as json.Marshal
// writes it, HTML escaping included: the frames echo client-supplied text,
// and a frame must not depend on which encoder produced it.
func AppendJSONString(b []byte, s string) []byte {
	b = append(b, '"')
	start := 0
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			if jsonSafe[c] {
				i++
				continue
			}
			b = append(b, s[start:i]...)
			switch c {
			case '"', '\\':
				b = append(b, '\\', c)
			case '\b':
				b = append(b, '\\', 'b')
			case '\f':
				b = append(b, '\\', 'f')
			case '\n':
				b = append(b, '\\', 'n')
			case '\r':
				b = append(b, '\\', 'r')
			case '\t':
				b = append(b, '\\', 't')
			default:
				b = append(b, '\\', 'u', '0', '0', lowerHex[c>>4], lowerHex[c&0xf])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && size == 1:
			b = append(b, s[start:i]...)
			b = append(b, `\ufffd`...)
		case r == '\u2028' || r == '\u2029':
			// Valid JSON, but they end a line in JavaScript (JSONP).
			b = append(b, s[start:i]...)
			b = append(b, '\\', 'u', '2', '0', '2', lowerHex[r&0xf])
		default:
			i += size
			continue
		}
		i += size
		start = i
	}
	b = append(b, s[start:]...)
	return append(b, '"')
}

// AppendJSONFloat appends f as encoding/json writes a float64 (the ES6
// number format). f must be finite: json.Marshal refuses NaN and ±Inf, and
// the skills and spreads of the frames are validated before they get this
// far, so they are not checked again (a caller that must refuse them as
// json.Marshal does checks first).
func AppendJSONFloat(b []byte, f float64) []byte {
	format := byte('f')
	if abs := math.Abs(f); abs != 0 && (abs < 1e-6 || abs >= 1e21) {
		format = 'e'
	}
	b = strconv.AppendFloat(b, f, format, -1, 64)
	if format == 'e' {
		// encoding/json writes e-7, not e-07.
		if n := len(b); n >= 4 && b[n-4] == 'e' && b[n-3] == '-' && b[n-2] == '0' {
			b[n-2] = b[n-1]
			b = b[:n-1]
		}
	}
	return b
}
