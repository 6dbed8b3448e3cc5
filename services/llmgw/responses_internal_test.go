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

	"github.com/wick-agent/wick/llm"
)

func TestResponsesRequestToCall(t *testing.T) {
	t.Parallel()
	lsSchema := map[string]any{"type": "object", "properties": map[string]any{"path": map[string]any{"type": "string"}}}
	for _, tc := range []struct {
		name    string
		body    string
		want    llm.Request
		kinds   toolKinds
		wantErr string
	}{
		{
			name: "a string input is one user message; instructions are the system prompt",
			body: `{"model":"script:demo","input":"hi","instructions":"be brief","max_output_tokens":64,"temperature":0.5}`,
			want: llm.Request{SystemPrompt: "be brief", Messages: []llm.Message{{Role: "user", Content: "hi"}}, MaxTokens: 64, Temperature: new(0.5)},
		},
		{
			name: "messages, a turn with a tool call and its output; reasoning and hosted-tool items dropped",
			body: `{"input":[
				{"type":"message","role":"developer","content":[{"type":"input_text","text":"rules"}]},
				{"role":"user","content":"list"},
				{"type":"reasoning","id":"rs_1","summary":[],"encrypted_content":"xyz"},
				{"type":"message","role":"assistant","content":[{"type":"output_text","text":"Listing."}]},
				{"type":"function_call","call_id":"c1","name":"ls","arguments":"{\"path\":\"/w\"}"},
				{"type":"web_search_call","id":"ws_1","status":"completed","action":{"type":"search"}},
				{"type":"function_call_output","call_id":"c1","output":"a.txt"},
				{"type":"message","role":"user","content":[{"type":"input_text","text":"and "},{"type":"input_text","text":"now?"}]}
			]}`,
			want: llm.Request{Messages: []llm.Message{
				{Role: "system", Content: "rules"},
				{Role: "user", Content: "list"},
				{Role: "assistant", Content: "Listing.", ToolCalls: []llm.ToolCall{{ID: "c1", Name: "ls", Args: map[string]any{"path": "/w"}, RawArgs: `{"path":"/w"}`}}},
				{Role: "tool", Content: "a.txt", ToolCallID: "c1", Name: "ls"},
				{Role: "user", Content: "and now?"},
			}},
		},
		{
			name: "a custom tool call carries its input as the argument input; an output of parts is joined",
			body: `{"input":[
				{"role":"user","content":"patch"},
				{"type":"custom_tool_call","call_id":"c2","name":"apply_patch","input":"*** Begin Patch"},
				{"type":"custom_tool_call_output","call_id":"c2","output":[{"type":"input_text","text":"Done"}]}
			]}`,
			want: llm.Request{Messages: []llm.Message{
				{Role: "user", Content: "patch"},
				{Role: "assistant", ToolCalls: []llm.ToolCall{{ID: "c2", Name: "apply_patch", Args: map[string]any{"input": "*** Begin Patch"}, RawArgs: `{"input":"*** Begin Patch"}`}}},
				{Role: "tool", Content: "Done", ToolCallID: "c2", Name: "apply_patch"},
			}},
		},
		{
			name: "function tools as they are, a custom tool with one input string, a namespace flattened, hosted tools dropped",
			body: `{"input":"hi","tool_choice":"auto","parallel_tool_calls":false,"tools":[
				{"type":"function","name":"ls","description":"List.","strict":false,"parameters":{"type":"object","properties":{"path":{"type":"string"}}}},
				{"type":"custom","name":"apply_patch","description":"Patch.","format":{"type":"grammar","syntax":"lark","definition":"start: x"}},
				{"type":"namespace","name":"agents","description":"Sub-agents.","tools":[{"type":"function","name":"spawn_agent","description":"Spawn.","parameters":{"type":"object"}}]},
				{"type":"web_search","external_web_access":false},
				{"type":"local_shell"}
			]}`,
			want: llm.Request{Messages: []llm.Message{{Role: "user", Content: "hi"}}, Tools: []llm.ToolSchema{
				{Name: "ls", Description: "List.", Parameters: lsSchema},
				{Name: "apply_patch", Description: "Patch.", Parameters: customInputSchema},
				{Name: "spawn_agent", Description: "Spawn.", Parameters: map[string]any{"type": "object"}},
			}},
			kinds: toolKinds{custom: map[string]bool{"apply_patch": true}, namespace: map[string]string{"spawn_agent": "agents"}},
		},
		{name: "previous_response_id", body: `{"input":"hi","previous_response_id":"resp_1"}`, wantErr: errPreviousResponse.Error()},
		{name: "conversation", body: `{"input":"hi","conversation":"conv_1"}`, wantErr: errConversation.Error()},
		{name: "item_reference", body: `{"input":[{"type":"item_reference","id":"msg_1"}]}`, wantErr: "input[0]: " + errItemReference.Error()},
		{name: "an image", body: `{"input":[{"role":"user","content":[{"type":"input_image","image_url":"data:image/png;base64,AAAA"}]}]}`, wantErr: `input[0]: content part type "input_image" is not supported: the gateway passes text only`},
		{name: "an unknown role", body: `{"input":[{"role":"critic","content":"no"}]}`, wantErr: `input[0]: unknown role "critic"`},
		{name: "no input", body: `{"model":"script:demo"}`, wantErr: "input: a string or an array of items is required"},
		{name: "only reasoning", body: `{"input":[{"type":"reasoning","summary":[]}]}`, wantErr: "input: at least one message is needed"},
		{name: "a call without call_id", body: `{"input":[{"type":"function_call","name":"ls","arguments":"{}"}]}`, wantErr: "input[0]: call_id and name are required"},
		{name: "an output without call_id", body: `{"input":[{"type":"function_call_output","output":"x"}]}`, wantErr: "input[0]: function_call_output needs call_id"},
		{name: "a function tool without a name", body: `{"input":"hi","tools":[{"type":"function"}]}`, wantErr: "tools[0]: name is required"},
		{name: "negative max_output_tokens", body: `{"input":"hi","max_output_tokens":-1}`, wantErr: "max_output_tokens must not be negative"},
		{name: "temperature out of range", body: `{"input":"hi","temperature":3}`, wantErr: "temperature must be between 0 and 2"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			var rr responsesRequest
			if err := json.Unmarshal([]byte(tc.body), &rr); err != nil {
				t.Fatal(err)
			}
			c, kinds, err := rr.toCall()
			if tc.wantErr != "" {
				if err == nil || !strings.HasPrefix(err.Error(), tc.wantErr) {
					t.Fatalf("error = %v, want %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(c.req, tc.want) {
				got, _ := json.Marshal(c.req)
				want, _ := json.Marshal(tc.want)
				t.Errorf("request =\n%s\nwant\n%s", got, want)
			}
			if tc.kinds.custom == nil {
				tc.kinds = toolKinds{custom: map[string]bool{}, namespace: map[string]string{}}
			}
			if !reflect.DeepEqual(kinds, tc.kinds) {
				t.Errorf("tool kinds = %+v, want %+v", kinds, tc.kinds)
			}
		})
	}
}

// sseEvent is one event of a streamed response as the client reads it.
type sseEvent struct {
	name string // the event: line
	data map[string]any
}

func readResponseEvents(t *testing.T, body string) []sseEvent {
	t.Helper()
	var out []sseEvent
	var name string
	sc := bufio.NewScanner(strings.NewReader(body))
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if v, ok := strings.CutPrefix(line, "event: "); ok {
			name = v
			continue
		}
		if v, ok := strings.CutPrefix(line, "data: "); ok {
			var m map[string]any
			if err := json.Unmarshal([]byte(v), &m); err != nil {
				t.Fatalf("data %q: %v", v, err)
			}
			out = append(out, sseEvent{name: name, data: m})
			name = ""
		}
	}
	return out
}

// collapse is the event types with runs of one delta type written once.
func collapse(evs []sseEvent) []string {
	var out []string
	for _, ev := range evs {
		typ := ev.data["type"].(string)
		if strings.HasSuffix(typ, ".delta") && len(out) > 0 && out[len(out)-1] == typ+"…" {
			continue
		}
		if strings.HasSuffix(typ, ".delta") {
			typ += "…"
		}
		out = append(out, typ)
	}
	return out
}

// TestResponsesStreamOrder checks a streamed text and a streamed function call
// against the order of OpenAI's Responses events: lifecycle, then each output
// item opened, filled and closed, then the terminal event.
func TestResponsesStreamOrder(t *testing.T) {
	t.Parallel()
	svc, err := New(DefaultConfig())
	if err != nil {
		t.Fatal(err)
	}
	h := svc.HTTPHandler()
	for _, tc := range []struct {
		name   string
		script string
		want   []string
		output string // the terminal response's output items, as types
	}{
		{
			name:   "text",
			script: `[{"text":"Hello there, world."}]`,
			want: []string{"response.created", "response.in_progress",
				"response.output_item.added", "response.content_part.added", "response.output_text.delta…",
				"response.output_text.done", "response.content_part.done", "response.output_item.done",
				"response.completed"},
			output: "message",
		},
		{
			name:   "text then a function call",
			script: `[{"text":"Listing.","tool_calls":[{"id":"call_7","name":"ls","arguments":{"path":"/workspace/some/longer/path"}}]}]`,
			want: []string{"response.created", "response.in_progress",
				"response.output_item.added", "response.content_part.added", "response.output_text.delta…",
				"response.output_text.done", "response.content_part.done", "response.output_item.done",
				"response.output_item.added", "response.function_call_arguments.delta…",
				"response.function_call_arguments.done", "response.output_item.done",
				"response.completed"},
			output: "message,function_call",
		},
		{
			name:   "two function calls, no text",
			script: `[{"tool_calls":[{"name":"ls","arguments":{"path":"/a"}},{"name":"ls","arguments":{"path":"/b"}}]}]`,
			want: []string{"response.created", "response.in_progress",
				"response.output_item.added", "response.function_call_arguments.delta…",
				"response.output_item.added", "response.function_call_arguments.delta…",
				"response.function_call_arguments.done", "response.output_item.done",
				"response.function_call_arguments.done", "response.output_item.done",
				"response.completed"},
			output: "function_call,function_call",
		},
		{
			name:   "cut by max tokens",
			script: `[{"text":"Hello","finish_reason":"length"}]`,
			want: []string{"response.created", "response.in_progress",
				"response.output_item.added", "response.content_part.added", "response.output_text.delta…",
				"response.output_text.done", "response.content_part.done", "response.output_item.done",
				"response.incomplete"},
			output: "message",
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			model, _ := json.Marshal("script:" + tc.script)
			w := httptest.NewRecorder()
			h.ServeHTTP(w, httptest.NewRequest("POST", "/v1/responses", strings.NewReader(`{"model":`+string(model)+`,"input":"go","stream":true}`)))
			if w.Code != http.StatusOK || w.Header().Get("Content-Type") != "text/event-stream" {
				t.Fatalf("%d %q: %s", w.Code, w.Header().Get("Content-Type"), w.Body)
			}
			evs := readResponseEvents(t, w.Body.String())
			if got := collapse(evs); !slices.Equal(got, tc.want) {
				t.Fatalf("events\n%v\nwant\n%v", got, tc.want)
			}
			for i, ev := range evs {
				if ev.name != ev.data["type"] {
					t.Errorf("event %d: event line %q, type %q", i, ev.name, ev.data["type"])
				}
				if n, _ := ev.data["sequence_number"].(float64); int(n) != i {
					t.Errorf("event %d: sequence_number %v", i, ev.data["sequence_number"])
				}
			}
			// Each item's events carry its output_index; the terminal
			// response holds the finished items in that order.
			last := evs[len(evs)-1].data["response"].(map[string]any)
			var types []string
			for i, it := range last["output"].([]any) {
				item := it.(map[string]any)
				types = append(types, item["type"].(string))
				if item["status"] != "completed" {
					t.Errorf("output[%d] status %v", i, item["status"])
				}
			}
			if strings.Join(types, ",") != tc.output {
				t.Errorf("output = %v, want %s", types, tc.output)
			}
			u := last["usage"].(map[string]any)
			if u["total_tokens"].(float64) == 0 || u["total_tokens"].(float64) != u["input_tokens"].(float64)+u["output_tokens"].(float64) {
				t.Errorf("usage = %v", u)
			}
			deltas := map[float64]string{}
			for _, ev := range evs {
				switch ev.data["type"] {
				case "response.output_text.delta", "response.function_call_arguments.delta":
					deltas[ev.data["output_index"].(float64)] += ev.data["delta"].(string)
				case "response.output_item.done":
					item := ev.data["item"].(map[string]any)
					idx := ev.data["output_index"].(float64)
					whole := item["arguments"]
					if item["type"] == "message" {
						whole = item["content"].([]any)[0].(map[string]any)["text"]
					}
					if whole != deltas[idx] {
						t.Errorf("item %v: done with %q, deltas made %q", idx, whole, deltas[idx])
					}
				}
			}
		})
	}
}

// TestResponsesErrors checks OpenAI's error shape and statuses for requests
// the gateway refuses before streaming.
func TestResponsesErrors(t *testing.T) {
	t.Parallel()
	svc, err := New(DefaultConfig())
	if err != nil {
		t.Fatal(err)
	}
	h := svc.HTTPHandler()
	for _, tc := range []struct {
		name   string
		body   string
		status int
		code   any
		param  any
		msg    string
	}{
		{"an unknown model", `{"model":"nosuch","input":"hi","stream":true}`, 404, "model_not_found", "model", `the model "nosuch" does not exist`},
		{"previous_response_id", `{"model":"script:demo","input":"hi","previous_response_id":"resp_1"}`, 400, nil, "previous_response_id", "previous_response_id: this gateway stores no responses"},
		{"an image", `{"input":[{"role":"user","content":[{"type":"input_image","image_url":"x"}]}]}`, 400, nil, nil, "input[0]: content part type \"input_image\""},
		{"not JSON", `{`, 400, nil, nil, "request body is not valid JSON"},
		{"a script that fails before any output", `{"model":"script:[{\"error\":{\"status\":429,\"message\":\"slow down\"}}]","input":"hi","stream":true}`, 429, "rate_limit_exceeded", nil, "slow down"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			w := httptest.NewRecorder()
			h.ServeHTTP(w, httptest.NewRequest("POST", "/v1/responses", strings.NewReader(tc.body)))
			if w.Code != tc.status || w.Header().Get("Content-Type") != "application/json" {
				t.Fatalf("%d %q, want %d JSON: %s", w.Code, w.Header().Get("Content-Type"), tc.status, w.Body)
			}
			var body struct {
				Error map[string]any `json:"error"`
			}
			if err := json.Unmarshal(w.Body.Bytes(), &body); err != nil {
				t.Fatal(err)
			}
			e := body.Error
			for _, k := range []string{"message", "type", "code", "param"} {
				if _, ok := e[k]; !ok {
					t.Errorf("error has no %q: %v", k, e)
				}
			}
			if e["code"] != tc.code || e["param"] != tc.param || !strings.Contains(e["message"].(string), tc.msg) {
				t.Errorf("error = %v, want code %v param %v message with %q", e, tc.code, tc.param, tc.msg)
			}
		})
	}
}

// TestResponsesOpenAPIShapes compares the document's Responses schemas with
// the wire types, and real answers with the schemas.
func TestResponsesOpenAPIShapes(t *testing.T) {
	t.Parallel()
	_, schemas := openAPIDoc(t)
	for _, tc := range []struct {
		schema string
		value  any
	}{
		{"openai.ResponsesRequest", responsesRequest{}},
		{"openai.ResponsesTool", responsesTool{}},
		{"openai.ResponsesInputItem", responsesItem{}},
		{"openai.Response", responseObject{}},
		{"openai.ResponsesMessage", responseMessage{}},
		{"openai.ResponsesFunctionCall", responseFunctionCall{}},
		{"openai.ResponsesCustomToolCall", responseCustomToolCall{}},
		{"openai.ResponsesUsage", responsesUsage{}},
		{"openai.ResponsesStreamEvent", responsesEvent{}},
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
	keysWithin := func(what, schema string, m map[string]any) {
		want := props(t, schemas, schema)
		for k := range m {
			if !slices.Contains(want, k) {
				t.Errorf("%s has %q, which %s does not describe", what, k, schema)
			}
		}
	}
	const req = `{"model":"script:[{\"text\":\"hello\",\"tool_calls\":[{\"name\":\"ls\",\"arguments\":{}}]}]","input":"hi"`
	w := httptest.NewRecorder()
	h.ServeHTTP(w, httptest.NewRequest("POST", "/v1/responses", strings.NewReader(req+`}`)))
	var resp map[string]any
	if err := json.Unmarshal(w.Body.Bytes(), &resp); w.Code != http.StatusOK || err != nil {
		t.Fatalf("response = %d %s", w.Code, w.Body)
	}
	keysWithin("a response", "openai.Response", resp)
	keysWithin("a message", "openai.ResponsesMessage", resp["output"].([]any)[0].(map[string]any))
	keysWithin("a function call", "openai.ResponsesFunctionCall", resp["output"].([]any)[1].(map[string]any))
	keysWithin("usage", "openai.ResponsesUsage", resp["usage"].(map[string]any))

	w = httptest.NewRecorder()
	h.ServeHTTP(w, httptest.NewRequest("POST", "/v1/responses", strings.NewReader(req+`,"stream":true}`)))
	for _, ev := range readResponseEvents(t, w.Body.String()) {
		keysWithin("an event", "openai.ResponsesStreamEvent", ev.data)
	}

	w = httptest.NewRecorder()
	h.ServeHTTP(w, httptest.NewRequest("POST", "/v1/responses", strings.NewReader(`{"model":"nosuch","input":"hi"}`)))
	var e map[string]any
	if err := json.Unmarshal(w.Body.Bytes(), &e); err != nil {
		t.Fatal(err)
	}
	keysWithin("an error", "openai.ResponsesError", e)
}
