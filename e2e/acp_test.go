package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/api/types/filters"

	sandboxv1 "github.com/wick-agent/wick/gen/wick/sandbox/v1"
	"github.com/wick-agent/wick/platform/dial"
)

// buildACPAgent builds the ACP test agent (the SDK's agent side, package
// acptest).
func buildACPAgent(t testing.TB) string {
	return buildStatic(t, "acp-test-agent", "github.com/wick-agent/wick/services/agent/internal/acp/acptest/acp-test-agent")
}

// acpMountedKey is the test secret "acp-key" (testSecrets) that the
// agent's env names as ${secret:acp-key}.
const acpMountedKey = "mounted-acp-key-0123456789"

// acpAgent is a test of an ACP-backed agent through the gateway's REST and
// SSE: its id, the suite, and the thread its messages go to.
type acpAgent struct {
	t      testing.TB
	env    *wickEnv
	ctx    context.Context
	id     string
	thread string
}

// createACPAgent creates alice's agent backed by the test agent, uploads
// the agent's binary into its sandbox and returns it. env adds variables
// of the ACP agent.
func createACPAgent(t testing.TB, env *wickEnv, ctx context.Context, bin, id string, sandbox map[string]any, approval string, acpEnv map[string]any) *acpAgent {
	t.Helper()
	def := map[string]any{
		"agent_id": id, "backend": sandbox, "approval": approval,
		// An upload is written without its executable bit, so the command
		// sets it before it replaces itself with the agent.
		"acp":         map[string]any{"command": "/bin/sh", "args": []string{"-c", "chmod +x acp-test-agent && exec ./acp-test-agent"}, "env": acpEnv},
		"mcp_servers": []map[string]any{{"name": "files", "command": "./mcp-files"}},
	}
	if r := call(t, "POST", env.url+"/agents", aliceToken, jsonBody(def)); r.code != http.StatusOK {
		t.Fatalf("create agent %s = %d %s", id, r.code, r)
	}
	data, err := os.ReadFile(bin)
	if err != nil {
		t.Fatal(err)
	}
	if r := call(t, "PUT", env.url+"/agents/"+id+"/files/raw/workspace/acp-test-agent", aliceToken, bytes.NewReader(data),
		"Content-Type", "application/octet-stream"); r.code != http.StatusOK {
		t.Fatalf("upload the ACP agent = %d %s", r.code, r)
	}
	return &acpAgent{t: t, env: env, ctx: ctx, id: id}
}

// open sends a message on the agent's thread and returns the event stream.
func (a *acpAgent) open(text string) *eventStream {
	a.t.Helper()
	extra := map[string]any{}
	if a.thread != "" {
		extra["thread_id"] = a.thread
	}
	resp := openSSE(a.t, a.ctx, "POST", a.env.url+"/agents/"+a.id+"/stream", aliceToken, jsonBody(userMessage(text, extra)))
	return newEventStream(resp.Body)
}

// send sends a message and reads its run to the end.
func (a *acpAgent) send(text string) runEvents {
	a.t.Helper()
	return a.finish(nil, a.open(text))
}

// finish reads the rest of a run whose first frames were seen.
func (a *acpAgent) finish(seen []sseMessage, es *eventStream) runEvents {
	a.t.Helper()
	run := decodeRun(a.t, append(seen, es.rest(a.t)...))
	a.thread = run.threadID()
	return run
}

// calls is the test agent's record of the methods it received.
func (a *acpAgent) calls() string {
	a.t.Helper()
	r := call(a.t, "GET", a.env.url+"/agents/"+a.id+"/files/raw/workspace/.wick/acp/"+a.id+"/calls.log", aliceToken, nil)
	if r.code != http.StatusOK {
		a.t.Fatalf("read calls.log = %d %s", r.code, r)
	}
	return string(r.body)
}

// file is a workspace file's content; "" when it does not exist.
func (a *acpAgent) file(name string) string {
	a.t.Helper()
	r := call(a.t, "GET", a.env.url+"/agents/"+a.id+"/files/raw/workspace/"+name, aliceToken, nil)
	if r.code != http.StatusOK {
		return ""
	}
	return string(r.body)
}

// resume decides the pending call of a run waiting for approval.
func (a *acpAgent) resume(runID, callID, action string) {
	a.t.Helper()
	a.decide(runID, map[string]any{"tool_call_id": callID, "action": action})
}

// decide resumes a run waiting for approval with one decision.
func (a *acpAgent) decide(runID string, d map[string]any) {
	a.t.Helper()
	r := call(a.t, "POST", a.env.url+"/runs/"+runID+"/resume", aliceToken, jsonBody(map[string]any{"decisions": []any{d}}))
	if r.code != http.StatusOK {
		a.t.Fatalf("resume %v = %d %s", d, r.code, r)
	}
}

// wantError checks that a run ended with one error event saying why.
func wantError(t *testing.T, run runEvents, why string) {
	t.Helper()
	last := run.events[len(run.events)-1]
	if last.GetEvent() != "error" || !strings.Contains(dataOf(last)["message"].(string), why) {
		t.Fatalf("last event %v, want an error saying %q (events %v)", last, why, run.names())
	}
}

// TestACPAgent plays the whole ACP scenario on the local sandbox backend,
// through the suite's gateway, with a real redis-server: a conversation
// (text, thought, plan, a tool call writing and reading a file through the
// fs callbacks, the session loaded by each next message), confinement,
// permissions approved, rejected and remembered, a permission for a call
// never announced, a terminal, a malformed line and an unknown update,
// cancel mid-prompt, a crash and a kill mid-prompt (each followed by a
// message that recovers), and an agent without session/load primed with
// the thread's summary.
func TestACPAgent(t *testing.T) {
	t.Parallel()
	env, ctx := startRuntime(t)
	runACPScenario(t, env, ctx, buildACPAgent(t), map[string]any{"type": "local"})
}

// runACPScenario plays TestACPAgent's scenario with alice's agents on the
// sandbox backend.
func runACPScenario(t *testing.T, env *wickEnv, ctx context.Context, bin string, local map[string]any) {
	a := createACPAgent(t, env, ctx, bin, "coder", local, "interactive",
		map[string]any{"ACP_API_KEY": "s3cret-acp-value", "ACP_MOUNTED": "${secret:acp-key}", "ACP_BASE_URL": "http://127.0.0.1:9/"})

	// The API masks the agent's credentials, but for a value naming a
	// mounted secret; other values are shown as written.
	if r := call(t, "GET", env.url+"/agents/coder", aliceToken, nil); r.code != http.StatusOK ||
		bytes.Contains(r.body, []byte("s3cret-acp-value")) || !bytes.Contains(r.body, []byte(`"ACP_API_KEY":"[REDACTED]"`)) ||
		bytes.Contains(r.body, []byte(acpMountedKey)) || !bytes.Contains(r.body, []byte(`"ACP_MOUNTED":"${secret:acp-key}"`)) ||
		!bytes.Contains(r.body, []byte(`"ACP_BASE_URL":"http://127.0.0.1:9/"`)) {
		t.Fatalf("GET /agents/coder = %d %s", r.code, r)
	}

	// Conflicting or incomplete definitions are refused, naming the field.
	for _, tc := range []struct {
		name string
		def  map[string]any
		why  string
	}{
		{"model and acp", map[string]any{"agent_id": "both", "backend": local, "model": "script:x", "acp": map[string]any{"command": "x"}}, "model: an agent backed by acp"},
		{"no command", map[string]any{"agent_id": "nocmd", "backend": local, "acp": map[string]any{"args": []string{"x"}}}, "acp.command is required"},
		{"masked env", map[string]any{"agent_id": "masked", "backend": local, "acp": map[string]any{"command": "x", "env": map[string]any{"K": "[REDACTED]"}}}, "give the real value"},
		{"malformed secret", map[string]any{"agent_id": "badref", "backend": local, "acp": map[string]any{"command": "x", "env": map[string]any{"K": "${secret:../etc/passwd}"}}}, "malformed secret reference"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			wantRefused(t, call(t, "POST", env.url+"/agents", aliceToken, jsonBody(tc.def)), http.StatusBadRequest, "INVALID_ARGUMENT", tc.why)
		})
	}

	t.Run("conversation", func(t *testing.T) {
		a.t = t
		run := a.send("hello")
		run.checkEnd(t, "completed")
		if got := run.text(); got != "Hello from the ACP test agent." {
			t.Fatalf("answer %q", got)
		}
		if th := run.find("on_thought_stream", ""); th == nil || dataOf(th)["delta"] != "The user greets me." {
			t.Fatalf("thought %v", th)
		}
		todos := run.find("on_todos", "plan")
		if todos == nil {
			t.Fatalf("no plan: %v", run.names())
		}
		list := dataOf(todos)["todos"].([]any)
		if len(list) != 2 || list[0].(map[string]any)["status"] != "done" || list[1].(map[string]any)["status"] != "pending" {
			t.Fatalf("todos %v", list)
		}
		calls := a.calls()
		if !strings.Contains(calls, "initialize fs=true terminal=true") || !strings.Contains(calls, "session/new") ||
			!strings.Contains(calls, " mcp=files") {
			t.Fatalf("calls.log:\n%s", calls)
		}
		// The local backend runs the agent on the host: its cwd is the
		// workspace's host directory, which must exist there. In a
		// container it is /workspace.
		cwd := regexp.MustCompile(`session/new \S+ cwd=(\S+) mcp=files`).FindStringSubmatch(calls)
		switch {
		case cwd == nil:
			t.Fatalf("no session/new cwd in calls.log:\n%s", calls)
		case local["type"] != "local":
			if cwd[1] != "/workspace" {
				t.Fatalf("session/new cwd %s in a container", cwd[1])
			}
		case !filepath.IsAbs(cwd[1]) || cwd[1] == "/workspace":
			t.Fatalf("session/new cwd %s on the local backend", cwd[1])
		default:
			if fi, err := os.Stat(cwd[1]); err != nil || !fi.IsDir() {
				t.Fatalf("session/new cwd %s is not a host directory: %v", cwd[1], err)
			}
		}

		run = a.send("write /workspace/a.txt hi there")
		run.checkEnd(t, "completed")
		if got := run.text(); got != "The file now says: hi there" {
			t.Fatalf("answer %q", got)
		}
		if got := run.toolOutput(t, "w1"); got != "wrote /workspace/a.txt" {
			t.Fatalf("tool output %q", got)
		}
		if got := a.file("a.txt"); got != "hi there\n" {
			t.Fatalf("a.txt = %q", got)
		}
		if strings.Contains(run.text(), "Hello") {
			t.Fatalf("the load's replay was shown again: %q", run.text())
		}
		if n := strings.Count(a.calls(), "session/load sess-"); n != 1 {
			t.Fatalf("%d session/load, want 1:\n%s", n, a.calls())
		}
		msgs := threadMessages(t, env, a.thread)
		if got := roles(msgs); got != "user,assistant,user,assistant,tool,assistant" {
			t.Fatalf("thread roles %s", got)
		}
		if last := msgs[len(msgs)-1].GetContent(); last != "The file now says: hi there" {
			t.Fatalf("thread ends with %q", last)
		}

		run = a.send("write /etc/passwd pwned")
		run.checkEnd(t, "completed")
		if got := run.text(); !strings.Contains(got, "write refused") || !strings.Contains(got, "only use paths under the workspace") {
			t.Fatalf("answer %q", got)
		}
	})

	t.Run("secrets", func(t *testing.T) {
		a.t = t
		// The mounted secret the agent's env names reaches the process.
		run := a.send("env ACP_MOUNTED")
		run.checkEnd(t, "completed")
		if got := run.text(); got != "env ACP_MOUNTED="+acpMountedKey {
			t.Fatalf("answer %q", got)
		}
		// The agent read back and written back unchanged keeps the key the
		// API masked: the next run's process has it.
		var got struct {
			Agent map[string]any `json:"agent"`
		}
		r := call(t, "GET", env.url+"/agents/coder", aliceToken, nil)
		if err := json.Unmarshal(r.body, &got); r.code != http.StatusOK || err != nil {
			t.Fatalf("GET /agents/coder = %d %s (%v)", r.code, r, err)
		}
		if r := call(t, "PUT", env.url+"/agents/coder", aliceToken, jsonBody(got.Agent)); r.code != http.StatusOK ||
			!bytes.Contains(r.body, []byte(`"ACP_API_KEY":"[REDACTED]"`)) || bytes.Contains(r.body, []byte("s3cret-acp-value")) {
			t.Fatalf("PUT /agents/coder = %d %s", r.code, r)
		}
		run = a.send("env ACP_API_KEY")
		run.checkEnd(t, "completed")
		if got := run.text(); got != "env ACP_API_KEY=s3cret-acp-value" {
			t.Fatalf("answer after GET then PUT %q", got)
		}
		// A masked value for a key nothing stores is refused, naming it.
		got.Agent["acp"].(map[string]any)["env"].(map[string]any)["NEW_KEY"] = "[REDACTED]"
		wantRefused(t, call(t, "PUT", env.url+"/agents/coder", aliceToken, jsonBody(got.Agent)), http.StatusBadRequest, "INVALID_ARGUMENT", `"NEW_KEY" is [REDACTED]`)

		// A secret that is not mounted: the run does not start, saying which.
		def := map[string]any{"agent_id": "unmounted", "backend": local, "acp": map[string]any{"command": "x", "env": map[string]any{"K": "${secret:nope}"}}}
		if r := call(t, "POST", env.url+"/agents", aliceToken, jsonBody(def)); r.code != http.StatusOK {
			t.Fatalf("create agent unmounted = %d %s", r.code, r)
		}
		wantRefused(t, call(t, "POST", env.url+"/agents/unmounted/invoke", aliceToken, jsonBody(userMessage("hi", nil))),
			http.StatusBadRequest, "FAILED_PRECONDITION", "secret not mounted: nope")
	})

	t.Run("permissions", func(t *testing.T) {
		a.t = t
		ask := func(text, action string, always bool) runEvents {
			es := a.open(text)
			seen := es.until(t, "on_interrupt")
			asked := decodeRun(t, seen)
			data := dataOf(asked.find("on_interrupt", ""))
			if data["always"] != true {
				t.Fatalf("the interrupt does not offer always: %v", data)
			}
			tc := data["tool_calls"].([]any)[0].(map[string]any)
			a.decide(asked.runID(), map[string]any{"tool_call_id": tc["id"], "action": action, "always": always})
			run := a.finish(seen, es)
			run.checkEnd(t, "completed")
			return run
		}
		if got := ask("ask /workspace/b.txt", "approve", false).text(); got != "Permission allow: written." {
			t.Fatalf("approved: %q", got)
		}
		if a.file("b.txt") != "written with permission\n" {
			t.Fatalf("b.txt = %q", a.file("b.txt"))
		}
		run := ask("ask /workspace/c.txt", "reject", false)
		if got := run.text(); got != "Permission reject: nothing written." || a.file("c.txt") != "" {
			t.Fatalf("rejected: %q, c.txt %q", got, a.file("c.txt"))
		}
		if end := run.find("on_tool_end", ""); end == nil || dataOf(end)["error"] != "the user rejected it" {
			t.Fatalf("rejected call's end %v", end)
		}
		// What a thread remembers is tried on threads of their own: the
		// later subtests ask on the first one again.
		first := a.thread
		// Only "always" offered: the thread remembers the answer for edits.
		a.thread = ""
		if got := ask("always /workspace/d.txt", "approve", false).text(); got != "Permission allow-always: written." {
			t.Fatalf("always: %q", got)
		}
		run = a.send("always /workspace/e.txt")
		run.checkEnd(t, "completed")
		if run.find("on_interrupt", "") != nil || run.text() != "Permission allow-always: written." {
			t.Fatalf("remembered: %q %v", run.text(), run.names())
		}
		// An "always" decision where the agent offers only "once" options:
		// once is picked, and the thread remembers the decision for edits,
		// so the next request is answered without an interrupt.
		for _, tc := range []struct{ action, answer, file, content string }{
			{"approve", "Permission allow: written.", "g.txt", "written with permission\n"},
			{"reject", "Permission reject: nothing written.", "i.txt", ""},
		} {
			a.thread = ""
			if got := ask("ask /workspace/f-"+tc.file, tc.action, true).text(); got != tc.answer {
				t.Fatalf("%s always: %q", tc.action, got)
			}
			run = decodeRun(t, unasked(t, a.open("ask /workspace/"+tc.file)))
			run.checkEnd(t, "completed")
			if run.find("on_interrupt", "") != nil || run.text() != tc.answer || a.file(tc.file) != tc.content {
				t.Fatalf("remembered %s: %q, %s = %q, events %v", tc.action, run.text(), tc.file, a.file(tc.file), run.names())
			}
		}
		a.thread = first
		// A request for a call never announced is judged by its own title.
		es := a.open("unknown-permission")
		seen := es.until(t, "on_interrupt")
		asked := decodeRun(t, seen)
		tc := dataOf(asked.find("on_interrupt", ""))["tool_calls"].([]any)[0].(map[string]any)
		if tc["id"] != "ghost-1" || tc["name"] != "Delete everything" {
			t.Fatalf("interrupt for the unknown call: %v", tc)
		}
		a.resume(asked.runID(), "ghost-1", "reject")
		run = a.finish(seen, es)
		run.checkEnd(t, "completed")
		if got := run.text(); got != "Permission reject for a call never announced." {
			t.Fatalf("answer %q", got)
		}
	})

	t.Run("bad input", func(t *testing.T) {
		a.t = t
		for _, tc := range []struct{ prompt, want string }{
			{"bad-line", "Answered after a bad line."},
			{"unknown-update", "Answered after an unknown update."},
			{"terminal echo hello; exit 4", `terminal exit=4 truncated=false output="hello\n"`},
			{"terminal yes 0123456789 | head -c 1000", "truncated=true"},
			{"read /workspace/../etc/passwd 1 1", "read failed"},
		} {
			run := a.send(tc.prompt)
			run.checkEnd(t, "completed")
			if got := run.text(); !strings.Contains(got, tc.want) {
				t.Errorf("%s: answer %q, want %q", tc.prompt, got, tc.want)
			}
		}
	})

	t.Run("cancel", func(t *testing.T) {
		a.t = t
		es := a.open("block")
		seen := es.until(t, "on_tool_start")
		runID := decodeRun(t, seen).runID()
		if r := call(t, "POST", env.url+"/runs/"+runID+"/cancel", aliceToken, jsonBody(map[string]any{})); r.code != http.StatusOK {
			t.Fatalf("cancel = %d %s", r.code, r)
		}
		run := a.finish(seen, es)
		wantError(t, run, "cancel")
		if _, errText := run.toolEnd(t, "b1"); !strings.Contains(errText, "cancelled") {
			t.Fatalf("b1 ended with %q", errText)
		}
		calls := a.calls()
		if !strings.Contains(calls, "session/cancel") || !strings.Contains(calls, "turn cancelled") {
			t.Fatalf("calls.log:\n%s", calls)
		}
		run = a.send("after the cancel")
		run.checkEnd(t, "completed")

		// A run waiting for permission is cancelled too: the request is
		// answered "cancelled" and the pending call ends with an error.
		es = a.open("ask /workspace/never.txt")
		seen = es.until(t, "on_interrupt")
		runID = decodeRun(t, seen).runID()
		if r := call(t, "POST", env.url+"/runs/"+runID+"/cancel", aliceToken, jsonBody(map[string]any{})); r.code != http.StatusOK {
			t.Fatalf("cancel = %d %s", r.code, r)
		}
		run = a.finish(seen, es)
		wantError(t, run, "cancel")
		// The agent may fail the call itself before the run closes it.
		if end := run.find("on_tool_end", ""); end == nil || dataOf(end)["error"] == "" {
			t.Fatalf("the pending call's end %v", end)
		}
		if a.file("never.txt") != "" {
			t.Fatal("the cancelled permission wrote the file")
		}
		a.send("after the cancelled permission").checkEnd(t, "completed")
	})

	t.Run("crash", func(t *testing.T) {
		a.t = t
		run := a.send("crash")
		wantError(t, run, "exit code 3")
		wantError(t, run, "crashing on purpose")
		if _, errText := run.toolEnd(t, "c1"); errText == "" {
			t.Fatal("the crashed call ended without an error")
		}
		run = a.send("after the crash")
		run.checkEnd(t, "completed")
		if got := run.text(); got != "echo: after the crash" {
			t.Fatalf("answer %q", got)
		}
	})

	t.Run("killed", func(t *testing.T) {
		a.t = t
		// Other threads of the agent started sessions of their own.
		sessions := strings.Count(a.calls(), "session/new")
		es := a.open("wait-kill")
		seen := es.until(t, "on_tool_start")
		killACP(t, env, ctx, a.id)
		run := a.finish(seen, es)
		wantError(t, run, "killed by a signal")
		if _, errText := run.toolEnd(t, "k1"); errText == "" {
			t.Fatal("the killed call ended without an error")
		}
		run = a.send("after the kill")
		run.checkEnd(t, "completed")
		if n := strings.Count(a.calls(), "session/new"); n != sessions {
			t.Fatalf("%d session/new: the session was not loaded after the kill:\n%s", n, a.calls())
		}
	})

	t.Run("no load support", func(t *testing.T) {
		f := createACPAgent(t, env, ctx, bin, "fresh", local, "autonomous", map[string]any{"ACPTEST_NO_LOAD": "1"})
		f.send("remember the word banana").checkEnd(t, "completed")
		run := f.send("hello")
		run.checkEnd(t, "completed")
		calls := f.calls()
		if strings.Contains(calls, "session/load") || strings.Count(calls, "session/new") != 2 {
			t.Fatalf("calls.log:\n%s", calls)
		}
		lines := strings.Split(strings.TrimSpace(calls), "\n")
		last := lines[len(lines)-1]
		if !strings.Contains(last, "<transcript>") || !strings.Contains(last, "remember the word banana") ||
			!strings.Contains(last, "echo: remember the word banana") || !strings.HasSuffix(last, "hello") {
			t.Fatalf("the new session's first prompt is not primed: %s", last)
		}
		// An autonomous agent's permission requests are allowed at once.
		run = f.send("ask /workspace/f.txt")
		run.checkEnd(t, "completed")
		if run.find("on_interrupt", "") != nil || run.text() != "Permission allow: written." {
			t.Fatalf("autonomous: %q %v", run.text(), run.names())
		}
	})
}

// TestACPAgentGracefulStop: agents that write their session only when they
// exit gracefully find it at the next message (session/load, no new
// session); one that fails at initialize has its stderr's tail in the
// run's error event.
func TestACPAgentGracefulStop(t *testing.T) {
	t.Parallel()
	env, ctx := startRuntime(t)
	runACPGracefulStop(t, env, ctx, buildACPAgent(t), map[string]any{"type": "local"})
}

// sessionRE is the id of the session the test agent created.
var sessionRE = regexp.MustCompile(`session/new (sess-[0-9]+)`)

// runACPGracefulStop plays TestACPAgentGracefulStop's scenario on the
// sandbox backend. An agent that writes its session file only on a
// graceful exit — at the end of its stdin, or on SIGTERM for one that
// ignores that end, as Claude Code's ACP adapter does — must be given the
// time to after each run: a kill at once loses the session, and the next
// message falls back to a new one.
func runACPGracefulStop(t *testing.T, env *wickEnv, ctx context.Context, bin string, sandbox map[string]any) {
	for _, tc := range []struct {
		name, id, exit string
		env            map[string]any
	}{
		{"exits at the end of stdin", "saver", "exit stdin-eof", map[string]any{"ACPTEST_SAVE_ON_EXIT": "1"}},
		{"exits on SIGTERM", "stubborn", "exit sigterm", map[string]any{"ACPTEST_SAVE_ON_EXIT": "1", "ACPTEST_IGNORE_EOF": "1"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			a := createACPAgent(t, env, ctx, bin, tc.id, sandbox, "autonomous", tc.env)
			a.send("hello").checkEnd(t, "completed")
			calls := a.calls()
			m := sessionRE.FindStringSubmatch(calls)
			if m == nil || !strings.HasSuffix(strings.TrimSpace(calls), tc.exit) {
				t.Fatalf("want a session and %q last:\n%s", tc.exit, calls)
			}
			if a.file(".wick/acp/"+tc.id+"/sessions/"+m[1]+".json") == "" {
				t.Fatalf("no session file %s after the run", m[1])
			}
			run := a.send("write /workspace/" + tc.id + ".txt kept")
			run.checkEnd(t, "completed")
			if got := run.text(); got != "The file now says: kept" {
				t.Fatalf("answer %q", got)
			}
			calls = a.calls()
			if strings.Count(calls, "session/new") != 1 || strings.Count(calls, "session/load "+m[1]) != 1 || strings.Count(calls, tc.exit) != 2 {
				t.Fatalf("want one session/new, one session/load of %s and two graceful exits:\n%s", m[1], calls)
			}
		})
	}

	t.Run("stderr tail of a failed start", func(t *testing.T) {
		t.Parallel()
		// 10001 bytes of "é" and the last line: the 8 KiB tail starts in
		// the middle of an "é", which is dropped.
		a := createACPAgent(t, env, ctx, bin, "broken", sandbox, "autonomous", map[string]any{"ACPTEST_FAIL_INIT": "10001"})
		run := a.send("hello")
		wantError(t, run, "exit code 4")
		msg := dataOf(run.events[len(run.events)-1])["message"].(string)
		const tailBytes = 8 << 10 // sandboxproc.StderrTailBytes
		tail := strings.Repeat("é", (tailBytes-len("\nthe last words.\n"))/2) + "\nthe last words."
		if !strings.Contains(msg, tail) || strings.Contains(msg, "é"+tail) || strings.Contains(msg, "the first line") ||
			strings.ContainsRune(msg, utf8.RuneError) || !utf8.ValidString(msg) {
			t.Fatalf("the error is not the 8 KiB tail of the agent's stderr, cut at a character: %.300q ... %.300q", msg, msg[max(0, len(msg)-300):])
		}
	})
}

// killACP kills the agent's ACP process with SIGKILL through the sandbox
// service's process API, as an out-of-memory kill or a crash would.
func killACP(t *testing.T, env *wickEnv, ctx context.Context, agentID string) {
	t.Helper()
	conn, err := dial.New(env.suite.Addrs["sandbox"], dial.WithIdentity(env.suite.Key))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	sb := sandboxv1.NewSandboxServiceClient(conn)
	uctx := as(ctx, "alice")
	list, err := sb.ListProcesses(uctx, &sandboxv1.ListProcessesRequest{AgentId: agentID, Tag: "acp:" + agentID})
	if err != nil {
		t.Fatal(err)
	}
	killed := 0
	for _, p := range list.GetProcesses() {
		if !p.GetRunning() {
			continue
		}
		if _, err := sb.SignalProcess(uctx, &sandboxv1.SignalProcessRequest{AgentId: agentID, Id: p.GetId(), Signal: sandboxv1.ProcessSignal_PROCESS_SIGNAL_SIGKILL}); err != nil {
			t.Fatal(err)
		}
		killed++
	}
	if killed != 1 {
		t.Fatalf("killed %d running ACP processes, want 1: %v", killed, list.GetProcesses())
	}
}

// TestACPAgentDocker runs the conversation in a Docker sandbox and restarts
// the container between two messages: the agent's state directory is on
// the workspace volume, so the next message loads the session.
func TestACPAgentDocker(t *testing.T) {
	cli, image := dockerSetup(t)
	manager := "wick-e2e-" + randomHex(6)
	removeManaged(t, cli, manager)
	bin := buildACPAgent(t)
	env := startWick(t, withDocker(image, manager))
	ctx, cancel := context.WithTimeout(t.Context(), runtimeDeadline)
	t.Cleanup(cancel)
	a := createACPAgent(t, env, ctx, bin, "restarted", map[string]any{"type": "docker", "image": image}, "autonomous", nil)

	run := a.send("write /workspace/a.txt in a container")
	run.checkEnd(t, "completed")
	if got := run.text(); got != "The file now says: in a container" {
		t.Fatalf("answer %q", got)
	}
	if got := a.file("a.txt"); got != "in a container\n" {
		t.Fatalf("a.txt = %q", got)
	}

	f := filters.NewArgs(filters.Arg("label", managerLabel+"="+manager))
	cs, err := cli.ContainerList(ctx, container.ListOptions{All: true, Filters: f})
	if err != nil || len(cs) != 1 {
		t.Fatalf("containers of the test: %v %v", cs, err)
	}
	before, err := cli.ContainerInspect(ctx, cs[0].ID)
	if err != nil {
		t.Fatal(err)
	}
	timeout := 5
	if err := cli.ContainerRestart(ctx, cs[0].ID, container.StopOptions{Timeout: &timeout}); err != nil {
		t.Fatal(err)
	}
	after, err := cli.ContainerInspect(ctx, cs[0].ID)
	if err != nil || after.State.StartedAt == before.State.StartedAt {
		t.Fatalf("the container did not restart: started %s, then %s (%v)", before.State.StartedAt, after.State.StartedAt, err)
	}

	run = a.send("hello")
	run.checkEnd(t, "completed")
	if got := run.text(); got != "Hello from the ACP test agent." {
		t.Fatalf("answer after the restart %q", got)
	}
	calls := a.calls()
	if strings.Count(calls, "session/new") != 1 || strings.Count(calls, "session/load sess-") != 1 {
		t.Fatalf("after the restart the session was not loaded:\n%s", calls)
	}

	// The whole scenario, with other agents, in containers too.
	runACPScenario(t, env, ctx, bin, map[string]any{"type": "docker", "image": image})
	t.Run("graceful stop", func(t *testing.T) {
		runACPGracefulStop(t, env, ctx, bin, map[string]any{"type": "docker", "image": image})
	})
}

// TestACPAgentReplicaRestart: the suite, the agent service with it, stops
// between two messages and a new one starts on the same Redis and
// workspaces. The thread keeps the session's id, so the next message,
// served by the new replica, loads the session the agent kept in its state
// directory.
func TestACPAgentReplicaRestart(t *testing.T) {
	t.Parallel()
	shared, ctx := restartable(t)
	first := startWick(t, shared)
	a := createACPAgent(t, first, ctx, buildACPAgent(t), "survivor", map[string]any{"type": "local"}, "autonomous", nil)
	run := a.send("hello")
	run.checkEnd(t, "completed")
	first.stop()

	a.env = startWick(t, shared)
	run = a.send("write /workspace/r.txt after the restart")
	run.checkEnd(t, "completed")
	if got := run.text(); got != "The file now says: after the restart" {
		t.Fatalf("answer %q", got)
	}
	calls := a.calls()
	if strings.Count(calls, "session/new") != 1 || strings.Count(calls, "session/load sess-") != 1 {
		t.Fatalf("want one session/new (before the restart) and one session/load (after):\n%s", calls)
	}
	if got := roles(threadMessages(t, a.env, a.thread)); got != "user,assistant,user,assistant,tool,assistant" {
		t.Fatalf("thread roles %s", got)
	}
}
