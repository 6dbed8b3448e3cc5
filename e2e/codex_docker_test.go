package e2e

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
)

const (
	codexHello   = "Hello from Codex through Wick."
	codexRan     = "The Codex command ran."
	codexCmdLine = "echo codex-output-$((6*7)) | tee codex.txt"
	codexCmdOut  = "codex-output-42"
)

// codexDockerScript is the model's script of TestCodexDocker: hello, then
// a command run with Codex's own shell tool, then the answer to its output.
func codexDockerScript() string {
	b, err := json.Marshal(map[string]any{
		"turns": []any{
			map[string]any{"text": codexHello},
			map[string]any{"tool_calls": []any{map[string]any{"id": "call_shell", "name": "exec_command", "arguments": map[string]any{
				"cmd": codexCmdLine,
			}}}},
			map[string]any{"text": codexRan},
		},
		"end_text": "The codex-docker script has finished.",
	})
	if err != nil {
		panic(err)
	}
	return string(b)
}

// codexArgs are codex-acp's -c options of the agent entry in docs/acp.md:
// its model provider is the sandbox's model endpoint, which forwards
// /v1/responses to the suite's LLM gateway; the key is the endpoint's
// token, which the sandbox service puts in OPENAI_API_KEY.
func codexArgs(model string) []string {
	return []string{
		"-c", `model_provider="wick"`,
		"-c", `model_providers.wick={name="wick", base_url="http://127.0.0.1:47100/v1", env_key="OPENAI_API_KEY", wire_api="responses"}`,
		"-c", `model="` + model + `"`,
		"-c", `sandbox_mode="danger-full-access"`,
		"-c", `approval_policy="never"`,
	}
}

// TestCodexDocker drives Codex as an operator deploys it: codex-acp from
// the wick-sandbox-claude-code image, run by its name in a Docker sandbox
// without network, its model calls going to the sandbox's model endpoint
// and on to the suite's /v1/responses. Text streams; a command Codex runs
// with its own shell tool (no approval asked, approval_policy "never")
// writes a file in the workspace, its output is in the tool's end, and the
// model's next answer ends the run.
func TestCodexDocker(t *testing.T) {
	env, image, _ := startAdapterImage(t, map[string]string{
		"codex-docker": codexDockerScript(),
	})
	ctx, cancel := context.WithTimeout(t.Context(), runtimeDeadline)
	t.Cleanup(cancel)
	def := map[string]any{
		"agent_id": "codex-docker",
		"backend":  map[string]any{"type": "docker", "image": image, "network": "none"},
		"acp":      map[string]any{"command": "codex-acp", "args": codexArgs("script:codex-docker")},
	}
	if r := call(t, "POST", env.url+"/agents", aliceToken, jsonBody(def)); r.code != http.StatusOK {
		t.Fatalf("create agent = %d %s", r.code, r)
	}
	a := &acpAgent{t: t, env: env, ctx: ctx, id: "codex-docker"}

	t.Run("text", func(t *testing.T) {
		a.t = t
		run := decodeRun(t, unasked(t, a.open("say hello")))
		a.thread = run.threadID()
		completed(t, run)
		// A model name Codex does not know adds a notice before the answer.
		if got := run.text(); !strings.Contains(got, codexHello) {
			t.Fatalf("answer %q (events %v)", got, run.names())
		}
	})
	if t.Failed() {
		t.FailNow()
	}

	t.Run("exec_command", func(t *testing.T) {
		a.t = t
		run := decodeRun(t, unasked(t, a.open("run the command")))
		completed(t, run)
		if got := run.text(); !strings.Contains(got, codexRan) {
			t.Fatalf("answer %q (events %v)", got, run.names())
		}
		ends := run.all("on_tool_end")
		if len(ends) != 1 || !strings.Contains(dataOf(ends[0])["output"].(string), codexCmdOut) {
			t.Fatalf("tool ends %v, want the command's with its output", ends)
		}
		if got := a.file("codex.txt"); got != codexCmdOut+"\n" {
			t.Fatalf("codex.txt = %q", got)
		}
	})
}
