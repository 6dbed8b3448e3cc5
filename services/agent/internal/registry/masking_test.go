package registry

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/wick-agent/wick/services/agent/internal/loop"
	"github.com/wick-agent/wick/services/agent/internal/redact"
	"github.com/wick-agent/wick/services/agent/internal/secrets"
)

func TestMasked(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name, value string
		masked      bool
	}{
		{"ANTHROPIC_BASE_URL", "http://127.0.0.1:8080/", false},
		{"LOG_LEVEL", "debug", false},
		{"X-Trace", "on", false},
		{"ANTHROPIC_API_KEY", "plain", true},
		{"anthropic_auth_token", "plain", true},
		{"GITHUB_TOKEN", "plain", true},
		{"CLIENT_SECRET", "plain", true},
		{"DB_PASSWORD", "plain", true},
		{"MY_PASSWD", "plain", true},
		{"GOOGLE_APPLICATION_CREDENTIALS", "/x.json", true},
		{"SESSION_ID", "plain", true},
		{"PRIVATE_PEM", "plain", true},
		{"Authorization", "Bearer abc", true},
		{"Proxy-Authorization", "Basic abc", true},
		{"Cookie", "a=b", true},
		{"X-Api-Key", "abc", true},
		// A value shaped like a key is one, whatever its name.
		{"EXTRA", "sk-ant-0123456789abcdefghij", true},
		// References hold no key.
		{"ANTHROPIC_API_KEY", "${secret:anthropic-key}", false},
		{"Authorization", "Bearer ${secret:web-token}", false},
		// Nothing to hide.
		{"API_KEY", "", false},
	}
	for _, tc := range cases {
		t.Run(tc.name+"="+tc.value, func(t *testing.T) {
			t.Parallel()
			got := Masked(map[string]string{tc.name: tc.value})[tc.name]
			want := tc.value
			if tc.masked {
				want = redact.Mask
			}
			if got != want {
				t.Fatalf("%s=%q shown as %q, want %q", tc.name, tc.value, got, want)
			}
		})
	}
	if Masked(nil) != nil {
		t.Fatal("Masked(nil) is not nil")
	}
}

// shown is cfg as the API shows it: its env and header values masked.
func shown(cfg *loop.AgentConfig) *loop.AgentConfig {
	c := Clone(cfg)
	if c.ACP != nil {
		c.ACP.Env = Masked(c.ACP.Env)
	}
	for i := range c.MCPServers {
		c.MCPServers[i].Env = Masked(c.MCPServers[i].Env)
		c.MCPServers[i].Headers = Masked(c.MCPServers[i].Headers)
	}
	return c
}

// TestReplaceKeepsMasked: an agent read back and written whole keeps the
// values the API masked, where the entry that holds each still runs the
// same program or reaches the same endpoint; elsewhere a masked value is
// refused, naming it, and nothing is stored.
func TestReplaceKeepsMasked(t *testing.T) {
	t.Parallel()
	const apiKey = "sk-ant-inline0123456789abcdef"
	stored := func() *loop.AgentConfig {
		return &loop.AgentConfig{
			Name: "coder", Backend: &loop.BackendCfg{Type: "local"},
			ACP: &loop.ACPCfg{Command: "claude-code-acp", Args: []string{"--verbose"}, Env: map[string]string{
				"ANTHROPIC_API_KEY": apiKey, "ANTHROPIC_BASE_URL": "http://127.0.0.1:1/", "MOUNTED": "${secret:mounted}",
			}},
			MCPServers: []loop.MCPServerCfg{
				{Name: "files", Command: "./mcp-files", Env: map[string]string{"FILES_TOKEN": "t0k-files", "ROOT": "/workspace"}},
				{Name: "web", URL: "https://mcp.example.com/", Headers: map[string]string{"Authorization": "Bearer web-secret", "X-Trace": "on"}},
			},
		}
	}
	cases := []struct {
		name string
		// edit changes the agent as read back before it is sent.
		edit func(*loop.AgentConfig)
		// want checks what was stored; refused names the key of an error.
		want    func(*testing.T, *loop.AgentConfig)
		refused string
	}{
		{"unchanged", func(*loop.AgentConfig) {}, func(t *testing.T, c *loop.AgentConfig) {
			if !sameConfig(c, stored()) {
				t.Fatalf("stored %+v, want the original", c)
			}
		}, ""},
		{"shown value changed, masked kept", func(c *loop.AgentConfig) {
			c.ACP.Env["ANTHROPIC_BASE_URL"] = "http://127.0.0.1:2/"
			c.MCPServers[1].Headers["X-Trace"] = "off"
		}, func(t *testing.T, c *loop.AgentConfig) {
			if c.ACP.Env["ANTHROPIC_API_KEY"] != apiKey || c.ACP.Env["ANTHROPIC_BASE_URL"] != "http://127.0.0.1:2/" ||
				c.MCPServers[1].Headers["Authorization"] != "Bearer web-secret" || c.MCPServers[1].Headers["X-Trace"] != "off" {
				t.Fatalf("stored %+v %+v", c.ACP.Env, c.MCPServers[1].Headers)
			}
		}, ""},
		{"servers reordered, the rest changed", func(c *loop.AgentConfig) {
			c.MCPServers[0], c.MCPServers[1] = c.MCPServers[1], c.MCPServers[0]
			c.SystemPrompt = "be brief"
		}, func(t *testing.T, c *loop.AgentConfig) {
			if c.MCPServers[0].Headers["Authorization"] != "Bearer web-secret" || c.MCPServers[1].Env["FILES_TOKEN"] != "t0k-files" || c.SystemPrompt != "be brief" {
				t.Fatalf("stored %+v", c.MCPServers)
			}
		}, ""},
		{"a masked value replaced by a real one", func(c *loop.AgentConfig) { c.ACP.Env["ANTHROPIC_API_KEY"] = "sk-ant-new0123456789abcdefgh" },
			func(t *testing.T, c *loop.AgentConfig) {
				if c.ACP.Env["ANTHROPIC_API_KEY"] != "sk-ant-new0123456789abcdefgh" {
					t.Fatalf("stored %+v", c.ACP.Env)
				}
			}, ""},
		{"a masked key removed", func(c *loop.AgentConfig) { delete(c.MCPServers[0].Env, "FILES_TOKEN") },
			func(t *testing.T, c *loop.AgentConfig) {
				if _, ok := c.MCPServers[0].Env["FILES_TOKEN"]; ok {
					t.Fatalf("stored %+v", c.MCPServers[0].Env)
				}
			}, ""},
		{"acp command changed", func(c *loop.AgentConfig) { c.ACP.Command = "sh" }, nil, "ANTHROPIC_API_KEY"},
		{"acp args changed", func(c *loop.AgentConfig) { c.ACP.Args = []string{"-c", "env"} }, nil, "ANTHROPIC_API_KEY"},
		{"mcp command changed", func(c *loop.AgentConfig) { c.MCPServers[0].Args = []string{"--dump-env"} }, nil, "FILES_TOKEN"},
		{"mcp url changed", func(c *loop.AgentConfig) { c.MCPServers[1].URL = "https://evil.example/" }, nil, "Authorization"},
		{"mcp server renamed", func(c *loop.AgentConfig) { c.MCPServers[1].Name = "web2" }, nil, "Authorization"},
		{"a masked value under a new key", func(c *loop.AgentConfig) { c.ACP.Env["OTHER_KEY"] = redact.Mask }, nil, "OTHER_KEY"},
		{"a value moved to another key", func(c *loop.AgentConfig) {
			c.ACP.Env["MOVED_KEY"] = c.ACP.Env["ANTHROPIC_API_KEY"]
			delete(c.ACP.Env, "ANTHROPIC_API_KEY")
		}, nil, "MOVED_KEY"},
	}
	grants, err := secrets.NewGrants(map[string]secrets.Grant{"mounted": {Users: []string{"alice"}}})
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			r := New(nil, NewMemoryStore(), WithSecretGrants(grants))
			if _, err := r.Create(ctx, "alice", "coder", stored()); err != nil {
				t.Fatal(err)
			}
			e, err := r.Get(ctx, "alice", "coder")
			if err != nil {
				t.Fatal(err)
			}
			next := shown(e.Config)
			tc.edit(next)
			_, err = r.Replace(ctx, "alice", "coder", next)
			got, gerr := r.Get(ctx, "alice", "coder")
			if gerr != nil {
				t.Fatal(gerr)
			}
			if tc.refused != "" {
				if !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), `"`+tc.refused+`"`) {
					t.Fatalf("Replace = %v, want %v naming %q", err, ErrInvalid, tc.refused)
				}
				if !sameConfig(got.Config, stored()) {
					t.Fatalf("the refused change was stored: %+v", got.Config)
				}
				return
			}
			if err != nil {
				t.Fatalf("Replace = %v", err)
			}
			tc.want(t, got.Config)
		})
	}
}

// TestMaskedOnCreateAndTemplates: with nothing stored, a masked value is
// refused naming it; a template read back and written by a user keeps the
// template's values in the user's copy.
func TestMaskedOnCreateAndTemplates(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	tmpl := &loop.AgentConfig{Name: "T", Backend: &loop.BackendCfg{Type: "local"},
		ACP: &loop.ACPCfg{Command: "agent", Env: map[string]string{"AGENT_TOKEN": "operator-inline", "MODE": "fast"}}}
	r := New(map[string]*loop.AgentConfig{"tmpl": tmpl}, NewMemoryStore())

	_, err := r.Create(ctx, "bob", "fresh", shown(tmpl))
	if !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), `"AGENT_TOKEN"`) {
		t.Fatalf("Create with a masked value = %v, want %v naming AGENT_TOKEN", err, ErrInvalid)
	}
	if _, err := r.Get(ctx, "bob", "fresh"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("the refused agent was stored: %v", err)
	}

	e, err := r.Get(ctx, "bob", "tmpl")
	if err != nil {
		t.Fatal(err)
	}
	next := shown(e.Config)
	next.ACP.Env["MODE"] = "slow"
	if _, err := r.Replace(ctx, "bob", "tmpl", next); err != nil {
		t.Fatal(err)
	}
	got, err := r.Get(ctx, "bob", "tmpl")
	if err != nil || got.Template || got.Config.ACP.Env["AGENT_TOKEN"] != "operator-inline" || got.Config.ACP.Env["MODE"] != "slow" {
		t.Fatalf("bob's copy = %+v, %v", got, err)
	}
}
