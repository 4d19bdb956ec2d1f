package gateway

import (
	"context"
	"encoding/json"
	"log/slog"
	"sync"

	"github.com/matchgate/matchgate/protocol"
)

// resyncConcurrency bounds the state loads of one Resync.
const resyncConcurrency = 16

// Resync sends every open socket a fresh hello with its user's current
// state. Call it when pushes may have been lost — the pub/sub connection was
// down and has just come back — so that connected players catch up without
// reconnecting. A socket whose state cannot be loaded keeps its session; it
// will catch up on its next reconnect.
func (s *Server) Resync(ctx context.Context) {
	s.mu.Lock()
	open := s.snapshotLocked()
	s.mu.Unlock()
	sem := make(chan struct{}, resyncConcurrency)
	var wg sync.WaitGroup
	for _, sess := range open {
		if !sess.reading.Load() {
			continue // its own hello is still on the way
		}
		select {
		case sem <- struct{}{}:
		case <-ctx.Done():
			wg.Wait()
			return
		}
		wg.Go(func() {
			defer func() { <-sem }()
			cctx, cancel := context.WithTimeout(ctx, s.cfg.CommandTimeout)
			st, err := s.cfg.Matchmaker.UserState(cctx, sess.p.UserID)
			cancel()
			if err != nil {
				s.log.Warn("resync: load user state", slog.String("user", sess.p.UserID), slog.Any("error", err))
				return
			}
			hello := protocol.StateOf(protocol.FrameHello, "", st)
			hello.UserID, hello.Node = sess.p.UserID, s.cfg.Node
			b, err := json.Marshal(hello)
			if err != nil {
				s.log.Error("resync: encode hello", slog.Any("error", err))
				return
			}
			sess.push(b)
		})
	}
	wg.Wait()
}
