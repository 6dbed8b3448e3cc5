package llmgw

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strings"
	"testing"

	"github.com/wick-agent/wick/llm"
)

// TestMessagesRequestMapping: a Messages request in the gateway's terms.
func TestMessagesRequestMapping(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name     string
		body     string
		system   string
		messages []llm.Message
		tools    []string
		wantErr  string
	}{
		{
			name:     "string content and system",
			body:     `{"system":"Be brief.","messages":[{"role":"user","content":"hi"}]}`,
			system:   "Be brief.",
			messages: []llm.Message{{Role: "user", Content: "hi"}},
		},
		{
			name:     "system blocks and user text blocks are paragraphs",
			body:     `{"system":[{"type":"text","text":"A"},{"type":"text","text":"B","cache_control":{"type":"ephemeral"}}],"messages":[{"role":"user","content":[{"type":"text","text":"x"},{"type":"text","text":"y"}]}]}`,
			system:   "A\n\nB",
			messages: []llm.Message{{Role: "user", Content: "x\n\ny"}},
		},
		{
			name: "tool use and results, thinking dropped",
			body: `{"messages":[
				{"role":"user","content":"go"},
				{"role":"assistant","content":[{"type":"thinking","thinking":"t","signature":"s"},{"type":"text","text":"On it."},{"type":"tool_use","id":"t1","name":"ls","input":{"path":"/"}},{"type":"tool_use","id":"t2","name":"pwd","input":{}}]},
				{"role":"user","content":[{"type":"tool_result","tool_use_id":"t1","content":"a.txt"},{"type":"tool_result","tool_use_id":"t2","content":[{"type":"text","text":"no"}],"is_error":true},{"type":"text","text":"and?"}]}
			]}`,
			messages: []llm.Message{
				{Role: "user", Content: "go"},
				{Role: "assistant", Content: "On it.", ToolCalls: []llm.ToolCall{
					{ID: "t1", Name: "ls", Args: map[string]any{"path": "/"}, RawArgs: `{"path":"/"}`},
					{ID: "t2", Name: "pwd", Args: map[string]any{}, RawArgs: `{}`},
				}},
				{Role: "tool", ToolCallID: "t1", Content: "a.txt"},
				{Role: "tool", ToolCallID: "t2", Content: "Error: no"},
				{Role: "user", Content: "and?"},
			},
		},
		{
			name:     "server tools are left out",
			body:     `{"messages":[{"role":"user","content":"hi"}],"tools":[{"name":"Bash","input_schema":{"type":"object"}},{"type":"web_search_20250305","name":"web_search"},{"type":"custom","name":"Read","input_schema":{}}]}`,
			messages: []llm.Message{{Role: "user", Content: "hi"}},
			tools:    []string{"Bash", "Read"},
		},
		{name: "no messages", body: `{"messages":[]}`, wantErr: "at least one message"},
		{name: "system role", body: `{"messages":[{"role":"system","content":"x"}]}`, wantErr: `role "system"`},
		{name: "image", body: `{"messages":[{"role":"user","content":[{"type":"image","source":{"type":"base64","media_type":"image/png","data":"x"}}]}]}`, wantErr: "text only"},
		{name: "image in a tool result", body: `{"messages":[{"role":"user","content":[{"type":"tool_result","tool_use_id":"t","content":[{"type":"image"}]}]}]}`, wantErr: "text only"},
		{name: "tool_use from the user", body: `{"messages":[{"role":"user","content":[{"type":"tool_use","id":"t","name":"x"}]}]}`, wantErr: `"tool_use" is not supported in a user message`},
		{name: "tool_use without id", body: `{"messages":[{"role":"assistant","content":[{"type":"tool_use","name":"x"}]}]}`, wantErr: "needs id and name"},
		{name: "tool_use input not an object", body: `{"messages":[{"role":"assistant","content":[{"type":"tool_use","id":"t","name":"x","input":[1]}]}]}`, wantErr: "input"},
		{name: "tool_result without id", body: `{"messages":[{"role":"user","content":[{"type":"tool_result","content":"x"}]}]}`, wantErr: "tool_use_id"},
		{name: "unknown block", body: `{"messages":[{"role":"user","content":[{"type":"hologram"}]}]}`, wantErr: `"hologram"`},
		{name: "nameless tool", body: `{"messages":[{"role":"user","content":"x"}],"tools":[{"input_schema":{}}]}`, wantErr: "tools[0]: name"},
		{name: "bad tool_choice", body: `{"messages":[{"role":"user","content":"x"}],"tool_choice":{"type":"sometimes"}}`, wantErr: "tool_choice"},
		{name: "bad thinking", body: `{"messages":[{"role":"user","content":"x"}],"thinking":{"type":"loud"}}`, wantErr: "thinking"},
		{name: "content neither string nor blocks", body: `{"messages":[{"role":"user","content":5}]}`, wantErr: "string or an array"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			var mr messagesRequest
			if err := json.Unmarshal([]byte(tt.body), &mr); err != nil {
				t.Fatal(err)
			}
			c, err := mr.toCall(true)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("err = %v, want containing %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if c.req.SystemPrompt != tt.system || !reflect.DeepEqual(c.req.Messages, tt.messages) {
				t.Fatalf("system %q messages %+v\nwant %q %+v", c.req.SystemPrompt, c.req.Messages, tt.system, tt.messages)
			}
			var tools []string
			for _, tool := range c.req.Tools {
				tools = append(tools, tool.Name)
			}
			if strings.Join(tools, ",") != strings.Join(tt.tools, ",") {
				t.Errorf("tools = %v, want %v", tools, tt.tools)
			}
		})
	}
}

// TestMessagesSamplingFields: max_tokens is required for a call (not for
// count_tokens), temperature is Anthropic's 0..1.
func TestMessagesSamplingFields(t *testing.T) {
	t.Parallel()
	tests := []struct {
		body      string
		maxTokens int
		wantErr   string
	}{
		{body: `{"max_tokens":100,"temperature":0.5}`, maxTokens: 100},
		{body: `{}`, wantErr: "max_tokens: field required"},
		{body: `{"max_tokens":0}`, wantErr: "at least 1"},
		{body: `{"max_tokens":10,"temperature":1.5}`, wantErr: "temperature"},
	}
	for _, tt := range tests {
		t.Run(tt.body, func(t *testing.T) {
			t.Parallel()
			var mr messagesRequest
			if err := json.Unmarshal([]byte(tt.body), &mr); err != nil {
				t.Fatal(err)
			}
			mr.Messages = []anthropicMessage{{Role: "user", Content: json.RawMessage(`"hi"`)}}
			if _, err := mr.toCall(true); err != nil {
				t.Fatalf("count_tokens refused: %v", err)
			}
			c, err := mr.toCall(false)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("err = %v, want containing %q", err, tt.wantErr)
				}
				return
			}
			if err != nil || c.req.MaxTokens != tt.maxTokens {
				t.Fatalf("max_tokens %d, %v", c.req.MaxTokens, err)
			}
		})
	}
}

// TestMessagesErrorShapes: every refusal before a call is Anthropic's error
// object with the matching status.
func TestMessagesErrorShapes(t *testing.T) {
	t.Parallel()
	cfg := DefaultConfig()
	cfg.MaxHTTPBodyBytes = 200
	svc, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	h := svc.HTTPHandler(WithHTTPToken("tok"))
	tests := []struct {
		name, path, body, token string
		status                  int
		errType                 string
	}{
		{name: "not JSON", path: "/v1/messages", body: `{`, token: "tok", status: 400, errType: "invalid_request_error"},
		{name: "no max_tokens", path: "/v1/messages", body: `{"messages":[{"role":"user","content":"x"}]}`, token: "tok", status: 400, errType: "invalid_request_error"},
		{name: "too large", path: "/v1/messages", body: `{"messages":"` + strings.Repeat("x", 300) + `"}`, token: "tok", status: 413, errType: "request_too_large"},
		{name: "no token", path: "/v1/messages", body: `{}`, status: 401, errType: "authentication_error"},
		{name: "count_tokens without token", path: "/v1/messages/count_tokens", body: `{}`, status: 401, errType: "authentication_error"},
		{name: "unknown model", path: "/v1/messages", body: `{"model":"nope","max_tokens":5,"messages":[{"role":"user","content":"x"}]}`, token: "tok", status: 404, errType: "not_found_error"},
		{name: "unknown model, streamed", path: "/v1/messages", body: `{"model":"nope","max_tokens":5,"stream":true,"messages":[{"role":"user","content":"x"}]}`, token: "tok", status: 404, errType: "not_found_error"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			r := httptest.NewRequest("POST", tt.path, strings.NewReader(tt.body))
			if tt.token != "" {
				r.Header.Set("x-api-key", tt.token)
			}
			w := httptest.NewRecorder()
			h.ServeHTTP(w, r)
			var body struct {
				Type  string `json:"type"`
				Error struct {
					Type    string `json:"type"`
					Message string `json:"message"`
				} `json:"error"`
			}
			if err := json.Unmarshal(w.Body.Bytes(), &body); err != nil {
				t.Fatalf("%d %q: %v", w.Code, w.Body, err)
			}
			if w.Code != tt.status || body.Type != "error" || body.Error.Type != tt.errType || body.Error.Message == "" || w.Header().Get("Content-Type") != "application/json" {
				t.Fatalf("= %d %s; want %d %s", w.Code, w.Body, tt.status, tt.errType)
			}
		})
	}
	// The OpenAI route keeps its own shape behind the same checks.
	w := httptest.NewRecorder()
	h.ServeHTTP(w, httptest.NewRequest("GET", "/v1/models", nil))
	if w.Code != http.StatusUnauthorized || !strings.Contains(w.Body.String(), `"type":"invalid_api_key"`) {
		t.Fatalf("models without token = %d %s", w.Code, w.Body)
	}
}
