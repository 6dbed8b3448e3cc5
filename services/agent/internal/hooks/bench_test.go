package hooks_test

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"

	"github.com/wick-agent/wick/llm"
	"github.com/wick-agent/wick/services/agent/internal/hooks"
	"github.com/wick-agent/wick/services/agent/internal/loop"
	"github.com/wick-agent/wick/wickfs"
)

// instantModel answers at once: a tool call while fewer than toolTurns tool
// results are in the request, then a text reply.
type instantModel struct{ toolTurns int }

func (m instantModel) Call(context.Context, llm.Request) (*llm.Result, error) {
	return &llm.Result{Content: "summary"}, nil
}

func (m instantModel) Stream(_ context.Context, req llm.Request, emit llm.Emit) (llm.Result, error) {
	results := 0
	for _, msg := range req.Messages {
		if msg.Role == llm.RoleTool {
			results++
		}
	}
	if results < m.toolTurns {
		if err := emit(llm.Event{Delta: "Let me check."}); err != nil {
			return llm.Result{}, err
		}
		return llm.Result{
			Content:   "Let me check.",
			ToolCalls: []llm.ToolCall{{ID: fmt.Sprintf("call_%d", results), Name: "echo", Args: map[string]any{"text": "hi"}}},
			Usage:     llm.Usage{InputTokens: 100, OutputTokens: 10},
		}, nil
	}
	if err := emit(llm.Event{Delta: "Done."}); err != nil {
		return llm.Result{}, err
	}
	return llm.Result{Content: "Done.", Usage: llm.Usage{InputTokens: 100, OutputTokens: 2}}, nil
}

// BenchmarkLoopTurn measures the loop's own cost per turn (one model call
// and one tool round), with an instant model and an instant tool, so the
// figure is the overhead the agent adds around the LLM and the tools.
func BenchmarkLoopTurn(b *testing.B) {
	const turns = 10
	model := instantModel{toolTurns: turns - 1}
	echo := &loop.FuncTool{ToolName: "echo", Fn: func(_ context.Context, args map[string]any) (string, error) {
		return fmt.Sprint(args["text"]), nil
	}}
	cfg := &loop.AgentConfig{
		SystemPrompt: "You are a coding assistant.",
		Backend:      &loop.BackendCfg{Type: "local", Workdir: "/workspace"},
		Skills:       &loop.SkillsCfg{Paths: []string{"/workspace/skills"}},
		Memory:       &loop.MemoryCfg{Paths: []string{"/workspace/AGENTS.md"}},
	}
	fs := newMemFS(skillFiles)
	recordingTP := sdktrace.NewTracerProvider(sdktrace.WithSampler(sdktrace.AlwaysSample()))
	b.Cleanup(func() { _ = recordingTP.Shutdown(context.Background()) })

	cases := []struct {
		name  string
		hooks func() []loop.Hook
	}{
		{"bare", func() []loop.Hook { return nil }},
		{"all-hooks", func() []loop.Hook { return hooks.Build(cfg, fs, model) }},
		// Every span recorded (sampled), as with tracing switched on; the
		// spans are dropped instead of exported.
		{"all-hooks-traced", func() []loop.Hook {
			hs := hooks.Build(cfg, fs, model)
			hs[0] = hooks.NewTracingHook(hooks.WithTracerProvider(recordingTP))
			return hs
		}},
	}
	for _, c := range cases {
		b.Run(c.name, func(b *testing.B) {
			ctx := context.Background()
			emit := func(loop.StreamEvent) {}
			save := func(context.Context, *loop.AgentState) error { return nil }
			perTurn := make([]time.Duration, 0, b.N)
			b.ReportAllocs()
			b.ResetTimer()
			for b.Loop() {
				start := time.Now()
				r := loop.NewRunner(cfg, model, c.hooks(), []loop.Tool{echo})
				state := &loop.AgentState{ThreadID: "th_bench"}
				if err := r.Run(ctx, "run", state, []llm.Message{loop.Human("go")}, emit, save); err != nil {
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

// BenchmarkSkillsCatalog measures what the skills catalog costs each model
// call: ModifyRequest appending it to the system message, with the shipped
// library (6 skills, read from the repository) and with 100 skills whose
// descriptions are as long as the shipped ones. tokens/call is the
// catalog's size in bytes / 4, the usual estimate for English text.
func BenchmarkSkillsCatalog(b *testing.B) {
	shipped, err := wickfs.NewLocalFS("../../../..")
	if err != nil {
		b.Fatal(err)
	}
	library, _, err := hooks.DiscoverSkills(context.Background(), shipped, []string{"/workspace/skills"})
	if err != nil || len(library) != 6 {
		b.Fatalf("shipped library: %d skills, %v", len(library), err)
	}
	hundred := map[string]string{}
	for i := range hooks.DefaultMaxSkills {
		s := library[i%len(library)]
		name := fmt.Sprintf("%s-%03d", s.Name, i)
		hundred["/workspace/skills/"+name+"/SKILL.md"] = "---\nname: " + name + "\ndescription: " + s.Description + "\n---\n"
	}
	for _, c := range []struct {
		name string
		fs   wickfs.FileSystem
		want int
	}{
		{"6-shipped", shipped, 6},
		{"100", newMemFS(hundred), 100},
	} {
		b.Run(c.name, func(b *testing.B) {
			ctx := context.Background()
			h := hooks.NewSkillsHook(c.fs, []string{"/workspace/skills"})
			if err := h.BeforeAgent(ctx, &loop.AgentState{}); err != nil || len(h.Skills()) != c.want {
				b.Fatalf("%d skills, %v", len(h.Skills()), err)
			}
			const prompt = "You are a coding assistant."
			msgs := []llm.Message{loop.System(prompt), loop.Human("Summarise data.csv")}
			var added int
			b.ReportAllocs()
			b.ResetTimer()
			for b.Loop() {
				out, err := h.ModifyRequest(ctx, msgs)
				if err != nil {
					b.Fatal(err)
				}
				added = len(out[0].Content) - len(prompt)
			}
			b.StopTimer()
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/1e3/float64(b.N), "µs/call")
			b.ReportMetric(float64(added), "bytes/call")
			b.ReportMetric(float64(added)/4, "tokens/call")
		})
	}
}
