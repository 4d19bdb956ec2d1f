package protocol_test

import (
	"encoding/json"
	"os"
	"slices"
	"sort"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"

	"github.com/matchgate/matchgate/docs"
	"github.com/matchgate/matchgate/protocol"
)

type asyncSchema struct {
	Required   []string                  `yaml:"required"`
	Properties map[string]map[string]any `yaml:"properties"`
}

// asyncMessages reads docs/asyncapi.yaml: the payload of each frame type,
// by direction ("client" or "server", the prefix of the message key).
func asyncMessages(t *testing.T) map[string]map[string]asyncSchema {
	t.Helper()
	var doc struct {
		Components struct {
			Messages map[string]struct {
				Payload asyncSchema `yaml:"payload"`
			} `yaml:"messages"`
		} `yaml:"components"`
	}
	if err := yaml.Unmarshal(docs.AsyncAPI, &doc); err != nil {
		t.Fatalf("docs/asyncapi.yaml: %v", err)
	}
	out := map[string]map[string]asyncSchema{"client": {}, "server": {}}
	for key, m := range doc.Components.Messages {
		dir, _, _ := strings.Cut(key, "_")
		typ, _ := m.Payload.Properties["type"]["const"].(string)
		if out[dir] == nil || typ == "" {
			t.Errorf("message %s: want a client_ or server_ key and a type const", key)
			continue
		}
		out[dir][typ] = m.Payload
	}
	return out
}

// TestAsyncAPICoversTheProtocol: every frame type of the package is
// described in docs/asyncapi.yaml in its direction, and nothing else is.
func TestAsyncAPICoversTheProtocol(t *testing.T) {
	msgs := asyncMessages(t)
	want := map[string][]string{
		"client": slices.Concat(protocol.ClientFrameTypes, protocol.RankingClientFrameTypes, protocol.ProviderClientFrameTypes),
		"server": slices.Concat(protocol.ServerFrameTypes, protocol.ProviderServerFrameTypes),
	}
	for dir, types := range want {
		var got []string
		for typ := range msgs[dir] {
			got = append(got, typ)
		}
		sort.Strings(got)
		types = slices.Clone(types)
		sort.Strings(types)
		if !slices.Equal(got, types) {
			t.Errorf("%s frames: docs/asyncapi.yaml has %v, the package %v", dir, got, types)
		}
	}
}

// TestAsyncAPIFixtureFrames: each frame of testdata/wire.json has the
// required members of its schema, with the declared JSON types.
func TestAsyncAPIFixtureFrames(t *testing.T) {
	msgs := asyncMessages(t)
	raw, err := os.ReadFile(fixturePath)
	if err != nil {
		t.Fatal(err)
	}
	var fx map[string]json.RawMessage
	if err := json.Unmarshal(raw, &fx); err != nil {
		t.Fatal(err)
	}
	checked := 0
	for key, dir := range map[string]string{"server": "server", "client": "client", "rankingClient": "client", "errors": "server"} {
		var list []struct {
			Frame map[string]any `json:"frame"`
		}
		if fx[key] == nil {
			continue
		}
		if err := json.Unmarshal(fx[key], &list); err != nil {
			t.Fatalf("%s: %v", key, err)
		}
		for _, e := range list {
			typ, _ := e.Frame["type"].(string)
			s, ok := msgs[dir][typ]
			if !ok {
				t.Errorf("%s frame %q has no schema", key, typ)
				continue
			}
			checked++
			for _, r := range s.Required {
				// A fixture client frame is rendered without an id: the
				// client fills it in.
				if _, ok := e.Frame[r]; !ok && r != "id" {
					t.Errorf("%s frame %q lacks required %q", key, typ, r)
				}
			}
			for name, v := range e.Frame {
				p, ok := s.Properties[name]
				if !ok {
					t.Errorf("%s frame %q: member %q is not in its schema", key, typ, name)
					continue
				}
				if ty, _ := p["type"].(string); ty != "" && !jsonTypeIs(v, ty) {
					t.Errorf("%s frame %q: %q is %T, schema says %s", key, typ, name, v, ty)
				}
			}
		}
	}
	if checked < 20 {
		t.Errorf("checked only %d fixture frames", checked)
	}
}

func jsonTypeIs(v any, ty string) bool {
	switch x := v.(type) {
	case string:
		return ty == "string"
	case bool:
		return ty == "boolean"
	case float64:
		return ty == "number" || ty == "integer" && x == float64(int64(x))
	case []any:
		return ty == "array"
	case map[string]any:
		return ty == "object"
	case nil:
		return ty == "null"
	}
	return false
}
