package gateway_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"google.golang.org/genproto/googleapis/api/annotations"
	"google.golang.org/grpc/codes"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/reflect/protoregistry"

	"github.com/wick-agent/wick/gen/openapi"
	"github.com/wick-agent/wick/services/gateway"
	"github.com/wick-agent/wick/services/gateway/internal/httperr"
	"github.com/wick-agent/wick/services/gateway/internal/terminal"
)

// route is one method on one path of the OpenAPI document, its path in the
// document's form (/agents/{agent_id}).
type route struct{ method, path string }

func (r route) String() string { return r.method + " " + r.path }

type doc = map[string]any

func openAPIDoc(t *testing.T) doc {
	t.Helper()
	var d doc
	if err := json.Unmarshal(openapi.Document, &d); err != nil {
		t.Fatalf("the embedded document is not JSON: %v", err)
	}
	return d
}

// at follows keys through nested objects; it fails the test when one is missing.
func at(t *testing.T, v any, keys ...string) any {
	t.Helper()
	for i, k := range keys {
		o, ok := v.(map[string]any)
		if !ok {
			t.Fatalf("%s is not an object", strings.Join(keys[:i], "."))
		}
		if v, ok = o[k]; !ok {
			t.Fatalf("the document has no %s", strings.Join(keys[:i+1], "."))
		}
	}
	return v
}

var docMethods = []string{"get", "put", "post", "delete", "options", "head", "patch", "trace"}

func documentedRoutes(t *testing.T, d doc) []route {
	t.Helper()
	var out []route
	for p, item := range at(t, d, "paths").(map[string]any) {
		for _, m := range docMethods {
			if _, ok := item.(map[string]any)[m]; ok {
				out = append(out, route{strings.ToUpper(m), p})
			}
		}
	}
	return out
}

// templatePath turns a google.api.http path template into the document's
// form; only whole-segment variables are served by the gateway's routes.
func templatePath(t *testing.T, tmpl string) string {
	t.Helper()
	p := regexp.MustCompile(`\{([a-z_.]+)(=\*)?\}`).ReplaceAllString(tmpl, "{$1}")
	if strings.ContainsAny(p, "=:") {
		t.Fatalf("path template %q is not one the document can describe", tmpl)
	}
	return p
}

// protoRoutes are the HTTP rules of every proto service linked into the
// gateway: what grpc-gateway serves.
func protoRoutes(t *testing.T) []route {
	t.Helper()
	var out []route
	protoregistry.GlobalFiles.RangeFiles(func(f protoreflect.FileDescriptor) bool {
		for i := range f.Services().Len() {
			methods := f.Services().Get(i).Methods()
			for j := range methods.Len() {
				rule, _ := proto.GetExtension(methods.Get(j).Options(), annotations.E_Http).(*annotations.HttpRule)
				if rule == nil {
					continue
				}
				for _, r := range append([]*annotations.HttpRule{rule}, rule.GetAdditionalBindings()...) {
					var m, p string
					switch pat := r.GetPattern().(type) {
					case *annotations.HttpRule_Get:
						m, p = "GET", pat.Get
					case *annotations.HttpRule_Put:
						m, p = "PUT", pat.Put
					case *annotations.HttpRule_Post:
						m, p = "POST", pat.Post
					case *annotations.HttpRule_Delete:
						m, p = "DELETE", pat.Delete
					case *annotations.HttpRule_Patch:
						m, p = "PATCH", pat.Patch
					case *annotations.HttpRule_Custom:
						m, p = pat.Custom.GetKind(), pat.Custom.GetPath()
					}
					out = append(out, route{m, templatePath(t, p)})
				}
			}
		}
		return true
	})
	if len(out) == 0 {
		t.Fatal("no proto service with HTTP rules is linked: the test would prove nothing")
	}
	return out
}

// normalRoute turns a route as the gateway records it (a ServeMux pattern
// or a grpc-gateway pattern) into the document's form.
func normalRoute(r string) string {
	return strings.ReplaceAll(strings.ReplaceAll(r, "...}", "}"), "=*}", "}")
}

// cancelOnWrite ends the request once the handler wrote something, so that
// a stream that never ends (GET /agents/events) is probed as far as its
// first frame.
type cancelOnWrite struct {
	*httptest.ResponseRecorder
	cancel context.CancelFunc
}

func (w *cancelOnWrite) Write(p []byte) (int, error) {
	defer w.cancel()
	return w.ResponseRecorder.Write(p)
}

type prober struct {
	gw  *gateway.Gateway
	exp *tracetest.InMemoryExporter
}

// probe sends method on a concrete path of the route template through the
// real gateway and reports the status and the route the gateway says it
// served it with (the name of the request's span).
func (p *prober) probe(t *testing.T, method, tmpl string, hdr ...string) (int, string) {
	t.Helper()
	path := regexp.MustCompile(`\{([a-z_]+)\}`).ReplaceAllStringFunc(tmpl, func(v string) string {
		switch v {
		case "{agent_id}":
			return "a1-alice" // exists, so handlers get past their lookup
		case "{path}":
			return "dir%2Ffile.txt" // as OpenAPI clients send it
		}
		return "x1"
	})
	var body *strings.Reader
	if method == http.MethodPost || method == http.MethodPut || method == http.MethodPatch {
		body = strings.NewReader("{}")
	} else {
		body = strings.NewReader("")
	}
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	req := httptest.NewRequestWithContext(ctx, method, path, body)
	req.Header.Set("Authorization", "Bearer "+aliceToken)
	for i := 0; i+1 < len(hdr); i += 2 {
		req.Header.Set(hdr[i], hdr[i+1])
	}
	w := &cancelOnWrite{ResponseRecorder: httptest.NewRecorder(), cancel: cancel}
	p.exp.Reset()
	p.gw.ServeHTTP(w, req)
	for _, s := range p.exp.GetSpans() {
		if name, ok := strings.CutPrefix(s.Name, method+" "); ok {
			return w.Code, normalRoute(name)
		}
	}
	t.Fatalf("%s %s: no span named after its route", method, path)
	return 0, ""
}

// TestOpenAPIRouteCoverage holds the document against the gateway: every
// route the gateway serves is described, and every described route is
// served, by the handler the document says. What the gateway serves comes
// from the proto HTTP rules grpc-gateway is built from, the patterns of the
// gateway's own mux, and requests sent through the real gateway.
func TestOpenAPIRouteCoverage(t *testing.T) {
	t.Parallel()
	exp := tracetest.NewInMemoryExporter()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(exp))
	llm := http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write([]byte("{}")) })
	env := startGateway(t, gateway.Config{}, gateway.WithTracerProvider(tp), gateway.WithLLMHandler(llm))
	p := &prober{gw: env.gw, exp: exp}
	d := openAPIDoc(t)

	served := map[route]bool{}
	grpcGateway := func(path string) bool {
		for _, prefix := range gateway.APIPrefixes {
			if path == prefix || strings.HasPrefix(path, prefix+"/") {
				return true
			}
		}
		return false
	}
	for _, r := range protoRoutes(t) {
		if !grpcGateway(r.path) {
			t.Errorf("the protos map %s, which is under no path the gateway mounts grpc-gateway on (%v)", r, gateway.APIPrefixes)
		}
		served[r] = true
	}
	llmMounted := false
	// Methods a handler mounted for every method may answer; OPTIONS is the
	// CORS middleware's preflight, not a route.
	probeMethods := []string{"GET", "HEAD", "POST", "PUT", "PATCH", "DELETE"}
	for _, pat := range gateway.Patterns(env.gw) {
		method, path, hasMethod := strings.Cut(pat, " ")
		if !hasMethod {
			method, path = "", pat
		}
		switch {
		case slices.Contains(gateway.APIPrefixes, strings.TrimSuffix(path, "/")):
			continue // grpc-gateway: its routes are the protos'
		case path == gateway.LLMMount:
			llmMounted = true
			continue // the LLM gateway's API: services/llmgw checks its routes against the document
		case path == "/":
			continue // the UI's files (SPA fallback): not an API
		case path == "/langgraph/":
			continue // LangGraph's API (docs/protocols.md), checked with its own SDK in e2e/clients
		case hasMethod:
			served[route{method, normalRoute(path)}] = true
			continue
		}
		// A handler for every method: the methods it does not refuse are
		// served. The WebSocket headers get the terminal past its check of
		// the upgrade to its check of the method.
		for _, m := range probeMethods {
			code, got := p.probe(t, m, normalRoute(path), "Connection", "Upgrade", "Upgrade", "websocket")
			if got != normalRoute(path) {
				t.Fatalf("%s %s was served by route %q", m, path, got)
			}
			if code != http.StatusMethodNotAllowed {
				served[route{m, normalRoute(path)}] = true
			}
		}
	}

	documented := documentedRoutes(t, d)
	isDocumented := map[route]bool{}
	for _, r := range documented {
		isDocumented[r] = true
	}
	for r := range served {
		if !isDocumented[r] {
			t.Errorf("the gateway serves %s, which the OpenAPI document does not describe", r)
		}
	}
	llmPaths := 0
	for _, r := range documented {
		if strings.HasPrefix(r.path, gateway.LLMMount) {
			llmPaths++
			if !llmMounted {
				t.Errorf("the document describes %s, but the gateway mounts nothing at %s", r, gateway.LLMMount)
				continue
			}
			if _, got := p.probe(t, r.method, r.path); got != gateway.LLMMount {
				t.Errorf("%s is served by %q, not the LLM gateway's mount %s", r, got, gateway.LLMMount)
			}
			continue
		}
		if !served[r] {
			t.Errorf("the document describes %s, which the gateway does not serve", r)
			continue
		}
		code, got := p.probe(t, r.method, r.path, "Connection", "Upgrade", "Upgrade", "websocket")
		if got != r.path || code == http.StatusMethodNotAllowed {
			t.Errorf("%s is answered %d by route %q", r, code, got)
		}
	}
	if llmMounted && llmPaths == 0 {
		t.Errorf("the gateway mounts the LLM gateway at %s, which the document does not describe", gateway.LLMMount)
	}
	if len(served) < 20 {
		t.Errorf("only %d routes found served: the test would prove little", len(served))
	}
}

// jsonFields are the JSON names of a struct's fields.
func jsonFields(v any) []string {
	var out []string
	rt := reflect.TypeOf(v)
	for i := range rt.NumField() {
		name, _, _ := strings.Cut(rt.Field(i).Tag.Get("json"), ",")
		if name != "" && name != "-" {
			out = append(out, name)
		}
	}
	slices.Sort(out)
	return out
}

func schemaProps(t *testing.T, d doc, name string) []string {
	t.Helper()
	var out []string
	for k := range at(t, d, "components", "schemas", name, "properties").(map[string]any) {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

// TestOpenAPIShapes compares what the document says of the gateway's own
// bodies and limits with the types and constants that make them.
func TestOpenAPIShapes(t *testing.T) {
	t.Parallel()
	d := openAPIDoc(t)
	for _, tc := range []struct {
		schema string
		value  any
	}{
		{"Error", httperr.Body{}},
		{"Health", gateway.Health{}},
		{"TerminalControl", terminal.Control{}},
	} {
		if got, want := schemaProps(t, d, tc.schema), jsonFields(tc.value); !slices.Equal(got, want) {
			t.Errorf("schema %s has properties %v; %T has %v", tc.schema, got, tc.value, want)
		}
	}

	var names []any
	for c := codes.OK; c <= codes.Unauthenticated; c++ {
		names = append(names, httperr.CodeName(c))
		msg := at(t, d, "components", "schemas", "Error", "properties", "message", "description").(string)
		if named := regexp.MustCompile(`\b` + httperr.CodeName(c) + `\b`).MatchString(msg); named != httperr.Public(c) {
			t.Errorf("Error.message's description names %s: %v; httperr.Public: %v", httperr.CodeName(c), named, httperr.Public(c))
		}
	}
	if got := at(t, d, "components", "schemas", "Error", "properties", "status", "enum"); !reflect.DeepEqual(got, names) {
		t.Errorf("Error.status enum = %v, want %v", got, names)
	}

	raw := at(t, d, "paths", "/agents/{agent_id}/files/raw/{path}", "put", "requestBody", "x-wick-max-bytes")
	terminalOp := at(t, d, "paths", "/agents/{agent_id}/terminal", "get")
	limits := []struct {
		name      string
		got, want any
	}{
		{"raw upload limit", raw, int64(gateway.DefaultMaxUploadBytes)},
		{"terminal frame limit", at(t, terminalOp, "x-wick-websocket", "maxFrameBytes"), int64(gateway.DefaultTerminalReadLimit)},
		{"access token parameter", at(t, d, "components", "securitySchemes", "access_token", "name"), gateway.AccessTokenParam},
	}
	for i, name := range []string{"rows", "cols"} {
		param := at(t, terminalOp, "parameters").([]any)[i+1]
		if at(t, param, "name") != name {
			t.Fatalf("terminal parameter %d is %v, want %s", i+1, at(t, param, "name"), name)
		}
		want := []int{terminal.DefaultRows, terminal.DefaultCols}[i]
		limits = append(limits, struct {
			name      string
			got, want any
		}{"terminal " + name, at(t, param, "schema", "default"), int64(want)})
	}
	for _, l := range limits {
		if f, ok := l.got.(float64); ok && f == float64(int64(f)) {
			l.got = int64(f) // JSON numbers decode as float64
		}
		if l.got != l.want {
			t.Errorf("%s: the document says %v, the gateway %v", l.name, l.got, l.want)
		}
	}
	for _, text := range []struct{ where, text, want string }{
		{"info.description", at(t, d, "info", "description").(string), fmt.Sprintf("at most %d bytes", gateway.DefaultMaxBodyBytes)},
		{"the stream's description", at(t, d, "paths", "/agents/{agent_id}/stream", "post", "description").(string),
			fmt.Sprintf("after %d s of silence", gateway.DefaultHeartbeat/time.Second)},
	} {
		if !strings.Contains(text.text, text.want) {
			t.Errorf("%s does not say %q", text.where, text.want)
		}
	}
}

// TestOpenAPIBodiesAsServed checks real answers of the gateway against the
// properties the document gives them.
func TestOpenAPIBodiesAsServed(t *testing.T) {
	t.Parallel()
	env := startGateway(t, gateway.Config{})
	d := openAPIDoc(t)
	for _, tc := range []struct {
		name, token, method, path, schema string
	}{
		{"an error from the service", aliceToken, "GET", "/agents/nope", "Error"},
		{"an error of the gateway", "", "GET", "/agents", "Error"},
		{"health", aliceToken, "GET", "/health", "Health"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := do(t, env.url, tc.token, tc.method, tc.path, "")
			var body map[string]any
			if err := json.Unmarshal([]byte(r.body), &body); err != nil {
				t.Fatalf("%s %s = %d %q: %v", tc.method, tc.path, r.code, r.body, err)
			}
			props := schemaProps(t, d, tc.schema)
			for k := range body {
				if !slices.Contains(props, k) {
					t.Errorf("the answer has %q, which %s does not describe (%v)", k, tc.schema, props)
				}
			}
			req, _ := at(t, d, "components", "schemas", tc.schema, "required").([]any)
			for _, k := range req {
				if _, ok := body[k.(string)]; !ok {
					t.Errorf("the answer lacks %q, which %s requires: %s", k, tc.schema, r.body)
				}
			}
		})
	}
}

// TestRawFilePathEscaped: OpenAPI clients send the {path} parameter with its
// slashes escaped (%2F); the gateway reads it as the same file as the
// unescaped form.
func TestRawFilePathEscaped(t *testing.T) {
	t.Parallel()
	env := startGateway(t, gateway.Config{})
	req, err := http.NewRequest("PUT", env.url+"/agents/a1-alice/files/raw/workspace%2Fdir%2Fa.txt", strings.NewReader("escaped"))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+aliceToken)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("escaped upload = %d", resp.StatusCode)
	}
	if r := do(t, env.url, aliceToken, "GET", "/agents/a1-alice/files/raw/workspace/dir/a.txt", ""); r.code != 200 || r.body != "escaped" {
		t.Fatalf("unescaped download = %d %q", r.code, r.body)
	}
}
