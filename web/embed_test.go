package web

import (
	"bytes"
	"io"
	"io/fs"
	"net/http"
	"net/http/httptest"
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// TestFSServesTheDemo: the page, its script, the client module and its
// declarations, the style and the icon are embedded, and nothing else (no
// Go files, no tests, not package.json).
func TestFSServesTheDemo(t *testing.T) {
	want := []string{"app.js", "favicon.svg", "index.html", "matchgate.d.ts", "matchgate.js", "style.css"}
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

// TestServesTheClient: a file server of FS (the gateway's is one) serves
// the client as JavaScript and its declarations as text, whatever the
// system's table says of .ts, byte for byte as in this folder; and not
// package.json.
func TestServesTheClient(t *testing.T) {
	srv := httptest.NewServer(http.FileServerFS(FS))
	defer srv.Close()
	for _, tc := range []struct{ path, contentType string }{
		{"/matchgate.js", "text/javascript; charset=utf-8"},
		{"/matchgate.d.ts", "text/plain; charset=utf-8"},
	} {
		res, err := http.Get(srv.URL + tc.path)
		if err != nil {
			t.Fatal(err)
		}
		body, err := io.ReadAll(res.Body)
		res.Body.Close()
		if err != nil {
			t.Fatal(err)
		}
		if res.StatusCode != http.StatusOK {
			t.Fatalf("GET %s: %s", tc.path, res.Status)
		}
		if got := res.Header.Get("Content-Type"); got != tc.contentType {
			t.Errorf("GET %s: Content-Type %q, want %q", tc.path, got, tc.contentType)
		}
		want, err := os.ReadFile(tc.path[1:])
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(body, want) {
			t.Errorf("GET %s: %d bytes, not the %d of the file", tc.path, len(body), len(want))
		}
	}
	res, err := http.Get(srv.URL + "/package.json")
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if res.StatusCode != http.StatusNotFound {
		t.Errorf("GET /package.json: %s, want 404", res.Status)
	}
}
