// Package web holds the bundled demo page, embedded in the binary so that
// `matchgate serve` shows something useful with no extra files. It has no
// build step and loads nothing from outside the server.
package web

import (
	"embed"
	"io/fs"
)

//go:embed static
var static embed.FS

// FS is the demo page's files, rooted at static/ (index.html at the top).
var FS fs.FS = mustSub(static, "static")

func mustSub(f fs.FS, dir string) fs.FS {
	sub, err := fs.Sub(f, dir)
	if err != nil {
		// fs.Sub fails only for an invalid path, a constant here.
		panic(err)
	}
	return sub
}
