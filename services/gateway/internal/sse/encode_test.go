package sse

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"

	"github.com/grpc-ecosystem/grpc-gateway/v2/runtime"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/structpb"

	agentv1 "github.com/wick-agent/wick/gen/wick/agent/v1"
)

// TestEventEncoding: a typed event's SSE data line and JSON line are the
// bytes earlier versions sent for the same event, when its data was a
// google.protobuf.Struct encoded by protojson (keys sorted); protojson's
// own output has random spaces, so its JSON value is compared, and the
// bytes are compared with the compact form the fast path always wrote.
func TestEventEncoding(t *testing.T) {
	m := &Marshaler{JSON: EventJSON{JSONPb: &runtime.JSONPb{MarshalOptions: protojson.MarshalOptions{UseProtoNames: true}}}}
	for _, tc := range []struct {
		name string
		ev   *agentv1.StreamEvent
		old  map[string]any // the data earlier versions sent; nil for none
		want string         // the exact data line
	}{
		{"text delta",
			&agentv1.StreamEvent{Event: "on_chat_model_stream", RunId: "run_1", ThreadId: "th_1", Id: "12-0",
				Payload: &agentv1.RunEventData{Kind: &agentv1.RunEventData_OnChatModelStream{OnChatModelStream: &agentv1.DeltaData{Delta: "Hello "}}}},
			map[string]any{"delta": "Hello "},
			`{"event":"on_chat_model_stream","run_id":"run_1","data":{"delta":"Hello "},"thread_id":"th_1","id":"12-0"}`},
		{"no data, no ids", &agentv1.StreamEvent{Event: "done"}, nil, `{"event":"done"}`},
		{"every field",
			&agentv1.StreamEvent{Event: "on_tool_end", Name: "ls", RunId: "r", ThreadId: "t", Id: "1-0",
				Payload: &agentv1.RunEventData{Kind: &agentv1.RunEventData_OnToolEnd{OnToolEnd: &agentv1.ToolEndData{Output: proto.String("a"), Error: proto.String(""), ToolCallId: "c"}}}},
			map[string]any{"output": "a", "error": "", "tool_call_id": "c"},
			`{"event":"on_tool_end","name":"ls","run_id":"r","data":{"error":"","output":"a","tool_call_id":"c"},"thread_id":"t","id":"1-0"}`},
		{"escapes",
			&agentv1.StreamEvent{Event: "on_chat_model_stream",
				Payload: &agentv1.RunEventData{Kind: &agentv1.RunEventData_OnChatModelStream{OnChatModelStream: &agentv1.DeltaData{Delta: "q\" b\\ \n\r\t\b\f \x01\x1f <&> é 😀 \u2028"}}}},
			map[string]any{"delta": "q\" b\\ \n\r\t\b\f \x01\x1f <&> é 😀 \u2028"},
			`{"event":"on_chat_model_stream","data":{"delta":"q\" b\\ \n\r\t\b\f \u0001\u001f <&> é 😀 ` + "\u2028" + `"}}`},
		{"numbers",
			&agentv1.StreamEvent{Event: "on_usage",
				Payload: &agentv1.RunEventData{Kind: &agentv1.RunEventData_OnUsage{OnUsage: &agentv1.UsageData{InputTokens: proto.Int32(3), OutputTokens: proto.Int32(0)}}}},
			map[string]any{"input_tokens": 3.0, "output_tokens": 0.0},
			`{"event":"on_usage","data":{"input_tokens":3,"output_tokens":0}}`},
		{"nested data",
			&agentv1.StreamEvent{Event: "on_tool_start",
				Payload: &agentv1.RunEventData{Kind: &agentv1.RunEventData_OnToolStart{OnToolStart: &agentv1.ToolStartData{
					Args: &structpb.Struct{Fields: map[string]*structpb.Value{"b": structpb.NewStringValue("x"), "a": structpb.NewNumberValue(1)}}, ToolCallId: "c"}}}},
			map[string]any{"args": map[string]any{"a": 1.0, "b": "x"}, "tool_call_id": "c"},
			`{"event":"on_tool_start","data":{"args":{"a":1,"b":"x"},"tool_call_id":"c"}}`},
		{"an empty required list is written",
			&agentv1.StreamEvent{Event: "on_todos", Name: "write_todos",
				Payload: &agentv1.RunEventData{Kind: &agentv1.RunEventData_OnTodos{OnTodos: &agentv1.TodosData{}}}},
			map[string]any{"todos": []any{}},
			`{"event":"on_todos","name":"write_todos","data":{"todos":[]}}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			frame, err := m.frame(tc.ev)
			if err != nil {
				t.Fatal(err)
			}
			data := string(frame[strings.Index(string(frame), "data: ")+len("data: ") : len(frame)-1])
			if data != tc.want {
				t.Fatalf("frame data\n%s\nwant\n%s", data, tc.want)
			}
			// What earlier versions sent: the data as a Struct, by protojson.
			old := proto.Clone(tc.ev).(*agentv1.StreamEvent)
			old.Payload = nil
			if tc.old != nil {
				v, err := structpb.NewValue(tc.old)
				if err != nil {
					t.Fatal(err)
				}
				old.Data = v
			}
			want, err := protojson.MarshalOptions{UseProtoNames: true}.Marshal(old)
			if err != nil {
				t.Fatal(err)
			}
			var got, exp any
			if err := json.Unmarshal([]byte(data), &got); err != nil {
				t.Fatalf("%s: %v", data, err)
			}
			if err := json.Unmarshal(want, &exp); err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, exp) {
				t.Fatalf("encoded %s, earlier versions %s", data, want)
			}
			line, err := m.JSON.Marshal(map[string]any{"result": tc.ev})
			if err != nil {
				t.Fatal(err)
			}
			if string(line) != `{"result":`+tc.want+`}` {
				t.Fatalf("JSON line %s", line)
			}
		})
	}
	t.Run("invalid UTF-8 is refused", func(t *testing.T) {
		ev := &agentv1.StreamEvent{Event: "on_chat_model_stream",
			Payload: &agentv1.RunEventData{Kind: &agentv1.RunEventData_OnChatModelStream{OnChatModelStream: &agentv1.DeltaData{Delta: "\xff"}}}}
		if _, err := m.frame(ev); err == nil {
			t.Fatal("encoded invalid UTF-8")
		}
	})
}
