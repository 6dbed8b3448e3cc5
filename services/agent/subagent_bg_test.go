package agent_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	agentv1 "github.com/wick-agent/wick/gen/wick/agent/v1"
	llmv1 "github.com/wick-agent/wick/gen/wick/llm/v1"
	"github.com/wick-agent/wick/platform/testenv"
	"github.com/wick-agent/wick/services/agent"
)

// bgTask is a task tool call asking for the background.
func bgTask(id, goal string) *llmv1.ToolCall {
	return call(id, "task", map[string]any{"description": goal, "background": true})
}

// bgChildScript: the parent ("go") hands "block" to a background sub-agent,
// says "started" when the call answers, and "saw: <result>" when the task's
// note arrives. The child calls native_block, calls it again when that
// call did not open (its replica stopped), then answers with what it got.
func bgChildScript() func(int, *llmv1.StreamRequest) reply {
	return script(func(c conversation) reply {
		switch {
		case c.goal == "go" && strings.HasPrefix(c.last.GetContent(), "[background task"):
			return text("saw: " + strings.SplitN(c.last.GetContent(), "\n", 2)[1])
		case c.goal == "go" && c.last.GetRole() == "tool":
			return text("started")
		case c.goal == "go":
			return reply{calls: []*llmv1.ToolCall{bgTask("t1", "block")}}
		case c.turns == 0:
			return reply{calls: []*llmv1.ToolCall{call("b1", "native_block", nil)}}
		case c.last.GetRole() == "tool" && c.last.GetContent() != "opened":
			return reply{calls: []*llmv1.ToolCall{call("b2", "native_block", nil)}}
		default:
			return text("child done: " + c.outputs)
		}
	})
}

// startBGChild runs the parent's first turn on r: it must end while the
// background child is still inside native_block. It returns the parent's
// thread, the task and the child's thread.
func startBGChild(t *testing.T, r *replica, b *blocker, ctx context.Context) (thread string, task *agentv1.Task, childThread string) {
	t.Helper()
	evs := streamRun(t, r, ctx, "lead", "go")
	if last := evs[len(evs)-1]; last.GetEvent() != "done" {
		t.Fatalf("first turn ended with %v", last)
	}
	thread = evs[0].GetThreadId()
	if got := lastMessage(t, r, ctx, thread).GetContent(); got != "started" {
		t.Fatalf("first turn answered %q", got)
	}
	starts := ofKind(evs, "on_task_start")
	if len(starts) != 1 {
		t.Fatalf("task starts in %v", names(evs))
	}
	sub := starts[0].GetData().GetStructValue().GetFields()["subagent"].GetStructValue().GetFields()
	childThread = sub["thread_id"].GetStringValue()
	if !strings.HasPrefix(childThread, "th_sub_") || sub["name"].GetStringValue() != "general-purpose" {
		t.Fatalf("on_task_start names the child %v", sub)
	}
	var out string
	for _, e := range ofKind(evs, "on_tool_end") {
		out = field(e, "output")
	}
	tasks := threadTasks(t, r, ctx, thread)
	if len(tasks) != 1 || tasks[0].GetKind() != "subagent" || tasks[0].GetTool() != "task" || tasks[0].GetStatus() != "running" ||
		!strings.Contains(out, tasks[0].GetTaskId()) || !strings.Contains(out, childThread) {
		t.Fatalf("tasks %v after the call answered %q", tasks, out)
	}
	b.wait(t, ctx)
	return thread, tasks[0], childThread
}

// bgSuite is two replicas on one redis-server, the first with the agent
// "lead" (task_follow_up) whose children call native_block, held by b.
func bgSuite(t *testing.T, opts ...agent.Option) (s *suite, a, other *replica, b *blocker, ctx context.Context) {
	t.Helper()
	b = newBlocker()
	s = newSuite(t, bgChildScript())
	a, other = twoReplicas(t, s, append([]agent.Option{agent.WithNativeTools(b.tool())}, opts...)...)
	ctx = withTimeout(t, as("alice"), 60*time.Second)
	createAgent(t, a, ctx, &agentv1.Agent{AgentId: "lead", Tools: []string{"task", "native_block"}, TaskFollowUp: true})
	return s, a, other, b, ctx
}

// TestBackgroundSubagentFollowUp: a task call with background answers at
// once and the parent's turn ends while the child works; the child's
// answer becomes the task's result, joins the parent's thread and starts a
// follow-up run, read from the other replica.
func TestBackgroundSubagentFollowUp(t *testing.T) {
	t.Parallel()
	s, a, other, b, ctx := bgSuite(t)

	thread, task, childThread := startBGChild(t, a, b, ctx)
	close(b.open)
	const answer = "child done: native_block=opened"
	testenv.Eventually(t, 60*time.Second, func() bool {
		return lastMessage(t, other, ctx, thread).GetContent() == "saw: "+answer
	}, "follow-up answer")
	got, err := other.client.GetTask(ctx, &agentv1.GetTaskRequest{TaskId: task.GetTaskId()})
	if err != nil || got.GetTask().GetStatus() != "done" || got.GetTask().GetResult() != answer || !got.GetTask().GetDelivered() || got.GetTask().GetAttempts() != 1 {
		t.Fatalf("task after the follow-up = %v, %v", got, err)
	}
	if got := lastMessage(t, other, ctx, childThread).GetContent(); got != answer {
		t.Fatalf("child's thread ends with %q", got)
	}
	// The parent had the background argument and the task tools; the
	// child's own task tool has neither.
	for i := 0; i < 2; i++ {
		req := s.llm.request(i)
		bg, check := toolSchema(req, "task", "background"), toolSchema(req, "check_task", "")
		if goal := converse(req).goal; goal == "go" != (bg && check) {
			t.Fatalf("request of %q: task has background %v, check_task %v", goal, bg, check)
		}
	}
}

// toolSchema reports whether req offers the tool, with the parameter when
// param is not empty.
func toolSchema(req *llmv1.StreamRequest, tool, param string) bool {
	for _, ts := range req.GetTools() {
		if ts.GetName() == tool {
			_, ok := ts.GetParameters().GetFields()["properties"].GetStructValue().GetFields()[param]
			return param == "" || ok
		}
	}
	return false
}

// TestBackgroundSubagentCancelled: cancelling the task from the other
// replica cancels the child: its tool's context ends, and its thread is
// saved with that call answered.
func TestBackgroundSubagentCancelled(t *testing.T) {
	t.Parallel()
	_, a, other, b, ctx := bgSuite(t, agent.WithTaskLease(time.Second))

	_, task, childThread := startBGChild(t, a, b, ctx)
	got, err := other.client.CancelTask(ctx, &agentv1.CancelTaskRequest{TaskId: task.GetTaskId()})
	if err != nil || got.GetTask().GetStatus() != "cancelled" {
		t.Fatalf("CancelTask = %v, %v", got, err)
	}
	select {
	case err := <-b.ended:
		if !errors.Is(err, context.Canceled) {
			t.Fatalf("the child's tool ended with %v, want its context cancelled", err)
		}
	case <-ctx.Done():
		t.Fatal("the child's tool was not cancelled")
	}
	testenv.Eventually(t, 60*time.Second, func() bool {
		// The child saves its thread once its cancelled round is answered,
		// which may be after its tool saw the cancel.
		if _, err := other.client.GetThread(ctx, &agentv1.GetThreadRequest{ThreadId: childThread}); status.Code(err) == codes.NotFound {
			return false
		}
		got := toolResults(t, other, ctx, childThread)
		return len(got) == 1 && strings.HasPrefix(got[0], "b1=") && got[0] != "b1=opened"
	}, "the child's thread saved")
	if got, err := other.client.GetTask(ctx, &agentv1.GetTaskRequest{TaskId: task.GetTaskId()}); err != nil || got.GetTask().GetStatus() != "cancelled" {
		t.Fatalf("task after the cancel = %v, %v", got, err)
	}
}

// TestBackgroundSubagentTakenOver: the replica running a background child
// stops; the other takes the task over once its lease ends and runs the
// child again on the child's own thread, which keeps the first replica's
// round; the task completes and the follow-up runs there.
func TestBackgroundSubagentTakenOver(t *testing.T) {
	t.Parallel()
	_, a, other, b, ctx := bgSuite(t, agent.WithTaskLease(time.Second))

	thread, task, childThread := startBGChild(t, a, b, ctx)
	a.stop() // a clean stop: the child is cancelled, its task left running
	if err := <-b.ended; !errors.Is(err, context.Canceled) {
		t.Fatalf("the child's tool on the stopped replica ended with %v", err)
	}
	if got, err := other.client.GetTask(ctx, &agentv1.GetTaskRequest{TaskId: task.GetTaskId()}); err != nil || got.GetTask().GetStatus() != "running" {
		t.Fatalf("task after A stopped = %v, %v", got, err)
	}
	// The first round, saved on A, is what B's child goes on from.
	first := toolResults(t, other, ctx, childThread)
	if len(first) != 1 || !strings.HasPrefix(first[0], "b1=") || first[0] == "b1=opened" {
		t.Fatalf("the child's thread after A stopped: %v", first)
	}
	close(b.open)
	answer := "child done: native_block=" + strings.TrimPrefix(first[0], "b1=") + "|native_block=opened"
	testenv.Eventually(t, 60*time.Second, func() bool {
		return lastMessage(t, other, ctx, thread).GetContent() == "saw: "+answer
	}, "follow-up on the other replica")
	got, err := other.client.GetTask(ctx, &agentv1.GetTaskRequest{TaskId: task.GetTaskId()})
	if err != nil || got.GetTask().GetStatus() != "done" || got.GetTask().GetAttempts() != 2 || got.GetTask().GetResult() != answer {
		t.Fatalf("task after the take-over = %v, %v", got, err)
	}
	if got := toolResults(t, other, ctx, childThread); len(got) != 2 || got[0] != first[0] || got[1] != "b2=opened" {
		t.Fatalf("the child's thread after the take-over: %v", got)
	}
}

// TestBackgroundInsideSubagent: a sub-agent's task tool offers no
// background, and a call that asks for it anyway runs in the foreground:
// the grandchild's answer reaches the child, and no task is started.
func TestBackgroundInsideSubagent(t *testing.T) {
	t.Parallel()
	s := newSuite(t, script(func(c conversation) reply {
		switch {
		case c.goal == "go" && c.turns == 0:
			return reply{calls: []*llmv1.ToolCall{task("t1", "", "delegate")}}
		case c.goal == "delegate" && c.turns == 0:
			return reply{calls: []*llmv1.ToolCall{bgTask("t2", "leaf")}}
		case c.goal == "leaf":
			return text("leaf done")
		default:
			return text(c.goal + " saw: " + c.outputs)
		}
	}))
	r := redisReplica(t, s)
	ctx := withTimeout(t, as("alice"), 60*time.Second)
	createAgent(t, r, ctx, &agentv1.Agent{AgentId: "nest", Tools: []string{"task"}})
	evs := streamRun(t, r, ctx, "nest", "go")
	thread := evs[0].GetThreadId()
	if got := lastMessage(t, r, ctx, thread).GetContent(); got != "go saw: task=delegate saw: task=leaf done" {
		t.Fatalf("parent answered %q", got)
	}
	if n := len(ofKind(evs, "on_task_start")); n != 0 {
		t.Fatalf("%d tasks started", n)
	}
	starts := ofKind(evs, "on_subagent_start")
	if len(starts) != 2 || number(starts[1], "depth") != 2 {
		t.Fatalf("sub-agent starts %v", starts)
	}
	if got := threadTasks(t, r, ctx, thread); len(got) != 0 {
		t.Fatalf("tasks of the parent's thread: %v", got)
	}
	if got := threadTasks(t, r, ctx, field(starts[0], "thread_id")); len(got) != 0 {
		t.Fatalf("tasks of the child's thread: %v", got)
	}
	s.llm.mu.Lock()
	reqs := append([]*llmv1.StreamRequest(nil), s.llm.requests...)
	s.llm.mu.Unlock()
	for _, req := range reqs {
		top := converse(req).goal == "go"
		if toolSchema(req, "task", "background") != top || toolSchema(req, "check_task", "") != top {
			t.Fatalf("request of %q offers background %v", converse(req).goal, !top)
		}
	}
}
