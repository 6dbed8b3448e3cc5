package hooks_test

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"

	"github.com/wick-agent/wick/services/agent/internal/agent"
	"github.com/wick-agent/wick/services/agent/internal/hooks"
	"github.com/wick-agent/wick/services/agent/internal/llm"
)

// instantModel answers at once: a tool call while fewer than toolTurns tool
// results are in the request, then a text reply.
type instantModel struct{ toolTurns int }

func (m instantModel) Call(context.Context, llm.Request) (*llm.Response, error) {
	return &llm.Response{Content: "summary"}, nil
}

func (m instantModel) Stream(_ context.Context, req llm.Request, ch chan<- llm.StreamChunk) error {
	results := 0
	for _, msg := range req.Messages {
		if msg.Role == llm.RoleTool {
			results++
		}
	}
	if results < m.toolTurns {
		ch <- llm.StreamChunk{Delta: "Let me check."}
		ch <- llm.StreamChunk{
			ToolCalls: []llm.ToolCallResult{{ID: fmt.Sprintf("call_%d", results), Name: "echo", Args: map[string]any{"text": "hi"}}},
			Usage:     &llm.Usage{InputTokens: 100, OutputTokens: 10},
		}
		return nil
	}
	ch <- llm.StreamChunk{Delta: "Done."}
	ch <- llm.StreamChunk{Usage: &llm.Usage{InputTokens: 100, OutputTokens: 2}}
	return nil
}

// BenchmarkLoopTurn measures the loop's own cost per turn (one model call
// and one tool round), with an instant model and an instant tool, so the
// figure is the overhead the agent adds around the LLM and the tools.
func BenchmarkLoopTurn(b *testing.B) {
	const turns = 10
	model := instantModel{toolTurns: turns - 1}
	echo := &agent.FuncTool{ToolName: "echo", Fn: func(_ context.Context, args map[string]any) (string, error) {
		return fmt.Sprint(args["text"]), nil
	}}
	cfg := &agent.AgentConfig{
		SystemPrompt: "You are a coding assistant.",
		Backend:      &agent.BackendCfg{Type: "local", Workdir: "/workspace"},
		Skills:       &agent.SkillsCfg{Paths: []string{"/workspace/skills"}},
		Memory:       &agent.MemoryCfg{Paths: []string{"/workspace/AGENTS.md"}},
	}
	fs := newMemFS(skillFiles)
	recordingTP := sdktrace.NewTracerProvider(sdktrace.WithSampler(sdktrace.AlwaysSample()))
	b.Cleanup(func() { _ = recordingTP.Shutdown(context.Background()) })

	cases := []struct {
		name  string
		hooks func() []agent.Hook
	}{
		{"bare", func() []agent.Hook { return nil }},
		{"all-hooks", func() []agent.Hook { return hooks.Build(cfg, fs, model) }},
		// Every span recorded (sampled), as with tracing switched on; the
		// spans are dropped instead of exported.
		{"all-hooks-traced", func() []agent.Hook {
			hs := hooks.Build(cfg, fs, model)
			hs[0] = hooks.NewTracingHook(hooks.WithTracerProvider(recordingTP))
			return hs
		}},
	}
	for _, c := range cases {
		b.Run(c.name, func(b *testing.B) {
			ctx := context.Background()
			emit := func(agent.StreamEvent) {}
			save := func(context.Context, *agent.AgentState) error { return nil }
			perTurn := make([]time.Duration, 0, b.N)
			b.ReportAllocs()
			b.ResetTimer()
			for b.Loop() {
				start := time.Now()
				r := agent.NewRunner(cfg, model, c.hooks(), []agent.Tool{echo})
				state := &agent.AgentState{ThreadID: "th_bench"}
				if err := r.Run(ctx, "run", state, []agent.Message{agent.Human("go")}, emit, save); err != nil {
					b.Fatal(err)
				}
				perTurn = append(perTurn, time.Since(start)/turns)
			}
			b.StopTimer()
			b.ReportMetric(float64(b.Elapsed().Microseconds())/float64(b.N*turns), "µs/turn")
			p50, p99 := percentiles(perTurn)
			b.ReportMetric(float64(p50.Nanoseconds())/1e3, "p50-µs/turn")
			b.ReportMetric(float64(p99.Nanoseconds())/1e3, "p99-µs/turn")
		})
	}
}

func percentiles(d []time.Duration) (p50, p99 time.Duration) {
	if len(d) == 0 {
		return 0, 0
	}
	s := append([]time.Duration(nil), d...)
	slices.Sort(s)
	return s[len(s)*50/100], s[min(len(s)-1, len(s)*99/100)]
}
