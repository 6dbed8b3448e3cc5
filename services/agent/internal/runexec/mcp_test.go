package runexec_test

import (
	"context"
	"strings"
	"testing"

	llmv1 "github.com/wick-agent/wick/gen/wick/llm/v1"
	"github.com/wick-agent/wick/llm"
	"github.com/wick-agent/wick/llm/llmtest"
	"github.com/wick-agent/wick/services/agent/internal/loop"
	"github.com/wick-agent/wick/services/agent/internal/mcp"
	"github.com/wick-agent/wick/services/agent/internal/quota"
	"github.com/wick-agent/wick/services/agent/internal/registry"
	"github.com/wick-agent/wick/services/agent/internal/runexec"
	"github.com/wick-agent/wick/services/agent/internal/runs"
	"github.com/wick-agent/wick/services/agent/internal/threads"
	"github.com/wick-agent/wick/wickfs"
)

// mcpServers is an MCPTools whose servers give fixed tools, or are
// unavailable.
type mcpServers struct {
	tools []loop.Tool
	down  []mcp.Unavailable
}

func (m mcpServers) Tools(context.Context, string, string, *loop.BackendCfg, []loop.MCPServerCfg) ([]loop.Tool, []mcp.Unavailable) {
	return m.tools, m.down
}

// TestMCPServerUnavailable checks what a run makes of an MCP server that
// could not be started: an on_mcp_server_error event after on_run_start
// naming it with its stderr, a tool error for the model when it calls one
// of its tools — also when it leaves the agent no tool at all: the model
// still answers, told why it has none.
func TestMCPServerUnavailable(t *testing.T) {
	t.Parallel()
	down := mcp.Unavailable{Server: "ev", Err: "start MCP server ev: handshake: the process exited (exit status 1)", Stderr: "Error: Cannot find module '/nope.js'"}
	echo := &loop.FuncTool{ToolName: "fs__echo", Fn: func(context.Context, map[string]any) (string, error) { return "echoed", nil }}
	for _, tc := range []struct {
		name      string
		servers   mcpServers
		wantLast  string
		wantInErr string
		// wantToolErr is the error of the model's call of ev__echo.
		wantToolErr string
	}{
		{"other server's tools left", mcpServers{tools: []loop.Tool{echo}, down: []mcp.Unavailable{down}}, "done", "", "MCP server ev is unavailable"},
		{"no tool left", mcpServers{down: []mcp.Unavailable{down}}, "done", "", "MCP server ev is unavailable"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			ts := threads.NewMemoryStore()
			t.Cleanup(func() { _ = ts.Close() })
			rm := runs.NewMemory()
			local := &loop.BackendCfg{Type: "local"}
			templates := map[string]*loop.AgentConfig{"mcp": {Name: "M", Backend: local, MCPServers: []loop.MCPServerCfg{{Name: "ev", Command: "node"}, {Name: "fs", Command: "node"}}}}
			model := llmtest.New(llmtest.Call(llm.ToolCall{ID: "c1", Name: "ev__echo", Args: map[string]any{"message": "hi"}}), llmtest.Text("ok"))
			agentStore := registry.NewMemoryStore()
			exec, err := runexec.New(runexec.Deps{
				Threads: ts, Locker: ts, Runs: rm, Log: rm, Quota: quota.NewMemory(),
				Agents: registry.New(templates, agentStore), Tools: agentStore, MCP: tc.servers,
				Models:    func(string, string, []*llmv1.ModelSpec) runexec.Model { return model },
				Sandboxes: func(string, *loop.BackendCfg) wickfs.FileSystem { return nil },
			})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(exec.Close)
			ctx := testCtx(t)
			r, err := exec.Start(ctx, user, runexec.Request{AgentID: "mcp", Input: human("call echo")})
			if err != nil {
				t.Fatal(err)
			}
			var evs []loop.StreamEvent
			if err := exec.Follow(ctx, r, func(ev loop.StreamEvent) error { evs = append(evs, ev); return nil }); err != nil {
				t.Fatal(err)
			}
			got := names(evs)
			if len(got) < 3 || got[0] != "on_run_start" || got[1] != "on_mcp_server_error" || got[len(got)-1] != tc.wantLast {
				t.Fatalf("events = %v, want on_run_start, on_mcp_server_error … %s", got, tc.wantLast)
			}
			d := evs[1].Data.GetOnMcpServerError()
			if evs[1].Name != "ev" || d.GetServer() != "ev" || d.GetError() != down.Err || d.GetStderr() != down.Stderr {
				t.Fatalf("on_mcp_server_error = %s %v", evs[1].Name, d)
			}
			if tc.wantInErr != "" {
				if msg := evs[len(evs)-1].Data.GetError().GetMessage(); !strings.Contains(msg, tc.wantInErr) {
					t.Fatalf("error = %q, want it to contain %q", msg, tc.wantInErr)
				}
				return
			}
			var toolErr string
			for _, ev := range evs {
				if e := ev.Data.GetOnToolEnd(); e != nil {
					toolErr = e.GetError()
				}
			}
			if !strings.Contains(toolErr, tc.wantToolErr) || !strings.Contains(toolErr, down.Stderr) {
				t.Fatalf("tool error = %q, want %q and the server's stderr", toolErr, tc.wantToolErr)
			}
			if sys := model.Requests()[0].Messages[0]; sys.Role != llm.RoleSystem || !strings.Contains(sys.Content, "MCP server ev is unavailable") {
				t.Fatalf("the model's first request does not say the server is unavailable: %+v", sys)
			}
		})
	}
}
