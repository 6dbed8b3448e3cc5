package openai_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/wick-agent/wick/llm"
	"github.com/wick-agent/wick/services/llmgw/internal/fakellm"
	"github.com/wick-agent/wick/services/llmgw/internal/openai"
	"github.com/wick-agent/wick/services/llmgw/internal/upstream"
)

func start(t *testing.T, handlers ...http.HandlerFunc) (*fakellm.Server, string) {
	t.Helper()
	f := fakellm.New(handlers...)
	srv := httptest.NewServer(f)
	t.Cleanup(srv.Close)
	return f, srv.URL + "/v1"
}

func run(t *testing.T, baseURL, key string, req llm.Request) (llm.Result, *fakellm.Recording, error) {
	t.Helper()
	return fakellm.Record(context.Background(), openai.New(http.DefaultClient, baseURL, key), req)
}

var hello = llm.Request{Model: "gpt-4o", Messages: []llm.Message{{Role: "user", Content: "hi"}}}

func TestFixtures(t *testing.T) {
	t.Parallel()
	tests := []struct {
		fixture string
		prefix  string
		finish  string
		usage   llm.Usage
		calls   []llm.ToolCall
	}{
		{fixture: "openai/text_stream.sse", prefix: "I'm unable to provide real-time updates, including current weather information. For the latest weather in San Francisco, I recommend checking a reliable weather website or app such as the Weather Channel, BBC Weather, or a local San Francisco news station.", finish: "stop", usage: llm.Usage{InputTokens: 14, OutputTokens: 47}},
		{fixture: "openai/usage_chunk.sse", prefix: `{"`, finish: "stop", usage: llm.Usage{InputTokens: 17, OutputTokens: 14}},
		{fixture: "openai/refusal.sse", prefix: "I'm sorry, but I can't assist with that request.", finish: "refusal", usage: llm.Usage{InputTokens: 17, OutputTokens: 12}},
		{fixture: "openai/parallel_tool_calls.sse", finish: "tool_calls", usage: llm.Usage{InputTokens: 149, OutputTokens: 60}, calls: []llm.ToolCall{
			{ID: "call_JMW1whyEaYG438VE1OIflxA2", Name: "GetWeatherArgs", Args: map[string]any{"city": "Edinburgh", "country": "GB", "units": "c"}},
			{ID: "call_DNYTawLBoN8fj3KN6qU9N1Ou", Name: "get_stock_price", Args: map[string]any{"exchange": "NASDAQ", "ticker": "AAPL"}},
		}},
	}
	for _, tt := range tests {
		t.Run(tt.fixture, func(t *testing.T) {
			t.Parallel()
			_, url := start(t, fakellm.SSE(fakellm.Fixture(tt.fixture)))
			res, rec, err := run(t, url, "sk-test", hello)
			if err != nil {
				t.Fatal(err)
			}
			if !strings.HasPrefix(res.Content, tt.prefix) {
				t.Errorf("content = %q, want prefix %q", res.Content, tt.prefix)
			}
			if rec.Text.String() != res.Content {
				t.Errorf("deltas joined = %q, content = %q", rec.Text.String(), res.Content)
			}
			if res.FinishReason != tt.finish {
				t.Errorf("finish = %q, want %q", res.FinishReason, tt.finish)
			}
			if res.Usage != tt.usage {
				t.Errorf("usage = %+v, want %+v", res.Usage, tt.usage)
			}
			if len(res.ToolCalls) != len(tt.calls) {
				t.Fatalf("tool calls = %+v, want %+v", res.ToolCalls, tt.calls)
			}
			for i, want := range tt.calls {
				got := res.ToolCalls[i]
				if got.ID != want.ID || got.Name != want.Name || !reflect.DeepEqual(got.Args, want.Args) || got.ArgsErr != "" {
					t.Errorf("call %d = %+v, want %+v", i, got, want)
				}
			}
			if len(tt.calls) > 0 && len(rec.Deltas) == 0 {
				t.Error("no tool-call deltas were streamed")
			}
		})
	}
}

func TestUsageChunkContentIsJSON(t *testing.T) {
	t.Parallel()
	_, url := start(t, fakellm.SSE(fakellm.Fixture("openai/usage_chunk.sse")))
	res, _, err := run(t, url, "", hello)
	if err != nil {
		t.Fatal(err)
	}
	var v map[string]any
	if err := json.Unmarshal([]byte(res.Content), &v); err != nil {
		t.Fatalf("content %q is not the JSON object the fixture streams: %v", res.Content, err)
	}
}

// chunkLine builds one chat.completion.chunk data line.
func chunkLine(delta string, finish string) string {
	f := "null"
	if finish != "" {
		f = fmt.Sprintf("%q", finish)
	}
	return fmt.Sprintf(`data: {"id":"c1","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,"delta":%s,"finish_reason":%s}]}`+"\n\n", delta, f)
}

func toolDelta(index int, id, name, args string) string {
	b, _ := json.Marshal(args)
	fn := fmt.Sprintf(`{"arguments":%s}`, b)
	if name != "" {
		fn = fmt.Sprintf(`{"name":%q,"arguments":%s}`, name, b)
	}
	if id != "" {
		return fmt.Sprintf(`{"tool_calls":[{"index":%d,"id":%q,"type":"function","function":%s}]}`, index, id, fn)
	}
	return fmt.Sprintf(`{"tool_calls":[{"index":%d,"function":%s}]}`, index, fn)
}

func TestArgumentsSplitAtEveryByte(t *testing.T) {
	t.Parallel()
	args := `{"path":"/workspace/ä b.py","content":"print(\"hé\")\n","n":[1,2.5,{"x":null}]}`
	var want map[string]any
	if err := json.Unmarshal([]byte(args), &want); err != nil {
		t.Fatal(err)
	}
	for cut := 0; cut <= len(args); cut++ {
		// Providers split JSON text anywhere, even inside a UTF-8 sequence
		// when they send bytes; the JSON-escaped fragments here keep each
		// line valid JSON, and the assembler must rejoin them exactly.
		if !utf8Boundary(args, cut) {
			continue
		}
		body := chunkLine(`{"role":"assistant","content":null}`, "") +
			chunkLine(toolDelta(0, "call_1", "write_file", ""), "") +
			chunkLine(toolDelta(0, "", "", args[:cut]), "") +
			chunkLine(toolDelta(0, "", "", args[cut:]), "") +
			chunkLine(`{}`, "tool_calls") + "data: [DONE]\n\n"
		_, url := start(t, fakellm.SSE([]byte(body)))
		res, _, err := run(t, url, "", hello)
		if err != nil {
			t.Fatalf("cut %d: %v", cut, err)
		}
		if len(res.ToolCalls) != 1 || !reflect.DeepEqual(res.ToolCalls[0].Args, want) || res.ToolCalls[0].RawArgs != args {
			t.Fatalf("cut %d: calls = %+v", cut, res.ToolCalls)
		}
	}
}

func utf8Boundary(s string, i int) bool {
	return i == 0 || i == len(s) || (s[i]&0xC0) != 0x80
}

func TestUnknownFieldsAndEventsAreIgnored(t *testing.T) {
	t.Parallel()
	body := ": keep-alive comment\n\n" +
		"event: something_new\ndata: {\"id\":\"c1\",\"object\":\"chat.completion.chunk\",\"created\":1,\"model\":\"m\",\"choices\":[],\"brand_new\":{\"a\":1}}\n\n" +
		`data: {"id":"c1","object":"chat.completion.chunk","created":1,"model":"m","future_field":[1,2],"choices":[{"index":0,"delta":{"content":"Hi","new_delta_field":"x"},"finish_reason":null,"extra":true}]}` + "\n\n" +
		chunkLine(`{}`, "stop") + "data: [DONE]\n\n"
	_, url := start(t, fakellm.SSE([]byte(body)))
	res, _, err := run(t, url, "", hello)
	if err != nil {
		t.Fatal(err)
	}
	if res.Content != "Hi" || res.FinishReason != "stop" {
		t.Fatalf("result = %+v", res)
	}
}

func TestMalformedArgumentsAreAnErrorForThatCall(t *testing.T) {
	t.Parallel()
	body := chunkLine(toolDelta(0, "call_1", "ls", `{"path": "/wor`), "") +
		chunkLine(toolDelta(1, "call_2", "ls", `{"path":"/ok"}`), "") +
		chunkLine(`{}`, "tool_calls") + "data: [DONE]\n\n"
	_, url := start(t, fakellm.SSE([]byte(body)))
	res, _, err := run(t, url, "", hello)
	if err != nil {
		t.Fatal(err)
	}
	if len(res.ToolCalls) != 2 {
		t.Fatalf("calls = %+v", res.ToolCalls)
	}
	if res.ToolCalls[0].ArgsErr == "" || res.ToolCalls[0].Args != nil {
		t.Errorf("malformed call = %+v, want an ArgsErr", res.ToolCalls[0])
	}
	if res.ToolCalls[1].ArgsErr != "" || res.ToolCalls[1].Args["path"] != "/ok" {
		t.Errorf("good call = %+v", res.ToolCalls[1])
	}
}

func TestErrors(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name       string
		handler    http.HandlerFunc
		kind       upstream.Kind
		status     int
		retryAfter time.Duration
		events     int
	}{
		{name: "429 with Retry-After", handler: fakellm.Status(429, map[string]string{"Retry-After": "3"}, `{"error":{"message":"slow down","type":"requests","code":"rate_limit_exceeded"}}`), kind: upstream.KindRateLimited, status: 429, retryAfter: 3 * time.Second},
		{name: "429 with retry-after-ms", handler: fakellm.Status(429, map[string]string{"retry-after-ms": "1500", "Retry-After": "9"}, `{"error":{"message":"slow down"}}`), kind: upstream.KindRateLimited, status: 429, retryAfter: 1500 * time.Millisecond},
		{name: "529", handler: fakellm.Status(529, nil, `{"error":{"message":"overloaded"}}`), kind: upstream.KindOverloaded, status: 529},
		{name: "500", handler: fakellm.Status(500, nil, `{"error":{"message":"boom"}}`), kind: upstream.KindServer, status: 500},
		{name: "408", handler: fakellm.Status(408, nil, `{}`), kind: upstream.KindServer, status: 408},
		{name: "409", handler: fakellm.Status(409, nil, `{}`), kind: upstream.KindServer, status: 409},
		{name: "400", handler: fakellm.Status(400, nil, `{"error":{"message":"bad","type":"invalid_request_error"}}`), kind: upstream.KindInvalid, status: 400},
		{name: "401", handler: fakellm.Status(401, nil, `{"error":{"message":"bad key"}}`), kind: upstream.KindAuth, status: 401},
		{name: "403", handler: fakellm.Status(403, nil, `{}`), kind: upstream.KindAuth, status: 403},
		{name: "404", handler: fakellm.Status(404, nil, `{}`), kind: upstream.KindNotFound, status: 404},
		{name: "422", handler: fakellm.Status(422, nil, `{}`), kind: upstream.KindInvalid, status: 422},
		{name: "disconnect mid-stream", handler: fakellm.Cut([]byte(chunkLine(`{"content":"Hel"}`, ""))), kind: upstream.KindConnection, events: 1},
		{name: "stream ends without finish", handler: fakellm.SSE([]byte(chunkLine(`{"content":"Hel"}`, ""))), kind: upstream.KindConnection, events: 1},
		{name: "error event mid-stream", handler: fakellm.SSE([]byte(chunkLine(`{"content":"Hel"}`, "") + `data: {"error":{"message":"The server had an error","type":"server_error","param":null,"code":null}}` + "\n\n")), kind: upstream.KindServer, status: 200, events: 1},
		{name: "overloaded error event", handler: fakellm.SSE([]byte(`data: {"error":{"message":"busy","type":"overloaded_error"}}` + "\n\n")), kind: upstream.KindOverloaded, status: 200},
		{name: "rate limit error event by code", handler: fakellm.SSE([]byte(`data: {"error":{"message":"slow","type":"","code":"rate_limit_exceeded"}}` + "\n\n")), kind: upstream.KindRateLimited, status: 200},
		{name: "not JSON", handler: fakellm.SSE([]byte("data: {not json\n\n")), kind: upstream.KindBadResponse},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			_, url := start(t, tt.handler)
			_, rec, err := run(t, url, "sk-test", hello)
			var e *upstream.Error
			if !errors.As(err, &e) {
				t.Fatalf("err = %v (%T), want *upstream.Error", err, err)
			}
			if e.Kind != tt.kind || e.Status != tt.status || e.RetryAfter != tt.retryAfter {
				t.Errorf("err = kind %v status %d retry-after %v, want %v %d %v (%v)", e.Kind, e.Status, e.RetryAfter, tt.kind, tt.status, tt.retryAfter, e)
			}
			if rec.Events != tt.events {
				t.Errorf("events = %d, want %d", rec.Events, tt.events)
			}
			if strings.Contains(e.Error(), "sk-test") {
				t.Errorf("error %q holds the key", e)
			}
		})
	}
}

func TestRequestShape(t *testing.T) {
	t.Parallel()
	f, url := start(t, fakellm.SSE(fakellm.Fixture("openai/text_stream.sse")))
	temp := 0.5
	req := llm.Request{
		Model:        "gpt-4o",
		SystemPrompt: "be brief",
		MaxTokens:    100,
		Temperature:  &temp,
		Messages: []llm.Message{
			{Role: "user", Content: "read a"},
			{Role: "assistant", ToolCalls: []llm.ToolCall{{ID: "c1", Name: "read_file", Args: map[string]any{"path": "/a"}}}},
			{Role: "tool", ToolCallID: "c1", Name: "read_file", Content: "A"},
		},
		Tools: []llm.ToolSchema{{Name: "read_file", Description: "read", Parameters: map[string]any{"type": "object", "properties": map[string]any{"path": map[string]any{"type": "string"}}}}},
	}
	if _, _, err := run(t, url, "sk-test", req); err != nil {
		t.Fatal(err)
	}
	r := f.Requests()[0]
	if r.Path != "/v1/chat/completions" || r.Header.Get("Authorization") != "Bearer sk-test" {
		t.Errorf("path %q auth %q", r.Path, r.Header.Get("Authorization"))
	}
	var body struct {
		Model               string           `json:"model"`
		Stream              bool             `json:"stream"`
		StreamOptions       map[string]bool  `json:"stream_options"`
		MaxCompletionTokens int              `json:"max_completion_tokens"`
		Temperature         float64          `json:"temperature"`
		Messages            []map[string]any `json:"messages"`
		Tools               []map[string]any `json:"tools"`
	}
	if err := json.Unmarshal(r.Body, &body); err != nil {
		t.Fatal(err)
	}
	if body.Model != "gpt-4o" || !body.Stream || !body.StreamOptions["include_usage"] || body.MaxCompletionTokens != 100 || body.Temperature != 0.5 {
		t.Errorf("body = %s", r.Body)
	}
	if len(body.Messages) != 4 || body.Messages[0]["role"] != "system" || body.Messages[3]["role"] != "tool" || body.Messages[3]["tool_call_id"] != "c1" {
		t.Errorf("messages = %v", body.Messages)
	}
	tc := body.Messages[2]["tool_calls"].([]any)[0].(map[string]any)
	if tc["function"].(map[string]any)["arguments"] != `{"path":"/a"}` {
		t.Errorf("tool call = %v", tc)
	}
	if len(body.Tools) != 1 {
		t.Errorf("tools = %v", body.Tools)
	}
}

func TestNoKeyNoAuthorizationHeader(t *testing.T) {
	t.Setenv("OPENAI_API_KEY", "sk-from-env-must-not-leak")
	f, url := start(t, fakellm.SSE(fakellm.Fixture("openai/text_stream.sse")))
	if _, _, err := run(t, url, "", hello); err != nil {
		t.Fatal(err)
	}
	if h := f.Requests()[0].Header.Get("Authorization"); h != "" {
		t.Fatalf("Authorization = %q, want none", h)
	}
}

func TestEmitErrorStopsTheStream(t *testing.T) {
	t.Parallel()
	_, url := start(t, fakellm.SSE(fakellm.Fixture("openai/text_stream.sse")))
	p := openai.New(http.DefaultClient, url, "")
	stop := errors.New("client went away")
	n := 0
	_, err := p.Stream(context.Background(), hello, func(llm.Event) error { n++; return stop })
	if !errors.Is(err, stop) || n != 1 {
		t.Fatalf("err = %v after %d events", err, n)
	}
}
