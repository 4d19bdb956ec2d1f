// Package web holds the bundled demo page and the JavaScript client it is
// built on (matchgate.js), embedded in the binary so that `matchgate serve`
// shows something useful with no extra files. It has no build step and
// loads nothing from outside the server.
package web

import (
	"embed"
	"io/fs"
)

// files lists what is served, one by one, so that nothing else in this
// folder (Go files, tests) is ever exposed by accident.
//
//go:embed index.html app.js matchgate.js style.css favicon.svg
var files embed.FS

// FS is the demo page (index.html at the top) and /matchgate.js, the
// client that other web pages and games may copy.
var FS fs.FS = files
