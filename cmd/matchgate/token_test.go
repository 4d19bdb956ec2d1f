package main

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"strings"
	"testing"
)

// A token printed by `matchgate token` is accepted by a server of the same
// secret, for a player and for a provider; refusals say what is wrong.
func TestTokenCommand(t *testing.T) {
	base := startServer(t)
	mint := func(args ...string) string {
		t.Helper()
		var out, errs bytes.Buffer
		if err := run(context.Background(), append([]string{"token"}, args...), func(string) string { return "" }, &out, &errs, nil); err != nil {
			t.Fatalf("token %v: %v %s", args, err, errs.String())
		}
		return strings.TrimSpace(out.String())
	}
	player := mint("--secret", testSecret, "--sub", "ada", "--skill", "1700")
	code, out := call(t, http.MethodPost, base+"/v1/queues/duel/tickets", player, `{}`)
	if tk, _ := out["ticket"].(map[string]any); code != http.StatusAccepted || tk["userId"] != "ada" || tk["skill"] != 1700.0 {
		t.Fatalf("a join with the minted token: %d %v", code, out)
	}
	named := mint("--secret", testSecret, "--sub", "bea", "--name", " Bea\u202e   Ex\n")
	code, out = call(t, http.MethodPost, base+"/v1/queues/duel/tickets", named, `{}`)
	if tk, _ := out["ticket"].(map[string]any); code != http.StatusAccepted || tk["userId"] != "bea" || tk["name"] != "Bea Ex" {
		t.Fatalf("a join with a named token: %d %v", code, out)
	}
	provider := mint("--secret", testSecret, "--sub", "pro", "--role", "provider", "--ttl", "10m")
	if code, out := call(t, http.MethodPut, base+"/v1/providers/me/advice", provider,
		`{"capacity":1,"attributes":{"languages":["en"],"sessionTypes":["chat"],"rating":4}}`); code != http.StatusOK {
		t.Fatalf("a provider online with the minted token: %d %v", code, out)
	}
	other := mint("--secret", "another-secret-0123456789", "--sub", "eve")
	if code, _ := call(t, http.MethodGet, base+"/v1/tickets", other, ""); code != http.StatusUnauthorized {
		t.Fatalf("a token of another secret: %d", code)
	}
	env := func(name string) string {
		if name == "MATCHGATE_SECRET" {
			return testSecret
		}
		return ""
	}
	var printed bytes.Buffer
	if err := run(context.Background(), []string{"token", "--sub", "env"}, env, &printed, io.Discard, nil); err != nil || printed.Len() == 0 {
		t.Fatalf("the secret from MATCHGATE_SECRET: %v", err)
	}
	for _, args := range [][]string{
		{"--sub", "x"},
		{"--secret", "short", "--sub", "x"},
		{"--secret", testSecret},
		{"--secret", testSecret, "--sub", "x", "--role", "admin"},
		{"--secret", testSecret, "--sub", "x", "--skill", "high"},
		{"--secret", testSecret, "--sub", "x", "--ttl", "0s"},
	} {
		if err := run(context.Background(), append([]string{"token"}, args...), func(string) string { return "" }, io.Discard, io.Discard, nil); err == nil {
			t.Errorf("token %v: no error", args)
		}
	}
}
