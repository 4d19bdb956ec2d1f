package gateway

import (
	"bytes"
	"io"
	"net/http"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"

	"github.com/gorilla/mux"
	"go.yaml.in/yaml/v3"

	"github.com/matchgate/matchgate/docs"
	"github.com/matchgate/matchgate/protocol"
)

// openAPIMethods are the operation keys of an OpenAPI path item.
var openAPIMethods = []string{"get", "put", "post", "delete", "options", "head", "patch", "trace"}

type openAPIDoc map[string]any

func loadOpenAPI(t *testing.T) openAPIDoc {
	t.Helper()
	// Decode into a plain map: yaml.v3 gives nested mappings the type of
	// the outer one.
	var doc map[string]any
	if err := yaml.Unmarshal(docs.OpenAPI, &doc); err != nil {
		t.Fatalf("docs/openapi.yaml: %v", err)
	}
	return doc
}

// operations lists "METHOD /path" for every operation in the document.
func (d openAPIDoc) operations(t *testing.T) map[string]map[string]any {
	t.Helper()
	paths, ok := d["paths"].(map[string]any)
	if !ok {
		t.Fatal("docs/openapi.yaml has no paths")
	}
	ops := map[string]map[string]any{}
	for p, item := range paths {
		m, ok := item.(map[string]any)
		if !ok {
			t.Fatalf("path %s is not an object", p)
		}
		for _, method := range openAPIMethods {
			if op, ok := m[method].(map[string]any); ok {
				ops[strings.ToUpper(method)+" "+p] = op
			}
		}
	}
	return ops
}

// resolve follows a local $ref ("#/components/…") once.
func (d openAPIDoc) resolve(t *testing.T, v any) map[string]any {
	t.Helper()
	m, _ := v.(map[string]any)
	ref, ok := m["$ref"].(string)
	if !ok {
		return m
	}
	if !strings.HasPrefix(ref, "#/") {
		t.Fatalf("non-local $ref %q", ref)
	}
	var cur any = map[string]any(d)
	for _, part := range strings.Split(strings.TrimPrefix(ref, "#/"), "/") {
		next, ok := cur.(map[string]any)[part]
		if !ok {
			t.Fatalf("$ref %q does not resolve", ref)
		}
		cur = next
	}
	out, _ := cur.(map[string]any)
	return out
}

var routeVar = regexp.MustCompile(`\{([^}:]+)(:[^}]*)?\}`)

// routerOperations walks the gateway's router: "METHOD /template" for every
// route, with gorilla's {name:pattern} variables written as OpenAPI's {name}.
func routerOperations(t *testing.T, r *mux.Router) []string {
	t.Helper()
	var ops []string
	err := r.Walk(func(route *mux.Route, _ *mux.Router, _ []*mux.Route) error {
		tpl, err := route.GetPathTemplate()
		if err != nil {
			t.Errorf("route without a path template: %v", err)
			return nil
		}
		methods, err := route.GetMethods()
		if err != nil {
			t.Errorf("route %s has no method restriction: give it Methods(…) so the spec can describe it", tpl)
			return nil
		}
		path := routeVar.ReplaceAllString(tpl, "{$1}")
		for _, m := range methods {
			ops = append(ops, strings.ToUpper(m)+" "+path)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	sort.Strings(ops)
	return ops
}

func newRouterForTest(t *testing.T) *mux.Router {
	t.Helper()
	srv, err := New(Config{Matchmaker: &fakeMatchmaker{}, Subscriber: newFakeSubscriber(), Secret: testSecret})
	if err != nil {
		t.Fatal(err)
	}
	return srv.routes()
}

// TestOpenAPIMatchesRouter: every route the router registers is described
// in docs/openapi.yaml, and every operation described there is routed.
func TestOpenAPIMatchesRouter(t *testing.T) {
	routed := routerOperations(t, newRouterForTest(t))
	if len(routed) < 10 {
		t.Fatalf("walked only %d routes: %v", len(routed), routed)
	}
	described := loadOpenAPI(t).operations(t)
	for _, op := range routed {
		if _, ok := described[op]; !ok {
			t.Errorf("%s is routed but not in docs/openapi.yaml", op)
		}
	}
	for op := range described {
		if !slices.Contains(routed, op) {
			t.Errorf("%s is in docs/openapi.yaml but not routed", op)
		}
	}
}

// TestOpenAPIDocument checks the document itself: version, unique
// operation ids, declared path parameters, resolvable references, and the
// error codes of the one code→status table.
func TestOpenAPIDocument(t *testing.T) {
	doc := loadOpenAPI(t)
	if v, _ := doc["openapi"].(string); !strings.HasPrefix(v, "3.1.") {
		t.Errorf("openapi = %q, want 3.1.x", v)
	}
	paths := doc["paths"].(map[string]any)
	ids := map[string]string{}
	for key, op := range doc.operations(t) {
		id, _ := op["operationId"].(string)
		if id == "" {
			t.Errorf("%s has no operationId", key)
		} else if prev, dup := ids[id]; dup {
			t.Errorf("operationId %s used by %s and %s", id, prev, key)
		}
		ids[id] = key
		if rs, _ := op["responses"].(map[string]any); len(rs) == 0 {
			t.Errorf("%s has no responses", key)
		}
		// Every {var} of the path is declared as a path parameter, on the
		// operation or on its path item.
		path := key[strings.Index(key, " ")+1:]
		declared := map[string]bool{}
		item := paths[path].(map[string]any)
		for _, list := range []any{item["parameters"], op["parameters"]} {
			ps, _ := list.([]any)
			for _, p := range ps {
				param := doc.resolve(t, p)
				if param["in"] == "path" {
					declared[param["name"].(string)] = true
					if param["required"] != true {
						t.Errorf("%s: path parameter %v must be required", key, param["name"])
					}
				}
			}
		}
		for _, m := range routeVar.FindAllStringSubmatch(path, -1) {
			if !declared[m[1]] {
				t.Errorf("%s: path parameter {%s} is not declared", key, m[1])
			}
		}
	}
	// Every $ref resolves.
	var walk func(v any)
	walk = func(v any) {
		switch x := v.(type) {
		case map[string]any:
			if _, ok := x["$ref"]; ok {
				doc.resolve(t, x)
			}
			for _, c := range x {
				walk(c)
			}
		case []any:
			for _, c := range x {
				walk(c)
			}
		}
	}
	walk(map[string]any(doc))

	// The ErrorCode enum is exactly the protocol's codes.
	schema := doc.resolve(t, map[string]any{"$ref": "#/components/schemas/ErrorCode"})
	var inSpec []string
	for _, c := range schema["enum"].([]any) {
		inSpec = append(inSpec, c.(string))
	}
	var inTable []string
	for _, c := range protocol.Codes() {
		inTable = append(inTable, string(c))
	}
	sort.Strings(inSpec)
	sort.Strings(inTable)
	if !slices.Equal(inSpec, inTable) {
		t.Errorf("ErrorCode enum %v, the protocol's codes %v", inSpec, inTable)
	}
	if !slices.Contains(inSpec, string(protocol.CodeAlreadyQueued)) {
		t.Error("ErrorCode lacks ALREADY_QUEUED")
	}
}

// TestDocumentsServed: GET /v1/openapi.yaml and /v1/asyncapi.yaml answer
// the embedded documents without a token; HEAD answers their headers and
// other methods are refused.
func TestDocumentsServed(t *testing.T) {
	env := startServer(t, Config{})
	for route, doc := range map[string][]byte{openAPIRoute: docs.OpenAPI, asyncAPIRoute: docs.AsyncAPI} {
		resp, err := testClient.Get(env.base + route)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("%s: status %d: %s", route, resp.StatusCode, body)
		}
		if ct := resp.Header.Get("Content-Type"); !strings.HasPrefix(ct, "application/yaml") {
			t.Errorf("%s: Content-Type = %q", route, ct)
		}
		if !bytes.Equal(body, doc) {
			t.Errorf("%s: served document differs from the embedded one", route)
		}

		for method, want := range map[string]int{http.MethodHead: http.StatusOK, http.MethodPost: http.StatusMethodNotAllowed} {
			req, _ := http.NewRequest(method, env.base+route, nil)
			resp, err = testClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			if resp.StatusCode != want {
				t.Errorf("%s %s: status %d, want %d", method, route, resp.StatusCode, want)
			}
			if method == http.MethodHead && resp.Header.Get("Content-Length") != strconv.Itoa(len(doc)) {
				t.Errorf("HEAD %s: Content-Length %q, want %d", route, resp.Header.Get("Content-Length"), len(doc))
			}
		}
	}
}
