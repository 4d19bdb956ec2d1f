package main

import (
	"context"
	"crypto/rand"
	"strings"

	"github.com/matchgate/matchgate/gateway"
	"github.com/matchgate/matchgate/matcher/lease"
	"github.com/matchgate/matchgate/notify"
)

// A task is one goroutine of the process: it runs until its context ends.
type task struct {
	name string
	run  func(context.Context) error
}

// buildRoles builds the roles the process runs and returns every goroutine
// to start, the shared ones first, and the gateway (nil without the gateway
// role). ctx is the workers' context, which outlives the gateway's drain.
func buildRoles(ctx context.Context, d *deps) ([]task, *gateway.Server, error) {
	tasks := d.tasks()
	if d.roles["matcher"] {
		t, err := matcherRole(d)
		if err != nil {
			return nil, nil, err
		}
		tasks = append(tasks, t...)
	}
	if d.roles["relay"] {
		tasks = append(tasks, relayRole(d)...)
	}
	if !d.roles["gateway"] {
		return tasks, nil, nil
	}
	gw, t, err := gatewayRole(ctx, d)
	if err != nil {
		return nil, nil, err
	}
	return append(tasks, t...), gw, nil
}

// matcherRole builds the Runner, which leases partitions and matches them,
// and makes it the one the Service's wake-ups and the queue changes reach.
func matcherRole(d *deps) ([]task, error) {
	r, err := lease.NewRunner(lease.RunnerConfig{
		Deps:     d.core,
		Queues:   d.queues,
		Redis:    d.rdb,
		Prefix:   d.f.prefix,
		Owner:    d.node + "-" + rand.Text()[:8],
		LeaseTTL: d.f.leaseTTL,
	})
	if err != nil {
		return nil, err
	}
	d.runner = r
	admitters, err := admitterTasks(d)
	if err != nil {
		return nil, err
	}
	// The rankings' refresh runs with the matchers: a lease per board
	// keeps it to one process at a time.
	return append([]task{{"matcher", r.Run}, {"rankings", d.rankings.Run}}, admitters...), nil
}

// relayRole publishes what the outbox still holds.
func relayRole(d *deps) []task {
	relay := notify.NewRelay(notify.RelayConfig{Redis: d.rdb, Outbox: d.led, Prefix: d.f.prefix, Now: d.clk.Now, Logger: d.log, Metrics: d.nmetrics})
	return []task{{"relay", relay.Run}}
}

// gatewayRole builds the gateway on the Service, and the pub/sub hub and
// presence that its sockets need. ctx is the workers' context: resyncs
// after a pub/sub outage run in it.
func gatewayRole(ctx context.Context, d *deps) (*gateway.Server, []task, error) {
	var gw *gateway.Server
	hub := notify.NewHub(notify.HubConfig{Redis: d.rdb, Prefix: d.f.prefix, Logger: d.log, Metrics: d.nmetrics,
		// Pushes published while the connection was down are lost to
		// it: every connected player gets a fresh hello instead, and
		// every subscribed ranking its current view.
		OnResubscribe: func() {
			gw.ResyncRankings()
			gw.Resync(ctx)
		},
	})
	var origins []string
	if d.f.origins != "" {
		origins = strings.Split(d.f.origins, ",")
	}
	var adm gateway.Admissions // a nil *admission.Service would not be a nil interface
	if d.adm != nil {
		adm = d.adm
	}
	gw, err := gateway.New(d.sec.gateway(gateway.Config{
		Admissions: adm,
		Providers:  d.svc,
		Rankings:   d.rankings,
		Matchmaker: d.svc, Subscriber: hub, Presence: d.tracker, Ready: func(context.Context) error { return d.health.Err() }, Logger: d.log,
		Registerer: d.reg, Gatherer: d.reg, Node: d.node, Secret: d.secret, Guests: d.guests,
		AllowedOrigins: origins, ShutdownTimeout: d.f.shutdownTimeout, ProviderGrace: d.f.providerGrace, Now: d.clk.Now,
	}))
	if err != nil {
		return nil, nil, err
	}
	d.sec.bind(gw)
	return gw, []task{{"pubsub hub", hub.Run}, {"presence", d.tracker.Run}}, nil
}
