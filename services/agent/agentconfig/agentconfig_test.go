package agentconfig_test

import (
	"encoding/json"
	"testing"
	"time"

	"gopkg.in/yaml.v3"

	"github.com/wick-agent/wick/services/agent/agentconfig"
)

func TestAgentConfigYAML(t *testing.T) {
	t.Parallel()
	src := `
name: code-assistant
model: claude-sonnet-4-20250514
system_prompt: "You are a coding assistant."
context_window: 128000
max_turns: 40
approval: interactive
backend:
  type: docker
  image: python:3.12-slim
  workdir: /workspace
  timeout: 90s
  max_output_bytes: 65536
skills:
  paths:
    - /workspace/skills
memory:
  paths:
    - /workspace/AGENTS.md
hooks:
  tracing: false
`
	var cfg agentconfig.AgentConfig
	if err := yaml.Unmarshal([]byte(src), &cfg); err != nil {
		t.Fatal(err)
	}
	if cfg.Model != "claude-sonnet-4-20250514" || cfg.ContextWindow != 128000 || cfg.MaxTurns != 40 || cfg.Approval != agentconfig.ApprovalInteractive {
		t.Fatalf("config %+v", cfg)
	}
	if cfg.Backend.Type != "docker" || cfg.Backend.Timeout != 90*time.Second || cfg.Backend.MaxOutputBytes != 65536 {
		t.Fatalf("backend %+v", cfg.Backend)
	}
	if cfg.Skills.Paths[0] != "/workspace/skills" || cfg.Memory.Paths[0] != "/workspace/AGENTS.md" {
		t.Fatal("paths")
	}
	if cfg.HookEnabled("tracing") || !cfg.HookEnabled("memory") {
		t.Fatal("hook toggles")
	}
	var nilCfg *agentconfig.AgentConfig
	if !nilCfg.HookEnabled("tracing") {
		t.Fatal("nil config disables hooks")
	}

	var obj agentconfig.AgentConfig
	if err := yaml.Unmarshal([]byte("model:\n  provider: openai\n  model: gpt-4o\n"), &obj); err != nil {
		t.Fatal(err)
	}
	if m, ok := obj.Model.(map[string]any); !ok || m["provider"] != "openai" {
		t.Fatalf("object model %#v", obj.Model)
	}
}

// TestAgentConfigTags decodes the sections a program most often builds in
// Go (MCP servers, sub-agents, ACP) from YAML and JSON: both spellings of
// an agent must reach the same fields.
func TestAgentConfigTags(t *testing.T) {
	t.Parallel()
	want := agentconfig.AgentConfig{
		Backend: &agentconfig.BackendCfg{Type: "docker", Network: "bridge"},
		Subagents: []agentconfig.SubagentCfg{{
			Name: "reviewer", Description: "Reviews a diff", Prompt: "Review.", Model: "gpt-4o-mini",
			Tools: []string{"read_file"}, Timeout: 2 * time.Minute,
		}},
		MCPServers: []agentconfig.MCPServerCfg{
			{Name: "files", Command: "./mcp-files", Args: []string{"-v"}, Env: map[string]string{"LEVEL": "1"}},
			{Name: "tickets", URL: "https://mcp.example.com/mcp", Headers: map[string]string{"Authorization": "Bearer x"}, Timeout: 30 * time.Second},
		},
		ACP: &agentconfig.ACPCfg{Command: "claude-code-acp", Env: map[string]string{"ANTHROPIC_API_KEY": "${secret:anthropic-key}"}, StateDir: "/workspace/.wick/acp/coder"},
	}
	tests := []struct {
		name   string
		decode func([]byte, any) error
		src    string
	}{
		{"yaml", yaml.Unmarshal, `
backend: {type: docker, network: bridge}
subagents:
  - {name: reviewer, description: Reviews a diff, prompt: Review., model: gpt-4o-mini, tools: [read_file], timeout: 2m}
mcp_servers:
  - {name: files, command: ./mcp-files, args: [-v], env: {LEVEL: "1"}}
  - {name: tickets, url: "https://mcp.example.com/mcp", headers: {Authorization: Bearer x}, timeout: 30s}
acp: {command: claude-code-acp, env: {ANTHROPIC_API_KEY: "${secret:anthropic-key}"}, state_dir: /workspace/.wick/acp/coder}
`},
		// JSON carries durations in nanoseconds, as encoding/json writes them.
		{"json", json.Unmarshal, `{
"backend": {"type": "docker", "network": "bridge"},
"subagents": [{"name": "reviewer", "description": "Reviews a diff", "prompt": "Review.", "model": "gpt-4o-mini", "tools": ["read_file"], "timeout": 120000000000}],
"mcp_servers": [
  {"name": "files", "command": "./mcp-files", "args": ["-v"], "env": {"LEVEL": "1"}},
  {"name": "tickets", "url": "https://mcp.example.com/mcp", "headers": {"Authorization": "Bearer x"}, "timeout": 30000000000}],
"acp": {"command": "claude-code-acp", "env": {"ANTHROPIC_API_KEY": "${secret:anthropic-key}"}, "state_dir": "/workspace/.wick/acp/coder"}
}`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			var got agentconfig.AgentConfig
			if err := tc.decode([]byte(tc.src), &got); err != nil {
				t.Fatal(err)
			}
			g, _ := json.Marshal(got)
			w, _ := json.Marshal(want)
			if string(g) != string(w) {
				t.Fatalf("decoded\n%s\nwant\n%s", g, w)
			}
		})
	}
}

// TestSandboxBackend: the model endpoint is on for an agent backed by ACP
// unless its backend turns it off, off for Wick's own loop unless turned on.
func TestSandboxBackend(t *testing.T) {
	t.Parallel()
	on, off := true, false
	acp := &agentconfig.ACPCfg{Command: "claude-code-acp"}
	for _, tc := range []struct {
		name string
		cfg  *agentconfig.AgentConfig
		want *bool
	}{
		{"no config", nil, nil},
		{"no backend", &agentconfig.AgentConfig{ACP: acp}, nil},
		{"loop, unset", &agentconfig.AgentConfig{Backend: &agentconfig.BackendCfg{}}, &off},
		{"loop, on", &agentconfig.AgentConfig{Backend: &agentconfig.BackendCfg{ModelEndpoint: &on}}, &on},
		{"acp, unset", &agentconfig.AgentConfig{ACP: acp, Backend: &agentconfig.BackendCfg{Image: "img"}}, &on},
		{"acp on a remote engine, unset", &agentconfig.AgentConfig{ACP: acp, Backend: &agentconfig.BackendCfg{SandboxURL: "tcp://e:2376"}}, &off},
		{"acp, off", &agentconfig.AgentConfig{ACP: acp, Backend: &agentconfig.BackendCfg{ModelEndpoint: &off}}, &off},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := tc.cfg.SandboxBackend()
			if tc.want == nil {
				if b != nil {
					t.Fatalf("backend %+v, want none", b)
				}
				return
			}
			if b == nil || b.ModelEndpoint == nil || *b.ModelEndpoint != *tc.want {
				t.Fatalf("backend %+v, want model endpoint %v", b, *tc.want)
			}
			if tc.cfg.Backend.ModelEndpoint == nil && b == tc.cfg.Backend {
				t.Fatal("the default was written into the agent's own config")
			}
		})
	}
}
