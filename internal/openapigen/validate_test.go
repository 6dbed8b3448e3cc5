package openapigen_test

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/pb33f/libopenapi"
	validator "github.com/pb33f/libopenapi-validator"

	"github.com/wick-agent/wick/gen/openapi"
)

// validate runs an independent OpenAPI validator (pb33f/libopenapi and its
// validator, which checks a document against the OpenAPI 3.1 JSON Schema)
// over a document and returns its complaints.
func validate(t *testing.T, doc []byte) (validator.Validator, []string) {
	t.Helper()
	d, err := libopenapi.NewDocument(doc)
	if err != nil {
		return nil, []string{err.Error()}
	}
	if v := d.GetVersion(); v != "3.1.0" {
		return nil, []string{"OpenAPI version " + v}
	}
	v, errs := validator.NewValidator(d)
	if len(errs) > 0 {
		var out []string
		for _, e := range errs {
			out = append(out, e.Error())
		}
		return nil, out
	}
	ok, verrs := v.ValidateDocument()
	var out []string
	for _, e := range verrs {
		out = append(out, e.Message+": "+e.Reason+" ("+e.SpecPath+")")
	}
	if !ok && len(out) == 0 {
		out = append(out, "invalid, without a reason")
	}
	return v, out
}

// TestDocumentIsValidOpenAPI31 validates the generated document, and shows
// that the validator refuses broken variants of it (so that its silence
// means something).
func TestDocumentIsValidOpenAPI31(t *testing.T) {
	t.Parallel()
	var base map[string]any
	if err := json.Unmarshal(openapi.Document, &base); err != nil {
		t.Fatalf("the document is not JSON: %v", err)
	}
	if openapi.Version() == "" || openapi.Version() != base["info"].(map[string]any)["version"] {
		t.Fatalf("openapi.Version() = %q", openapi.Version())
	}
	for _, tc := range []struct {
		name   string
		mutate func(map[string]any)
	}{
		{"the generated document", nil},
		{"no info", func(d map[string]any) { delete(d, "info") }},
		{"a path without its slash", func(d map[string]any) {
			paths := d["paths"].(map[string]any)
			paths["health"] = paths["/health"]
		}},
		{"a response without a description", func(d map[string]any) {
			op := d["paths"].(map[string]any)["/health"].(map[string]any)["get"].(map[string]any)
			delete(op["responses"].(map[string]any)["200"].(map[string]any), "description")
		}},
		{"a parameter in nowhere", func(d map[string]any) {
			op := d["paths"].(map[string]any)["/agents/{agent_id}/terminal"].(map[string]any)["get"].(map[string]any)
			op["parameters"].([]any)[1].(map[string]any)["in"] = "body"
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			doc := openapi.Document
			if tc.mutate != nil {
				var d map[string]any
				if err := json.Unmarshal(openapi.Document, &d); err != nil {
					t.Fatal(err)
				}
				tc.mutate(d)
				var err error
				if doc, err = json.Marshal(d); err != nil {
					t.Fatal(err)
				}
			}
			_, complaints := validate(t, doc)
			if tc.mutate == nil && len(complaints) > 0 {
				t.Fatalf("the validator refuses the document:\n%s", strings.Join(complaints, "\n"))
			}
			if tc.mutate != nil && len(complaints) == 0 {
				t.Fatal("the validator accepts a broken document")
			}
		})
	}
}

// TestResponsesAgainstSchemas has the validator check sample answers
// against the document's schemas: the schemas compile, and they tell a
// right answer from a wrong one.
func TestResponsesAgainstSchemas(t *testing.T) {
	t.Parallel()
	v, complaints := validate(t, openapi.Document)
	if len(complaints) > 0 {
		t.Fatalf("the document is invalid: %v", complaints)
	}
	for _, tc := range []struct {
		name, method, path string
		status             int
		body               string
		valid              bool
	}{
		{"health", "GET", "/health", 200, `{"status":"ok","services":{"gateway":"SERVING","agent":"SERVING"},"agents":2}`, true},
		{"health with an unknown state", "GET", "/health", 200, `{"status":"fine","services":{}}`, false},
		{"an error", "GET", "/agents/a1", 404, `{"code":5,"status":"NOT_FOUND","message":"agent \"a1\" not found","trace_id":"4bf92f3577b34da6a3ce929d0e0e4736"}`, true},
		{"an error without its status", "GET", "/agents/a1", 404, `{"code":5,"message":"not found"}`, false},
		{"an agent in proto names", "GET", "/agents/a1", 200, `{"agent":{"agent_id":"a1","max_turns":25,"hooks":{"todolist":true}}}`, true},
		{"an agent with a wrong type", "GET", "/agents/a1", 200, `{"agent":{"agent_id":"a1","max_turns":"many"}}`, false},
		{"a raw upload (the path escaped, as OpenAPI wants)", "PUT", "/agents/a1/files/raw/workspace%2Fa.txt", 200, `{"path":"/workspace/a.txt","bytes_written":"5"}`, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			req := httptest.NewRequest(tc.method, "http://wick.test"+tc.path, nil)
			resp := &http.Response{
				StatusCode: tc.status,
				Header:     http.Header{"Content-Type": {"application/json"}},
				Body:       io.NopCloser(strings.NewReader(tc.body)),
				Request:    req,
			}
			ok, errs := v.ValidateHttpResponse(req, resp)
			if ok != tc.valid {
				var msgs []string
				for _, e := range errs {
					msgs = append(msgs, e.Message+": "+e.Reason)
				}
				t.Fatalf("valid = %v, want %v: %v", ok, tc.valid, msgs)
			}
		})
	}
}
