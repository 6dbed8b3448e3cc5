package e2e

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/wick-agent/wick/services/agent"
	"github.com/wick-agent/wick/wickserver/suite"
)

// mcpToken is the bearer token the HTTP MCP server requires.
const mcpToken = "tok-mcp-e2e-0123456789"

// buildMCPServer builds the agent's MCP test server (the official SDK's
// server, package mcptest).
func buildMCPServer(t *testing.T) string {
	return buildStatic(t, "mcp-test-server", "github.com/wick-agent/wick/services/agent/internal/mcp/mcptest/mcp-test-server")
}

// buildStatic builds a test program of this repository statically into a
// temporary directory, never a committed binary, and returns its path.
func buildStatic(t testing.TB, name, pkg string) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), name)
	cmd := exec.Command("go", "build", "-o", bin, pkg)
	cmd.Dir = ".."
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("build %s: %v\n%s", name, err, out)
	}
	return bin
}

// startMCPHTTP runs the test server over streamable HTTP on loopback and
// returns its endpoint.
func startMCPHTTP(t *testing.T, bin string) string {
	t.Helper()
	cmd := exec.Command(bin, "-listen", "127.0.0.1:0", "-token", mcpToken)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
	})
	line, err := bufio.NewReader(out).ReadString('\n')
	addr, ok := strings.CutPrefix(strings.TrimSpace(line), "listening on ")
	if err != nil || !ok {
		t.Fatalf("the MCP server printed %q, %v", line, err)
	}
	return "http://" + addr + "/mcp"
}

// allowLoopbackTools lets the agent's external tools, MCP servers over
// HTTP among them, reach loopback, where the test servers listen.
func allowLoopbackTools(c *suite.Config) {
	c.AgentOptions = append(c.AgentOptions, agent.WithToolNetworkAllow(netip.MustParsePrefix("127.0.0.0/8")))
}

// TestMCPTools: an agent lists the test server twice over stdio, run in
// its local sandbox through the process API, and once over streamable
// HTTP on loopback (allowed by -tool-allow-nets, with its bearer token
// from the agent's headers). The scripted model calls the servers' tools:
// results, a 10 MB result evicted, a call past its server's timeout, a
// server crashing (restarted once, then a tool error), a tool whose schema
// is not an object refused, and a tool added by a list change used by the
// next run. Every call is an ordinary tool card (on_tool_start/_end).
func TestMCPTools(t *testing.T) {
	t.Parallel()
	bin := buildMCPServer(t)
	httpURL := startMCPHTTP(t, bin)
	env := startWick(t, allowLoopbackTools)
	runMCPScenario(t, env, bin, httpURL, map[string]any{"type": "local"})
}

// TestMCPToolsDocker is TestMCPTools with the stdio servers inside a
// Docker sandbox (the static test server in the container's workspace,
// started by wick-daemon's process table).
func TestMCPToolsDocker(t *testing.T) {
	cli, image := dockerSetup(t)
	manager := "wick-e2e-" + randomHex(6)
	removeManaged(t, cli, manager)
	bin := buildMCPServer(t)
	httpURL := startMCPHTTP(t, bin)
	env := startWick(t, withDocker(image, manager), allowLoopbackTools)
	runMCPScenario(t, env, bin, httpURL, map[string]any{"type": "docker", "image": image})
}

// runMCPScenario creates alice's agent "mcp" on the sandbox backend and plays the
// scenario of TestMCPTools.
func runMCPScenario(t *testing.T, env *wickEnv, bin, httpURL string, sandbox map[string]any) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), runtimeDeadline)
	t.Cleanup(cancel)
	type obj = map[string]any
	turn := func(calls ...obj) obj { return obj{"tool_calls": calls} }
	tc := func(id, name string, args obj) obj { return obj{"id": id, "name": name, "arguments": args} }
	script, _ := json.Marshal([]obj{
		turn(tc("e1", "local__echo", obj{"text": "over stdio"}), tc("e2", "web__echo", obj{"text": "over http"}), tc("g1", "web__grow", obj{}), tc("s1", "web__bad_schema", obj{})),
		turn(tc("b1", "local__big", obj{"size": 10_000_000})),
		turn(tc("w1", "short__wait", obj{})),
		turn(tc("c1", "local__crash", obj{})),
		turn(tc("e3", "local__echo", obj{"text": "after the restart"})),
		turn(tc("c2", "local__crash", obj{})),
		turn(tc("e4", "local__echo", obj{"text": "too late"})),
		{"text": "First run done."},
		turn(tc("l1", "web__late", obj{})),
		{"text": "Second run done."},
	})
	// An upload is written without its executable bit, so the command
	// sets it before it replaces itself with the server.
	stdio := func(name string, timeout string) obj {
		s := obj{"name": name, "command": "/bin/sh", "args": []string{"-c", "chmod +x mcp-test-server && exec ./mcp-test-server"}, "env": obj{"MCP_SECRET": "s3cret-value"}}
		if timeout != "" {
			s["timeout"] = timeout
		}
		return s
	}
	agentDef := obj{
		"agent_id": "mcp", "model": "script:" + string(script), "backend": sandbox,
		"mcp_servers": []obj{
			stdio("local", ""), stdio("short", "1s"),
			// The bearer token is a mounted secret (testSecrets), named.
			{"name": "web", "url": httpURL, "headers": obj{"Authorization": "Bearer ${secret:mcp-token}"}},
		},
	}
	if r := call(t, "POST", env.url+"/agents", aliceToken, jsonBody(agentDef)); r.code != http.StatusOK {
		t.Fatalf("create agent mcp = %d %s", r.code, r)
	}

	// The agent as the API returns it: env values masked, the header that
	// names a secret as written.
	r := call(t, "GET", env.url+"/agents/mcp", aliceToken, nil)
	if r.code != http.StatusOK || bytes.Contains(r.body, []byte(mcpToken)) || bytes.Contains(r.body, []byte("s3cret-value")) ||
		!bytes.Contains(r.body, []byte(`"MCP_SECRET":"[REDACTED]"`)) || !bytes.Contains(r.body, []byte(`"Authorization":"Bearer ${secret:mcp-token}"`)) {
		t.Fatalf("GET /agents/mcp = %d %s", r.code, r)
	}

	data, err := os.ReadFile(bin)
	if err != nil {
		t.Fatal(err)
	}
	if r := call(t, "PUT", env.url+"/agents/mcp/files/raw/workspace/mcp-test-server", aliceToken, bytes.NewReader(data),
		"Content-Type", "application/octet-stream"); r.code != http.StatusOK {
		t.Fatalf("upload the MCP server = %d %s", r.code, r)
	}

	run := decodeRun(t, readEvents(t, openSSE(t, ctx, "POST", env.url+"/agents/mcp/stream", aliceToken, jsonBody(userMessage("use the MCP tools", nil))).Body))
	run.checkEnd(t, "completed")
	for _, name := range []string{"local__echo", "web__echo", "local__big", "short__wait", "local__crash"} {
		if run.find("on_tool_start", name) == nil || run.find("on_tool_end", name) == nil {
			t.Errorf("no tool card for %s: %v", name, run.names())
		}
	}
	msgs := threadMessages(t, env, run.threadID())
	result := func(id string) string {
		t.Helper()
		out, ok := toolResult(msgs, id)
		if !ok {
			t.Fatalf("no result for call %s", id)
		}
		return out
	}
	for _, c := range []struct{ id, want string }{
		{"e1", "echo: over stdio"},
		{"s1", `unknown tool "web__bad_schema"`},
		{"e2", "echo: over http"},
		{"g1", "added late"},
		{"w1", "did not answer wait within 1s"},
		{"c1", "it is started again on the next call"},
		{"e3", "echo: after the restart"},
		{"c2", "already restarted 1 time(s)"},
		{"e4", "its tools are unavailable"},
	} {
		if got := result(c.id); !strings.Contains(got, c.want) {
			t.Errorf("result of %s = %.300q, want it to say %q", c.id, got, c.want)
		}
	}
	// 10 MB capped to 1 Mi characters by the MCP tool, then evicted to
	// its head and tail by the filesystem hook, as any tool's output.
	if big := result("b1"); len(big) > 100_000 || !strings.HasPrefix(big, "BEGIN") || !strings.HasSuffix(big, "END") || !strings.Contains(big, "truncated") {
		t.Errorf("10 MB result kept as %d characters: %.100q … %.100q", len(big), big, big[max(0, len(big)-100):])
	}

	// The next run lists the tool the list change added.
	run2 := decodeRun(t, readEvents(t, openSSE(t, ctx, "POST", env.url+"/agents/mcp/stream", aliceToken,
		jsonBody(userMessage("use the new tool", map[string]any{"thread_id": run.threadID()}))).Body))
	run2.checkEnd(t, "completed")
	msgs = threadMessages(t, env, run.threadID())
	if got := result("l1"); got != "late tool answered" {
		t.Errorf("result of web__late = %q", got)
	}
}
