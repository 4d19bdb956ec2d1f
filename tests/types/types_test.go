// Package types checks the TypeScript declarations of the JavaScript
// client (web/matchgate.d.ts) with tsc, against a typed use of the client,
// wrong uses it must reject, the module itself and the wire as package
// protocol renders it; and the npm package web/ is. tsc is the typescript
// devDependency of tests/browser; without it (or node, or npm) the tests
// that need it skip and say what to install, and fail instead when
// CI=true.
package types

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
)

const (
	webDir   = "../../web"
	tscPath  = "../browser/node_modules/.bin/tsc"
	pkgName  = "@matchgate/client"
	setupMsg = "install with: apt-get install -y nodejs npm && (cd tests/browser && npm ci)"
)

// packageFiles are what the package holds: its manifest, the module and
// its declarations, and nothing else of web/ (not the demo page).
var packageFiles = []string{"matchgate.d.ts", "matchgate.js", "package.json"}

// require skips the test when ok is false, or fails it under CI=true,
// where a skipped check would hide a broken install step.
func require(t *testing.T, ok bool, what string) {
	t.Helper()
	if ok {
		return
	}
	if os.Getenv("CI") == "true" {
		t.Fatalf("%s is missing (CI=true, so this fails instead of skipping); %s", what, setupMsg)
	}
	t.Skipf("%s is missing: skipping; %s", what, setupMsg)
}

// tools finds node, npm and tsc, or skips.
func tools(t *testing.T) (node, npm, tsc string) {
	t.Helper()
	node, err := exec.LookPath("node")
	require(t, err == nil, "node")
	npm, err = exec.LookPath("npm")
	require(t, err == nil, "npm")
	_, err = os.Stat(tscPath)
	require(t, err == nil, "tests/browser/node_modules/typescript")
	tsc, err = filepath.Abs(tscPath)
	if err != nil {
		t.Fatal(err)
	}
	return node, npm, tsc
}

func run(t *testing.T, dir, name string, args ...string) ([]byte, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Dir = dir
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err := cmd.Run()
	if ctx.Err() != nil {
		t.Fatalf("%s %s: %v\n%s", name, strings.Join(args, " "), ctx.Err(), out.Bytes())
	}
	return out.Bytes(), err
}

// project packs web/ with npm, installs the tarball as
// node_modules/@matchgate/client of a new folder, as a game's
// `npm install` would, and copies this folder's checks beside it.
func project(t *testing.T, npm string) string {
	t.Helper()
	dir := t.TempDir()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, npm, "pack", "--json", "--pack-destination", dir)
	cmd.Dir = webDir
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("npm pack: %v\n%s%s", err, out, stderr.Bytes())
	}
	var packed []struct {
		Filename string `json:"filename"`
		Files    []struct {
			Path string `json:"path"`
		} `json:"files"`
	}
	if json.Unmarshal(out, &packed) != nil || len(packed) != 1 {
		t.Fatalf("npm pack --json printed no single package:\n%s", out)
	}
	var files []string
	for _, f := range packed[0].Files {
		files = append(files, f.Path)
	}
	slices.Sort(files)
	if !slices.Equal(files, packageFiles) {
		t.Errorf("the package holds %v, want %v (package.json \"files\")", files, packageFiles)
	}
	installDir := filepath.Join(dir, "node_modules", filepath.FromSlash(pkgName))
	if err := untar(filepath.Join(dir, filepath.Base(packed[0].Filename)), installDir); err != nil {
		t.Fatal(err)
	}
	// What is installed is web/ as it is: no build step comes between.
	for _, f := range packageFiles {
		want, err := os.ReadFile(filepath.Join(webDir, f))
		if err != nil {
			t.Fatal(err)
		}
		if got, err := os.ReadFile(filepath.Join(installDir, f)); err != nil || !bytes.Equal(got, want) {
			t.Fatalf("the packed %s is not web/%s (%v)", f, f, err)
		}
	}
	for _, pattern := range []string{"*.ts", "*.json", "*.mjs"} {
		names, _ := filepath.Glob(pattern)
		for _, name := range names {
			b, err := os.ReadFile(name)
			if err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(dir, name), b, 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
	return dir
}

// untar unpacks an npm tarball (its files under package/) into dir.
func untar(tgz, dir string) error {
	f, err := os.Open(tgz)
	if err != nil {
		return err
	}
	defer f.Close()
	zr, err := gzip.NewReader(f)
	if err != nil {
		return fmt.Errorf("%s: %w", tgz, err)
	}
	tr := tar.NewReader(zr)
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return fmt.Errorf("%s: %w", tgz, err)
		}
		name, ok := strings.CutPrefix(h.Name, "package/")
		if !ok || h.Typeflag != tar.TypeReg || !filepath.IsLocal(name) {
			return fmt.Errorf("%s: unexpected entry %q", tgz, h.Name)
		}
		path := filepath.Join(dir, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			return err
		}
		b, err := io.ReadAll(tr)
		if err != nil {
			return fmt.Errorf("%s: %s: %w", tgz, h.Name, err)
		}
		if err := os.WriteFile(path, b, 0o644); err != nil {
			return err
		}
	}
}

// tscError is one line of tsc's report: file(line,col): error TSnnnn: ….
var tscError = regexp.MustCompile(`(?m)^([^\s(]+)\((\d+),(\d+)\): error (TS\d+): (.*)$`)

// explain adds to tsc's output the source line of each error in a
// generated file, which names what it checks.
func explain(dir string, out []byte) string {
	var b strings.Builder
	b.Write(out)
	for _, m := range tscError.FindAllSubmatch(out, -1) {
		file := string(m[1])
		if file != "coverage.ts" && file != "wire.ts" {
			continue
		}
		src, err := os.ReadFile(filepath.Join(dir, file))
		if err != nil {
			continue
		}
		n, _ := strconv.Atoi(string(m[2]))
		lines := strings.Split(string(src), "\n")
		if n < 1 || n > len(lines) {
			continue
		}
		line := strings.TrimSpace(lines[n-1])
		if len(line) > 200 {
			line = line[:200] + " …"
		}
		fmt.Fprintf(&b, "%s:%d: %s\n", file, n, line)
		if n >= 2 && strings.HasPrefix(strings.TrimSpace(lines[n-2]), "//") {
			fmt.Fprintf(&b, "    %s\n", strings.TrimSpace(lines[n-2]))
		}
	}
	return b.String()
}

// TestDeclarations type-checks, with the package installed from a tarball
// of web/: example.ts (every method, option and event in use), rejected.ts
// (each wrong use must be an error), coverage.ts (written by coverage.mjs
// from the module at run time: the declarations name exactly its exports,
// members and events) and wire.ts (every frame and error of
// protocol/testdata/wire.json must be a frame the declarations allow, and
// with no member they do not declare). It does so under both module
// resolutions a game may use: nodenext and bundler.
func TestDeclarations(t *testing.T) {
	node, npm, tsc := tools(t)
	dir := project(t, npm)
	module := filepath.Join(dir, "node_modules", filepath.FromSlash(pkgName), "matchgate.js")
	if out, err := run(t, dir, node, "coverage.mjs", module, "coverage.ts"); err != nil {
		t.Fatalf("node coverage.mjs: %v\n%s", err, out)
	}
	wire, err := wireChecks(filepath.Join("..", "..", "protocol", "testdata", "wire.json"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "wire.ts"), wire, 0o644); err != nil {
		t.Fatal(err)
	}
	for _, config := range []string{"tsconfig.json", "tsconfig.bundler.json"} {
		out, err := run(t, dir, tsc, "--noEmit", "-p", config)
		if err != nil {
			t.Errorf("tsc --noEmit -p %s: %v\n%s", config, err, explain(dir, out))
		}
	}
}

// TestRejectedUsesFail compiles rejected.ts without its expect-error
// directives: tsc must report an error on each line a directive stood
// over, and on no other line. So each wrong use is rejected for a reason
// of its own, and the check is not vacuous (a project that type-checks
// nothing passes TestDeclarations too).
func TestRejectedUsesFail(t *testing.T) {
	_, npm, tsc := tools(t)
	dir := project(t, npm)
	src, err := os.ReadFile("rejected.ts")
	if err != nil {
		t.Fatal(err)
	}
	var kept []string
	want := map[int]bool{} // lines of the stripped file that must fail
	for _, line := range strings.Split(string(src), "\n") {
		if strings.HasPrefix(strings.TrimSpace(line), "// @ts-expect-error") {
			want[len(kept)+1] = true
			continue
		}
		kept = append(kept, line)
	}
	if len(want) < 20 {
		t.Fatalf("rejected.ts has %d expect-error directives; the file is not what this test expects", len(want))
	}
	if err := os.WriteFile(filepath.Join(dir, "rejected.ts"), []byte(strings.Join(kept, "\n")), 0o644); err != nil {
		t.Fatal(err)
	}
	config := `{"extends": "./tsconfig.json", "include": ["rejected.ts"]}`
	if err := os.WriteFile(filepath.Join(dir, "tsconfig.rejected.json"), []byte(config), 0o644); err != nil {
		t.Fatal(err)
	}
	out, err := run(t, dir, tsc, "--noEmit", "-p", "tsconfig.rejected.json")
	if err == nil {
		t.Fatalf("tsc accepted rejected.ts without its directives:\n%s", out)
	}
	got := map[int]bool{}
	for _, m := range tscError.FindAllSubmatch(out, -1) {
		n, _ := strconv.Atoi(string(m[2]))
		if string(m[1]) != "rejected.ts" || !want[n] {
			t.Errorf("unexpected error: %s", m[0])
			continue
		}
		got[n] = true
	}
	for n := range want {
		if !got[n] {
			t.Errorf("rejected.ts:%d (without directives) compiles: %s", n, strings.TrimSpace(kept[n-1]))
		}
	}
	if t.Failed() {
		t.Logf("tsc:\n%s", out)
	}
}

// wireChecks writes wire.ts from the wire fixture: every server frame,
// error frame and REST error body, and every client frame, as object
// literals typed by the declarations (tsc rejects a member they do not
// declare, a missing required one and a wrong type), and the lists of
// frame types and error codes as the unions they must equal.
func wireChecks(path string) ([]byte, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var w struct {
		ServerFrameTypes        []string `json:"serverFrameTypes"`
		ClientFrameTypes        []string `json:"clientFrameTypes"`
		RankingClientFrameTypes []string `json:"rankingClientFrameTypes"`
		ErrorCodes              []struct {
			Code   string `json:"code"`
			Status int    `json:"status"`
		} `json:"errorCodes"`
		Server []struct {
			Example string          `json:"example"`
			Frame   json.RawMessage `json:"frame"`
		} `json:"server"`
		Errors []struct {
			Code  string          `json:"code"`
			Frame json.RawMessage `json:"frame"`
			Body  json.RawMessage `json:"body"`
		} `json:"errors"`
		Client []struct {
			Example string          `json:"example"`
			Frame   json.RawMessage `json:"frame"`
		} `json:"client"`
		RankingClient []struct {
			Example string          `json:"example"`
			Frame   json.RawMessage `json:"frame"`
		} `json:"rankingClient"`
	}
	if err := json.Unmarshal(b, &w); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	if len(w.Server) == 0 || len(w.Client) == 0 || len(w.Errors) == 0 || len(w.ErrorCodes) == 0 {
		return nil, fmt.Errorf("%s: no frames, errors or codes: not the fixture this test reads", path)
	}
	var s strings.Builder
	s.WriteString("// Generated by TestDeclarations from protocol/testdata/wire.json: do not edit.\n")
	s.WriteString("import type { ClientFrame, ErrorBody, ErrorCode, ErrorFrame, ServerFrame } from '@matchgate/client';\n")
	s.WriteString("import { CLIENT_FRAME_TYPES, ERROR_CODES, RANKING_CLIENT_FRAME_TYPES, SERVER_FRAME_TYPES } from '@matchgate/client';\n")
	s.WriteString("import { type Equal, expect } from './assert.js';\n\n")
	literal := func(raw json.RawMessage) string {
		var buf bytes.Buffer
		if err := json.Compact(&buf, raw); err != nil {
			return "(invalid JSON)"
		}
		return buf.String()
	}
	quoted := func(list []string) string {
		if len(list) == 0 {
			return "never"
		}
		q := make([]string, len(list))
		for i, v := range list {
			q[i] = strconv.Quote(v)
		}
		return strings.Join(q, " | ")
	}
	s.WriteString("export const server: ServerFrame[] = [\n")
	for _, f := range w.Server {
		fmt.Fprintf(&s, "  // server frame: %s\n  %s,\n", f.Example, literal(f.Frame))
	}
	s.WriteString("];\n\nexport const errorFrames: ErrorFrame[] = [\n")
	for _, e := range w.Errors {
		fmt.Fprintf(&s, "  // error frame: %s\n  %s,\n", e.Code, literal(e.Frame))
	}
	s.WriteString("];\n\nexport const errorBodies: ErrorBody[] = [\n")
	for _, e := range w.Errors {
		fmt.Fprintf(&s, "  // REST error body: %s\n  %s,\n", e.Code, literal(e.Body))
	}
	s.WriteString("];\n\nexport const client: ClientFrame[] = [\n")
	for _, f := range append(w.Client, w.RankingClient...) {
		fmt.Fprintf(&s, "  // client frame: %s\n  %s,\n", f.Example, literal(f.Frame))
	}
	s.WriteString("];\n\n")
	fmt.Fprintf(&s, "// the fixture's server frame types\nexpect<Equal<(typeof SERVER_FRAME_TYPES)[number], %s>>(true);\n", quoted(w.ServerFrameTypes))
	fmt.Fprintf(&s, "// the fixture's client frame types\nexpect<Equal<(typeof CLIENT_FRAME_TYPES)[number], %s>>(true);\n", quoted(w.ClientFrameTypes))
	fmt.Fprintf(&s, "// the fixture's ranking client frame types\nexpect<Equal<(typeof RANKING_CLIENT_FRAME_TYPES)[number], %s>>(true);\n", quoted(w.RankingClientFrameTypes))
	var codes, statuses []string
	for _, c := range w.ErrorCodes {
		codes = append(codes, c.Code)
		statuses = append(statuses, fmt.Sprintf("readonly %s: %d", c.Code, c.Status))
	}
	fmt.Fprintf(&s, "// the fixture's error codes\nexpect<Equal<ErrorCode, %s>>(true);\n", quoted(codes))
	fmt.Fprintf(&s, "// the fixture's HTTP status of each code\nexpect<Equal<typeof ERROR_CODES, { %s }>>(true);\n", strings.Join(statuses, "; "))
	return []byte(s.String()), nil
}

// TestPackage: web/package.json is an npm package of the client alone:
// ES module, the declarations under the types condition (first, as
// TypeScript requires) and the module under default, no dependencies, and
// the version of the newest CHANGELOG.md entry.
func TestPackage(t *testing.T) {
	b, err := os.ReadFile(filepath.Join(webDir, "package.json"))
	if err != nil {
		t.Fatal(err)
	}
	var pkg map[string]json.RawMessage
	if err := json.Unmarshal(b, &pkg); err != nil {
		t.Fatalf("web/package.json: %v", err)
	}
	str := func(key string) string {
		var s string
		_ = json.Unmarshal(pkg[key], &s)
		return s
	}
	if got := str("name"); got != pkgName {
		t.Errorf("name %q, want %q", got, pkgName)
	}
	if got := str("type"); got != "module" {
		t.Errorf("type %q, want module", got)
	}
	if got := str("license"); got == "" {
		t.Error("no license")
	}
	for _, key := range []string{"dependencies", "peerDependencies", "optionalDependencies", "devDependencies", "scripts"} {
		if _, ok := pkg[key]; ok {
			t.Errorf("web/package.json has %s: the client has none and no build step", key)
		}
	}

	// Order matters in exports: the first matching condition wins, and
	// TypeScript wants types before default.
	var exports map[string]json.RawMessage
	if err := json.Unmarshal(pkg["exports"], &exports); err != nil {
		t.Fatalf("exports: %v", err)
	}
	conds, err := conditions(exports["."])
	if err != nil {
		t.Fatalf("exports[\".\"]: %v", err)
	}
	want := []string{"types=./matchgate.d.ts", "default=./matchgate.js"}
	if !slices.Equal(conds, want) {
		t.Errorf("exports[\".\"] is %v, want %v in that order", conds, want)
	}

	var files []string
	if err := json.Unmarshal(pkg["files"], &files); err != nil {
		t.Fatalf("files: %v", err)
	}
	slices.Sort(files)
	if !slices.Equal(files, []string{"matchgate.d.ts", "matchgate.js"}) {
		t.Errorf("files %v, want the module and its declarations", files)
	}

	changelog, err := os.ReadFile(filepath.Join("..", "..", "CHANGELOG.md"))
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`(?m)^## (\d{4})-(\d{2})-(\d{2})\s*$`).FindSubmatch(changelog)
	if m == nil {
		t.Fatal("CHANGELOG.md has no \"## YYYY-MM-DD\" entry")
	}
	month, _ := strconv.Atoi(string(m[2]))
	day, _ := strconv.Atoi(string(m[3]))
	// The project is versioned by the date of its changelog's newest
	// entry; as semver: 0.YYYY.MMDD (no leading zero).
	version := fmt.Sprintf("0.%s.%d", m[1], month*100+day)
	if got := str("version"); got != version {
		t.Errorf("version %q, want %q (CHANGELOG.md's newest entry is %s-%s-%s)", got, version, m[1], m[2], m[3])
	}
}

// conditions lists an exports entry's conditions in their order, each as
// condition=path.
func conditions(raw json.RawMessage) ([]string, error) {
	dec := json.NewDecoder(bytes.NewReader(raw))
	if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
		return nil, fmt.Errorf("not an object of conditions: %s", raw)
	}
	var conds []string
	for dec.More() {
		key, err := dec.Token()
		if err != nil {
			return nil, err
		}
		var path string
		if err := dec.Decode(&path); err != nil {
			return nil, fmt.Errorf("%v: not a path: %w", key, err)
		}
		conds = append(conds, fmt.Sprintf("%v=%s", key, path))
	}
	return conds, nil
}
