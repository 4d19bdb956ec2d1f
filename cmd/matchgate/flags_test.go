package main

import (
	"bytes"
	"context"
	"errors"
	"io"
	"strings"
	"testing"
)

// Help prints no credential taken from the environment, whichever
// subcommand shows it.
func TestHelpHidesSecrets(t *testing.T) {
	env := map[string]string{
		"MATCHGATE_SECRET":       "secret-from-env-0123456789",
		"MATCHGATE_SECRETS":      "k1=secrets-from-env-0123456789",
		"MATCHGATE_ADMIN_TOKEN":  "admin-token-from-env-0123456789-0123456789",
		"MATCHGATE_REDIS_URL":    "redis://:redis-password@127.0.0.1:6379/0",
		"MATCHGATE_POSTGRES_URL": "postgres://u:pg-password@127.0.0.1/test",
	}
	for _, cmd := range [][]string{{"serve", "--help"}, {"migrate", "--help"}, {"token", "--help"}, {"export-arrivals", "--help"}, {"admin", "--help"}} {
		var out bytes.Buffer
		err := run(context.Background(), cmd, func(k string) string { return env[k] }, &out, &out, nil)
		if !errors.Is(err, errHelp) {
			t.Errorf("%v: %v, want the help", cmd, err)
		}
		for k, v := range env {
			if strings.Contains(out.String(), v) || strings.Contains(out.String(), "password") {
				t.Errorf("%v prints %s:\n%s", cmd, k, out.String())
			}
		}
	}
	// The values are still used.
	f, err := parseServe(nil, func(k string) string { return env[k] }, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	if f.redisURL != env["MATCHGATE_REDIS_URL"] || f.postgresURL != env["MATCHGATE_POSTGRES_URL"] || f.secret != env["MATCHGATE_SECRET"] {
		t.Errorf("flags from the environment: %+v", f)
	}
}
