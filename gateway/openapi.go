package gateway

import (
	"net/http"
	"strconv"

	"github.com/matchgate/matchgate/docs"
)

// openAPIRoute serves docs/openapi.yaml, the description of the REST API.
const openAPIRoute = "/v1/openapi.yaml"

// handleOpenAPI serves the embedded OpenAPI document. It is public: it
// describes the API, not anyone's data. The document comes from the docs
// package because go:embed cannot reach ../docs from here.
func (s *Server) handleOpenAPI(w http.ResponseWriter, r *http.Request) {
	h := w.Header()
	h.Set("Content-Type", "application/yaml; charset=utf-8")
	h.Set("Cache-Control", "no-cache")
	h.Set("Content-Length", strconv.Itoa(len(docs.OpenAPI)))
	if r.Method == http.MethodHead {
		return
	}
	_, _ = w.Write(docs.OpenAPI)
}

// asyncAPIRoute serves docs/asyncapi.yaml, the description of the
// WebSocket frames.
const asyncAPIRoute = "/v1/asyncapi.yaml"

// handleAsyncAPI serves the embedded AsyncAPI document, public like the
// OpenAPI one.
func (s *Server) handleAsyncAPI(w http.ResponseWriter, r *http.Request) {
	h := w.Header()
	h.Set("Content-Type", "application/yaml; charset=utf-8")
	h.Set("Cache-Control", "no-cache")
	h.Set("Content-Length", strconv.Itoa(len(docs.AsyncAPI)))
	if r.Method == http.MethodHead {
		return
	}
	_, _ = w.Write(docs.AsyncAPI)
}
