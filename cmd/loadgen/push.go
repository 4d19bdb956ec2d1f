package main

import (
	"context"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/matchgate/matchgate/notify"
)

// pushPhase publishes frames to connected players' channels through Redis,
// as the matcher's publisher does after a commit, at PushRate for Duration.
// Each frame carries its publish time; the receiving player records the
// delivery latency (publish → Redis → the gateway's shared subscription →
// the socket's writer → the client).
func (r *runner) pushPhase(ctx context.Context) {
	r.setPhase(phaseRun)
	start := time.Now()
	defer func() {
		r.runEnd = time.Now()
		r.runSeconds = r.runEnd.Sub(start).Seconds()
	}()
	opts, err := redis.ParseURL(r.cfg.RedisURL)
	if err != nil {
		r.stats.label(lErrors, "redis_url")
		return
	}
	opts.PoolSize = 4
	rdb := redis.NewClient(opts)
	defer rdb.Close()
	rng := r.rand()
	var connected []*player
	for _, p := range r.players[:r.cfg.Sockets] {
		p.mu.Lock()
		if p.connected {
			connected = append(connected, p)
		}
		p.mu.Unlock()
	}
	if len(connected) == 0 {
		return
	}
	channels := make([]string, len(connected))
	for i, p := range connected {
		user, _ := p.identity()
		channels[i] = notify.Channel(r.cfg.RedisPrefix, user)
	}
	pc := pacer{rate: r.cfg.PushRate}
	end := start.Add(r.cfg.Duration)
	issued := 0
	buf := make([]byte, 0, 64)
	for ctx.Err() == nil {
		now := time.Now()
		if !now.Before(end) {
			return
		}
		if n := pc.due(now.Sub(start)); n > issued {
			pipe := rdb.Pipeline()
			k := n - issued
			for ; issued < n; issued++ {
				buf = append(buf[:0], `{"type":"`+pushFrameType+`","sentAt":`...)
				buf = strconv.AppendInt(buf, time.Now().UnixNano(), 10)
				buf = append(buf, '}')
				pipe.Publish(ctx, channels[rng.IntN(len(channels))], string(buf))
			}
			if _, err := pipe.Exec(ctx); err != nil && ctx.Err() == nil {
				r.stats.label(lErrors, "redis_publish")
			} else {
				r.stats.add(cPushesSent, int64(k))
			}
		}
		sleepCtx(ctx, time.Millisecond)
	}
}
