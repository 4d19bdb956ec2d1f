package web

import (
	"io/fs"
	"regexp"
	"testing"
)

func TestFSServesTheDemo(t *testing.T) {
	for _, name := range []string{"index.html", "app.js", "style.css"} {
		b, err := fs.ReadFile(FS, name)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if len(b) == 0 {
			t.Fatalf("%s is empty", name)
		}
	}
}

// TestNoExternalResources: the page loads nothing from another origin (no
// CDN), so it works offline and under the gateway's CSP.
func TestNoExternalResources(t *testing.T) {
	external := regexp.MustCompile(`(?i)(src|href)\s*=\s*["']?(https?:)?//`)
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
