package agent_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/protobuf/types/known/structpb"

	agentv1 "github.com/wick-agent/wick/gen/wick/agent/v1"
	llmv1 "github.com/wick-agent/wick/gen/wick/llm/v1"
	"github.com/wick-agent/wick/platform/testenv"
	"github.com/wick-agent/wick/services/agent"
)

// bgTool is a background native tool the test drives: each start is
// counted, a start blocks until the test releases it (or its context ends),
// and starts listed in fail never return (their replica is stopped).
type bgTool struct {
	starts   atomic.Int32
	started  chan int32
	release  chan struct{}
	once     sync.Once
	stopped  chan struct{} // closed when a start saw its context end
	stopOnce sync.Once
}

func newBGTool() *bgTool {
	return &bgTool{started: make(chan int32, 8), release: make(chan struct{}), stopped: make(chan struct{})}
}

func (b *bgTool) tool() agent.Tool {
	return agent.BackgroundTool(&agent.FuncTool{ToolName: "render", ToolDesc: "render a video",
		Fn: func(ctx context.Context, args map[string]any) (string, error) {
			n := b.starts.Add(1)
			b.started <- n
			select {
			case <-b.release:
				return "video.mp4 rendered (" + args["what"].(string) + ")", nil
			case <-ctx.Done():
				b.stopOnce.Do(func() { close(b.stopped) })
				return "", ctx.Err()
			}
		}})
}

func (b *bgTool) finish() { b.once.Do(func() { close(b.release) }) }

// taskScript: a user message makes the model call tool; a tool result gets
// "started"; a background task's note gets "saw: <note's first line>".
func taskScript(tool string) func(int, *llmv1.StreamRequest) reply {
	return func(_ int, req *llmv1.StreamRequest) reply {
		msgs := req.GetMessages()
		last := msgs[len(msgs)-1]
		switch {
		case last.GetRole() == "tool":
			return text("started")
		case strings.HasPrefix(last.GetContent(), "[background task"):
			return text("saw: " + strings.SplitN(last.GetContent(), "\n", 2)[1])
		case strings.Contains(last.GetContent(), "next"):
			return text("next turn")
		}
		return reply{calls: []*llmv1.ToolCall{call("c1", tool, map[string]any{"what": last.GetContent()})}}
	}
}

func threadTasks(t *testing.T, r *replica, ctx context.Context, threadID string) []*agentv1.Task {
	t.Helper()
	res, err := r.client.ListThreadTasks(ctx, &agentv1.ListThreadTasksRequest{ThreadId: threadID})
	if err != nil {
		t.Fatal(err)
	}
	return res.GetTasks()
}

func lastMessage(t *testing.T, r *replica, ctx context.Context, threadID string) *agentv1.Message {
	t.Helper()
	th, err := r.client.GetThread(ctx, &agentv1.GetThreadRequest{ThreadId: threadID})
	if err != nil {
		t.Fatal(err)
	}
	msgs := th.GetThread().GetMessages()
	checkNoDanglingCalls(t, msgs)
	return msgs[len(msgs)-1]
}

// startTask runs a first turn that starts the background task and returns
// its thread and the task, with the run's events.
func startTask(t *testing.T, r *replica, ctx context.Context, agentID string) (string, *agentv1.Task, []*agentv1.StreamEvent) {
	t.Helper()
	st, err := r.client.Stream(ctx, &agentv1.StreamRequest{AgentId: agentID, Messages: human("cats")})
	if err != nil {
		t.Fatal(err)
	}
	evs := collect(t, st.Recv)
	threadID := evs[0].GetThreadId()
	if last := evs[len(evs)-1]; last.GetEvent() != "done" {
		t.Fatalf("first turn ended with %v", last)
	}
	if !strings.Contains(strings.Join(names(evs), ","), "on_task_start") {
		t.Fatalf("no on_task_start in %v", names(evs))
	}
	tasks := threadTasks(t, r, ctx, threadID)
	if len(tasks) != 1 || tasks[0].GetTool() != "render" || tasks[0].GetKind() != "native" {
		t.Fatalf("tasks after the first turn: %v", tasks)
	}
	return threadID, tasks[0], evs
}

// TestBackgroundTaskFollowUp: a task started on A finishes while the user is
// away; its result joins the thread and, the agent asking for it, a
// follow-up run answers it — the model's tool result said "started" at once.
func TestBackgroundTaskFollowUp(t *testing.T) {
	t.Parallel()
	bg := newBGTool()
	s := newSuite(t, taskScript("render"))
	a, b := twoReplicas(t, s, agent.WithNativeTools(bg.tool()))
	ctx := withTimeout(t, as("alice"), 60*time.Second)
	createAgent(t, a, ctx, &agentv1.Agent{AgentId: "studio", Tools: []string{"render"}, TaskFollowUp: true})

	threadID, task, evs := startTask(t, a, ctx, "studio")
	if task.GetStatus() != "running" {
		t.Fatalf("task after the first turn: %v", task)
	}
	if got := lastMessage(t, b, ctx, threadID).GetContent(); got != "started" {
		t.Fatalf("the first turn's answer = %q", got)
	}
	var toolOut string
	for _, e := range evs {
		if e.GetEvent() == "on_tool_end" {
			toolOut = e.GetData().GetStructValue().GetFields()["output"].GetStringValue()
		}
	}
	if !strings.Contains(toolOut, task.GetTaskId()) {
		t.Fatalf("the tool's result %q does not name the task", toolOut)
	}
	<-bg.started
	bg.finish()
	testenv.Eventually(t, 60*time.Second, func() bool {
		return lastMessage(t, b, ctx, threadID).GetContent() == "saw: video.mp4 rendered (cats)"
	}, "follow-up answer")
	got, err := b.client.GetTask(ctx, &agentv1.GetTaskRequest{TaskId: task.GetTaskId()})
	if err != nil || got.GetTask().GetStatus() != "done" || !got.GetTask().GetDelivered() || got.GetTask().GetResult() != "video.mp4 rendered (cats)" {
		t.Fatalf("GetTask after the follow-up = %v, %v", got, err)
	}
	th, err := b.client.GetThread(ctx, &agentv1.GetThreadRequest{ThreadId: threadID})
	if err != nil {
		t.Fatal(err)
	}
	notes := 0
	for _, m := range th.GetThread().GetMessages() {
		if strings.HasPrefix(m.GetContent(), "[background task "+task.GetTaskId()) {
			notes++
		}
	}
	if notes != 1 {
		t.Fatalf("the result joined the thread %d times", notes)
	}
}

// TestBackgroundTaskNextTurn: without task_follow_up, a finished task
// starts no run; the next message (on the other replica) gets its note
// before the user's input.
func TestBackgroundTaskNextTurn(t *testing.T) {
	t.Parallel()
	bg := newBGTool()
	s := newSuite(t, taskScript("render"))
	a, b := twoReplicas(t, s, agent.WithNativeTools(bg.tool()))
	ctx := withTimeout(t, as("alice"), 60*time.Second)
	createAgent(t, a, ctx, &agentv1.Agent{AgentId: "studio", Tools: []string{"render"}})

	threadID, task, _ := startTask(t, a, ctx, "studio")
	<-bg.started
	bg.finish()
	testenv.Eventually(t, 60*time.Second, func() bool {
		got, err := b.client.GetTask(ctx, &agentv1.GetTaskRequest{TaskId: task.GetTaskId()})
		return err == nil && got.GetTask().GetStatus() == "done"
	}, "task done")
	s.llm.mu.Lock()
	calls := len(s.llm.requests)
	s.llm.mu.Unlock()

	res, err := b.client.Invoke(ctx, &agentv1.InvokeRequest{AgentId: "studio", ThreadId: threadID, Messages: human("next please")})
	if err != nil {
		t.Fatal(err)
	}
	if res.GetStatus() != "done" {
		t.Fatalf("next turn: %v", res)
	}
	s.llm.mu.Lock()
	after := len(s.llm.requests)
	s.llm.mu.Unlock()
	if after != calls+1 {
		t.Fatalf("the model was called %d times for one turn; no follow-up run may start", after-calls)
	}
	msgs := s.llm.request(after - 1).GetMessages()
	note, input := msgs[len(msgs)-2], msgs[len(msgs)-1]
	if !strings.HasPrefix(note.GetContent(), "[background task "+task.GetTaskId()+" (render) done]\nvideo.mp4 rendered (cats)") || input.GetContent() != "next please" {
		t.Fatalf("the next turn's request ends with %q, %q", note.GetContent(), input.GetContent())
	}
	got, _ := b.client.GetTask(ctx, &agentv1.GetTaskRequest{TaskId: task.GetTaskId()})
	if !got.GetTask().GetDelivered() {
		t.Fatalf("task not marked delivered: %v", got)
	}
}

// TestBackgroundTaskTakenOver: the replica running a task stops; the other
// takes the task over once its lease ends and runs the tool again.
func TestBackgroundTaskTakenOver(t *testing.T) {
	t.Parallel()
	bg := newBGTool()
	s := newSuite(t, taskScript("render"))
	a, b := twoReplicas(t, s, agent.WithNativeTools(bg.tool()), agent.WithTaskLease(time.Second))
	ctx := withTimeout(t, as("alice"), 60*time.Second)
	createAgent(t, a, ctx, &agentv1.Agent{AgentId: "studio", Tools: []string{"render"}, TaskFollowUp: true})

	threadID, task, _ := startTask(t, a, ctx, "studio")
	if n := <-bg.started; n != 1 {
		t.Fatalf("first start numbered %d", n)
	}
	a.stop() // a clean stop: A's task is abandoned unfinished, not failed
	<-bg.stopped
	if got, err := b.client.GetTask(ctx, &agentv1.GetTaskRequest{TaskId: task.GetTaskId()}); err != nil || got.GetTask().GetStatus() != "running" {
		t.Fatalf("task after A stopped = %v, %v", got, err)
	}
	select {
	case n := <-bg.started:
		if n != 2 {
			t.Fatalf("take-over start numbered %d", n)
		}
	case <-ctx.Done():
		t.Fatal("B never took the task over")
	}
	bg.finish()
	testenv.Eventually(t, 60*time.Second, func() bool {
		return lastMessage(t, b, ctx, threadID).GetContent() == "saw: video.mp4 rendered (cats)"
	}, "follow-up on B")
	got, err := b.client.GetTask(ctx, &agentv1.GetTaskRequest{TaskId: task.GetTaskId()})
	if err != nil || got.GetTask().GetStatus() != "done" || got.GetTask().GetAttempts() != 2 {
		t.Fatalf("task after the take-over = %v, %v", got, err)
	}
}

// TestBackgroundTaskCancelAndIsolation: another user sees none of alice's
// tasks (NotFound through the API and through check_task); alice cancels
// hers from the other replica, and the tool's context ends.
func TestBackgroundTaskCancelAndIsolation(t *testing.T) {
	t.Parallel()
	bg := newBGTool()
	var bobTaskID atomic.Value
	bobTaskID.Store("")
	s := newSuite(t, func(n int, req *llmv1.StreamRequest) reply {
		msgs := req.GetMessages()
		last := msgs[len(msgs)-1]
		if last.GetContent() == "peek" {
			return reply{calls: []*llmv1.ToolCall{call("p1", "check_task", map[string]any{"task_id": bobTaskID.Load().(string)})}}
		}
		return taskScript("render")(n, req)
	})
	a, b := twoReplicas(t, s, agent.WithNativeTools(bg.tool()), agent.WithTaskLease(time.Second))
	alice := withTimeout(t, as("alice"), 60*time.Second)
	bob := withTimeout(t, as("bob"), 60*time.Second)
	createAgent(t, a, alice, &agentv1.Agent{AgentId: "studio", Tools: []string{"render"}})
	createAgent(t, a, bob, &agentv1.Agent{AgentId: "studio", Tools: []string{"render"}})

	threadID, task, _ := startTask(t, a, alice, "studio")
	<-bg.started
	bobTaskID.Store(task.GetTaskId())

	for name, err := range map[string]error{
		"GetTask": func() error {
			_, err := b.client.GetTask(bob, &agentv1.GetTaskRequest{TaskId: task.GetTaskId()})
			return err
		}(),
		"CancelTask": func() error {
			_, err := b.client.CancelTask(bob, &agentv1.CancelTaskRequest{TaskId: task.GetTaskId()})
			return err
		}(),
	} {
		if code(err) != codes.NotFound {
			t.Fatalf("bob's %s of alice's task: %v, want NotFound", name, err)
		}
	}
	// Alice's thread is not bob's: NotFound, as for GetThread, not an empty list.
	if got, err := b.client.ListThreadTasks(bob, &agentv1.ListThreadTasksRequest{ThreadId: threadID}); code(err) != codes.NotFound {
		t.Fatalf("bob lists alice's thread's tasks: %v, %v; want NotFound", got, err)
	}
	res, err := b.client.Invoke(bob, &agentv1.InvokeRequest{AgentId: "studio", Messages: human("peek")})
	if err != nil {
		t.Fatal(err)
	}
	var peek string
	for _, m := range res.GetMessages() {
		if m.GetToolCallId() == "p1" {
			peek = m.GetContent()
		}
	}
	if !strings.Contains(peek, "task not found") || strings.Contains(peek, "cats") {
		t.Fatalf("bob's check_task of alice's task answered %q", peek)
	}

	got, err := b.client.CancelTask(alice, &agentv1.CancelTaskRequest{TaskId: task.GetTaskId()})
	if err != nil || got.GetTask().GetStatus() != "cancelled" {
		t.Fatalf("CancelTask on B = %v, %v", got, err)
	}
	<-bg.stopped // A's tool stopped at A's next renewal
	again, err := a.client.CancelTask(alice, &agentv1.CancelTaskRequest{TaskId: task.GetTaskId()})
	if err != nil || again.GetTask().GetStatus() != "cancelled" {
		t.Fatalf("cancelling twice = %v, %v", again, err)
	}
	bg.finish()
}

// TestAsyncHTTPTool: an HTTP tool registered async answers a status URL;
// the poller reads it (through the tool network guard) until it says done,
// and the result reaches the next turn.
func TestAsyncHTTPTool(t *testing.T) {
	t.Parallel()
	var polls atomic.Int32
	var srv *httptest.Server
	srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		switch {
		case r.Method == http.MethodPost:
			_ = json.NewEncoder(w).Encode(map[string]string{"status_url": srv.URL + "/status/1"})
		case r.Header.Get("X-Key") != "k1":
			http.Error(w, "no key", http.StatusUnauthorized)
		case polls.Add(1) < 3:
			_ = json.NewEncoder(w).Encode(map[string]string{"status": "running", "progress": "rendering"})
		default:
			_ = json.NewEncoder(w).Encode(map[string]string{"status": "done", "output": "remote result"})
		}
	}))
	t.Cleanup(srv.Close)
	s := newSuite(t, taskScript("remote"))
	st, rdb := redisStores(t, needRedis(t), 2*time.Second)
	r := s.agent(st, rdb, append(replicaOpts(),
		agent.WithToolNetworkAllow(netip.MustParsePrefix("127.0.0.0/8")),
		agent.WithTaskPollBackoff(10*time.Millisecond, 50*time.Millisecond))...)
	ctx := withTimeout(t, as("alice"), 60*time.Second)
	params, _ := structpb.NewStruct(map[string]any{"type": "object", "properties": map[string]any{"what": map[string]any{"type": "string"}}})
	if _, err := r.client.RegisterTool(ctx, &agentv1.RegisterToolRequest{Tool: &agentv1.ToolDefinition{
		Name: "remote", Url: srv.URL + "/call", Async: true, Headers: map[string]string{"X-Key": "k1"}, Parameters: params,
	}}); err != nil {
		t.Fatal(err)
	}
	createAgent(t, r, ctx, &agentv1.Agent{AgentId: "remote", Tools: []string{"remote"}})
	res, err := r.client.Invoke(ctx, &agentv1.InvokeRequest{AgentId: "remote", Messages: human("cats")})
	if err != nil {
		t.Fatal(err)
	}
	threadID := res.GetThreadId()
	tasks := threadTasks(t, r, ctx, threadID)
	if len(tasks) != 1 || tasks[0].GetKind() != "http" {
		t.Fatalf("tasks: %v", tasks)
	}
	testenv.Eventually(t, 60*time.Second, func() bool {
		return threadTasks(t, r, ctx, threadID)[0].GetStatus() == "done"
	}, "remote task done")
	if polls.Load() < 3 {
		t.Fatalf("status polled %d times", polls.Load())
	}
	if next, err := r.client.Invoke(ctx, &agentv1.InvokeRequest{AgentId: "remote", ThreadId: threadID, Messages: human("next")}); err != nil || next.GetStatus() != "done" {
		t.Fatalf("next turn = %v, %v", next, err)
	}
	s.llm.mu.Lock()
	last := s.llm.requests[len(s.llm.requests)-1].GetMessages()
	s.llm.mu.Unlock()
	if note := last[len(last)-2].GetContent(); !strings.HasSuffix(note, "done]\nremote result") {
		t.Fatalf("note before the next turn: %q", note)
	}
}
