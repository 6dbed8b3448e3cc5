package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/pb33f/libopenapi"
	validator "github.com/pb33f/libopenapi-validator"
	"github.com/pb33f/libopenapi-validator/config"
	"github.com/pb33f/libopenapi-validator/schema_validation"
	"github.com/pb33f/libopenapi/datamodel/high/base"

	"github.com/wick-agent/wick/gen/openapi"
)

// openAPIChecker validates real requests and answers of the suite against
// the OpenAPI document with an independent validator (pb33f's).
type openAPIChecker struct {
	t       *testing.T
	url     string
	v       validator.Validator
	schemas func(name string) *base.Schema
	sv      schema_validation.SchemaValidator
}

// refsWithoutSiblings drops the keywords beside a $ref (descriptions: OpenAPI
// 3.1 allows them), which pb33f's strict mode does not look through.
func refsWithoutSiblings(v any) any {
	switch t := v.(type) {
	case map[string]any:
		if r, ok := t["$ref"]; ok {
			return map[string]any{"$ref": r}
		}
		for k, e := range t {
			t[k] = refsWithoutSiblings(e)
		}
	case []any:
		for i, e := range t {
			t[i] = refsWithoutSiblings(e)
		}
	}
	return v
}

// strict makes a property the document does not declare an error, so that
// a field named otherwise (runId for run_id) cannot pass. The keys of maps
// and free-form objects (google.protobuf.Struct) are declared by no schema
// and are left out.
func strict() []config.Option {
	return []config.Option{
		config.WithStrictMode(),
		config.WithFormatAssertions(),
		config.WithStrictIgnorePaths("$.body.**.args", "$.body.**.files", "$.body.**.hooks", "$.body.**.headers",
			"$.body.**.parameters", "$.body.services", "$.body.hooks", "$.body.**.metadata", "$.body.metadata", "$.body.filter"),
		// Set on every answer (secureHeaders, traceResponse), not API headers.
		config.WithStrictIgnoredHeadersExtra("X-Content-Type-Options", "Traceresponse"),
	}
}

func newOpenAPIChecker(t *testing.T, url string) *openAPIChecker {
	t.Helper()
	var raw any
	if err := json.Unmarshal(openapi.Document, &raw); err != nil {
		t.Fatal(err)
	}
	b, err := json.Marshal(refsWithoutSiblings(raw))
	if err != nil {
		t.Fatal(err)
	}
	doc, err := libopenapi.NewDocument(b)
	if err != nil {
		t.Fatal(err)
	}
	v, errs := validator.NewValidator(doc, strict()...)
	if len(errs) > 0 {
		t.Fatalf("validator: %v", errs)
	}
	model, err := doc.BuildV3Model()
	if err != nil {
		t.Fatal(err)
	}
	return &openAPIChecker{
		t: t, url: url, v: v, sv: schema_validation.NewSchemaValidator(strict()...),
		schemas: func(name string) *base.Schema {
			p := model.Model.Components.Schemas.GetOrZero(name)
			if p == nil {
				t.Fatalf("the document has no schema %s", name)
			}
			return p.Schema()
		},
	}
}

// exchange sends a request, and fails the test unless the document
// describes both the request and its answer.
func (c *openAPIChecker) exchange(method, path, token, contentType, body string, wantCode int) []byte {
	c.t.Helper()
	newReq := func() *http.Request {
		req, err := http.NewRequest(method, c.url+path, strings.NewReader(body))
		if err != nil {
			c.t.Fatal(err)
		}
		if body == "" {
			req.Body = http.NoBody
		}
		if token != "" {
			req.Header.Set("Authorization", "Bearer "+token)
		}
		if contentType != "" {
			req.Header.Set("Content-Type", contentType)
		}
		return req
	}
	if ok, errs := c.v.ValidateHttpRequest(newReq()); !ok && wantCode < 400 {
		c.t.Errorf("%s %s: the document does not describe the request:%s", method, path, describe(errs))
	}
	resp, err := http.DefaultClient.Do(newReq())
	if err != nil {
		c.t.Fatal(err)
	}
	got, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil {
		c.t.Fatal(err)
	}
	if resp.StatusCode != wantCode {
		c.t.Fatalf("%s %s = %d %s, want %d", method, path, resp.StatusCode, got, wantCode)
	}
	resp.Body = io.NopCloser(bytes.NewReader(got))
	if ok, errs := c.v.ValidateHttpResponse(newReq(), resp); !ok {
		c.t.Errorf("%s %s: the document does not describe the answer %d %s:%s", method, path, resp.StatusCode, got, describe(errs))
	}
	return got
}

// event checks the JSON of an SSE frame against a schema of the document.
func (c *openAPIChecker) event(schema string, ev sseMessage) {
	c.t.Helper()
	var v map[string]any
	if err := json.Unmarshal([]byte(ev.Data), &v); err != nil {
		c.t.Fatalf("frame data %q: %v", ev.Data, err)
	}
	if v["event"] != ev.Event || (ev.ID != "" && v["id"] != ev.ID) {
		c.t.Errorf("frame event %q id %q, data %s", ev.Event, ev.ID, ev.Data)
	}
	if ok, errs := c.sv.ValidateSchemaString(c.schemas(schema), ev.Data); !ok {
		c.t.Errorf("the %s event is no %s: %s:%s", ev.Event, schema, ev.Data, describe(errs))
	}
}

func describe[E interface{ Error() string }](errs []E) string {
	var b strings.Builder
	for _, e := range errs {
		b.WriteString("\n  " + e.Error())
	}
	return b.String()
}

// TestOpenAPIDescribesRealTraffic runs a session against the whole suite and
// has an independent validator check every request and answer, and every
// streamed event, against the generated OpenAPI document.
func TestOpenAPIDescribesRealTraffic(t *testing.T) {
	env := startWick(t)
	c := newOpenAPIChecker(t, env.url)
	const js = "application/json"

	c.exchange("GET", "/health", "", "", "", 200)
	c.exchange("GET", "/agents", "", "", "", 401)
	c.exchange("GET", "/agents", aliceToken, "", "", 200)
	c.exchange("GET", "/agents/nope", aliceToken, "", "", 404)

	// Configuration events, while an agent is created and changed.
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	events := newEventStream(openSSE(t, ctx, "GET", env.url+"/agents/events", aliceToken, nil).Body)
	c.exchange("POST", "/agents", aliceToken, js, `{"agent_id":"oa","name":"OpenAPI","model":"`+e2eModel+`","backend":{"type":"local"},"max_turns":5}`, 200)
	c.exchange("GET", "/agents/oa", aliceToken, "", "", 200)
	c.exchange("PATCH", "/agents/oa/hooks", aliceToken, js, `{"hooks":{"todolist":false}}`, 200)
	for _, want := range []string{"subscribed", "agent_created", "agent_updated"} {
		ev, err := events.next()
		if err != nil || ev.Event != want {
			t.Fatalf("config event %+v %v, want %s", ev, err, want)
		}
		c.event("ConfigEvent", ev)
	}
	cancel()

	// A run over SSE: every event is one of the documented kinds.
	resp := openSSE(t, t.Context(), "POST", env.url+"/agents/default/stream", aliceToken, jsonBody(userMessage("hello", nil)))
	run := readEvents(t, resp.Body)
	kinds := map[string]bool{}
	var runID, threadID string
	for _, ev := range run {
		c.event("RunEvent", ev)
		kinds[ev.Event] = true
		var e struct{ RunID, ThreadID string }
		_ = json.Unmarshal([]byte(strings.NewReplacer(`"run_id"`, `"RunID"`, `"thread_id"`, `"ThreadID"`).Replace(ev.Data)), &e)
		runID, threadID = e.RunID, e.ThreadID
	}
	for _, k := range []string{"on_run_start", "on_chat_model_stream", "on_tool_start", "on_tool_end", "done"} {
		if !kinds[k] {
			t.Errorf("the run sent no %s: the check covered less than it should (%v)", k, kinds)
		}
	}
	if runID == "" || threadID == "" {
		t.Fatalf("no run or thread id in the run's events")
	}

	c.exchange("GET", "/threads", aliceToken, "", "", 200)
	c.exchange("GET", "/threads/"+threadID, aliceToken, "", "", 200)
	c.exchange("GET", "/runs/"+runID, aliceToken, "", "", 200)
	c.exchange("POST", "/agents/default/invoke", aliceToken, js, `{"thread_id":"`+threadID+`","messages":[{"role":"user","content":"again"}]}`, 200)
	c.exchange("GET", "/agents/default/files/list?path=/workspace", aliceToken, "", "", 200)
	c.exchange("GET", "/agents/default/files/read?path=/workspace/notes.txt", aliceToken, "", "", 200)
	c.exchange("PUT", "/agents/default/files/write", aliceToken, js, `{"path":"/workspace/w.txt","content":"w"}`, 200)
	c.exchange("PUT", "/agents/default/files/raw/workspace%2Fopenapi.txt", aliceToken, "application/octet-stream", "raw bytes", 200)
	c.exchange("GET", "/agents/skills/available", aliceToken, "", "", 200)
	c.exchange("GET", "/agents/tools", aliceToken, "", "", 200)
	c.exchange("GET", "/v1/models", aliceToken, "", "", 200)
	c.exchange("POST", "/v1/chat/completions", aliceToken, js, `{"model":"script:[{\"text\":\"hi\"}]","messages":[{"role":"user","content":"hi"}]}`, 200)
	c.exchange("POST", "/v1/responses", aliceToken, js, `{"model":"script:[{\"text\":\"hi\",\"tool_calls\":[{\"name\":\"ls\",\"arguments\":{}}]}]","input":"hi","tools":[{"type":"function","name":"ls"}]}`, 200)
	c.exchange("POST", "/v1/responses", aliceToken, js, `{"model":"no-such-model","input":"hi"}`, 404)
	// A streamed response: every event is a ResponsesStreamEvent named by its type.
	streamed := readEvents(t, openSSE(t, t.Context(), "POST", env.url+"/v1/responses", aliceToken,
		strings.NewReader(`{"model":"script:[{\"text\":\"hi there\",\"tool_calls\":[{\"name\":\"ls\",\"arguments\":{\"path\":\"/w\"}}]}]","input":"hi","stream":true}`)).Body)
	for _, ev := range streamed {
		var v struct {
			Type string `json:"type"`
		}
		if err := json.Unmarshal([]byte(ev.Data), &v); err != nil || v.Type != ev.Event {
			t.Errorf("responses frame event %q, data %s", ev.Event, ev.Data)
		}
		if ok, errs := c.sv.ValidateSchemaString(c.schemas("openai.ResponsesStreamEvent"), ev.Data); !ok {
			t.Errorf("the %s event is no openai.ResponsesStreamEvent: %s:%s", ev.Event, ev.Data, describe(errs))
		}
	}
	if n := len(streamed); n < 12 || streamed[n-1].Event != "response.completed" {
		t.Errorf("the streamed response sent %d events, the last %+v", n, streamed[max(n-1, 0)])
	}
	c.exchange("POST", "/knowledge/collections", aliceToken, js, `{"name":"oa","description":"OpenAPI"}`, 200)
	c.exchange("POST", "/knowledge/collections/oa/documents", aliceToken, js, `{"document":"d","content":"# Title\n\nSome text.","metadata":{"team":"v"}}`, 200)
	c.exchange("GET", "/knowledge/collections", aliceToken, "", "", 200)
	c.exchange("GET", "/knowledge/collections/oa/documents", aliceToken, "", "", 200)
	c.exchange("POST", "/knowledge/collections/oa/search", aliceToken, js, `{"query":"some text","k":3,"min_score":0.1,"filter":{"team":"v"}}`, 200)
	c.exchange("POST", "/knowledge/collections/oa/search", aliceToken, js, `{"query":"some text","k":0}`, 400)
	c.exchange("DELETE", "/knowledge/collections/oa/documents/d", aliceToken, "", "", 200)
	c.exchange("DELETE", "/knowledge/collections/oa", aliceToken, "", "", 200)
	c.exchange("DELETE", "/agents/oa", aliceToken, "", "", 200)

	// Run control: a question and its answer, then stop and continue of a
	// run that is not stopped (refused as documented).
	askScript := `script:[{"tool_calls":[{"id":"q1","name":"ask_user","arguments":{"question":"Which?","choices":["a","b"]}}]},{"text":"ok"}]`
	agent, _ := json.Marshal(map[string]any{"agent_id": "oa-ask", "model": askScript, "tools": []string{"ask_user"}})
	c.exchange("POST", "/agents", aliceToken, js, string(agent), 200)
	var inv struct {
		RunID  string `json:"run_id"`
		Status string `json:"status"`
	}
	_ = json.Unmarshal(c.exchange("POST", "/agents/oa-ask/invoke", aliceToken, js, `{"messages":[{"role":"user","content":"ask me"}]}`, 200), &inv)
	if inv.Status != "waiting_approval" {
		t.Fatalf("the asking run is %q, want waiting_approval", inv.Status)
	}
	joinCtx, stopJoin := context.WithCancel(t.Context())
	defer stopJoin()
	join := newEventStream(openSSE(t, joinCtx, "GET", env.url+"/runs/"+inv.RunID+"/events", aliceToken, nil).Body)
	for {
		ev, err := join.next()
		if err != nil {
			t.Fatalf("the question never came: %v", err)
		}
		c.event("RunEvent", ev)
		if ev.Event == "on_interrupt" {
			break
		}
	}
	stopJoin()
	c.exchange("POST", "/runs/"+inv.RunID+"/resume", aliceToken, js, `{"decisions":[{"tool_call_id":"q1","action":"answer","message":"a"}]}`, 200)
	c.exchange("POST", "/runs/"+runID+"/stop", aliceToken, js, `{}`, 400)
	c.exchange("POST", "/runs/"+runID+"/continue", aliceToken, js, `{}`, 400)
}
