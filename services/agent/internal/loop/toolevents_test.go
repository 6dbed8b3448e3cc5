package loop_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/wick-agent/wick/llm"
	"github.com/wick-agent/wick/llm/llmtest"
	"github.com/wick-agent/wick/services/agent/internal/loop"
)

// panickingToolHook panics around every tool call, outside the tool itself.
type panickingToolHook struct{ loop.BaseHook }

func (panickingToolHook) Name() string     { return "panicking" }
func (panickingToolHook) Phases() []string { return []string{loop.PhaseWrapToolCall} }
func (panickingToolHook) WrapToolCall(context.Context, llm.ToolCall, loop.ToolCallFunc) (*loop.ToolResult, error) {
	panic("hook bug")
}

// cancellingApprover cancels the run the way the run executor's approval
// timeout does, then fails.
type cancellingApprover struct{ cancel context.CancelCauseFunc }

func (a cancellingApprover) Approve(_ context.Context, _ string, _ []llm.ToolCall, announce func()) ([]loop.Decision, error) {
	announce()
	err := errors.New("no decision within the approval timeout")
	a.cancel(err)
	return nil, err
}

// TestToolEventsPairUp checks, on every path a tool call can take, that the
// loop emits exactly one on_tool_start and then exactly one on_tool_end per
// tool_call_id the model asked for, and that the end says what happened.
func TestToolEventsPairUp(t *testing.T) {
	t.Parallel()
	interactive := &loop.AgentConfig{Approval: loop.ApprovalInteractive}
	type setup struct {
		cfg   *loop.AgentConfig
		model *llmtest.Script
		tools []loop.Tool
		hooks []loop.Hook
		opts  []loop.RunnerOption
		// cancelWhen, when set, arranges for the run to be cancelled and
		// may return more options.
		cancelWhen func(cancel context.CancelCauseFunc) []loop.RunnerOption
	}
	tests := []struct {
		name    string
		make    func(t *testing.T) setup
		wantErr error
		// wantEndErr maps a tool_call_id to a text its end's error contains
		// ("" = no error).
		wantEndErr map[string]string
	}{
		{
			name: "completed",
			make: func(*testing.T) setup {
				return setup{model: llmtest.New(llmtest.Call(call("a", "echo", map[string]any{"text": "x"})), llmtest.Text("ok")), tools: []loop.Tool{echoTool()}}
			},
			wantEndErr: map[string]string{"a": ""},
		},
		{
			name: "unknown tool, failing tool, panicking tool",
			make: func(*testing.T) setup {
				failing := tool("failing", func(context.Context, map[string]any) (string, error) { return "", errors.New("disk on fire") })
				panicking := tool("panicking", func(context.Context, map[string]any) (string, error) { panic("boom") })
				return setup{
					model: llmtest.New(llmtest.Call(call("u", "nope", nil), call("f", "failing", nil), call("p", "panicking", nil)), llmtest.Text("ok")),
					tools: []loop.Tool{failing, panicking},
				}
			},
			wantEndErr: map[string]string{"u": `unknown tool "nope"`, "f": "disk on fire", "p": "failed unexpectedly"},
		},
		{
			name: "arguments that did not parse",
			make: func(*testing.T) setup {
				bad := llm.ToolCall{ID: "b", Name: "echo", ArgsErr: "unexpected end of JSON input"}
				return setup{model: llmtest.New(llmtest.Call(bad), llmtest.Text("ok")), tools: []loop.Tool{echoTool()}}
			},
			wantEndErr: map[string]string{"b": "unexpected end of JSON input"},
		},
		{
			name: "hook panics around the tool",
			make: func(*testing.T) setup {
				return setup{
					model: llmtest.New(llmtest.Call(call("h", "echo", nil)), llmtest.Text("ok")),
					tools: []loop.Tool{echoTool()}, hooks: []loop.Hook{panickingToolHook{}},
				}
			},
			wantEndErr: map[string]string{"h": "failed unexpectedly"},
		},
		{
			name: "max turns",
			make: func(*testing.T) setup {
				return setup{
					model: llmtest.New(llmtest.Call(call("m1", "echo", nil)), llmtest.Call(call("m2", "echo", nil))),
					tools: []loop.Tool{echoTool()}, opts: []loop.RunnerOption{loop.WithMaxTurns(2)},
				}
			},
			wantErr:    loop.ErrMaxTurns,
			wantEndErr: map[string]string{"m1": "", "m2": ""},
		},
		{
			name: "cancelled mid-tool, one tool ignoring cancellation",
			make: func(t *testing.T) setup {
				release := make(chan struct{})
				t.Cleanup(func() { close(release) })
				started := make(chan struct{}, 2)
				quick := tool("quick", func(context.Context, map[string]any) (string, error) { return "quick", nil })
				stubborn := tool("stubborn", func(context.Context, map[string]any) (string, error) {
					started <- struct{}{}
					<-release
					return "too late", nil
				})
				polite := tool("polite", func(ctx context.Context, _ map[string]any) (string, error) {
					started <- struct{}{}
					<-ctx.Done()
					return "", ctx.Err()
				})
				return setup{
					model: llmtest.New(llmtest.Call(call("q", "quick", nil), call("s", "stubborn", nil), call("p", "polite", nil))),
					tools: []loop.Tool{quick, stubborn, polite},
					opts:  []loop.RunnerOption{loop.WithCancelGrace(20 * time.Millisecond)},
					cancelWhen: func(cancel context.CancelCauseFunc) []loop.RunnerOption {
						go func() { <-started; <-started; cancel(nil) }()
						return nil
					},
				}
			},
			wantErr:    context.Canceled,
			wantEndErr: map[string]string{"q": "", "s": loop.CancelledToolResult, "p": "cancel"},
		},
		{
			name: "cancelled mid-tool, the tool failing as it is cut short",
			make: func(t *testing.T) setup {
				started := make(chan struct{})
				killed := tool("killed", func(ctx context.Context, _ map[string]any) (string, error) {
					close(started)
					<-ctx.Done()
					return "partial output", errors.New("signal: killed")
				})
				return setup{
					model: llmtest.New(llmtest.Call(call("k", "killed", nil))),
					tools: []loop.Tool{killed},
					cancelWhen: func(cancel context.CancelCauseFunc) []loop.RunnerOption {
						go func() { <-started; cancel(nil) }()
						return nil
					},
				}
			},
			wantErr:    context.Canceled,
			wantEndErr: map[string]string{"k": loop.CancelledToolResult},
		},
		{
			name: "approved, edited, rejected and undecided calls",
			make: func(*testing.T) setup {
				approver := &fakeApprover{decisions: []loop.Decision{
					{ToolCallID: "ok", Action: loop.ActionApprove},
					{ToolCallID: "ed", Action: loop.ActionEdit, Args: map[string]any{"text": "edited"}},
					{ToolCallID: "no", Action: loop.ActionReject, Message: "not now"},
				}}
				return setup{
					cfg:   interactive,
					model: llmtest.New(llmtest.Call(call("ok", "echo", nil), call("ed", "echo", nil), call("no", "echo", nil), call("un", "echo", nil)), llmtest.Text("ok")),
					tools: []loop.Tool{echoTool()}, opts: []loop.RunnerOption{loop.WithApprover(approver)},
				}
			},
			wantEndErr: map[string]string{
				"ok": "", "ed": "",
				"no": loop.RejectedToolResult + ": not now",
				"un": loop.RejectedToolResult + ": no decision was made for this call",
			},
		},
		{
			name: "approval fails",
			make: func(*testing.T) setup {
				return setup{
					cfg: interactive, model: llmtest.New(llmtest.Call(call("a", "echo", nil), call("b", "echo", nil))),
					tools: []loop.Tool{echoTool()}, opts: []loop.RunnerOption{loop.WithApprover(failingApprover{})},
				}
			},
			wantErr:    errAny,
			wantEndErr: map[string]string{"a": loop.FailedToolResult, "b": loop.FailedToolResult},
		},
		{
			name: "run cancelled while awaiting approval",
			make: func(*testing.T) setup {
				approver := blockingApprover{asked: make(chan struct{})}
				return setup{
					cfg: interactive, model: llmtest.New(llmtest.Call(call("a", "echo", nil), call("b", "echo", nil))),
					tools: []loop.Tool{echoTool()}, opts: []loop.RunnerOption{loop.WithApprover(approver)},
					cancelWhen: func(cancel context.CancelCauseFunc) []loop.RunnerOption {
						go func() { <-approver.asked; cancel(nil) }()
						return nil
					},
				}
			},
			wantErr:    context.Canceled,
			wantEndErr: map[string]string{"a": loop.CancelledToolResult, "b": loop.CancelledToolResult},
		},
		{
			name: "approval times out",
			make: func(*testing.T) setup {
				return setup{
					cfg: interactive, model: llmtest.New(llmtest.Call(call("a", "echo", nil))),
					tools: []loop.Tool{echoTool()},
					cancelWhen: func(cancel context.CancelCauseFunc) []loop.RunnerOption {
						return []loop.RunnerOption{loop.WithApprover(cancellingApprover{cancel})}
					},
				}
			},
			wantErr:    context.Canceled,
			wantEndErr: map[string]string{"a": loop.CancelledToolResult},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			s := tt.make(t)
			ctx, cancel := context.WithCancelCause(testCtx(t))
			defer cancel(nil)
			opts := s.opts
			if s.cancelWhen != nil {
				opts = append(opts, s.cancelWhen(cancel)...)
			}
			r := loop.NewRunner(s.cfg, s.model, s.hooks, s.tools, opts...)
			rec := &recorder{}
			err := r.Run(ctx, "r", &loop.AgentState{ThreadID: "th"}, []llm.Message{loop.Human("go")}, rec.emit, rec.save)
			switch {
			case tt.wantErr == nil && err != nil, tt.wantErr == errAny && err == nil,
				tt.wantErr != nil && tt.wantErr != errAny && !errors.Is(err, tt.wantErr):
				t.Fatalf("Run = %v, want %v", err, tt.wantErr)
			}
			assertToolEventsPaired(t, rec.Events(), tt.wantEndErr)
		})
	}
}

// errAny stands for "some error" in a table's wantErr.
var errAny = errors.New("any error")

// assertToolEventsPaired checks that each id in wantEndErr has exactly one
// start followed by exactly one end whose error contains the wanted text,
// and that no other tool_call_id has tool events.
func assertToolEventsPaired(t *testing.T, events []loop.StreamEvent, wantEndErr map[string]string) {
	t.Helper()
	starts, ends := map[string]int{}, map[string]int{}
	endErr := map[string]string{}
	var log []string
	for _, e := range events {
		if e.Event() != "on_tool_start" && e.Event() != "on_tool_end" {
			continue
		}
		data := e.DataMap()
		id := fmt.Sprint(data["tool_call_id"])
		log = append(log, e.Event()+" "+id)
		if _, ok := wantEndErr[id]; !ok {
			t.Errorf("%s for unexpected tool_call_id %q", e.Event(), id)
		}
		if e.Event() == "on_tool_start" {
			if ends[id] > 0 {
				t.Errorf("%s: on_tool_start after its on_tool_end", id)
			}
			starts[id]++
			continue
		}
		if starts[id] == 0 {
			t.Errorf("%s: on_tool_end without an on_tool_start", id)
		}
		ends[id]++
		endErr[id] = fmt.Sprint(data["error"])
	}
	for id, want := range wantEndErr {
		if starts[id] != 1 || ends[id] != 1 {
			t.Errorf("%s: %d starts and %d ends, want one of each", id, starts[id], ends[id])
			continue
		}
		if want == "" && endErr[id] != "" || !strings.Contains(endErr[id], want) {
			t.Errorf("%s: end error %q, want one containing %q", id, endErr[id], want)
		}
	}
	if t.Failed() {
		t.Logf("tool events:\n%s", strings.Join(log, "\n"))
	}
}
