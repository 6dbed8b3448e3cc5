package agent_test

import (
	"encoding/json"
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/wick-agent/wick/gen/openapi"
	"github.com/wick-agent/wick/platform/runevent"
	"github.com/wick-agent/wick/services/agent"
)

// eventConsts finds the string constants named Event… in the service's
// source, by package directory: the names of the events it emits.
func eventConsts(t *testing.T) map[string][]string {
	t.Helper()
	out := map[string][]string{}
	fset := token.NewFileSet()
	err := filepath.WalkDir(".", func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return err
		}
		f, err := parser.ParseFile(fset, path, nil, 0)
		if err != nil {
			return err
		}
		for _, decl := range f.Decls {
			gd, ok := decl.(*ast.GenDecl)
			if !ok || gd.Tok != token.CONST {
				continue
			}
			for _, spec := range gd.Specs {
				vs := spec.(*ast.ValueSpec)
				for i, name := range vs.Names {
					if !strings.HasPrefix(name.Name, "Event") || i >= len(vs.Values) {
						continue
					}
					lit, ok := vs.Values[i].(*ast.BasicLit)
					if !ok || lit.Kind != token.STRING {
						continue // an alias of a constant found elsewhere
					}
					v, _ := strconv.Unquote(lit.Value)
					dir := filepath.ToSlash(filepath.Dir(path))
					out[dir] = append(out[dir], v)
				}
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// documentedKinds are the kinds of an event union in the OpenAPI document.
func documentedKinds(t *testing.T, union string) []string {
	t.Helper()
	var d struct {
		Components struct {
			Schemas map[string]struct {
				Discriminator struct {
					Mapping map[string]string `json:"mapping"`
				} `json:"discriminator"`
			} `json:"schemas"`
		} `json:"components"`
	}
	if err := json.Unmarshal(openapi.Document, &d); err != nil {
		t.Fatal(err)
	}
	var out []string
	for k := range d.Components.Schemas[union].Discriminator.Mapping {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

// TestOpenAPIEventKinds checks that the OpenAPI document describes exactly
// the event kinds the service emits: run events (RunEvent), whose kinds are
// the fields of the RunEventData oneof (runevent.Kinds), and configuration
// events (ConfigEvent) from the registry and WatchEvents. No package names
// run event kinds of its own.
func TestOpenAPIEventKinds(t *testing.T) {
	t.Parallel()
	consts := eventConsts(t)
	union := map[string]string{
		"internal/registry": "ConfigEvent",
		".":                 "ConfigEvent", // EventSubscribed, the first event of WatchEvents
	}
	emitted := map[string][]string{"RunEvent": runevent.Kinds()}
	for dir, names := range consts {
		u, ok := union[dir]
		if !ok {
			t.Errorf("%s defines event names %v: run event kinds are RunEventData's fields; say here which stream sends others", dir, names)
			continue
		}
		emitted[u] = append(emitted[u], names...)
	}
	if !slices.Contains(emitted["ConfigEvent"], agent.EventSubscribed) || !slices.Contains(emitted["RunEvent"], "on_run_start") {
		t.Fatalf("the source scan missed known events: %v", emitted)
	}
	for _, u := range []string{"RunEvent", "ConfigEvent"} {
		want := slices.Sorted(slices.Values(emitted[u]))
		want = slices.Compact(want)
		if got := documentedKinds(t, u); !slices.Equal(got, want) {
			t.Errorf("the document's %s kinds are %v; the service emits %v", u, got, want)
		}
	}
}
