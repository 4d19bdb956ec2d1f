package gateway

import (
	"bufio"
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"io"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/matchgate/matchgate/matcher"
)

// smallBuffers swaps net/http's 4 KiB buffers for smaller ones and keeps
// the bytes read ahead of the upgrade, which coder/websocket reads first.
func TestSmallBuffersKeepTheBytesReadAhead(t *testing.T) {
	server, client := net.Pipe()
	defer server.Close()
	defer client.Close()
	br := bufio.NewReaderSize(io.MultiReader(strings.NewReader("ahead"), server), 4096)
	if _, err := br.Peek(5); err != nil {
		t.Fatal(err)
	}
	got := smallBuffers(server, bufio.NewReadWriter(br, bufio.NewWriterSize(server, 4096)))
	if r, w := got.Reader.Size(), got.Writer.Size(); r != wsReadBuffer || w != wsWriteBuffer {
		t.Fatalf("buffers of %d and %d bytes, want %d and %d", r, w, wsReadBuffer, wsWriteBuffer)
	}
	if n := got.Reader.Buffered(); n != 5 {
		t.Fatalf("%d bytes buffered, want the 5 read ahead", n)
	}
	go func() { _, _ = client.Write([]byte("-then-more")) }()
	buf := make([]byte, len("ahead-then-more"))
	if _, err := io.ReadFull(got.Reader, buf); err != nil || string(buf) != "ahead-then-more" {
		t.Fatalf("read %q, %v", buf, err)
	}

	// More read ahead than the small reader holds: net/http's are kept.
	big := strings.Repeat("x", wsReadBuffer+1)
	br = bufio.NewReaderSize(strings.NewReader(big), 4096)
	if _, err := br.Peek(len(big)); err != nil {
		t.Fatal(err)
	}
	brw := bufio.NewReadWriter(br, bufio.NewWriterSize(server, 4096))
	if got := smallBuffers(server, brw); got != brw {
		t.Fatal("replaced a reader holding more than the small one holds")
	}
}

// A client that sends its first frame in the same packet as the upgrade
// request is answered, and frames larger than the buffers pass both ways.
func TestFramesAroundTheSmallBuffers(t *testing.T) {
	env := startServer(t, Config{})
	// A hello larger than the write buffer: the user waits in many queues.
	var tickets []matcher.Ticket
	for i := range 40 {
		tickets = append(tickets, matcher.Ticket{ID: fmt.Sprintf("ticket-%02d", i), UserID: "ahead", Queue: "duel", Region: "eu", Status: matcher.StatusWaiting})
	}
	env.mm.userState = func(context.Context, string) (matcher.UserState, error) {
		return matcher.UserState{Tickets: tickets}, nil
	}
	conn, err := net.Dial("tcp", strings.TrimPrefix(env.base, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	_ = conn.SetDeadline(time.Now().Add(10 * time.Second))
	var req bytes.Buffer
	fmt.Fprintf(&req, "GET /v1/ws HTTP/1.1\r\nHost: %s\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"+
		"Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\nAuthorization: Bearer %s\r\n\r\n",
		strings.TrimPrefix(env.base, "http://"), mustToken(t, "ahead", nil))
	req.Write(clientFrame([]byte(`{"type":"nosuch","id":"first"}`)))
	if _, err := conn.Write(req.Bytes()); err != nil {
		t.Fatal(err)
	}
	br := bufio.NewReader(conn)
	status, err := br.ReadString('\n')
	if err != nil || !strings.Contains(status, "101") {
		t.Fatalf("upgrade answered %q, %v", status, err)
	}
	for {
		line, err := br.ReadString('\n')
		if err != nil {
			t.Fatal(err)
		}
		if line == "\r\n" {
			break
		}
	}
	hello := serverFrame(t, br)
	if len(hello) <= wsWriteBuffer || !strings.Contains(string(hello), `"type":"hello"`) || !strings.Contains(string(hello), "ticket-39") {
		t.Fatalf("hello of %d bytes = %.200s, want every ticket in more than %d", len(hello), hello, wsWriteBuffer)
	}
	if f := serverFrame(t, br); !strings.Contains(string(f), `"re":"first"`) {
		t.Fatalf("answer to the first frame = %.200s", f)
	}
	// A frame larger than the read buffer.
	pad := strings.Repeat("p", 2*wsReadBuffer)
	if _, err := conn.Write(clientFrame([]byte(`{"type":"nosuch","id":"second","pad":"` + pad + `"}`))); err != nil {
		t.Fatal(err)
	}
	if f := serverFrame(t, br); !strings.Contains(string(f), `"re":"second"`) {
		t.Fatalf("answer to the large frame = %.200s", f)
	}
}

// clientFrame is a masked text frame holding p.
func clientFrame(p []byte) []byte {
	var b bytes.Buffer
	b.WriteByte(0x81)
	switch {
	case len(p) < 126:
		b.WriteByte(0x80 | byte(len(p)))
	default:
		b.WriteByte(0x80 | 126)
		_ = binary.Write(&b, binary.BigEndian, uint16(len(p)))
	}
	key := [4]byte{1, 2, 3, 4}
	b.Write(key[:])
	for i, c := range p {
		b.WriteByte(c ^ key[i%4])
	}
	return b.Bytes()
}

// serverFrame reads one unmasked frame's payload.
func serverFrame(t *testing.T, br *bufio.Reader) []byte {
	t.Helper()
	var h [2]byte
	if _, err := io.ReadFull(br, h[:]); err != nil {
		t.Fatal(err)
	}
	n := int(h[1] & 0x7f)
	switch n {
	case 126:
		var l uint16
		if err := binary.Read(br, binary.BigEndian, &l); err != nil {
			t.Fatal(err)
		}
		n = int(l)
	case 127:
		var l uint64
		if err := binary.Read(br, binary.BigEndian, &l); err != nil {
			t.Fatal(err)
		}
		n = int(l)
	}
	p := make([]byte, n)
	if _, err := io.ReadFull(br, p); err != nil {
		t.Fatal(err)
	}
	return p
}
