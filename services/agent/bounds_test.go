package agent_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/structpb"

	agentv1 "github.com/wick-agent/wick/gen/wick/agent/v1"
	llmv1 "github.com/wick-agent/wick/gen/wick/llm/v1"
	"github.com/wick-agent/wick/services/agent"
)

// boundsScript answers by the last user message: "hold" keeps the model
// busy until its run is cancelled, "read" reads /workspace/big.txt three
// times in three rounds, anything else gets a short answer.
func boundsScript(_ int, req *llmv1.StreamRequest) reply {
	msgs := req.GetMessages()
	lastUser, reads := "", 0
	for _, m := range msgs {
		switch {
		case m.GetRole() == "user":
			lastUser, reads = m.GetContent(), 0
		case m.GetRole() == "tool" && m.GetName() == "read_file":
			reads++
		}
	}
	switch {
	case lastUser == "hold":
		return reply{block: true}
	case lastUser == "read" && reads < 3:
		return reply{calls: []*llmv1.ToolCall{call(fmt.Sprintf("r%d", reads), "read_file", map[string]any{"path": "/workspace/big.txt"})}}
	}
	return text("ok")
}

// wantExhausted fails unless err is ResourceExhausted with a message that
// holds every part of want.
func wantExhausted(t *testing.T, err error, want ...string) {
	t.Helper()
	if code(err) != codes.ResourceExhausted {
		t.Fatalf("err = %v, want ResourceExhausted", err)
	}
	for _, w := range want {
		if !strings.Contains(status.Convert(err).Message(), w) {
			t.Fatalf("message %q lacks %q", status.Convert(err).Message(), w)
		}
	}
}

// hold starts a run that keeps going until cancelled and returns its
// stream, after its first event.
func hold(t *testing.T, ctx context.Context, r *replica, threadID string) (agentv1.AgentService_StreamClient, *agentv1.StreamEvent) {
	t.Helper()
	st, err := r.client.Stream(ctx, &agentv1.StreamRequest{AgentId: "default", ThreadId: threadID, Messages: human("hold")})
	if err != nil {
		t.Fatal(err)
	}
	first, err := st.Recv()
	if err != nil {
		t.Fatalf("first event of a held run: %v", err)
	}
	return st, first.GetEvent()
}

// heldCount is how many members of kind the user holds in Redis.
func heldCount(t *testing.T, rdb redis.UniversalClient, user, kind string) int64 {
	t.Helper()
	n, err := rdb.ZCard(context.Background(), "wick:{"+user+"}:held:"+kind).Result()
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// waitHeld polls until the user holds n members of kind.
func waitHeld(t *testing.T, rdb redis.UniversalClient, user, kind string, n int64) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for heldCount(t, rdb, user, kind) != n {
		if time.Now().After(deadline) {
			t.Fatalf("%s of %s never reached %d (now %d)", kind, user, n, heldCount(t, rdb, user, kind))
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// TestPerUserLimits shows each limit on two replicas sharing one Redis: the
// call beyond it fails with ResourceExhausted and a message naming the
// limit, freeing one lets the next succeed, and the count is the user's
// across replicas.
func TestPerUserLimits(t *testing.T) {
	t.Parallel()
	addr := needRedis(t)
	s := newSuite(t, boundsScript)
	// Only the limit under test is set; the others are disabled (0).
	cases := []struct {
		name   string
		limits agent.Limits
		run    func(t *testing.T, ctx context.Context, a, b *replica)
	}{
		{"agents", agent.Limits{AgentsPerUser: 2}, func(t *testing.T, ctx context.Context, a, b *replica) {
			create := func(r *replica, id string) error {
				_, err := r.client.CreateAgent(ctx, &agentv1.CreateAgentRequest{Agent: &agentv1.Agent{AgentId: id, Name: id}})
				return err
			}
			if err := create(a, "a1"); err != nil {
				t.Fatal(err)
			}
			if err := create(b, "a2"); err != nil {
				t.Fatal(err)
			}
			wantExhausted(t, create(a, "a3"), "user agents has 2 agents; the limit of agents per user is 2 (-max-agents-per-user)")
			// Changing a template stores the user's copy: it counts too.
			_, err := b.client.UpdateHooks(ctx, &agentv1.UpdateHooksRequest{AgentId: "default", Hooks: map[string]bool{"summarization": false}})
			wantExhausted(t, err, "-max-agents-per-user")
			// Changing an agent the user stores is no new agent.
			if _, err := a.client.UpdateHooks(ctx, &agentv1.UpdateHooksRequest{AgentId: "a1", Hooks: map[string]bool{"summarization": false}}); err != nil {
				t.Fatal(err)
			}
			if err := create(a, "a1"); code(err) != codes.AlreadyExists {
				t.Fatalf("create existing = %v", err)
			}
			// Another user has their own count.
			if _, err := a.client.CreateAgent(as("agents-bob"), &agentv1.CreateAgentRequest{Agent: &agentv1.Agent{AgentId: "a3", Name: "a3"}}); err != nil {
				t.Fatal(err)
			}
			if _, err := b.client.DeleteAgent(ctx, &agentv1.DeleteAgentRequest{AgentId: "a1"}); err != nil {
				t.Fatal(err)
			}
			if err := create(a, "a3"); err != nil {
				t.Fatalf("after a delete: %v", err)
			}
		}},
		{"tools", agent.Limits{ToolsPerUser: 2}, func(t *testing.T, ctx context.Context, a, b *replica) {
			register := func(r *replica, name string) error {
				_, err := r.client.RegisterTool(ctx, &agentv1.RegisterToolRequest{Tool: &agentv1.ToolDefinition{Name: name, Url: "https://example.com/" + name, Parameters: objectSchema(t)}})
				return err
			}
			if err := register(a, "t1"); err != nil {
				t.Fatal(err)
			}
			if err := register(b, "t2"); err != nil {
				t.Fatal(err)
			}
			wantExhausted(t, register(a, "t3"), "user tools has 2 registered tools; the limit of registered tools per user is 2 (-max-tools-per-user); delete one")
			if err := register(b, "t1"); err != nil {
				t.Fatalf("replacing a tool: %v", err)
			}
			if _, err := b.client.DeleteTool(ctx, &agentv1.DeleteToolRequest{Name: "t2"}); err != nil {
				t.Fatal(err)
			}
			if err := register(a, "t3"); err != nil {
				t.Fatalf("after a delete: %v", err)
			}
		}},
		{"threads", agent.Limits{ThreadsPerUser: 2}, func(t *testing.T, ctx context.Context, a, b *replica) {
			invoke := func(r *replica, thread string) (*agentv1.InvokeResponse, error) {
				return r.client.Invoke(ctx, &agentv1.InvokeRequest{AgentId: "default", ThreadId: thread, Messages: human("hi")})
			}
			first, err := invoke(a, "")
			if err != nil {
				t.Fatal(err)
			}
			if _, err := invoke(b, ""); err != nil {
				t.Fatal(err)
			}
			_, err = invoke(a, "")
			wantExhausted(t, err, "user threads has 2 threads; the limit of threads per user is 2 (-max-threads-per-user)")
			// Refused before the run starts: a stream gets the status, not
			// a run that fails at its first save.
			st, err := b.client.Stream(ctx, &agentv1.StreamRequest{AgentId: "default", Messages: human("hi")})
			if err == nil {
				_, err = st.Recv()
			}
			wantExhausted(t, err, "-max-threads-per-user")
			// An existing thread goes on.
			if _, err := invoke(b, first.GetThreadId()); err != nil {
				t.Fatal(err)
			}
			if _, err := b.client.DeleteThread(ctx, &agentv1.DeleteThreadRequest{ThreadId: first.GetThreadId()}); err != nil {
				t.Fatal(err)
			}
			if _, err := invoke(a, ""); err != nil {
				t.Fatalf("after a delete: %v", err)
			}
		}},
		{"runs", agent.Limits{RunsPerUser: 2}, func(t *testing.T, ctx context.Context, a, b *replica) {
			st1, ev := hold(t, ctx, a, "")
			hold(t, ctx, b, "")
			_, err := a.client.Invoke(ctx, &agentv1.InvokeRequest{AgentId: "default", Messages: human("hi")})
			wantExhausted(t, err, "user runs has 2 runs going; the limit of concurrent runs per user is 2 (-max-runs-per-user); wait for one to end or cancel one")
			// Cancelled from the other replica; its last event comes after
			// its slot is free.
			if _, err := b.client.CancelRun(ctx, &agentv1.CancelRunRequest{RunId: ev.GetRunId()}); err != nil {
				t.Fatal(err)
			}
			collect(t, st1.Recv)
			if _, err := b.client.Invoke(ctx, &agentv1.InvokeRequest{AgentId: "default", Messages: human("hi")}); err != nil {
				t.Fatalf("after a cancel: %v", err)
			}
		}},
		{"queued", agent.Limits{QueuedRunsPerUser: 1}, func(t *testing.T, ctx context.Context, a, b *replica) {
			held, ev := hold(t, ctx, a, "")
			thread := ev.GetThreadId()
			enqueue := func(r *replica) <-chan error {
				done := make(chan error, 1)
				go func() {
					_, err := r.client.Invoke(ctx, &agentv1.InvokeRequest{AgentId: "default", ThreadId: thread, Messages: human("next"), Enqueue: true})
					done <- err
				}()
				return done
			}
			waiting := enqueue(b)
			waitHeld(t, b.rdb, "queued", "queued", 1)
			_, err := a.client.Invoke(ctx, &agentv1.InvokeRequest{AgentId: "default", ThreadId: thread, Messages: human("more"), Enqueue: true})
			wantExhausted(t, err, "user queued has 1 runs waiting for a busy thread; the limit of queued runs per user is 1 (-max-queued-runs-per-user)")
			// Without enqueue a busy thread is still FailedPrecondition.
			_, err = a.client.Invoke(ctx, &agentv1.InvokeRequest{AgentId: "default", ThreadId: thread, Messages: human("more")})
			if code(err) != codes.FailedPrecondition {
				t.Fatalf("busy thread without enqueue = %v", err)
			}
			if _, err := a.client.CancelRun(ctx, &agentv1.CancelRunRequest{RunId: ev.GetRunId()}); err != nil {
				t.Fatal(err)
			}
			collect(t, held.Recv)
			if err := <-waiting; err != nil {
				t.Fatalf("queued run: %v", err)
			}
			waitHeld(t, b.rdb, "queued", "queued", 0)
			// The place is free again: the next request queues.
			held, ev = hold(t, ctx, b, thread)
			waiting = enqueue(a)
			waitHeld(t, b.rdb, "queued", "queued", 1)
			if _, err := b.client.CancelRun(ctx, &agentv1.CancelRunRequest{RunId: ev.GetRunId()}); err != nil {
				t.Fatal(err)
			}
			collect(t, held.Recv)
			if err := <-waiting; err != nil {
				t.Fatalf("queued run after the place was freed: %v", err)
			}
		}},
		{"watchers", agent.Limits{WatchersPerUser: 2}, func(t *testing.T, ctx context.Context, a, b *replica) {
			watch := func(ctx context.Context, r *replica) error {
				w, err := r.client.WatchEvents(ctx, &agentv1.WatchEventsRequest{})
				if err != nil {
					return err
				}
				_, err = w.Recv()
				return err
			}
			wctx, closeWatch := context.WithCancel(ctx)
			if err := watch(wctx, a); err != nil {
				t.Fatal(err)
			}
			// A re-join of a run is a watcher too.
			_, ev := hold(t, ctx, a, "")
			join, err := b.client.JoinRun(ctx, &agentv1.JoinRunRequest{RunId: ev.GetRunId()})
			if err != nil {
				t.Fatal(err)
			}
			if _, err := join.Recv(); err != nil {
				t.Fatal(err)
			}
			wantExhausted(t, watch(ctx, b), "user watchers has 2 event streams open; the limit of open event streams per user is 2 (-max-watchers-per-user)")
			refused, err := a.client.JoinRun(ctx, &agentv1.JoinRunRequest{RunId: ev.GetRunId()})
			if err == nil {
				_, err = refused.Recv() // a refused stream answers its first read
			}
			wantExhausted(t, err, "-max-watchers-per-user")
			closeWatch()
			// The closed stream's place frees once its server sees it end.
			deadline := time.Now().Add(10 * time.Second)
			for {
				err := watch(ctx, b)
				if err == nil {
					break
				}
				if code(err) != codes.ResourceExhausted || time.Now().After(deadline) {
					t.Fatalf("watch after one closed: %v", err)
				}
				time.Sleep(10 * time.Millisecond)
			}
		}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			stA, rdbA := redisStores(t, addr, 2*time.Second)
			stB, rdbB := redisStores(t, addr, 2*time.Second)
			opts := append(replicaOpts(), agent.WithLimits(c.limits))
			a := s.agent(stA, rdbA, opts...)
			b := s.agent(stB, rdbB, opts...)
			c.run(t, withTimeout(t, as(c.name), 60*time.Second), a, b)
		})
	}
}

// TestThreadByteBound: read_file outputs, which eviction spares, are cut
// oldest first when the thread reaches its bound, and a state that no cut
// brings under it fails its run with ResourceExhausted, leaving the thread
// as it was last saved.
func TestThreadByteBound(t *testing.T) {
	t.Parallel()
	const bound = 64 << 10
	s := newSuite(t, boundsScript)
	a := s.agent(redisStoresOf(t), nil, agent.WithLimits(agent.Limits{ThreadBytes: bound}))
	ctx := withTimeout(t, as("alice"), 30*time.Second)

	var big strings.Builder
	for i := range 300 {
		fmt.Fprintf(&big, "line %04d %s\n", i, strings.Repeat("x", 90))
	}
	if _, err := a.client.WriteFile(ctx, &agentv1.WriteFileRequest{AgentId: "default", Path: "/workspace/big.txt", Content: big.String()}); err != nil {
		t.Fatal(err)
	}
	// Three reads of ~31 KB each pass the 64 KiB bound.
	resp, err := a.client.Invoke(ctx, &agentv1.InvokeRequest{AgentId: "default", Messages: human("read")})
	if err != nil {
		t.Fatal(err)
	}
	th, err := a.client.GetThread(ctx, &agentv1.GetThreadRequest{ThreadId: resp.GetThreadId()})
	if err != nil {
		t.Fatal(err)
	}
	var reads []string
	size := 0
	for _, m := range th.GetThread().GetMessages() {
		size += len(m.GetContent())
		if m.GetName() == "read_file" {
			reads = append(reads, m.GetContent())
		}
	}
	if len(reads) != 3 {
		t.Fatalf("read_file results = %d, want 3", len(reads))
	}
	if !strings.Contains(reads[0], "to keep this thread under its size bound") || !strings.HasPrefix(reads[0], "     1\tline 0000") {
		t.Fatalf("oldest read_file result was not cut to its head and tail with a note: %.200q", reads[0])
	}
	if !strings.Contains(reads[2], "line 0150") {
		t.Fatal("the newest read_file result was cut although the older ones made room")
	}
	if size > bound {
		t.Fatalf("thread holds %d bytes of messages, over its bound %d", size, bound)
	}

	// A message larger than the bound fits no cut: the run fails, and the
	// thread keeps its last saved state.
	before := len(th.GetThread().GetMessages())
	_, err = a.client.Invoke(ctx, &agentv1.InvokeRequest{AgentId: "default", ThreadId: resp.GetThreadId(), Messages: human(strings.Repeat("y", bound))})
	wantExhausted(t, err, "thread "+resp.GetThreadId()+" would store", "the limit of stored bytes per thread is 65536 (-max-thread-bytes); continue in a new thread")
	th, err = a.client.GetThread(ctx, &agentv1.GetThreadRequest{ThreadId: resp.GetThreadId()})
	if err != nil {
		t.Fatalf("thread after the refused save: %v", err)
	}
	if n := len(th.GetThread().GetMessages()); n != before {
		t.Fatalf("thread has %d messages after the refused save, want %d", n, before)
	}
	// The thread goes on.
	if _, err := a.client.Invoke(ctx, &agentv1.InvokeRequest{AgentId: "default", ThreadId: resp.GetThreadId(), Messages: human("hi")}); err != nil {
		t.Fatal(err)
	}

	// Streamed, the failure is the run's error event.
	st, err := a.client.Stream(ctx, &agentv1.StreamRequest{AgentId: "default", ThreadId: resp.GetThreadId(), Messages: human(strings.Repeat("y", bound))})
	if err != nil {
		t.Fatal(err)
	}
	evs := collect(t, st.Recv)
	last := evs[len(evs)-1]
	if last.GetEvent() != "error" || last.GetData().GetStructValue().GetFields()["code"].GetStringValue() != "resource_exhausted" {
		t.Fatalf("last event = %v", last)
	}
}

// redisStoresOf returns stores on a Redis of its own.
func redisStoresOf(t *testing.T) agent.Stores {
	st, _ := redisStores(t, needRedis(t), 0)
	return st
}

func TestNegativeLimitRefused(t *testing.T) {
	t.Parallel()
	s := newSuite(t, boundsScript)
	_, err := agent.New(agent.Deps{LLM: llmv1.NewLLMServiceClient(s.conn(s.llmAddr)), Sandbox: nil, Stores: agent.MemoryStores()},
		agent.WithLimits(agent.Limits{RunsPerUser: -1}))
	if err == nil || !strings.Contains(err.Error(), "-max-runs-per-user") {
		t.Fatalf("New with a negative limit = %v", err)
	}
}

func objectSchema(t *testing.T) *structpb.Struct {
	s, err := structpb.NewStruct(map[string]any{"type": "object"})
	if err != nil {
		t.Fatal(err)
	}
	return s
}
