package sse

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"

	"github.com/grpc-ecosystem/grpc-gateway/v2/runtime"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"

	agentv1 "github.com/wick-agent/wick/gen/wick/agent/v1"
)

func TestMarshal(t *testing.T) {
	t.Parallel()
	m := &Marshaler{JSON: &runtime.JSONPb{MarshalOptions: protojson.MarshalOptions{UseProtoNames: true}}}
	tests := []struct {
		name string
		in   any
		want string
	}{
		{"event", map[string]any{"result": &agentv1.StreamEvent{Id: "7", Event: "done", RunId: "r"}},
			"id: 7\nevent: done\ndata: {\"event\":\"done\",\"run_id\":\"r\",\"id\":\"7\"}\n"},
		{"line breaks in fields cannot inject frames", map[string]any{"result": &agentv1.StreamEvent{Id: "1\n\ndata: x", Event: "a\rb"}},
			"id: 1data: x\nevent: ab\ndata: {\"event\":\"a\\rb\",\"id\":\"1\\n\\ndata: x\"}\n"},
		{"error", map[string]proto.Message{"error": status.New(codes.NotFound, "gone").Proto()},
			"event: error\ndata: {\"code\":5,\"status\":\"NOT_FOUND\",\"message\":\"gone\"}\n"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := m.Marshal(tc.in)
			if err != nil {
				t.Fatal(err)
			}
			// protojson varies its spacing on purpose: compare data as JSON.
			if g, w := splitFrame(t, string(got)), splitFrame(t, tc.want); !reflect.DeepEqual(g, w) {
				t.Fatalf("got %q\nwant %q", got, tc.want)
			}
		})
	}
}

func splitFrame(t *testing.T, frame string) []any {
	t.Helper()
	var out []any
	for _, line := range strings.Split(frame, "\n") {
		if d, ok := strings.CutPrefix(line, "data: "); ok {
			var v any
			if err := json.Unmarshal([]byte(d), &v); err != nil {
				t.Fatalf("data %q: %v", d, err)
			}
			out = append(out, v)
			continue
		}
		out = append(out, line)
	}
	return out
}
