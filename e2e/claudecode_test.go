package e2e

import (
	"context"
	"encoding/json"
	"log/slog"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/wick-agent/wick/platform/testenv"
	"github.com/wick-agent/wick/services/agent"
	"github.com/wick-agent/wick/services/sandbox"
	"github.com/wick-agent/wick/wickserver/suite"
)

// The scripted models Claude Code is given: its main model and the small
// one it may ask side questions (kept apart, so that the main script's
// turns are counted on the main conversation only).
const (
	claudeModel      = "script:claude"
	claudeSmallModel = "script:claude-small"
)

// The replies of the claude script. A turn is picked by the number of
// assistant messages in Claude Code's request, which counts every tool
// round of the session, so the test's messages follow the script's order.
const (
	claudeHello     = "Hello from Claude Code through Wick."
	claudeThought   = "The user greets me."
	claudeWrote     = "I wrote claude.txt."
	claudeRan       = "The command ran."
	claudeBashLine  = "echo bash-output-$((6*7)) | tee bash.txt"
	claudeBashOut   = "bash-output-42"
	claudeFileText  = "written by Claude Code\n"
	claudeSleepLine = "sleep 120"
	claudeBenchText = "Another turn done."
)

// claudeScripts are the scripts of Claude Code's models; ws is the
// absolute workspace path its file tools must be given.
func claudeScripts(ws string) map[string]string {
	turn := func(v map[string]any) map[string]any { return v }
	tool := func(name string, args map[string]any) map[string]any {
		return turn(map[string]any{"tool_calls": []any{map[string]any{"name": name, "arguments": args}}})
	}
	main := map[string]any{
		"turns": []any{
			// hello
			turn(map[string]any{"thinking": claudeThought, "text": claudeHello}),
			// write: approved
			tool("mcp__acp__Write", map[string]any{"file_path": ws + "/claude.txt", "content": claudeFileText}),
			turn(map[string]any{"text": claudeWrote}),
			// a command whose output the model is sent next
			tool("mcp__acp__Bash", map[string]any{"command": claudeBashLine, "description": "Print a number", "timeout": 10000}),
			turn(map[string]any{"text": claudeRan}),
			// write: rejected (Claude Code then ends its turn)
			tool("mcp__acp__Write", map[string]any{"file_path": ws + "/rejected.txt", "content": "never\n"}),
		},
		"end_text": "The claude script has finished.",
	}
	// cancel: a new session whose first turn runs a long command.
	cancel := map[string]any{"turns": []any{
		tool("mcp__acp__Bash", map[string]any{"command": claudeSleepLine, "description": "Wait", "timeout": 120000}),
	}, "end_text": "Stopped."}
	small := map[string]any{"turns": []any{}, "end_text": "side answer"}
	// bench: every turn a short answer, no tools.
	bench := map[string]any{"turns": []any{}, "end_text": claudeBenchText}
	out := map[string]string{}
	for name, v := range map[string]any{"claude": main, "claude-cancel": cancel, "claude-small": small, "claude-bench": bench} {
		b, err := json.Marshal(v)
		if err != nil {
			panic(err)
		}
		out[name] = string(b)
	}
	return out
}

// claudeCodeAdapter is the installed adapter's entry point (scripts/test-deps.sh
// installs deploy/acp-agents from its lockfile) and the node binary that runs it.
func claudeCodeAdapter(t testing.TB) (node, entry string) {
	t.Helper()
	node, err := exec.LookPath("node")
	if err != nil {
		testenv.Missing(t, "node not found in PATH")
	}
	entry = filepath.Join(testenv.RepoRoot(t), "deploy", "acp-agents", "node_modules", "@zed-industries", "claude-code-acp", "dist", "index.js")
	if _, err := os.Stat(entry); err != nil {
		testenv.Missing(t, "the Claude Code ACP adapter is not installed in deploy/acp-agents (npm ci there)")
	}
	return node, entry
}

// withScripts adds scripts to the suite's script directory.
func withScripts(add map[string]string) suiteOption {
	return func(c *suite.Config) {
		for name, body := range add {
			if err := os.WriteFile(filepath.Join(c.LLM.ScriptDir, name), []byte(body), 0o644); err != nil {
				panic(err)
			}
		}
	}
}

// withLog sends the suite's log to logs, for what only the log says (an
// ACP session loaded, or the fallback to a new one).
func withLog(logs *testenv.LogBuffer) suiteOption {
	return func(c *suite.Config) { c.Logger = slog.New(slog.NewTextHandler(logs, nil)) }
}

// claudeAgentDef is alice's agent backed by Claude Code, its main model
// the script named script. Its model calls go to the model endpoint the
// sandbox service offers in its sandbox (ANTHROPIC_BASE_URL and
// ANTHROPIC_API_KEY, on by default for an ACP agent), which reaches the
// suite's /v1/messages as alice.
func claudeAgentDef(id, node, entry, script string) map[string]any {
	return map[string]any{
		"agent_id": id,
		"backend":  map[string]any{"type": "local"},
		"approval": "interactive",
		"acp": map[string]any{
			"command": node,
			"args":    []string{entry},
			"env":     claudeEnv(script),
		},
	}
}

// claudeEnv is Claude Code's environment in these tests: the model names
// it asks for mapped to the scripts, and no calls but the model's.
func claudeEnv(script string) map[string]any {
	return map[string]any{
		"ANTHROPIC_DEFAULT_SONNET_MODEL":           "script:" + script,
		"ANTHROPIC_DEFAULT_HAIKU_MODEL":            claudeSmallModel,
		"CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
		"MAX_THINKING_TOKENS":                      "1024",
	}
}

// createClaudeAgent creates the agent and returns it with the host path of
// its local workspace, which Claude Code's file tools are given.
func createClaudeAgent(t testing.TB, env *wickEnv, ctx context.Context, stateDir string, def map[string]any) (*acpAgent, string) {
	t.Helper()
	id := def["agent_id"].(string)
	if r := call(t, "POST", env.url+"/agents", aliceToken, jsonBody(def)); r.code != http.StatusOK {
		t.Fatalf("create agent %s = %d %s", id, r.code, r)
	}
	marker := ".wick-marker-" + id
	if r := call(t, "PUT", env.url+"/agents/"+id+"/files/raw/workspace/"+marker, aliceToken, strings.NewReader(id)); r.code != http.StatusOK {
		t.Fatalf("upload the marker = %d %s", r.code, r)
	}
	found, err := filepath.Glob(filepath.Join(stateDir, "local", "*", "workspace", marker))
	if err != nil || len(found) != 1 {
		t.Fatalf("the local workspace of %s: %v %v", id, found, err)
	}
	return &acpAgent{t: t, env: env, ctx: ctx, id: id}, filepath.Dir(found[0])
}

// approveNext reads a run until its permission request, checks that the
// call it is for names want, and decides it.
func approveNext(t *testing.T, a *acpAgent, es *eventStream, action, want string) []sseMessage {
	t.Helper()
	seen := es.until(t, "on_interrupt")
	asked := decodeRun(t, seen)
	tc := dataOf(asked.find("on_interrupt", ""))["tool_calls"].([]any)[0].(map[string]any)
	if b, _ := json.Marshal(tc); !strings.Contains(string(b), want) {
		t.Fatalf("the permission request %s does not name %q", b, want)
	}
	a.decide(asked.runID(), map[string]any{"tool_call_id": tc["id"], "action": action})
	return seen
}

// completed checks that a run ended done and completed, showing the
// error event's message when it did not.
func completed(t *testing.T, run runEvents) {
	t.Helper()
	for _, e := range run.all("error") {
		t.Errorf("error event: %v", dataOf(e)["message"])
	}
	run.checkEnd(t, "completed")
}

// thought is the text of a run's on_thought_stream events.
func (r runEvents) thought() string {
	var b strings.Builder
	for _, ev := range r.all("on_thought_stream") {
		b.WriteString(dataOf(ev)["delta"].(string))
	}
	return b.String()
}

// sessionTranscript is Claude Code's record of its session (the
// conversation it sends the model, and loads), from the agent's state
// directory in the workspace.
func sessionTranscript(t *testing.T, ws, agentID string) string {
	t.Helper()
	found, err := filepath.Glob(filepath.Join(ws, ".wick", "acp", agentID, ".claude", "projects", "*", "*.jsonl"))
	if err != nil || len(found) != 1 {
		t.Fatalf("Claude Code's session files: %v %v", found, err)
	}
	b, err := os.ReadFile(found[0])
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// TestClaudeCode drives the real Claude Code (its pinned ACP adapter) as an
// agent on the local backend, through the suite's REST and SSE, its model
// calls going to the suite's /v1/messages served by scripted models: text
// and thinking stream; the suite restarted between two messages continues
// the same Claude session by session/load; a Write approved lands in the
// workspace; a Bash command runs and its output goes back to the model; a
// Write rejected; a prompt cancelled mid-command.
func TestClaudeCode(t *testing.T) {
	t.Parallel()
	node, entry := claudeCodeAdapter(t)
	shared, ctx := restartable(t)
	var probe suite.Config
	shared(&probe)
	stateDir := probe.Sandbox.StateDir
	// Both suites read the scripts from one directory, written once the
	// workspace's path is known (a script is read at each request).
	scriptDir := writeScripts(t)
	fixed := func(c *suite.Config) {
		c.LLM.ScriptDir = scriptDir
		// The local sandbox's commands read the installed adapter where
		// it is, as an operator lets them read an installed copy.
		c.Sandbox.LocalReadOnly = []string{filepath.Dir(filepath.Dir(filepath.Dir(filepath.Dir(entry))))}
	}
	logs := suiteLog(t)
	env := startWick(t, shared, fixed, withLog(logs))

	a, ws := createClaudeAgent(t, env, ctx, stateDir, claudeAgentDef("claude", node, entry, "claude"))
	c, _ := createClaudeAgent(t, env, ctx, stateDir, claudeAgentDef("claude-cancel", node, entry, "claude-cancel"))
	for name, body := range claudeScripts(ws) {
		if err := os.WriteFile(filepath.Join(scriptDir, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}

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

	// The suite stops between two messages and another starts on the same
	// Redis and workspaces: the next message loads Claude Code's session.
	env.stop()
	env = startWick(t, shared, fixed, withLog(logs))
	a.env, c.env = env, env

	t.Run("restart and write approved", func(t *testing.T) {
		a.t = t
		es := a.open("write claude.txt")
		seen := approveNext(t, a, es, "approve", "claude.txt")
		run := a.finish(seen, es)
		completed(t, run)
		if got := run.text(); got != claudeWrote {
			t.Fatalf("answer %q (events %v)", got, run.names())
		}
		if got := a.file("claude.txt"); got != claudeFileText {
			t.Fatalf("claude.txt = %q", got)
		}
		log := logs.String()
		if n := strings.Count(log, "ACP session loaded"); n != 1 {
			t.Fatalf("%d sessions loaded, want 1; the log:\n%s", n, log)
		}
		if strings.Contains(log, "session/load failed") || strings.Count(log, "ACP session created") != 1 {
			t.Fatalf("the session was not continued; the log:\n%s", log)
		}
	})

	t.Run("bash", func(t *testing.T) {
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
		// The tool result Claude Code sent the model with the next turn.
		if tr := sessionTranscript(t, ws, a.id); !strings.Contains(tr, `"tool_result"`) || !strings.Contains(tr, claudeBashOut) {
			t.Fatalf("the command's output is not in the conversation sent to the model:\n%s", tr)
		}
	})

	t.Run("write rejected", func(t *testing.T) {
		a.t = t
		es := a.open("write rejected.txt")
		seen := approveNext(t, a, es, "reject", "rejected.txt")
		run := a.finish(seen, es)
		completed(t, run)
		// Claude Code ends its turn at a rejection without asking the
		// model again: the run has no answer.
		if got := run.text(); got != "" {
			t.Fatalf("answer %q after the rejection (events %v)", got, run.names())
		}
		if got := a.file("rejected.txt"); got != "" {
			t.Fatalf("rejected.txt was written: %q", got)
		}
		if end := run.find("on_tool_end", ""); end == nil || dataOf(end)["error"] == nil {
			t.Fatalf("the rejected call's end %v", end)
		}
	})

	t.Run("cancel", func(t *testing.T) {
		c.t = t
		es := c.open("wait")
		seen := approveNext(t, c, es, "approve", claudeSleepLine)
		runID := decodeRun(t, seen).runID()
		if r := call(t, "POST", env.url+"/runs/"+runID+"/cancel", aliceToken, jsonBody(map[string]any{})); r.code != http.StatusOK {
			t.Fatalf("cancel = %d %s", r.code, r)
		}
		run := c.finish(seen, es)
		wantError(t, run, "cancel")
		if end := run.find("on_tool_end", ""); end == nil || dataOf(end)["error"] == nil {
			t.Fatalf("the cancelled command's end %v", end)
		}
		// The thread goes on: the next message is answered without asking.
		run = decodeRun(t, unasked(t, c.open("after the cancel")))
		completed(t, run)
	})
}

// BenchmarkClaudeCodeTurn: one message to an agent backed by the real
// Claude Code (its pinned ACP adapter) on the local backend, through the
// whole suite: the gateway's REST and SSE, the ACP bridge, the adapter's
// model call through the sandbox's model endpoint to /v1/messages and the
// scripted model, the answer streamed back and the thread saved. "warm"
// keeps the thread's adapter process between messages (cmd/wick's
// default -acp-keep-idle); "cold" starts it and loads the session at every
// message (the library's default). cpu-ms/turn is the CPU time of this
// process, which runs the whole suite (Claude Code's processes are its
// children and not counted), per turn.
func BenchmarkClaudeCodeTurn(b *testing.B) {
	node, entry := claudeCodeAdapter(b)
	for _, bc := range []struct {
		name string
		idle time.Duration
	}{{"warm", agent.DefaultACPKeepIdle}, {"cold", 0}} {
		b.Run(bc.name, func(b *testing.B) {
			stateDir, err := os.MkdirTemp("", "wkb") // short: sandbox sockets live here
			if err != nil {
				b.Fatal(err)
			}
			b.Cleanup(func() { _ = sandbox.RemoveStateDir(stateDir) })
			env := startWick(b, withScripts(claudeScripts("/unused")), func(c *suite.Config) {
				c.Sandbox.StateDir = stateDir
				c.Sandbox.LocalReadOnly = []string{filepath.Dir(filepath.Dir(filepath.Dir(filepath.Dir(entry))))}
				c.AgentOptions = append(c.AgentOptions, agent.WithACPKeepIdle(bc.idle, 0))
			})
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Minute)
			b.Cleanup(cancel)
			def := claudeAgentDef("bench", node, entry, "claude-bench")
			def["approval"] = "autonomous"
			a, _ := createClaudeAgent(b, env, ctx, stateDir, def)
			turn := func() {
				run := a.send("one more turn")
				if last := run.events[len(run.events)-1]; last.GetEvent() != "done" || run.text() != claudeBenchText {
					b.Fatalf("turn ended with %v, answer %q", run.names(), run.text())
				}
			}
			turn() // the session is created
			var lat []time.Duration
			var cpu time.Duration
			for b.Loop() {
				c0, start := processCPU(b), time.Now()
				turn()
				lat = append(lat, time.Since(start))
				cpu += processCPU(b) - c0
			}
			slices.Sort(lat)
			b.ReportMetric(float64(lat[len(lat)/2].Microseconds())/1000, "p50-ms")
			b.ReportMetric(float64(lat[len(lat)*99/100].Microseconds())/1000, "p99-ms")
			b.ReportMetric(float64(cpu.Microseconds())/1000/float64(len(lat)), "cpu-ms/turn")
		})
	}
}

// processCPU is the user and system CPU time of this process so far, its
// children excluded.
func processCPU(b *testing.B) time.Duration {
	b.Helper()
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// suiteLog collects the suite's log, shown when the test fails (or always,
// with WICK_E2E_LOG set): the adapters' own stderr is only there.
func suiteLog(t *testing.T) *testenv.LogBuffer {
	logs := &testenv.LogBuffer{}
	t.Cleanup(func() {
		if t.Failed() || os.Getenv("WICK_E2E_LOG") != "" {
			t.Logf("the suite's log:\n%s", logs.String())
		}
	})
	return logs
}

// startAdapterImage starts the suite on Docker, its sandboxes made from the
// adapters' image (waiting for test-deps to build it), with scripts as the
// scripted models; it returns the suite, the image and the suite's log.
func startAdapterImage(t *testing.T, scripts map[string]string) (*wickEnv, string, *testenv.LogBuffer) {
	cli, _ := dockerSetup(t)
	image := testenv.Image(t, claudeDockerImage, "make image-claude-code")
	manager := "wick-e2e-" + randomHex(6)
	removeManaged(t, cli, manager)
	logs := suiteLog(t)
	return startWick(t, withDocker(image, manager), withLog(logs), withScripts(scripts)), image, logs
}
