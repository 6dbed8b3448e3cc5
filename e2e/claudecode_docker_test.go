package e2e

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
)

// claudeDockerImage is the sandbox image with the ACP adapters on PATH
// (deploy/images/acp-agents.sh).
const claudeDockerImage = "wick-sandbox-claude-code:latest"

// claudeContinued is the answer to the third message, the fourth turn of
// the docker script: a session that did not continue (a new one, primed
// with a summary) sends the model no earlier assistant turns and gets the
// first turn's answer instead.
const claudeContinued = "Still the same session."

// claudeDockerScript is the main model's script of TestClaudeCodeDocker:
// hello, a command and its answer, then one more answer.
func claudeDockerScript() string {
	b, err := json.Marshal(map[string]any{
		"turns": []any{
			map[string]any{"thinking": claudeThought, "text": claudeHello},
			map[string]any{"tool_calls": []any{map[string]any{"name": "mcp__acp__Bash", "arguments": map[string]any{
				"command": claudeBashLine, "description": "Print a number", "timeout": 10000,
			}}}},
			map[string]any{"text": claudeRan},
			map[string]any{"text": claudeContinued},
		},
		"end_text": "The claude-docker script has finished.",
	})
	if err != nil {
		panic(err)
	}
	return string(b)
}

// TestClaudeCodeDocker drives Claude Code as an operator deploys it: the
// adapter installed in the wick-sandbox-claude-code image, run by its name
// in a Docker sandbox without network, its model calls going to the model
// endpoint the sandbox service offers there (ANTHROPIC_BASE_URL, set by
// the service, not by the agent) and on to the suite's /v1/messages.
// Text and thinking stream; an approved Bash command's output is in its
// tool end and the file it wrote in the workspace; the next message
// continues the same Claude session.
func TestClaudeCodeDocker(t *testing.T) {
	env, image, logs := startAdapterImage(t, map[string]string{
		"claude-docker": claudeDockerScript(),
		"claude-small":  `{"turns":[],"end_text":"side answer"}`,
	})
	ctx, cancel := context.WithTimeout(t.Context(), runtimeDeadline)
	t.Cleanup(cancel)
	def := map[string]any{
		"agent_id": "claude-docker",
		"backend":  map[string]any{"type": "docker", "image": image, "network": "none"},
		"approval": "interactive",
		"acp":      map[string]any{"command": "claude-code-acp", "env": claudeEnv("claude-docker")},
	}
	if r := call(t, "POST", env.url+"/agents", aliceToken, jsonBody(def)); r.code != http.StatusOK {
		t.Fatalf("create agent = %d %s", r.code, r)
	}
	a := &acpAgent{t: t, env: env, ctx: ctx, id: "claude-docker"}

	t.Run("text and thinking", func(t *testing.T) {
		a.t = t
		run := a.send("hello")
		completed(t, run)
		if got := run.text(); got != claudeHello {
			t.Fatalf("answer %q (events %v)", got, run.names())
		}
		if got := run.thought(); got != claudeThought {
			t.Fatalf("thought %q", got)
		}
	})
	if t.Failed() {
		t.FailNow()
	}

	t.Run("bash approved", func(t *testing.T) {
		a.t = t
		es := a.open("run a command")
		seen := approveNext(t, a, es, "approve", "bash-output")
		run := a.finish(seen, es)
		completed(t, run)
		if got := run.text(); got != claudeRan {
			t.Fatalf("answer %q (events %v)", got, run.names())
		}
		ends := run.all("on_tool_end")
		if len(ends) != 1 || !strings.Contains(dataOf(ends[0])["output"].(string), claudeBashOut) {
			t.Fatalf("the command's end %v", ends)
		}
		if got := a.file("bash.txt"); got != claudeBashOut+"\n" {
			t.Fatalf("bash.txt = %q", got)
		}
	})

	t.Run("the session continues", func(t *testing.T) {
		a.t = t
		run := decodeRun(t, unasked(t, a.open("one more")))
		completed(t, run)
		if got := run.text(); got != claudeContinued {
			t.Fatalf("answer %q (events %v)", got, run.names())
		}
		log := logs.String()
		if n := strings.Count(log, "ACP session created"); n != 1 || strings.Contains(log, "primed=true") {
			t.Fatalf("%d sessions created, want 1 and none primed with a summary; the log:\n%s", n, log)
		}
		if strings.Contains(log, "session/load failed") || strings.Contains(log, "session/resume failed") {
			t.Fatalf("the session was not continued; the log:\n%s", log)
		}
	})
}
