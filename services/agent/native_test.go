package agent_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"go.opentelemetry.io/otel"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"google.golang.org/grpc/codes"
	"google.golang.org/protobuf/types/known/structpb"

	agentv1 "github.com/wick-agent/wick/gen/wick/agent/v1"
	llmv1 "github.com/wick-agent/wick/gen/wick/llm/v1"
	sandboxv1 "github.com/wick-agent/wick/gen/wick/sandbox/v1"
	"github.com/wick-agent/wick/platform/identity"
	"github.com/wick-agent/wick/services/agent"
	"github.com/wick-agent/wick/services/agent/internal/hooks"
	"github.com/wick-agent/wick/services/agent/internal/quota"
	"github.com/wick-agent/wick/services/agent/internal/tools"
)

var (
	spansOnce sync.Once
	spans     *tracetest.InMemoryExporter
)

// recordSpans sends every span of the test binary to memory. The tracing
// hook takes the global provider, as it does in a deployment.
func recordSpans() *tracetest.InMemoryExporter {
	spansOnce.Do(func() {
		spans = tracetest.NewInMemoryExporter()
		otel.SetTracerProvider(sdktrace.NewTracerProvider(sdktrace.WithSyncer(spans)))
	})
	return spans
}

// toolSpan returns the "tool.call" span of one tool call.
func toolSpan(exp *tracetest.InMemoryExporter, callID string) (map[string]string, bool) {
	for _, s := range exp.GetSpans() {
		if s.Name != hooks.SpanToolCall {
			continue
		}
		attrs := map[string]string{}
		for _, a := range s.Attributes {
			attrs[string(a.Key)] = a.Value.String()
		}
		if attrs["tool_call_id"] == callID {
			return attrs, true
		}
	}
	return nil, false
}

// seen is what a native tool saw of one call.
type seen struct {
	args map[string]any
	user string
	info agent.CallInfo
}

// lastTool answers with every tool message of the conversation once the
// last message is a tool result, and otherwise asks for calls.
func lastTool(calls ...*llmv1.ToolCall) func(int, *llmv1.StreamRequest) reply {
	return func(_ int, req *llmv1.StreamRequest) reply {
		msgs := req.GetMessages()
		if msgs[len(msgs)-1].GetRole() != "tool" {
			return reply{calls: calls}
		}
		var outs []string
		for _, m := range msgs {
			if m.GetRole() == "tool" {
				outs = append(outs, m.GetName()+"="+m.GetContent())
			}
		}
		return text(strings.Join(outs, "|"))
	}
}

// TestNativeToolRunsLikeBuiltins checks that a native tool goes through the
// path of the built-in tools: its arguments arrive as the model sent them,
// with the user and the call in its context; on_tool_start/on_tool_end
// events name it; the tracing hook records its span; and an output over the
// eviction threshold is evicted as any tool's output is.
func TestNativeToolRunsLikeBuiltins(t *testing.T) {
	t.Parallel()
	exp := recordSpans()
	args := map[string]any{"city": "Paris", "n": 2.0, "nested": map[string]any{"list": []any{1.0, "x", true}}}
	big := strings.Repeat("0123456789", 10_000) // 100 000 characters, over the threshold
	var mu sync.Mutex
	var got []seen
	lookup := &agent.FuncTool{
		ToolName: "native_lookup",
		ToolDesc: "Look a city up",
		ToolParams: map[string]any{
			"type":       "object",
			"properties": map[string]any{"city": map[string]any{"type": "string"}},
			"required":   []string{"city"},
		},
		Fn: func(ctx context.Context, a map[string]any) (string, error) {
			user, _ := identity.User(ctx)
			info, _ := agent.CallInfoFromContext(ctx)
			mu.Lock()
			got = append(got, seen{args: a, user: user, info: info})
			mu.Unlock()
			return "found " + a["city"].(string), nil
		},
	}
	dump := &agent.FuncTool{ToolName: "native_dump", ToolDesc: "Print a lot", Fn: func(context.Context, map[string]any) (string, error) { return big, nil }}
	s := newSuite(t, lastTool(call("nl-1", "native_lookup", args), call("nd-1", "native_dump", nil), call("calc-1", "calculate", map[string]any{"expr": "1+1"})))
	a := memoryReplica(t, s, agent.WithNativeTools(lookup, dump))
	ctx := withTimeout(t, as("alice"), 30*time.Second)

	st, err := a.client.Stream(ctx, &agentv1.StreamRequest{AgentId: "default", Messages: human("look Paris up")})
	if err != nil {
		t.Fatal(err)
	}
	evs := collect(t, st.Recv)
	if last := evs[len(evs)-1]; last.GetEvent() != "done" {
		t.Fatalf("run ended with %v", last)
	}
	runID, threadID := evs[0].GetRunId(), evs[0].GetThreadId()
	evicted := tools.Evict(big, hooks.DefaultMaxResultChars, hooks.DefaultEvictKeepChars)
	if evicted == big {
		t.Fatal("the test's output is under the eviction threshold")
	}

	// The function got the model's arguments, the user and the call.
	if len(got) != 1 {
		t.Fatalf("native_lookup called %d times", len(got))
	}
	want := seen{args: args, user: "alice", info: agent.CallInfo{ToolCallID: "nl-1", ThreadID: threadID, RunID: runID}}
	if !reflect.DeepEqual(got[0], want) {
		t.Fatalf("native_lookup saw %+v, want %+v", got[0], want)
	}

	// Events: one start and one end per call, as for the built-in calculate.
	starts, ends := map[string]string{}, map[string]string{}
	for _, e := range evs {
		f := e.GetData().GetStructValue().GetFields()
		switch e.GetEvent() {
		case "on_tool_start":
			starts[f["tool_call_id"].GetStringValue()] = e.GetName()
		case "on_tool_end":
			ends[f["tool_call_id"].GetStringValue()] = e.GetName() + "=" + f["output"].GetStringValue()
		}
	}
	wantStarts := map[string]string{"nl-1": "native_lookup", "nd-1": "native_dump", "calc-1": "calculate"}
	wantEnds := map[string]string{"nl-1": "native_lookup=found Paris", "nd-1": "native_dump=" + evicted, "calc-1": "calculate=2"}
	if !reflect.DeepEqual(starts, wantStarts) || !reflect.DeepEqual(ends, wantEnds) {
		t.Fatalf("tool events: starts %v, ends (%d) differ from %v", starts, len(ends), wantStarts)
	}

	// The thread keeps the evicted output, as for any tool.
	th, err := a.client.GetThread(ctx, &agentv1.GetThreadRequest{ThreadId: threadID})
	if err != nil {
		t.Fatal(err)
	}
	contents := map[string]string{}
	for _, m := range th.GetThread().GetMessages() {
		if m.GetRole() == "tool" {
			contents[m.GetName()] = m.GetContent()
		}
	}
	if contents["native_dump"] != evicted || contents["native_lookup"] != "found Paris" || contents["calculate"] != "2" {
		t.Fatalf("tool messages: lookup %q, calculate %q, dump of %d characters", contents["native_lookup"], contents["calculate"], len(contents["native_dump"]))
	}

	// The tracing hook recorded both native calls, outside the eviction.
	for id, name := range map[string]string{"nl-1": "native_lookup", "nd-1": "native_dump"} {
		attrs, ok := toolSpan(exp, id)
		if !ok {
			t.Fatalf("no %s span for %s", hooks.SpanToolCall, id)
		}
		if attrs["tool_name"] != name {
			t.Fatalf("span of %s: %v", id, attrs)
		}
	}
	if attrs, _ := toolSpan(exp, "nd-1"); attrs["output_length"] != strconv.Itoa(len(evicted)) {
		t.Fatalf("native_dump span output_length %s, want %d", attrs["output_length"], len(evicted))
	}
}

// TestNativeToolFailureIsAToolResult checks that an error or a panic of a
// native tool becomes the call's error result, which the model sees, and the
// run goes on to its end.
func TestNativeToolFailureIsAToolResult(t *testing.T) {
	t.Parallel()
	failing := &agent.FuncTool{ToolName: "native_fail", Fn: func(context.Context, map[string]any) (string, error) {
		return "partial", errors.New("the city is unknown")
	}}
	panicking := &agent.FuncTool{ToolName: "native_panic", Fn: func(context.Context, map[string]any) (string, error) {
		panic("a bug in the embedding program")
	}}
	s := newSuite(t, lastTool(call("f1", "native_fail", nil), call("p1", "native_panic", nil)))
	a := memoryReplica(t, s, agent.WithNativeTools(failing, panicking))
	ctx := withTimeout(t, as("alice"), 30*time.Second)

	resp, err := a.client.Invoke(ctx, &agentv1.InvokeRequest{AgentId: "default", Messages: human("go")})
	if err != nil {
		t.Fatal(err)
	}
	want := "native_fail=Error: the city is unknown\npartial|native_panic=Error: tool native_panic failed unexpectedly"
	if resp.GetStatus() != "done" || resp.GetContent() != want {
		t.Fatalf("Invoke = %s %q, want done %q", resp.GetStatus(), resp.GetContent(), want)
	}
	// The service is still there.
	if _, err := a.client.ListTools(ctx, &agentv1.ListToolsRequest{}); err != nil {
		t.Fatal(err)
	}
}

// TestNativeToolSeesCancellation checks that cancelling a run ends the
// context of the native tool it is running.
func TestNativeToolSeesCancellation(t *testing.T) {
	t.Parallel()
	started := make(chan struct{})
	ended := make(chan error, 1)
	wait := &agent.FuncTool{ToolName: "native_wait", Fn: func(ctx context.Context, _ map[string]any) (string, error) {
		close(started)
		<-ctx.Done()
		ended <- ctx.Err()
		return "", ctx.Err()
	}}
	s := newSuite(t, lastTool(call("w1", "native_wait", nil)))
	a := memoryReplica(t, s, agent.WithNativeTools(wait))
	ctx := withTimeout(t, as("alice"), 30*time.Second)

	st, err := a.client.Stream(ctx, &agentv1.StreamRequest{AgentId: "default", Messages: human("wait")})
	if err != nil {
		t.Fatal(err)
	}
	first, err := st.Recv()
	if err != nil {
		t.Fatal(err)
	}
	select {
	case <-started:
	case <-ctx.Done():
		t.Fatal("native_wait never started")
	}
	if _, err := a.client.CancelRun(ctx, &agentv1.CancelRunRequest{RunId: first.GetEvent().GetRunId()}); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-ended:
		if !errors.Is(err, context.Canceled) {
			t.Fatalf("native_wait's context ended with %v", err)
		}
	case <-ctx.Done():
		t.Fatal("native_wait's context never ended")
	}
	evs := collect(t, st.Recv)
	if last := evs[len(evs)-1]; last.GetEvent() != "error" || last.GetData().GetStructValue().GetFields()["code"].GetStringValue() != "cancelled" {
		t.Fatalf("last event %v", last)
	}
	waitStatus(t, a, ctx, first.GetEvent().GetRunId(), "cancelled")
}

// TestNativeToolsInTheAPI checks how native tools show through the API:
// listed with kind "native" beside the user's external tools, named by the
// default agent, never replaced or deleted by a client, and winning over an
// external tool of the same name stored before they existed.
func TestNativeToolsInTheAPI(t *testing.T) {
	t.Parallel()
	var calls atomic.Int32
	lookup := &agent.FuncTool{ToolName: "lookup", ToolDesc: "Look up", Fn: func(context.Context, map[string]any) (string, error) {
		calls.Add(1)
		return "native answer", nil
	}}
	s := newSuite(t, lastTool(call("l1", "lookup", nil)))
	stores := agent.MemoryStores()
	ctx := withTimeout(t, as("alice"), 30*time.Second)
	// alice registered an external "lookup" before the server had a native one.
	if err := stores.Agents.PutTool(ctx, "alice", &tools.HTTPToolDef{Name: "lookup", URL: "https://example.invalid/lookup", Parameters: map[string]any{"type": "object"}}, quota.Limit{}); err != nil {
		t.Fatal(err)
	}
	a := s.agent(stores, nil, agent.WithNativeTools(lookup))

	params, err := structpb.NewStruct(map[string]any{"type": "object"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := a.client.RegisterTool(ctx, &agentv1.RegisterToolRequest{Tool: &agentv1.ToolDefinition{Name: "weather", Url: "https://example.invalid/w", Parameters: params}}); err != nil {
		t.Fatal(err)
	}
	lt, err := a.client.ListTools(ctx, &agentv1.ListToolsRequest{})
	if err != nil {
		t.Fatal(err)
	}
	var listed []string
	for _, d := range lt.GetTools() {
		listed = append(listed, d.GetName()+":"+d.GetKind()+":"+d.GetUrl())
	}
	if strings.Join(listed, ",") != "lookup:native:,weather:http:https://example.invalid/w" {
		t.Fatalf("ListTools = %v", listed)
	}
	_, err = a.client.RegisterTool(ctx, &agentv1.RegisterToolRequest{Tool: &agentv1.ToolDefinition{Name: "lookup", Url: "https://example.invalid/x", Parameters: params}})
	if code(err) != codes.InvalidArgument || !strings.Contains(err.Error(), "native tool") {
		t.Fatalf("RegisterTool over a native tool = %v", err)
	}
	// Deleting the shadowed external tool works; the native one cannot go.
	if _, err := a.client.DeleteTool(ctx, &agentv1.DeleteToolRequest{Name: "lookup"}); err != nil {
		t.Fatalf("DeleteTool of the shadowed external tool = %v", err)
	}
	if _, err := a.client.DeleteTool(ctx, &agentv1.DeleteToolRequest{Name: "lookup"}); code(err) != codes.FailedPrecondition {
		t.Fatalf("DeleteTool of a native tool = %v", err)
	}
	ga, err := a.client.GetAgent(ctx, &agentv1.GetAgentRequest{AgentId: "default"})
	if err != nil || strings.Join(ga.GetAgent().GetTools(), ",") != "calculate,datetime,lookup" {
		t.Fatalf("default agent's tools = %v, %v", ga.GetAgent().GetTools(), err)
	}
	resp, err := a.client.Invoke(ctx, &agentv1.InvokeRequest{AgentId: "default", Messages: human("look")})
	if err != nil || resp.GetContent() != "lookup=native answer" || calls.Load() != 1 {
		t.Fatalf("Invoke = %v, %v; native calls %d", resp, err, calls.Load())
	}
}

// TestNativeToolRegistrationErrors checks what New refuses, and that
// ValidateTool says so first.
func TestNativeToolRegistrationErrors(t *testing.T) {
	t.Parallel()
	fn := func(context.Context, map[string]any) (string, error) { return "", nil }
	ok := &agent.FuncTool{ToolName: "ok_tool", Fn: fn}
	tests := []struct {
		name  string
		tools []agent.Tool
		want  error
		text  string
	}{
		{"built-in name", []agent.Tool{&agent.FuncTool{ToolName: "calculate", Fn: fn}}, agent.ErrToolNameTaken, "built-in"},
		{"filesystem hook name", []agent.Tool{&agent.FuncTool{ToolName: "read_file", Fn: fn}}, agent.ErrToolNameTaken, "hooks register"},
		{"todo hook name", []agent.Tool{&agent.FuncTool{ToolName: "write_todos", Fn: fn}}, agent.ErrToolNameTaken, "hooks register"},
		{"twice", []agent.Tool{ok, &agent.FuncTool{ToolName: "ok_tool", Fn: fn}}, agent.ErrToolNameTaken, "twice"},
		{"bad name", []agent.Tool{&agent.FuncTool{ToolName: "no spaces", Fn: fn}}, agent.ErrInvalidTool, "letters"},
		{"empty name", []agent.Tool{&agent.FuncTool{Fn: fn}}, agent.ErrInvalidTool, "letters"},
		{"no function", []agent.Tool{&agent.FuncTool{ToolName: "nofn"}}, agent.ErrInvalidTool, "no Fn"},
		{"nil tool", []agent.Tool{nil}, agent.ErrInvalidTool, "nil"},
		{"schema not an object", []agent.Tool{&agent.FuncTool{ToolName: "s1", Fn: fn, ToolParams: map[string]any{"type": "string"}}}, agent.ErrInvalidTool, `"type": "object"`},
		{"required not a property", []agent.Tool{&agent.FuncTool{ToolName: "s2", Fn: fn, ToolParams: map[string]any{"type": "object", "required": []string{"x"}}}}, agent.ErrInvalidTool, `"x"`},
		{"schema not JSON", []agent.Tool{&agent.FuncTool{ToolName: "s3", Fn: fn, ToolParams: map[string]any{"type": "object", "default": func() {}}}}, agent.ErrInvalidTool, "JSON"},
	}
	s := newSuite(t, calcThenAnswer)
	llm := llmv1.NewLLMServiceClient(s.conn(s.llmAddr))
	sandbox := sandboxv1.NewSandboxServiceClient(s.conn(s.sbAddr))
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			if len(tt.tools) == 1 {
				if err := agent.ValidateTool(tt.tools[0]); !errors.Is(err, tt.want) || !strings.Contains(err.Error(), tt.text) {
					t.Fatalf("ValidateTool = %v, want %v mentioning %q", err, tt.want, tt.text)
				}
			}
			svc, err := agent.New(agent.Deps{LLM: llm, Sandbox: sandbox, Stores: agent.MemoryStores()}, agent.WithNativeTools(tt.tools...))
			if err == nil {
				svc.Close()
			}
			if !errors.Is(err, tt.want) || !strings.Contains(err.Error(), tt.text) {
				t.Fatalf("New = %v, want %v mentioning %q", err, tt.want, tt.text)
			}
		})
	}
	if err := agent.ValidateTool(ok); err != nil {
		t.Fatalf("ValidateTool(valid) = %v", err)
	}
}

// TestTemplatesBesideAgentsFile checks that an agents file and templates
// given together both serve, and that an id in both is refused.
func TestTemplatesBesideAgentsFile(t *testing.T) {
	t.Parallel()
	file := filepath.Join(t.TempDir(), "agents.yaml")
	if err := os.WriteFile(file, []byte("agents:\n  from_file:\n    name: From the file\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	s := newSuite(t, calcThenAnswer)
	a := memoryReplica(t, s, agent.WithAgentsFile(file), agent.WithTemplates(map[string]*agent.AgentConfig{"from_code": {Name: "From code"}}))
	la, err := a.client.ListAgents(as("alice"), &agentv1.ListAgentsRequest{})
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, e := range la.GetAgents() {
		ids = append(ids, e.GetAgentId())
	}
	if strings.Join(ids, ",") != "from_code,from_file" {
		t.Fatalf("agents = %v", ids)
	}
	_, err = agent.New(agent.Deps{
		LLM:     llmv1.NewLLMServiceClient(s.conn(s.llmAddr)),
		Sandbox: sandboxv1.NewSandboxServiceClient(s.conn(s.sbAddr)),
		Stores:  agent.MemoryStores(),
	}, agent.WithAgentsFile(file), agent.WithTemplates(map[string]*agent.AgentConfig{"from_file": {}}))
	if err == nil || !strings.Contains(err.Error(), `"from_file" is both in`) {
		t.Fatalf("New with an id in both = %v", err)
	}
}
