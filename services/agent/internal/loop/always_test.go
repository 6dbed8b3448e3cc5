package loop_test

import (
	"context"
	"fmt"
	"maps"
	"strings"
	"sync"
	"testing"

	"github.com/wick-agent/wick/llm"
	"github.com/wick-agent/wick/llm/llmtest"
	"github.com/wick-agent/wick/services/agent/internal/loop"
)

// decidingApprover decides each call by its id and records the ids of
// each ask.
type decidingApprover struct {
	decisions map[string]loop.Decision
	asked     [][]string
}

func (a *decidingApprover) Approve(_ context.Context, _ string, calls []llm.ToolCall, announce func()) ([]loop.Decision, error) {
	announce()
	var ids []string
	var out []loop.Decision
	for _, c := range calls {
		ids = append(ids, c.ID)
		if d, ok := a.decisions[c.ID]; ok {
			out = append(out, d)
		}
	}
	a.asked = append(a.asked, ids)
	return out, nil
}

// userWaitTool is a tool that waits for the user itself, as ask_user does.
type userWaitTool struct{ loop.Tool }

func (userWaitTool) WaitsForUser() bool { return true }

// TestRunApprovalAlways: a decision with Always is remembered on the
// thread by the tool's name; a later call of the tool, in a later round,
// is decided by it without asking (with its start and end events, and no
// interrupt when nothing else is asked), while other tools are still
// asked and tools that wait for the user are never affected.
func TestRunApprovalAlways(t *testing.T) {
	t.Parallel()
	approve := func(id string, always bool) loop.Decision {
		return loop.Decision{ToolCallID: id, Action: loop.ActionApprove, Always: always}
	}
	for _, tc := range []struct {
		name        string
		remembered  map[string]string
		round1      []llm.ToolCall
		round2      []llm.ToolCall
		decisions   map[string]loop.Decision
		wantAsked   string // the ids of each ask, asks separated by "|"
		wantRan     map[string]any
		wantResults map[string]string
		wantAlways  map[string]string
	}{
		{
			name:        "always approve",
			round1:      []llm.ToolCall{call("w1", "write", map[string]any{"v": "1"})},
			round2:      []llm.ToolCall{call("w2", "write", map[string]any{"v": "2"}), call("o1", "other", map[string]any{"v": "3"})},
			decisions:   map[string]loop.Decision{"w1": approve("w1", true), "o1": approve("o1", false)},
			wantAsked:   "w1|o1",
			wantRan:     map[string]any{"w1": "1", "w2": "2", "o1": "3"},
			wantResults: map[string]string{"w1": "ran 1", "w2": "ran 2", "o1": "ran 3"},
			wantAlways:  map[string]string{"write": loop.ActionApprove},
		},
		{
			name:   "always reject",
			round1: []llm.ToolCall{call("w1", "write", map[string]any{"v": "1"})},
			round2: []llm.ToolCall{call("w2", "write", map[string]any{"v": "2"}), call("o1", "other", map[string]any{"v": "3"})},
			decisions: map[string]loop.Decision{
				"w1": {ToolCallID: "w1", Action: loop.ActionReject, Message: "no writes", Always: true},
				"o1": approve("o1", false),
			},
			wantAsked: "w1|o1",
			wantRan:   map[string]any{"o1": "3"},
			wantResults: map[string]string{
				"w1": loop.RejectedToolResult + ": no writes", "w2": loop.RememberedRejectedToolResult, "o1": "ran 3",
			},
			wantAlways: map[string]string{"write": loop.ActionReject},
		},
		{
			name:   "edit with always remembers approve, the edit applies once",
			round1: []llm.ToolCall{call("w1", "write", map[string]any{"v": "1"})},
			round2: []llm.ToolCall{call("w2", "write", map[string]any{"v": "2"})},
			decisions: map[string]loop.Decision{
				"w1": {ToolCallID: "w1", Action: loop.ActionEdit, Args: map[string]any{"v": "edited"}, Always: true},
			},
			wantAsked:   "w1",
			wantRan:     map[string]any{"w1": "edited", "w2": "2"},
			wantResults: map[string]string{"w1": "ran edited", "w2": "ran 2"},
			wantAlways:  map[string]string{"write": loop.ActionApprove},
		},
		{
			name:        "remembered from an earlier run: no interrupt",
			remembered:  map[string]string{"write": loop.ActionApprove, "other": loop.ActionReject},
			round1:      []llm.ToolCall{call("w1", "write", map[string]any{"v": "1"})},
			round2:      []llm.ToolCall{call("o1", "other", map[string]any{"v": "3"})},
			wantAsked:   "",
			wantRan:     map[string]any{"w1": "1"},
			wantResults: map[string]string{"w1": "ran 1", "o1": loop.RememberedRejectedToolResult},
			wantAlways:  map[string]string{"write": loop.ActionApprove, "other": loop.ActionReject},
		},
		{
			name:        "a tool that waits for the user is never affected",
			remembered:  map[string]string{"ask": loop.ActionReject},
			round1:      []llm.ToolCall{call("a1", "ask", map[string]any{"v": "q"})},
			round2:      []llm.ToolCall{call("w1", "write", map[string]any{"v": "1"})},
			decisions:   map[string]loop.Decision{"w1": approve("w1", false)},
			wantAsked:   "w1",
			wantRan:     map[string]any{"a1": "q", "w1": "1"},
			wantResults: map[string]string{"a1": "ran q", "w1": "ran 1"},
			wantAlways:  map[string]string{"ask": loop.ActionReject},
		},
		{
			name:        "without always nothing is remembered",
			round1:      []llm.ToolCall{call("w1", "write", map[string]any{"v": "1"})},
			round2:      []llm.ToolCall{call("w2", "write", map[string]any{"v": "2"})},
			decisions:   map[string]loop.Decision{"w1": approve("w1", false), "w2": approve("w2", false)},
			wantAsked:   "w1|w2",
			wantRan:     map[string]any{"w1": "1", "w2": "2"},
			wantResults: map[string]string{"w1": "ran 1", "w2": "ran 2"},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			var mu sync.Mutex
			ran := map[string]any{}
			recording := func(name string) loop.Tool {
				return tool(name, func(ctx context.Context, args map[string]any) (string, error) {
					info, _ := loop.CallInfoFromContext(ctx)
					mu.Lock()
					defer mu.Unlock()
					ran[info.ToolCallID] = args["v"]
					return fmt.Sprint("ran ", args["v"]), nil
				})
			}
			tools := []loop.Tool{recording("write"), recording("other"), userWaitTool{recording("ask")}}
			model := llmtest.New(llmtest.Call(tc.round1...), llmtest.Call(tc.round2...), llmtest.Text("done"))
			approver := &decidingApprover{decisions: tc.decisions}
			r := loop.NewRunner(&loop.AgentConfig{Approval: loop.ApprovalInteractive}, model, nil, tools, loop.WithApprover(approver))
			rec := &recorder{}
			state := &loop.AgentState{ThreadID: "th", ApprovalAlways: maps.Clone(tc.remembered)}
			if err := r.Run(testCtx(t), "r", state, []llm.Message{loop.Human("go")}, rec.emit, rec.save); err != nil {
				t.Fatal(err)
			}
			var asked []string
			for _, ids := range approver.asked {
				asked = append(asked, strings.Join(ids, ","))
			}
			if got := strings.Join(asked, "|"); got != tc.wantAsked {
				t.Fatalf("asked %q, want %q", got, tc.wantAsked)
			}
			if !maps.Equal(ran, tc.wantRan) {
				t.Fatalf("ran %v, want %v", ran, tc.wantRan)
			}
			results := map[string]string{}
			for _, m := range loop.Messages(state.Messages).ToolMessages() {
				results[m.ToolCallID] = m.Content
			}
			if !maps.Equal(results, tc.wantResults) {
				t.Fatalf("results %v, want %v", results, tc.wantResults)
			}
			// Every call has one start and one end; an interrupt per ask,
			// each saying "always" may be offered.
			starts, ends := map[string]int{}, map[string]int{}
			interrupts := 0
			for _, ev := range rec.Events() {
				data := ev.DataMap()
				switch ev.Event() {
				case "on_tool_start":
					starts[fmt.Sprint(data["tool_call_id"])]++
				case "on_tool_end":
					ends[fmt.Sprint(data["tool_call_id"])]++
				case "on_interrupt":
					interrupts++
					if data["always"] != true {
						t.Fatalf("interrupt without always: %v", data)
					}
				}
			}
			for id := range tc.wantResults {
				if starts[id] != 1 || ends[id] != 1 {
					t.Fatalf("call %s: %d starts, %d ends", id, starts[id], ends[id])
				}
			}
			if interrupts != len(approver.asked) {
				t.Fatalf("%d interrupts for %d asks", interrupts, len(approver.asked))
			}
			// The remembered decisions are saved with the thread.
			saves := rec.Saves()
			if got := saves[len(saves)-1].ApprovalAlways; !maps.Equal(got, tc.wantAlways) {
				t.Fatalf("saved always %v, want %v", got, tc.wantAlways)
			}
		})
	}
}
