package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"

	agentv1 "github.com/wick-agent/wick/gen/wick/agent/v1"
	"github.com/wick-agent/wick/platform/testenv"
	"github.com/wick-agent/wick/wickserver/suite"
)

// The runtime scenarios (sub-agents, graceful stop, ask_user, tool_wait)
// through the whole suite: the LLM gateway replays inline scripts, commands
// run in a real local sandbox, state is in a real redis-server, and the
// test speaks only the gateway's REST and SSE.

// runtimeDeadline bounds one scenario; a hang fails it instead of the binary.
const runtimeDeadline = 3 * time.Minute

// startRuntime starts the suite on its own redis-server.
func startRuntime(t *testing.T) (*wickEnv, context.Context) {
	t.Helper()
	addr := testenv.Redis(t)
	env := startWick(t, func(c *suite.Config) { c.RedisAddr = addr })
	ctx, cancel := context.WithTimeout(t.Context(), runtimeDeadline)
	t.Cleanup(cancel)
	return env, ctx
}

// createAgent creates one of alice's agents through POST /agents, on the
// local backend: an agent made without a backend has no files or commands.
func createAgent(t *testing.T, env *wickEnv, agent map[string]any) {
	t.Helper()
	agent["backend"] = map[string]any{"type": "local"}
	if r := call(t, "POST", env.url+"/agents", aliceToken, jsonBody(agent)); r.code != http.StatusOK {
		t.Fatalf("create agent %v = %d %s", agent["agent_id"], r.code, r)
	}
}

// restCall sends one request as alice, wants 200, and decodes the answer.
func restCall(t *testing.T, method, url string, body any, out proto.Message) {
	t.Helper()
	var r httpResult
	if body == nil {
		r = call(t, method, url, aliceToken, nil)
	} else {
		r = call(t, method, url, aliceToken, jsonBody(body))
	}
	if r.code != http.StatusOK {
		t.Fatalf("%s %s = %d %s", method, url, r.code, r)
	}
	if err := protojson.Unmarshal(r.body, out); err != nil {
		t.Fatalf("%s %s answer %s: %v", method, url, r, err)
	}
}

// wantRefused checks that a request is refused with the HTTP status and the
// gRPC status name the gateway maps, and a message saying why.
func wantRefused(t *testing.T, r httpResult, code int, status, why string) {
	t.Helper()
	var e struct{ Status, Message string }
	if r.code != code || json.Unmarshal(r.body, &e) != nil || e.Status != status || !strings.Contains(e.Message, why) {
		t.Fatalf("= %d %s, want %d %s saying %q", r.code, r, code, status, why)
	}
}

// threadMessages reads a thread through GET /threads/{id} and checks that
// every tool call in it has its result.
func threadMessages(t *testing.T, env *wickEnv, threadID string) []*agentv1.Message {
	t.Helper()
	var th agentv1.GetThreadResponse
	restCall(t, "GET", env.url+"/threads/"+threadID, nil, &th)
	msgs := th.GetThread().GetMessages()
	answered := map[string]bool{}
	for _, m := range msgs {
		if m.GetRole() == "tool" {
			answered[m.GetToolCallId()] = true
		}
	}
	for _, m := range msgs {
		for _, c := range m.GetToolCalls() {
			if !answered[c.GetId()] {
				t.Fatalf("thread %s: tool call %s has no result: %v", threadID, c.GetId(), msgs)
			}
		}
	}
	return msgs
}

// toolResult is the content of the thread's result of a call.
func toolResult(msgs []*agentv1.Message, callID string) (string, bool) {
	for _, m := range msgs {
		if m.GetRole() == "tool" && m.GetToolCallId() == callID {
			return m.GetContent(), true
		}
	}
	return "", false
}

func roles(msgs []*agentv1.Message) string {
	var out []string
	for _, m := range msgs {
		out = append(out, m.GetRole())
	}
	return strings.Join(out, ",")
}

func dataOf(ev *agentv1.StreamEvent) map[string]any { return ev.GetData().GetStructValue().AsMap() }

// all returns the events of a kind, in order.
func (r runEvents) all(kind string) []*agentv1.StreamEvent {
	var out []*agentv1.StreamEvent
	for _, ev := range r.events {
		if ev.GetEvent() == kind {
			out = append(out, ev)
		}
	}
	return out
}

// toolEnd is the output and the error of the on_tool_end of a call.
func (r runEvents) toolEnd(t *testing.T, callID string) (output, errText string) {
	t.Helper()
	for _, ev := range r.all("on_tool_end") {
		if d := dataOf(ev); d["tool_call_id"] == callID {
			output, _ = d["output"].(string)
			errText, _ = d["error"].(string)
			return output, errText
		}
	}
	t.Fatalf("no on_tool_end for %s in %v", callID, r.names())
	return "", ""
}

// toolOutput is the output of a call that succeeded.
func (r runEvents) toolOutput(t *testing.T, callID string) string {
	t.Helper()
	out, errText := r.toolEnd(t, callID)
	if errText != "" {
		t.Fatalf("call %s failed: %s", callID, errText)
	}
	return out
}

func (r runEvents) names() []string {
	var out []string
	for _, ev := range r.events {
		out = append(out, ev.GetEvent())
	}
	return out
}

// checkEnd checks that the run's one done event is its last event, with
// the stop reason, and that no error event came.
func (r runEvents) checkEnd(t *testing.T, stopReason string) {
	t.Helper()
	if n := len(r.all("done")); n != 1 {
		t.Fatalf("%d top-level done events: %v", n, r.names())
	}
	if errs := r.all("error"); len(errs) > 0 {
		t.Fatalf("error events: %v", errs)
	}
	last := r.events[len(r.events)-1]
	if last.GetEvent() != "done" || dataOf(last)["stop_reason"] != stopReason {
		t.Fatalf("last event %v, want done with stop_reason %q", last, stopReason)
	}
}

// TestRuntimeSubagents: one turn of the parent calls task twice; the two
// declared children run at once (each one's command waits until the other
// has started its own, so children run one after the other would time
// out), one writes a file, and the parent's next turn reads it.
func TestRuntimeSubagents(t *testing.T) {
	t.Parallel()
	env, ctx := startRuntime(t)
	// Each child waits in its command for the other's mark file.
	const rendezvous = `touch %[1]s.ready && until [ -e %[2]s.ready ]; do sleep 0.05; done && echo %[1]s met %[2]s`
	meet := func(me, other string) string { return fmt.Sprintf(rendezvous, me, other) }
	writer := `script:[
		{"tool_calls":[{"id":"w1","name":"write_file","arguments":{"path":"/workspace/child-note.txt","content":"written by the writer child\n"}}]},
		{"tool_calls":[{"id":"w2","name":"execute","arguments":{"command":"` + meet("writer", "checker") + `"}}]},
		{"text":"Note written."}]`
	checker := `script:[
		{"tool_calls":[{"id":"c1","name":"execute","arguments":{"command":"` + meet("checker", "writer") + `"}}]},
		{"text":"Met the writer."}]`
	parent := `script:[
		{"tool_calls":[
			{"id":"t_writer","name":"task","arguments":{"subagent_type":"writer","description":"write the note"}},
			{"id":"t_checker","name":"task","arguments":{"subagent_type":"checker","description":"meet the writer"}}]},
		{"tool_calls":[{"id":"r1","name":"read_file","arguments":{"path":"/workspace/child-note.txt"}}]},
		{"text":"The writer's note is read."}]`
	createAgent(t, env, map[string]any{
		"agent_id": "delegator", "model": parent, "tools": []string{"task"},
		"subagents": []map[string]any{
			{"name": "writer", "description": "writes the note", "model": writer, "timeout": "90s"},
			{"name": "checker", "description": "meets the writer", "model": checker, "timeout": "90s"},
		},
	})

	resp := openSSE(t, ctx, "POST", env.url+"/agents/delegator/stream", aliceToken, jsonBody(userMessage("delegate", nil)))
	run := decodeRun(t, readEvents(t, resp.Body))
	run.checkEnd(t, "completed")
	runID := run.runID()

	// One start and one end per task call, tagged with the parent's run and
	// call; both children started before either ended.
	wantCall := map[string]string{"writer": "t_writer", "checker": "t_checker"}
	children := map[string]map[string]any{} // by name: the start's tags
	for _, kind := range []string{"on_subagent_start", "on_subagent_event", "on_subagent_end"} {
		evs := run.all(kind)
		if len(evs) < 2 {
			t.Fatalf("%d %s events: %v", len(evs), kind, run.names())
		}
		for _, ev := range evs {
			d := dataOf(ev)
			name := ev.GetName()
			if ev.GetRunId() != runID || d["parent_run_id"] != runID || d["tool_call_id"] != wantCall[name] || d["depth"] != 1.0 || d["name"] != name {
				t.Fatalf("%s of %q tagged %v (envelope run %s), want parent run %s and call %s at depth 1", kind, name, d, ev.GetRunId(), runID, wantCall[name])
			}
			if kind == "on_subagent_start" {
				children[name] = d
				continue
			}
			if start := children[name]; start == nil || d["run_id"] != start["run_id"] || d["thread_id"] != start["thread_id"] {
				t.Fatalf("%s of %q with tags %v, its start had %v", kind, name, d, start)
			}
		}
	}
	if len(children) != 2 {
		t.Fatalf("children started: %v", children)
	}
	var starts, ends []int
	for i, ev := range run.events {
		switch ev.GetEvent() {
		case "on_subagent_start":
			starts = append(starts, i)
		case "on_subagent_end":
			ends = append(ends, i)
		}
	}
	if starts[len(starts)-1] > ends[0] {
		t.Fatalf("a child ended before the other started: %v", run.names())
	}
	for _, ev := range run.all("on_subagent_end") {
		if d := dataOf(ev); d["status"] != "completed" {
			t.Fatalf("child %s ended %v", ev.GetName(), d)
		}
	}
	// Each child's own events are wrapped, its done among them, and its
	// command met the other child's.
	childDone := map[string]int{}
	met := map[string]bool{}
	for _, ev := range run.all("on_subagent_event") {
		inner, _ := dataOf(ev)["event"].(map[string]any)
		switch inner["event"] {
		case "done":
			childDone[ev.GetName()]++
		case "on_tool_end":
			out, _ := inner["data"].(map[string]any)["output"].(string)
			if strings.Contains(out, ev.GetName()+" met ") {
				met[ev.GetName()] = true
			}
		}
	}
	if childDone["writer"] != 1 || childDone["checker"] != 1 || !met["writer"] || !met["checker"] {
		t.Fatalf("children's done events %v, rendezvous %v", childDone, met)
	}

	if got := run.toolOutput(t, "t_writer"); got != "Note written." {
		t.Errorf("writer's task result %q", got)
	}
	if got := run.toolOutput(t, "t_checker"); got != "Met the writer." {
		t.Errorf("checker's task result %q", got)
	}
	if got := run.toolOutput(t, "r1"); !strings.Contains(got, "written by the writer child") {
		t.Errorf("the parent's read_file gave %q, not the child's file", got)
	}
	if !strings.Contains(run.text(), "The writer's note is read.") {
		t.Errorf("the parent's answer %q", run.text())
	}
	msgs := threadMessages(t, env, run.threadID())
	if got, _ := toolResult(msgs, "r1"); !strings.Contains(got, "written by the writer child") {
		t.Errorf("thread's read_file result %q", got)
	}

	// A child's thread is its own, readable, and holds its goal.
	childMsgs := threadMessages(t, env, children["writer"]["thread_id"].(string))
	if len(childMsgs) == 0 || childMsgs[0].GetContent() != "write the note" || childMsgs[len(childMsgs)-1].GetContent() != "Note written." {
		t.Fatalf("writer's thread: %v", childMsgs)
	}
}

// TestRuntimeStopAndContinue: a graceful stop asked while a tool round runs
// lets the round finish and ends the run "stopped"; continuing it starts a
// new run on the same thread that plays the next turn.
func TestRuntimeStopAndContinue(t *testing.T) {
	t.Parallel()
	env, ctx := startRuntime(t)
	// The command waits for a file the test writes once the stop is asked.
	createAgent(t, env, map[string]any{"agent_id": "stopper", "model": `script:[
		{"tool_calls":[{"id":"x1","name":"execute","arguments":{"command":"until [ -e release.txt ]; do sleep 0.05; done; cat release.txt"}}]},
		{"text":"Continued after the stop."}]`})

	resp := openSSE(t, ctx, "POST", env.url+"/agents/stopper/stream", aliceToken, jsonBody(userMessage("work", nil)))
	es := newEventStream(resp.Body)
	seen := es.until(t, "on_tool_start")
	runID := decodeRun(t, seen).runID()

	var stop agentv1.StopRunResponse
	restCall(t, "POST", env.url+"/runs/"+runID+"/stop", map[string]any{}, &stop)
	if stop.GetRun().GetStatus() != "running" {
		t.Fatalf("stop answered %v", stop.GetRun())
	}
	restCall(t, "PUT", env.url+"/agents/stopper/files/write", map[string]any{"path": "/workspace/release.txt", "content": "released\n"}, &agentv1.WriteFileResponse{})

	run := decodeRun(t, append(seen, es.rest(t)...))
	run.checkEnd(t, "stopped")
	if got := run.toolOutput(t, "x1"); !strings.Contains(got, "released") {
		t.Fatalf("the round in flight did not finish: execute gave %q", got)
	}
	end := slices.IndexFunc(run.events, func(ev *agentv1.StreamEvent) bool { return ev.GetEvent() == "on_tool_end" })
	if slices.ContainsFunc(run.events[end:], func(ev *agentv1.StreamEvent) bool { return ev.GetEvent() == "on_chat_model_stream" }) {
		t.Fatalf("the model was called after the stop: %v", run.names())
	}
	var got agentv1.GetRunResponse
	restCall(t, "GET", env.url+"/runs/"+runID, nil, &got)
	if got.GetRun().GetStatus() != "stopped" {
		t.Fatalf("stopped run's record %v", got.GetRun())
	}
	threadID := run.threadID()
	if msgs := threadMessages(t, env, threadID); roles(msgs) != "user,assistant,tool" {
		t.Fatalf("thread after the stop: %s", roles(msgs))
	}

	var cont agentv1.ContinueRunResponse
	restCall(t, "POST", env.url+"/runs/"+runID+"/continue", map[string]any{}, &cont)
	next := cont.GetRun()
	if next.GetRunId() == "" || next.GetRunId() == runID || next.GetThreadId() != threadID {
		t.Fatalf("continue started %v", next)
	}
	follow := openSSE(t, ctx, "GET", env.url+"/runs/"+next.GetRunId()+"/events", aliceToken, nil)
	more := decodeRun(t, readEvents(t, follow.Body))
	more.checkEnd(t, "completed")
	if more.runID() != next.GetRunId() || more.text() != "Continued after the stop." {
		t.Fatalf("continued run %s said %q", more.runID(), more.text())
	}
	msgs := threadMessages(t, env, threadID)
	if roles(msgs) != "user,assistant,tool,assistant" || msgs[len(msgs)-1].GetContent() != "Continued after the stop." {
		t.Fatalf("thread after continuing: %s, last %q", roles(msgs), msgs[len(msgs)-1].GetContent())
	}
	if res, _ := toolResult(msgs, "x1"); !strings.Contains(res, "released") {
		t.Fatalf("the stopped round's result %q", res)
	}

	for _, tc := range []struct{ name, path, why string }{
		{"continue twice", "/runs/" + runID + "/continue", "changed since"},
		{"continue a done run", "/runs/" + next.GetRunId() + "/continue", "only a stopped run"},
		{"stop a done run", "/runs/" + next.GetRunId() + "/stop", "is done"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			wantRefused(t, call(t, "POST", env.url+tc.path, aliceToken, jsonBody(map[string]any{})), http.StatusBadRequest, "FAILED_PRECONDITION", tc.why)
		})
	}
}

// TestRuntimeAskUser: a run asks the user; the client leaves and re-joins
// the run's events, as after a reload, sees the question, and answers it;
// the answer is the tool's result and the run finishes.
func TestRuntimeAskUser(t *testing.T) {
	t.Parallel()
	env, ctx := startRuntime(t)
	createAgent(t, env, map[string]any{"agent_id": "asker", "tools": []string{"ask_user"}, "model": `script:[
		{"tool_calls":[{"id":"q1","name":"ask_user","arguments":{"question":"Which colour?","choices":["red","blue"]}}]},
		{"text":"Painting it."}]`})

	first, leave := context.WithCancel(ctx)
	resp := openSSE(t, first, "POST", env.url+"/agents/asker/stream", aliceToken, jsonBody(userMessage("paint it", map[string]any{"background": true})))
	runID := decodeRun(t, readUntil(t, resp.Body, "on_interrupt")).runID()
	leave()

	joined := openSSE(t, ctx, "GET", env.url+"/runs/"+runID+"/events", aliceToken, nil)
	es := newEventStream(joined.Body)
	seen := es.until(t, "on_interrupt")
	asked := decodeRun(t, seen)
	q := dataOf(asked.find("on_interrupt", ""))
	if q["kind"] != "question" || q["question"] != "Which colour?" || q["tool_call_id"] != "q1" || len(q["choices"].([]any)) != 2 {
		t.Fatalf("question event %v", q)
	}
	if asked.find("on_tool_end", "") != nil {
		t.Fatalf("the question ended before it was answered: %v", asked.names())
	}
	answer := func(d map[string]any) httpResult {
		return call(t, "POST", env.url+"/runs/"+runID+"/resume", aliceToken, jsonBody(map[string]any{"decisions": []any{d}}))
	}
	for _, tc := range []struct {
		name string
		d    map[string]any
		why  string
	}{
		{"another call", map[string]any{"tool_call_id": "q9", "action": "answer", "message": "red"}, "is not the question"},
		{"another action", map[string]any{"tool_call_id": "q1", "action": "approve"}, `the action is "answer"`},
		{"empty answer", map[string]any{"tool_call_id": "q1", "action": "answer"}, "the answer is required"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			wantRefused(t, answer(tc.d), http.StatusBadRequest, "INVALID_ARGUMENT", tc.why)
		})
	}
	if r := answer(map[string]any{"tool_call_id": "q1", "action": "answer", "message": "blue"}); r.code != http.StatusOK {
		t.Fatalf("answer = %d %s", r.code, r)
	}
	run := decodeRun(t, append(seen, es.rest(t)...))
	run.checkEnd(t, "completed")
	if got := run.toolOutput(t, "q1"); got != "blue" {
		t.Fatalf("ask_user's result %q, want the answer", got)
	}
	msgs := threadMessages(t, env, run.threadID())
	if got, _ := toolResult(msgs, "q1"); got != "blue" || msgs[len(msgs)-1].GetContent() != "Painting it." {
		t.Fatalf("thread: q1 = %q, ends with %q", got, msgs[len(msgs)-1].GetContent())
	}

	// Answers to runs that asked nothing: the one answered, now done, and
	// one that waits for the approval of a command.
	createAgent(t, env, map[string]any{"agent_id": "careful", "approval": "interactive", "model": `script:[
		{"tool_calls":[{"id":"k1","name":"execute","arguments":{"command":"echo hi"}}]},
		{"text":"ok"}]`})
	inv := call(t, "POST", env.url+"/agents/careful/invoke", aliceToken, jsonBody(userMessage("run it", nil)))
	var waiting struct {
		RunID  string `json:"run_id"`
		Status string `json:"status"`
	}
	if inv.code != http.StatusOK || json.Unmarshal(inv.body, &waiting) != nil || waiting.Status != "waiting_approval" {
		t.Fatalf("interactive invoke = %d %s", inv.code, inv)
	}
	t.Cleanup(func() {
		call(t, "POST", env.url+"/runs/"+waiting.RunID+"/cancel", aliceToken, jsonBody(map[string]any{}))
	})
	for _, tc := range []struct{ name, runID, callID string }{
		{"a done run", runID, "q1"},
		{"a run waiting for approval", waiting.RunID, "k1"},
	} {
		t.Run("answer to "+tc.name, func(t *testing.T) {
			r := call(t, "POST", env.url+"/runs/"+tc.runID+"/resume", aliceToken, jsonBody(map[string]any{"decisions": []any{
				map[string]any{"tool_call_id": tc.callID, "action": "answer", "message": "red"},
			}}))
			wantRefused(t, r, http.StatusBadRequest, "FAILED_PRECONDITION", "asked no question")
		})
	}
}

// TestRuntimeToolWaitAny: with tool_wait "any" the round goes on after the
// fast command; the slow one, which waits for a file nobody writes, is
// cancelled and answered as not needed.
func TestRuntimeToolWaitAny(t *testing.T) {
	t.Parallel()
	env, ctx := startRuntime(t)
	createAgent(t, env, map[string]any{"agent_id": "racer", "tool_wait": "any", "model": `script:[
		{"tool_calls":[
			{"id":"slow","name":"execute","arguments":{"command":"until [ -e never.txt ]; do sleep 0.05; done"}},
			{"id":"fast","name":"execute","arguments":{"command":"echo fast done"}}]},
		{"text":"Went on with the fast one."}]`})
	var ag agentv1.GetAgentResponse
	restCall(t, "GET", env.url+"/agents/racer", nil, &ag)
	if ag.GetAgent().GetToolWait() != "any" {
		t.Fatalf("agent's tool_wait %q", ag.GetAgent().GetToolWait())
	}

	resp := openSSE(t, ctx, "POST", env.url+"/agents/racer/stream", aliceToken, jsonBody(userMessage("race", nil)))
	run := decodeRun(t, readEvents(t, resp.Body))
	run.checkEnd(t, "completed")
	if n, m := len(run.all("on_tool_start")), len(run.all("on_tool_end")); n != 2 || m != 2 {
		t.Fatalf("%d tool starts, %d ends: %v", n, m, run.names())
	}
	const notNeeded = "cancelled: not needed, the round went on with the results that came first (tool_wait any)"
	if got := run.toolOutput(t, "fast"); !strings.Contains(got, "fast done") {
		t.Fatalf("fast call's output %q", got)
	}
	if out, errText := run.toolEnd(t, "slow"); out != "" || errText != notNeeded {
		t.Fatalf("slow call's end: output %q, error %q", out, errText)
	}
	if run.text() != "Went on with the fast one." {
		t.Fatalf("answer %q", run.text())
	}
	msgs := threadMessages(t, env, run.threadID())
	slow, _ := toolResult(msgs, "slow")
	fast, _ := toolResult(msgs, "fast")
	if slow != notNeeded || !strings.Contains(fast, "fast done") {
		t.Fatalf("thread results: slow %q, fast %q", slow, fast)
	}
}
