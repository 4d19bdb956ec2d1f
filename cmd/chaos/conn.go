package main

import (
	"context"
	"encoding/json"
	"net/http"
	"time"

	"github.com/coder/websocket"
)

// rxFrame is a frame as read off the socket, stamped at once.
type rxFrame struct {
	at  time.Time
	raw []byte
}

// wsConn is one player socket: a reader goroutine stamps every frame and
// hands it over on frames, which it closes when reading ends. The owner
// must drain frames after closing the socket, so the reader can exit.
type wsConn struct {
	conn   *websocket.Conn
	addr   string
	frames chan rxFrame
}

// writeTimeout bounds every write (STYLE 8).
const writeTimeout = 5 * time.Second

func dialWS(ctx context.Context, addr, token string) (*wsConn, error) {
	dctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	c, _, err := websocket.Dial(dctx, "ws://"+addr+"/v1/ws", &websocket.DialOptions{
		HTTPHeader: http.Header{"Authorization": []string{"Bearer " + token}},
	})
	if err != nil {
		return nil, err
	}
	c.SetReadLimit(1 << 20) // a hello lists every recent ticket and match
	w := &wsConn{conn: c, addr: addr, frames: make(chan rxFrame, 256)}
	go w.readLoop()
	return w, nil
}

// readLoop reads until the socket fails or closes. Reading continuously is
// also what answers the server's protocol pings.
func (w *wsConn) readLoop() {
	defer close(w.frames)
	for {
		_, b, err := w.conn.Read(context.Background())
		if err != nil {
			return
		}
		w.frames <- rxFrame{at: time.Now(), raw: b}
	}
}

func (w *wsConn) send(ctx context.Context, f outFrame) error {
	b, err := json.Marshal(f)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, writeTimeout)
	defer cancel()
	return w.conn.Write(ctx, websocket.MessageText, b)
}

// drop ends the socket without a close handshake, as a client that loses
// its network would.
func (w *wsConn) drop() { _ = w.conn.CloseNow() }

// close ends the socket politely (a bounded close handshake).
func (w *wsConn) close() {
	done := make(chan struct{})
	go func() {
		_ = w.conn.Close(websocket.StatusNormalClosure, "chaos run over")
		close(done)
	}()
	select {
	case <-done:
	case <-time.After(writeTimeout):
		_ = w.conn.CloseNow()
	}
}
