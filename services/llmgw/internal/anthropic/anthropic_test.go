package anthropic_test

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
	"github.com/wick-agent/wick/services/llmgw/internal/anthropic"
	"github.com/wick-agent/wick/services/llmgw/internal/fakellm"
	"github.com/wick-agent/wick/services/llmgw/internal/router"
	"github.com/wick-agent/wick/services/llmgw/internal/upstream"
)

func start(t *testing.T, handlers ...http.HandlerFunc) (*fakellm.Server, string) {
	t.Helper()
	f := fakellm.New(handlers...)
	srv := httptest.NewServer(f)
	t.Cleanup(srv.Close)
	return f, srv.URL
}

func run(t *testing.T, baseURL, key string, req llm.Request) (llm.Result, *fakellm.Recording, error) {
	t.Helper()
	return fakellm.Record(context.Background(), anthropic.New(http.DefaultClient, baseURL, key), req)
}

var hello = llm.Request{Model: "claude-sonnet-4-20250514", Messages: []llm.Message{{Role: "user", Content: "hi"}}}

func TestFixtures(t *testing.T) {
	t.Parallel()
	tests := []struct {
		fixture string
		content string
		finish  string
		usage   llm.Usage
		calls   []llm.ToolCall
	}{
		{fixture: "anthropic/basic_response.txt", content: "Hello there!", finish: "stop", usage: llm.Usage{InputTokens: 11, OutputTokens: 6}},
		{fixture: "anthropic/extra_fields_response.txt", content: "Hello!", finish: "stop", usage: llm.Usage{InputTokens: 11, OutputTokens: 3}},
		// Input counts cached tokens too (11 + 3 created + 5 read), as OpenAI's prompt_tokens do.
		{fixture: "anthropic/missing_usage_response.txt", content: "hi", finish: "stop", usage: llm.Usage{InputTokens: 19, OutputTokens: 1}},
		{fixture: "anthropic/refusal_response.txt", content: "", finish: "refusal", usage: llm.Usage{InputTokens: 20, OutputTokens: 120}},
		{fixture: "anthropic/tool_use_response.txt", content: "I'll check the current weather in Paris for you.", finish: "tool_calls", usage: llm.Usage{InputTokens: 377, OutputTokens: 65}, calls: []llm.ToolCall{
			{ID: "toolu_01NRLabsLyVHZPKxbKvkfSMn", Name: "get_weather", Args: map[string]any{"location": "Paris"}},
		}},
	}
	for _, tt := range tests {
		t.Run(tt.fixture, func(t *testing.T) {
			t.Parallel()
			_, url := start(t, fakellm.SSE(fakellm.Fixture(tt.fixture)))
			res, rec, err := run(t, url, "sk-ant-test", hello)
			if err != nil {
				t.Fatal(err)
			}
			if res.Content != tt.content || rec.Text.String() != tt.content {
				t.Errorf("content = %q, deltas = %q, want %q", res.Content, rec.Text.String(), tt.content)
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
			if len(tt.calls) > 0 {
				if len(rec.Deltas) == 0 || rec.Deltas[0].ID != tt.calls[0].ID || rec.Deltas[0].Index != 0 {
					t.Errorf("tool-call deltas = %+v", rec.Deltas)
				}
			}
		})
	}
}

func event(typ, data string) string { return "event: " + typ + "\ndata: " + data + "\n\n" }

const (
	msgStart  = `{"type":"message_start","message":{"id":"m","type":"message","role":"assistant","content":[],"model":"claude","stop_reason":null,"stop_sequence":null,"usage":{"input_tokens":5,"output_tokens":1}}}`
	textStart = `{"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}`
)

func textDelta(s string) string {
	b, _ := json.Marshal(s)
	return fmt.Sprintf(`{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":%s}}`, b)
}

func jsonDelta(index int, s string) string {
	b, _ := json.Marshal(s)
	return fmt.Sprintf(`{"type":"content_block_delta","index":%d,"delta":{"type":"input_json_delta","partial_json":%s}}`, index, b)
}

func stopEvents(reason string) string {
	return event("message_delta", fmt.Sprintf(`{"type":"message_delta","delta":{"stop_reason":%q,"stop_sequence":null},"usage":{"output_tokens":9}}`, reason)) +
		event("message_stop", `{"type":"message_stop"}`)
}

func TestArgumentsSplitAtEveryByte(t *testing.T) {
	t.Parallel()
	args := `{"command":"cat /workspace/ü.txt | grep \"x\"","todos":[{"id":"1","status":"done"}]}`
	var want map[string]any
	if err := json.Unmarshal([]byte(args), &want); err != nil {
		t.Fatal(err)
	}
	for cut := 0; cut <= len(args); cut++ {
		if cut > 0 && cut < len(args) && (args[cut]&0xC0) == 0x80 {
			continue
		}
		body := event("message_start", msgStart) +
			event("content_block_start", `{"type":"content_block_start","index":0,"content_block":{"type":"tool_use","id":"toolu_1","name":"execute","input":{}}}`) +
			event("content_block_delta", jsonDelta(0, args[:cut])) +
			event("content_block_delta", jsonDelta(0, args[cut:])) +
			event("content_block_stop", `{"type":"content_block_stop","index":0}`) +
			stopEvents("tool_use")
		_, url := start(t, fakellm.SSE([]byte(body)))
		res, _, err := run(t, url, "", hello)
		if err != nil {
			t.Fatalf("cut %d: %v", cut, err)
		}
		if len(res.ToolCalls) != 1 || !reflect.DeepEqual(res.ToolCalls[0].Args, want) {
			t.Fatalf("cut %d: calls = %+v", cut, res.ToolCalls)
		}
	}
}

func TestUnknownEventsAreIgnored(t *testing.T) {
	t.Parallel()
	body := event("message_start", msgStart) +
		event("brand_new_event", `{"type":"brand_new_event","stuff":[1]}`) +
		event("content_block_start", textStart) +
		event("ping", `{"type": "ping"}`) +
		event("content_block_delta", `{"type":"content_block_delta","index":0,"delta":{"type":"future_delta","x":1}}`) +
		event("content_block_delta", textDelta("Hi")) +
		event("content_block_start", `{"type":"content_block_start","index":1,"content_block":{"type":"thinking","thinking":""}}`) +
		event("content_block_delta", `{"type":"content_block_delta","index":1,"delta":{"type":"thinking_delta","thinking":"hmm"}}`) +
		stopEvents("end_turn")
	_, url := start(t, fakellm.SSE([]byte(body)))
	res, _, err := run(t, url, "", hello)
	if err != nil {
		t.Fatal(err)
	}
	if res.Content != "Hi" || res.FinishReason != "stop" || res.Usage != (llm.Usage{InputTokens: 5, OutputTokens: 9}) {
		t.Fatalf("result = %+v", res)
	}
}

func TestErrors(t *testing.T) {
	t.Parallel()
	begun := event("message_start", msgStart) + event("content_block_start", textStart) + event("content_block_delta", textDelta("Hel"))
	tests := []struct {
		name       string
		handler    http.HandlerFunc
		kind       upstream.Kind
		status     int
		retryAfter time.Duration
		events     int
	}{
		{name: "429 with Retry-After", handler: fakellm.Status(429, map[string]string{"Retry-After": "2"}, `{"type":"error","error":{"type":"rate_limit_error","message":"slow"}}`), kind: upstream.KindRateLimited, status: 429, retryAfter: 2 * time.Second},
		{name: "529", handler: fakellm.Status(529, nil, `{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}`), kind: upstream.KindOverloaded, status: 529},
		{name: "400", handler: fakellm.Status(400, nil, `{"type":"error","error":{"type":"invalid_request_error","message":"bad"}}`), kind: upstream.KindInvalid, status: 400},
		{name: "401", handler: fakellm.Status(401, nil, `{"type":"error","error":{"type":"authentication_error","message":"bad key"}}`), kind: upstream.KindAuth, status: 401},
		{name: "disconnect mid-stream", handler: fakellm.Cut([]byte(begun)), kind: upstream.KindConnection, events: 1},
		{name: "error event mid-stream", handler: fakellm.SSE([]byte(begun + event("error", `{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}`))), kind: upstream.KindOverloaded, status: 200, events: 1},
		{name: "api_error event", handler: fakellm.SSE([]byte(event("error", `{"type":"error","error":{"type":"api_error","message":"Internal"}}`))), kind: upstream.KindServer, status: 200},
		{name: "json delta for a text block", handler: fakellm.SSE([]byte(event("message_start", msgStart) + event("content_block_start", textStart) + event("content_block_delta", jsonDelta(0, "{")))), kind: upstream.KindProtocol},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			_, url := start(t, tt.handler)
			_, rec, err := run(t, url, "sk-ant-test", hello)
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
			if strings.Contains(e.Error(), "sk-ant-test") {
				t.Errorf("error %q holds the key", e)
			}
		})
	}
}

// TestProtocolErrors replays streams whose events break the Messages protocol
// although message_stop arrives: each is a protocol error naming the fault, and
// the router sends the request once, not again as after a dropped connection.
func TestProtocolErrors(t *testing.T) {
	t.Parallel()
	begun := event("message_start", msgStart) + event("content_block_start", textStart) + event("content_block_delta", textDelta("Hi"))
	tests := []struct {
		name    string
		events  string
		fixture string // replayed as it is, instead of events and a stop
		want    string
	}{
		// Block 1 starts with no block 0, then message_stop without the
		// blank line that would dispatch it: before the blocks were checked
		// in order, this read as a stream cut before message_stop, a
		// connection fault, and was sent again.
		{name: "block 1 started before block 0", fixture: "anthropic/out_of_order_response.txt", want: "content_block_start for content block 1, but the next block is 0"},
		{name: "block 2 started after block 0", events: begun + event("content_block_start", `{"type":"content_block_start","index":2,"content_block":{"type":"text","text":""}}`), want: "content_block_start for content block 2, but the next block is 1"},
		{name: "text delta for a block never started", events: event("message_start", msgStart) + event("content_block_delta", `{"type":"content_block_delta","index":3,"delta":{"type":"text_delta","text":"x"}}`), want: "text_delta for content block 3, which was never started"},
		{name: "json delta for a block never started", events: event("message_start", msgStart) + event("content_block_delta", jsonDelta(2, "{")), want: "input_json_delta for content block 2, which was never started"},
		{name: "stop for an unknown block", events: begun + event("content_block_stop", `{"type":"content_block_stop","index":5}`), want: "content_block_stop for content block 5, which was never started"},
		{name: "delta after its block stopped", events: begun + event("content_block_stop", `{"type":"content_block_stop","index":0}`) + event("content_block_delta", textDelta("late")), want: "text_delta for content block 0, which was never started (or already stopped)"},
		{name: "block started twice", events: begun + event("content_block_start", textStart), want: "content_block_start for content block 0, which is already open"},
		{name: "text delta for a tool_use block", events: event("message_start", msgStart) + event("content_block_start", `{"type":"content_block_start","index":0,"content_block":{"type":"tool_use","id":"toolu_1","name":"execute","input":{}}}`) + event("content_block_delta", textDelta("x")), want: "text_delta for content block 0, which is a tool_use block"},
	}
	policy := router.Policy{MaxRetries: 2, BaseDelay: time.Microsecond, MaxDelay: 10 * time.Microsecond, MaxRetryAfter: time.Second}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			body := []byte(tt.events + stopEvents("end_turn"))
			if tt.fixture != "" {
				body = fakellm.Fixture(tt.fixture)
			}
			f, url := start(t, fakellm.SSE(body))
			target := router.Target{Name: "claude", Provider: "anthropic", Model: hello.Model, Open: func() (llm.Provider, error) {
				return anthropic.New(http.DefaultClient, url, "sk-ant-test"), nil
			}}
			_, err := policy.Run(context.Background(), []router.Target{target}, hello, func(*router.Target, llm.Event) error { return nil })
			var e *upstream.Error
			if !errors.As(err, &e) {
				t.Fatalf("err = %v (%T), want *upstream.Error", err, err)
			}
			if e.Kind != upstream.KindProtocol || e.Retryable() || !strings.Contains(e.Error(), tt.want) {
				t.Errorf("err = %v (kind %v, retryable %v), want a %v error containing %q", e, e.Kind, e.Retryable(), upstream.KindProtocol, tt.want)
			}
			if n := f.Count(); n != 1 {
				t.Errorf("provider saw %d requests, want 1: a protocol error is not retried", n)
			}
		})
	}
}

func TestRequestShape(t *testing.T) {
	t.Parallel()
	f, url := start(t, fakellm.SSE(fakellm.Fixture("anthropic/basic_response.txt")))
	req := llm.Request{
		Model:        "claude-sonnet-4-20250514",
		SystemPrompt: "be brief",
		Messages: []llm.Message{
			{Role: "system", Content: "and kind"},
			{Role: "user", Content: "read a and b"},
			{Role: "assistant", Content: "Reading.", ToolCalls: []llm.ToolCall{
				{ID: "t1", Name: "read_file", Args: map[string]any{"path": "/a"}},
				{ID: "t2", Name: "read_file", RawArgs: `{"path":"/b"}`},
			}},
			{Role: "tool", ToolCallID: "t1", Name: "read_file", Content: "A"},
			{Role: "tool", ToolCallID: "t2", Name: "read_file", Content: "B"},
			{Role: "user", Content: "thanks"},
		},
		Tools: []llm.ToolSchema{{Name: "read_file", Description: "read", Parameters: map[string]any{"type": "object", "properties": map[string]any{"path": map[string]any{"type": "string"}}, "required": []any{"path"}}}},
	}
	if _, _, err := run(t, url, "sk-ant-test", req); err != nil {
		t.Fatal(err)
	}
	r := f.Requests()[0]
	if r.Path != "/v1/messages" || r.Header.Get("X-Api-Key") != "sk-ant-test" || r.Header.Get("Anthropic-Version") == "" {
		t.Errorf("path %q headers %v", r.Path, r.Header)
	}
	var body struct {
		MaxTokens int `json:"max_tokens"`
		System    []struct {
			Text string `json:"text"`
		} `json:"system"`
		Messages []struct {
			Role    string           `json:"role"`
			Content []map[string]any `json:"content"`
		} `json:"messages"`
		Tools []struct {
			Name        string         `json:"name"`
			InputSchema map[string]any `json:"input_schema"`
		} `json:"tools"`
	}
	if err := json.Unmarshal(r.Body, &body); err != nil {
		t.Fatal(err)
	}
	if body.MaxTokens != anthropic.DefaultMaxTokens {
		t.Errorf("max_tokens = %d", body.MaxTokens)
	}
	if len(body.System) != 2 || body.System[0].Text != "be brief" || body.System[1].Text != "and kind" {
		t.Errorf("system = %+v", body.System)
	}
	if len(body.Messages) != 3 {
		t.Fatalf("messages = %s", r.Body)
	}
	asst := body.Messages[1]
	if asst.Role != "assistant" || len(asst.Content) != 3 || asst.Content[1]["type"] != "tool_use" || asst.Content[2]["input"].(map[string]any)["path"] != "/b" {
		t.Errorf("assistant = %+v", asst)
	}
	results := body.Messages[2]
	if results.Role != "user" || len(results.Content) != 3 || results.Content[0]["type"] != "tool_result" || results.Content[1]["tool_use_id"] != "t2" || results.Content[2]["type"] != "text" {
		t.Errorf("tool results = %+v", results)
	}
	if len(body.Tools) != 1 || body.Tools[0].InputSchema["type"] != "object" || body.Tools[0].InputSchema["required"] == nil {
		t.Errorf("tools = %+v", body.Tools)
	}
}

func TestNoKeyFromEnvironment(t *testing.T) {
	t.Setenv("ANTHROPIC_API_KEY", "sk-ant-from-env-must-not-leak")
	f, url := start(t, fakellm.SSE(fakellm.Fixture("anthropic/basic_response.txt")))
	if _, _, err := run(t, url, "", hello); err != nil {
		t.Fatal(err)
	}
	h := f.Requests()[0].Header
	if h.Get("X-Api-Key") != "" || h.Get("Authorization") != "" {
		t.Fatalf("headers carry a key: %v", h)
	}
}
