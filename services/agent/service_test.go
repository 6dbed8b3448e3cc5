package agent_test

import (
	"context"
	"io"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/protobuf/types/known/structpb"

	agentv1 "github.com/wick-agent/wick/gen/wick/agent/v1"
	llmv1 "github.com/wick-agent/wick/gen/wick/llm/v1"
	"github.com/wick-agent/wick/services/agent"
)

// calcThenAnswer calls calculate on the first turn of each run and answers
// with the tool's result on the next.
func calcThenAnswer(_ int, req *llmv1.StreamRequest) reply {
	last := req.GetMessages()[len(req.GetMessages())-1]
	if last.GetRole() == "tool" {
		return text("the answer ", "is "+last.GetContent())
	}
	return reply{calls: []*llmv1.ToolCall{call("c1", "calculate", map[string]any{"expr": "2+3"})}}
}

func memoryReplica(t *testing.T, s *suite, opts ...agent.Option) *replica {
	return s.agent(agent.MemoryStores(), nil, opts...)
}

func TestInvokeRunsToolRoundAndSavesThread(t *testing.T) {
	t.Parallel()
	s := newSuite(t, calcThenAnswer)
	a := memoryReplica(t, s)
	ctx := withTimeout(t, as("alice"), 30*time.Second)

	resp, err := a.client.Invoke(ctx, &agentv1.InvokeRequest{AgentId: "default", Messages: human("what is 2+3?")})
	if err != nil {
		t.Fatal(err)
	}
	if resp.GetStatus() != "done" || resp.GetContent() != "the answer is 5" || resp.GetRunId() == "" || resp.GetThreadId() == "" {
		t.Fatalf("Invoke = %v", resp)
	}
	roles := []string{}
	for _, m := range resp.GetMessages() {
		roles = append(roles, m.GetRole())
	}
	if strings.Join(roles, ",") != "assistant,tool,assistant" || resp.GetMessages()[1].GetContent() != "5" {
		t.Fatalf("added messages = %v", resp.GetMessages())
	}
	th, err := a.client.GetThread(ctx, &agentv1.GetThreadRequest{ThreadId: resp.GetThreadId()})
	if err != nil {
		t.Fatal(err)
	}
	if n := len(th.GetThread().GetMessages()); n != 4 || th.GetThread().GetAgentId() != "default" || th.GetThread().GetVersion() < 2 {
		t.Fatalf("thread = %v", th.GetThread())
	}
	// The second model call saw the tool result; every call carried alice.
	if got := s.llm.request(1).GetMessages(); got[len(got)-1].GetContent() != "5" {
		t.Fatalf("second model call messages = %v", got)
	}
	for _, u := range s.llm.users {
		if u != "alice" {
			t.Fatalf("model call made as %q", u)
		}
	}
	list, err := a.client.ListThreads(ctx, &agentv1.ListThreadsRequest{AgentId: "default"})
	if err != nil || len(list.GetThreads()) != 1 || list.GetThreads()[0].GetMessageCount() != 4 {
		t.Fatalf("ListThreads = %v, %v", list, err)
	}
	run, err := a.client.GetRun(ctx, &agentv1.GetRunRequest{RunId: resp.GetRunId()})
	if err != nil || run.GetRun().GetStatus() != "done" || run.GetRun().GetLastEventId() == "" {
		t.Fatalf("GetRun = %v, %v", run, err)
	}
}

func TestStreamEventsAndRejoin(t *testing.T) {
	t.Parallel()
	s := newSuite(t, calcThenAnswer)
	a := memoryReplica(t, s)
	ctx := withTimeout(t, as("alice"), 30*time.Second)

	st, err := a.client.Stream(ctx, &agentv1.StreamRequest{AgentId: "default", Messages: human("2+3?")})
	if err != nil {
		t.Fatal(err)
	}
	evs := collect(t, st.Recv)
	got := strings.Join(names(evs), ",")
	want := "on_run_start,on_tool_start,on_tool_end,on_usage,on_chat_model_stream,on_chat_model_stream,on_usage,done"
	if !sameSet(got, want) || evs[0].GetEvent() != "on_run_start" || evs[len(evs)-1].GetEvent() != "done" {
		t.Fatalf("events = %s", got)
	}
	runID := evs[0].GetRunId()
	for i, e := range evs {
		if e.GetId() == "" || e.GetRunId() != runID || e.GetThreadId() == "" {
			t.Fatalf("event %d = %v", i, e)
		}
	}
	if evs[0].GetData().GetStructValue().GetFields()["thread_id"].GetStringValue() != evs[0].GetThreadId() {
		t.Fatalf("on_run_start data = %v", evs[0].GetData())
	}
	// Re-joining after the third event replays exactly the rest.
	for _, after := range []int{-1, 2, len(evs) - 1} {
		req := &agentv1.JoinRunRequest{RunId: runID}
		if after >= 0 {
			req.AfterEventId = evs[after].GetId()
		}
		js, err := a.client.JoinRun(ctx, req)
		if err != nil {
			t.Fatal(err)
		}
		rest := collect(t, js.Recv)
		if len(rest) != len(evs)-after-1 {
			t.Fatalf("join after %d: %d events, want %d", after, len(rest), len(evs)-after-1)
		}
		for i, e := range rest {
			if e.GetId() != evs[after+1+i].GetId() {
				t.Fatalf("join after %d: event %d id %s, want %s", after, i, e.GetId(), evs[after+1+i].GetId())
			}
		}
	}
}

// sameSet compares comma lists as multisets: usage and tool events of one
// round may interleave differently.
func sameSet(a, b string) bool {
	count := map[string]int{}
	for _, x := range strings.Split(a, ",") {
		count[x]++
	}
	for _, x := range strings.Split(b, ",") {
		count[x]--
	}
	for _, n := range count {
		if n != 0 {
			return false
		}
	}
	return true
}

func TestValidation(t *testing.T) {
	t.Parallel()
	s := newSuite(t, calcThenAnswer)
	a := memoryReplica(t, s)
	ctx := withTimeout(t, as("alice"), 30*time.Second)
	long := strings.Repeat("x", 65)
	cases := []struct {
		name  string
		call  func() error
		code  codes.Code
		field string
	}{
		{"bad agent id", func() error {
			_, err := a.client.Invoke(ctx, &agentv1.InvokeRequest{AgentId: "../etc", Messages: human("hi")})
			return err
		}, codes.InvalidArgument, "agent_id"},
		{"long agent id", func() error {
			_, err := a.client.GetAgent(ctx, &agentv1.GetAgentRequest{AgentId: long})
			return err
		}, codes.InvalidArgument, "agent_id"},
		{"assistant input", func() error {
			_, err := a.client.Invoke(ctx, &agentv1.InvokeRequest{AgentId: "default", Messages: []*agentv1.Message{{Role: "assistant", Content: "x"}}})
			return err
		}, codes.InvalidArgument, "messages"},
		{"no input", func() error {
			_, err := a.client.Invoke(ctx, &agentv1.InvokeRequest{AgentId: "default"})
			return err
		}, codes.InvalidArgument, "messages"},
		{"tool call in input", func() error {
			_, err := a.client.Invoke(ctx, &agentv1.InvokeRequest{AgentId: "default", Messages: []*agentv1.Message{{Role: "user", Content: "x", ToolCalls: []*agentv1.ToolCall{{Id: "c", Name: "ls"}}}}})
			return err
		}, codes.InvalidArgument, "messages[0]"},
		{"empty content", func() error {
			_, err := a.client.Invoke(ctx, &agentv1.InvokeRequest{AgentId: "default", Messages: human("")})
			return err
		}, codes.InvalidArgument, "messages"},
		{"bad thread id", func() error {
			_, err := a.client.Invoke(ctx, &agentv1.InvokeRequest{AgentId: "default", ThreadId: "a b", Messages: human("hi")})
			return err
		}, codes.InvalidArgument, "thread_id"},
		{"unknown agent", func() error {
			_, err := a.client.Invoke(ctx, &agentv1.InvokeRequest{AgentId: "nope", Messages: human("hi")})
			return err
		}, codes.NotFound, "nope"},
		{"bad tool name", func() error {
			_, err := a.client.RegisterTool(ctx, &agentv1.RegisterToolRequest{Tool: &agentv1.ToolDefinition{Name: "bad name", Url: "http://x"}})
			return err
		}, codes.InvalidArgument, "tool.name"},
		{"task tool name", func() error {
			_, err := a.client.RegisterTool(ctx, &agentv1.RegisterToolRequest{Tool: &agentv1.ToolDefinition{Name: "check_task", Url: "http://x"}})
			return err
		}, codes.InvalidArgument, "background tasks"},
		{"bad task id", func() error {
			_, err := a.client.GetTask(ctx, &agentv1.GetTaskRequest{TaskId: "bad id"})
			return err
		}, codes.InvalidArgument, "task_id"},
		{"bad tool url", func() error {
			_, err := a.client.RegisterTool(ctx, &agentv1.RegisterToolRequest{Tool: &agentv1.ToolDefinition{Name: "t", Url: "ftp://x"}})
			return err
		}, codes.InvalidArgument, "tool"},
		{"bad backend mode", func() error {
			_, err := a.client.SwitchBackend(ctx, &agentv1.SwitchBackendRequest{AgentId: "default", Mode: "cloud"})
			return err
		}, codes.InvalidArgument, "mode"},
		{"bad sandbox url", func() error {
			_, err := a.client.SwitchBackend(ctx, &agentv1.SwitchBackendRequest{AgentId: "default", Mode: "remote", SandboxUrl: "http://x"})
			return err
		}, codes.InvalidArgument, "sandbox_url"},
		{"bad container action", func() error {
			_, err := a.client.ControlContainer(ctx, &agentv1.ControlContainerRequest{AgentId: "default", Action: "explode"})
			return err
		}, codes.InvalidArgument, "action"},
		{"unknown hook", func() error {
			_, err := a.client.UpdateHooks(ctx, &agentv1.UpdateHooksRequest{AgentId: "default", Hooks: map[string]bool{"nope": true}})
			return err
		}, codes.InvalidArgument, "hooks"},
		{"agent id a route shadows", func() error {
			_, err := a.client.CreateAgent(ctx, &agentv1.CreateAgentRequest{Agent: &agentv1.Agent{AgentId: "events"}})
			return err
		}, codes.InvalidArgument, "reserved"},
		{"bad model", func() error {
			_, err := a.client.CreateAgent(ctx, &agentv1.CreateAgentRequest{Agent: &agentv1.Agent{AgentId: "m", Model: structpb.NewNumberValue(3)}})
			return err
		}, codes.InvalidArgument, "model"},
		{"api key in model", func() error {
			m, _ := structpb.NewValue(map[string]any{"provider": "openai", "model": "gpt-4o", "api_key": "sk-secret"})
			_, err := a.client.CreateAgent(ctx, &agentv1.CreateAgentRequest{Agent: &agentv1.Agent{AgentId: "m", Model: m}})
			return err
		}, codes.InvalidArgument, "api_key"},
		{"bad after id", func() error {
			resp, err := a.client.Invoke(ctx, &agentv1.InvokeRequest{AgentId: "default", Messages: human("hi")})
			if err != nil {
				return err
			}
			js, err := a.client.JoinRun(ctx, &agentv1.JoinRunRequest{RunId: resp.GetRunId(), AfterEventId: "zzz"})
			if err != nil {
				return err
			}
			_, err = js.Recv()
			return err
		}, codes.InvalidArgument, "after_event_id"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.call()
			if code(err) != tc.code || !strings.Contains(err.Error(), tc.field) {
				t.Fatalf("err = %v, want %v naming %q", err, tc.code, tc.field)
			}
		})
	}
}

func TestUsersAreIsolated(t *testing.T) {
	t.Parallel()
	s := newSuite(t, calcThenAnswer)
	a := memoryReplica(t, s)
	alice, bob := withTimeout(t, as("alice"), 30*time.Second), withTimeout(t, as("bob"), 30*time.Second)

	if _, err := a.client.CreateAgent(alice, &agentv1.CreateAgentRequest{Agent: &agentv1.Agent{AgentId: "mine", Backend: &agentv1.BackendConfig{Type: "local"}}}); err != nil {
		t.Fatal(err)
	}
	resp, err := a.client.Invoke(alice, &agentv1.InvokeRequest{AgentId: "mine", Messages: human("hi")})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := a.client.WriteFile(alice, &agentv1.WriteFileRequest{AgentId: "mine", Path: "/workspace/a.txt", Content: "A"}); err != nil {
		t.Fatal(err)
	}
	checks := map[string]func() error{
		"agent": func() error {
			_, err := a.client.GetAgent(bob, &agentv1.GetAgentRequest{AgentId: "mine"})
			return err
		},
		"thread": func() error {
			_, err := a.client.GetThread(bob, &agentv1.GetThreadRequest{ThreadId: resp.GetThreadId()})
			return err
		},
		"run": func() error {
			_, err := a.client.GetRun(bob, &agentv1.GetRunRequest{RunId: resp.GetRunId()})
			return err
		},
		"cancel": func() error {
			_, err := a.client.CancelRun(bob, &agentv1.CancelRunRequest{RunId: resp.GetRunId()})
			return err
		},
		"join": func() error {
			js, err := a.client.JoinRun(bob, &agentv1.JoinRunRequest{RunId: resp.GetRunId()})
			if err != nil {
				return err
			}
			_, err = js.Recv()
			return err
		},
		"files": func() error {
			_, err := a.client.ReadFile(bob, &agentv1.ReadFileRequest{AgentId: "mine", Path: "/workspace/a.txt"})
			return err
		},
		"delete thread": func() error {
			_, err := a.client.DeleteThread(bob, &agentv1.DeleteThreadRequest{ThreadId: resp.GetThreadId()})
			return err
		},
	}
	for name, f := range checks {
		if err := f(); code(err) != codes.NotFound {
			t.Errorf("bob's %s: err = %v, want NotFound", name, err)
		}
	}
	list, err := a.client.ListAgents(bob, &agentv1.ListAgentsRequest{})
	if err != nil || len(list.GetAgents()) != 1 || list.GetAgents()[0].GetAgentId() != "default" || !list.GetAgents()[0].GetTemplate() {
		t.Fatalf("bob's agents = %v, %v", list, err)
	}
	threads, _ := a.client.ListThreads(bob, &agentv1.ListThreadsRequest{})
	if len(threads.GetThreads()) != 0 {
		t.Fatalf("bob sees threads %v", threads)
	}
	// Without a user the service refuses everything.
	if _, err := a.client.ListAgents(context.Background(), &agentv1.ListAgentsRequest{}); code(err) != codes.Unauthenticated {
		t.Fatalf("anonymous ListAgents = %v", err)
	}
}

// blockingScript answers the first call with a tool round, then blocks.
func blockingScript(n int, req *llmv1.StreamRequest) reply {
	if n == 0 {
		return reply{calls: []*llmv1.ToolCall{call("c1", "calculate", map[string]any{"expr": "1+1"})}}
	}
	last := req.GetMessages()[len(req.GetMessages())-1]
	if last.GetRole() == "user" && last.GetContent() == "quick" {
		return text("quick answer")
	}
	if n == 1 {
		return reply{block: true}
	}
	return text("ok")
}

func TestBusyThreadCancelAndEnqueue(t *testing.T) {
	t.Parallel()
	s := newSuite(t, blockingScript)
	a := memoryReplica(t, s)
	ctx := withTimeout(t, as("alice"), 30*time.Second)

	st, err := a.client.Stream(ctx, &agentv1.StreamRequest{AgentId: "default", Messages: human("go"), Background: true})
	if err != nil {
		t.Fatal(err)
	}
	first, err := st.Recv()
	if err != nil || first.GetEvent().GetEvent() != "on_run_start" {
		t.Fatalf("first event = %v, %v", first, err)
	}
	thread, runID := first.GetEvent().GetThreadId(), first.GetEvent().GetRunId()
	waitCall(t, s, 1)

	_, err = a.client.Invoke(ctx, &agentv1.InvokeRequest{AgentId: "default", ThreadId: thread, Messages: human("quick")})
	if code(err) != codes.FailedPrecondition {
		t.Fatalf("concurrent run = %v, want FailedPrecondition", err)
	}
	if _, err := a.client.DeleteThread(ctx, &agentv1.DeleteThreadRequest{ThreadId: thread}); code(err) != codes.FailedPrecondition {
		t.Fatalf("delete busy thread = %v", err)
	}
	queued := make(chan *agentv1.InvokeResponse, 1)
	go func() {
		resp, err := a.client.Invoke(ctx, &agentv1.InvokeRequest{AgentId: "default", ThreadId: thread, Messages: human("quick"), Enqueue: true})
		if err != nil {
			t.Error(err)
		}
		queued <- resp
	}()
	cr, err := a.client.CancelRun(ctx, &agentv1.CancelRunRequest{RunId: runID})
	if err != nil || cr.GetRun().GetStatus() != "cancelled" {
		t.Fatalf("CancelRun = %v, %v", cr, err)
	}
	rest := collect(t, st.Recv)
	if last := rest[len(rest)-1]; last.GetEvent() != "error" || last.GetData().GetStructValue().GetFields()["code"].GetStringValue() != "cancelled" {
		t.Fatalf("last event after cancel = %v", last)
	}
	resp := <-queued
	if resp.GetContent() != "quick answer" {
		t.Fatalf("queued run = %v", resp)
	}
	th, err := a.client.GetThread(ctx, &agentv1.GetThreadRequest{ThreadId: thread})
	if err != nil {
		t.Fatal(err)
	}
	checkNoDanglingCalls(t, th.GetThread().GetMessages())
}

func waitCall(t *testing.T, s *suite, n int) {
	t.Helper()
	deadline := time.After(20 * time.Second)
	for {
		select {
		case got := <-s.llm.started:
			if got >= n {
				return
			}
		case <-deadline:
			t.Fatalf("model call %d never started", n)
		}
	}
}

// checkNoDanglingCalls fails when an assistant tool call has no result.
func checkNoDanglingCalls(t *testing.T, msgs []*agentv1.Message) {
	t.Helper()
	answered := map[string]bool{}
	for _, m := range msgs {
		if m.GetRole() == "tool" {
			answered[m.GetToolCallId()] = true
		}
	}
	for _, m := range msgs {
		for _, c := range m.GetToolCalls() {
			if !answered[c.GetId()] {
				t.Fatalf("tool call %s has no result in %v", c.GetId(), msgs)
			}
		}
	}
}

func TestClientGoneCancelsRunUnlessBackground(t *testing.T) {
	t.Parallel()
	s := newSuite(t, func(n int, req *llmv1.StreamRequest) reply {
		if req.GetMessages()[len(req.GetMessages())-1].GetContent() == "bg" && n > 1 {
			return text("finished in the background")
		}
		return reply{block: n <= 1}
	})
	a := memoryReplica(t, s)
	base := withTimeout(t, as("alice"), 30*time.Second)

	ctx, cancel := context.WithCancel(base)
	st, err := a.client.Stream(ctx, &agentv1.StreamRequest{AgentId: "default", Messages: human("fg")})
	if err != nil {
		t.Fatal(err)
	}
	first, err := st.Recv()
	if err != nil {
		t.Fatal(err)
	}
	waitCall(t, s, 0)
	cancel()
	runID := first.GetEvent().GetRunId()
	waitStatus(t, a, base, runID, "cancelled")
}

func waitStatus(t *testing.T, r *replica, ctx context.Context, runID, want string) *agentv1.Run {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		resp, err := r.client.GetRun(ctx, &agentv1.GetRunRequest{RunId: runID})
		if err == nil && resp.GetRun().GetStatus() == want {
			return resp.GetRun()
		}
		if time.Now().After(deadline) {
			t.Fatalf("run %s: status %v (err %v), want %s", runID, resp.GetRun().GetStatus(), err, want)
		}
		time.Sleep(20 * time.Millisecond) // polling with a deadline
	}
}

func TestBackgroundRunSurvivesClient(t *testing.T) {
	t.Parallel()
	release := make(chan struct{})
	s := newSuite(t, func(n int, req *llmv1.StreamRequest) reply { return text("bg done") })
	_ = release
	a := memoryReplica(t, s)
	base := withTimeout(t, as("alice"), 30*time.Second)
	ctx, cancel := context.WithCancel(base)
	st, err := a.client.Stream(ctx, &agentv1.StreamRequest{AgentId: "default", Messages: human("bg"), Background: true})
	if err != nil {
		t.Fatal(err)
	}
	first, err := st.Recv()
	if err != nil {
		t.Fatal(err)
	}
	cancel()
	waitStatus(t, a, base, first.GetEvent().GetRunId(), "done")
	js, err := a.client.JoinRun(base, &agentv1.JoinRunRequest{RunId: first.GetEvent().GetRunId(), AfterEventId: first.GetEvent().GetId()})
	if err != nil {
		t.Fatal(err)
	}
	rest := collect(t, js.Recv)
	if rest[len(rest)-1].GetEvent() != "done" {
		t.Fatalf("rejoined events = %v", names(rest))
	}
}

func TestInteractiveApproval(t *testing.T) {
	t.Parallel()
	s := newSuite(t, calcThenAnswer)
	a := memoryReplica(t, s, agent.WithPollInterval(50*time.Millisecond))
	ctx := withTimeout(t, as("alice"), 30*time.Second)
	if _, err := a.client.CreateAgent(ctx, &agentv1.CreateAgentRequest{Agent: &agentv1.Agent{AgentId: "careful", Approval: "interactive", Tools: []string{"calculate"}}}); err != nil {
		t.Fatal(err)
	}
	resp, err := a.client.Invoke(ctx, &agentv1.InvokeRequest{AgentId: "careful", Messages: human("2+3?")})
	if err != nil {
		t.Fatal(err)
	}
	if resp.GetStatus() != "waiting_approval" || len(resp.GetInterrupt()) != 1 || resp.GetInterrupt()[0].GetName() != "calculate" {
		t.Fatalf("Invoke = %v", resp)
	}
	if _, err := a.client.ResumeRun(ctx, &agentv1.ResumeRunRequest{RunId: resp.GetRunId(), Decisions: []*agentv1.ApprovalDecision{{ToolCallId: "nope", Action: "approve"}}}); code(err) != codes.InvalidArgument {
		t.Fatalf("bad decision = %v", err)
	}
	if _, err := a.client.ResumeRun(ctx, &agentv1.ResumeRunRequest{RunId: resp.GetRunId(), Decisions: []*agentv1.ApprovalDecision{{ToolCallId: "c1", Action: "approve"}}}); err != nil {
		t.Fatal(err)
	}
	js, err := a.client.JoinRun(ctx, &agentv1.JoinRunRequest{RunId: resp.GetRunId()})
	if err != nil {
		t.Fatal(err)
	}
	evs := collect(t, js.Recv)
	got := strings.Join(names(evs), ",")
	if !strings.Contains(got, "on_interrupt") || evs[len(evs)-1].GetEvent() != "done" {
		t.Fatalf("events = %s", got)
	}
	if _, err := a.client.ResumeRun(ctx, &agentv1.ResumeRunRequest{RunId: resp.GetRunId()}); code(err) != codes.FailedPrecondition {
		t.Fatalf("resume of a finished run = %v", err)
	}
	th, _ := a.client.GetThread(ctx, &agentv1.GetThreadRequest{ThreadId: resp.GetThreadId()})
	msgs := th.GetThread().GetMessages()
	if msgs[len(msgs)-1].GetContent() != "the answer is 5" {
		t.Fatalf("thread = %v", msgs)
	}
}

func TestAgentsToolsHooksBackendAndEvents(t *testing.T) {
	t.Parallel()
	s := newSuite(t, calcThenAnswer)
	a := memoryReplica(t, s)
	ctx := withTimeout(t, as("alice"), 30*time.Second)

	watch, err := a.client.WatchEvents(ctx, &agentv1.WatchEventsRequest{})
	if err != nil {
		t.Fatal(err)
	}
	first, err := watch.Recv()
	if err != nil || first.GetEvent().GetEvent() != agent.EventSubscribed {
		t.Fatalf("first watch event = %v, %v", first, err)
	}
	bobWatch, err := a.client.WatchEvents(withTimeout(t, as("bob"), 30*time.Second), &agentv1.WatchEventsRequest{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := bobWatch.Recv(); err != nil {
		t.Fatal(err)
	}

	// A template changed by a user is cloned for that user only.
	hk, err := a.client.UpdateHooks(ctx, &agentv1.UpdateHooksRequest{AgentId: "default", Hooks: map[string]bool{"todolist": false}})
	if err != nil {
		t.Fatal(err)
	}
	for _, h := range hk.GetHooks() {
		if h.GetName() == "todolist" && h.GetEnabled() {
			t.Fatal("todolist still enabled")
		}
	}
	got, err := a.client.GetAgent(ctx, &agentv1.GetAgentRequest{AgentId: "default"})
	if err != nil || got.GetAgent().GetTemplate() || got.GetAgent().GetHooks()["todolist"] {
		t.Fatalf("alice's default = %v, %v", got, err)
	}
	bobs, _ := a.client.GetAgent(as("bob"), &agentv1.GetAgentRequest{AgentId: "default"})
	if !bobs.GetAgent().GetTemplate() {
		t.Fatal("bob's default is not the template")
	}

	// Backend switch: "remote" without a sandbox_url is Docker on the local engine.
	sw, err := a.client.SwitchBackend(ctx, &agentv1.SwitchBackendRequest{AgentId: "default", Mode: "remote"})
	if err != nil || sw.GetAgent().GetBackend().GetType() != "docker" || sw.GetAgent().GetBackend().GetSandboxUrl() != "" {
		t.Fatalf("switch to local docker = %v, %v", sw, err)
	}
	sw, err = a.client.SwitchBackend(ctx, &agentv1.SwitchBackendRequest{AgentId: "default", Mode: "remote", SandboxUrl: "tcp://10.0.0.5:2376", Image: "img:1"})
	if err != nil || sw.GetAgent().GetBackend().GetSandboxUrl() != "tcp://10.0.0.5:2376" || sw.GetAgent().GetBackend().GetImage() != "img:1" {
		t.Fatalf("switch to remote docker = %v, %v", sw, err)
	}
	sw, err = a.client.SwitchBackend(ctx, &agentv1.SwitchBackendRequest{AgentId: "default", Mode: "local"})
	if err != nil || sw.GetAgent().GetBackend().GetType() != "local" {
		t.Fatalf("switch to local = %v, %v", sw, err)
	}
	cc, err := a.client.ControlContainer(ctx, &agentv1.ControlContainerRequest{AgentId: "default", Action: "restart"})
	if err != nil || cc.GetStatus() != "running" {
		t.Fatalf("restart = %v, %v", cc, err)
	}
	cc, err = a.client.ControlContainer(ctx, &agentv1.ControlContainerRequest{AgentId: "default", Action: "stop"})
	if err != nil || cc.GetStatus() != "stopped" {
		t.Fatalf("stop = %v, %v", cc, err)
	}

	// External tools: headers never come back.
	params, _ := structpb.NewStruct(map[string]any{"type": "object", "properties": map[string]any{}})
	rt, err := a.client.RegisterTool(ctx, &agentv1.RegisterToolRequest{Tool: &agentv1.ToolDefinition{
		Name: "lookup", Description: "d", Parameters: params, Url: "https://example.invalid/hook", Headers: map[string]string{"Authorization": "Bearer sk-live-abcdefghijklmnopqrstuvwxyz"},
	}})
	if err != nil || strings.Contains(rt.String(), "abcdefghijklmnop") {
		t.Fatalf("RegisterTool = %v, %v", rt, err)
	}
	lt, err := a.client.ListTools(ctx, &agentv1.ListToolsRequest{})
	if err != nil || len(lt.GetTools()) != 1 || strings.Contains(lt.String(), "abcdefghijklmnop") {
		t.Fatalf("ListTools = %v, %v", lt, err)
	}
	if _, err := a.client.DeleteTool(ctx, &agentv1.DeleteToolRequest{Name: "lookup"}); err != nil {
		t.Fatal(err)
	}
	if _, err := a.client.DeleteTool(ctx, &agentv1.DeleteToolRequest{Name: "lookup"}); code(err) != codes.NotFound {
		t.Fatalf("second DeleteTool = %v", err)
	}

	// Agents of one's own.
	if _, err := a.client.CreateAgent(ctx, &agentv1.CreateAgentRequest{Agent: &agentv1.Agent{AgentId: "coder", Name: "Coder"}}); err != nil {
		t.Fatal(err)
	}
	if _, err := a.client.CreateAgent(ctx, &agentv1.CreateAgentRequest{Agent: &agentv1.Agent{AgentId: "coder"}}); code(err) != codes.AlreadyExists {
		t.Fatalf("duplicate CreateAgent = %v", err)
	}
	if _, err := a.client.DeleteAgent(ctx, &agentv1.DeleteAgentRequest{AgentId: "coder"}); err != nil {
		t.Fatal(err)
	}
	// Deleting alice's clone reverts her to the template; the template stays.
	if _, err := a.client.DeleteAgent(ctx, &agentv1.DeleteAgentRequest{AgentId: "default"}); err != nil {
		t.Fatal(err)
	}
	if _, err := a.client.DeleteAgent(ctx, &agentv1.DeleteAgentRequest{AgentId: "default"}); code(err) != codes.PermissionDenied {
		t.Fatalf("delete template = %v", err)
	}

	want := []string{"agent_updated", "backend_switched", "backend_switched", "backend_switched", "container_changed", "container_changed",
		"tool_registered", "tool_deleted", "agent_created", "agent_deleted", "agent_deleted"}
	for i, w := range want {
		ev, err := watch.Recv()
		if err != nil {
			t.Fatal(err)
		}
		if ev.GetEvent().GetEvent() != w {
			t.Fatalf("watch event %d = %v, want %s", i, ev.GetEvent(), w)
		}
		if strings.Contains(ev.String(), "abcdefghijklmnop") {
			t.Fatalf("secret in event %v", ev)
		}
	}
	// Bob saw none of alice's changes: his next event is his own.
	if _, err := a.client.CreateAgent(as("bob"), &agentv1.CreateAgentRequest{Agent: &agentv1.Agent{AgentId: "bobs"}}); err != nil {
		t.Fatal(err)
	}
	ev, err := bobWatch.Recv()
	if err != nil || ev.GetEvent().GetAgentId() != "bobs" {
		t.Fatalf("bob's event = %v, %v", ev, err)
	}
}

func TestFilesAndTerminal(t *testing.T) {
	t.Parallel()
	s := newSuite(t, calcThenAnswer)
	a := memoryReplica(t, s, agent.WithMaxTransferBytes(1<<20))
	ctx := withTimeout(t, as("alice"), 30*time.Second)

	if _, err := a.client.WriteFile(ctx, &agentv1.WriteFileRequest{AgentId: "default", Path: "/workspace/notes/a.txt", Content: "hello"}); err != nil {
		t.Fatal(err)
	}
	rf, err := a.client.ReadFile(ctx, &agentv1.ReadFileRequest{AgentId: "default", Path: "/workspace/notes/a.txt"})
	if err != nil || rf.GetContent() != "hello" {
		t.Fatalf("ReadFile = %v, %v", rf, err)
	}
	ls, err := a.client.ListFiles(ctx, &agentv1.ListFilesRequest{AgentId: "default", Path: "/workspace/notes"})
	if err != nil || len(ls.GetEntries()) != 1 || ls.GetEntries()[0].GetName() != "a.txt" {
		t.Fatalf("ListFiles = %v, %v", ls, err)
	}

	payload := make([]byte, 600<<10)
	for i := range payload {
		payload[i] = byte(i * 7)
	}
	up, err := a.client.UploadFile(ctx)
	if err != nil {
		t.Fatal(err)
	}
	up.Send(&agentv1.UploadFileRequest{Msg: &agentv1.UploadFileRequest_Header{Header: &agentv1.UploadFileHeader{AgentId: "default", Path: "/workspace/blob.bin"}}})
	for off := 0; off < len(payload); off += 100 << 10 {
		up.Send(&agentv1.UploadFileRequest{Msg: &agentv1.UploadFileRequest_Data{Data: payload[off:min(off+100<<10, len(payload))]}})
	}
	ur, err := up.CloseAndRecv()
	if err != nil || ur.GetBytesWritten() != int64(len(payload)) {
		t.Fatalf("UploadFile = %v, %v", ur, err)
	}
	dl, err := a.client.DownloadFile(ctx, &agentv1.DownloadFileRequest{AgentId: "default", Path: "/workspace/blob.bin"})
	if err != nil {
		t.Fatal(err)
	}
	var got []byte
	for {
		m, err := dl.Recv()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, m.GetData()...)
	}
	if string(got) != string(payload) {
		t.Fatalf("downloaded %d bytes, want the %d uploaded", len(got), len(payload))
	}

	// Over the limit, an upload is refused.
	up, _ = a.client.UploadFile(ctx)
	up.Send(&agentv1.UploadFileRequest{Msg: &agentv1.UploadFileRequest_Header{Header: &agentv1.UploadFileHeader{AgentId: "default", Path: "/workspace/big.bin"}}})
	big := make([]byte, 512<<10)
	for range 3 {
		if up.Send(&agentv1.UploadFileRequest{Msg: &agentv1.UploadFileRequest_Data{Data: big}}) != nil {
			break
		}
	}
	if _, err := up.CloseAndRecv(); code(err) != codes.ResourceExhausted {
		t.Fatalf("oversized upload = %v", err)
	}

	term, err := a.client.Terminal(ctx)
	if err != nil {
		t.Fatal(err)
	}
	term.Send(&agentv1.TerminalRequest{Msg: &agentv1.TerminalRequest_Start{Start: &agentv1.TerminalStart{AgentId: "default", Size: &agentv1.TerminalSize{Rows: 24, Cols: 80}}}})
	term.Send(&agentv1.TerminalRequest{Msg: &agentv1.TerminalRequest_Input{Input: []byte("ls\n")}})
	out, err := term.Recv()
	if err != nil || string(out.GetOutput()) != "echo:ls\n" {
		t.Fatalf("terminal output = %v, %v", out, err)
	}
	term.Send(&agentv1.TerminalRequest{Msg: &agentv1.TerminalRequest_Input{Input: []byte("exit\n")}})
	out, err = term.Recv()
	if err != nil || out.GetExitCode() != 7 {
		t.Fatalf("terminal exit = %v, %v", out, err)
	}
}

func TestSecretsRedactedInEvents(t *testing.T) {
	t.Parallel()
	s := newSuite(t, func(n int, req *llmv1.StreamRequest) reply {
		return text("your key is sk-ant-abcdefghijklmnopqrstuvwxyz0123")
	})
	a := memoryReplica(t, s)
	ctx := withTimeout(t, as("alice"), 30*time.Second)
	st, err := a.client.Stream(ctx, &agentv1.StreamRequest{AgentId: "default", Messages: human("key?")})
	if err != nil {
		t.Fatal(err)
	}
	for _, ev := range collect(t, st.Recv) {
		if strings.Contains(ev.String(), "abcdefghijklmnop") {
			t.Fatalf("secret in event %v", ev)
		}
	}
}

var _ = "done"

func TestRunUsesSandboxTools(t *testing.T) {
	t.Parallel()
	s := newSuite(t, func(_ int, req *llmv1.StreamRequest) reply {
		msgs := req.GetMessages()
		last := msgs[len(msgs)-1]
		switch {
		case last.GetRole() == "user":
			return reply{calls: []*llmv1.ToolCall{call("w1", "write_file", map[string]any{"path": "/workspace/hello.py", "content": "print('hi')\n"})}}
		case last.GetName() == "write_file":
			return reply{calls: []*llmv1.ToolCall{
				call("r1", "read_file", map[string]any{"path": "/workspace/hello.py"}),
				call("e1", "execute", map[string]any{"command": "cat hello.py | wc -l"}),
			}}
		default:
			var outs []string
			for _, m := range msgs {
				if m.GetRole() == "tool" {
					outs = append(outs, m.GetName()+":"+strings.TrimSpace(m.GetContent()))
				}
			}
			return text(strings.Join(outs, "|"))
		}
	})
	a := memoryReplica(t, s)
	ctx := withTimeout(t, as("alice"), 30*time.Second)
	resp, err := a.client.Invoke(ctx, &agentv1.InvokeRequest{AgentId: "default", Messages: human("write hello.py")})
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"write_file:", "read_file:", "print('hi')", "execute:"} {
		if !strings.Contains(resp.GetContent(), want) {
			t.Fatalf("content %q lacks %q", resp.GetContent(), want)
		}
	}
	rf, err := a.client.ReadFile(ctx, &agentv1.ReadFileRequest{AgentId: "default", Path: "/workspace/hello.py"})
	if err != nil || rf.GetContent() != "print('hi')\n" {
		t.Fatalf("file written by the agent = %v, %v", rf, err)
	}
	th, _ := a.client.GetThread(ctx, &agentv1.GetThreadRequest{ThreadId: resp.GetThreadId()})
	if th.GetThread().GetFiles()["/workspace/hello.py"] != "print('hi')\n" {
		t.Fatalf("state.Files = %v", th.GetThread().GetFiles())
	}
}

func TestListAvailableSkills(t *testing.T) {
	t.Parallel()
	s := newSuite(t, calcThenAnswer)
	a := memoryReplica(t, s)
	ctx := withTimeout(t, as("alice"), 30*time.Second)
	if _, err := a.client.CreateAgent(ctx, &agentv1.CreateAgentRequest{Agent: &agentv1.Agent{
		AgentId: "skilled", Backend: &agentv1.BackendConfig{Type: "local"}, Skills: &agentv1.PathsConfig{Paths: []string{"/workspace/skills"}},
	}}); err != nil {
		t.Fatal(err)
	}
	for name, desc := range map[string]string{"csv": "Analyze CSV files", "review": "Review code"} {
		if _, err := a.client.WriteFile(ctx, &agentv1.WriteFileRequest{AgentId: "skilled", Path: "/workspace/skills/" + name + "/SKILL.md",
			Content: "---\nname: " + name + "\ndescription: " + desc + "\n---\n# " + name + "\n"}); err != nil {
			t.Fatal(err)
		}
	}
	// Files that are not loaded are listed with a warning instead.
	for dir, content := range map[string]string{"notes": "# Notes\n", "Bad Name": "---\nname: Bad Name\ndescription: d\n---\n"} {
		if _, err := a.client.WriteFile(ctx, &agentv1.WriteFileRequest{AgentId: "skilled", Path: "/workspace/skills/" + dir + "/SKILL.md", Content: content}); err != nil {
			t.Fatal(err)
		}
	}
	for _, id := range []string{"skilled", ""} {
		resp, err := a.client.ListAvailableSkills(ctx, &agentv1.ListAvailableSkillsRequest{AgentId: id})
		if err != nil {
			t.Fatal(err)
		}
		sk := resp.GetSkills()
		if len(sk) != 2 || sk[0].GetName() != "csv" || sk[0].GetDescription() != "Analyze CSV files" || sk[1].GetPath() != "/workspace/skills/review/SKILL.md" {
			t.Fatalf("skills (agent %q) = %v", id, sk)
		}
		pr := resp.GetProblems()
		if len(pr) != 2 || pr[0].GetPath() != "/workspace/skills/Bad Name/SKILL.md" || !strings.Contains(pr[0].GetWarning(), `name "Bad Name" is not a folder-safe name`) ||
			pr[1].GetPath() != "/workspace/skills/notes/SKILL.md" || !strings.Contains(pr[1].GetWarning(), "no YAML front matter") {
			t.Fatalf("problems (agent %q) = %v", id, pr)
		}
	}
}

func TestApprovalTimeout(t *testing.T) {
	t.Parallel()
	s := newSuite(t, calcThenAnswer)
	a := memoryReplica(t, s, agent.WithApprovalTimeout(200*time.Millisecond), agent.WithPollInterval(50*time.Millisecond))
	ctx := withTimeout(t, as("alice"), 30*time.Second)
	if _, err := a.client.CreateAgent(ctx, &agentv1.CreateAgentRequest{Agent: &agentv1.Agent{AgentId: "careful", Approval: "interactive", Tools: []string{"calculate"}}}); err != nil {
		t.Fatal(err)
	}
	resp, err := a.client.Invoke(ctx, &agentv1.InvokeRequest{AgentId: "careful", Messages: human("2+3?")})
	if err != nil || resp.GetStatus() != "waiting_approval" {
		t.Fatalf("Invoke = %v, %v", resp, err)
	}
	waitStatus(t, a, ctx, resp.GetRunId(), "failed")
	th, err := a.client.GetThread(ctx, &agentv1.GetThreadRequest{ThreadId: resp.GetThreadId()})
	if err != nil {
		t.Fatal(err)
	}
	checkNoDanglingCalls(t, th.GetThread().GetMessages())
	// The thread is free again.
	if _, err := a.client.Invoke(ctx, &agentv1.InvokeRequest{AgentId: "default", ThreadId: resp.GetThreadId(), Messages: human("hi")}); code(err) != codes.InvalidArgument {
		t.Fatalf("run of another agent on the thread = %v, want InvalidArgument (thread belongs to careful)", err)
	}
}
