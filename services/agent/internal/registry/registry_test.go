package registry

import (
	"context"
	"errors"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/wick-agent/wick/platform/testenv"
	"github.com/wick-agent/wick/services/agent/internal/loop"
	"github.com/wick-agent/wick/services/agent/internal/quota"
	"github.com/wick-agent/wick/services/agent/internal/tools"
)

func TestParseAgentsFile(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name, yaml string
		want       []string
		err        string
	}{
		{"single agent at the top level", `
name: code-assistant
model: claude-sonnet-4-20250514
system_prompt: "You are a coding assistant."
context_window: 128000
backend:
  type: docker
  image: python:3.12-slim
  workdir: /workspace
  timeout: 2m
skills:
  paths: [/workspace/skills]
memory:
  paths: [/workspace/AGENTS.md]
`, []string{"default"}, ""},
		{"single with id", "id: coder\nname: C\n", []string{"coder"}, ""},
		{"map of agents", `
agents:
  default:
    name: D
    model: ["ollama:llama3.1:8b", {provider: openai, model: gpt-4o, api_key_env: OPENAI_API_KEY}]
    tools: [calculate, ask_user, discard_steps]
    approval: interactive
    tool_wait: majority
    hooks: {summarization: false}
  other:
    name: O
`, []string{"default", "other"}, ""},
		{"empty file", "", nil, ""},
		{"unknown key", "name: x\nmodle: y\n", nil, "modle"},
		{"bad id", "agents:\n  'a b': {name: x}\n", nil, "agent_id"},
		{"bad backend", "backend: {type: vm}\n", nil, "backend.type"},
		{"bad approval", "approval: maybe\n", nil, "approval"},
		{"bad tool_wait", "tool_wait: first\n", nil, "tool_wait"},
		{"unknown hook", "hooks: {magic: true}\n", nil, "magic"},
		{"secret in model", "model: {provider: openai, model: gpt-4o, api_key: sk-x}\n", nil, "api_key"},
		{"bad tool name", "tools: ['rm -rf']\n", nil, "tools[0]"},
		{"too many turns", "max_turns: 100000\n", nil, "max_turns"},
		{"subagents", `
tools: [task]
subagents:
  - name: researcher
    description: finds things out
    prompt: You research.
    model: script:demo
    tools: [datetime]
    timeout: 2m
`, []string{"default"}, ""},
		{"subagent without description", "subagents: [{name: r}]\n", nil, "subagents[0].description"},
		{"subagent named general-purpose", "subagents: [{name: general-purpose, description: x}]\n", nil, "general-purpose"},
		{"subagent twice", "subagents: [{name: r, description: x}, {name: r, description: y}]\n", nil, "subagents[1].name"},
		{"subagent unknown key", "subagents: [{name: r, description: x, tool: [a]}]\n", nil, "tool"},
		{"subagent bad model", "subagents: [{name: r, description: x, model: {provider: openai, model: m, api_key: sk-x}}]\n", nil, "subagents[0].model"},
		{"a2a subagent", "subagents: [{name: far, description: x, timeout: 1m, a2a: {url: 'https://h/a2a/agents/x', token: '${secret:far_token}'}}]\n", []string{"default"}, ""},
		{"a2a subagent with prompt", "subagents: [{name: far, description: x, prompt: p, a2a: {url: 'https://h/a'}}]\n", nil, "remove prompt, model and tools, or a2a"},
		{"a2a bad url", "subagents: [{name: far, description: x, a2a: {url: 'ftp://h/a'}}]\n", nil, "subagents[0].a2a.url"},
		{"a2a url with credentials", "subagents: [{name: far, description: x, a2a: {url: 'https://u:p@h/a'}}]\n", nil, "must not carry credentials"},
		{"a2a masked token", "subagents: [{name: far, description: x, a2a: {url: 'https://h/a', token: '[REDACTED]'}}]\n", nil, "give the real value"},
		{"mcp servers", `
backend: {type: local}
mcp_servers:
  - name: files
    command: ./mcp-server
    args: [--root, /workspace]
    env: {LOG_LEVEL: debug}
  - name: remote
    url: https://mcp.example.com/mcp
    headers: {Authorization: Bearer abc}
    timeout: 90s
`, []string{"default"}, ""},
		{"mcp server with neither", "mcp_servers: [{name: s}]\n", nil, "mcp_servers[0] (s) needs exactly one of command"},
		{"mcp server with both", "backend: {type: local}\nmcp_servers: [{name: s, command: x, url: 'http://h/'}]\n", nil, "exactly one of command"},
		{"mcp stdio without backend", "mcp_servers: [{name: s, command: x}]\n", nil, "needs a sandbox"},
		{"mcp bad name", "mcp_servers: [{name: 'a__b', url: 'http://h/'}]\n", nil, "mcp_servers[0].name"},
		{"mcp long name", "mcp_servers: [{name: abcdefghijklmnopqrstuvwxyz, url: 'http://h/'}]\n", nil, "mcp_servers[0].name"},
		{"mcp twice", "mcp_servers: [{name: s, url: 'http://h/'}, {name: s, url: 'http://i/'}]\n", nil, "listed twice"},
		{"mcp bad url", "mcp_servers: [{name: s, url: 'ftp://h/'}]\n", nil, "mcp_servers[0].url"},
		{"mcp url with credentials", "mcp_servers: [{name: s, url: 'https://u:p@h/'}]\n", nil, "credentials"},
		{"mcp bad header", "mcp_servers: [{name: s, url: 'http://h/', headers: {'a b': c}}]\n", nil, "mcp_servers[0].headers"},
		{"mcp masked header", "mcp_servers: [{name: s, url: 'http://h/', headers: {Authorization: '[REDACTED]'}}]\n", nil, "give the real value"},
		{"mcp bad env", "backend: {type: local}\nmcp_servers: [{name: s, command: x, env: {'1X': y}}]\n", nil, "mcp_servers[0].env"},
		{"mcp args with url", "mcp_servers: [{name: s, url: 'http://h/', args: [a]}]\n", nil, "args and env go with command"},
		{"mcp long timeout", "mcp_servers: [{name: s, url: 'http://h/', timeout: 11m}]\n", nil, "mcp_servers[0].timeout"},
		{"mcp unknown key", "mcp_servers: [{name: s, url: 'http://h/', header: {a: b}}]\n", nil, "header"},
		{"acp agent", `
backend: {type: docker}
approval: interactive
acp: {command: npx, args: [claude-code-acp], env: {ANTHROPIC_API_KEY: sk-ant-x}, state_dir: /workspace/.claude-home}
mcp_servers: [{name: files, command: ./mcp-server}]
`, []string{"default"}, ""},
		{"acp without command", "backend: {type: local}\nacp: {args: [x]}\n", nil, "acp.command is required"},
		{"acp without backend", "acp: {command: x}\n", nil, "acp runs a command, which needs a sandbox"},
		{"acp with model", "backend: {type: local}\nmodel: openai:gpt-4o\nacp: {command: x}\n", nil, "model: an agent backed by acp"},
		{"acp with tools", "backend: {type: local}\ntools: [execute]\nacp: {command: x}\n", nil, "tools: an agent backed by acp"},
		{"acp with subagents", "backend: {type: local}\nsubagents: [{name: r, description: x}]\nacp: {command: x}\n", nil, "subagents: an agent backed by acp"},
		{"acp state dir outside", "backend: {type: local}\nacp: {command: x, state_dir: /tmp/x}\n", nil, "acp.state_dir"},
		{"acp state dir not clean", "backend: {type: local}\nacp: {command: x, state_dir: /workspace/../x}\n", nil, "acp.state_dir"},
		{"acp masked env", "backend: {type: local}\nacp: {command: x, env: {KEY: '[REDACTED]'}}\n", nil, "give the real value"},
		{"acp bad env", "backend: {type: local}\nacp: {command: x, env: {'1X': y}}\n", nil, "acp.env"},
		{"acp unknown key", "backend: {type: local}\nacp: {command: x, cmd: y}\n", nil, "cmd"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			got, err := Parse([]byte(tc.yaml))
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("err = %v, want one naming %q", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if len(got) != len(tc.want) {
				t.Fatalf("agents = %v, want %v", got, tc.want)
			}
			for _, id := range tc.want {
				if got[id] == nil {
					t.Fatalf("agent %s missing", id)
				}
			}
		})
	}
	got, _ := Parse([]byte("backend: {type: docker, timeout: 2m}\nmodel: [a, {model: b}]\ntool_wait: any\n"))
	if got["default"].Backend.Timeout != 2*time.Minute || got["default"].ToolWait != "any" {
		t.Fatalf("timeout = %v", got["default"].Backend.Timeout)
	}
	specs, err := ModelSpecs(got["default"].Model, "")
	if err != nil || len(specs) != 2 || specs[0].GetSpec() != "a" || specs[1].GetModel() != "b" {
		t.Fatalf("specs = %v, %v", specs, err)
	}
}

func TestLoadFile(t *testing.T) {
	t.Parallel()
	p := filepath.Join(t.TempDir(), "agents.yaml")
	if err := os.WriteFile(p, []byte("name: x\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if got, err := LoadFile(p); err != nil || got["default"].Name != "x" {
		t.Fatalf("LoadFile = %v, %v", got, err)
	}
	if _, err := LoadFile(filepath.Join(t.TempDir(), "missing.yaml")); err == nil {
		t.Fatal("missing file accepted")
	}
}

func TestModelSpecsDefault(t *testing.T) {
	t.Parallel()
	specs, err := ModelSpecs(nil, "script:demo")
	if err != nil || len(specs) != 1 || specs[0].GetSpec() != "script:demo" {
		t.Fatalf("default = %v, %v", specs, err)
	}
	if _, err := ModelSpecs([]any{[]any{"a"}}, ""); err == nil {
		t.Fatal("nested list accepted")
	}
}

func stores(t *testing.T) map[string]Store {
	rdb := redis.NewClient(&redis.Options{Addr: testenv.Redis(t)})
	t.Cleanup(func() { rdb.Close() })
	return map[string]Store{"memory": NewMemoryStore(), "redis": NewRedisStore(rdb, "")}
}

func TestRegistryTemplatesAndClones(t *testing.T) {
	t.Parallel()
	for name, st := range stores(t) {
		t.Run(name, func(t *testing.T) {
			ctx := context.Background()
			r := New(map[string]*loop.AgentConfig{"default": {Name: "T", Tools: []string{"calculate"}}}, st)
			e, err := r.Get(ctx, "alice", "default")
			if err != nil || !e.Template || e.Config.Name != "T" {
				t.Fatalf("Get = %+v, %v", e, err)
			}
			e.Config.Name = "mutated" // a copy: the template is untouched
			if e, _ := r.Get(ctx, "bob", "default"); e.Config.Name != "T" {
				t.Fatal("template shared memory with a caller")
			}
			if _, err := r.Update(ctx, "alice", "default", func(c *loop.AgentConfig) error { c.Name = "Alice's"; return nil }); err != nil {
				t.Fatal(err)
			}
			if e, _ := r.Get(ctx, "alice", "default"); e.Template || e.Config.Name != "Alice's" {
				t.Fatalf("alice's clone = %+v", e)
			}
			if e, _ := r.Get(ctx, "bob", "default"); !e.Template || e.Config.Name != "T" {
				t.Fatalf("bob's = %+v", e)
			}
			if _, err := r.Create(ctx, "alice", "default", &loop.AgentConfig{}); !errors.Is(err, ErrExists) {
				t.Fatalf("Create over template = %v", err)
			}
			if _, err := r.Create(ctx, "alice", "mine", &loop.AgentConfig{Name: "M"}); err != nil {
				t.Fatal(err)
			}
			list, _ := r.List(ctx, "alice")
			if len(list) != 2 || list[0].ID != "default" || list[1].ID != "mine" {
				t.Fatalf("List = %+v", list)
			}
			if list, _ := r.List(ctx, "bob"); len(list) != 1 {
				t.Fatalf("bob's List = %+v", list)
			}
			if err := r.Delete(ctx, "alice", "default"); err != nil {
				t.Fatal(err)
			}
			if err := r.Delete(ctx, "alice", "default"); !errors.Is(err, ErrTemplate) {
				t.Fatalf("delete template = %v", err)
			}
			if err := r.Delete(ctx, "alice", "ghost"); !errors.Is(err, ErrNotFound) {
				t.Fatalf("delete missing = %v", err)
			}
			// Tools.
			def := &tools.HTTPToolDef{Name: "b", URL: "https://x", Headers: map[string]string{"K": "v"}}
			st.PutTool(ctx, "alice", def, quota.Limit{})
			st.PutTool(ctx, "alice", &tools.HTTPToolDef{Name: "a", URL: "https://y"}, quota.Limit{})
			ts, _ := st.ListTools(ctx, "alice")
			if len(ts) != 2 || ts[0].Name != "a" {
				t.Fatalf("ListTools = %+v", ts)
			}
			if got, err := st.GetTool(ctx, "alice", "b"); err != nil || got.Headers["K"] != "v" {
				t.Fatalf("GetTool = %+v, %v", got, err)
			}
			if _, err := st.GetTool(ctx, "bob", "b"); !errors.Is(err, ErrNotFound) {
				t.Fatalf("bob's GetTool = %v", err)
			}
		})
	}
}

func TestHubDropsSlowWatcher(t *testing.T) {
	t.Parallel()
	h := NewHub(nil, "", 4, slog.New(slog.DiscardHandler))
	slow, cancelSlow := h.Subscribe("u")
	defer cancelSlow()
	fast, cancelFast := h.Subscribe("u")
	defer cancelFast()
	other, cancelOther := h.Subscribe("v")
	defer cancelOther()
	for i := range 10 {
		h.Publish(context.Background(), ConfigEvent{User: "u", Event: EventAgentUpdated, Name: string(rune('a' + i))})
		<-fast.C // the fast watcher keeps up
	}
	select {
	case <-slow.Done():
		if !errors.Is(slow.Err(), ErrSlowWatcher) {
			t.Fatalf("slow watcher ended with %v", slow.Err())
		}
	default:
		t.Fatal("slow watcher was not dropped")
	}
	select {
	case ev := <-other.C:
		t.Fatalf("another user's watcher got %v", ev)
	default:
	}
	h.Publish(context.Background(), ConfigEvent{Event: "template_changed"}) // to everyone
	if ev := <-other.C; ev.Event != "template_changed" {
		t.Fatalf("broadcast = %v", ev)
	}
}

func TestHubAcrossReplicas(t *testing.T) {
	t.Parallel()
	addr := testenv.Redis(t)
	mk := func() *Hub {
		rdb := redis.NewClient(&redis.Options{Addr: addr})
		t.Cleanup(func() { rdb.Close() })
		h := NewHub(rdb, "", 0, slog.New(slog.DiscardHandler))
		ctx, cancel := context.WithCancel(context.Background())
		t.Cleanup(cancel)
		if err := h.Start(ctx); err != nil {
			t.Fatal(err)
		}
		return h
	}
	a, b := mk(), mk()
	sub, cancel := b.Subscribe("u")
	defer cancel()
	a.Publish(context.Background(), ConfigEvent{User: "u", Event: EventToolRegistered, Name: "t", Data: map[string]any{"x": 1.0}})
	select {
	case ev := <-sub.C:
		if ev.Name != "t" || ev.Data.(map[string]any)["x"] != 1.0 {
			t.Fatalf("event = %+v", ev)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("event did not cross replicas")
	}
}

func TestReservedIDsRefused(t *testing.T) {
	t.Parallel()
	reg := New(nil, NewMemoryStore())
	for _, id := range ReservedIDs {
		t.Run(id, func(t *testing.T) {
			t.Parallel()
			_, err := reg.Create(context.Background(), "u", id, &loop.AgentConfig{Name: id})
			if !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), "reserved") {
				t.Fatalf("Create(%q) = %v, want ErrInvalid saying the id is reserved", id, err)
			}
		})
	}
	// A name that only starts like one is an ordinary id.
	if _, err := reg.Create(context.Background(), "u", "tools-helper", &loop.AgentConfig{Name: "x"}); err != nil {
		t.Fatalf("Create(tools-helper) = %v", err)
	}
}
