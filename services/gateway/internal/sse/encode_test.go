package sse

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"

	"github.com/grpc-ecosystem/grpc-gateway/v2/runtime"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/types/known/structpb"

	agentv1 "github.com/wick-agent/wick/gen/wick/agent/v1"
)

// TestFastEncodingMatchesProtojson: the events encoded without protojson
// decode to what protojson gives (its output has random spaces, so JSON
// values are compared), and the others are left to protojson.
func TestFastEncodingMatchesProtojson(t *testing.T) {
	str := func(s string) *structpb.Value { return structpb.NewStringValue(s) }
	obj := func(m map[string]any) *structpb.Value {
		v, err := structpb.NewValue(m)
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
	for _, tc := range []struct {
		name string
		ev   *agentv1.StreamEvent
		fast bool
	}{
		{"text delta", &agentv1.StreamEvent{Event: "on_chat_model_stream", RunId: "run_1", ThreadId: "th_1", Id: "12-0", Data: obj(map[string]any{"delta": "Hello "})}, true},
		{"no data, no ids", &agentv1.StreamEvent{Event: "done"}, true},
		{"every field", &agentv1.StreamEvent{Event: "on_tool_end", Name: "ls", RunId: "r", ThreadId: "t", Id: "1-0", Data: obj(map[string]any{"output": "a", "error": "", "tool_call_id": "c"})}, true},
		{"string data", &agentv1.StreamEvent{Event: "x", Data: str("plain")}, true},
		{"escapes", &agentv1.StreamEvent{Event: "on_chat_model_stream", Data: obj(map[string]any{"delta": "q\" b\\ \n\r\t\b\f \x01\x1f <&> é 😀 \u2028"})}, true},
		{"keys sorted and escaped", &agentv1.StreamEvent{Event: "e", Data: obj(map[string]any{"z": "1", "a\"k": "2", "m": "3"})}, true},
		{"number data: protojson", &agentv1.StreamEvent{Event: "on_usage", Data: obj(map[string]any{"input_tokens": 3.0})}, false},
		{"nested data: protojson", &agentv1.StreamEvent{Event: "on_tool_start", Data: obj(map[string]any{"args": map[string]any{"a": "b"}})}, false},
		{"null data: protojson", &agentv1.StreamEvent{Event: "e", Data: structpb.NewNullValue()}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b, fast := appendEvent(nil, tc.ev)
			if fast != tc.fast {
				t.Fatalf("fast = %v, want %v", fast, tc.fast)
			}
			want, err := protojson.MarshalOptions{UseProtoNames: true}.Marshal(tc.ev)
			if err != nil {
				t.Fatal(err)
			}
			m := &Marshaler{JSON: &runtime.JSONPb{MarshalOptions: protojson.MarshalOptions{UseProtoNames: true}}}
			frame, err := m.frame(tc.ev)
			if err != nil {
				t.Fatal(err)
			}
			data := string(frame[strings.Index(string(frame), "data: ")+len("data: ") : len(frame)-1])
			if strings.Contains(data, "\n") {
				t.Fatalf("data line %q holds a line break", data)
			}
			var got, exp any
			if err := json.Unmarshal([]byte(data), &got); err != nil {
				t.Fatalf("%s: %v", data, err)
			}
			if err := json.Unmarshal(want, &exp); err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, exp) {
				t.Fatalf("encoded %s, protojson %s", data, want)
			}
			if fast && string(b) != data {
				t.Fatalf("frame data %s, appendEvent %s", data, b)
			}
		})
	}
	t.Run("invalid UTF-8 is protojson's to refuse", func(t *testing.T) {
		if _, fast := appendEvent(nil, &agentv1.StreamEvent{Event: "e", Data: str("\xff")}); fast {
			t.Fatal("encoded invalid UTF-8")
		}
	})
}
