package llmgw_test

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/anthropics/anthropic-sdk-go"
	"github.com/anthropics/anthropic-sdk-go/option"
	"github.com/openai/openai-go/v3"

	llmv1 "github.com/wick-agent/wick/gen/wick/llm/v1"
	"github.com/wick-agent/wick/platform/identity"
	"github.com/wick-agent/wick/services/llmgw"
	"github.com/wick-agent/wick/services/llmgw/internal/fakellm"
)

// anthropicClient is the official anthropic-sdk-go pointed at the gateway's
// endpoint on loopback.
func anthropicClient(t *testing.T, h http.Handler, key string) anthropic.Client {
	t.Helper()
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	return anthropic.NewClient(option.WithBaseURL(srv.URL), option.WithAPIKey(key), option.WithMaxRetries(0))
}

// claudeScript thinks and calls a tool, then answers once the result is back.
const claudeScript = `script:[` +
	`{"thinking":"The user wants a listing.","text":"Listing.","tool_calls":[{"id":"toolu_1","name":"ls","arguments":{"path":"/workspace"}}]},` +
	`{"thinking":"Two files.","text":"There are two files."}]`

var lsToolParam = anthropic.ToolUnionParam{OfTool: &anthropic.ToolParam{
	Name:        "ls",
	Description: anthropic.String("Lists a directory."),
	InputSchema: anthropic.ToolInputSchemaParam{Properties: map[string]any{"path": map[string]any{"type": "string"}}},
}}

func TestMessagesSDKToolRoundTrip(t *testing.T) {
	t.Parallel()
	client := anthropicClient(t, service(t, config(), nil).HTTPHandler(), "unused")
	ctx := context.Background()
	params := anthropic.MessageNewParams{
		Model:     anthropic.Model(claudeScript),
		MaxTokens: 1024,
		System:    []anthropic.TextBlockParam{{Text: "You are terse."}},
		Messages:  []anthropic.MessageParam{anthropic.NewUserMessage(anthropic.NewTextBlock("list my files"))},
		Tools:     []anthropic.ToolUnionParam{lsToolParam},
	}
	msg, err := client.Messages.New(ctx, params)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(msg.ID, "msg_") || msg.StopReason != anthropic.StopReasonToolUse || len(msg.Content) != 3 {
		t.Fatalf("message = %s", msg.RawJSON())
	}
	th, text, use := msg.Content[0].AsThinking(), msg.Content[1].AsText(), msg.Content[2].AsToolUse()
	if th.Thinking != "The user wants a listing." || th.Signature == "" || text.Text != "Listing." {
		t.Errorf("thinking %+v text %+v", th, text)
	}
	if use.ID != "toolu_1" || use.Name != "ls" || string(use.Input) != `{"path":"/workspace"}` {
		t.Errorf("tool_use = %+v", use)
	}
	if msg.Usage.InputTokens == 0 || msg.Usage.OutputTokens == 0 {
		t.Errorf("usage = %+v", msg.Usage)
	}

	// The answer goes back as it came, thinking and signature included, with
	// the tool's result: the script moves to its second turn.
	params.Messages = append(params.Messages, msg.ToParam(), anthropic.NewUserMessage(anthropic.NewToolResultBlock(use.ID, "a.txt\nb.txt", false)))
	msg, err = client.Messages.New(ctx, params)
	if err != nil {
		t.Fatal(err)
	}
	if msg.StopReason != anthropic.StopReasonEndTurn || len(msg.Content) != 2 || msg.Content[1].AsText().Text != "There are two files." {
		t.Fatalf("second turn = %s", msg.RawJSON())
	}
}

func TestMessagesSDKStreaming(t *testing.T) {
	t.Parallel()
	client := anthropicClient(t, service(t, config(), nil).HTTPHandler(), "unused")
	st := client.Messages.NewStreaming(context.Background(), anthropic.MessageNewParams{
		Model:     anthropic.Model(claudeScript),
		MaxTokens: 1024,
		Messages:  []anthropic.MessageParam{anthropic.NewUserMessage(anthropic.NewTextBlock("list my files"))},
		Tools:     []anthropic.ToolUnionParam{lsToolParam},
	})
	var msg anthropic.Message
	var thinkingDeltas, textDeltas int
	for st.Next() {
		ev := st.Current()
		if err := msg.Accumulate(ev); err != nil {
			t.Fatal(err)
		}
		switch ev.Delta.Type {
		case "thinking_delta":
			thinkingDeltas++
		case "text_delta":
			textDeltas++
		}
	}
	if err := st.Err(); err != nil {
		t.Fatal(err)
	}
	if thinkingDeltas < 2 || textDeltas < 1 {
		t.Errorf("%d thinking and %d text deltas; want the reply streamed token by token", thinkingDeltas, textDeltas)
	}
	if msg.StopReason != anthropic.StopReasonToolUse || len(msg.Content) != 3 {
		t.Fatalf("accumulated = %+v", msg)
	}
	th, use := msg.Content[0].AsThinking(), msg.Content[2].AsToolUse()
	if th.Thinking != "The user wants a listing." || th.Signature == "" || msg.Content[1].AsText().Text != "Listing." {
		t.Errorf("thinking %+v, text %q", th, msg.Content[1].AsText().Text)
	}
	var input map[string]any
	if err := json.Unmarshal(use.Input, &input); err != nil || use.Name != "ls" || input["path"] != "/workspace" {
		t.Errorf("tool_use %+v (%v)", use, err)
	}
	if msg.Usage.OutputTokens == 0 {
		t.Errorf("usage = %+v", msg.Usage)
	}
}

func TestMessagesSDKErrors(t *testing.T) {
	t.Parallel()
	svc := service(t, config(llmgw.ModelConfig{ID: "claude", Spec: "claude-sonnet-4-20250514"}), map[string]string{})
	tests := []struct {
		name     string
		key      string
		model    string
		messages []anthropic.MessageParam
		status   int
		errType  string
		msg      string
	}{
		{name: "unknown model", model: "no-such-model", status: 404, errType: "not_found_error", msg: "no-such-model"},
		{name: "no key configured", model: "claude", status: 400, errType: "invalid_request_error", msg: "ANTHROPIC_API_KEY"},
		{name: "rate limited", model: `script:[{"error":{"status":429,"message":"slow down"}}]`, status: 429, errType: "rate_limit_error", msg: "slow down"},
		{name: "overloaded", model: `script:[{"error":{"status":529,"message":"busy"}}]`, status: 529, errType: "overloaded_error", msg: "busy"},
		{name: "bad token", key: "wrong", model: "claude", status: 401, errType: "authentication_error", msg: "token"},
		{name: "image", model: "script:demo", messages: []anthropic.MessageParam{anthropic.NewUserMessage(anthropic.NewImageBlockBase64("image/png", "iVBORw0KGgo="))}, status: 400, errType: "invalid_request_error", msg: "text only"},
	}
	client := anthropicClient(t, svc.HTTPHandler(llmgw.WithHTTPToken("s3cret")), "s3cret")
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			c := client
			if tt.key != "" {
				c = anthropicClient(t, svc.HTTPHandler(llmgw.WithHTTPToken("s3cret")), tt.key)
			}
			msgs := tt.messages
			if msgs == nil {
				msgs = []anthropic.MessageParam{anthropic.NewUserMessage(anthropic.NewTextBlock("hi"))}
			}
			_, err := c.Messages.New(context.Background(), anthropic.MessageNewParams{Model: anthropic.Model(tt.model), MaxTokens: 100, Messages: msgs})
			var apiErr *anthropic.Error
			if !errors.As(err, &apiErr) {
				t.Fatalf("err = %v, want an API error", err)
			}
			var body struct {
				Type  string `json:"type"`
				Error struct {
					Type    string `json:"type"`
					Message string `json:"message"`
				} `json:"error"`
			}
			if err := json.Unmarshal([]byte(apiErr.RawJSON()), &body); err != nil {
				t.Fatal(err)
			}
			if apiErr.StatusCode != tt.status || body.Type != "error" || body.Error.Type != tt.errType || !strings.Contains(body.Error.Message, tt.msg) {
				t.Fatalf("= %d %s; want %d %s containing %q", apiErr.StatusCode, apiErr.RawJSON(), tt.status, tt.errType, tt.msg)
			}
		})
	}
}

// sseEvents reads a Messages stream as (event name, data) pairs.
func sseEvents(t *testing.T, body io.Reader) (names []string, data []map[string]any) {
	t.Helper()
	sc := bufio.NewScanner(body)
	name := ""
	for sc.Scan() {
		line := sc.Text()
		if n, ok := strings.CutPrefix(line, "event: "); ok {
			name = n
			continue
		}
		if d, ok := strings.CutPrefix(line, "data: "); ok {
			var m map[string]any
			if err := json.Unmarshal([]byte(d), &m); err != nil {
				t.Fatalf("data %q: %v", d, err)
			}
			if m["type"] != name {
				t.Errorf("event %q carries data of type %v", name, m["type"])
			}
			names = append(names, name)
			data = append(data, m)
		}
	}
	return names, data
}

func postMessages(t *testing.T, h http.Handler, body string, hdr ...string) *http.Response {
	t.Helper()
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	req, err := http.NewRequest("POST", srv.URL+"/v1/messages", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("anthropic-version", "2023-06-01")
	for i := 0; i+1 < len(hdr); i += 2 {
		req.Header.Set(hdr[i], hdr[i+1])
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { resp.Body.Close() })
	return resp
}

// TestMessagesStreamEventOrder holds the stream to Anthropic's event order:
// message_start, ping, then per block start, deltas, stop (a thinking block
// ends with its signature), message_delta, message_stop.
func TestMessagesStreamEventOrder(t *testing.T) {
	t.Parallel()
	const script = `script:[{"thinking":"Hmm.","text":"Ok.","tool_calls":[{"id":"toolu_1","name":"ls","arguments":{"p":1}}]}]`
	body, _ := json.Marshal(map[string]any{
		"model": script, "max_tokens": 100, "stream": true,
		"messages": []any{map[string]any{"role": "user", "content": "hi"}},
	})
	resp := postMessages(t, service(t, config(), nil).HTTPHandler(), string(body))
	if resp.StatusCode != 200 || resp.Header.Get("Content-Type") != "text/event-stream" {
		t.Fatalf("= %d %q", resp.StatusCode, resp.Header.Get("Content-Type"))
	}
	names, data := sseEvents(t, resp.Body)
	var got []string
	for i, n := range names {
		switch n {
		case "content_block_start":
			n += ":" + data[i]["content_block"].(map[string]any)["type"].(string)
		case "content_block_delta":
			n += ":" + data[i]["delta"].(map[string]any)["type"].(string)
		}
		got = append(got, n)
	}
	want := []string{
		"message_start", "ping",
		"content_block_start:thinking", "content_block_delta:thinking_delta", "content_block_delta:signature_delta", "content_block_stop",
		"content_block_start:text", "content_block_delta:text_delta", "content_block_stop",
		"content_block_start:tool_use", "content_block_delta:input_json_delta", "content_block_stop",
		"message_delta", "message_stop",
	}
	if strings.Join(got, " ") != strings.Join(want, " ") {
		t.Fatalf("events\n got %v\nwant %v", got, want)
	}
	// Blocks are numbered from 0 in order.
	idx := -1
	for i, n := range names {
		if n == "content_block_start" {
			idx++
		}
		if strings.HasPrefix(n, "content_block") && int(data[i]["index"].(float64)) != idx {
			t.Errorf("event %d (%s) has index %v, want %d", i, n, data[i]["index"], idx)
		}
	}
	if d := data[len(data)-2]["delta"].(map[string]any); d["stop_reason"] != "tool_use" {
		t.Errorf("message_delta = %v", data[len(data)-2])
	}
}

// TestMessagesErrorMidStream: a failure after the first event is an SSE
// error event in Anthropic's shape.
func TestMessagesErrorMidStream(t *testing.T) {
	t.Parallel()
	cut := fakellm.Cut([]byte(`data: {"id":"c","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,"delta":{"content":"Hel"},"finish_reason":null}]}` + "\n\n"))
	svc := service(t, config(openaiModel("m", fake(t, fakellm.New(cut)))), keys)
	resp := postMessages(t, svc.HTTPHandler(), `{"model":"m","max_tokens":10,"stream":true,"messages":[{"role":"user","content":"hi"}]}`)
	names, data := sseEvents(t, resp.Body)
	if len(names) == 0 || names[len(names)-1] != "error" || names[0] != "message_start" {
		t.Fatalf("events = %v", names)
	}
	e := data[len(data)-1]["error"].(map[string]any)
	if e["type"] != "overloaded_error" || e["message"] == "" {
		t.Errorf("error event = %v", data[len(data)-1])
	}
}

// TestMessagesAcceptsWhatClaudeCodeSends: fields, headers and blocks the
// gateway cannot honour are accepted and ignored, never refused.
func TestMessagesAcceptsWhatClaudeCodeSends(t *testing.T) {
	t.Parallel()
	const body = `{
		"model": "script:[{\"text\":\"first\"},{\"text\":\"fine\"}]", "max_tokens": 32000, "stream": false,
		"system": [{"type":"text","text":"You are Claude Code.","cache_control":{"type":"ephemeral"}}],
		"messages": [
			{"role":"user","content":[{"type":"text","text":"<system-reminder>x</system-reminder>"},{"type":"text","text":"hi","cache_control":{"type":"ephemeral"}}]},
			{"role":"assistant","content":[{"type":"thinking","thinking":"t","signature":"sig"},{"type":"redacted_thinking","data":"abc"},{"type":"text","text":"hello"}]},
			{"role":"user","content":"again"}
		],
		"tools": [{"name":"Bash","description":"Runs","input_schema":{"type":"object"},"cache_control":{"type":"ephemeral"}},{"type":"web_search_20250305","name":"web_search","max_uses":5}],
		"tool_choice": {"type":"auto"}, "temperature": 1, "top_p": 0.9, "top_k": 5,
		"stop_sequences": ["\n\nHuman:"],
		"metadata": {"user_id":"user_abc"},
		"thinking": {"type":"enabled","budget_tokens":31999},
		"context_management": {"edits":[]}, "betas": ["interleaved-thinking-2025-05-14"]
	}`
	srv := httptest.NewServer(service(t, config(), nil).HTTPHandler())
	t.Cleanup(srv.Close)
	req, _ := http.NewRequest("POST", srv.URL+"/v1/messages?beta=true", strings.NewReader(body))
	req.Header.Set("anthropic-version", "2023-06-01")
	req.Header.Set("anthropic-beta", "claude-code-20250219,interleaved-thinking-2025-05-14")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != 200 || !strings.Contains(string(b), `"text":"fine"`) {
		t.Fatalf("= %d %s", resp.StatusCode, b)
	}
}

func TestMessagesCountTokens(t *testing.T) {
	t.Parallel()
	client := anthropicClient(t, service(t, config(), nil).HTTPHandler(), "unused")
	count := func(text string) int64 {
		t.Helper()
		n, err := client.Messages.CountTokens(context.Background(), anthropic.MessageCountTokensParams{
			Model:    anthropic.Model("script:demo"),
			Messages: []anthropic.MessageParam{anthropic.NewUserMessage(anthropic.NewTextBlock(text))},
		})
		if err != nil {
			t.Fatal(err)
		}
		return n.InputTokens
	}
	// About four bytes a token.
	if short, long := count("abcd"), count(strings.Repeat("abcd", 100)); short != 1 || long != 100 {
		t.Fatalf("count_tokens = %d, %d; want 1, 100", short, long)
	}
}

// TestMessagesIdentity: with the identity key, a signed user is served, a
// forged one is refused, and with a user required, so is none at all, each
// as Anthropic's authentication_error.
func TestMessagesIdentity(t *testing.T) {
	t.Parallel()
	key := identity.RandomKey()
	svc := service(t, config(), nil)
	h := svc.HTTPHandler(llmgw.WithHTTPIdentity(key), llmgw.WithHTTPUserRequired())
	signed := func(k *identity.Key) []string {
		hdr := http.Header{}
		k.SetHTTP(hdr, "alice", []string{"acme"})
		var out []string
		for name, v := range hdr {
			out = append(out, name, v[0])
		}
		return out
	}
	tests := []struct {
		name   string
		hdr    []string
		status int
	}{
		{name: "signed", hdr: signed(key), status: 200},
		{name: "signed with another key", hdr: signed(identity.RandomKey()), status: 401},
		{name: "none", status: 401},
	}
	const body = `{"model":"script:demo","max_tokens":10,"messages":[{"role":"user","content":"hi"}]}`
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			resp := postMessages(t, h, body, tt.hdr...)
			b, _ := io.ReadAll(resp.Body)
			if resp.StatusCode != tt.status {
				t.Fatalf("= %d %s, want %d", resp.StatusCode, b, tt.status)
			}
			if tt.status == 401 && !strings.Contains(string(b), `"type":"authentication_error"`) {
				t.Errorf("body %s is not Anthropic's authentication_error", b)
			}
		})
	}
}

// TestThinkingLeftOutWithoutAPlace: the APIs with no place for thinking
// (Chat Completions, the gRPC stream) send the text alone, and no empty
// pieces for the thinking they skip.
func TestThinkingLeftOutWithoutAPlace(t *testing.T) {
	t.Parallel()
	const model = `script:[{"thinking":"one two three four five","text":"Hello."}]`
	t.Run("chat completions", func(t *testing.T) {
		t.Parallel()
		client := sdkClient(t, service(t, config(), nil), "")
		st := client.Chat.Completions.NewStreaming(context.Background(), openai.ChatCompletionNewParams{
			Model: model, Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("hi")},
		})
		var text []string
		for st.Next() {
			for _, c := range st.Current().Choices {
				if c.FinishReason == "" {
					text = append(text, c.Delta.Content)
				}
			}
		}
		if err := st.Err(); err != nil {
			t.Fatal(err)
		}
		if strings.Join(text, "|") != "Hello." {
			t.Fatalf("content chunks %q, want just the text", text)
		}
	})
	t.Run("grpc", func(t *testing.T) {
		t.Parallel()
		gw := newGateway(t, config(), nil)
		got := stream(t, gw.client, &llmv1.StreamRequest{Models: models(model), Messages: userHi})
		if got.err != nil || got.text != "Hello." {
			t.Fatalf("text %q err %v", got.text, got.err)
		}
		for _, m := range got.msgs[:len(got.msgs)-1] {
			if m.GetDelta() == "" && m.GetToolCallDelta() == nil {
				t.Fatalf("an empty message before the final one: %v", m)
			}
		}
	})
}
