package engine

import (
	"context"
	"time"

	"github.com/matchgate/matchgate/matcher"
	"github.com/prometheus/client_golang/prometheus"
)

// PoolCollector exposes each pool's depth and oldest wait, read from Redis
// at scrape time so that no pass pays for them.
type PoolCollector struct {
	pool   Pool
	queues func() []matcher.QueueConfig
	now    func() time.Time
	depth  *prometheus.Desc
	oldest *prometheus.Desc
}

// NewPoolCollector builds the collector; queues returns the queues in force.
func NewPoolCollector(p Pool, queues func() []matcher.QueueConfig) *PoolCollector {
	return &PoolCollector{
		pool: p, queues: queues, now: time.Now,
		depth: prometheus.NewDesc("matchgate_queue_depth", "Tickets waiting in a pool.",
			[]string{"queue", "region", "pool"}, nil),
		oldest: prometheus.NewDesc("matchgate_queue_oldest_wait_seconds", "Wait of the longest waiter of a pool.",
			[]string{"queue", "region", "pool"}, nil),
	}
}

// Describe implements prometheus.Collector.
func (c *PoolCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- c.depth
	ch <- c.oldest
}

// Collect implements prometheus.Collector; a pool Redis cannot answer for
// is left out of the scrape rather than reported as empty.
func (c *PoolCollector) Collect(ch chan<- prometheus.Metric) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	now := c.now()
	for _, q := range c.queues() {
		for _, r := range q.Regions {
			for _, p := range q.Pools(r) {
				part := p.String()
				n, err := c.pool.Size(ctx, part)
				if err != nil {
					continue
				}
				ch <- prometheus.MustNewConstMetric(c.depth, prometheus.GaugeValue, float64(n), q.Name, r, p.Shard)
				wait := 0.0
				if old, err := c.pool.Oldest(ctx, part, 1); err == nil && len(old) == 1 {
					wait = now.Sub(old[0].Enqueue).Seconds()
				}
				ch <- prometheus.MustNewConstMetric(c.oldest, prometheus.GaugeValue, wait, q.Name, r, p.Shard)
			}
		}
	}
}
