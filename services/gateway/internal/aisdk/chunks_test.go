package aisdk

import (
	"encoding/json"
	"strings"
	"testing"

	"google.golang.org/protobuf/types/known/structpb"

	agentv1 "github.com/wick-agent/wick/gen/wick/agent/v1"
)

// Events of a run, built the way the agent service sends them.
func runStart() *agentv1.StreamEvent {
	return &agentv1.StreamEvent{Event: "on_run_start", RunId: "run_1", ThreadId: "chat1",
		Payload: &agentv1.RunEventData{Kind: &agentv1.RunEventData_OnRunStart{OnRunStart: &agentv1.RunStartData{RunId: "run_1", ThreadId: "chat1"}}}}
}

func text(s string) *agentv1.StreamEvent {
	return &agentv1.StreamEvent{RunId: "run_1", ThreadId: "chat1",
		Payload: &agentv1.RunEventData{Kind: &agentv1.RunEventData_OnChatModelStream{OnChatModelStream: &agentv1.DeltaData{Delta: s}}}}
}

func thought(s string) *agentv1.StreamEvent {
	return &agentv1.StreamEvent{RunId: "run_1", ThreadId: "chat1",
		Payload: &agentv1.RunEventData{Kind: &agentv1.RunEventData_OnThoughtStream{OnThoughtStream: &agentv1.DeltaData{Delta: s}}}}
}

func toolStart(id, name string, args map[string]any) *agentv1.StreamEvent {
	st, _ := structpb.NewStruct(args)
	return &agentv1.StreamEvent{Name: name, RunId: "run_1", ThreadId: "chat1",
		Payload: &agentv1.RunEventData{Kind: &agentv1.RunEventData_OnToolStart{OnToolStart: &agentv1.ToolStartData{ToolCallId: id, Args: st}}}}
}

func toolEnd(id, output, errText string) *agentv1.StreamEvent {
	d := &agentv1.ToolEndData{ToolCallId: id}
	if errText != "" {
		d.Error = &errText
	} else {
		d.Output = &output
	}
	return &agentv1.StreamEvent{RunId: "run_1", ThreadId: "chat1",
		Payload: &agentv1.RunEventData{Kind: &agentv1.RunEventData_OnToolEnd{OnToolEnd: d}}}
}

func usage(in, out int32) *agentv1.StreamEvent {
	return &agentv1.StreamEvent{RunId: "run_1", ThreadId: "chat1",
		Payload: &agentv1.RunEventData{Kind: &agentv1.RunEventData_OnUsage{OnUsage: &agentv1.UsageData{InputTokens: &in, OutputTokens: &out}}}}
}

func todos(items ...*agentv1.Todo) *agentv1.StreamEvent {
	return &agentv1.StreamEvent{RunId: "run_1", ThreadId: "chat1",
		Payload: &agentv1.RunEventData{Kind: &agentv1.RunEventData_OnTodos{OnTodos: &agentv1.TodosData{Todos: items}}}}
}

func interrupt(kind string, calls ...*agentv1.ToolCall) *agentv1.StreamEvent {
	d := &agentv1.InterruptData{ToolCalls: calls}
	if kind != "" {
		d.Kind = &kind
	}
	return &agentv1.StreamEvent{RunId: "run_1", ThreadId: "chat1",
		Payload: &agentv1.RunEventData{Kind: &agentv1.RunEventData_OnInterrupt{OnInterrupt: d}}}
}

func done() *agentv1.StreamEvent {
	return &agentv1.StreamEvent{RunId: "run_1", ThreadId: "chat1",
		Payload: &agentv1.RunEventData{Kind: &agentv1.RunEventData_Done{Done: &agentv1.DoneData{}}}}
}

func failed(code, msg string) *agentv1.StreamEvent {
	return &agentv1.StreamEvent{RunId: "run_1", ThreadId: "chat1",
		Payload: &agentv1.RunEventData{Kind: &agentv1.RunEventData_Error{Error: &agentv1.ErrorData{Code: code, Message: msg}}}}
}

func subagent() *agentv1.StreamEvent {
	return &agentv1.StreamEvent{RunId: "run_1", ThreadId: "chat1",
		Payload: &agentv1.RunEventData{Kind: &agentv1.RunEventData_OnSubagentStart{OnSubagentStart: &agentv1.SubagentStartData{Name: "gp"}}}}
}

func call(id, name string, args map[string]any) *agentv1.ToolCall {
	st, _ := structpb.NewStruct(args)
	return &agentv1.ToolCall{Id: id, Name: name, Args: st}
}

const (
	start    = `{"type":"start","messageMetadata":{"runId":"run_1","threadId":"chat1"}}`
	startStp = `{"type":"start-step"}`
	finStp   = `{"type":"finish-step"}`
)

// TestEncoder maps runs' events onto the chunks the AI SDK reads, as
// frames: the JSON of each chunk, in order, and whether the response ends.
func TestEncoder(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		// continued and denied are tool calls the client's message holds.
		continued, denied []string
		events            []*agentv1.StreamEvent
		want              []string
		last              bool
	}{{
		name:   "text",
		events: []*agentv1.StreamEvent{runStart(), text("Hel"), text("lo"), text(""), usage(7, 2), done()},
		want: []string{start, startStp,
			`{"type":"text-start","id":"text-1"}`, `{"type":"text-delta","id":"text-1","delta":"Hel"}`,
			`{"type":"text-delta","id":"text-1","delta":"lo"}`, `{"type":"text-end","id":"text-1"}`, finStp,
			`{"type":"finish","finishReason":"stop","messageMetadata":{"runId":"run_1","threadId":"chat1","usage":{"inputTokens":7,"outputTokens":2,"totalTokens":9}}}`},
		last: true,
	}, {
		name:   "reasoning then text",
		events: []*agentv1.StreamEvent{runStart(), thought("hmm"), text("ok"), done()},
		want: []string{start, startStp,
			`{"type":"reasoning-start","id":"reasoning-1"}`, `{"type":"reasoning-delta","id":"reasoning-1","delta":"hmm"}`,
			`{"type":"reasoning-end","id":"reasoning-1"}`,
			`{"type":"text-start","id":"text-2"}`, `{"type":"text-delta","id":"text-2","delta":"ok"}`, `{"type":"text-end","id":"text-2"}`,
			finStp, `{"type":"finish","finishReason":"stop","messageMetadata":{"runId":"run_1","threadId":"chat1"}}`},
		last: true,
	}, {
		name: "a tool call between two steps",
		events: []*agentv1.StreamEvent{runStart(), text("Let me look."), toolStart("c1", "ls", map[string]any{"path": "/w"}),
			toolEnd("c1", "a\nb", ""), text("Two files."), done()},
		want: []string{start, startStp,
			`{"type":"text-start","id":"text-1"}`, `{"type":"text-delta","id":"text-1","delta":"Let me look."}`, `{"type":"text-end","id":"text-1"}`,
			`{"type":"tool-input-start","toolCallId":"c1","toolName":"ls","dynamic":true}`,
			`{"type":"tool-input-available","toolCallId":"c1","toolName":"ls","input":{"path":"/w"},"dynamic":true}`,
			`{"type":"tool-output-available","toolCallId":"c1","output":"a\nb","dynamic":true}`,
			finStp, startStp,
			`{"type":"text-start","id":"text-2"}`, `{"type":"text-delta","id":"text-2","delta":"Two files."}`, `{"type":"text-end","id":"text-2"}`,
			finStp, `{"type":"finish","finishReason":"stop","messageMetadata":{"runId":"run_1","threadId":"chat1"}}`},
		last: true,
	}, {
		name:   "a failing tool, todos, a sub-agent left out",
		events: []*agentv1.StreamEvent{runStart(), toolStart("c1", "calc", nil), toolEnd("c1", "", "bad expr"), subagent(), todos(&agentv1.Todo{Id: "1", Title: "t", Status: "pending"})},
		want: []string{start, startStp,
			`{"type":"tool-input-start","toolCallId":"c1","toolName":"calc","dynamic":true}`,
			`{"type":"tool-input-available","toolCallId":"c1","toolName":"calc","input":{},"dynamic":true}`,
			`{"type":"tool-output-error","toolCallId":"c1","errorText":"bad expr","dynamic":true}`,
			`{"type":"data-todos","id":"todos","data":{"todos":[{"id":"1","title":"t","status":"pending"}]}}`},
	}, {
		name:   "an approval ends the response",
		events: []*agentv1.StreamEvent{runStart(), interrupt("", call("c1", "execute", map[string]any{"cmd": "rm"}))},
		want: []string{start, startStp,
			`{"type":"tool-input-start","toolCallId":"c1","toolName":"execute","dynamic":true}`,
			`{"type":"tool-input-available","toolCallId":"c1","toolName":"execute","input":{"cmd":"rm"},"dynamic":true}`,
			`{"type":"tool-approval-request","toolCallId":"c1","approvalId":"c1"}`,
			finStp, `{"type":"finish","finishReason":"tool-calls","messageMetadata":{"runId":"run_1","threadId":"chat1"}}`},
		last: true,
	}, {
		name:   "a question is a tool part without approval",
		events: []*agentv1.StreamEvent{runStart(), interrupt("question", call("q1", "ask_user", map[string]any{"question": "Which?"}))},
		want: []string{start, startStp,
			`{"type":"tool-input-start","toolCallId":"q1","toolName":"ask_user","dynamic":true}`,
			`{"type":"tool-input-available","toolCallId":"q1","toolName":"ask_user","input":{"question":"Which?"},"dynamic":true}`,
			finStp, `{"type":"finish","finishReason":"tool-calls","messageMetadata":{"runId":"run_1","threadId":"chat1"}}`},
		last: true,
	}, {
		name:      "the rest of an approved run: known calls are not announced again, denied ones say so",
		continued: []string{"c1", "c2"}, denied: []string{"c2"},
		events: []*agentv1.StreamEvent{toolStart("c1", "execute", nil), toolEnd("c1", "ok", ""), toolEnd("c2", "rejected by the user", ""), text("Done."), done()},
		want: []string{start, startStp,
			`{"type":"tool-output-available","toolCallId":"c1","output":"ok","dynamic":true}`,
			`{"type":"tool-output-denied","toolCallId":"c2"}`,
			finStp, startStp,
			`{"type":"text-start","id":"text-1"}`, `{"type":"text-delta","id":"text-1","delta":"Done."}`, `{"type":"text-end","id":"text-1"}`,
			finStp, `{"type":"finish","finishReason":"stop","messageMetadata":{"runId":"run_1","threadId":"chat1"}}`},
		last: true,
	}, {
		name:   "an error",
		events: []*agentv1.StreamEvent{runStart(), text("Hi"), failed("error", "the model failed")},
		want: []string{start, startStp,
			`{"type":"text-start","id":"text-1"}`, `{"type":"text-delta","id":"text-1","delta":"Hi"}`, `{"type":"text-end","id":"text-1"}`,
			`{"type":"error","errorText":"the model failed"}`},
		last: true,
	}, {
		name:   "a cancelled run is aborted",
		events: []*agentv1.StreamEvent{runStart(), failed("cancelled", "run cancelled")},
		want:   []string{start, startStp, `{"type":"abort","reason":"run cancelled"}`},
		last:   true,
	}} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			enc := NewEncoder()
			enc.Continue(tc.continued, tc.denied)
			var got []string
			last := false
			for i, ev := range tc.events {
				if last {
					t.Fatalf("event %d follows the last one", i)
				}
				var chunks []Chunk
				chunks, last = enc.Event(ev)
				for _, c := range chunks {
					b, err := json.Marshal(c)
					if err != nil {
						t.Fatal(err)
					}
					got = append(got, string(b))
				}
			}
			if last != tc.last {
				t.Errorf("last = %v, want %v", last, tc.last)
			}
			if strings.Join(got, "\n") != strings.Join(tc.want, "\n") {
				t.Errorf("chunks:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(tc.want, "\n"))
			}
		})
	}
}

// TestFrames checks the SSE framing of a chunk.
func TestFrames(t *testing.T) {
	t.Parallel()
	b, err := AppendFrame(nil, Chunk{Type: "text-delta", ID: "text-1", Delta: "a\nb"})
	if err != nil {
		t.Fatal(err)
	}
	if want := "data: {\"type\":\"text-delta\",\"id\":\"text-1\",\"delta\":\"a\\nb\"}\n\n"; string(b) != want {
		t.Errorf("frame %q, want %q", b, want)
	}
}

func TestFileName(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ name, mediaType, want string }{
		{"notes.txt", "text/plain", "notes.txt"},
		{"../../etc/passwd", "", "passwd"},
		{`C:\x\rapport final.pdf`, "", "rapport_final.pdf"},
		{"..", "text/plain", "file-1.txt"},
		{"", "image/png", "file-1.png"},
		{"", "application/x-unknown-thing", "file-1"},
	} {
		if got := fileName(tc.name, tc.mediaType, 0); got != tc.want {
			t.Errorf("fileName(%q, %q) = %q, want %q", tc.name, tc.mediaType, got, tc.want)
		}
	}
}

func TestDecodeDataURL(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		url, want, err string
	}{
		{"data:text/plain;base64,aGVsbG8=", "hello", ""},
		{"data:text/plain,hi%20there", "hi there", ""},
		{"data:text/plain;base64,!!", "", "base64"},
		{"https://example.com/a.png", "", "only data URLs"},
		{"data:text/plain", "", "no comma"},
	} {
		got, err := decodeDataURL(tc.url)
		if tc.err != "" {
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("decodeDataURL(%q): error %v, want one with %q", tc.url, err, tc.err)
			}
			continue
		}
		if err != nil || string(got) != tc.want {
			t.Errorf("decodeDataURL(%q) = %q, %v; want %q", tc.url, got, err, tc.want)
		}
	}
}
