// Package docs holds documents the server itself serves. It exists so that
// the OpenAPI description can live at docs/openapi.yaml, where readers look
// for it, and still be embedded in the binary: go:embed cannot reach a
// parent folder, so the gateway cannot embed ../docs/openapi.yaml itself.
package docs

import _ "embed"

// OpenAPI is docs/openapi.yaml: the OpenAPI 3.1 description of the REST API,
// served by the gateway at GET /v1/openapi.yaml.
//
//go:embed openapi.yaml
var OpenAPI []byte

// AsyncAPI is docs/asyncapi.yaml: the AsyncAPI 3.0 description of the
// WebSocket frames, served by the gateway at GET /v1/asyncapi.yaml.
//
//go:embed asyncapi.yaml
var AsyncAPI []byte
