package e2e

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/api/types/filters"
	"github.com/docker/docker/api/types/volume"
	"github.com/docker/docker/client"
	"github.com/docker/docker/pkg/stdcopy"
	"github.com/redis/go-redis/v9"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/structpb"

	agentv1 "github.com/wick-agent/wick/gen/wick/agent/v1"
	"github.com/wick-agent/wick/platform/dial"
	"github.com/wick-agent/wick/platform/testenv"
	"github.com/wick-agent/wick/services/gateway"
)

// The note the fault tests write before the fault: it must survive it.
const (
	faultNotePath = "/workspace/notes.txt"
	faultNote     = "written before the fault\n"
	faultUser     = "alice"
	// faultDeadline bounds each fault test's calls.
	faultDeadline = 3 * time.Minute
)

// faultLongText is a reply long enough (80 tokens) that a fault injected
// at its first token lands while it streams.
var faultLongText = strings.TrimSpace(strings.Repeat("streaming ", 80))

func init() {
	writeNote := `{"name":"write_file","arguments":{"path":"` + faultNotePath + `","content":"written before the fault\n"}}`
	// fault-stream: a completed tool round, then a long reply to cut.
	scripts["fault-stream"] = `{"turns":[
		{"text":"Writing the note.","tool_calls":[` + writeNote + `]},
		{"text":"` + faultLongText + `"}
	],"end_text":"Continued after the fault."}`
	// fault-exec: a completed tool round, a long command to cut, a reply;
	// the next run reads the note back with a command.
	scripts["fault-exec"] = `{"turns":[
		{"text":"Writing the note.","tool_calls":[` + writeNote + `]},
		{"text":"Sleeping.","tool_calls":[{"name":"execute","arguments":{"command":"sleep 60"}}]},
		{"text":"The command ended."},
		{"text":"Reading the note.","tool_calls":[{"name":"execute","arguments":{"command":"cat notes.txt"}}]},
		{"text":"The note is still there."}
	],"end_text":"The fault script has finished."}`
	// fault-full: a small file, then a file larger than the workspace.
	scripts["fault-full"] = `{"turns":[
		{"text":"Writing the note.","tool_calls":[` + writeNote + `]},
		{"text":"Writing a big file.","tool_calls":[{"name":"write_file","arguments":{"path":"` + faultNotePath + `","content":"` + strings.Repeat("x", faultBigFile) + `"}}]},
		{"text":"The write failed."}
	],"end_text":"The fault script has finished."}`
}

// faultBigFile is larger than faultWorkspaceSize, the workspace tmpfs.
const (
	faultBigFile       = 256 << 10
	faultWorkspaceSize = "128k"
)

// createFaultAgent creates the user's agent with model and backend.
func createFaultAgent(t *testing.T, s *procSuite, id, model string, backend *agentv1.BackendConfig) {
	t.Helper()
	ctx, cancel := context.WithTimeout(as(t.Context(), faultUser), time.Minute)
	defer cancel()
	if _, err := s.client.CreateAgent(ctx, &agentv1.CreateAgentRequest{Agent: &agentv1.Agent{
		AgentId: id, Model: structpb.NewStringValue(model), Backend: backend,
	}}); err != nil {
		t.Fatalf("create agent %s: %v", id, err)
	}
}

// streamRun runs one message on the agent (thread "" starts one) and reads
// the events until the stream ends; onEvent sees each event as it arrives,
// to inject a fault at a precise point. It returns the events and the
// stream's final error: nil when it ended cleanly.
func streamRun(t *testing.T, s *procSuite, agentID, threadID, text string, onEvent func(*agentv1.StreamEvent)) ([]*agentv1.StreamEvent, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(as(t.Context(), faultUser), faultDeadline)
	defer cancel()
	st, err := s.client.Stream(ctx, &agentv1.StreamRequest{
		AgentId: agentID, ThreadId: threadID, Enqueue: true,
		Messages: []*agentv1.Message{{Role: "user", Content: text}},
	})
	if err != nil {
		return nil, err
	}
	var evs []*agentv1.StreamEvent
	for {
		m, err := st.Recv()
		if errors.Is(err, io.EOF) {
			return evs, nil
		}
		if err != nil {
			return evs, err
		}
		evs = append(evs, m.GetEvent())
		if onEvent != nil {
			onEvent(m.GetEvent())
		}
	}
}

// once returns an onEvent that calls fault at the first event matching.
func once(match func(*agentv1.StreamEvent) bool, fault func()) func(*agentv1.StreamEvent) {
	done := false
	return func(ev *agentv1.StreamEvent) {
		if !done && match(ev) {
			done = true
			fault()
		}
	}
}

// afterToolEnd matches the first event of kind after the end of tool.
func afterToolEnd(tool, kind string) func(*agentv1.StreamEvent) bool {
	ended := false
	return func(ev *agentv1.StreamEvent) bool {
		if ev.GetEvent() == "on_tool_end" && ev.GetName() == tool {
			ended = true
			return false
		}
		return ended && ev.GetEvent() == kind
	}
}

// toolStart matches the start of tool.
func toolStart(tool string) func(*agentv1.StreamEvent) bool {
	return func(ev *agentv1.StreamEvent) bool { return ev.GetEvent() == "on_tool_start" && ev.GetName() == tool }
}

// field is a string field of an event's data.
func field(ev *agentv1.StreamEvent, name string) string {
	return ev.GetData().GetStructValue().GetFields()[name].GetStringValue()
}

// toolEnds checks that every on_tool_start has exactly one on_tool_end with
// its tool_call_id, after it, and returns the ends by tool name in order.
func toolEnds(t *testing.T, evs []*agentv1.StreamEvent) map[string][]*agentv1.StreamEvent {
	t.Helper()
	started := map[string]bool{}
	endsOf := map[string]int{}
	byName := map[string][]*agentv1.StreamEvent{}
	for _, ev := range evs {
		id := field(ev, "tool_call_id")
		switch ev.GetEvent() {
		case "on_tool_start":
			started[id] = true
		case "on_tool_end":
			if !started[id] {
				t.Errorf("on_tool_end of %s (%s) without its start", ev.GetName(), id)
			}
			endsOf[id]++
			byName[ev.GetName()] = append(byName[ev.GetName()], ev)
		}
	}
	for id := range started {
		if endsOf[id] != 1 {
			t.Errorf("tool call %s has %d ends, want exactly 1", id, endsOf[id])
		}
	}
	return byName
}

// validThread loads the thread through the API and checks it with the rules
// providers enforce (Messages.Validate and the pairing kept between runs): known
// roles; user and system messages with content; assistant messages with
// content or tool calls, each call with an id and a name; tool messages
// with tool_call_id and name, each answering a call made before it; and
// every call answered exactly once.
func validThread(t *testing.T, s *procSuite, threadID string) []*agentv1.Message {
	t.Helper()
	ctx, cancel := context.WithTimeout(as(t.Context(), faultUser), time.Minute)
	defer cancel()
	resp, err := s.client.GetThread(ctx, &agentv1.GetThreadRequest{ThreadId: threadID})
	if err != nil {
		t.Fatalf("load thread %s: %v", threadID, err)
	}
	msgs := resp.GetThread().GetMessages()
	pending := map[string]bool{}
	for i, m := range msgs {
		bad := ""
		switch m.GetRole() {
		case "user", "system":
			if m.GetContent() == "" {
				bad = "no content"
			}
		case "assistant":
			if m.GetContent() == "" && len(m.GetToolCalls()) == 0 {
				bad = "neither content nor tool calls"
			}
			for _, c := range m.GetToolCalls() {
				if c.GetId() == "" || c.GetName() == "" {
					bad = "a tool call without id or name"
				}
				if pending[c.GetId()] {
					bad = "a repeated tool call id " + c.GetId()
				}
				pending[c.GetId()] = true
			}
		case "tool":
			switch {
			case m.GetToolCallId() == "" || m.GetName() == "":
				bad = "no tool_call_id or name"
			case !pending[m.GetToolCallId()]:
				bad = "an answer to no pending call " + m.GetToolCallId()
			}
			delete(pending, m.GetToolCallId())
		default:
			bad = "an unknown role"
		}
		if bad != "" {
			t.Fatalf("thread %s message %d (%s) has %s: %v", threadID, i, m.GetRole(), bad, msgs)
		}
	}
	if len(pending) > 0 {
		t.Fatalf("thread %s has tool calls without results %v: %v", threadID, pending, msgs)
	}
	return msgs
}

// hasToolResult reports whether msgs hold a result of tool without an error.
func hasToolResult(msgs []*agentv1.Message, tool, contains string) bool {
	for _, m := range msgs {
		if m.GetRole() == "tool" && m.GetName() == tool && strings.Contains(m.GetContent(), contains) {
			return true
		}
	}
	return false
}

func lastEvent(evs []*agentv1.StreamEvent) *agentv1.StreamEvent {
	if len(evs) == 0 {
		return nil
	}
	return evs[len(evs)-1]
}

func threadOf(evs []*agentv1.StreamEvent) string {
	for _, ev := range evs {
		if ev.GetThreadId() != "" {
			return ev.GetThreadId()
		}
	}
	return ""
}

// checkDone checks that a run ended with done and no error event.
func checkDone(t *testing.T, evs []*agentv1.StreamEvent, err error) {
	t.Helper()
	if err != nil {
		t.Fatalf("run failed: %v (events %v)", err, evs)
	}
	for _, ev := range evs {
		if ev.GetEvent() == "error" {
			t.Fatalf("run has an error event: %v", ev)
		}
	}
	if last := lastEvent(evs); last.GetEvent() != "done" {
		t.Fatalf("run ended with %v, want done", last)
	}
}

// localBackend is a local sandbox: the faults of Redis and the LLM gateway
// need tools but no Docker.
var localBackend = &agentv1.BackendConfig{Type: "local"}

var localSandboxArgs = []string{"-default-type", "local", "-allow-local", "-single-user"}

// TestFaultRedisStopped kills redis-server while a run streams over REST,
// after a completed tool round, and starts it again on the same port and
// data. The live stream ends with the run's error event saying the store is
// unreachable (not a bare stream error); once Redis is back the run is
// failed and its log, read again from the start on the replica that ran it
// or on another, ends with that event and closes.
func TestFaultRedisStopped(t *testing.T) {
	s := startProcs(t, procConfig{sandboxArgs: localSandboxArgs, agentArgs: []string{"-run-lease", "2s"}})
	createFaultAgent(t, s, "redis-fault", "script:fault-stream?delay=50ms", localBackend)
	api := faultGateway(t, s)
	ctx, cancel := context.WithTimeout(t.Context(), faultDeadline)
	defer cancel()

	resp := openSSE(t, ctx, "POST", api+"/agents/redis-fault/stream", aliceToken, jsonBody(userMessage("write the note", map[string]any{"enqueue": true})))
	kill := once(afterToolEnd("write_file", "on_chat_model_stream"), s.redis.Kill)
	var evs []*agentv1.StreamEvent
	frames := newEventStream(resp.Body)
	for {
		f, err := frames.next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatalf("read the live stream: %v", err)
		}
		ev := runEventOf(t, f)
		evs = append(evs, ev)
		kill(ev)
	}
	t.Logf("events %d, last %v", len(evs), lastEvent(evs))
	threadID, runID := threadOf(evs), lastEvent(evs).GetRunId()
	if threadID == "" || runID == "" {
		t.Fatalf("no thread or run id in %v", evs)
	}
	if ends := toolEnds(t, evs)["write_file"]; len(ends) != 1 || field(ends[0], "error") != "" {
		t.Fatalf("write_file ends %v, want one success", ends)
	}
	checkStoreStopped(t, "the live stream", evs)

	t.Run("loading the thread while Redis is down is Unavailable", func(t *testing.T) {
		ctx, cancel := context.WithTimeout(as(t.Context(), faultUser), time.Minute)
		defer cancel()
		_, err := s.client.GetThread(ctx, &agentv1.GetThreadRequest{ThreadId: threadID})
		checkUnavailable(t, "GetThread", err, nil)
	})

	s.redis.Start()
	// go-redis, after failed dials, retries in the background once a second
	// and answers the last dial error meanwhile: Unavailable until then.
	waitFor(t, "the agent reaches Redis again", time.Minute, func() (bool, string) {
		ctx, cancel := context.WithTimeout(as(t.Context(), faultUser), 10*time.Second)
		defer cancel()
		_, err := s.client.GetThread(ctx, &agentv1.GetThreadRequest{ThreadId: threadID})
		return status.Code(err) != codes.Unavailable, fmt.Sprint(err)
	})
	var run struct {
		Run struct {
			Status string `json:"status"`
		} `json:"run"`
	}
	r := call(t, "GET", api+"/runs/"+runID, aliceToken, nil)
	if r.code != http.StatusOK || json.Unmarshal(r.body, &run) != nil {
		t.Fatalf("GET /runs/%s = %d %s", runID, r.code, r)
	}
	if run.Run.Status != "failed" {
		t.Fatalf("GET /runs/%s: status %q, want failed", runID, run.Run.Status)
	}
	var rejoined []*agentv1.StreamEvent
	for _, f := range readEvents(t, openSSE(t, ctx, "GET", api+"/runs/"+runID+"/events", aliceToken, nil).Body) {
		rejoined = append(rejoined, runEventOf(t, f))
	}
	checkStoreStopped(t, "re-joining from the start", rejoined)

	// The replica that ran the run writes its end to Redis once Redis
	// answers (it retries with backoff); another replica reads that log.
	rdb := redis.NewClient(&redis.Options{Addr: s.redisAddr})
	t.Cleanup(func() { rdb.Close() })
	waitFor(t, "the run's end in Redis", time.Minute, func() (bool, string) {
		st, err := rdb.HGet(ctx, "wick:run:{"+runID+"}", "s").Result()
		return st == "failed", fmt.Sprint(st, err)
	})
	join, err := s.replica(t).JoinRun(as(ctx, faultUser), &agentv1.JoinRunRequest{RunId: runID})
	if err != nil {
		t.Fatal(err)
	}
	var onB []*agentv1.StreamEvent
	for {
		m, err := join.Recv()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatalf("JoinRun on another replica: %v (events %v)", err, onB)
		}
		onB = append(onB, m.GetEvent())
	}
	checkStoreStopped(t, "JoinRun on another replica", onB)

	msgs := validThread(t, s, threadID)
	if len(msgs) != 3 || !hasToolResult(msgs, "write_file", "") {
		t.Fatalf("thread after the fault = %v, want the user message and the completed write_file round", msgs)
	}
	evs, err = streamRun(t, s, "redis-fault", threadID, "go on", nil)
	checkDone(t, evs, err)
	after := validThread(t, s, threadID)
	if len(after) != len(msgs)+2 || after[len(after)-1].GetContent() != faultLongText {
		t.Fatalf("thread after the next run = %v, want the earlier %d messages and the new exchange", after, len(msgs))
	}
}

// storeStoppedMessage is the documented message of a run stopped because
// its events could not be logged.
const storeStoppedMessage = "the run store is unreachable: the run was stopped, as its events could not be logged"

// checkStoreStopped checks that a run's events end with exactly one last
// event: the error event of a run stopped by its store.
func checkStoreStopped(t *testing.T, what string, evs []*agentv1.StreamEvent) {
	t.Helper()
	last := lastEvent(evs)
	if last.GetEvent() != "error" || field(last, "code") != "unavailable" || field(last, "message") != storeStoppedMessage {
		t.Fatalf("%s ended with %v, want an error event with code unavailable and %q", what, last, storeStoppedMessage)
	}
	for _, ev := range evs[:len(evs)-1] {
		if ev.GetEvent() == "error" || ev.GetEvent() == "done" {
			t.Fatalf("%s has a last event before its end: %v", what, ev)
		}
	}
}

// runEventOf decodes an SSE frame of a run's stream: its data must be a
// run event of the frame's kind (a stream's own failure, an Error, is not).
func runEventOf(t *testing.T, f sseMessage) *agentv1.StreamEvent {
	t.Helper()
	ev, err := frameEvent(f.Data)
	if err != nil || ev.GetEvent() != f.Event {
		t.Fatalf("frame %q with data %s is not a run event: %v", f.Event, f.Data, err)
	}
	return ev
}

// faultGateway serves the REST API in front of the suite's agent service,
// with aliceToken for faultUser, and returns its URL.
func faultGateway(t *testing.T, s *procSuite) string {
	t.Helper()
	conn, err := dial.New(s.agentAddr, dial.WithIdentity(s.key), dial.WithDialOption(testenv.EventData()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	gw, err := gateway.New(gateway.Config{Tokens: map[string]string{aliceToken: faultUser}}, conn, gateway.WithLogger(quietLogger()))
	if err != nil {
		t.Fatal(err)
	}
	hs := httptest.NewServer(gw)
	t.Cleanup(hs.Close)
	return hs.URL
}

// checkUnavailable checks that a call failed, or a run ended, with a clear
// Unavailable: the code, and a message that says what is unreachable.
func checkUnavailable(t *testing.T, what string, err error, evs []*agentv1.StreamEvent) {
	t.Helper()
	if err != nil {
		st := status.Convert(err)
		if st.Code() != codes.Unavailable || !strings.Contains(st.Message(), "unreachable") {
			t.Fatalf("%s failed with %v %q, want Unavailable saying what is unreachable", what, st.Code(), st.Message())
		}
		return
	}
	last := lastEvent(evs)
	if last.GetEvent() != "error" || field(last, "code") != "unavailable" || !strings.Contains(field(last, "message"), "unreachable") {
		t.Fatalf("%s ended with %v, want an error event with code unavailable saying what is unreachable", what, last)
	}
}

// TestFaultLLMGatewayKilled kills wick-llmgw while the model's reply
// streams, after a completed tool round, and starts it again.
func TestFaultLLMGatewayKilled(t *testing.T) {
	s := startProcs(t, procConfig{sandboxArgs: localSandboxArgs})
	createFaultAgent(t, s, "llm-fault", "script:fault-stream?delay=50ms", localBackend)

	evs, err := streamRun(t, s, "llm-fault", "", "write the note", once(afterToolEnd("write_file", "on_chat_model_stream"), s.llmgw.Kill))
	t.Logf("events %d, last %v, err %v", len(evs), lastEvent(evs), err)
	threadID := threadOf(evs)
	if ends := toolEnds(t, evs)["write_file"]; len(ends) != 1 || field(ends[0], "error") != "" {
		t.Fatalf("write_file ends %v, want one success", ends)
	}
	checkUnavailable(t, "the run", err, evs)
	msgs := validThread(t, s, threadID)
	if len(msgs) != 3 || !hasToolResult(msgs, "write_file", "") {
		t.Fatalf("thread after the fault = %v, want the user message and the completed write_file round", msgs)
	}

	s.llmgw.Start()
	evs, err = streamRun(t, s, "llm-fault", threadID, "go on", nil)
	checkDone(t, evs, err)
	after := validThread(t, s, threadID)
	if len(after) != len(msgs)+2 || after[len(after)-1].GetContent() != faultLongText {
		t.Fatalf("thread after the next run = %v, want the earlier %d messages and the new exchange", after, len(msgs))
	}
}

// dockerFaults starts the process suite on Docker sandboxes and returns it
// with the engine and the manager id that labels its containers.
func dockerFaults(t *testing.T) (*procSuite, *client.Client, string, string) {
	t.Helper()
	cli, image := dockerSetup(t)
	manager := "wick-e2e-" + randomHex(6)
	removeManaged(t, cli, manager)
	s := startProcs(t, procConfig{
		sandboxArgs: []string{"-default-type", "docker", "-manager-id", manager, "-default-image", image,
			"-daemon-bin", daemonBin, "-wickfs-bin", wickfsBin},
		agentArgs: []string{"-default-image", image},
	})
	return s, cli, manager, image
}

// sandboxContainer is the one container of the manager's sandboxes.
func sandboxContainer(t *testing.T, cli *client.Client, manager string) container.Summary {
	t.Helper()
	cs, err := cli.ContainerList(t.Context(), container.ListOptions{All: true,
		Filters: filters.NewArgs(filters.Arg("label", managerLabel+"="+manager))})
	if err != nil || len(cs) != 1 {
		t.Fatalf("sandbox containers of %s: %v %v", manager, cs, err)
	}
	return cs[0]
}

// execIn runs cmd in the container, as its own user, and returns its output.
func execIn(ctx context.Context, cli *client.Client, id string, cmd ...string) (string, error) {
	ex, err := cli.ContainerExecCreate(ctx, id, container.ExecOptions{Cmd: cmd, AttachStdout: true, AttachStderr: true})
	if err != nil {
		return "", err
	}
	hr, err := cli.ContainerExecAttach(ctx, ex.ID, container.ExecAttachOptions{})
	if err != nil {
		return "", err
	}
	defer hr.Close()
	var out bytes.Buffer
	_, err = stdcopy.StdCopy(&out, &out, hr.Reader)
	return out.String(), err
}

// waitProcess waits until a process named name runs in the container: a
// command started through the daemon has no event the test can wait on.
func waitProcess(t *testing.T, cli *client.Client, id, name string) {
	t.Helper()
	waitFor(t, name+" runs in the sandbox", time.Minute, func() (bool, string) {
		out, err := execIn(t.Context(), cli, id, "sh", "-c", "pidof "+name+" && echo running")
		return err == nil && strings.Contains(out, "running"), fmt.Sprintf("%q %v", out, err)
	})
}

// checkExecFault checks a run whose execute call was cut by a fault: the
// call's single end carries the error, the loop went on to the model's
// reply, and the thread keeps the note's round and the failed call's result.
// why is what the call's error must say.
func checkExecFault(t *testing.T, s *procSuite, evs []*agentv1.StreamEvent, err error, why string) string {
	t.Helper()
	t.Logf("events %d, last %v, err %v", len(evs), lastEvent(evs), err)
	checkDone(t, evs, err)
	ends := toolEnds(t, evs)
	if w := ends["write_file"]; len(w) != 1 || field(w[0], "error") != "" {
		t.Fatalf("write_file ends %v, want one success", w)
	}
	x := ends["execute"]
	if len(x) != 1 || !strings.Contains(field(x[0], "error"), why) {
		t.Fatalf("execute ends %v, want one with an error saying %q", x, why)
	}
	threadID := threadOf(evs)
	msgs := validThread(t, s, threadID)
	if !hasToolResult(msgs, "write_file", "") || !hasToolResult(msgs, "execute", "") {
		t.Fatalf("thread after the fault = %v, want the write_file round and the failed execute's result", msgs)
	}
	return threadID
}

// checkNoteReadBack runs the next turn of fault-exec, which reads the note
// with a command: the sandbox works again and the workspace kept the file.
func checkNoteReadBack(t *testing.T, s *procSuite, agentID, threadID string) {
	t.Helper()
	evs, err := streamRun(t, s, agentID, threadID, "read the note", nil)
	checkDone(t, evs, err)
	x := toolEnds(t, evs)["execute"]
	if len(x) != 1 || field(x[0], "error") != "" || !strings.Contains(field(x[0], "output"), strings.TrimSpace(faultNote)) {
		t.Fatalf("execute after the fault = %v, want the note", x)
	}
	validThread(t, s, threadID)
}

// TestFaultSandboxKilled kills wick-sandbox while a command runs in a
// Docker sandbox, and starts it again: it adopts the running container.
func TestFaultSandboxKilled(t *testing.T) {
	s, cli, manager, image := dockerFaults(t)
	createFaultAgent(t, s, "sandbox-fault", "script:fault-exec?delay=2ms", &agentv1.BackendConfig{Type: "docker", Image: image})

	evs, err := streamRun(t, s, "sandbox-fault", "", "sleep", once(toolStart("execute"), func() {
		waitProcess(t, cli, sandboxContainer(t, cli, manager).ID, "sleep")
		s.sandbox.Kill()
	}))
	threadID := checkExecFault(t, s, evs, err, "the sandbox service became unreachable while the command ran")
	before := sandboxContainer(t, cli, manager)

	s.sandbox.Start()
	checkNoteReadBack(t, s, "sandbox-fault", threadID)
	if after := sandboxContainer(t, cli, manager); after.ID != before.ID {
		t.Errorf("the sandbox's container changed from %s to %s; want it adopted", before.ID, after.ID)
	}
}

// TestFaultDaemonKilled kills wick-daemon inside the container while it runs
// a command; the sandbox service restarts it for the next command.
func TestFaultDaemonKilled(t *testing.T) {
	s, cli, manager, image := dockerFaults(t)
	createFaultAgent(t, s, "daemon-fault", "script:fault-exec?delay=2ms", &agentv1.BackendConfig{Type: "docker", Image: image})

	evs, err := streamRun(t, s, "daemon-fault", "", "sleep", once(toolStart("execute"), func() {
		id := sandboxContainer(t, cli, manager).ID
		waitProcess(t, cli, id, "sleep")
		if out, err := execIn(t.Context(), cli, id, "sh", "-c", "kill -9 $(pidof wick-daemon) && echo killed"); err != nil || !strings.Contains(out, "killed") {
			t.Fatalf("kill wick-daemon: %q %v", out, err)
		}
	}))
	threadID := checkExecFault(t, s, evs, err, "wick-daemon stopped while the command ran, which was not run again")
	checkNoteReadBack(t, s, "daemon-fault", threadID)
}

// TestFaultWorkspaceFull gives a Docker sandbox a workspace on a small
// tmpfs volume: a write_file larger than it fails clearly and the file it
// would have replaced is intact, with no temporary file left behind.
func TestFaultWorkspaceFull(t *testing.T) {
	s, cli, manager, image := dockerFaults(t)
	const agentID = "full-fault"
	// The sandbox service names a workspace volume after the sandbox
	// (services/sandbox sandboxKey) and uses one that exists: an operator
	// can provision it with a size limit, as this test does with tmpfs. The
	// mode lets the sandbox user write, as the service only prepares
	// volumes it creates.
	h := sha256.Sum256([]byte(manager + "\x00" + faultUser + "\x00" + agentID))
	vol := "wick-ws-" + hex.EncodeToString(h[:])[:20]
	if _, err := cli.VolumeCreate(t.Context(), volume.CreateOptions{Name: vol, Driver: "local",
		DriverOpts: map[string]string{"type": "tmpfs", "device": "tmpfs", "o": "size=" + faultWorkspaceSize + ",mode=1777"},
		Labels:     map[string]string{managerLabel: manager, e2eLabel: "1"}}); err != nil {
		t.Fatal(err)
	}
	createFaultAgent(t, s, agentID, "script:fault-full?delay=0s", &agentv1.BackendConfig{Type: "docker", Image: image})

	evs, err := streamRun(t, s, agentID, "", "write", nil)
	checkDone(t, evs, err)
	if c := sandboxContainer(t, cli, manager); !mountsVolume(c, vol) {
		t.Fatalf("the sandbox does not use the small volume %s: %+v", vol, c.Mounts)
	}
	w := toolEnds(t, evs)["write_file"]
	if len(w) != 2 || field(w[0], "error") != "" || !strings.Contains(field(w[1], "error"), "no space left on device") {
		t.Fatalf("write_file ends %v, want a success and then an error saying no space is left", w)
	}
	t.Logf("write_file's error: %s", field(w[1], "error"))
	msgs := validThread(t, s, threadOf(evs))
	if !hasToolResult(msgs, "write_file", "") {
		t.Fatalf("thread %v lacks the write_file rounds", msgs)
	}

	ctx, cancel := context.WithTimeout(as(t.Context(), faultUser), time.Minute)
	defer cancel()
	t.Run("the files API's write fails the same way", func(t *testing.T) {
		_, err := s.client.WriteFile(ctx, &agentv1.WriteFileRequest{AgentId: agentID, Path: faultNotePath, Content: strings.Repeat("y", faultBigFile)})
		if st := status.Convert(err); st.Code() != codes.ResourceExhausted || !strings.Contains(st.Message(), "no space left on device") {
			t.Fatalf("WriteFile of a file larger than the workspace = %v %q, want ResourceExhausted saying no space is left", st.Code(), st.Message())
		}
	})
	got, err := s.client.ReadFile(ctx, &agentv1.ReadFileRequest{AgentId: agentID, Path: faultNotePath})
	if err != nil || got.GetContent() != faultNote {
		t.Fatalf("the note after the failed writes = %q %v, want %q", got.GetContent(), err, faultNote)
	}
	ls, err := s.client.ListFiles(ctx, &agentv1.ListFilesRequest{AgentId: agentID})
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range ls.GetEntries() {
		// skills is the mount point of the read-only skills library every
		// sandbox gets, not something a write made.
		if f.GetName() != "notes.txt" && f.GetName() != "skills" {
			t.Errorf("the workspace holds %q besides the note: a failed write left it", f.GetName())
		}
	}
}

// mountsVolume reports whether the container mounts the named volume.
func mountsVolume(c container.Summary, name string) bool {
	for _, m := range c.Mounts {
		if m.Name == name {
			return true
		}
	}
	return false
}
