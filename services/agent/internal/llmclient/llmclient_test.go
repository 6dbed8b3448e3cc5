package llmclient

import (
	"context"
	"net"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/structpb"

	llmv1 "github.com/wick-agent/wick/gen/wick/llm/v1"
	"github.com/wick-agent/wick/llm"
)

type gateway struct {
	llmv1.UnimplementedLLMServiceServer
	got  *llmv1.StreamRequest
	call *llmv1.CallRequest
	fail bool
}

func (g *gateway) Stream(req *llmv1.StreamRequest, stream llmv1.LLMService_StreamServer) error {
	g.got = req
	if g.fail {
		return status.Error(codes.Unavailable, "provider down")
	}
	args, _ := structpb.NewStruct(map[string]any{"path": "/workspace"})
	msgs := []*llmv1.StreamResponse{
		{Model: "m", Provider: "p"},
		{Delta: "Hel"},
		{Delta: "lo", ToolCallDelta: &llmv1.ToolCallDelta{Index: 0, Id: "c1", Name: "ls", ArgumentsDelta: `{"pa`}},
		{ToolCalls: []*llmv1.ToolCall{{Id: "c1", Name: "ls", Arguments: args}}, FinishReason: "tool_calls", Usage: &llmv1.Usage{InputTokens: 7, OutputTokens: 3}},
	}
	for _, m := range msgs {
		if err := stream.Send(m); err != nil {
			return err
		}
	}
	return nil
}

func (g *gateway) Call(_ context.Context, req *llmv1.CallRequest) (*llmv1.CallResponse, error) {
	g.call = req
	return &llmv1.CallResponse{Content: "sum", FinishReason: "stop", Usage: &llmv1.Usage{InputTokens: 1, OutputTokens: 2}}, nil
}

func client(t *testing.T, g *gateway) *Client {
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := grpc.NewServer()
	llmv1.RegisterLLMServiceServer(srv, g)
	go srv.Serve(lis)
	t.Cleanup(srv.Stop)
	conn, err := grpc.NewClient(lis.Addr().String(), grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	return New(llmv1.NewLLMServiceClient(conn), []*llmv1.ModelSpec{{Spec: "script:demo"}, {Provider: "openai", Model: "gpt-4o"}}, WithTimeout(time.Minute))
}

func request() llm.Request {
	temp := 0.2
	return llm.Request{
		Messages: []llm.Message{
			{Role: "user", Content: "list"},
			{Role: "assistant", ToolCalls: []llm.ToolCall{{ID: "c0", Name: "ls", Args: map[string]any{"path": "/"}}}},
			{Role: "tool", Content: "[]", ToolCallID: "c0", Name: "ls"},
		},
		// A schema as Go code writes it, with []string: it must still convert.
		Tools:        []llm.ToolSchema{{Name: "ls", Description: "list", Parameters: map[string]any{"type": "object", "required": []string{"path"}}}},
		SystemPrompt: "sys", MaxTokens: 100, Temperature: &temp,
	}
}

func TestStream(t *testing.T) {
	t.Parallel()
	g := &gateway{}
	c := client(t, g)
	var events []llm.Event
	final, err := c.Stream(context.Background(), request(), func(ev llm.Event) error {
		events = append(events, ev)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(events) != 2 || events[0].Delta != "Hel" || events[1].Delta != "lo" || final.Content != "Hello" {
		t.Fatalf("events = %+v, content %q", events, final.Content)
	}
	if final.FinishReason != "tool_calls" || len(final.ToolCalls) != 1 || final.ToolCalls[0].Args["path"] != "/workspace" || final.Usage.InputTokens != 7 {
		t.Fatalf("final result = %+v", final)
	}
	if len(g.got.GetModels()) != 2 || g.got.GetSystemPrompt() != "sys" || g.got.GetTemperature() != 0.2 || g.got.GetTimeout().AsDuration() != time.Minute {
		t.Fatalf("request = %v", g.got)
	}
	if req := g.got.GetTools()[0].GetParameters().GetFields()["required"].GetListValue().GetValues()[0].GetStringValue(); req != "path" {
		t.Fatalf("schema required = %v", req)
	}
	if m := g.got.GetMessages()[1]; m.GetToolCalls()[0].GetArguments().GetFields()["path"].GetStringValue() != "/" {
		t.Fatalf("assistant message = %v", m)
	}
}

func TestCallAndErrors(t *testing.T) {
	t.Parallel()
	g := &gateway{}
	c := client(t, g)
	resp, err := c.Call(context.Background(), request())
	if err != nil || resp.Content != "sum" || resp.Usage.OutputTokens != 2 || len(g.call.GetModels()) != 2 {
		t.Fatalf("Call = %+v, %v", resp, err)
	}
	g.fail = true
	_, err = c.Stream(context.Background(), request(), func(llm.Event) error { return nil })
	if status.Code(err) != codes.Unavailable {
		t.Fatalf("Stream of a failing gateway = %v, want Unavailable kept", err)
	}
}
