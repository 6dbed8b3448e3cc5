package wick_test

import (
	"bytes"
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"io"
	"net"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/structpb"

	wick "github.com/wick-agent/wick/sdk/go"
)

// client connects to the suite as the token's user, through addr when
// given (a proxy), else directly.
func client(t *testing.T, token string, opts ...wick.Option) *wick.Client {
	t.Helper()
	return clientAt(t, suiteAddr, token, opts...)
}

func clientAt(t *testing.T, addr, token string, opts ...wick.Option) *wick.Client {
	t.Helper()
	opts = append([]wick.Option{wick.WithInsecure()}, opts...)
	if token != "" {
		opts = append(opts, wick.WithToken(token))
	}
	c, err := wick.New(addr, opts...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

func wantCode(t *testing.T, what string, err error, want codes.Code) {
	t.Helper()
	if got := status.Code(err); got != want {
		t.Fatalf("%s: code %v (%v), want %v", what, got, err, want)
	}
}

// newAgent creates, for the client's user, an agent with the scripted
// model and a name of its own (the suite outlives one test run: -count)
// that it deletes when the test ends.
func newAgent(t *testing.T, c *wick.Client, script string, tools ...string) string {
	t.Helper()
	id := fmt.Sprintf("%s-%d", script, agentSeq.Add(1))
	model, _ := structpb.NewValue("script:" + script)
	if _, err := c.CreateAgent(t.Context(), &wick.Agent{AgentId: id, Model: model, Tools: tools}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.DeleteAgent(context.Background(), id) })
	return id
}

var agentSeq atomic.Int64

// waitStatus polls a run until it has the status; a run's end has no
// event to wait on once its stream is gone.
func waitStatus(t *testing.T, c *wick.Client, runID, want string) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		r, err := c.GetRun(t.Context(), runID)
		if err != nil {
			t.Fatal(err)
		}
		if r.GetStatus() == want {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("run %s is %q, want %q", runID, r.GetStatus(), want)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func TestAuthentication(t *testing.T) {
	alice, bob := client(t, aliceToken), client(t, bobToken)
	t.Run("no token", func(t *testing.T) {
		_, err := client(t, "").ListAgents(t.Context())
		wantCode(t, "ListAgents", err, codes.Unauthenticated)
	})
	t.Run("wrong token", func(t *testing.T) {
		c := client(t, "not-a-token")
		_, err := c.ListAgents(t.Context())
		wantCode(t, "ListAgents", err, codes.Unauthenticated)
		for _, err := range c.Stream(t.Context(), "default", wick.Prompt("hi")) {
			wantCode(t, "Stream", err, codes.Unauthenticated)
		}
	})
	t.Run("another user's things are not found", func(t *testing.T) {
		agent := newAgent(t, alice, "sdk")
		res, err := alice.Invoke(t.Context(), agent, wick.Prompt("hi"))
		if err != nil {
			t.Fatal(err)
		}
		_, err = bob.GetAgent(t.Context(), agent)
		wantCode(t, "GetAgent", err, codes.NotFound)
		_, err = bob.GetThread(t.Context(), res.GetThreadId())
		wantCode(t, "GetThread", err, codes.NotFound)
		_, err = bob.GetRun(t.Context(), res.GetRunId())
		wantCode(t, "GetRun", err, codes.NotFound)
		_, err = bob.Invoke(t.Context(), agent, wick.Prompt("hi"))
		wantCode(t, "Invoke", err, codes.NotFound)
		n := 0
		for _, err := range bob.Join(t.Context(), res.GetRunId(), "") {
			wantCode(t, "Join", err, codes.NotFound)
			n++
		}
		if n != 1 {
			t.Fatalf("Join yielded %d times, want one error", n)
		}
		threads, err := bob.ListThreads(t.Context(), "")
		if err != nil {
			t.Fatal(err)
		}
		for _, th := range threads {
			if th.GetThreadId() == res.GetThreadId() {
				t.Fatal("bob lists alice's thread")
			}
		}
	})
	t.Run("a token is not sent in plaintext over the network", func(t *testing.T) {
		_, err := wick.New("wick.example.com:7000", wick.WithToken("t"), wick.WithInsecure())
		if !errors.Is(err, wick.ErrTokenOverPlaintext) {
			t.Fatalf("New = %v, want ErrTokenOverPlaintext", err)
		}
		c, err := wick.New("wick.example.com:7000", wick.WithToken("t"), wick.WithInsecure(), wick.WithTokenOverPlaintext())
		if err != nil {
			t.Fatalf("explicitly allowed: %v", err)
		}
		c.Close()
		for _, addr := range []string{"localhost:7000", "127.0.0.1:7000", "[::1]:7000", "unix:///tmp/wick.sock"} {
			c, err := wick.New(addr, wick.WithToken("t"), wick.WithInsecure())
			if err != nil {
				t.Fatalf("%s: %v", addr, err)
			}
			c.Close()
		}
	})
	t.Run("TLS is the default and a plaintext server is not reached", func(t *testing.T) {
		c, err := wick.New(suiteAddr, wick.WithToken(aliceToken))
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
		defer cancel()
		_, err = c.ListAgents(ctx)
		wantCode(t, "ListAgents", err, codes.Unavailable)
	})
}

// proxy is a TCP proxy in front of the suite whose connections a test
// can cut mid-stream, as a network would.
type proxy struct {
	lis    net.Listener
	target string

	mu       sync.Mutex
	conns    []net.Conn
	accepted int
	refuse   bool
}

func startProxy(t *testing.T, target string) *proxy {
	t.Helper()
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &proxy{lis: lis, target: target}
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			c, err := lis.Accept()
			if err != nil {
				return
			}
			p.serve(c)
		}
	}()
	t.Cleanup(func() { lis.Close(); <-done; p.cut() })
	return p
}

func (p *proxy) addr() string { return p.lis.Addr().String() }

func (p *proxy) serve(c net.Conn) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.accepted++
	if p.refuse {
		c.Close()
		return
	}
	up, err := net.Dial("tcp", p.target)
	if err != nil {
		c.Close()
		return
	}
	p.conns = append(p.conns, c, up)
	go func() { _, _ = io.Copy(up, c); up.Close() }()
	go func() { _, _ = io.Copy(c, up); c.Close() }()
}

// cut closes every connection open through the proxy.
func (p *proxy) cut() {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, c := range p.conns {
		c.Close()
	}
	p.conns = nil
}

// refuseNew makes the proxy close every new connection at once.
func (p *proxy) refuseNew() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.refuse = true
}

func (p *proxy) connections() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.accepted
}

func TestStreamRejoinsAfterDroppedConnection(t *testing.T) {
	direct := client(t, aliceToken)
	agent := newAgent(t, direct, "slow")
	p := startProxy(t, suiteAddr)
	c := clientAt(t, p.addr(), aliceToken, wick.WithRejoin(10, 10*time.Millisecond))

	var got []*wick.Event
	deltas := 0
	for ev, err := range c.Stream(t.Context(), agent, wick.Prompt("go")) {
		if err != nil {
			t.Fatalf("after %d events: %v", len(got), err)
		}
		got = append(got, ev)
		if ev.GetPayload().GetOnChatModelStream() != nil {
			deltas++
			if deltas == 5 || deltas == 50 {
				p.cut() // mid-stream, twice
			}
		}
	}
	if p.connections() < 3 {
		t.Fatalf("%d connections through the proxy: the stream was not cut and re-joined", p.connections())
	}
	if last := got[len(got)-1].GetEvent(); last != "done" {
		t.Fatalf("last event %q, want done", last)
	}
	// The whole run, read in one piece straight from the suite.
	var want []*wick.Event
	for ev, err := range direct.Join(t.Context(), got[0].GetRunId(), "") {
		if err != nil {
			t.Fatal(err)
		}
		want = append(want, ev)
	}
	if len(got) != len(want) {
		t.Fatalf("%d events through the cut connection, %d in the run", len(got), len(want))
	}
	for i := range want {
		if !proto.Equal(got[i], want[i]) {
			t.Fatalf("event %d: %v, want %v", i, got[i], want[i])
		}
	}
}

func TestStreamGivesUpAfterBoundedRejoins(t *testing.T) {
	direct := client(t, aliceToken)
	agent := newAgent(t, direct, "slow")
	p := startProxy(t, suiteAddr)
	var joins atomic.Int32
	countJoins := func(ctx context.Context, desc *grpc.StreamDesc, cc *grpc.ClientConn, method string, streamer grpc.Streamer, opts ...grpc.CallOption) (grpc.ClientStream, error) {
		if strings.HasSuffix(method, "/JoinRun") {
			joins.Add(1)
		}
		return streamer(ctx, desc, cc, method, opts...)
	}
	c := clientAt(t, p.addr(), aliceToken, wick.WithRejoin(2, time.Millisecond), wick.WithDialOption(grpc.WithStreamInterceptor(countJoins)))
	var runID string
	var last error
	for ev, err := range c.Stream(t.Context(), agent, wick.Prompt("go")) {
		if err != nil {
			last = err
			continue
		}
		runID = ev.GetRunId()
		if ev.GetPayload().GetOnChatModelStream() != nil {
			p.refuseNew()
			p.cut()
		}
	}
	wantCode(t, "the stream's end", last, codes.Unavailable)
	if runID == "" {
		t.Fatal("no event before the cut")
	}
	if n := joins.Load(); n != 2 {
		t.Fatalf("%d re-joins, want 2", n)
	}
}

func TestStreamStops(t *testing.T) {
	c := client(t, aliceToken)
	agent := newAgent(t, c, "slow")
	firstDelta := func(t *testing.T, ctx context.Context, opts ...wick.RunOption) (runID string, last error) {
		t.Helper()
		for ev, err := range c.Stream(ctx, agent, wick.Prompt("go"), opts...) {
			if err != nil {
				return runID, err
			}
			runID = ev.GetRunId()
			if ev.GetPayload().GetOnChatModelStream() != nil {
				break
			}
		}
		return runID, nil
	}
	t.Run("cancelling the context cancels the run", func(t *testing.T) {
		ctx, cancel := context.WithCancel(t.Context())
		defer cancel()
		var runID string
		var last error
		for ev, err := range c.Stream(ctx, agent, wick.Prompt("go")) {
			if err != nil {
				last = err
				continue
			}
			runID = ev.GetRunId()
			if ev.GetPayload().GetOnChatModelStream() != nil {
				cancel()
			}
		}
		wantCode(t, "the stream's end", last, codes.Canceled)
		waitStatus(t, c, runID, "cancelled")
	})
	t.Run("breaking out cancels the run", func(t *testing.T) {
		runID, err := firstDelta(t, t.Context())
		if err != nil {
			t.Fatal(err)
		}
		waitStatus(t, c, runID, "cancelled")
	})
	t.Run("breaking out of a run kept running leaves it going", func(t *testing.T) {
		runID, err := firstDelta(t, t.Context(), wick.KeepRunning())
		if err != nil {
			t.Fatal(err)
		}
		if r, err := c.GetRun(t.Context(), runID); err != nil || r.GetStatus() != "running" {
			t.Fatalf("run %v, %v: want running", r, err)
		}
		// Re-joined later, it is followed to its end.
		var last *wick.Event
		for ev, err := range c.Join(t.Context(), runID, "") {
			if err != nil {
				t.Fatal(err)
			}
			last = ev
		}
		if last.GetEvent() != "done" {
			t.Fatalf("last event %v, want done", last)
		}
	})
	t.Run("CancelRun", func(t *testing.T) {
		runID, err := firstDelta(t, t.Context(), wick.KeepRunning())
		if err != nil {
			t.Fatal(err)
		}
		if _, err := c.CancelRun(t.Context(), runID); err != nil {
			t.Fatal(err)
		}
		waitStatus(t, c, runID, "cancelled")
	})
}

// TestStopContinueAndAnswer: a run stopped in its first step ends
// "stopped" and ContinueRun finishes it; a question is answered with Answer.
func TestStopContinueAndAnswer(t *testing.T) {
	c := client(t, aliceToken)
	agent := newAgent(t, c, "step", "calculate")
	var runID string
	var last *wick.Event
	for ev, err := range c.Stream(t.Context(), agent, wick.Prompt("go")) {
		if err != nil {
			t.Fatal(err)
		}
		if runID == "" && ev.GetPayload().GetOnChatModelStream() != nil {
			runID = ev.GetRunId()
			if _, err := c.StopRun(t.Context(), runID); err != nil {
				t.Fatal(err)
			}
		}
		last = ev
	}
	if wick.StopReason(last) != "stopped" {
		t.Fatalf("last event %v, want done stopped", last)
	}
	waitStatus(t, c, runID, "stopped")
	next, err := c.ContinueRun(t.Context(), runID)
	if err != nil {
		t.Fatal(err)
	}
	for ev, err := range c.Join(t.Context(), next.GetRunId(), "") {
		if err != nil {
			t.Fatal(err)
		}
		last = ev
	}
	if wick.StopReason(last) != "completed" {
		t.Fatalf("continued run ended with %v", last)
	}
	_, err = c.ContinueRun(t.Context(), next.GetRunId())
	wantCode(t, "continue a completed run", err, codes.FailedPrecondition)

	asking := newAgent(t, c, "ask", "ask_user")
	var q *wick.Interrupt
	for ev, err := range c.Stream(t.Context(), asking, wick.Prompt("paint it")) {
		if err != nil {
			t.Fatal(err)
		}
		if asked := wick.QuestionOf(ev); asked != nil {
			q = asked
			if q.GetQuestion() != "Which colour?" || len(q.GetChoices()) != 2 {
				t.Fatalf("question %v", q)
			}
			if _, err := c.Resume(t.Context(), ev.GetRunId(), wick.Answer(q.GetToolCallId(), "blue")); err != nil {
				t.Fatal(err)
			}
		}
		last = ev
	}
	if q == nil || wick.StopReason(last) != "completed" {
		t.Fatalf("question %v, last event %v", q, last)
	}
}

// TestResumeAlways: a call approved with Always is remembered on the
// thread, so the next run's call of the same tool is not asked about.
func TestResumeAlways(t *testing.T) {
	c := client(t, aliceToken)
	id := fmt.Sprintf("always-%d", agentSeq.Add(1))
	model, _ := structpb.NewValue("script:always")
	if _, err := c.CreateAgent(t.Context(), &wick.Agent{AgentId: id, Model: model, Approval: "interactive", Backend: &wick.BackendConfig{Type: "local"}}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.DeleteAgent(context.Background(), id) })
	thread, asked := "", 0
	for i, text := range []string{"write one", "write two"} {
		var last *wick.Event
		for ev, err := range c.Stream(t.Context(), id, wick.Prompt(text), wick.OnThread(thread)) {
			if err != nil {
				t.Fatal(err)
			}
			for _, call := range wick.PendingCalls(ev) {
				asked++
				if _, err := c.Resume(t.Context(), ev.GetRunId(), wick.Always(wick.Approve(call.GetId()))); err != nil {
					t.Fatal(err)
				}
			}
			last = ev
		}
		if wick.StopReason(last) != "completed" || asked != 1 {
			t.Fatalf("run %d: last event %v, %d calls asked about in all; want completed and 1", i+1, last, asked)
		}
		thread = last.GetThreadId()
	}
	if content, err := c.ReadFile(t.Context(), id, "/workspace/two.txt"); err != nil || content != "two\n" {
		t.Fatalf("two.txt = %q, %v", content, err)
	}
}

func TestFiles(t *testing.T) {
	c := client(t, aliceToken)
	ctx := t.Context()
	data := make([]byte, 1<<20+123)
	if _, err := rand.Read(data); err != nil {
		t.Fatal(err)
	}
	n, err := c.Upload(ctx, "default", "/workspace/sdk/big.bin", bytes.NewReader(data))
	if err != nil || n != int64(len(data)) {
		t.Fatalf("Upload = %d, %v", n, err)
	}
	var got bytes.Buffer
	if n, err := c.Download(ctx, "default", "/workspace/sdk/big.bin", &got); err != nil || n != int64(len(data)) {
		t.Fatalf("Download = %d, %v", n, err)
	}
	if !bytes.Equal(got.Bytes(), data) {
		t.Fatal("downloaded bytes differ from the uploaded ones")
	}
	if _, err := c.WriteFile(ctx, "default", "/workspace/sdk/note.txt", "a note"); err != nil {
		t.Fatal(err)
	}
	if s, err := c.ReadFile(ctx, "default", "/workspace/sdk/note.txt"); err != nil || s != "a note" {
		t.Fatalf("ReadFile = %q, %v", s, err)
	}
	entries, err := c.ListFiles(ctx, "default", "/workspace/sdk")
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range entries {
		names = append(names, e.GetName())
	}
	if strings.Join(names, ",") != "big.bin,note.txt" {
		t.Fatalf("listing %v", names)
	}

	t.Run("a failed reader leaves the file as it was", func(t *testing.T) {
		boom := errors.New("disk on fire")
		r := io.MultiReader(strings.NewReader(strings.Repeat("x", 3*wick.UploadChunkBytes)), &failingReader{err: boom})
		_, err := c.Upload(ctx, "default", "/workspace/sdk/note.txt", r)
		if !errors.Is(err, boom) {
			t.Fatalf("Upload = %v, want the reader's error", err)
		}
		if s, err := c.ReadFile(ctx, "default", "/workspace/sdk/note.txt"); err != nil || s != "a note" {
			t.Fatalf("after a failed upload ReadFile = %q, %v", s, err)
		}
	})
	t.Run("missing files", func(t *testing.T) {
		_, err := c.Download(ctx, "default", "/workspace/sdk/none", io.Discard)
		wantCode(t, "Download", err, codes.NotFound)
		_, err = c.ReadFile(ctx, "default", "/workspace/sdk/none")
		wantCode(t, "ReadFile", err, codes.NotFound)
	})
}

type failingReader struct{ err error }

func (r *failingReader) Read([]byte) (int, error) { return 0, r.err }

func TestThreads(t *testing.T) {
	c := client(t, bobToken)
	ctx := t.Context()
	res, err := c.Invoke(ctx, "default", wick.Prompt("hi"))
	if err != nil {
		t.Fatal(err)
	}
	threads, err := c.ListThreads(ctx, "default")
	if err != nil {
		t.Fatal(err)
	}
	found := false
	for _, th := range threads {
		found = found || th.GetThreadId() == res.GetThreadId()
	}
	if !found {
		t.Fatalf("thread %s not in %v", res.GetThreadId(), threads)
	}
	if err := c.DeleteThread(ctx, res.GetThreadId()); err != nil {
		t.Fatal(err)
	}
	_, err = c.GetThread(ctx, res.GetThreadId())
	wantCode(t, "GetThread after delete", err, codes.NotFound)
	agents, err := c.ListAgents(ctx)
	if err != nil || len(agents) == 0 {
		t.Fatalf("ListAgents = %v, %v", agents, err)
	}
	if err := c.DeleteAgent(ctx, "nobody"); status.Code(err) != codes.NotFound {
		t.Fatalf("DeleteAgent of nobody = %v", err)
	}
}

// TestTasksAPI: a thread without background tasks lists none; an unknown
// task, or another user's thread, is NotFound or empty.
func TestTasksAPI(t *testing.T) {
	c := client(t, aliceToken)
	res, err := c.Invoke(t.Context(), "default", wick.Prompt("hi"))
	if err != nil {
		t.Fatal(err)
	}
	tasks, err := c.ListTasks(t.Context(), res.GetThreadId())
	if err != nil || len(tasks) != 0 {
		t.Fatalf("ListTasks = %v, %v", tasks, err)
	}
	_, err = c.GetTask(t.Context(), "task_missing")
	wantCode(t, "get an unknown task", err, codes.NotFound)
	_, err = c.CancelTask(t.Context(), "task_missing")
	wantCode(t, "cancel an unknown task", err, codes.NotFound)
	_, err = c.GetTask(t.Context(), "bad id!")
	wantCode(t, "get a task by a bad id", err, codes.InvalidArgument)
}
