package runevent_test

import (
	"encoding/json"
	"errors"
	"math"
	"reflect"
	"slices"
	"testing"

	"google.golang.org/protobuf/proto"

	agentv1 "github.com/wick-agent/wick/gen/wick/agent/v1"
	"github.com/wick-agent/wick/platform/runevent"
)

// TestEarlierLogsRoundTrip reads events as earlier versions logged them
// (data from maps, keys sorted, numbers as JSON numbers) and writes them
// again: the JSON is the same, so replicas of both versions read each
// other's run logs during a rolling upgrade.
func TestEarlierLogsRoundTrip(t *testing.T) {
	t.Parallel()
	for _, line := range []string{
		`{"event":"on_run_start","name":"a1","run_id":"r","data":{"agent_id":"a1","run_id":"r","thread_id":"th"},"thread_id":"th","id":"1-0"}`,
		`{"event":"on_chat_model_stream","run_id":"r","data":{"delta":"Hel\"lo <b>"},"thread_id":"th","id":"2-0"}`,
		`{"event":"on_thought_stream","data":{"delta":"hmm"}}`,
		`{"event":"on_tool_start","name":"ls","data":{"args":{"n":2,"path":"/w","deep":{"x":[1,"a",null,true]}},"tool_call_id":"c1"}}`,
		`{"event":"on_tool_end","name":"ls","data":{"error":"","output":"a\nb","tool_call_id":"c1"}}`,
		`{"event":"on_todos","name":"write_todos","data":{"todos":[]}}`,
		`{"event":"on_todos","name":"write_todos","data":{"todos":[{"id":"1","status":"pending","title":"t"}]}}`,
		`{"event":"on_interrupt","data":{"always":true,"tool_calls":[{"args":{"cmd":"rm"},"id":"c","name":"execute"}]}}`,
		`{"event":"on_interrupt","data":{"choices":["a","b"],"kind":"question","question":"q?","tool_call_id":"c","tool_calls":[{"args":{"question":"q?"},"id":"c","name":"ask_user"}]}}`,
		`{"event":"on_knowledge_retrieval","name":"knowledge","data":{"query":"q","sources":[{"chunk_id":"c/d#0","collection":"c","document":"d","heading":"","n":1,"score":0.83,"source":"text","text":"x","title":"T"}]}}`,
		`{"event":"on_knowledge_retrieval","name":"knowledge","data":{"error":"down","query":"q","sources":[]}}`,
		`{"event":"on_usage","data":{"input_tokens":7,"output_tokens":0}}`,
		`{"event":"on_subagent_start","name":"gp","data":{"depth":1,"description":"do it","name":"gp","parent_run_id":"r","run_id":"r2","thread_id":"th_sub_1","tool_call_id":"c"}}`,
		`{"event":"on_subagent_event","name":"gp","data":{"depth":1,"event":{"data":{"error":"","output":"x","tool_call_id":"c9"},"event":"on_tool_end","name":"ls"},"name":"gp","parent_run_id":"r","run_id":"r2","thread_id":"th_sub_1","tool_call_id":"c"}}`,
		`{"event":"on_subagent_end","name":"gp","data":{"depth":1,"error":"timed out","name":"gp","parent_run_id":"r","run_id":"r2","status":"timeout","thread_id":"th_sub_1","tool_call_id":"c"}}`,
		`{"event":"on_task_update","name":"slow","data":{"attempts":1,"kind":"native","result":"50%","run_id":"r","status":"running","task_id":"t1","thread_id":"th","tool":"slow","tool_call_id":"c"}}`,
		`{"event":"on_task_end","name":"task","data":{"attempts":2,"kind":"subagent","run_id":"r","status":"done","subagent":{"depth":1,"name":"gp","run_id":"r3","thread_id":"th_sub_2"},"task_id":"t2","thread_id":"th","tool":"task","tool_call_id":"c"}}`,
		`{"event":"done","data":{"stop_reason":"completed"},"thread_id":"th"}`,
		`{"event":"done","thread_id":"th"}`,
		`{"event":"error","data":{"code":"cancelled","message":"run cancelled","stop_reason":"cancelled"},"thread_id":"th"}`,
	} {
		t.Run(line[10:30], func(t *testing.T) {
			t.Parallel()
			ev, err := runevent.UnmarshalEvent([]byte(line))
			if err != nil {
				t.Fatal(err)
			}
			if runevent.Kind(ev.GetPayload()) != ev.GetEvent() {
				t.Fatalf("kind %q, event %q", runevent.Kind(ev.GetPayload()), ev.GetEvent())
			}
			out, err := runevent.AppendEvent(nil, ev)
			if err != nil {
				t.Fatal(err)
			}
			var got, want any
			if err := json.Unmarshal(out, &got); err != nil {
				t.Fatal(err)
			}
			if err := json.Unmarshal([]byte(line), &want); err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, want) {
				t.Fatalf("read %s\nwrote %s", line, out)
			}
		})
	}
}

func TestKindsAndErrors(t *testing.T) {
	t.Parallel()
	kinds := runevent.Kinds()
	for _, k := range []string{"on_run_start", "on_chat_model_stream", "on_thought_stream", "on_tool_start", "on_tool_end", "on_todos",
		"on_interrupt", "on_knowledge_retrieval", "on_usage", "on_subagent_start", "on_subagent_event", "on_subagent_end",
		"on_task_start", "on_task_update", "on_task_end", "done", "error"} {
		if !slices.Contains(kinds, k) {
			t.Errorf("kind %s is missing from %v", k, kinds)
		}
	}
	if _, err := runevent.UnmarshalEvent([]byte(`{"event":"on_nothing","data":{}}`)); !errors.Is(err, runevent.ErrUnknownKind) {
		t.Errorf("an unknown kind: %v", err)
	}
	if runevent.Kind(nil) != "" {
		t.Error("nil data has a kind")
	}
}

// TestBadData: what cannot be written as the JSON clients read, or read
// back, is a named error, never a panic or silently wrong JSON.
func TestBadData(t *testing.T) {
	t.Parallel()
	nan := math.NaN()
	for name, d := range map[string]*agentv1.RunEventData{
		"a token that is not UTF-8": {Kind: &agentv1.RunEventData_OnChatModelStream{OnChatModelStream: &agentv1.DeltaData{Delta: "a\xffb"}}},
		"a score that is NaN": {Kind: &agentv1.RunEventData_OnKnowledgeRetrieval{OnKnowledgeRetrieval: &agentv1.KnowledgeRetrievalData{
			Query: "q", Sources: []*agentv1.KnowledgeSource{{N: 1, ChunkId: "c/d#0", Score: nan}}}}},
		"a stop reason that is not UTF-8": {Kind: &agentv1.RunEventData_Done{Done: &agentv1.DoneData{StopReason: proto.String("\xc3")}}},
	} {
		if b, err := runevent.MarshalData(d); err == nil {
			t.Errorf("%s: written as %s", name, b)
		}
		if b, err := runevent.AppendEvent(nil, &agentv1.StreamEvent{Event: runevent.Kind(d), Payload: d}); err == nil {
			t.Errorf("%s: event written as %s", name, b)
		}
	}
	if _, err := runevent.New("on_tool_end", &agentv1.DeltaData{}); err == nil {
		t.Error("New put a DeltaData under on_tool_end")
	}
	for _, line := range []string{`not json`, `{"event":"done","data":{"stop_reason":7}}`, `{"event":"on_usage","data":[1]}`} {
		if ev, err := runevent.UnmarshalEvent([]byte(line)); err == nil {
			t.Errorf("%s: read as %v", line, ev)
		}
	}
}
