package agui

import (
	"encoding/json"
	"strings"
	"testing"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/structpb"

	agentv1 "github.com/wick-agent/wick/gen/wick/agent/v1"
)

func ev(kind string, d *agentv1.RunEventData, name string) *agentv1.StreamEvent {
	return &agentv1.StreamEvent{Event: kind, Name: name, RunId: "run_1", ThreadId: "t1", Payload: d}
}

func start() *agentv1.StreamEvent {
	return ev("on_run_start", &agentv1.RunEventData{Kind: &agentv1.RunEventData_OnRunStart{OnRunStart: &agentv1.RunStartData{RunId: "run_1"}}}, "a")
}

func text(s string) *agentv1.StreamEvent {
	return ev("on_chat_model_stream", &agentv1.RunEventData{Kind: &agentv1.RunEventData_OnChatModelStream{OnChatModelStream: &agentv1.DeltaData{Delta: s}}}, "")
}

func toolStartEv(id, name string) *agentv1.StreamEvent {
	args, _ := structpb.NewStruct(map[string]any{"x": 1})
	return ev("on_tool_start", &agentv1.RunEventData{Kind: &agentv1.RunEventData_OnToolStart{OnToolStart: &agentv1.ToolStartData{ToolCallId: id, Args: args}}}, name)
}

func toolEndEv(id, out, errText string) *agentv1.StreamEvent {
	return ev("on_tool_end", &agentv1.RunEventData{Kind: &agentv1.RunEventData_OnToolEnd{OnToolEnd: &agentv1.ToolEndData{ToolCallId: id, Output: proto.String(out), Error: proto.String(errText)}}}, "")
}

func todosEv(titles ...string) *agentv1.StreamEvent {
	var ts []*agentv1.Todo
	for i, t := range titles {
		title, st, _ := strings.Cut(t, ":")
		ts = append(ts, &agentv1.Todo{Id: string(rune('1' + i)), Title: title, Status: st})
	}
	return ev("on_todos", &agentv1.RunEventData{Kind: &agentv1.RunEventData_OnTodos{OnTodos: &agentv1.TodosData{Todos: ts}}}, "write_todos")
}

func done() *agentv1.StreamEvent {
	return ev("done", &agentv1.RunEventData{Kind: &agentv1.RunEventData_Done{Done: &agentv1.DoneData{}}}, "")
}

func errEv(code string) *agentv1.StreamEvent {
	return ev("error", &agentv1.RunEventData{Kind: &agentv1.RunEventData_Error{Error: &agentv1.ErrorData{Message: "boom", Code: code}}}, "")
}

// translate runs the events through a translator and returns the AG-UI
// events as "TYPE key=value …" lines of the fields the test looks at.
func translate(t *testing.T, tr *translator, evs ...*agentv1.StreamEvent) []map[string]any {
	t.Helper()
	var out []map[string]any
	for _, e := range evs {
		b, err := tr.frames(nil, e)
		if err != nil {
			t.Fatal(err)
		}
		for frame := range strings.SplitSeq(strings.TrimSuffix(string(b), "\n\n"), "\n\n") {
			if frame == "" {
				continue
			}
			data, ok := strings.CutPrefix(frame, "data: ")
			if !ok || strings.Contains(data, "\n") {
				t.Fatalf("frame %q is not one data line", frame)
			}
			var m map[string]any
			if err := json.Unmarshal([]byte(data), &m); err != nil {
				t.Fatal(err)
			}
			out = append(out, m)
		}
	}
	return out
}

func types(evs []map[string]any) string {
	var s []string
	for _, e := range evs {
		s = append(s, e["type"].(string))
	}
	return strings.Join(s, " ")
}

func TestTranslate(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name  string
		evs   []*agentv1.StreamEvent
		types string
		check func(t *testing.T, out []map[string]any)
	}{
		{
			name:  "text",
			evs:   []*agentv1.StreamEvent{start(), text("Hel"), text(""), text("lo"), done()},
			types: "RUN_STARTED TEXT_MESSAGE_START TEXT_MESSAGE_CONTENT TEXT_MESSAGE_CONTENT TEXT_MESSAGE_END RUN_FINISHED",
			check: func(t *testing.T, out []map[string]any) {
				if out[0]["threadId"] != "client-thread" || out[0]["runId"] != "client-run" || out[0]["metadata"].(map[string]any)["wickRunId"] != "run_1" {
					t.Errorf("RUN_STARTED = %v", out[0])
				}
				if out[1]["messageId"] != out[2]["messageId"] || out[1]["role"] != "assistant" {
					t.Errorf("message ids or role differ: %v %v", out[1], out[2])
				}
				if out[5]["outcome"].(map[string]any)["type"] != "success" {
					t.Errorf("RUN_FINISHED = %v", out[5])
				}
			},
		},
		{
			name: "tool round: calls on the turn's message, results in call order",
			evs: []*agentv1.StreamEvent{start(), text("I will"), toolStartEv("c1", "ls"), toolStartEv("c2", "cat"),
				toolEndEv("c2", "two", ""), toolEndEv("c1", "", "denied"), text("Done"), done()},
			types: "RUN_STARTED TEXT_MESSAGE_START TEXT_MESSAGE_CONTENT TEXT_MESSAGE_END " +
				"TOOL_CALL_START TOOL_CALL_ARGS TOOL_CALL_END TOOL_CALL_START TOOL_CALL_ARGS TOOL_CALL_END " +
				"TOOL_CALL_RESULT TOOL_CALL_RESULT TEXT_MESSAGE_START TEXT_MESSAGE_CONTENT TEXT_MESSAGE_END RUN_FINISHED",
			check: func(t *testing.T, out []map[string]any) {
				turn := out[1]["messageId"]
				if out[4]["parentMessageId"] != turn || out[7]["parentMessageId"] != turn || out[4]["toolCallName"] != "ls" {
					t.Errorf("calls not on the turn's message %v: %v %v", turn, out[4], out[7])
				}
				if out[5]["delta"] != `{"x":1}` {
					t.Errorf("args = %v", out[5]["delta"])
				}
				if out[10]["toolCallId"] != "c1" || out[10]["content"] != "Error: denied" || out[11]["toolCallId"] != "c2" || out[11]["content"] != "two" {
					t.Errorf("results = %v %v", out[10], out[11])
				}
				if out[12]["messageId"] == turn {
					t.Error("the next turn reuses the previous turn's message id")
				}
			},
		},
		{
			name:  "todos: a snapshot, then JSON Patch deltas",
			evs:   []*agentv1.StreamEvent{start(), todosEv("a:pending", "b:pending"), todosEv("a:done", "b:pending", "c:pending"), todosEv("a:done"), done()},
			types: "RUN_STARTED STATE_SNAPSHOT STATE_DELTA STATE_DELTA RUN_FINISHED",
			check: func(t *testing.T, out []map[string]any) {
				if got := mustJSON(t, out[1]["snapshot"]); got != `{"todos":[{"id":"1","status":"pending","title":"a"},{"id":"2","status":"pending","title":"b"}]}` {
					t.Errorf("snapshot = %s", got)
				}
				if got := mustJSON(t, out[2]["delta"]); got != `[{"op":"replace","path":"/todos/0","value":{"id":"1","status":"done","title":"a"}},{"op":"add","path":"/todos/2","value":{"id":"3","status":"pending","title":"c"}}]` {
					t.Errorf("delta = %s", got)
				}
				if got := mustJSON(t, out[3]["delta"]); got != `[{"op":"remove","path":"/todos/2"},{"op":"remove","path":"/todos/1"}]` {
					t.Errorf("delta = %s", got)
				}
			},
		},
		{
			name:  "failed run",
			evs:   []*agentv1.StreamEvent{start(), text("par"), errEv("error"), text("late")},
			types: "RUN_STARTED TEXT_MESSAGE_START TEXT_MESSAGE_CONTENT TEXT_MESSAGE_END RUN_ERROR",
			check: func(t *testing.T, out []map[string]any) {
				if out[4]["message"] != "boom" || out[4]["code"] != "error" {
					t.Errorf("RUN_ERROR = %v", out[4])
				}
			},
		},
		{
			name:  "cancelled run",
			evs:   []*agentv1.StreamEvent{start(), errEv("cancelled")},
			types: "RUN_STARTED RUN_FINISHED",
			check: func(t *testing.T, out []map[string]any) {
				if out[1]["outcome"].(map[string]any)["type"] != "cancelled" {
					t.Errorf("RUN_FINISHED = %v", out[1])
				}
			},
		},
		{
			name: "approval: the pending call announced, the run suspended",
			evs: []*agentv1.StreamEvent{start(), text("May I?"), ev("on_interrupt", &agentv1.RunEventData{Kind: &agentv1.RunEventData_OnInterrupt{OnInterrupt: &agentv1.InterruptData{
				ToolCalls: []*agentv1.ToolCall{{Id: "c1", Name: "rm"}}, Always: proto.Bool(true),
			}}}, "")},
			types: "RUN_STARTED TEXT_MESSAGE_START TEXT_MESSAGE_CONTENT TEXT_MESSAGE_END TOOL_CALL_START TOOL_CALL_ARGS TOOL_CALL_END RUN_FINISHED",
			check: func(t *testing.T, out []map[string]any) {
				o := out[7]["outcome"].(map[string]any)
				in := o["interrupts"].([]any)[0].(map[string]any)
				if o["type"] != "interrupt" || in["id"] != "run_1:c1" || in["reason"] != "approval" || in["toolCallId"] != "c1" {
					t.Errorf("outcome = %v", o)
				}
				if out[4]["parentMessageId"] != out[1]["messageId"] {
					t.Errorf("pending call not on the turn's message: %v", out[4])
				}
			},
		},
		{
			name: "question",
			evs: []*agentv1.StreamEvent{start(), ev("on_interrupt", &agentv1.RunEventData{Kind: &agentv1.RunEventData_OnInterrupt{OnInterrupt: &agentv1.InterruptData{
				ToolCalls: []*agentv1.ToolCall{{Id: "q1", Name: "ask_user"}}, Kind: proto.String("question"), Question: proto.String("Which?"),
				Choices: []string{"red"}, ToolCallId: proto.String("q1"),
			}}}, "")},
			types: "RUN_STARTED TOOL_CALL_START TOOL_CALL_ARGS TOOL_CALL_END RUN_FINISHED",
			check: func(t *testing.T, out []map[string]any) {
				in := out[4]["outcome"].(map[string]any)["interrupts"].([]any)[0].(map[string]any)
				if in["reason"] != "question" || in["message"] != "Which?" || in["id"] != "run_1:q1" {
					t.Errorf("interrupt = %v", in)
				}
			},
		},
		{
			name: "kinds without an AG-UI event are CUSTOM",
			evs: []*agentv1.StreamEvent{start(), ev("on_task_start", &agentv1.RunEventData{Kind: &agentv1.RunEventData_OnTaskStart{OnTaskStart: &agentv1.TaskEventData{
				TaskId: "task_1", Tool: "sleep", Status: "running",
			}}}, "sleep")},
			types: "RUN_STARTED CUSTOM",
			check: func(t *testing.T, out []map[string]any) {
				if out[1]["name"] != "wick.on_task_start" || out[1]["value"].(map[string]any)["task_id"] != "task_1" {
					t.Errorf("CUSTOM = %v", out[1])
				}
			},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			out := translate(t, newTranslator("client-thread", "client-run"), tc.evs...)
			if got := types(out); got != tc.types {
				t.Fatalf("types:\n got %s\nwant %s", got, tc.types)
			}
			tc.check(t, out)
		})
	}
}

// TestTranslateResumed checks a resumed run: the calls it was suspended on
// are not announced again, and their results come.
func TestTranslateResumed(t *testing.T) {
	t.Parallel()
	tr := newTranslator("th", "r2")
	tr.wickRunID, tr.announced = "run_1", map[string]bool{"c1": true}
	out := translate(t, tr, toolStartEv("c1", "rm"), toolEndEv("c1", "ok", ""), text("Done"), done())
	if got, want := types(out), "RUN_STARTED TOOL_CALL_RESULT TEXT_MESSAGE_START TEXT_MESSAGE_CONTENT TEXT_MESSAGE_END RUN_FINISHED"; got != want {
		t.Fatalf("types:\n got %s\nwant %s", got, want)
	}
}

func mustJSON(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
