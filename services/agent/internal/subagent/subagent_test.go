package subagent

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	agentv1 "github.com/wick-agent/wick/gen/wick/agent/v1"
	"github.com/wick-agent/wick/llm"
	"github.com/wick-agent/wick/services/agent/internal/loop"
)

func TestAnswerIsBounded(t *testing.T) {
	for _, tt := range []struct {
		name string
		text string
		cut  bool
	}{
		{"short", "done", false},
		{"exactly the bound", strings.Repeat("a", MaxAnswerBytes), false},
		// "é" is two bytes: the bound falls inside one.
		{"over the bound mid-rune", "x" + strings.Repeat("é", MaxAnswerBytes/2), true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			st := &loop.AgentState{ThreadID: "th_sub_1", Messages: []llm.Message{loop.Human("go"), loop.AI(tt.text)}}
			got := Answer(st)
			if !utf8.ValidString(got) {
				t.Fatal("the answer was cut inside a rune")
			}
			body, note, cut := strings.Cut(got, "\n…[cut:")
			if cut != tt.cut || len(body) > MaxAnswerBytes {
				t.Fatalf("cut %v, body %d bytes", cut, len(body))
			}
			if cut && !strings.Contains(note, "th_sub_1") {
				t.Fatalf("the note does not name the thread: %q", note)
			}
			if !cut && got != tt.text {
				t.Fatalf("answer changed: %q", got)
			}
		})
	}
}

func TestParseArgs(t *testing.T) {
	for _, tt := range []struct {
		name string
		args map[string]any
		want string // the sub-agent, or the error's text
		bg   bool
	}{
		{"default sub-agent", map[string]any{"description": "x"}, GeneralPurpose, false},
		{"named", map[string]any{"description": "x", "subagent_type": "r"}, "r", false},
		{"empty goal", map[string]any{"description": " \n"}, "description is empty", false},
		{"no goal", map[string]any{}, "description is empty", false},
		{"name not a string", map[string]any{"description": "x", "subagent_type": 3.0}, "must be a string", false},
		{"goal too long", map[string]any{"description": strings.Repeat("a", maxGoalChars+1)}, "at most", false},
		{"background", map[string]any{"description": "x", "background": true}, GeneralPurpose, true},
		{"background false", map[string]any{"description": "x", "background": false}, GeneralPurpose, false},
		{"background not a boolean", map[string]any{"description": "x", "background": "yes"}, "true or false", false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			in, err := parseArgs(tt.args)
			if err != nil {
				if !errors.Is(err, ErrBadInput) || !strings.Contains(err.Error(), tt.want) {
					t.Fatalf("error %v, want %q", err, tt.want)
				}
				return
			}
			if in.name != tt.want || in.background != tt.bg {
				t.Fatalf("sub-agent %q background %v, want %q %v", in.name, in.background, tt.want, tt.bg)
			}
		})
	}
}

func TestChildConfig(t *testing.T) {
	parent := &loop.AgentConfig{
		SystemPrompt: "parent", Model: "script:p", Tools: []string{"calculate", "ask_user", "task"}, Approval: loop.ApprovalInteractive,
		Subagents: []loop.SubagentCfg{{Name: "r", Description: "d", Prompt: "research", Model: "script:r", Tools: []string{"datetime", "ask_user"}}},
	}
	tool := NewTool(parent, nil)
	gp, timeout, err := tool.childConfig(GeneralPurpose)
	if err != nil || timeout != DefaultTimeout {
		t.Fatal(timeout, err)
	}
	if gp.Approval != loop.ApprovalAutonomous || strings.Join(gp.Tools, ",") != "calculate,task" || gp.Model != "script:p" || !strings.HasPrefix(gp.SystemPrompt, "parent") {
		t.Fatalf("general-purpose %+v", gp)
	}
	r, _, err := tool.childConfig("r")
	if err != nil || strings.Join(r.Tools, ",") != "datetime" || r.Model != "script:r" || !strings.HasPrefix(r.SystemPrompt, "research") {
		t.Fatalf("declared %+v, %v", r, err)
	}
	if strings.Join(parent.Tools, ",") != "calculate,ask_user,task" || strings.Join(parent.Subagents[0].Tools, ",") != "datetime,ask_user" {
		t.Fatal("the parent's configuration was changed")
	}
}

// fakeRemote answers a remote sub-agent's goal by its text: "fail" fails,
// "block" waits for the call's end, anything else is echoed.
type fakeRemote struct{}

func (fakeRemote) Call(ctx context.Context, a *loop.A2ACfg, goal string) (string, error) {
	switch goal {
	case "fail":
		return "", errors.New("task t1 is failed: boom")
	case "block":
		<-ctx.Done()
		return "", ctx.Err()
	}
	return " echo " + goal + " via " + a.URL + " ", nil
}

func TestRemoteSubagent(t *testing.T) {
	a := &loop.A2ACfg{URL: "https://remote.example/a2a/agents/x"}
	parent := &loop.AgentConfig{Subagents: []loop.SubagentCfg{{Name: "far", Description: "d", A2A: a}}}
	for _, tt := range []struct {
		name, goal string
		remote     Remote
		timeout    time.Duration
		want       string // the answer, or the error's text
		status     string
	}{
		{"answer", "hi", fakeRemote{}, time.Minute, "echo hi via " + a.URL, StatusCompleted},
		{"failure names the remote agent", "fail", fakeRemote{}, time.Minute, "sub-agent far (A2A agent " + a.URL + ") failed: task t1 is failed: boom", StatusFailed},
		{"timeout", "block", fakeRemote{}, time.Millisecond, "did not finish within 1ms", StatusTimeout},
		{"no client", "hi", nil, time.Minute, "calls none", StatusFailed},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var opts []Option
			if tt.remote != nil {
				opts = append(opts, WithRemote(tt.remote))
			}
			tool := NewTool(parent, nil, opts...)
			var end *agentv1.SubagentEndData
			c := Child{Name: "far", RunID: "run_c", ThreadID: "th_sub_c", Goal: tt.goal, Depth: 1, A2A: tool.remoteOf("far")}
			answer, err := tool.run(t.Context(), c, tt.timeout, "run_p", "call_1", func(ev loop.StreamEvent) {
				if e := ev.Data.GetOnSubagentEnd(); e != nil {
					end = e
				}
			})
			got := answer
			if err != nil {
				got = err.Error()
			}
			if !strings.Contains(got, tt.want) || end == nil || end.GetStatus() != tt.status {
				t.Fatalf("got %q, end %v; want %q, status %s", got, end, tt.want, tt.status)
			}
		})
	}
}
