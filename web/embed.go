// Package web holds the bundled demo page and the JavaScript client it is
// built on (matchgate.js, with its TypeScript declarations
// matchgate.d.ts), embedded in the binary so that `matchgate serve` shows
// something useful with no extra files. It has no build step and loads
// nothing from outside the server. package.json makes matchgate.js and
// matchgate.d.ts an npm package as they are; it is not served.
package web

import (
	"embed"
	"io/fs"
	"mime"
)

// files lists what is served, one by one, so that nothing else in this
// folder (Go files, tests, package.json) is ever exposed by accident.
//
//go:embed index.html app.js matchgate.js matchgate.d.ts style.css favicon.svg
var files embed.FS

// FS is the demo page (index.html at the top), /matchgate.js, the client
// that other web pages and games may copy, and /matchgate.d.ts, its
// declarations.
var FS fs.FS = files

// typeScriptType is the Content-Type of /matchgate.d.ts. A file server
// takes a type from the name's extension, and the system's table may give
// .ts another meaning (Debian's: text/vnd.trolltech.linguist, elsewhere
// video/mp2t); the declarations are text to read.
const typeScriptType = "text/plain; charset=utf-8"

func init() {
	if err := mime.AddExtensionType(".ts", typeScriptType); err != nil {
		panic(err)
	}
}
