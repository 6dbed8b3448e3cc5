package wickserver_test

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/wick-agent/wick/platform/backend"
	"github.com/wick-agent/wick/services/agent"
	"github.com/wick-agent/wick/services/sandbox"
	"github.com/wick-agent/wick/wickserver"
)

const token = "wickserver-test-token-0123456789"

func echo(_ context.Context, args map[string]any) (string, error) {
	b, err := json.Marshal(args)
	return string(b), err
}

// newServer returns a server on a free port with an agents file holding
// the agent "from_file", stopped when the test ends.
func newServer(t *testing.T, opts ...wickserver.Option) *wickserver.Server {
	t.Helper()
	file := filepath.Join(t.TempDir(), "agents.yaml")
	if err := os.WriteFile(file, []byte("agents:\n  from_file:\n    name: From the file\n    tools: [echo]\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	stateDir, err := os.MkdirTemp("", "wks") // short: sandbox sockets live here
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = sandbox.RemoveStateDir(stateDir) })
	base := []wickserver.Option{
		wickserver.WithHTTPAddr("127.0.0.1:0"),
		wickserver.WithModel("script:demo"),
		wickserver.WithBackend(backend.Local),
		wickserver.WithAllowLocal(),
		wickserver.WithTokens(map[string]string{token: "alice"}),
		wickserver.WithAgentsFile(file),
		wickserver.WithLogger(slog.New(slog.DiscardHandler)),
	}
	s, err := wickserver.New(append(base, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if err := s.Shutdown(ctx); err != nil {
			t.Error(err)
		}
	})
	return s
}

func TestRegistrationRefusals(t *testing.T) {
	t.Parallel()
	s := newServer(t)
	if err := s.RegisterTool(&agent.FuncTool{ToolName: "echo", ToolDesc: "Echo the arguments", Fn: echo}); err != nil {
		t.Fatal(err)
	}
	if err := s.RegisterAgent("from_code", &agent.AgentConfig{Name: "From code", Tools: []string{"echo", "calculate"}}); err != nil {
		t.Fatal(err)
	}
	tools := []struct {
		name string
		tool agent.Tool
		want error
	}{
		{"built-in", &agent.FuncTool{ToolName: "datetime", Fn: echo}, agent.ErrToolNameTaken},
		{"web tool, not offered", &agent.FuncTool{ToolName: "fetch_url", Fn: echo}, agent.ErrToolNameTaken},
		{"hook tool", &agent.FuncTool{ToolName: "execute", Fn: echo}, agent.ErrToolNameTaken},
		{"registered before", &agent.FuncTool{ToolName: "echo", Fn: echo}, agent.ErrToolNameTaken},
		{"bad name", &agent.FuncTool{ToolName: "a/b", Fn: echo}, agent.ErrInvalidTool},
		{"no function", &agent.FuncTool{ToolName: "nofn"}, agent.ErrInvalidTool},
		{"bad schema", &agent.FuncTool{ToolName: "bad_schema", Fn: echo, ToolParams: map[string]any{"type": "array"}}, agent.ErrInvalidTool},
	}
	for _, tt := range tools {
		if err := s.RegisterTool(tt.tool); !errors.Is(err, tt.want) {
			t.Errorf("RegisterTool(%s) = %v, want %v", tt.name, err, tt.want)
		}
	}
	agents := []struct {
		name string
		id   string
		cfg  *agent.AgentConfig
		want string
	}{
		{"registered before", "from_code", &agent.AgentConfig{}, "already registered"},
		{"in the agents file", "from_file", &agent.AgentConfig{}, "agents.yaml"},
		{"bad id", "a b", &agent.AgentConfig{}, "agent_id"},
		{"reserved id", "tools", &agent.AgentConfig{}, "reserved"},
		{"bad config", "x", &agent.AgentConfig{Approval: "sometimes"}, "approval"},
		{"no config", "y", nil, "empty"},
	}
	for _, tt := range agents {
		if err := s.RegisterAgent(tt.id, tt.cfg); err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("RegisterAgent(%s) = %v, want an error mentioning %q", tt.name, err, tt.want)
		}
	}
	if err := s.Wait(); !errors.Is(err, wickserver.ErrNotStarted) {
		t.Fatalf("Wait before Start = %v", err)
	}

	ctx := t.Context()
	if err := s.Start(ctx); err != nil {
		t.Fatal(err)
	}
	if err := s.Start(ctx); !errors.Is(err, wickserver.ErrStarted) {
		t.Fatalf("second Start = %v", err)
	}
	if err := s.RegisterTool(&agent.FuncTool{ToolName: "late", Fn: echo}); !errors.Is(err, wickserver.ErrStarted) {
		t.Fatalf("RegisterTool after Start = %v", err)
	}
	if err := s.RegisterAgent("late", &agent.AgentConfig{}); !errors.Is(err, wickserver.ErrStarted) {
		t.Fatalf("RegisterAgent after Start = %v", err)
	}
}

// get sends an authenticated GET and decodes the JSON answer.
func get(t *testing.T, url string, out any) {
	t.Helper()
	req, err := http.NewRequestWithContext(t.Context(), http.MethodGet, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET %s: %s", url, resp.Status)
	}
	if err := json.NewDecoder(resp.Body).Decode(out); err != nil {
		t.Fatal(err)
	}
}

// TestServesRegisteredAgentsAndTools checks what a client of the running
// server sees: the agents of the file and of the code side by side, the
// native tool listed as such, and every gRPC address; and that Shutdown
// stops it.
func TestServesRegisteredAgentsAndTools(t *testing.T) {
	t.Parallel()
	s := newServer(t)
	if err := s.RegisterTool(&agent.FuncTool{ToolName: "echo", ToolDesc: "Echo the arguments", Fn: echo}); err != nil {
		t.Fatal(err)
	}
	if err := s.RegisterAgent("from_code", &agent.AgentConfig{Name: "From code", Tools: []string{"echo"}}); err != nil {
		t.Fatal(err)
	}
	if s.HTTPURL() != "" || s.GRPCAddr("agent") != "" || s.Suite() != nil {
		t.Fatal("addresses before Start")
	}
	if err := s.Start(t.Context()); err != nil {
		t.Fatal(err)
	}

	var agents struct {
		Agents []struct {
			AgentID string   `json:"agent_id"`
			Tools   []string `json:"tools"`
		} `json:"agents"`
	}
	get(t, s.HTTPURL()+"/agents", &agents)
	var ids []string
	for _, a := range agents.Agents {
		ids = append(ids, a.AgentID+":"+strings.Join(a.Tools, "+"))
	}
	if strings.Join(ids, ",") != "from_code:echo,from_file:echo" {
		t.Fatalf("agents = %v", ids)
	}
	var tools struct {
		Tools []struct{ Name, Kind, Description string } `json:"tools"`
	}
	get(t, s.HTTPURL()+"/agents/tools", &tools)
	if len(tools.Tools) != 1 || tools.Tools[0].Name != "echo" || tools.Tools[0].Kind != agent.ToolKindNative || tools.Tools[0].Description != "Echo the arguments" {
		t.Fatalf("tools = %+v", tools.Tools)
	}
	for _, svc := range []string{"gateway", "agent", "sandbox", "llmgw"} {
		if !strings.HasPrefix(s.GRPCAddr(svc), "127.0.0.1:") {
			t.Fatalf("GRPCAddr(%s) = %q", svc, s.GRPCAddr(svc))
		}
	}

	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	if err := s.Shutdown(ctx); err != nil {
		t.Fatal(err)
	}
	if err := s.Wait(); err != nil {
		t.Fatal(err)
	}
	if resp, err := http.Get(s.HTTPURL() + "/health"); err == nil {
		resp.Body.Close()
		t.Fatalf("the gateway still answers after Shutdown: %s", resp.Status)
	}
}

// TestStartContextStopsTheServer checks that the end of Start's context
// stops the server, as the wick command relies on for its signals.
func TestStartContextStopsTheServer(t *testing.T) {
	t.Parallel()
	s := newServer(t)
	ctx, cancel := context.WithCancel(t.Context())
	if err := s.Start(ctx); err != nil {
		t.Fatal(err)
	}
	cancel()
	if err := s.Wait(); err != nil {
		t.Fatal(err)
	}
	if resp, err := http.Get(s.HTTPURL() + "/health"); err == nil {
		resp.Body.Close()
		t.Fatalf("the gateway still answers after its context ended: %s", resp.Status)
	}
}
