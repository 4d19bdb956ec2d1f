package admission

import (
	"context"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// Metrics are the admission queues' Prometheus collectors. Their one label
// besides the outcome is the queue, which only operators name (the queue
// file and the admin API), so the series are bounded.
//
// The counters count what this process did (its admitter's admissions,
// the tokens its record calls ended); the gauges (NewCollector) are the
// queue's as a whole, the same from every process that reports them.
type Metrics struct {
	admitted *prometheus.CounterVec
	tokens   *prometheus.CounterVec
}

// Token outcomes, the values of the outcome label of
// matchgate_admission_tokens_total.
const (
	OutcomeClaimed  = "claimed"
	OutcomeConsumed = "consumed"
	OutcomeReleased = "released"
	OutcomeExpired  = "expired"
)

// NewMetrics registers the admission counters with reg.
func NewMetrics(reg prometheus.Registerer) *Metrics {
	m := &Metrics{
		admitted: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "matchgate_admission_admitted_total", Help: "Waiters admitted (given an entry token) by this process's admitter.",
		}, []string{"queue"}),
		tokens: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "matchgate_admission_tokens_total", Help: "Entry tokens claimed, consumed, released or expired through this process.",
		}, []string{"queue", "outcome"}),
	}
	reg.MustRegister(m.admitted, m.tokens)
	return m
}

// Record returns r counting what its calls did: the admissions each Admit
// made (a place returned READY with one of the tokens it was given, so a
// retry that finds a place admitted before counts nothing) and the tokens
// each token call or Expire ended. The Service and the admitters take the
// counted record; a nil *Metrics returns r as it is.
func (m *Metrics) Record(r Record) Record {
	if m == nil {
		return r
	}
	return &countedRecord{Record: r, m: m}
}

type countedRecord struct {
	Record
	m *Metrics
}

func (c *countedRecord) Admit(ctx context.Context, queue string, epoch int64, admits []Admit, now time.Time, ttl time.Duration) ([]Place, error) {
	places, err := c.Record.Admit(ctx, queue, epoch, admits, now, ttl)
	if err != nil {
		return places, err
	}
	given := make(map[string]string, len(admits))
	for _, a := range admits {
		given[a.UserID] = a.Token
	}
	n := 0
	for _, p := range places {
		if p.Status == StatusReady && p.Token != "" && given[p.UserID] == p.Token {
			n++
		}
	}
	if n > 0 {
		c.m.admitted.WithLabelValues(queue).Add(float64(n))
	}
	return places, nil
}

func (c *countedRecord) Claim(ctx context.Context, queue, token string, now time.Time) (Place, error) {
	return c.count(queue, OutcomeClaimed)(c.Record.Claim(ctx, queue, token, now))
}

func (c *countedRecord) Consume(ctx context.Context, queue, token string, now time.Time) (Place, error) {
	return c.count(queue, OutcomeConsumed)(c.Record.Consume(ctx, queue, token, now))
}

func (c *countedRecord) Release(ctx context.Context, queue, token string, now time.Time) (Place, error) {
	return c.count(queue, OutcomeReleased)(c.Record.Release(ctx, queue, token, now))
}

func (c *countedRecord) count(queue, outcome string) func(Place, error) (Place, error) {
	return func(p Place, err error) (Place, error) {
		if err == nil {
			c.m.tokens.WithLabelValues(queue, outcome).Inc()
		}
		return p, err
	}
}

func (c *countedRecord) Expire(ctx context.Context, queue string, now time.Time, limit int) ([]Place, error) {
	places, err := c.Record.Expire(ctx, queue, now, limit)
	if err == nil && len(places) > 0 {
		c.m.tokens.WithLabelValues(queue, OutcomeExpired).Add(float64(len(places)))
	}
	return places, err
}

// Collector reports each admission queue's figures as gauges at every
// scrape, from the Service's measures (reused for a second, as the
// listing's are): the waiters in line, the measured admission rate, and
// the ETA's error.
type Collector struct {
	queues  func(context.Context) ([]QueueStats, error)
	waiting *prometheus.Desc
	rate    *prometheus.Desc
	etaErr  *prometheus.Desc
	samples *prometheus.Desc
}

// NewCollector builds the collector over queues (Service.Queues).
func NewCollector(queues func(context.Context) ([]QueueStats, error)) *Collector {
	return &Collector{
		queues: queues,
		waiting: prometheus.NewDesc("matchgate_admission_waiting", "Waiters in an admission queue's line.",
			[]string{"queue"}, nil),
		rate: prometheus.NewDesc("matchgate_admission_rate_per_second", "Admissions per second measured over the last minute (the configured rate until there are any).",
			[]string{"queue"}, nil),
		etaErr: prometheus.NewDesc("matchgate_admission_eta_error_ratio", "Error of the ETA given at entry, |admitted − predicted| ÷ wait, over the last 10 minutes' admissions, by quantile.",
			[]string{"queue", "quantile"}, nil),
		samples: prometheus.NewDesc("matchgate_admission_eta_error_admissions", "Admissions the ETA's error is measured over.",
			[]string{"queue"}, nil),
	}
}

// Describe implements prometheus.Collector.
func (c *Collector) Describe(ch chan<- *prometheus.Desc) {
	ch <- c.waiting
	ch <- c.rate
	ch <- c.etaErr
	ch <- c.samples
}

// Collect implements prometheus.Collector; when the figures cannot be read
// the queues are left out of the scrape rather than reported as empty.
func (c *Collector) Collect(ch chan<- prometheus.Metric) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	stats, err := c.queues(ctx)
	if err != nil {
		return
	}
	for _, st := range stats {
		q := st.Queue.Name
		ch <- prometheus.MustNewConstMetric(c.waiting, prometheus.GaugeValue, float64(st.Waiting), q)
		ch <- prometheus.MustNewConstMetric(c.rate, prometheus.GaugeValue, st.Rates.Mean, q)
		ch <- prometheus.MustNewConstMetric(c.samples, prometheus.GaugeValue, float64(st.ETAError.N), q)
		if st.ETAError.N > 0 {
			ch <- prometheus.MustNewConstMetric(c.etaErr, prometheus.GaugeValue, st.ETAError.P50, q, "0.5")
			ch <- prometheus.MustNewConstMetric(c.etaErr, prometheus.GaugeValue, st.ETAError.P90, q, "0.9")
		}
	}
}
