package main

import (
	"errors"
	"fmt"
	"io"
	"strconv"
	"time"

	"github.com/matchgate/matchgate/gateway"
)

const tokenUsage = `Usage: matchgate token --secret S --sub USER [--role player|provider] [--skill N] [--name NAME] [--ttl 1h] [--kid K]

Prints an HS256 token the servers sharing --secret accept (or, with --kid,
the --secrets key of that id: pass it as --secret), for testing and for
tools; a production backend mints tokens of the same shape with its own JWT
library. The service credential of the admission and ranking routes is the
admin token itself (--admin-token), not a minted one.

Flags:
`

// tokenCmd is the token subcommand.
func tokenCmd(args []string, getenv func(string) string, stdout, stderr io.Writer) error {
	fs := newFlagSet("matchgate token", getenv, stderr)
	fs.Usage = func() {
		fmt.Fprint(stderr, tokenUsage)
		fs.PrintDefaults()
	}
	secret := fs.Secret("secret", "HS256 key of the servers, at least 16 bytes (required)")
	// The token's own claims have no environment twins: they describe one
	// token, not a deployment.
	sub := fs.FlagSet.String("sub", "", "the user id (required)")
	role := fs.FlagSet.String("role", gateway.RolePlayer, "player or provider")
	skill := fs.FlagSet.String("skill", "", "the skill claim (default: none; the server asks --skill-url or uses its default)")
	name := fs.FlagSet.String("name", "", "the display name claim, cleaned as the server cleans it (default: none; others see the user id)")
	ttl := fs.FlagSet.Duration("ttl", time.Hour, "lifetime")
	kid := fs.FlagSet.String("kid", "", `the "kid" header: the --secrets key of that id verifies it`)
	if err := fs.parse(args); err != nil {
		return err
	}
	switch {
	case len(*secret) < 16:
		return errors.New("token: --secret (or MATCHGATE_SECRET) of at least 16 bytes is required")
	case *sub == "":
		return errors.New("token: --sub is required")
	case *role != gateway.RolePlayer && *role != gateway.RoleProvider:
		return fmt.Errorf("token: --role %q: want player or provider", *role)
	case *ttl <= 0:
		return errors.New("token: --ttl must be positive")
	}
	spec := gateway.TokenSpec{Subject: *sub, Name: *name, TTL: *ttl, KeyID: *kid}
	if *role == gateway.RoleProvider {
		spec.Role = gateway.RoleProvider
	}
	if *skill != "" {
		v, err := strconv.ParseFloat(*skill, 64)
		if err != nil {
			return fmt.Errorf("token: --skill: %w", err)
		}
		spec.Skill = &v
	}
	tok, err := gateway.SignToken([]byte(*secret), spec)
	if err != nil {
		return fmt.Errorf("token: %w", err)
	}
	_, err = fmt.Fprintln(stdout, tok)
	return err
}
