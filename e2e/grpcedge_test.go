package e2e

import (
	"bytes"
	"context"
	"crypto/rand"
	"errors"
	"io"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/structpb"

	agentv1 "github.com/wick-agent/wick/gen/wick/agent/v1"
	"github.com/wick-agent/wick/platform/identity"
	"github.com/wick-agent/wick/platform/testenv"
)

// slowModel streams 400 words 50 ms apart: a run that is still going when
// a test cancels it.
const slowModel = "script:slow"

func init() {
	words := strings.TrimSpace(strings.Repeat("slow ", 400))
	scripts["slow"] = `{"delay":"50ms","turns":[{"text":"` + words + `"}],"end_text":"` + words + `"}`
}

// edgeClient is an external gRPC client of the suite's gateway.
func edgeClient(t *testing.T, env *wickEnv) agentv1.AgentServiceClient {
	t.Helper()
	// Events read as the harness reads them from the agent service: with
	// data filled, so the two can be compared field for field.
	conn, err := grpc.NewClient(env.suite.Addrs["gateway"], grpc.WithTransportCredentials(insecure.NewCredentials()), testenv.EventData())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	return agentv1.NewAgentServiceClient(conn)
}

// withToken returns ctx with the bearer token and any extra metadata pairs.
func withToken(ctx context.Context, token string, kv ...string) context.Context {
	if token != "" {
		kv = append([]string{"authorization", "Bearer " + token}, kv...)
	}
	return metadata.AppendToOutgoingContext(ctx, kv...)
}

func wantCode(t *testing.T, what string, err error, want codes.Code) {
	t.Helper()
	if got := status.Code(err); got != want {
		t.Fatalf("%s: code %v (%v), want %v", what, got, err, want)
	}
}

// recvAll reads a server stream of events to its end.
func recvAll[T interface{ GetEvent() *agentv1.StreamEvent }](t *testing.T, recv func() (T, error)) []*agentv1.StreamEvent {
	t.Helper()
	var out []*agentv1.StreamEvent
	for {
		m, err := recv()
		if errors.Is(err, io.EOF) {
			return out
		}
		if err != nil {
			t.Fatalf("after %d events: %v", len(out), err)
		}
		out = append(out, m.GetEvent())
	}
}

func TestGRPCEdge(t *testing.T) {
	env := startWick(t)
	c := edgeClient(t, env)

	t.Run("unauthenticated calls", func(t *testing.T) {
		for _, tc := range []struct {
			name string
			ctx  context.Context
		}{
			{"no token", t.Context()},
			{"wrong token", withToken(t.Context(), "not-a-token")},
			{"forged identity", metadata.AppendToOutgoingContext(t.Context(), identity.UserKey, "alice")},
			{"forged identity with a token", withToken(t.Context(), bobToken, identity.UserKey, "alice")},
		} {
			_, err := c.ListAgents(tc.ctx, &agentv1.ListAgentsRequest{})
			wantCode(t, tc.name+": ListAgents", err, codes.Unauthenticated)
			st, err := c.JoinRun(tc.ctx, &agentv1.JoinRunRequest{RunId: "run_x"})
			if err == nil {
				_, err = st.Recv()
			}
			wantCode(t, tc.name+": JoinRun", err, codes.Unauthenticated)
		}
	})

	t.Run("a stream is the agent service's, event for event", func(t *testing.T) {
		st, err := c.Stream(withToken(t.Context(), aliceToken), &agentv1.StreamRequest{AgentId: "default", Messages: []*agentv1.Message{{Role: "user", Content: "hello"}}})
		if err != nil {
			t.Fatal(err)
		}
		got := recvAll(t, st.Recv)
		checkDemoRun(t, runEvents{events: got})
		want := joinRun(t, env, "alice", got[0].GetRunId(), "")
		if len(got) != len(want) {
			t.Fatalf("%d events through the edge, %d in the run's log", len(got), len(want))
		}
		for i := range want {
			if !proto.Equal(got[i], want[i]) {
				t.Fatalf("event %d: %v, want %v", i, got[i], want[i])
			}
		}
	})

	t.Run("users see only their own", func(t *testing.T) {
		alice, bob := withToken(t.Context(), aliceToken), withToken(t.Context(), bobToken)
		model, _ := structpb.NewValue(e2eModel)
		if _, err := c.CreateAgent(alice, &agentv1.CreateAgentRequest{Agent: &agentv1.Agent{AgentId: "alice-grpc", Model: model, Backend: &agentv1.BackendConfig{Type: "local"}}}); err != nil {
			t.Fatal(err)
		}
		inv, err := c.Invoke(alice, &agentv1.InvokeRequest{AgentId: "alice-grpc", Messages: []*agentv1.Message{{Role: "user", Content: "hello"}}})
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(inv.GetContent(), e2eAnswer) {
			t.Fatalf("answer %q", inv.GetContent())
		}
		agents, err := c.ListAgents(bob, &agentv1.ListAgentsRequest{})
		if err != nil {
			t.Fatal(err)
		}
		for _, a := range agents.GetAgents() {
			if a.GetAgentId() == "alice-grpc" {
				t.Fatal("bob lists alice's agent")
			}
		}
		calls := map[string]func() error{
			"GetAgent": func() error { _, err := c.GetAgent(bob, &agentv1.GetAgentRequest{AgentId: "alice-grpc"}); return err },
			"DeleteAgent": func() error {
				_, err := c.DeleteAgent(bob, &agentv1.DeleteAgentRequest{AgentId: "alice-grpc"})
				return err
			},
			"GetThread": func() error {
				_, err := c.GetThread(bob, &agentv1.GetThreadRequest{ThreadId: inv.GetThreadId()})
				return err
			},
			"DeleteThread": func() error {
				_, err := c.DeleteThread(bob, &agentv1.DeleteThreadRequest{ThreadId: inv.GetThreadId()})
				return err
			},
			"GetRun":    func() error { _, err := c.GetRun(bob, &agentv1.GetRunRequest{RunId: inv.GetRunId()}); return err },
			"CancelRun": func() error { _, err := c.CancelRun(bob, &agentv1.CancelRunRequest{RunId: inv.GetRunId()}); return err },
			"ReadFile": func() error {
				_, err := c.ReadFile(bob, &agentv1.ReadFileRequest{AgentId: "alice-grpc", Path: "/workspace/notes.txt"})
				return err
			},
			"JoinRun": func() error {
				st, err := c.JoinRun(bob, &agentv1.JoinRunRequest{RunId: inv.GetRunId()})
				if err == nil {
					_, err = st.Recv()
				}
				return err
			},
			"DownloadFile": func() error {
				st, err := c.DownloadFile(bob, &agentv1.DownloadFileRequest{AgentId: "alice-grpc", Path: "/workspace/notes.txt"})
				if err == nil {
					_, err = st.Recv()
				}
				return err
			},
		}
		for name, call := range calls {
			wantCode(t, "bob's "+name, call(), codes.NotFound)
		}
		// Alice still has all of it.
		if _, err := c.GetThread(alice, &agentv1.GetThreadRequest{ThreadId: inv.GetThreadId()}); err != nil {
			t.Fatal(err)
		}
	})

	t.Run("the client's cancellation reaches the run", func(t *testing.T) {
		model, _ := structpb.NewValue(slowModel)
		alice := withToken(t.Context(), aliceToken)
		if _, err := c.CreateAgent(alice, &agentv1.CreateAgentRequest{Agent: &agentv1.Agent{AgentId: "slow", Model: model}}); err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithCancel(alice)
		st, err := c.Stream(ctx, &agentv1.StreamRequest{AgentId: "slow", Messages: []*agentv1.Message{{Role: "user", Content: "go"}}})
		if err != nil {
			t.Fatal(err)
		}
		var runID string
		for {
			m, err := st.Recv()
			if err != nil {
				t.Fatal(err)
			}
			runID = m.GetEvent().GetRunId()
			if m.GetEvent().GetEvent() == "on_chat_model_stream" {
				break
			}
		}
		cancel()
		waitFor(t, "the run to be cancelled", 30*time.Second, func() (bool, string) {
			r, err := env.agent.GetRun(as(t.Context(), "alice"), &agentv1.GetRunRequest{RunId: runID})
			if err != nil {
				return false, err.Error()
			}
			return r.GetRun().GetStatus() == "cancelled", r.GetRun().GetStatus()
		})
	})

	t.Run("upload and download", func(t *testing.T) {
		ctx := withToken(t.Context(), aliceToken)
		data := make([]byte, 3<<20)
		if _, err := rand.Read(data); err != nil {
			t.Fatal(err)
		}
		up, err := c.UploadFile(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if err := up.Send(&agentv1.UploadFileRequest{Msg: &agentv1.UploadFileRequest_Header{Header: &agentv1.UploadFileHeader{AgentId: "default", Path: "/workspace/grpc.bin"}}}); err != nil {
			t.Fatal(err)
		}
		for rest := data; len(rest) > 0; {
			n := min(len(rest), 256<<10)
			if err := up.Send(&agentv1.UploadFileRequest{Msg: &agentv1.UploadFileRequest_Data{Data: rest[:n]}}); err != nil {
				t.Fatal(err)
			}
			rest = rest[n:]
		}
		res, err := up.CloseAndRecv()
		if err != nil {
			t.Fatal(err)
		}
		if res.GetBytesWritten() != int64(len(data)) {
			t.Fatalf("wrote %d bytes, want %d", res.GetBytesWritten(), len(data))
		}
		down, err := c.DownloadFile(ctx, &agentv1.DownloadFileRequest{AgentId: "default", Path: "/workspace/grpc.bin"})
		if err != nil {
			t.Fatal(err)
		}
		var got bytes.Buffer
		for {
			m, err := down.Recv()
			if errors.Is(err, io.EOF) {
				break
			}
			if err != nil {
				t.Fatal(err)
			}
			got.Write(m.GetData())
		}
		if !bytes.Equal(got.Bytes(), data) {
			t.Fatalf("downloaded %d bytes that differ from the %d uploaded", got.Len(), len(data))
		}
	})

	t.Run("terminal", func(t *testing.T) {
		ctx, cancel := context.WithTimeout(withToken(t.Context(), aliceToken), time.Minute)
		defer cancel()
		term, err := c.Terminal(ctx)
		if err != nil {
			t.Fatal(err)
		}
		send := func(m *agentv1.TerminalRequest) {
			t.Helper()
			if err := term.Send(m); err != nil {
				t.Fatal(err)
			}
		}
		send(&agentv1.TerminalRequest{Msg: &agentv1.TerminalRequest_Start{Start: &agentv1.TerminalStart{AgentId: "default", Size: &agentv1.TerminalSize{Rows: 30, Cols: 100}}}})
		send(&agentv1.TerminalRequest{Msg: &agentv1.TerminalRequest_Input{Input: []byte("echo grpc-$((40+2))\n")}})
		var out bytes.Buffer
		for !strings.Contains(out.String(), "grpc-42") {
			m, err := term.Recv()
			if err != nil {
				t.Fatalf("read: %v (output so far %q)", err, out.String())
			}
			out.Write(m.GetOutput())
		}
		send(&agentv1.TerminalRequest{Msg: &agentv1.TerminalRequest_Input{Input: []byte("exit 7\n")}})
		for {
			m, err := term.Recv()
			if err != nil {
				t.Fatalf("no exit code: %v", err)
			}
			if ec, ok := m.GetMsg().(*agentv1.TerminalResponse_ExitCode); ok {
				if ec.ExitCode != 7 {
					t.Fatalf("exit code %d, want 7", ec.ExitCode)
				}
				break
			}
		}
	})
}

// TestGatewayBinaryRefusesPlaintextOnTheNetwork checks the wiring of
// wick-gateway: a gRPC API on every interface without TLS does not start.
func TestGatewayBinaryRefusesPlaintextOnTheNetwork(t *testing.T) {
	root := testenv.RepoRoot(t)
	bin := filepath.Join(t.TempDir(), "wick-gateway")
	build := exec.Command("go", "build", "-o", bin, "./services/gateway/cmd/wick-gateway")
	build.Dir = root
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	// The process exits before serving anything on the port it bound.
	out, err := exec.Command(bin, "-grpc-addr", "0.0.0.0:0", "-http-addr", "127.0.0.1:0", "-tokens", "t:alice").CombinedOutput()
	if err == nil {
		t.Fatalf("wick-gateway started in plaintext on every interface:\n%s", out)
	}
	if !strings.Contains(string(out), "-grpc-allow-plaintext") {
		t.Fatalf("the error does not say what to do:\n%s", out)
	}
}
