package e2e

import (
	"context"
	"net/http"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	agentv1 "github.com/wick-agent/wick/gen/wick/agent/v1"
)

// bearerTransport adds a bearer token to every request, as an MCP client
// configured with the gateway's token does.
type bearerTransport struct{ token string }

func (b bearerTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+b.token)
	return http.DefaultTransport.RoundTrip(r)
}

// progressLog collects a client's progress notifications.
type progressLog struct {
	mu   sync.Mutex
	seen []*mcp.ProgressNotificationParams
	// started receives each "run … started" notification.
	started chan *mcp.ProgressNotificationParams
}

func (p *progressLog) handle(_ context.Context, req *mcp.ProgressNotificationClientRequest) {
	p.mu.Lock()
	p.seen = append(p.seen, req.Params)
	p.mu.Unlock()
	if strings.HasPrefix(req.Params.Message, "run ") {
		select {
		case p.started <- req.Params:
		default:
		}
	}
}

func (p *progressLog) of(token string) []*mcp.ProgressNotificationParams {
	p.mu.Lock()
	defer p.mu.Unlock()
	var out []*mcp.ProgressNotificationParams
	for _, n := range p.seen {
		if n.ProgressToken == token {
			out = append(out, n)
		}
	}
	return out
}

// mcpConnect opens an MCP session on the suite's /mcp with the official Go
// SDK's client over streamable HTTP.
func mcpConnect(t *testing.T, env *wickEnv, token string) (*mcp.ClientSession, *progressLog) {
	t.Helper()
	log := &progressLog{started: make(chan *mcp.ProgressNotificationParams, 8)}
	client := mcp.NewClient(&mcp.Implementation{Name: "wick-e2e", Version: "1"}, &mcp.ClientOptions{
		ProgressNotificationHandler: log.handle,
	})
	cs, err := client.Connect(t.Context(), &mcp.StreamableClientTransport{
		Endpoint:   env.url + "/mcp",
		HTTPClient: &http.Client{Transport: bearerTransport{token: token}},
		MaxRetries: -1,
	}, nil)
	if err != nil {
		t.Fatalf("connect to /mcp: %v", err)
	}
	t.Cleanup(func() { _ = cs.Close() })
	return cs, log
}

func textOf(r *mcp.CallToolResult) string {
	var b strings.Builder
	for _, c := range r.Content {
		if tc, ok := c.(*mcp.TextContent); ok {
			b.WriteString(tc.Text)
		}
	}
	return b.String()
}

func structuredOf(t *testing.T, r *mcp.CallToolResult) map[string]any {
	t.Helper()
	m, ok := r.StructuredContent.(map[string]any)
	if !ok {
		t.Fatalf("structured content %T %v is not an object", r.StructuredContent, r.StructuredContent)
	}
	return m
}

var runStarted = regexp.MustCompile(`^run (\S+) started on thread (\S+)$`)

// TestMCPServer: the official Go SDK's MCP client lists alice's agents
// (hers and the templates, not bob's) as tools, calls one and gets its
// reply with progress notifications, continues the thread, and gets
// errors for an unknown tool, bad arguments and an agent that waits for
// approval; a cancelled call cancels its run; no token is a 401 and bob
// cannot use alice's session.
func TestMCPServer(t *testing.T) {
	t.Parallel()
	env := startWick(t)
	createAgent(t, env, map[string]any{"agent_id": "mcp-helper", "name": "Helper", "model": `script:{"delay":"40ms","turns":[
		{"text":"I will take a note.","tool_calls":[{"name":"write_file","arguments":{"path":"/workspace/mcp.txt","content":"mcp\n"}}]},
		{"text":"The note is written."},
		{"text":"Second answer on the same thread."}]}`})
	createAgent(t, env, map[string]any{"agent_id": "mcp-asks", "approval": "interactive", "model": `script:[
		{"tool_calls":[{"id":"w1","name":"write_file","arguments":{"path":"/workspace/ask.txt","content":"x\n"}}]},
		{"text":"unreachable"}]`})
	createAgent(t, env, map[string]any{"agent_id": "mcp-slow", "model": `script:{"delay":"60s","turns":[{"text":"late"}]}`})
	if r := call(t, "POST", env.url+"/agents", bobToken, jsonBody(map[string]any{"agent_id": "mcp-bobs", "backend": map[string]any{"type": "local"}})); r.code != http.StatusOK {
		t.Fatalf("bob's agent: %d %s", r.code, r)
	}
	ctx := t.Context()
	cs, progress := mcpConnect(t, env, aliceToken)

	t.Run("lists the caller's agents and the templates", func(t *testing.T) {
		listed, err := cs.ListTools(ctx, nil)
		if err != nil {
			t.Fatal(err)
		}
		want, err := env.agent.ListAgents(as(ctx, "alice"), &agentv1.ListAgentsRequest{})
		if err != nil {
			t.Fatal(err)
		}
		var names, wantNames []string
		for _, tool := range listed.Tools {
			names = append(names, tool.Name)
		}
		template := false
		for _, a := range want.GetAgents() {
			wantNames = append(wantNames, a.GetAgentId())
			template = template || a.GetTemplate()
		}
		if !slices.Equal(names, wantNames) || !template {
			t.Fatalf("tools %v, want alice's agents %v (with a template: %v)", names, wantNames, template)
		}
		if slices.Contains(names, "mcp-bobs") {
			t.Fatalf("alice sees bob's agent: %v", names)
		}
		i := slices.Index(names, "mcp-helper")
		if i < 0 {
			t.Fatalf("no mcp-helper tool in %v", names)
		}
		h := listed.Tools[i]
		schema, _ := h.InputSchema.(map[string]any)
		props, _ := schema["properties"].(map[string]any)
		if h.Title != "Helper" || !strings.Contains(h.Description, "Helper (mcp-helper)") || props["message"] == nil || props["thread_id"] == nil {
			t.Fatalf("mcp-helper tool = %+v", h)
		}
	})

	t.Run("a call runs the agent and reports progress", func(t *testing.T) {
		// Meta set directly: SetProgressToken of SDK v1.3.1 drops the token
		// when the params have no Meta yet.
		params := &mcp.CallToolParams{Name: "mcp-helper", Arguments: map[string]any{"message": "take a note"}, Meta: mcp.Meta{"progressToken": "p-helper"}}
		res, err := cs.CallTool(ctx, params)
		if err != nil {
			t.Fatal(err)
		}
		if res.IsError || textOf(res) != "The note is written." {
			t.Fatalf("result = %v %q", res.IsError, textOf(res))
		}
		sc := structuredOf(t, res)
		if sc["status"] != "completed" || sc["thread_id"] == "" || sc["run_id"] == "" {
			t.Fatalf("structured content = %v", sc)
		}
		got := call(t, "GET", env.url+"/agents/mcp-helper/files/raw/workspace/mcp.txt", aliceToken, nil)
		if got.String() != "mcp\n" {
			t.Fatalf("the agent's tool did not run: %d %s", got.code, got)
		}
		notes := progress.of("p-helper")
		if len(notes) < 2 {
			t.Fatalf("%d progress notifications, want several: %+v", len(notes), notes)
		}
		var msgs []string
		for i, n := range notes {
			msgs = append(msgs, n.Message)
			if i > 0 && n.Progress <= notes[i-1].Progress {
				t.Fatalf("progress does not increase: %+v", notes)
			}
		}
		if m := runStarted.FindStringSubmatch(msgs[0]); m == nil || m[1] != sc["run_id"] || m[2] != sc["thread_id"] {
			t.Fatalf("first progress %q does not name run %v on thread %v", msgs[0], sc["run_id"], sc["thread_id"])
		}
		if !slices.ContainsFunc(msgs, func(m string) bool { return strings.Contains(m, "write_file") || strings.Contains(m, "note") }) {
			t.Fatalf("no progress shows text or tool activity: %q", msgs)
		}

		// The thread goes on where the first call left it.
		res, err = cs.CallTool(ctx, &mcp.CallToolParams{Name: "mcp-helper", Arguments: map[string]any{"message": "again", "thread_id": sc["thread_id"]}})
		if err != nil {
			t.Fatal(err)
		}
		if sc2 := structuredOf(t, res); res.IsError || textOf(res) != "Second answer on the same thread." || sc2["thread_id"] != sc["thread_id"] {
			t.Fatalf("second call = %v %q %v", res.IsError, textOf(res), sc2)
		}
	})

	t.Run("errors", func(t *testing.T) {
		for _, tc := range []struct {
			name, tool string
			args       map[string]any
			protocol   string // a JSON-RPC error containing this
			toolErr    string // else a tool error containing this
		}{
			{"unknown tool", "no-such-agent", map[string]any{"message": "hi"}, `unknown tool "no-such-agent"`, ""},
			{"another user's agent", "mcp-bobs", map[string]any{"message": "hi"}, `unknown tool "mcp-bobs"`, ""},
			{"no message", "mcp-helper", map[string]any{}, "", `missing argument "message"`},
			{"unknown argument", "mcp-helper", map[string]any{"message": "hi", "thred": "x"}, "", "bad arguments"},
		} {
			t.Run(tc.name, func(t *testing.T) {
				res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: tc.tool, Arguments: tc.args})
				if tc.protocol != "" {
					if err == nil || !strings.Contains(err.Error(), tc.protocol) {
						t.Fatalf("err = %v, want one with %q (result %+v)", err, tc.protocol, res)
					}
					return
				}
				if err != nil {
					t.Fatal(err)
				}
				if !res.IsError || !strings.Contains(textOf(res), tc.toolErr) {
					t.Fatalf("result = %v %q, want a tool error with %q", res.IsError, textOf(res), tc.toolErr)
				}
			})
		}
	})

	t.Run("a run that needs approval returns", func(t *testing.T) {
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "mcp-asks", Arguments: map[string]any{"message": "write"}})
		if err != nil {
			t.Fatal(err)
		}
		sc := structuredOf(t, res)
		runID, _ := sc["run_id"].(string)
		if !res.IsError || sc["status"] != "waiting_approval" || runID == "" ||
			!strings.Contains(textOf(res), "write_file (call w1)") || !strings.Contains(textOf(res), "/runs/"+runID+"/resume") {
			t.Fatalf("result = %v %q %v", res.IsError, textOf(res), sc)
		}
		// The run still waits, to be decided in Wick.
		run, err := env.agent.GetRun(as(ctx, "alice"), &agentv1.GetRunRequest{RunId: runID})
		if err != nil || run.GetRun().GetStatus() != "waiting_approval" {
			t.Fatalf("run = %v, %v", run, err)
		}
		if _, err := env.agent.CancelRun(as(ctx, "alice"), &agentv1.CancelRunRequest{RunId: runID}); err != nil {
			t.Fatal(err)
		}
	})

	t.Run("a cancelled call cancels its run", func(t *testing.T) {
		cctx, cancel := context.WithCancel(ctx)
		defer cancel()
		params := &mcp.CallToolParams{Name: "mcp-slow", Arguments: map[string]any{"message": "take your time"}, Meta: mcp.Meta{"progressToken": "p-slow"}}
		done := make(chan error, 1)
		go func() {
			_, err := cs.CallTool(cctx, params)
			done <- err
		}()
		var runID string
		for runID == "" {
			select {
			case n := <-progress.started:
				if n.ProgressToken == "p-slow" {
					runID = runStarted.FindStringSubmatch(n.Message)[1]
				}
			case err := <-done:
				t.Fatalf("the call ended before its run started: %v", err)
			case <-time.After(time.Minute):
				t.Fatal("no run started")
			}
		}
		cancel()
		if err := <-done; err == nil {
			t.Fatal("the cancelled call succeeded")
		}
		waitFor(t, "the run to be cancelled", time.Minute, func() (bool, string) {
			run, err := env.agent.GetRun(as(ctx, "alice"), &agentv1.GetRunRequest{RunId: runID})
			return err == nil && run.GetRun().GetStatus() == "cancelled", run.String()
		})
	})

	t.Run("authentication", func(t *testing.T) {
		initialize := `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"x","version":"1"}}}`
		accept := []string{"Accept", "application/json, text/event-stream", "Content-Type", "application/json"}
		if r := call(t, "POST", env.url+"/mcp", "", strings.NewReader(initialize), accept...); r.code != http.StatusUnauthorized {
			t.Fatalf("no token: %d %s", r.code, r)
		}
		list := `{"jsonrpc":"2.0","id":2,"method":"tools/list"}`
		hdr := append(slices.Clone(accept), "Mcp-Session-Id", cs.ID(), "Mcp-Protocol-Version", "2025-06-18")
		if r := call(t, "POST", env.url+"/mcp", bobToken, strings.NewReader(list), hdr...); r.code != http.StatusForbidden {
			t.Fatalf("bob on alice's session: %d %s", r.code, r)
		}
		if r := call(t, "PUT", env.url+"/mcp", aliceToken, strings.NewReader(list), accept...); r.code != http.StatusMethodNotAllowed {
			t.Fatalf("PUT: %d %s", r.code, r)
		}
	})
}
