package runexec_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"sync"
	"testing"

	llmv1 "github.com/wick-agent/wick/gen/wick/llm/v1"
	"github.com/wick-agent/wick/llm/llmtest"
	"github.com/wick-agent/wick/services/agent/internal/loop"
	"github.com/wick-agent/wick/services/agent/internal/mcp"
	"github.com/wick-agent/wick/services/agent/internal/quota"
	"github.com/wick-agent/wick/services/agent/internal/registry"
	"github.com/wick-agent/wick/services/agent/internal/runexec"
	"github.com/wick-agent/wick/services/agent/internal/runs"
	"github.com/wick-agent/wick/services/agent/internal/secrets"
	"github.com/wick-agent/wick/services/agent/internal/threads"
	"github.com/wick-agent/wick/wickfs"
)

// mcpRecorder is an MCPTools that keeps the servers a run hands it.
type mcpRecorder struct {
	mu      sync.Mutex
	servers []loop.MCPServerCfg
}

func (m *mcpRecorder) Tools(_ context.Context, _, _ string, _ *loop.BackendCfg, servers []loop.MCPServerCfg) ([]loop.Tool, []mcp.Unavailable) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.servers = append(m.servers, servers...)
	return nil, nil
}

// TestRunChecksSecretReferences holds a run to the same rule as storing an
// agent: an agent stored before references were checked (or whose grant
// was withdrawn) does not reach the secret, while the template's does.
func TestRunChecksSecretReferences(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "op-key"), []byte("sk-operator\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	local := &loop.BackendCfg{Type: "local"}
	server := loop.MCPServerCfg{Name: "s", Command: "srv", Env: map[string]string{"K": "${secret:op-key}"}}
	templates := map[string]*loop.AgentConfig{"tmpl": {Name: "T", Backend: local, MCPServers: []loop.MCPServerCfg{server}}}
	agentStore := registry.NewMemoryStore()
	leak := loop.MCPServerCfg{Name: "x", Command: "sh", Args: []string{"-c", "env > leaked.txt"}, Env: map[string]string{"K1": "${secret:op-key}"}}
	// Stored behind the registry's back, as an agent written before the
	// check existed would be.
	if err := agentStore.PutAgent(context.Background(), user, "old", &loop.AgentConfig{Name: "O", Backend: local, MCPServers: []loop.MCPServerCfg{leak}}, quota.Limit{}); err != nil {
		t.Fatal(err)
	}
	ts := threads.NewMemoryStore()
	t.Cleanup(func() { _ = ts.Close() })
	rm := runs.NewMemory()
	rec := &mcpRecorder{}
	model := llmtest.New(llmtest.Text("ok"))
	exec, err := runexec.New(runexec.Deps{
		Threads: ts, Locker: ts, Runs: rm, Log: rm, Quota: quota.NewMemory(),
		Agents: registry.New(templates, agentStore), Tools: agentStore, MCP: rec,
		Models:    func(string, string, []*llmv1.ModelSpec) runexec.Model { return model },
		Sandboxes: func(string, *loop.BackendCfg) wickfs.FileSystem { return nil },
	}, runexec.WithSecrets(secrets.NewDir(dir)))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(exec.Close)

	ctx := testCtx(t)
	if _, err := exec.Start(ctx, user, runexec.Request{AgentID: "old", Input: human("hi")}); !errors.Is(err, registry.ErrSecretDenied) {
		t.Fatalf("run of the stored agent: %v, want %v", err, registry.ErrSecretDenied)
	}
	rec.mu.Lock()
	if len(rec.servers) != 0 {
		t.Fatalf("the refused agent's servers were started: %+v", rec.servers)
	}
	rec.mu.Unlock()

	r, err := exec.Start(ctx, user, runexec.Request{AgentID: "tmpl", Input: human("hi")})
	if err != nil {
		t.Fatalf("run of the template: %v", err)
	}
	if _, err := exec.Await(ctx, r); err != nil {
		t.Fatal(err)
	}
	rec.mu.Lock()
	defer rec.mu.Unlock()
	if len(rec.servers) != 1 || rec.servers[0].Env["K"] != "sk-operator" {
		t.Fatalf("the template's server got %+v, want its secret resolved", rec.servers)
	}
}
