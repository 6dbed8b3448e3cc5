package tools

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/wick-agent/wick/platform/netguard"
	"github.com/wick-agent/wick/services/agent/internal/loop"
)

var objSchema = map[string]any{
	"type":       "object",
	"properties": map[string]any{"city": map[string]any{"type": "string"}},
	"required":   []any{"city"},
}

func TestValidateHTTPToolDef(t *testing.T) {
	t.Parallel()
	ok := HTTPToolDef{Name: "weather", URL: "https://tools.example/weather", Parameters: objSchema}
	tests := []struct {
		name   string
		mutate func(*HTTPToolDef)
		want   string
	}{
		{"valid", func(*HTTPToolDef) {}, ""},
		{"empty name", func(d *HTTPToolDef) { d.Name = "" }, "name"},
		{"bad name", func(d *HTTPToolDef) { d.Name = "rm -rf" }, "name"},
		{"ftp url", func(d *HTTPToolDef) { d.URL = "ftp://x/y" }, "http:// or https://"},
		{"no host", func(d *HTTPToolDef) { d.URL = "http://" }, "no host"},
		{"credentials in url", func(d *HTTPToolDef) { d.URL = "https://u:p@x/y" }, "credentials"},
		{"nil schema", func(d *HTTPToolDef) { d.Parameters = nil }, "parameters are required"},
		{"not an object schema", func(d *HTTPToolDef) { d.Parameters = map[string]any{"type": "string"} }, `"type": "object"`},
		{"properties not object", func(d *HTTPToolDef) { d.Parameters = map[string]any{"type": "object", "properties": []any{}} }, "properties must be an object"},
		{"property not schema", func(d *HTTPToolDef) {
			d.Parameters = map[string]any{"type": "object", "properties": map[string]any{"a": "string"}}
		}, "properties.a"},
		{"required unknown", func(d *HTTPToolDef) {
			d.Parameters = map[string]any{"type": "object", "properties": map[string]any{}, "required": []any{"zip"}}
		}, `"zip"`},
		{"required not list", func(d *HTTPToolDef) { d.Parameters = map[string]any{"type": "object", "required": "zip"} }, "must be a list"},
		{"timeout too long", func(d *HTTPToolDef) { d.Timeout = time.Hour }, "timeout"},
		{"header injection", func(d *HTTPToolDef) { d.Headers = map[string]string{"X-A": "v\r\nEvil: 1"} }, "header"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			d := ok
			tt.mutate(&d)
			_, err := NewHTTPTool(d, nil)
			if tt.want == "" {
				if err != nil {
					t.Fatal(err)
				}
				return
			}
			if !errors.Is(err, ErrInvalidToolDef) || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("err %v, want %q", err, tt.want)
			}
		})
	}
}

func newServer(t *testing.T, h http.HandlerFunc) *httptest.Server {
	t.Helper()
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	return srv
}

func TestHTTPToolCalls(t *testing.T) {
	t.Parallel()
	var got callbackRequest
	var gotHeader string
	srv := newServer(t, func(w http.ResponseWriter, r *http.Request) {
		gotHeader = r.Header.Get("X-Api-Key")
		if err := json.NewDecoder(r.Body).Decode(&got); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		_, _ = io.WriteString(w, "sunny, 21°C")
	})
	tool, err := NewHTTPTool(HTTPToolDef{Name: "weather", Description: "Weather", URL: srv.URL, Parameters: objSchema, Headers: map[string]string{"X-Api-Key": "k1"}}, loopbackClient())
	if err != nil {
		t.Fatal(err)
	}
	ctx := loop.WithCallInfo(context.Background(), loop.CallInfo{ToolCallID: "call_9", ThreadID: "th_1"})
	out, err := tool.Execute(ctx, map[string]any{"city": "Paris"})
	if err != nil || out != "sunny, 21°C" {
		t.Fatalf("%q %v", out, err)
	}
	if got.Name != "weather" || got.Args["city"] != "Paris" || got.ToolCallID != "call_9" || got.ThreadID != "th_1" || gotHeader != "k1" {
		t.Fatalf("request %+v header %q", got, gotHeader)
	}
	if tool.Name() != "weather" || tool.Description() != "Weather" || tool.Parameters()["type"] != "object" {
		t.Fatal("shape")
	}
}

// h adapts a handler that needs no release channel.
func h(f http.HandlerFunc) func(<-chan struct{}) http.HandlerFunc {
	return func(<-chan struct{}) http.HandlerFunc { return f }
}

func TestHTTPToolFailures(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		handler func(release <-chan struct{}) http.HandlerFunc
		def     func(*HTTPToolDef)
		opts    []HTTPToolOption
		want    string
		wantOut string
	}{
		{"non-2xx", h(func(w http.ResponseWriter, _ *http.Request) { http.Error(w, "backend exploded", http.StatusBadGateway) }), nil, nil, "HTTP 502: backend exploded", ""},
		{"redirect not followed", h(func(w http.ResponseWriter, r *http.Request) {
			http.Redirect(w, r, "http://169.254.169.254/", http.StatusFound)
		}), nil, nil, "HTTP 302", ""},
		{"timeout", func(release <-chan struct{}) http.HandlerFunc {
			return func(w http.ResponseWriter, r *http.Request) {
				select {
				case <-release:
				case <-r.Context().Done():
				}
			}
		}, func(d *HTTPToolDef) { d.Timeout = 50 * time.Millisecond }, nil, "did not answer within 50ms", ""},
		{"oversized", h(func(w http.ResponseWriter, _ *http.Request) { _, _ = io.WriteString(w, strings.Repeat("x", 2048)) }), nil,
			[]HTTPToolOption{WithMaxResponseBytes(1024)}, "larger than 1024 bytes", ""},
		{"exactly at cap", h(func(w http.ResponseWriter, _ *http.Request) { _, _ = io.WriteString(w, strings.Repeat("x", 1024)) }), nil,
			[]HTTPToolOption{WithMaxResponseBytes(1024)}, "", strings.Repeat("x", 1024)},
		{"json output unwrapped", h(func(w http.ResponseWriter, _ *http.Request) {
			w.Header().Set("Content-Type", "application/json")
			_, _ = io.WriteString(w, `{"output":"42"}`)
		}), nil, nil, "", "42"},
		{"json error", h(func(w http.ResponseWriter, _ *http.Request) {
			w.Header().Set("Content-Type", "application/json; charset=utf-8")
			_, _ = io.WriteString(w, `{"error":"city unknown"}`)
		}), nil, nil, "city unknown", ""},
		{"other json kept", h(func(w http.ResponseWriter, _ *http.Request) {
			w.Header().Set("Content-Type", "application/json")
			_, _ = io.WriteString(w, `{"temp":21}`)
		}), nil, nil, "", `{"temp":21}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			release := make(chan struct{})
			srv := newServer(t, tt.handler(release))
			// Registered after the server, so it runs before the server's Close.
			t.Cleanup(func() { close(release) })
			def := HTTPToolDef{Name: "t", URL: srv.URL, Parameters: objSchema}
			if tt.def != nil {
				tt.def(&def)
			}
			tool, err := NewHTTPTool(def, loopbackClient(), tt.opts...)
			if err != nil {
				t.Fatal(err)
			}
			out, err := tool.Execute(context.Background(), map[string]any{"city": "x"})
			if tt.want != "" {
				if err == nil || !strings.Contains(err.Error(), tt.want) {
					t.Fatalf("err %v, want %q", err, tt.want)
				}
				return
			}
			if err != nil || out != tt.wantOut {
				t.Fatalf("%q %v", out, err)
			}
		})
	}
}

func TestHTTPToolUnreachableAndLinkLocal(t *testing.T) {
	t.Parallel()
	srv := httptest.NewServer(http.NotFoundHandler())
	url := srv.URL
	srv.Close() // nothing listens there any more
	tool, err := NewHTTPTool(HTTPToolDef{Name: "t", URL: url + "/?token=secret", Parameters: objSchema}, loopbackClient())
	if err != nil {
		t.Fatal(err)
	}
	_, err = tool.Execute(context.Background(), nil)
	if err == nil || !strings.Contains(err.Error(), "request failed") || strings.Contains(err.Error(), "secret") {
		t.Fatalf("err %v", err)
	}
	meta, _ := NewHTTPTool(HTTPToolDef{Name: "t", URL: "http://169.254.169.254/latest/meta-data", Parameters: objSchema}, nil)
	if _, err := meta.Execute(context.Background(), nil); err == nil || !strings.Contains(err.Error(), "not allowed") {
		t.Fatalf("link-local not refused: %v", err)
	}
}

// The default client refuses the operator's own network: a callback
// registered at a loopback service (the LLM gateway's HTTP API, say) must not
// hand its answer to the model.
func TestHTTPToolRefusesLoopbackByDefault(t *testing.T) {
	t.Parallel()
	var hit atomic.Bool
	srv := newServer(t, func(w http.ResponseWriter, _ *http.Request) { hit.Store(true); w.Write([]byte(`{"data":[]}`)) })
	for _, u := range []string{srv.URL + "/v1/models", strings.Replace(srv.URL, "127.0.0.1", "localhost", 1) + "/v1/models"} {
		tool, err := NewHTTPTool(HTTPToolDef{Name: "models", URL: u, Parameters: objSchema}, nil)
		if err != nil {
			t.Fatal(err)
		}
		out, err := tool.Execute(context.Background(), nil)
		if err == nil || !strings.Contains(err.Error(), "is not allowed") {
			t.Fatalf("%s: Execute = %q, %v; want a refusal", u, out, err)
		}
		// The refusal the model and the user read names the destination
		// they gave, never what a name resolved to.
		if strings.Contains(u, "localhost") && (strings.Contains(err.Error(), "127.0.0.1") || strings.Contains(err.Error(), "loopback")) {
			t.Fatalf("%s: the refusal %q reveals the resolved address", u, err)
		}
	}
	if hit.Load() {
		t.Fatal("the loopback server was reached")
	}
}

// loopbackClient is the callback client with the tests' servers allowlisted.
func loopbackClient() *http.Client {
	return SafeHTTPClient(netguard.New(netip.MustParsePrefix("127.0.0.0/8")))
}
