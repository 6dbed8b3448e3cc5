package llmgw_test

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"testing"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/responses"

	"github.com/wick-agent/wick/services/llmgw/internal/fakellm"
)

var lsResponsesTool = responses.ToolParamOfFunction("ls", map[string]any{"type": "object", "properties": map[string]any{"path": map[string]any{"type": "string"}}}, false)

// createResponse runs one request through the SDK, streamed or not, and
// returns the finished response.
func createResponse(t *testing.T, client openai.Client, stream bool, params responses.ResponseNewParams) *responses.Response {
	t.Helper()
	ctx := context.Background()
	if !stream {
		resp, err := client.Responses.New(ctx, params)
		if err != nil {
			t.Fatal(err)
		}
		return resp
	}
	st := client.Responses.NewStreaming(ctx, params)
	var (
		final  *responses.Response
		text   strings.Builder
		events int
	)
	for st.Next() {
		ev := st.Current()
		events++
		switch ev.Type {
		case "response.output_text.delta":
			text.WriteString(ev.AsResponseOutputTextDelta().Delta)
		case "response.completed":
			r := ev.AsResponseCompleted().Response
			final = &r
		}
	}
	if err := st.Err(); err != nil {
		t.Fatal(err)
	}
	if final == nil {
		t.Fatalf("the stream of %d events ended without response.completed", events)
	}
	if text.String() != final.OutputText() {
		t.Errorf("streamed text %q, final text %q", text.String(), final.OutputText())
	}
	return final
}

// TestResponsesEndpointWithTheSDK drives /v1/responses with the official
// openai-go client, as a client that stores nothing does: a turn that calls
// two tools, then the next turn with the calls and their outputs in input.
func TestResponsesEndpointWithTheSDK(t *testing.T) {
	t.Parallel()
	for _, stream := range []bool{false, true} {
		name := "whole"
		if stream {
			name = "streamed"
		}
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			client := sdkClient(t, service(t, config(), nil), "secret-token")
			user := responses.ResponseInputItemParamOfMessage("list my files", responses.EasyInputMessageRoleUser)
			resp := createResponse(t, client, stream, responses.ResponseNewParams{
				Model:        toolScript,
				Instructions: openai.String("be brief"),
				Input:        responses.ResponseNewParamsInputUnion{OfInputItemList: responses.ResponseInputParam{user}},
				Tools:        []responses.ToolUnionParam{lsResponsesTool},
				Store:        openai.Bool(false),
			})
			if resp.Status != "completed" || resp.OutputText() != "Listing." || len(resp.Output) != 3 {
				t.Fatalf("first turn = %s", resp.RawJSON())
			}
			if resp.Usage.TotalTokens == 0 || resp.Usage.TotalTokens != resp.Usage.InputTokens+resp.Usage.OutputTokens {
				t.Errorf("usage = %+v", resp.Usage)
			}
			next := responses.ResponseInputParam{user}
			var calls []responses.ResponseFunctionToolCall
			for _, item := range resp.Output {
				switch item.Type {
				case "message":
					p := item.AsMessage().ToParam()
					next = append(next, responses.ResponseInputItemUnionParam{OfOutputMessage: &p})
				case "function_call":
					fc := item.AsFunctionCall()
					calls = append(calls, fc)
					p := fc.ToParam()
					next = append(next, responses.ResponseInputItemUnionParam{OfFunctionCall: &p})
				default:
					t.Fatalf("output item %s", item.RawJSON())
				}
			}
			if len(calls) != 2 || calls[0].Name != "ls" || calls[0].Arguments != `{"path":"/workspace"}` || calls[1].Name != "read_file" || calls[0].CallID == "" {
				t.Fatalf("calls = %+v", calls)
			}
			for i, out := range []string{"a.txt", "hello"} {
				o := responses.ResponseInputItemParamOfFunctionCallOutput(out)
				o.OfFunctionCallOutput.CallID = openai.String(calls[i].CallID)
				next = append(next, o)
			}
			resp = createResponse(t, client, stream, responses.ResponseNewParams{
				Model: toolScript,
				Input: responses.ResponseNewParamsInputUnion{OfInputItemList: next},
				Tools: []responses.ToolUnionParam{lsResponsesTool},
			})
			if resp.Status != "completed" || resp.OutputText() != "All done." || len(resp.Output) != 1 {
				t.Fatalf("second turn = %s", resp.RawJSON())
			}
		})
	}
}

// TestResponsesEndpointErrors checks that the SDK sees the gateway's refusals
// as OpenAI's errors, with their status and code.
func TestResponsesEndpointErrors(t *testing.T) {
	t.Parallel()
	client := sdkClient(t, service(t, config(), nil), "")
	for _, tc := range []struct {
		name   string
		params responses.ResponseNewParams
		status int
		code   string
		param  string
	}{
		{"an unknown model", responses.ResponseNewParams{Model: "no-such-model", Input: responses.ResponseNewParamsInputUnion{OfString: openai.String("hi")}}, http.StatusNotFound, "model_not_found", "model"},
		{"a stored response", responses.ResponseNewParams{Model: "script:demo", PreviousResponseID: openai.String("resp_1"), Input: responses.ResponseNewParamsInputUnion{OfString: openai.String("hi")}}, http.StatusBadRequest, "", "previous_response_id"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			_, err := client.Responses.New(context.Background(), tc.params)
			var apiErr *openai.Error
			if !errors.As(err, &apiErr) {
				t.Fatalf("error = %v, want an API error", err)
			}
			if apiErr.StatusCode != tc.status || apiErr.Code != tc.code || apiErr.Param != tc.param || apiErr.Message == "" {
				t.Errorf("error = %d code %q param %q %q, want %d %q %q", apiErr.StatusCode, apiErr.Code, apiErr.Param, apiErr.Message, tc.status, tc.code, tc.param)
			}
		})
	}
}

// TestResponsesStreamFailsMidway checks that a provider failing after its
// first output ends the stream with response.failed, which the SDK reads as
// the terminal event, not as a completed response.
func TestResponsesStreamFailsMidway(t *testing.T) {
	t.Parallel()
	f := fakellm.New(fakellm.Cut([]byte(`data: {"id":"c","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,"delta":{"content":"Hel"},"finish_reason":null}]}` + "\n\n")))
	client := sdkClient(t, service(t, config(openaiModel("gpt", fake(t, f))), keys), "")
	st := client.Responses.NewStreaming(context.Background(), responses.ResponseNewParams{
		Model: "gpt",
		Input: responses.ResponseNewParamsInputUnion{OfString: openai.String("hi")},
	})
	var types []string
	var failed responses.Response
	for st.Next() {
		ev := st.Current()
		types = append(types, ev.Type)
		if ev.Type == "response.failed" {
			failed = ev.AsResponseFailed().Response
		}
	}
	if err := st.Err(); err != nil {
		t.Fatal(err)
	}
	if len(types) < 4 || types[len(types)-1] != "response.failed" || types[0] != "response.created" {
		t.Fatalf("events = %v", types)
	}
	if failed.Status != "failed" || failed.Error.Code != "server_error" || !strings.Contains(failed.Error.Message, "connection") {
		t.Errorf("failed response = %s", failed.RawJSON())
	}
}
