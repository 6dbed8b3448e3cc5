package llmgw_test

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"

	"github.com/wick-agent/wick/services/llmgw"
	"github.com/wick-agent/wick/services/llmgw/internal/fakellm"
)

// sdkClient is the official openai-go SDK pointed at the gateway's endpoint.
func sdkClient(t *testing.T, svc *llmgw.Service, token string) openai.Client {
	t.Helper()
	srv := httptest.NewServer(svc.HTTPHandlerWithToken(token))
	t.Cleanup(srv.Close)
	return openai.NewClient(option.WithBaseURL(srv.URL+"/v1"), option.WithAPIKey(token), option.WithMaxRetries(0))
}

func service(t *testing.T, cfg llmgw.Config, env map[string]string) *llmgw.Service {
	t.Helper()
	svc, err := llmgw.New(cfg, llmgw.WithLookupEnv(func(k string) (string, bool) { v, ok := env[k]; return v, ok }))
	if err != nil {
		t.Fatal(err)
	}
	return svc
}

const toolScript = `script:[{"text":"Listing.","tool_calls":[{"name":"ls","arguments":{"path":"/workspace"}},{"name":"read_file","arguments":{"path":"/workspace/a.txt"}}]},{"text":"All done."}]`

var lsTool = openai.ChatCompletionFunctionTool(openai.FunctionDefinitionParam{
	Name:       "ls",
	Parameters: openai.FunctionParameters{"type": "object", "properties": map[string]any{"path": map[string]any{"type": "string"}}},
})

func TestOpenAIEndpointNonStreaming(t *testing.T) {
	t.Parallel()
	client := sdkClient(t, service(t, config(), nil), "")
	resp, err := client.Chat.Completions.New(context.Background(), openai.ChatCompletionNewParams{
		Model:    toolScript,
		Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("list my files")},
		Tools:    []openai.ChatCompletionToolUnionParam{lsTool},
	})
	if err != nil {
		t.Fatal(err)
	}
	ch := resp.Choices[0]
	if ch.FinishReason != "tool_calls" || ch.Message.Content != "Listing." || len(ch.Message.ToolCalls) != 2 {
		t.Fatalf("choice = %+v", ch)
	}
	if tc := ch.Message.ToolCalls[0]; tc.Function.Name != "ls" || tc.Function.Arguments != `{"path":"/workspace"}` || tc.ID == "" {
		t.Errorf("tool call = %+v", tc)
	}
	if resp.Usage.TotalTokens == 0 || resp.Usage.TotalTokens != resp.Usage.PromptTokens+resp.Usage.CompletionTokens {
		t.Errorf("usage = %+v", resp.Usage)
	}

	// The second turn: the assistant's tool calls and their results go back.
	resp, err = client.Chat.Completions.New(context.Background(), openai.ChatCompletionNewParams{
		Model: toolScript,
		Messages: []openai.ChatCompletionMessageParamUnion{
			openai.UserMessage("list my files"),
			ch.Message.ToParam(),
			openai.ToolMessage("a.txt", ch.Message.ToolCalls[0].ID),
			openai.ToolMessage("hello", ch.Message.ToolCalls[1].ID),
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	if resp.Choices[0].Message.Content != "All done." || resp.Choices[0].FinishReason != "stop" {
		t.Fatalf("second turn = %+v", resp.Choices[0])
	}
}

func TestOpenAIEndpointStreaming(t *testing.T) {
	t.Parallel()
	client := sdkClient(t, service(t, config(), nil), "")
	st := client.Chat.Completions.NewStreaming(context.Background(), openai.ChatCompletionNewParams{
		Model:         toolScript,
		Messages:      []openai.ChatCompletionMessageParamUnion{openai.UserMessage("list my files")},
		Tools:         []openai.ChatCompletionToolUnionParam{lsTool},
		StreamOptions: openai.ChatCompletionStreamOptionsParam{IncludeUsage: openai.Bool(true)},
	})
	var acc openai.ChatCompletionAccumulator
	chunks := 0
	for st.Next() {
		acc.AddChunk(st.Current())
		chunks++
	}
	if err := st.Err(); err != nil {
		t.Fatal(err)
	}
	if chunks < 5 {
		t.Errorf("%d chunks, want token by token", chunks)
	}
	msg := acc.Choices[0].Message
	if msg.Content != "Listing." || len(msg.ToolCalls) != 2 || msg.ToolCalls[1].Function.Arguments != `{"path":"/workspace/a.txt"}` || acc.Choices[0].FinishReason != "tool_calls" {
		t.Fatalf("accumulated = %+v", acc.Choices[0])
	}
	if acc.Usage.TotalTokens == 0 {
		t.Errorf("usage = %+v", acc.Usage)
	}
}

func TestOpenAIEndpointProxiesAProvider(t *testing.T) {
	t.Parallel()
	f := fakellm.New(fakellm.SSE(fakellm.Fixture("anthropic/tool_use_response.txt")))
	client := sdkClient(t, service(t, config(anthropicModel("claude", fake(t, f))), keys), "")
	st := client.Chat.Completions.NewStreaming(context.Background(), openai.ChatCompletionNewParams{
		Model:    "claude",
		Messages: []openai.ChatCompletionMessageParamUnion{openai.SystemMessage("be brief"), openai.UserMessage("weather?")},
	})
	var acc openai.ChatCompletionAccumulator
	for st.Next() {
		acc.AddChunk(st.Current())
	}
	if err := st.Err(); err != nil {
		t.Fatal(err)
	}
	if tc := acc.Choices[0].Message.ToolCalls; len(tc) != 1 || tc[0].Function.Arguments != `{"location": "Paris"}` || tc[0].ID != "toolu_01NRLabsLyVHZPKxbKvkfSMn" {
		t.Fatalf("tool calls = %+v", tc)
	}
	if !strings.Contains(string(f.Requests()[0].Body), `"system":[{"text":"be brief"`) {
		t.Errorf("system prompt did not become Anthropic's top-level system: %s", f.Requests()[0].Body)
	}
}

func TestOpenAIEndpointModelsAndErrors(t *testing.T) {
	t.Parallel()
	svc := service(t, config(llmgw.ModelConfig{ID: "gpt", Spec: "gpt-4o"}), map[string]string{})
	client := sdkClient(t, svc, "")
	page, err := client.Models.List(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, m := range page.Data {
		ids = append(ids, m.ID)
	}
	if strings.Join(ids, ",") != "gpt,demo" {
		t.Errorf("models = %v", ids)
	}
	_, err = client.Chat.Completions.New(context.Background(), openai.ChatCompletionNewParams{
		Model: "gpt", Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("hi")},
	})
	var apiErr *openai.Error
	if !errors.As(err, &apiErr) || apiErr.StatusCode != http.StatusBadRequest || !strings.Contains(apiErr.Message, "OPENAI_API_KEY") {
		t.Fatalf("err = %v, want 400 naming the missing key", err)
	}
	_, err = client.Chat.Completions.New(context.Background(), openai.ChatCompletionNewParams{Model: "gpt"})
	if !errors.As(err, &apiErr) || apiErr.StatusCode != http.StatusBadRequest {
		t.Fatalf("err = %v, want 400 for no messages", err)
	}
}

func TestOpenAIEndpointToken(t *testing.T) {
	t.Parallel()
	svc := service(t, config(), nil)
	srv := httptest.NewServer(svc.HTTPHandlerWithToken("s3cret"))
	t.Cleanup(srv.Close)
	bad := openai.NewClient(option.WithBaseURL(srv.URL+"/v1"), option.WithAPIKey("wrong"), option.WithMaxRetries(0))
	_, err := bad.Models.List(context.Background())
	var apiErr *openai.Error
	if !errors.As(err, &apiErr) || apiErr.StatusCode != http.StatusUnauthorized {
		t.Fatalf("err = %v, want 401", err)
	}
	good := openai.NewClient(option.WithBaseURL(srv.URL+"/v1"), option.WithAPIKey("s3cret"), option.WithMaxRetries(0))
	if _, err := good.Models.List(context.Background()); err != nil {
		t.Fatal(err)
	}
}

func TestOpenAIEndpointErrorMidStream(t *testing.T) {
	t.Parallel()
	cut := fakellm.Cut([]byte(`data: {"id":"c","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,"delta":{"content":"Hel"},"finish_reason":null}]}` + "\n\n"))
	f := fakellm.New(cut)
	client := sdkClient(t, service(t, config(openaiModel("m", fake(t, f))), keys), "")
	st := client.Chat.Completions.NewStreaming(context.Background(), openai.ChatCompletionNewParams{
		Model: "m", Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("hi")},
	})
	text := ""
	for st.Next() {
		for _, c := range st.Current().Choices {
			text += c.Delta.Content
		}
	}
	if text != "Hel" || st.Err() == nil || !strings.Contains(st.Err().Error(), "connection") {
		t.Fatalf("text %q err %v", text, st.Err())
	}
}

// TestOpenAIEndpointMountedWithoutPrefix mounts the handler the way a
// gateway that strips /v1 would.
func TestOpenAIEndpointMountedWithoutPrefix(t *testing.T) {
	t.Parallel()
	mux := http.NewServeMux()
	mux.Handle("/llm/", http.StripPrefix("/llm", service(t, config(), nil).HTTPHandler()))
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	client := openai.NewClient(option.WithBaseURL(srv.URL+"/llm"), option.WithMaxRetries(0))
	resp, err := client.Chat.Completions.New(context.Background(), openai.ChatCompletionNewParams{
		Model: `script:[{"text":"mounted"}]`, Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("hi")},
	})
	if err != nil || resp.Choices[0].Message.Content != "mounted" {
		t.Fatalf("resp %+v err %v", resp, err)
	}
}

// TestHTTPTokenRequiredBeyondLoopback: the HTTP API spends the gateway's keys,
// so without a token it may listen on loopback only.
func TestHTTPTokenRequiredBeyondLoopback(t *testing.T) {
	t.Parallel()
	tests := []struct {
		addr     string
		loopback bool
	}{
		{addr: ":8003"},
		{addr: "0.0.0.0:8003"},
		{addr: "[::]:8003"},
		{addr: "10.1.2.3:8003"},
		{addr: "llmgw.example:8003"},
		{addr: "127.0.0.1:8003", loopback: true},
		{addr: "127.4.5.6:8003", loopback: true},
		{addr: "[::1]:8003", loopback: true},
		{addr: "localhost:8003", loopback: true},
	}
	for _, tt := range tests {
		t.Run(tt.addr, func(t *testing.T) {
			t.Parallel()
			err := llmgw.CheckHTTPListen(tt.addr, "")
			if tt.loopback && err != nil {
				t.Errorf("no token on loopback: %v, want nil", err)
			}
			if !tt.loopback && (!errors.Is(err, llmgw.ErrHTTPTokenRequired) || !strings.Contains(err.Error(), "-http-token")) {
				t.Errorf("no token on %s: %v, want %v", tt.addr, err, llmgw.ErrHTTPTokenRequired)
			}
			if err := llmgw.CheckHTTPListen(tt.addr, "s3cret"); err != nil {
				t.Errorf("with a token: %v, want nil", err)
			}
		})
	}
}
