package main

import (
	"context"
	"io"
	"net"
	"sync"
)

// serve runs the server until ctx ends: the flags (flags_serve.go), what
// every role shares (deps.go), the roles (roles.go), then the drain. The
// gateway drains its sockets (close code 1001) before the workers stop.
func serve(ctx context.Context, args []string, getenv func(string) string, stderr io.Writer, onListen func(net.Addr)) error {
	f, err := parseServe(args, getenv, stderr)
	if err != nil {
		return err
	}
	d, err := newDeps(ctx, f, stderr)
	if err != nil {
		return err
	}
	defer d.close()
	log := d.log

	// Workers stop after the gateway has drained, so in-flight commands
	// still reach a running matcher and publisher.
	workCtx, stopWork := context.WithCancel(context.WithoutCancel(ctx))
	defer stopWork()
	tasks, gw, err := buildRoles(workCtx, d)
	if err != nil {
		return err
	}
	var workers sync.WaitGroup
	stop := func() {
		stopWork()
		workers.Wait()
	}
	d.health.check(ctx)
	for _, t := range tasks {
		workers.Go(func() {
			if err := t.run(workCtx); err != nil {
				log.Error(t.name+" stopped", "err", err)
			}
		})
	}

	if gw == nil {
		log.Info("matchgate running", "roles", f.roles)
		<-ctx.Done()
	} else {
		log.Info("matchgate listening", "url", "http://"+d.ln.Addr().String()+"/", "roles", f.roles, "guests", d.guests, "queues", len(d.queues.Queues))
		if onListen != nil {
			onListen(d.ln.Addr())
		}
		if err := gw.Run(ctx, d.ln); err != nil {
			stop()
			return err
		}
	}
	log.Info("shutting down")
	stop()
	log.Info("stopped")
	return nil
}
