package e2e

import (
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/wick-agent/wick/services/agent"
	"github.com/wick-agent/wick/wickserver/suite"
)

// The operator's secret the attacks below go after, and the token of carol,
// a member of organisation acme, which is granted acme-key only.
const (
	operatorKey = "sk-operator-e2e-0123456789"
	carolToken  = "e2e-carol-token-0123456789"
	acmeKey     = "sk-acme-e2e-0123456789"
)

// TestUserAgentsCannotNameOperatorSecrets is the attack of a user who
// writes an agent whose MCP server or ACP agent dumps its environment, or
// sends a header to a URL of his choosing, with the operator's secret in
// it: refused when the agent is created, naming the reference, as a user
// and as an organisation member; the operator's template that names the
// same secret keeps working, and a grant lets its grantees use theirs.
func TestUserAgentsCannotNameOperatorSecrets(t *testing.T) {
	t.Parallel()
	local := map[string]any{"type": "local"}
	dump := func(file, ref string) map[string]any {
		return map[string]any{"name": "dump", "command": "/bin/sh", "args": []string{"-c", "env > " + file}, "env": map[string]any{"K1": ref}}
	}
	tmpl := &agent.AgentConfig{
		Name: "Template", Model: `script:[{"text":"ok"}]`, Backend: &agent.BackendCfg{Type: "local"},
		MCPServers: []agent.MCPServerCfg{{Name: "dump", Command: "/bin/sh", Args: []string{"-c", "env > tmpl-env.txt"}, Env: map[string]string{"K1": "${secret:operator-key}"}}},
	}
	env := startWick(t, func(c *suite.Config) {
		c.AgentOptions = append(c.AgentOptions, agent.WithTemplates(map[string]*agent.AgentConfig{"tmpl": tmpl}))
		c.Gateway.Tokens[carolToken] = "carol"
		c.Gateway.Orgs = map[string][]string{"carol": {"acme"}}
	})

	attacks := []struct {
		name, token string
		def         map[string]any
		ref         string
	}{
		{"mcp env", bobToken, map[string]any{"backend": local, "mcp_servers": []any{dump("leaked.txt", "${secret:operator-key}")}}, "${secret:operator-key}"},
		{"mcp env as an org member", carolToken, map[string]any{"backend": local, "mcp_servers": []any{dump("leaked.txt", "${secret:operator-key}")}}, "${secret:operator-key}"},
		{"mcp env, another org's secret", bobToken, map[string]any{"backend": local, "mcp_servers": []any{dump("leaked.txt", "${secret:acme-key}")}}, "${secret:acme-key}"},
		{"mcp header to the user's URL", bobToken, map[string]any{"mcp_servers": []any{map[string]any{"name": "h", "url": "https://example.com/mcp", "headers": map[string]any{"Authorization": "Bearer ${secret:operator-key}"}}}}, "${secret:operator-key}"},
		{"mcp header as an org member", carolToken, map[string]any{"mcp_servers": []any{map[string]any{"name": "h", "url": "https://example.com/mcp", "headers": map[string]any{"Authorization": "Bearer ${secret:operator-key}"}}}}, "${secret:operator-key}"},
		{"acp env", bobToken, map[string]any{"backend": local, "acp": map[string]any{"command": "/bin/sh", "args": []string{"-c", "env > leaked.txt"}, "env": map[string]any{"K1": "${secret:operator-key}"}}}, "${secret:operator-key}"},
		{"acp env as an org member", carolToken, map[string]any{"backend": local, "acp": map[string]any{"command": "/bin/sh", "env": map[string]any{"K1": "${secret:operator-key}"}}}, "${secret:operator-key}"},
		{"a template's id", bobToken, map[string]any{"agent_id": "tmpl", "backend": local, "mcp_servers": []any{dump("leaked.txt", "${secret:operator-key}")}}, "${secret:operator-key}"},
	}
	for _, a := range attacks {
		t.Run(a.name, func(t *testing.T) {
			def := map[string]any{"agent_id": "leak"}
			for k, v := range a.def {
				def[k] = v
			}
			r := call(t, "POST", env.url+"/agents", a.token, jsonBody(def))
			wantRefused(t, r, http.StatusForbidden, "PERMISSION_DENIED", a.ref)
			if g := call(t, "GET", env.url+"/agents/leak", a.token, nil); g.code != http.StatusNotFound {
				t.Fatalf("the refused agent exists: %d %s", g.code, g)
			}
		})
	}

	// A user's own value is his to give.
	own := map[string]any{"agent_id": "own", "backend": local, "model": `script:[{"text":"ok"}]`, "mcp_servers": []any{dump("own-env.txt", "my-own-value")}}
	if r := call(t, "POST", env.url+"/agents", bobToken, jsonBody(own)); r.code != http.StatusOK {
		t.Fatalf("create with an inline value = %d %s", r.code, r)
	}
	// So is a secret the operator granted to his organisation.
	granted := map[string]any{"agent_id": "granted", "backend": local, "model": `script:[{"text":"ok"}]`, "mcp_servers": []any{dump("granted-env.txt", "${secret:acme-key}")}}
	if r := call(t, "POST", env.url+"/agents", carolToken, jsonBody(granted)); r.code != http.StatusOK {
		t.Fatalf("create with a granted secret = %d %s", r.code, r)
	}
	if r := call(t, "POST", env.url+"/agents/granted/invoke", carolToken, jsonBody(userMessage("hi", nil))); r.code != http.StatusOK {
		t.Fatalf("run the granted agent = %d %s", r.code, r)
	}
	if got := workspaceFile(t, env, carolToken, "granted", "granted-env.txt"); !strings.Contains(got, "K1="+acmeKey) {
		t.Fatalf("the granted secret did not reach the server: %q", got)
	}

	// The operator's template names the secret and keeps working, also
	// after the user changed it where secrets are not involved.
	if r := call(t, "PATCH", env.url+"/agents/tmpl/hooks", bobToken, jsonBody(map[string]any{"hooks": map[string]any{"todolist": false}})); r.code != http.StatusOK {
		t.Fatalf("change the template's hooks = %d %s", r.code, r)
	}
	if r := call(t, "POST", env.url+"/agents/tmpl/invoke", bobToken, jsonBody(userMessage("hi", nil))); r.code != http.StatusOK {
		t.Fatalf("run the template = %d %s", r.code, r)
	}
	if got := workspaceFile(t, env, bobToken, "tmpl", "tmpl-env.txt"); !strings.Contains(got, "K1="+operatorKey) {
		t.Fatalf("the template's secret did not reach its server: %q", got)
	}
}

// workspaceFile reads a file the agent's sandbox wrote into its workspace,
// waiting for the process that writes it.
func workspaceFile(t *testing.T, env *wickEnv, token, agentID, name string) string {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		r := call(t, "GET", env.url+"/agents/"+agentID+"/files/raw/workspace/"+name, token, nil)
		if r.code == http.StatusOK && len(r.body) > 0 {
			return string(r.body)
		}
		if time.Now().After(deadline) {
			t.Fatalf("GET %s of %s = %d %s", name, agentID, r.code, r)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// writeGrants writes the suites' secret grants: alice may name the
// secrets the MCP and ACP tests give their agents, and acme's members
// acme-key; nobody may name operator-key.
func writeGrants(t testing.TB) string {
	p := filepath.Join(t.TempDir(), "grants.yaml")
	grants := "mcp-token: {users: [alice]}\nacp-key: {users: [alice]}\nnope: {users: [alice]}\nacme-key: {orgs: [acme]}\n"
	if err := os.WriteFile(p, []byte(grants), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}
