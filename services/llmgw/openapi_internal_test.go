package llmgw

import (
	"bufio"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/wick-agent/wick/gen/openapi"
)

// openAPIDoc returns the paths and component schemas of the gateway's OpenAPI document.
func openAPIDoc(t *testing.T) (paths map[string]map[string]any, schemas map[string]map[string]any) {
	t.Helper()
	var d struct {
		Paths      map[string]map[string]any `json:"paths"`
		Components struct {
			Schemas map[string]map[string]any `json:"schemas"`
		} `json:"components"`
	}
	if err := json.Unmarshal(openapi.Document, &d); err != nil {
		t.Fatal(err)
	}
	return d.Paths, d.Components.Schemas
}

func props(t *testing.T, schemas map[string]map[string]any, name string) []string {
	t.Helper()
	p, ok := schemas[name]["properties"].(map[string]any)
	if !ok {
		t.Fatalf("the document has no schema %s with properties", name)
	}
	var out []string
	for k := range p {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

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

// TestOpenAPIRoutes holds the /v1 paths of the gateway's OpenAPI document
// against the routes this handler serves: each route is described, each
// described path is served.
func TestOpenAPIRoutes(t *testing.T) {
	t.Parallel()
	svc, err := New(DefaultConfig())
	if err != nil {
		t.Fatal(err)
	}
	paths, _ := openAPIDoc(t)
	var documented []string
	for p, item := range paths {
		if !strings.HasPrefix(p, "/v1/") {
			continue
		}
		for m := range item {
			if m == "parameters" || strings.HasPrefix(m, "x-") {
				continue
			}
			documented = append(documented, strings.ToUpper(m)+" "+p)
		}
	}
	slices.Sort(documented)
	served := slices.Sorted(func(yield func(string) bool) {
		for p := range svc.httpRoutes() {
			if !yield(p) {
				return
			}
		}
	})
	if !slices.Equal(documented, served) {
		t.Errorf("the document describes %v under /v1; the handler serves %v", documented, served)
	}
	h := svc.HTTPHandler()
	for _, r := range documented {
		method, path, _ := strings.Cut(r, " ")
		path = strings.ReplaceAll(path, "{id}", "demo")
		w := httptest.NewRecorder()
		h.ServeHTTP(w, httptest.NewRequest(method, path, strings.NewReader("{}")))
		// The catch-all's 404 (code unknown_url) and 405 mean no route; a
		// handler answers JSON.
		if w.Code == http.StatusNotFound || w.Code == http.StatusMethodNotAllowed || w.Header().Get("Content-Type") != "application/json" || strings.Contains(w.Body.String(), "unknown_url") {
			t.Errorf("%s = %d %q: not routed to a handler", r, w.Code, w.Body.String())
		}
	}
}

// TestOpenAPIShapes compares the document's OpenAI schemas with the wire
// types, and real answers with the schemas.
func TestOpenAPIShapes(t *testing.T) {
	t.Parallel()
	_, schemas := openAPIDoc(t)
	for _, tc := range []struct {
		schema string
		value  any
	}{
		{"openai.ChatCompletionRequest", chatRequest{}},
		{"openai.ChatMessage", chatMessage{}},
		{"openai.ToolCall", chatToolCall{}},
		{"openai.Tool", chatTool{}},
		{"openai.ChatCompletion", completion{}},
		{"openai.ChatCompletionChunk", chunk{}},
		{"openai.Usage", chatUsage{}},
		{"openai.Model", modelObject{}},
		{"openai.EmbeddingsRequest", embeddingsRequest{}},
		{"openai.Embeddings", embeddingsResponse{}},
		{"anthropic.MessagesRequest", messagesRequest{}},
		{"anthropic.ContentBlock", contentBlock{}},
		{"anthropic.Tool", anthropicTool{}},
		{"anthropic.Message", message{}},
		{"anthropic.Usage", messageUsage{}},
	} {
		if got, want := props(t, schemas, tc.schema), jsonFields(tc.value); !slices.Equal(got, want) {
			t.Errorf("schema %s has properties %v; %T has %v", tc.schema, got, tc.value, want)
		}
	}

	svc, err := New(DefaultConfig())
	if err != nil {
		t.Fatal(err)
	}
	h := svc.HTTPHandler()
	call := func(method, path, body string) *httptest.ResponseRecorder {
		w := httptest.NewRecorder()
		h.ServeHTTP(w, httptest.NewRequest(method, path, strings.NewReader(body)))
		return w
	}
	keysWithin := func(what, schema string, data []byte) {
		var m map[string]any
		if err := json.Unmarshal(data, &m); err != nil {
			t.Fatalf("%s %q: %v", what, data, err)
		}
		want := props(t, schemas, schema)
		for k := range m {
			if !slices.Contains(want, k) {
				t.Errorf("%s has %q, which %s does not describe", what, k, schema)
			}
		}
	}
	const req = `{"model":"script:[{\"text\":\"hello\"}]","messages":[{"role":"user","content":"hi"}]`
	w := call("POST", "/v1/chat/completions", req+`}`)
	if w.Code != http.StatusOK {
		t.Fatalf("completion = %d %s", w.Code, w.Body)
	}
	keysWithin("a completion", "openai.ChatCompletion", w.Body.Bytes())

	w = call("POST", "/v1/chat/completions", req+`,"stream":true,"stream_options":{"include_usage":true}}`)
	if ct := w.Header().Get("Content-Type"); w.Code != http.StatusOK || ct != "text/event-stream" {
		t.Fatalf("stream = %d %q", w.Code, ct)
	}
	frames := 0
	sc := bufio.NewScanner(w.Body)
	for sc.Scan() {
		data, ok := strings.CutPrefix(sc.Text(), "data: ")
		if !ok || data == "[DONE]" {
			continue
		}
		frames++
		keysWithin("a chunk", "openai.ChatCompletionChunk", []byte(data))
	}
	if frames < 2 {
		t.Errorf("the stream had %d chunks", frames)
	}

	w = call("GET", "/v1/models", "")
	keysWithin("the model list", "openai.ModelList", w.Body.Bytes())
	w = call("GET", "/v1/models/demo", "")
	keysWithin("a model", "openai.Model", w.Body.Bytes())
	w = call("POST", "/v1/embeddings", `{"input":["a","b"],"encoding_format":"base64"}`)
	if w.Code != http.StatusOK {
		t.Fatalf("embeddings = %d %s", w.Code, w.Body)
	}
	keysWithin("embeddings", "openai.Embeddings", w.Body.Bytes())
	for _, path := range []string{"/v1/models/nosuch", "/v1/nosuch"} {
		w = call("GET", path, "")
		if w.Code != http.StatusNotFound {
			t.Fatalf("GET %s = %d", path, w.Code)
		}
		keysWithin("an error", "openai.Error", w.Body.Bytes())
	}
	w = call("POST", "/v1/chat/completions", `{"messages":[]}`)
	if w.Code != http.StatusBadRequest {
		t.Fatalf("no messages = %d", w.Code)
	}
	keysWithin("an error", "openai.Error", w.Body.Bytes())

	const mreq = `{"model":"script:[{\"thinking\":\"hm\",\"text\":\"hello\"}]","max_tokens":10,"messages":[{"role":"user","content":"hi"}]`
	w = call("POST", "/v1/messages", mreq+`}`)
	if w.Code != http.StatusOK {
		t.Fatalf("message = %d %s", w.Code, w.Body)
	}
	keysWithin("a message", "anthropic.Message", w.Body.Bytes())
	w = call("POST", "/v1/messages/count_tokens", mreq+`}`)
	keysWithin("a token count", "anthropic.TokenCount", w.Body.Bytes())
	w = call("POST", "/v1/messages", `{"messages":[]}`)
	if w.Code != http.StatusBadRequest {
		t.Fatalf("no messages = %d", w.Code)
	}
	keysWithin("an error", "anthropic.Error", w.Body.Bytes())
	w = call("POST", "/v1/messages", mreq+`,"stream":true}`)
	events := 0
	sc = bufio.NewScanner(w.Body)
	for sc.Scan() {
		if name, ok := strings.CutPrefix(sc.Text(), "event: "); ok {
			events++
			if !slices.Contains(frameEvents(t, schemas), name) {
				t.Errorf("event %q is not described", name)
			}
		}
	}
	if events < 8 {
		t.Errorf("the stream had %d events", events)
	}
}

func frameEvents(t *testing.T, schemas map[string]map[string]any) []string {
	t.Helper()
	ev, _ := schemas["anthropic.MessageStreamFrame"]["properties"].(map[string]any)["event"].(map[string]any)
	var out []string
	for _, v := range ev["enum"].([]any) {
		out = append(out, v.(string))
	}
	return out
}
