package script_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/wick-agent/wick/llm"
	"github.com/wick-agent/wick/services/llmgw/internal/script"
	"github.com/wick-agent/wick/services/llmgw/internal/upstream"
)

func play(t *testing.T, p *script.Provider, assistants int) (llm.Result, []llm.Event) {
	t.Helper()
	req := llm.Request{Messages: []llm.Message{{Role: "user", Content: "go"}}}
	for i := 0; i < assistants; i++ {
		req.Messages = append(req.Messages, llm.Message{Role: "assistant", Content: "x"}, llm.Message{Role: "user", Content: "y"})
	}
	var evs []llm.Event
	res, err := p.Stream(context.Background(), req, func(ev llm.Event) error { evs = append(evs, ev); return nil })
	if err != nil {
		t.Fatal(err)
	}
	return res, evs
}

func TestDemo(t *testing.T) {
	t.Parallel()
	p := script.New(script.Demo(), 0)
	res, evs := play(t, p, 0)
	if res.FinishReason != llm.FinishToolCalls || len(res.ToolCalls) != 1 || res.ToolCalls[0].Name != "write_file" || res.ToolCalls[0].Args["path"] != "/workspace/hello.py" {
		t.Fatalf("turn 1 = %+v", res)
	}
	if len(evs) < 5 {
		t.Errorf("turn 1 streamed %d events, want token by token", len(evs))
	}
	var text strings.Builder
	var args strings.Builder
	for _, ev := range evs {
		text.WriteString(ev.Delta)
		if ev.ToolCallDelta != nil {
			args.WriteString(ev.ToolCallDelta.ArgumentsDelta)
		}
	}
	if text.String() != res.Content || args.String() != res.ToolCalls[0].RawArgs {
		t.Errorf("deltas do not join to the result: %q / %q", text.String(), args.String())
	}
	res, _ = play(t, p, 1)
	if len(res.ToolCalls) != 1 || res.ToolCalls[0].Name != "execute" || res.ToolCalls[0].Args["command"] != "cat hello.py" {
		t.Fatalf("turn 2 = %+v", res)
	}
	res, _ = play(t, p, 2)
	if len(res.ToolCalls) != 0 || res.FinishReason != llm.FinishStop || !strings.Contains(res.Content, "hello.py") {
		t.Fatalf("turn 3 = %+v", res)
	}
	res, _ = play(t, p, 3)
	if res.Content != script.Demo().EndText {
		t.Fatalf("after the end = %+v", res)
	}
}

// TestShowcase: the showcase script loads its skill progressively (the
// SKILL.md before the script it names), runs the csv-analyzer on a CSV it
// wrote, and writes a three-slide Marp deck that shows the chart.
func TestShowcase(t *testing.T) {
	t.Parallel()
	sc := script.Showcase()
	p := script.New(sc, 0)
	type call struct{ name, key, want string }
	want := []call{
		{"read_file", "path", "/workspace/skills/csv-analyzer/SKILL.md"},
		{"write_file", "path", "/workspace/sales.csv"},
		{"execute", "command", "python3 skills/csv-analyzer/analyze.py sales.csv --out report --x month --y revenue --kind line"},
		{"write_file", "path", "/workspace/sales.slides.md"},
	}
	for i, w := range want {
		res, _ := play(t, p, i)
		if res.FinishReason != llm.FinishToolCalls || len(res.ToolCalls) != 1 || res.ToolCalls[0].Name != w.name || res.ToolCalls[0].Args[w.key] != w.want {
			t.Fatalf("turn %d = %+v, want %s %s=%q", i+1, res, w.name, w.key, w.want)
		}
		args := res.ToolCalls[0].Args
		switch i {
		case 1:
			rows := strings.Split(strings.TrimSpace(args["content"].(string)), "\n")
			if len(rows) != 13 || rows[0] != "month,region,units,revenue" {
				t.Errorf("sales.csv has %d lines, header %q; want a header and 12 rows", len(rows), rows[0])
			}
			for _, r := range rows {
				if strings.Count(r, ",") != 3 {
					t.Errorf("sales.csv row %q has not 4 fields", r)
				}
			}
		case 3:
			deck := args["content"].(string)
			front, body, ok := strings.Cut(strings.TrimPrefix(deck, "---\n"), "\n---\n")
			if !strings.HasPrefix(deck, "---\n") || !ok || !strings.Contains(front, "marp: true") {
				t.Fatalf("deck has no Marp front matter: %q", deck)
			}
			if slides := strings.Split(body, "\n---\n"); len(slides) != 3 || !strings.Contains(slides[1], "![chart](report/sales-chart.png)") {
				t.Errorf("deck has %d slides (want 3, the second with the chart): %q", len(slides), body)
			}
		}
	}
	res, _ := play(t, p, len(want))
	if len(res.ToolCalls) != 0 || res.FinishReason != llm.FinishStop || !strings.Contains(res.Content, "sales.slides.md") {
		t.Fatalf("final turn = %+v", res)
	}
	if res, _ := play(t, p, len(want)+1); res.Content != sc.EndText {
		t.Fatalf("after the end = %+v", res)
	}
}

func TestParse(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, src string
		wantErr   string
		turns     int
		delay     time.Duration
	}{
		{name: "object", src: `{"delay":"20ms","turns":[{"text":"hi"}]}`, turns: 1, delay: 20 * time.Millisecond},
		{name: "bare array", src: `[{"text":"a"},{"tool_calls":[{"name":"ls","arguments":{"path":"/"}}]}]`, turns: 2},
		{name: "unknown field", src: `{"turnz":[]}`, wantErr: "unknown field"},
		{name: "bad delay", src: `{"delay":"soon","turns":[{"text":"a"}]}`, wantErr: "delay"},
		{name: "empty turn", src: `[{}]`, wantErr: "no text"},
		{name: "nameless call", src: `[{"tool_calls":[{"arguments":{}}]}]`, wantErr: "no name"},
		{name: "arguments not object", src: `[{"tool_calls":[{"name":"ls","arguments":[1]}]}]`, wantErr: "not a JSON object"},
		{name: "error turn", src: `[{"error":{"status":529}}]`, turns: 1},
		{name: "error turn bad status", src: `[{"error":{"status":200}}]`, wantErr: "not an HTTP error"},
		{name: "trailing data", src: `[{"text":"a"}] [1]`, wantErr: "after"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			s, err := script.Parse([]byte(tt.src))
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("err = %v, want %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if len(s.Turns) != tt.turns || s.Delay != tt.delay {
				t.Fatalf("script = %+v", s)
			}
		})
	}
}

func TestErrorTurn(t *testing.T) {
	t.Parallel()
	s, err := script.Parse([]byte(`[{"error":{"status":429,"message":"slow down"}}]`))
	if err != nil {
		t.Fatal(err)
	}
	_, err = script.New(s, 0).Stream(context.Background(), llm.Request{}, func(llm.Event) error { return nil })
	var e *upstream.Error
	if !errors.As(err, &e) || e.Kind != upstream.KindRateLimited || e.Message != "slow down" {
		t.Fatalf("err = %v", err)
	}
}

func TestDelayHonoursCancel(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithCancel(context.Background())
	p := script.New(script.Demo(), time.Hour)
	done := make(chan error, 1)
	go func() {
		_, err := p.Stream(ctx, llm.Request{}, func(llm.Event) error { return nil })
		done <- err
	}()
	cancel()
	err := <-done
	var e *upstream.Error
	if !errors.As(err, &e) || e.Kind != upstream.KindCanceled {
		t.Fatalf("err = %v", err)
	}
}

func TestSplitName(t *testing.T) {
	t.Parallel()
	name, d, err := script.SplitName("demo?delay=5ms")
	if err != nil || name != "demo" || d != 5*time.Millisecond {
		t.Fatalf("%q %v %v", name, d, err)
	}
	if _, _, err := script.SplitName("demo?speed=1"); err == nil {
		t.Fatal("unknown option accepted")
	}
	if _, d, _ := script.SplitName("demo"); d != -1 {
		t.Fatalf("delay without option = %v", d)
	}
}

// TestThinking: a turn's thinking streams before its text, as thinking
// events, and is in the result beside the text; a turn without thinking
// streams none.
func TestThinking(t *testing.T) {
	t.Parallel()
	s, err := script.Parse([]byte(`[{"thinking":"The user greets me.","text":"Hello there."},{"text":"Bye."}]`))
	if err != nil {
		t.Fatal(err)
	}
	p := script.New(s, 0)
	tests := []struct {
		name         string
		assistants   int
		wantThinking string
		wantText     string
	}{
		{name: "with thinking", assistants: 0, wantThinking: "The user greets me.", wantText: "Hello there."},
		{name: "without", assistants: 1, wantText: "Bye."},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res, evs := play(t, p, tt.assistants)
			var thinking, text strings.Builder
			for i, ev := range evs {
				if ev.Thinking != "" {
					if text.Len() > 0 {
						t.Fatalf("event %d is thinking after text", i)
					}
					if ev.Delta != "" || ev.ToolCallDelta != nil {
						t.Fatalf("event %d carries thinking and more: %+v", i, ev)
					}
				}
				thinking.WriteString(ev.Thinking)
				text.WriteString(ev.Delta)
			}
			if thinking.String() != tt.wantThinking || res.Thinking != tt.wantThinking {
				t.Errorf("thinking streamed %q, result %q; want %q", thinking.String(), res.Thinking, tt.wantThinking)
			}
			if text.String() != tt.wantText || res.Content != tt.wantText {
				t.Errorf("text streamed %q, result %q; want %q", text.String(), res.Content, tt.wantText)
			}
		})
	}
}
