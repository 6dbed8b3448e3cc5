package llmgw_test

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	acp "github.com/coder/acp-go-sdk"

	"github.com/wick-agent/wick/platform/testenv"
	"github.com/wick-agent/wick/services/llmgw"
)

// codexScript is what the scripted model answers Codex: a text turn, then a
// turn that runs a command with Codex's own shell tool, then the answer to
// the command's output.
const codexScript = `[
	{"text":"Hello from the scripted model."},
	{"tool_calls":[{"id":"call_shell","name":"exec_command","arguments":{"cmd":"echo wick-$((6*7))"}}]},
	{"text":"The command printed its answer."}
]`

// codexBinary is the pinned codex-acp (deploy/acp-agents), or a skip (a
// failure in CI) when it is not installed.
func codexBinary(t *testing.T) string {
	t.Helper()
	if runtime.GOOS != "linux" || runtime.GOARCH != "amd64" {
		testenv.Missing(t, "codex-acp is installed for linux/amd64 only, this is %s/%s", runtime.GOOS, runtime.GOARCH)
	}
	bin := filepath.Join(testenv.RepoRoot(t), "deploy", "acp-agents", "node_modules", "@zed-industries", "codex-acp-linux-x64", "bin", "codex-acp")
	if _, err := os.Stat(bin); err != nil {
		testenv.Missing(t, "the codex-acp binary is not installed (cd deploy/acp-agents && npm ci --omit=dev): %v", err)
	}
	return bin
}

// modelRequests records the requests that reached the gateway.
type modelRequests struct {
	mu    sync.Mutex
	paths []string
	last  []byte
}

func (m *modelRequests) wrap(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		m.mu.Lock()
		m.paths = append(m.paths, r.Method+" "+r.URL.Path)
		m.last = body
		m.mu.Unlock()
		r.Body = io.NopCloser(bytes.NewReader(body))
		h.ServeHTTP(w, r)
	})
}

func (m *modelRequests) snapshot() ([]string, string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return append([]string(nil), m.paths...), string(m.last)
}

// codexClient is the ACP client side: it keeps the agent's message chunks
// and tool calls, and allows once what the agent asks permission for (with
// approval_policy "never" it asks nothing).
type codexClient struct {
	mu    sync.Mutex
	text  strings.Builder
	tools []string
}

func (c *codexClient) turn() (string, []string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	text, tools := c.text.String(), c.tools
	c.text.Reset()
	c.tools = nil
	return text, tools
}

func (c *codexClient) SessionUpdate(_ context.Context, n acp.SessionNotification) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	u := n.Update
	switch {
	case u.AgentMessageChunk != nil && u.AgentMessageChunk.Content.Text != nil:
		c.text.WriteString(u.AgentMessageChunk.Content.Text.Text)
	case u.ToolCall != nil:
		c.tools = append(c.tools, string(u.ToolCall.Kind)+": "+u.ToolCall.Title)
	}
	return nil
}

func (c *codexClient) RequestPermission(_ context.Context, p acp.RequestPermissionRequest) (acp.RequestPermissionResponse, error) {
	for _, o := range p.Options {
		if o.Kind == acp.PermissionOptionKindAllowOnce {
			return acp.RequestPermissionResponse{Outcome: acp.NewRequestPermissionOutcomeSelected(o.OptionId)}, nil
		}
	}
	return acp.RequestPermissionResponse{Outcome: acp.NewRequestPermissionOutcomeCancelled()}, nil
}

// The client offers no file system or terminal (its capabilities say so), so
// Codex reads, writes and runs commands itself.
func (*codexClient) ReadTextFile(context.Context, acp.ReadTextFileRequest) (acp.ReadTextFileResponse, error) {
	return acp.ReadTextFileResponse{}, acp.NewMethodNotFound("fs/read_text_file")
}

func (*codexClient) WriteTextFile(context.Context, acp.WriteTextFileRequest) (acp.WriteTextFileResponse, error) {
	return acp.WriteTextFileResponse{}, acp.NewMethodNotFound("fs/write_text_file")
}

func (*codexClient) CreateTerminal(context.Context, acp.CreateTerminalRequest) (acp.CreateTerminalResponse, error) {
	return acp.CreateTerminalResponse{}, acp.NewMethodNotFound("terminal/create")
}

func (*codexClient) KillTerminal(context.Context, acp.KillTerminalRequest) (acp.KillTerminalResponse, error) {
	return acp.KillTerminalResponse{}, acp.NewMethodNotFound("terminal/kill")
}

func (*codexClient) TerminalOutput(context.Context, acp.TerminalOutputRequest) (acp.TerminalOutputResponse, error) {
	return acp.TerminalOutputResponse{}, acp.NewMethodNotFound("terminal/output")
}

func (*codexClient) ReleaseTerminal(context.Context, acp.ReleaseTerminalRequest) (acp.ReleaseTerminalResponse, error) {
	return acp.ReleaseTerminalResponse{}, acp.NewMethodNotFound("terminal/release")
}

func (*codexClient) WaitForTerminalExit(context.Context, acp.WaitForTerminalExitRequest) (acp.WaitForTerminalExitResponse, error) {
	return acp.WaitForTerminalExitResponse{}, acp.NewMethodNotFound("terminal/wait_for_exit")
}

// TestCodexThroughTheGateway runs the real codex-acp (the pinned npm
// package) with its model provider pointed at the gateway's /v1/responses,
// served by a scripted model, and drives it over ACP: a text turn, then a
// turn in which Codex runs a shell command and the command's output reaches
// the model's next request.
func TestCodexThroughTheGateway(t *testing.T) {
	t.Parallel()
	bin := codexBinary(t)
	const token = "wick-sandbox-token"
	svc := service(t, config(llmgw.ModelConfig{ID: "wick-script", Provider: "script", Model: codexScript}), nil)
	var seen modelRequests
	srv := httptest.NewServer(seen.wrap(svc.HTTPHandlerWithToken(token)))
	t.Cleanup(srv.Close)

	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	t.Cleanup(cancel)
	home, work := t.TempDir(), t.TempDir()
	cmd := exec.CommandContext(ctx, bin,
		"-c", `model_provider="wick"`,
		"-c", `model_providers.wick={name="wick", base_url="`+srv.URL+`/v1", env_key="OPENAI_API_KEY", wire_api="responses"}`,
		"-c", `model="wick-script"`,
		// Codex's own sandbox runs commands under bubblewrap, which needs
		// user namespaces a container does not give; in Wick the sandbox
		// around the agent is what confines it.
		"-c", `sandbox_mode="danger-full-access"`,
		"-c", `approval_policy="never"`,
	)
	cmd.Env = []string{"CODEX_HOME=" + home, "HOME=" + home, "OPENAI_API_KEY=" + token, "PATH=" + os.Getenv("PATH")}
	cmd.Dir = work
	var stderr testenv.LogBuffer
	cmd.Stderr = &stderr
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = stdin.Close()
		cancel()
		_ = cmd.Wait()
		if t.Failed() {
			t.Logf("codex-acp stderr:\n%s", stderr.String())
		}
	})
	client := &codexClient{}
	conn := acp.NewClientSideConnection(client, stdin, stdout)
	if _, err := conn.Initialize(ctx, acp.InitializeRequest{ProtocolVersion: acp.ProtocolVersionNumber}); err != nil {
		t.Fatalf("initialize: %v", err)
	}
	sess, err := conn.NewSession(ctx, acp.NewSessionRequest{Cwd: work, McpServers: []acp.McpServer{}})
	if err != nil {
		t.Fatalf("session/new: %v", err)
	}
	prompt := func(text string) (string, []string) {
		t.Helper()
		resp, err := conn.Prompt(ctx, acp.PromptRequest{SessionId: sess.SessionId, Prompt: []acp.ContentBlock{acp.TextBlock(text)}})
		if err != nil {
			t.Fatalf("session/prompt %q: %v", text, err)
		}
		if resp.StopReason != acp.StopReasonEndTurn {
			t.Fatalf("session/prompt %q stopped: %s", text, resp.StopReason)
		}
		return client.turn()
	}

	if text, _ := prompt("say hello"); !strings.Contains(text, "Hello from the scripted model.") {
		t.Fatalf("first turn's message: %q", text)
	}
	paths, _ := seen.snapshot()
	if len(paths) == 0 {
		t.Fatal("no request reached the gateway")
	}
	for _, p := range paths {
		if p != "POST /v1/responses" {
			t.Errorf("Codex requested %s; every model call should be POST /v1/responses (all: %v)", p, paths)
		}
	}

	text, tools := prompt("run the command")
	if !strings.Contains(text, "The command printed its answer.") || !slices.Equal(tools, []string{"execute: echo wick-$((6*7))"}) {
		t.Fatalf("second turn: message %q, tool calls %v", text, tools)
	}
	// Codex ran the command itself (the client offers no terminal), and its
	// output, which only a shell computes, reached the model's next request
	// as the call's function_call_output.
	_, last := seen.snapshot()
	if !strings.Contains(last, `"type":"function_call_output"`) || !strings.Contains(last, `"call_id":"call_shell"`) || !strings.Contains(last, "wick-42") {
		t.Errorf("the model's last request has no output of the command:\n%s", last)
	}
}
