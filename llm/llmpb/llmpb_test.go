package llmpb_test

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"

	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/structpb"

	llmv1 "github.com/wick-agent/wick/gen/wick/llm/v1"
	"github.com/wick-agent/wick/llm"
	"github.com/wick-agent/wick/llm/llmpb"
)

func TestMessagesRoundTrip(t *testing.T) {
	t.Parallel()
	msgs := []llm.Message{
		{Role: llm.RoleSystem, Content: "sys"},
		{Role: llm.RoleUser, Content: "list"},
		{Role: llm.RoleAssistant, ToolCalls: []llm.ToolCall{
			{ID: "c1", Name: "ls", Args: map[string]any{"path": "/", "depth": 2.0}},
			{ID: "c2", Name: "grep", Args: map[string]any{}},
		}},
		{Role: llm.RoleTool, Content: "[]", ToolCallID: "c1", Name: "ls"},
	}
	pb, err := llmpb.MessagesToProto(msgs)
	if err != nil {
		t.Fatal(err)
	}
	if got := llmpb.MessagesFromProto(pb); !reflect.DeepEqual(got, msgs) {
		t.Fatalf("round trip = %+v, want %+v", got, msgs)
	}
}

func TestToolCallArguments(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		call    llm.ToolCall
		wantErr string // arguments_error on the wire
		wantArg map[string]any
	}{
		{name: "parsed", call: llm.ToolCall{ID: "1", Name: "ls", Args: map[string]any{"path": "/"}}, wantArg: map[string]any{"path": "/"}},
		{name: "no arguments", call: llm.ToolCall{ID: "1", Name: "ls"}, wantArg: map[string]any{}},
		{name: "did not parse", call: llm.ToolCall{ID: "1", Name: "ls", RawArgs: "{", ArgsErr: "not JSON"}, wantErr: "not JSON", wantArg: map[string]any{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			pb, err := llmpb.ToolCallToProto(tt.call)
			if err != nil {
				t.Fatal(err)
			}
			if pb.GetArgumentsError() != tt.wantErr {
				t.Fatalf("arguments_error = %q, want %q", pb.GetArgumentsError(), tt.wantErr)
			}
			back := llmpb.ToolCallsFromProto([]*llmv1.ToolCall{pb})[0]
			if !reflect.DeepEqual(back.Args, tt.wantArg) || back.ArgsErr != tt.wantErr || back.ID != "1" || back.Name != "ls" {
				t.Fatalf("back = %+v", back)
			}
		})
	}
}

func TestUnrepresentableArguments(t *testing.T) {
	t.Parallel()
	if _, err := llmpb.ToolCallToProto(llm.ToolCall{ID: "1", Name: "f", Args: map[string]any{"ch": make(chan int)}}); err == nil {
		t.Fatal("a channel argument converted")
	}
	if _, err := llmpb.MessagesToProto([]llm.Message{{Role: llm.RoleAssistant, ToolCalls: []llm.ToolCall{{ID: "1", Name: "f", Args: map[string]any{"ch": make(chan int)}}}}}); err == nil {
		t.Fatal("a message with a channel argument converted")
	}
}

// TestStructLikeJSON: Struct gives what a JSON round trip gives, for the
// values Go code puts in schemas and arguments.
func TestStructLikeJSON(t *testing.T) {
	t.Parallel()
	type point struct {
		X int `json:"x"`
	}
	m := map[string]any{
		"s": "text", "bad": "a\xffb", "n": 3, "f": 1.5, "i64": int64(-2), "u8": uint8(7), "b": true, "null": nil,
		"strs": []string{"a", "b"}, "nostrs": []string(nil), "list": []any{1, "x", []string{"y"}, map[string]any{"k": nil}},
		"obj": map[string]any{"deep": map[string]any{"enum": []string{"p", "q"}}}, "nomap": map[string]any(nil),
		"maps": []map[string]any{{"a": 1}}, "struct": point{X: 4}, "bytes": []byte("hi"),
	}
	got, err := llmpb.Struct(m)
	if err != nil {
		t.Fatal(err)
	}
	raw, err := json.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	want := &structpb.Struct{}
	if err := protojson.Unmarshal(raw, want); err != nil {
		t.Fatal(err)
	}
	if !proto.Equal(got, want) {
		t.Fatalf("Struct =\n%v\nJSON round trip =\n%v", got, want)
	}
	if _, err := llmpb.Struct(map[string]any{"a": []any{map[string]any{"ch": make(chan int)}}}); err == nil || !strings.Contains(err.Error(), "a: [0]: ch") {
		t.Fatalf("a channel deep inside: err = %v, want one naming a: [0]: ch", err)
	}
}

func TestToolSchemasAndUsage(t *testing.T) {
	t.Parallel()
	// A schema as Go code writes it, with []string, which structpb.NewStruct alone refuses.
	pb, err := llmpb.ToolSchemasToProto([]llm.ToolSchema{{Name: "ls", Description: "list", Parameters: map[string]any{"type": "object", "required": []string{"path"}}}})
	if err != nil {
		t.Fatal(err)
	}
	got := llmpb.ToolSchemasFromProto(pb)
	want := []llm.ToolSchema{{Name: "ls", Description: "list", Parameters: map[string]any{"type": "object", "required": []any{"path"}}}}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("schemas = %+v, want %+v", got, want)
	}
	u := llm.Usage{InputTokens: 7, OutputTokens: 3, CostMicroUSD: 11}
	if back := llmpb.UsageFromProto(llmpb.UsageToProto(u)); back != u {
		t.Fatalf("usage = %+v", back)
	}
	if z := llmpb.UsageFromProto(nil); z != (llm.Usage{}) {
		t.Fatalf("absent usage = %+v", z)
	}
}

// BenchmarkMessagesToProto is the agent client's per-turn cost of putting a
// 100-message history on the wire (a third of it tool calls).
func BenchmarkMessagesToProto(b *testing.B) {
	msgs := make([]llm.Message, 0, 100)
	for i := range 33 {
		msgs = append(msgs,
			llm.Message{Role: llm.RoleUser, Content: "please look at the files"},
			llm.Message{Role: llm.RoleAssistant, ToolCalls: []llm.ToolCall{{ID: "c", Name: "read_file", Args: map[string]any{"path": "/workspace/main.go", "offset": float64(i)}}}},
			llm.Message{Role: llm.RoleTool, Content: "package main\n", ToolCallID: "c", Name: "read_file"},
		)
	}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := llmpb.MessagesToProto(msgs); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkToolSchemasToProto is the agent client's per-call cost of
// sending ten tool schemas written in Go (typed slices inside).
func BenchmarkToolSchemasToProto(b *testing.B) {
	params := map[string]any{
		"type": "object",
		"properties": map[string]any{
			"path":   map[string]any{"type": "string", "description": "File to read, under /workspace"},
			"offset": map[string]any{"type": "integer", "minimum": 0, "description": "First line"},
			"limit":  map[string]any{"type": "integer", "minimum": 1, "maximum": 2000},
			"ranges": map[string]any{
				"type": "array",
				"items": map[string]any{
					"type":       "object",
					"properties": map[string]any{"from": map[string]any{"type": "integer"}, "to": map[string]any{"type": "integer"}},
					"required":   []string{"from"},
				},
			},
			"mode": map[string]any{"type": "string", "enum": []string{"text", "lines", "bytes"}},
		},
		"required": []string{"path"},
	}
	tools := make([]llm.ToolSchema, 10)
	for i := range tools {
		tools[i] = llm.ToolSchema{Name: "tool", Description: "a tool", Parameters: params}
	}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := llmpb.ToolSchemasToProto(tools); err != nil {
			b.Fatal(err)
		}
	}
}
