package main

import (
	"context"
	"sync"
	"time"

	"github.com/matchgate/matchgate/client"
)

// rxFrame is a frame as read off the socket, stamped at once; or, with
// sent, a command as the client wrote it.
type rxFrame struct {
	at   time.Time
	raw  []byte
	sent bool
}

// wsConn is one player socket: a client/ Client that does not reconnect
// (the player does, as it decides). Every frame read and every command
// written is queued, stamped, as it happens (the client's OnFrame and
// OnSend, which must not block), and handed over in that order on frames,
// which is closed once the socket has ended and its commands returned. The
// owner must drain frames after closing the socket.
type wsConn struct {
	c      *client.Client
	addr   string
	frames chan rxFrame

	mu     sync.Mutex
	queue  []rxFrame
	ended  bool          // the socket is over: no command starts
	wake   chan struct{} // something was queued, or the socket ended
	cmds   sync.WaitGroup
	pumper sync.WaitGroup
}

// writeTimeout bounds every write (STYLE 8).
const writeTimeout = 5 * time.Second

// dialWS connects to a gateway and returns once the hello is read: it is
// the first of frames. first is the first frame read when the socket
// failed for it (it was not a hello), else nil.
func dialWS(ctx context.Context, addr, token string) (w *wsConn, first []byte, err error) {
	w = &wsConn{addr: addr, frames: make(chan rxFrame, 256), wake: make(chan struct{}, 1)}
	c, err := client.Dial(ctx, "ws://"+addr+"/v1/ws", client.StaticToken(token), &client.Options{
		DialTimeout:       writeTimeout + helloTimeout,
		RequestTimeout:    time.Hour, // the player times its requests (requestTimeout)
		PingInterval:      -1,        // the server pings; reading answers
		HeartbeatInterval: -1,
		DisableReconnect:  true,
		EventBuffer:       1,
		OnFrame:           func(b []byte, at time.Time) { w.push(rxFrame{at: at, raw: b}) },
		OnSend:            func(b []byte, at time.Time) { w.push(rxFrame{at: at, raw: b, sent: true}) },
		OnSession: func(s client.Session) {
			if !s.Up {
				w.end()
			}
		},
	})
	if err != nil {
		w.mu.Lock()
		if len(w.queue) > 0 {
			first = w.queue[0].raw
		}
		w.mu.Unlock()
		return nil, first, err
	}
	w.c = c
	w.pumper.Go(w.pump)
	return w, nil, nil
}

func (w *wsConn) push(rx rxFrame) {
	w.mu.Lock()
	if !w.ended {
		w.queue = append(w.queue, rx)
	}
	w.mu.Unlock()
	w.signal()
}

func (w *wsConn) end() {
	w.mu.Lock()
	w.ended = true
	w.mu.Unlock()
	w.signal()
}

func (w *wsConn) signal() {
	select {
	case w.wake <- struct{}{}:
	default:
	}
}

// pump hands the queue over on frames, and closes it once the socket has
// ended, its commands have returned and everything is handed over.
func (w *wsConn) pump() {
	defer close(w.frames)
	for {
		<-w.wake
		w.mu.Lock()
		q, ended := w.queue, w.ended
		w.queue = nil
		w.mu.Unlock()
		for _, rx := range q {
			w.frames <- rx
		}
		if ended {
			w.cmds.Wait()
			w.mu.Lock()
			q = w.queue
			w.mu.Unlock()
			for _, rx := range q {
				w.frames <- rx
			}
			return
		}
	}
}

// command runs a command on its own goroutine: the player reads its reply
// on frames, as it reads every frame. It reports false when the socket is
// over.
func (w *wsConn) command(run func(ctx context.Context, c *client.Client)) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.ended {
		return false
	}
	w.cmds.Go(func() { run(context.Background(), w.c) })
	return true
}

// drop ends the socket without a close handshake, as a client that loses
// its network would.
func (w *wsConn) drop() {
	w.c.Drop()
	_ = w.c.Close()
}

// close ends the socket politely (a bounded close handshake).
func (w *wsConn) close() {
	t := time.AfterFunc(writeTimeout, w.c.Drop)
	_ = w.c.Close()
	t.Stop()
}
