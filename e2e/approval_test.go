package e2e

import (
	"context"
	"errors"
	"io"
	"net/http"
	"os"
	"testing"

	"github.com/wick-agent/wick/platform/testenv"
	"github.com/wick-agent/wick/services/sandbox"
	"github.com/wick-agent/wick/wickserver/suite"
)

// TestRuntimeApprovalAlways: an interactive agent's call approved with
// "always" through the gateway's REST resume is remembered on the thread:
// the next run's call of the same tool runs without an interrupt, and so
// does one after the suite restarts on the same Redis, served by the new
// agent service, which loads the decision with the thread.
func TestRuntimeApprovalAlways(t *testing.T) {
	t.Parallel()
	shared, ctx := restartable(t)
	env := startWick(t, shared)
	// The script's turn is the number of assistant messages on the
	// thread: each run writes one file, then answers.
	createAgent(t, env, map[string]any{"agent_id": "trusting", "approval": "interactive", "model": `script:[
		{"tool_calls":[{"id":"w1","name":"write_file","arguments":{"path":"/workspace/one.txt","content":"one\n"}}]},
		{"text":"Wrote one."},
		{"tool_calls":[{"id":"w2","name":"write_file","arguments":{"path":"/workspace/two.txt","content":"two\n"}}]},
		{"text":"Wrote two."},
		{"tool_calls":[{"id":"w3","name":"write_file","arguments":{"path":"/workspace/three.txt","content":"three\n"}}]},
		{"text":"Wrote three."}]`})
	thread := ""
	open := func(text string) *eventStream {
		t.Helper()
		extra := map[string]any{}
		if thread != "" {
			extra["thread_id"] = thread
		}
		resp := openSSE(t, ctx, "POST", env.url+"/agents/trusting/stream", aliceToken, jsonBody(userMessage(text, extra)))
		return newEventStream(resp.Body)
	}
	file := func(name string) string {
		t.Helper()
		r := call(t, "GET", env.url+"/agents/trusting/files/raw/workspace/"+name, aliceToken, nil)
		if r.code != http.StatusOK {
			return ""
		}
		return string(r.body)
	}

	es := open("write one")
	seen := es.until(t, "on_interrupt")
	asked := decodeRun(t, seen)
	if data := dataOf(asked.find("on_interrupt", "")); data["always"] != true {
		t.Fatalf("the interrupt does not offer always: %v", data)
	}
	r := call(t, "POST", env.url+"/runs/"+asked.runID()+"/resume", aliceToken, jsonBody(map[string]any{"decisions": []any{
		map[string]any{"tool_call_id": "w1", "action": "approve", "always": true},
	}}))
	if r.code != http.StatusOK {
		t.Fatalf("resume = %d %s", r.code, r)
	}
	run := decodeRun(t, append(seen, es.rest(t)...))
	run.checkEnd(t, "completed")
	thread = run.threadID()
	if file("one.txt") != "one\n" {
		t.Fatalf("one.txt = %q", file("one.txt"))
	}

	for _, step := range []struct {
		name, text, callID, file, content, answer string
		restart                                   bool
	}{
		{"next run", "write two", "w2", "two.txt", "two\n", "Wrote two.", false},
		{"after a restart", "write three", "w3", "three.txt", "three\n", "Wrote three.", true},
	} {
		if step.restart {
			env.stop()
			env = startWick(t, shared)
		}
		run := decodeRun(t, unasked(t, open(step.text)))
		run.checkEnd(t, "completed")
		if run.find("on_interrupt", "") != nil || run.find("on_tool_start", "write_file") == nil || run.text() != step.answer {
			t.Fatalf("%s: asked again or did not run the call: %q %v", step.name, run.text(), run.names())
		}
		if _, errText := run.toolEnd(t, step.callID); errText != "" || file(step.file) != step.content {
			t.Fatalf("%s: call ended with %q, %s = %q", step.name, errText, step.file, file(step.file))
		}
	}
}

// unasked reads a run's events to the end and fails at an on_interrupt: a
// run asked again would wait for a decision until the test's deadline.
func unasked(t *testing.T, es *eventStream) []sseMessage {
	t.Helper()
	var out []sseMessage
	for {
		ev, err := es.next()
		if errors.Is(err, io.EOF) {
			return out
		}
		if err != nil {
			t.Fatalf("read event stream: %v", err)
		}
		if ev.Event == "on_interrupt" {
			t.Fatalf("the run asked again: %s", ev.Data)
		}
		out = append(out, ev)
	}
}

// restartable is the option of suites that stand in for one another: a
// suite started with it, stopped, and started again finds the same Redis
// and sandbox workspaces. ctx bounds the test.
func restartable(t *testing.T) (suiteOption, context.Context) {
	t.Helper()
	redisAddr := testenv.Redis(t)
	stateDir, err := os.MkdirTemp("", "wkr") // short: sandbox sockets live here
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = sandbox.RemoveStateDir(stateDir) })
	ctx, cancel := context.WithTimeout(t.Context(), runtimeDeadline)
	t.Cleanup(cancel)
	return func(c *suite.Config) { c.RedisAddr, c.Sandbox.StateDir = redisAddr, stateDir }, ctx
}
