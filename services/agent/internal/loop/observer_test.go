package loop_test

import (
	"context"
	"errors"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/wick-agent/wick/llm"
	"github.com/wick-agent/wick/llm/llmtest"
	"github.com/wick-agent/wick/services/agent/internal/loop"
)

// observed is one call a ToolObserver was told about.
type observed struct {
	name, outcome string
	known         bool
}

type observerRecorder struct {
	mu    sync.Mutex
	calls []observed
}

func (o *observerRecorder) ToolCallEnded(_ context.Context, name string, known bool, outcome string, d time.Duration) {
	if d < 0 {
		panic("negative duration")
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	o.calls = append(o.calls, observed{name, outcome, known})
}

// TestToolObserver: the observer hears once of every call, with how it
// ended: ok, error (a made-up tool too, as unknown), timeout by the loop's
// bound, cancelled when a wait strategy no longer needs it.
func TestToolObserver(t *testing.T) {
	t.Parallel()
	failing := tool("failing", func(context.Context, map[string]any) (string, error) { return "", errors.New("disk on fire") })
	stuck := tool("stuck", func(ctx context.Context, _ map[string]any) (string, error) {
		<-ctx.Done()
		return "", ctx.Err()
	})
	cases := []struct {
		name  string
		cfg   *loop.AgentConfig
		calls []llm.ToolCall
		opts  []loop.RunnerOption
		want  []observed
	}{
		{"outcomes", nil,
			[]llm.ToolCall{call("c1", "echo", map[string]any{"text": "hi"}), call("c2", "failing", nil), call("c3", "nope", nil), call("c4", "stuck", nil)},
			[]loop.RunnerOption{loop.WithToolTimeout(50 * time.Millisecond)},
			[]observed{{"echo", loop.ToolOK, true}, {"failing", loop.ToolError, true}, {"nope", loop.ToolError, false}, {"stuck", loop.ToolTimeout, true}}},
		{"not needed", &loop.AgentConfig{ToolWait: loop.ToolWaitAny},
			[]llm.ToolCall{call("c1", "echo", map[string]any{"text": "hi"}), call("c2", "stuck", nil)},
			nil,
			[]observed{{"echo", loop.ToolOK, true}, {"stuck", loop.ToolCancelled, true}}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			obs := &observerRecorder{}
			model := llmtest.New(llmtest.Call(c.calls...), llmtest.Text("done"))
			r := loop.NewRunner(c.cfg, model, nil, []loop.Tool{echoTool(), failing, stuck}, append(c.opts, loop.WithToolObserver(obs))...)
			rec := &recorder{}
			if err := r.Run(testCtx(t), "r", &loop.AgentState{}, []llm.Message{loop.Human("go")}, rec.emit, rec.save); err != nil {
				t.Fatal(err)
			}
			cmp := func(a, b observed) int {
				if a.name < b.name {
					return -1
				}
				if a.name > b.name {
					return 1
				}
				return 0
			}
			got := slices.SortedFunc(slices.Values(obs.calls), cmp)
			want := slices.SortedFunc(slices.Values(c.want), cmp)
			if !slices.Equal(got, want) {
				t.Fatalf("observed %v, want %v", got, want)
			}
		})
	}
}

// TestToolObserverRejected: a call the user rejects is observed as
// rejected, without running.
func TestToolObserverRejected(t *testing.T) {
	t.Parallel()
	obs := &observerRecorder{}
	model := llmtest.New(llmtest.Call(call("c1", "echo", map[string]any{"text": "hi"})), llmtest.Text("done"))
	r := loop.NewRunner(&loop.AgentConfig{Approval: loop.ApprovalInteractive}, model, nil, []loop.Tool{echoTool()},
		loop.WithApprover(&fakeApprover{decisions: []loop.Decision{{ToolCallID: "c1", Action: loop.ActionReject}}}), loop.WithToolObserver(obs))
	rec := &recorder{}
	if err := r.Run(testCtx(t), "r", &loop.AgentState{}, []llm.Message{loop.Human("go")}, rec.emit, rec.save); err != nil {
		t.Fatal(err)
	}
	if want := []observed{{"echo", loop.ToolRejected, true}}; !slices.Equal(obs.calls, want) {
		t.Fatalf("observed %v, want %v", obs.calls, want)
	}
}
