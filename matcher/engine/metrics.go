package engine

import (
	"time"

	"github.com/matchgate/matchgate/matcher"
	"github.com/prometheus/client_golang/prometheus"
)

// Metrics are the matcher's Prometheus collectors. A nil *Metrics records
// nothing, so tests need not build one. Labels are bounded by configuration
// (queue, region, formedBy, outcome), never by user input.
type Metrics struct {
	tick      *prometheus.HistogramVec
	matches   *prometheus.CounterVec
	outcomes  *prometheus.CounterVec
	wait      *prometheus.HistogramVec
	conflicts *prometheus.CounterVec
	joins     *prometheus.CounterVec
	leases    *prometheus.CounterVec
	accepts   *prometheus.CounterVec
	allocs    *prometheus.CounterVec
	skills    *prometheus.CounterVec
	moves     *prometheus.CounterVec
	allocTime *prometheus.HistogramVec
	slots     *prometheus.CounterVec
	shed      *prometheus.GaugeVec
}

// NewMetrics registers the matcher's collectors with reg.
func NewMetrics(reg prometheus.Registerer) *Metrics {
	m := &Metrics{
		tick: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name: "matchgate_tick_duration_seconds", Help: "Duration of one matching pass.",
			Buckets: prometheus.ExponentialBuckets(0.0005, 2, 14),
		}, []string{"queue", "region"}),
		matches: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "matchgate_matches_total", Help: "Matches formed, by how.",
		}, []string{"queue", "formed_by"}),
		outcomes: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "matchgate_tickets_resolved_total", Help: "Tickets resolved, by outcome.",
		}, []string{"queue", "outcome"}),
		wait: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name: "matchgate_join_to_match_seconds", Help: "Time from join to match formed.",
			Buckets: prometheus.ExponentialBuckets(0.001, 2.5, 14),
		}, []string{"queue", "formed_by"}),
		conflicts: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "matchgate_claim_conflicts_total", Help: "Claims lost to a cancel or another matcher.",
		}, []string{"queue"}),
		joins: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "matchgate_joins_total", Help: "Tickets created.",
		}, []string{"queue"}),
	}
	m.leases = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "matchgate_lease_events_total", Help: "Partition lease acquisitions, losses and releases.",
	}, []string{"partition", "event"})
	m.accepts = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "matchgate_accept_outcomes_total", Help: "Matches with an accept window, by how the window ended (ready, declined, accept_timeout).",
	}, []string{"queue", "outcome"})
	m.allocs = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "matchgate_allocations_total", Help: "Server allocations, by result (ok, failed: every attempt failed and the players went back).",
	}, []string{"queue", "result"})
	m.skills = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "matchgate_skill_lookups_total", Help: "Skill service lookups at join, by result (ok, last_known, default).",
	}, []string{"result"})
	m.moves = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "matchgate_pool_moves_total", Help: "Players promoted to an overflow pool or offered to an adjacent region.",
	}, []string{"queue", "kind"})
	m.allocTime = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name: "matchgate_allocation_duration_seconds", Help: "Time to get a server for a match, retries included.",
		Buckets: prometheus.ExponentialBuckets(0.0005, 2.5, 12),
	}, []string{"queue"})
	m.slots = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "matchgate_provider_slots_total", Help: "Provider slots a provider queue's pass asked for, by result (taken; full: the live pool had none free; refused: the record found the provider at capacity or the ticket assigned).",
	}, []string{"queue", "result"})
	m.shed = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "matchgate_provider_shed_tier", Help: "The shed tier a provider queue's last pass scored at (0: every term; i: the terms of the queue's shed tiers 1..i dropped).",
	}, []string{"queue", "region"})
	reg.MustRegister(m.tick, m.matches, m.outcomes, m.wait, m.conflicts, m.joins, m.leases, m.accepts, m.allocs, m.skills, m.moves, m.allocTime, m.slots, m.shed)
	return m
}

func (m *Metrics) acceptOutcome(queue, outcome string) {
	if m != nil {
		m.accepts.WithLabelValues(queue, outcome).Inc()
	}
}

func (m *Metrics) shedTier(queue, region string, tier int) {
	if m != nil {
		m.shed.WithLabelValues(queue, region).Set(float64(tier))
	}
}

func (m *Metrics) slot(queue, result string) {
	if m != nil {
		m.slots.WithLabelValues(queue, result).Inc()
	}
}

func (m *Metrics) allocationTook(queue string, d time.Duration) {
	if m != nil {
		m.allocTime.WithLabelValues(queue).Observe(d.Seconds())
	}
}

func (m *Metrics) allocation(queue, result string) {
	if m != nil {
		m.allocs.WithLabelValues(queue, result).Inc()
	}
}

func (m *Metrics) skillLookup(result string) {
	if m != nil {
		m.skills.WithLabelValues(result).Inc()
	}
}

func (m *Metrics) moved(queue, kind string, n int) {
	if m != nil && n > 0 {
		m.moves.WithLabelValues(queue, kind).Add(float64(n))
	}
}

func (m *Metrics) observeTick(queue, region string, d time.Duration) {
	if m != nil {
		m.tick.WithLabelValues(queue, region).Observe(d.Seconds())
	}
}

func (m *Metrics) matched(match matcher.Match, group []matcher.Entry, now time.Time) {
	if m == nil {
		return
	}
	m.matches.WithLabelValues(match.Queue, match.FormedBy).Inc()
	m.outcomes.WithLabelValues(match.Queue, string(matcher.StatusMatched)).Add(float64(len(group)))
	for _, g := range group {
		m.wait.WithLabelValues(match.Queue, match.FormedBy).Observe(now.Sub(g.Enqueue).Seconds())
	}
}

// Outcome counts a ticket resolved as outcome.
func (m *Metrics) Outcome(queue, outcome string) {
	if m != nil {
		m.outcomes.WithLabelValues(queue, outcome).Inc()
	}
}

func (m *Metrics) claimConflict(queue string) {
	if m != nil {
		m.conflicts.WithLabelValues(queue).Inc()
	}
}

func (m *Metrics) joined(queue string) {
	if m != nil {
		m.joins.WithLabelValues(queue).Inc()
	}
}

// Lease counts an event of a partition's lease.
func (m *Metrics) Lease(partition, event string) {
	if m != nil {
		m.leases.WithLabelValues(partition, event).Inc()
	}
}
