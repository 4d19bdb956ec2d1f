// Package readme runs every snippet of the README's tour against a real
// server, with localhost:8080 replaced by that server's address, so the
// tour cannot drift from the code.
package readme

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/matchgate/matchgate/internal/servertest"
)

// tourAdmin is the admin token the tour's admin snippet exports; the test's
// server is started with it.
const tourAdmin = "tour-admin-token-of-at-least-32-bytes"

// block is one fenced code block: its info string's words and its text.
type block struct {
	lang, label, text string
	line              int
}

// tourBlocks are the code blocks of the README's "## A tour" section.
func tourBlocks(t *testing.T, root string) []block {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(root, "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	var out []block
	in, inTour := false, false
	var cur block
	var text strings.Builder
	for i, l := range strings.Split(string(data), "\n") {
		switch {
		case !in && strings.HasPrefix(l, "## "):
			inTour = l == "## A tour"
		case inTour && !in && strings.HasPrefix(l, "```"):
			f := strings.Fields(strings.TrimPrefix(l, "```"))
			cur = block{line: i + 1}
			if len(f) > 0 {
				cur.lang = f[0]
			}
			if len(f) > 1 {
				cur.label = f[1]
			}
			in = true
			text.Reset()
		case in && l == "```":
			in = false
			if inTour {
				cur.text = text.String()
				out = append(out, cur)
			}
		case in:
			text.WriteString(l + "\n")
		}
	}
	return out
}

type tour struct {
	root, bin, base, host string
}

func setup(t *testing.T) *tour {
	t.Helper()
	if testing.Short() {
		t.Skip("builds and runs the server")
	}
	root, err := servertest.ModuleRoot()
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	bin, err := servertest.Build(dir)
	if err != nil {
		t.Fatal(err)
	}
	p, err := servertest.Start(bin, nil, nil, "--secret", "readme-tour-secret-0123456789", "--guests", "true",
		"--admin-token", tourAdmin, "--limit-guests-ip", "off", "--limit-connects-ip", "off")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := p.Stop(); err != nil {
			t.Error(err)
		}
		if t.Failed() {
			t.Logf("server log:\n%s", p.Logs())
		}
	})
	return &tour{root: root, bin: bin, base: p.Base, host: strings.TrimPrefix(p.Base, "http://")}
}

// here replaces the tour's server address with the test's.
func (tr *tour) here(s string) string { return strings.ReplaceAll(s, "localhost:8080", tr.host) }

// need skips (or, with CI=true, fails) without a command a snippet runs.
func need(t *testing.T, cmds ...string) {
	t.Helper()
	for _, c := range cmds {
		if _, err := exec.LookPath(c); err != nil {
			if os.Getenv("CI") == "true" {
				t.Fatalf("%s is not installed", c)
			}
			t.Skipf("%s is not installed", c)
		}
	}
}

// guest signs a new guest in and returns its token.
func (tr *tour) guest(t *testing.T) string {
	t.Helper()
	resp, err := http.Post(tr.base+"/v1/auth/guest", "application/json", strings.NewReader(`{"skill":1500}`))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var g struct{ Token string }
	if err := json.NewDecoder(resp.Body).Decode(&g); err != nil || g.Token == "" {
		t.Fatalf("guest: %d %v", resp.StatusCode, err)
	}
	return g.Token
}

// partner has a second guest wait in duel, so that a snippet's join is
// matched at once. Its REST ticket lives long enough without heartbeats.
func (tr *tour) partner(t *testing.T) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, tr.base+"/v1/queues/duel/tickets", strings.NewReader(`{}`))
	req.Header.Set("Authorization", "Bearer "+tr.guest(t))
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusAccepted {
		t.Fatalf("partner join: %d", resp.StatusCode)
	}
}

// run runs cmd (60 s at most) and returns its output, failing on an error.
func run(t *testing.T, cmd *exec.Cmd) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 60*time.Second)
	defer cancel()
	c := exec.CommandContext(ctx, cmd.Path, cmd.Args[1:]...)
	c.Dir, c.Env = cmd.Dir, cmd.Env
	out, err := c.CombinedOutput()
	if err != nil {
		t.Fatalf("%v: %v\n%s", cmd.Args, err, out)
	}
	return string(out)
}

func TestTour(t *testing.T) {
	tr := setup(t)
	blocks := tourBlocks(t, tr.root)
	seen := map[string]bool{}
	for _, b := range blocks {
		kind := b.lang + " " + b.label
		seen[kind] = true
		t.Run(fmt.Sprintf("line%d-%s", b.line, strings.TrimSpace(strings.ReplaceAll(kind, " ", "-"))), func(t *testing.T) {
			switch kind {
			case "sh curl":
				need(t, "bash", "curl", "jq")
				out := run(t, exec.Command("bash", "-euo", "pipefail", "-c", tr.here(b.text)))
				for _, want := range []string{"duel", "WAITING", "CANCELLED"} {
					if !strings.Contains(out, want) {
						t.Errorf("output lacks %s:\n%s", want, out)
					}
				}
			case "text websocket":
				tr.transcript(t, b.text)
			case "go ":
				tr.partner(t)
				file := filepath.Join(t.TempDir(), "main.go")
				if err := os.WriteFile(file, []byte(tr.here(b.text)), 0o600); err != nil {
					t.Fatal(err)
				}
				cmd := exec.Command("go", "run", file)
				cmd.Dir = tr.root // the snippet imports this module's client
				if out := run(t, cmd); !strings.Contains(out, "matched: 2 players") {
					t.Errorf("output:\n%s", out)
				}
			case "ts ":
				tr.typescript(t, b.text)
			case "sh admin":
				need(t, "bash")
				cmd := exec.Command("bash", "-euo", "pipefail", "-c", tr.here(b.text))
				cmd.Env = append(os.Environ(), "PATH="+filepath.Dir(tr.bin)+string(os.PathListSeparator)+os.Getenv("PATH"), "MATCHGATE_URL="+tr.base)
				out := run(t, cmd)
				for _, want := range []string{"duel", "guest-1a2b", "cheating"} {
					if !strings.Contains(out, want) {
						t.Errorf("output lacks %s:\n%s", want, out)
					}
				}
			default:
				t.Fatalf("a %q block in the tour: the test does not know how to run it", kind)
			}
		})
	}
	for _, k := range []string{"sh curl", "text websocket", "go ", "ts ", "sh admin"} {
		if !seen[k] {
			t.Errorf("the tour has no %q block", k)
		}
	}
}

// transcript plays a websocat session: "> " lines are sent, "< " lines
// must each match a frame received (in any order: a push may overtake a
// reply), "…" standing for anything.
func (tr *tour) transcript(t *testing.T, text string) {
	token := tr.guest(t)
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	conn, _, err := websocket.Dial(ctx, "ws://"+tr.host+"/v1/ws?token="+token, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.CloseNow()
	var want []*regexp.Regexp
	var got []string
	// await reads until every expected frame so far has come.
	await := func() {
		for len(want) > 0 {
			_, data, err := conn.Read(ctx)
			if err != nil {
				t.Fatalf("still expecting %v; received:\n%s\n%v", want, strings.Join(got, "\n"), err)
			}
			got = append(got, string(data))
			for i, re := range want {
				if re.Match(data) {
					want = append(want[:i], want[i+1:]...)
					break
				}
			}
		}
	}
	for _, l := range strings.Split(strings.TrimSpace(text), "\n") {
		switch {
		case strings.HasPrefix(l, "$ "):
		case strings.HasPrefix(l, "> "):
			await()
			if strings.Contains(l, `"type":"join"`) {
				tr.partner(t)
			}
			if err := conn.Write(ctx, websocket.MessageText, []byte(l[2:])); err != nil {
				t.Fatal(err)
			}
		case strings.HasPrefix(l, "< "):
			pat := strings.ReplaceAll(regexp.QuoteMeta(l[2:]), "…", ".*")
			want = append(want, regexp.MustCompile("^"+pat+"$"))
		default:
			t.Fatalf("transcript line %q: want $, > or <", l)
		}
	}
	await()
}

// typescript checks the snippet with tsc against the package of web/ and
// runs it with node (its WebSocket: node 20's --experimental-websocket).
func (tr *tour) typescript(t *testing.T, text string) {
	need(t, "node")
	tsc := filepath.Join(tr.root, "tests", "browser", "node_modules", ".bin", "tsc")
	if _, err := os.Stat(tsc); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("no %s: npm ci in tests/browser", tsc)
		}
		t.Skipf("no %s (cd tests/browser && npm ci)", tsc)
	}
	tr.partner(t)
	dir := t.TempDir()
	pkg := filepath.Join(dir, "node_modules", "@matchgate")
	files := map[string]string{
		"tour.ts":      tr.here(text),
		"package.json": `{"type": "module"}`,
		"tsconfig.json": `{"compilerOptions": {"strict": true, "target": "es2022", "module": "nodenext",
  "moduleResolution": "nodenext", "lib": ["es2022", "dom"], "outDir": "out"}, "files": ["tour.ts"]}`,
	}
	for name, body := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.MkdirAll(pkg, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Join(tr.root, "web"), filepath.Join(pkg, "client")); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(tsc, "-p", dir)
	cmd.Dir = dir
	run(t, cmd)
	node := exec.Command("node", "--experimental-websocket", "--no-warnings", filepath.Join("out", "tour.js"))
	node.Dir = dir
	out := run(t, node)
	for _, want := range []string{"WAITING", "matched: 2 players"} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %s:\n%s", want, out)
		}
	}
}
