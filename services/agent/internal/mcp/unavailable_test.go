package mcp

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/wick-agent/wick/llm"
	"github.com/wick-agent/wick/platform/runevent"
	"github.com/wick-agent/wick/services/agent/internal/loop"
	"github.com/wick-agent/wick/services/agent/internal/sandboxproc"
)

func TestTail(t *testing.T) {
	t.Parallel()
	many := make([]string, 50)
	for i := range many {
		many[i] = "line " + strings.Repeat("x", i%3)
	}
	for _, tc := range []struct {
		name, in, want string
		lines, bytes   int
	}{
		{"short", "  boom\n", "boom", 20, 2048},
		{"last lines", strings.Join(many, "\n"), strings.Join(many[30:], "\n"), 20, 2048},
		{"last bytes", strings.Repeat("a", 5000), strings.Repeat("a", 2048), 20, 2048},
		{"character boundary", "ééé", "é", 20, 3},
		{"empty", "", "", 20, 2048},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := tail(tc.in, tc.lines, tc.bytes)
			if got != tc.want {
				t.Fatalf("tail = %q, want %q", got, tc.want)
			}
			if len(got) > tc.bytes || strings.Count(got, "\n") >= tc.lines {
				t.Fatalf("tail %q exceeds its bounds", got)
			}
		})
	}
}

// TestUnavailableEvent checks the run event of a server that failed: its
// kind, name and data as a client reads them.
func TestUnavailableEvent(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name       string
		u          Unavailable
		wantStderr bool
	}{
		{"stdio", unavailable("ev", errors.New("start MCP server ev: handshake: EOF"), strings.Repeat("noise\n", 100)+"Error: cannot find module 'x'"), true},
		{"http", unavailable("web", errors.New("list tools: 401 Unauthorized"), ""), false},
		{"exit error quoting stderr", unavailable("ev", errors.New("handshake: the process exited (exit code 1)"+sandboxproc.StderrIntro+"Error: cannot find module 'x'"), "Error: cannot find module 'x'"), true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ev := tc.u.Event()
			if ev.Name != tc.u.Server || runevent.Kind(ev.Data) != "on_mcp_server_error" {
				t.Fatalf("event %s/%s, want %s/on_mcp_server_error", ev.Name, runevent.Kind(ev.Data), tc.u.Server)
			}
			d := ev.Data.GetOnMcpServerError()
			if d.GetServer() != tc.u.Server || d.GetError() != tc.u.Err || strings.Contains(d.GetError(), sandboxproc.StderrIntro) {
				t.Fatalf("data = %v", d)
			}
			if d.Stderr != nil != tc.wantStderr {
				t.Fatalf("stderr = %q, want present %v", d.GetStderr(), tc.wantStderr)
			}
			if tc.wantStderr {
				if !strings.HasSuffix(d.GetStderr(), "cannot find module 'x'") || strings.Count(d.GetStderr(), "\n") >= StderrTailLines {
					t.Fatalf("stderr = %q, want its last %d lines", d.GetStderr(), StderrTailLines)
				}
			}
			raw, err := runevent.MarshalData(ev.Data)
			if err != nil {
				t.Fatal(err)
			}
			if !strings.Contains(string(raw), `"server":"`+tc.u.Server+`"`) {
				t.Fatalf("JSON %s lacks the server", raw)
			}
		})
	}
}

// TestUnavailableHook checks what the model sees of a server that failed:
// a note in the system message, and a tool error naming the server and why
// for a call of one of its tools; other calls pass through.
func TestUnavailableHook(t *testing.T) {
	t.Parallel()
	u := unavailable("ev", errors.New("the process exited (exit status 1)"), "Error: no such file")
	h := UnavailableHook([]Unavailable{u})
	msgs, err := h.ModifyRequest(t.Context(), []llm.Message{{Role: llm.RoleSystem, Content: "You help."}, {Role: llm.RoleUser, Content: "hi"}})
	if err != nil {
		t.Fatal(err)
	}
	if sys := msgs[0].Content; !strings.Contains(sys, "MCP server ev is unavailable") || !strings.Contains(sys, "Error: no such file") {
		t.Fatalf("system message = %q", sys)
	}
	passed := func(ctx context.Context, call llm.ToolCall) (*loop.ToolResult, error) {
		return &loop.ToolResult{ToolCallID: call.ID, Name: call.Name, Output: "ran"}, nil
	}
	for _, tc := range []struct {
		tool, wantOut, wantErr string
	}{
		{"ev__echo", "", "MCP server ev is unavailable"},
		{"other__echo", "ran", ""},
		{"evil__echo", "ran", ""},
		{"calculate", "ran", ""},
	} {
		t.Run(tc.tool, func(t *testing.T) {
			res, err := h.WrapToolCall(t.Context(), llm.ToolCall{ID: "c1", Name: tc.tool}, passed)
			if err != nil {
				t.Fatal(err)
			}
			if res.Output != tc.wantOut || !strings.Contains(res.Error, tc.wantErr) || (tc.wantErr == "") != (res.Error == "") {
				t.Fatalf("result = %+v, want output %q, error with %q", res, tc.wantOut, tc.wantErr)
			}
			if res.ToolCallID != "c1" {
				t.Fatalf("tool call id = %q", res.ToolCallID)
			}
		})
	}
}
