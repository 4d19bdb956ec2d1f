package main

import (
	"context"
	"errors"
	"fmt"
	"io"

	"github.com/matchgate/matchgate/matcher/ledger"
)

func migrate(ctx context.Context, args []string, getenv func(string) string, stderr io.Writer) error {
	fs := newFlagSet("matchgate migrate", getenv, stderr)
	fs.Usage = func() {
		fmt.Fprintln(stderr, "Usage: matchgate migrate --postgres-url URL\n\nApplies the embedded migrations in order and exits. Flags:")
		fs.PrintDefaults()
	}
	url := fs.Secret("postgres-url", "PostgreSQL URL (required)")
	if err := fs.parse(args); err != nil {
		return err
	}
	if *url == "" {
		return errors.New("migrate: --postgres-url (or MATCHGATE_POSTGRES_URL) is required")
	}
	pg, err := ledger.Open(ctx, *url)
	if err != nil {
		return err
	}
	defer pg.Close()
	if err := ledger.Migrate(ctx, pg); err != nil {
		return err
	}
	fmt.Fprintln(stderr, "migrations applied")
	return nil
}
