package gateway

import (
	"net/http"
	"strconv"
)

// openAPIRoute serves docs/openapi.yaml, the description of the REST API;
// asyncAPIRoute serves docs/asyncapi.yaml, the description of the WebSocket
// frames.
const (
	openAPIRoute  = "/v1/openapi.yaml"
	asyncAPIRoute = "/v1/asyncapi.yaml"
)

// serveYAML answers GET and HEAD with an embedded document. The documents
// are public: they describe the API, not anyone's data. They come from the
// docs package because go:embed cannot reach ../docs from here.
func serveYAML(doc []byte) http.HandlerFunc {
	length := strconv.Itoa(len(doc))
	return func(w http.ResponseWriter, r *http.Request) {
		h := w.Header()
		h.Set("Content-Type", "application/yaml; charset=utf-8")
		h.Set("Cache-Control", "no-cache")
		h.Set("Content-Length", length)
		if r.Method == http.MethodHead {
			return
		}
		_, _ = w.Write(doc)
	}
}
