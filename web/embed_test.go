package web

import (
	"io/fs"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// TestFSServesTheDemo: the page, its script, the client module, the style
// and the icon are embedded, and nothing else (no Go files, no tests).
func TestFSServesTheDemo(t *testing.T) {
	want := []string{"app.js", "favicon.svg", "index.html", "matchgate.js", "style.css"}
	var got []string
	err := fs.WalkDir(FS, ".", func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := fs.ReadFile(FS, path)
		if err != nil {
			return err
		}
		if len(b) == 0 {
			t.Errorf("%s is empty", path)
		}
		got = append(got, path)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	slices.Sort(got)
	if !slices.Equal(got, want) {
		t.Fatalf("embedded %v, want %v", got, want)
	}
}

// TestPageUsesTheClient: the page is an ES module that talks to the server
// through matchgate.js only (no fetch or WebSocket of its own).
func TestPageUsesTheClient(t *testing.T) {
	html, _ := fs.ReadFile(FS, "index.html")
	if !strings.Contains(string(html), `<script type="module" src="app.js">`) {
		t.Error("index.html does not load app.js as a module")
	}
	app, _ := fs.ReadFile(FS, "app.js")
	if !strings.Contains(string(app), `from './matchgate.js'`) {
		t.Error("app.js does not import ./matchgate.js")
	}
	if loc := regexp.MustCompile(`\bfetch\(|new WebSocket\(|XMLHttpRequest`).FindIndex(app); loc != nil {
		t.Errorf("app.js talks to the server itself: %s", app[loc[0]:loc[1]])
	}
	// Server data goes in as text only.
	if loc := regexp.MustCompile(`innerHTML|outerHTML|insertAdjacentHTML|document\.write`).FindIndex(app); loc != nil {
		t.Errorf("app.js inserts HTML: %s", app[loc[0]:loc[1]])
	}
}

// TestNoExternalResources: the page loads nothing from another origin (no
// CDN), so it works offline and under the gateway's CSP.
func TestNoExternalResources(t *testing.T) {
	external := regexp.MustCompile(`(?i)(src|href)\s*=\s*["']?(https?:)?//|@import\s+url\(\s*["']?https?:|\bimport\s.*from\s+["']https?:`)
	err := fs.WalkDir(FS, ".", func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := fs.ReadFile(FS, path)
		if err != nil {
			return err
		}
		if loc := external.FindIndex(b); loc != nil {
			t.Errorf("%s loads an external resource: %s", path, b[loc[0]:min(len(b), loc[1]+40)])
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}
