package sandbox

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/wick-agent/wick/platform/backend"
	"github.com/wick-agent/wick/platform/testenv"
)

// ClaudeCodeImage is the runtime image with the ACP adapters of
// deploy/acp-agents (deploy/images/acp-agents.sh).
const claudeCodeImage = "wick-sandbox-claude-code:latest"

// requireImage returns img when the engine has it, once a background build
// of scripts/test-deps.sh has ended; the test is skipped without it, and
// fails in CI, where test-deps builds it.
func requireImage(t *testing.T, img, builder string) string {
	t.Helper()
	return testenv.Image(t, img, builder)
}

// TestRuntimeImage runs what people use the runtime image for in a sandbox
// as the service makes it: no network, the image's own user.
func TestRuntimeImage(t *testing.T) {
	t.Parallel()
	img := requireImage(t, backend.DefaultImage, "make image-runtime")
	h := newHarness(t, func(c *Config) { c.DefaultImage = img })
	ctx, cancel := context.WithTimeout(as("alice"), 3*time.Minute)
	t.Cleanup(cancel)
	sb := h.ensure(ctx, "runtime", nil)
	if sb.GetNetwork() != "none" || sb.GetImage() != img {
		t.Fatalf("sandbox network %q image %q, want none and %s", sb.GetNetwork(), sb.GetImage(), img)
	}
	for _, tc := range []struct {
		name, cmd string
		prefix    string // of stdout
	}{
		{"python data libraries", `python3 -c 'import pandas, numpy, matplotlib; print("ok")'`, "ok\n"},
		{"matplotlib draws", `python3 -c 'import matplotlib.pyplot as plt; plt.plot([1, 2]); plt.savefig("plot.png")' && test -s plot.png && echo drawn`, "drawn\n"},
		{"git", "git --version", "git version "},
		{"node", "node --version", "v"},
		{"npm", "npm --version", ""},
		{"ripgrep", "rg --version", "ripgrep "},
		{"curl", "curl --version", "curl "},
		{"the wick user, not root", "id -u; id -un; echo $HOME", "1000\nwick\n/home/wick\n"},
		{"workspace writable", "pwd && echo x > w.txt && cat w.txt", "/workspace\nx\n"},
		{"home writable", "echo y > ~/h.txt && cat ~/h.txt", "y\n"},
		{"no network but loopback", "ls /sys/class/net", "lo\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			r, err := h.exec(ctx, "runtime", tc.cmd)
			if err != nil {
				t.Fatal(err)
			}
			if r.exit.GetExitCode() != 0 || !strings.HasPrefix(r.stdout, tc.prefix) {
				t.Fatalf("%s: exit %d, stdout %q (want prefix %q), stderr %q", tc.cmd, r.exit.GetExitCode(), r.stdout, tc.prefix, r.stderr)
			}
		})
	}
}

// TestClaudeCodeImage: the adapters are on PATH in a sandbox without
// network and answer ACP's initialize on the image's Node.js.
func TestClaudeCodeImage(t *testing.T) {
	t.Parallel()
	img := requireImage(t, claudeCodeImage, "make image-claude-code")
	h := newHarness(t, func(c *Config) { c.DefaultImage = img })
	ctx, cancel := context.WithTimeout(as("alice"), 3*time.Minute)
	t.Cleanup(cancel)
	h.ensure(ctx, "acp", nil)
	const initialize = `{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":1,"clientCapabilities":{}}}`
	for _, tc := range []struct{ adapter, agentInfo string }{
		{"claude-code-acp", `"name":"@zed-industries/claude-code-acp"`},
		{"codex-acp", `"protocolVersion":1`},
	} {
		t.Run(tc.adapter, func(t *testing.T) {
			t.Parallel()
			// codex-acp stays up after its stdin ends, so the shell stops
			// each adapter once its answer is in, or after 90 s.
			script := `printf '%s\n' '` + initialize + `' | ` + tc.adapter + ` >/tmp/out 2>/tmp/err & pid=$!
for _ in $(seq 900); do grep -q '"id":0' /tmp/out && break; kill -0 $pid 2>/dev/null || break; sleep 0.1; done
kill $pid 2>/dev/null; cat /tmp/out; cat /tmp/err >&2`
			r, err := h.exec(ctx, "acp", strings.ReplaceAll(script, "/tmp/", "/tmp/"+tc.adapter+"."))
			if err != nil {
				t.Fatal(err)
			}
			if !strings.Contains(r.stdout, `"result":{`) || !strings.Contains(r.stdout, tc.agentInfo) {
				t.Fatalf("%s initialize: exit %d, stdout %q, stderr %q", tc.adapter, r.exit.GetExitCode(), r.stdout, r.stderr)
			}
		})
	}
}
