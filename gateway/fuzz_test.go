package gateway

import (
	"bytes"
	"encoding/json"
	"errors"
	"net/netip"
	"reflect"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/golang-jwt/jwt/v5"

	"github.com/matchgate/matchgate/matcher"
	"github.com/matchgate/matchgate/protocol"
)

// The fuzz targets of the edge: every decoder a client's bytes reach. Their
// seed corpora are in testdata/fuzz/<name>/ and run with every go test; run
// one for longer with
//
//	go test -run '^$' -fuzz FuzzDecodeFrame -fuzztime 30s ./gateway/

// requireBadRequest fails unless err is a BAD_REQUEST domain error: a
// client's bytes may be refused, never answered INTERNAL.
func requireBadRequest(t *testing.T, err error) {
	t.Helper()
	var de *matcher.Error
	if !errors.As(err, &de) || de.Code != matcher.CodeBadRequest {
		t.Fatalf("error %v is not BAD_REQUEST", err)
	}
}

// FuzzDecodeFrame: the WebSocket frame decoder never panics, refuses only
// with BAD_REQUEST, and what it accepts is a bounded frame that survives a
// round trip.
func FuzzDecodeFrame(f *testing.F) {
	for _, s := range []string{
		`{"type":"join","id":"1","queue":"duel","region":"eu","attributes":{"mode":"duo"}}`,
		`{"type":"cancel","id":"2","ticketId":"0b6c4d7e-1111-2222-3333-444455556666"}`,
		`{"type":"accept","id":"3","matchId":"m"}`, `{"type":"ping"}`, `{"type":"status","id":""}`,
		`{"type":"ping","type":"join"}`, `{"type":"join","attributes":{"a":"1","a":"2"}}`,
		`{"type":"cancel","queue":"x"}`, `[]`, `{}`, `{"type":`, "{\"id\":\"\xff\"}", `{"a":[[[[[[[[[[1]]]]]]]]]]}`,
		// Empty attributes are not absent ones (another command's frame
		// refuses them): the round trip must keep them.
		`{"type":"join","id":"4","queue":"duel","attributes":{}}`,
		`{"type":"enter","id":"5","queue":"drop"}`, `{"type":"position","id":"6","queue":"drop"}`,
		`{"type":"leave","id":"7","queue":"drop","ticketId":"t"}`, `{"type":"enter","queue":"drop","queue":"x"}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		in, err := decodeFrame(data)
		if len(in.ID) > maxClientIDLen {
			t.Fatalf("an id of %d bytes came through", len(in.ID))
		}
		if err != nil {
			requireBadRequest(t, err)
			return
		}
		if foreignField(in) != "" {
			t.Fatalf("accepted a foreign field: %+v", in)
		}
		b, err := json.Marshal(in)
		if err != nil {
			t.Fatal(err)
		}
		again, err := decodeFrame(b)
		if err != nil || !reflect.DeepEqual(in, again) {
			t.Fatalf("round trip: %+v → %s → %+v, %v", in, b, again, err)
		}
	})
}

// FuzzRESTBody: every REST body decoder (the first byte picks one) never
// panics and refuses only with BAD_REQUEST; an accepted join body passes
// or fails the attribute check without panicking, and an accepted enter
// body is empty.
func FuzzRESTBody(f *testing.F) {
	for _, s := range []string{
		"\x00" + `{"region":"eu","attributes":{"mode":"duo"}}`,
		"\x00" + `{"attributes":{"a":"\u0000"}}`,
		"\x01" + `{"name":"Ada","skill":1450}`,
		"\x01" + `{"skill":1e400}`,
		"\x02" + `{"reason":"spam","duration":"24h"}`,
		"\x02" + `{"until":"2099-01-01T00:00:00Z"}`,
		"\x03" + `{"kind":"room","players":3,"window":[{"after":"0s","width":5}]}`,
		"\x04" + `{"token":"0123456789abcdef0123456789abcdef"}`,
		"\x04" + `{"token":"a","token":"b"}`,
		"\x05{}", "\x05" + `{"queue":"drop"}`, "\x05 ",
		"\x00", "\x00 ", "\x00{}{}", "\x01null", "\x02[]",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		if len(data) == 0 {
			return
		}
		body := data[1:]
		var err error
		switch data[0] % 6 {
		case 0:
			var v protocol.JoinBody
			if err = decodeStrict(body, &v, true); err == nil {
				if aerr := validateAttributes(v.Attributes); aerr != nil {
					requireBadRequest(t, aerr)
				}
			}
		case 1:
			var v guestRequest
			err = decodeStrict(body, &v, true)
		case 2:
			var v banBody
			err = decodeStrict(body, &v, true)
		case 3:
			var v json.RawMessage
			err = decodeStrict(body, &v, true)
		case 4:
			var v protocol.TokenRequest
			err = decodeStrict(body, &v, true)
		case 5:
			// The enter body: nothing, or an object without members.
			err = decodeStrict(body, &struct{}{}, true)
			if err == nil && len(bytes.TrimSpace(body)) > 0 {
				var m map[string]any
				if json.Unmarshal(body, &m) != nil || len(m) != 0 {
					t.Fatalf("enter body %q accepted", body)
				}
			}
		}
		if err != nil {
			requireBadRequest(t, err)
		}
	})
}

// fuzzKey signs the seed tokens of FuzzParseToken.
var fuzzKey = []byte("fuzz-secret-0123456789abcdef")

// FuzzParseToken: the token parser never panics, and whatever it accepts
// has a printable subject of bounded length and finite numbers.
func FuzzParseToken(f *testing.F) {
	srv, err := New(Config{Matchmaker: &fakeMatchmaker{}, Subscriber: newFakeSubscriber(), Secret: fuzzKey,
		Keys: map[string][]byte{"k1": []byte("fuzz-rotated-key-0123456789")}, Now: func() time.Time { return time.Unix(1_700_000_000, 0) }})
	if err != nil {
		f.Fatal(err)
	}
	now := time.Unix(1_700_000_000, 0)
	sign := func(m jwt.SigningMethod, key any, kid string, c jwt.MapClaims) string {
		tok := jwt.NewWithClaims(m, c)
		if kid != "" {
			tok.Header["kid"] = kid
		}
		s, err := tok.SignedString(key)
		if err != nil {
			f.Fatal(err)
		}
		return s
	}
	valid := jwt.MapClaims{"sub": "alice", "exp": now.Add(time.Hour).Unix(), "skill": 1500.0}
	for _, s := range []string{
		sign(jwt.SigningMethodHS256, fuzzKey, "", valid),
		sign(jwt.SigningMethodHS256, []byte("fuzz-rotated-key-0123456789"), "k1", valid),
		sign(jwt.SigningMethodHS256, fuzzKey, "k2", valid),
		sign(jwt.SigningMethodHS512, fuzzKey, "", valid),
		sign(jwt.SigningMethodNone, jwt.UnsafeAllowNoneSignatureType, "", valid),
		sign(jwt.SigningMethodHS256, fuzzKey, "", jwt.MapClaims{"sub": "a\x00", "exp": now.Add(time.Hour).Unix()}),
		sign(jwt.SigningMethodHS256, fuzzKey, "", jwt.MapClaims{"sub": "a", "exp": 1e300, "priority": -1}),
		"", "a.b.c", "eyJhbGciOiJIUzI1NiJ9..", strings.Repeat("A", 100),
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, raw string) {
		p, err := srv.parseToken(raw)
		if err != nil {
			if p != (principal{}) {
				t.Fatalf("refused with a principal: %+v", p)
			}
			return
		}
		if p.UserID == "" || len(p.UserID) > maxUserIDLen || !printable(p.UserID) {
			t.Fatalf("accepted subject %q", p.UserID)
		}
	})
}

// FuzzForwardedFor: resolving the client address never panics, yields a
// valid address, and believes the header only from a trusted peer.
func FuzzForwardedFor(f *testing.F) {
	f.Add("127.0.0.1", "203.0.113.7, 10.0.0.1")
	f.Add("127.0.0.1", "[2001:db8::1]:80,junk")
	f.Add("10.0.0.1", "fe80::1%eth0")
	f.Add("192.0.2.1", "")
	trusted := []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8"), netip.MustParsePrefix("10.0.0.0/8")}
	f.Fuzz(func(t *testing.T, peer, header string) {
		p, err := netip.ParseAddr(peer)
		if err != nil {
			return
		}
		got := forwardedFor(p, []string{header}, trusted)
		if !got.IsValid() {
			t.Fatalf("invalid address from %q %q", peer, header)
		}
		if !inPrefixes(p, trusted) && got != p {
			t.Fatalf("an untrusted peer %s set its address to %s", p, got)
		}
		if got != p && got.Zone() != "" {
			t.Fatalf("a zoned address %s from the header", got)
		}
	})
}

// checkKeysReference is the straightforward version of checkKeys, walking
// encoding/json's tokens: the oracle FuzzCheckKeys compares checkKeys with.
func checkKeysReference(data []byte) error {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	type level struct {
		object bool
		keys   map[string]bool
		key    bool // object: the next token is a key
	}
	var stack []*level
	for first := true; ; first = false {
		tok, err := dec.Token()
		if err != nil {
			return nil
		}
		d, isDelim := tok.(json.Delim)
		if first && (!isDelim || d != '{') {
			return errors.New("not an object")
		}
		if n := len(stack); n > 0 && stack[n-1].object && stack[n-1].key && !isDelim {
			k := tok.(string)
			if stack[n-1].keys[k] {
				return errors.New("duplicate")
			}
			stack[n-1].keys[k], stack[n-1].key = true, false
			continue
		}
		if isDelim && (d == '{' || d == '[') {
			if len(stack) >= maxJSONDepth {
				return errors.New("deep")
			}
			stack = append(stack, &level{object: d == '{', keys: map[string]bool{}, key: d == '{'})
			continue
		}
		if isDelim {
			stack = stack[:len(stack)-1]
			if len(stack) == 0 {
				return nil
			}
		}
		if n := len(stack); n > 0 && stack[n-1].object {
			stack[n-1].key = true
		}
	}
}

// FuzzCheckKeys: on valid JSON, the scanner and the token walk agree on
// duplicate keys, depth and the top level.
func FuzzCheckKeys(f *testing.F) {
	for _, s := range []string{
		`{"a":1,"a":2}`, `{"a":{"b":1,"b":2}}`, `{"a":1,"\u0061":2}`, `{"a":[{"x":1},{"x":1}]}`,
		`{"a":[[[[[[[[1]]]]]]]]}`, `{"a":"\"}","b":"{\"a\":1,\"a\":2}"}`, `[]`, `1`, `{}`, ` {"k" : true , "l":null} `,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		got := checkKeys(data, nil)
		// decodeStrict refuses invalid UTF-8 before checkKeys sees it; the
		// token walk would read every invalid byte as U+FFFD, so "\xb0" and
		// "\xaf" would be one key to it.
		if !json.Valid(data) || !utf8.Valid(data) {
			return
		}
		want := checkKeysReference(data)
		if (got == nil) != (want == nil) {
			t.Fatalf("checkKeys(%q) = %v, the token walk says %v", data, got, want)
		}
	})
}
