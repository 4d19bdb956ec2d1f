// Command matchgate is the matchgate server: one binary for every role
// (gateway, matcher, relay) plus the `migrate` subcommand and the tools
// (simulate, export-arrivals, token, admin).
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/signal"
	"syscall"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, os.Args[1:], os.Getenv, os.Stdout, os.Stderr, nil); err != nil {
		if !errors.Is(err, errHelp) {
			fmt.Fprintln(os.Stderr, "matchgate:", err)
		}
		os.Exit(2)
	}
}

var errHelp = errors.New("help requested")

const usage = `matchgate — a WebSocket-first real-time matchmaking gateway.

Usage:
  matchgate serve   [flags]   run the server (roles gateway, matcher, relay)
  matchgate migrate [flags]   apply the PostgreSQL migrations and exit
  matchgate simulate [flags] scenario.yaml
                              compare queue configs on a virtual clock (docs/SIMULATE.md)
  matchgate export-arrivals --postgres-url URL --since T [--until T] [--queue Q]
                              write the record's joins as a stream simulate reads
  matchgate token --secret S --sub USER [--role provider] [--skill N] [--name NAME] [--ttl D]
                              print a signed token for testing and tools
  matchgate admin [--url URL] [--admin-token T] [--json] VERB ...
                              ban, drain, change queues and weights through the admin API
  matchgate help              show this text

With no --redis-url and no --postgres-url, serve runs the embedded default:
an in-process Redis and an in-memory record (nothing is durable), guests
enabled, the demo page at http://127.0.0.1:8080/.

Run "matchgate serve --help" for the flags ("matchgate admin --help" for
the admin verbs). Every flag has an environment
twin: --redis-url is MATCHGATE_REDIS_URL, and so on.
`

// run is main without the process: tests boot the whole server through it.
// onListen, when set, is told the bound address.
func run(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer, onListen func(net.Addr)) error {
	if len(args) == 0 {
		args = []string{"serve"}
	}
	switch args[0] {
	case "serve":
		return serve(ctx, args[1:], getenv, stderr, onListen)
	case "migrate":
		return migrate(ctx, args[1:], getenv, stderr)
	case "simulate":
		return simulateCmd(ctx, args[1:], getenv, stdout, stderr)
	case "export-arrivals":
		return exportArrivals(ctx, args[1:], getenv, stdout, stderr)
	case "token":
		return tokenCmd(args[1:], getenv, stdout, stderr)
	case "admin":
		return adminCmd(ctx, args[1:], getenv, stdout, stderr)
	case "help", "-h", "--help", "-help":
		fmt.Fprint(stdout, usage)
		return nil
	default:
		fmt.Fprint(stderr, usage)
		return fmt.Errorf("unknown command %q", args[0])
	}
}
