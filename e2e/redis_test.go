package e2e

import (
	"context"
	"encoding/json"
	"net"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"google.golang.org/protobuf/proto"

	llmv1 "github.com/wick-agent/wick/gen/wick/llm/v1"
	sandboxv1 "github.com/wick-agent/wick/gen/wick/sandbox/v1"
	"github.com/wick-agent/wick/platform/backend"
	"github.com/wick-agent/wick/platform/dial"
	"github.com/wick-agent/wick/platform/server"
	"github.com/wick-agent/wick/platform/testenv"
	"github.com/wick-agent/wick/services/agent"
	"github.com/wick-agent/wick/services/gateway"
	"github.com/wick-agent/wick/wickserver/suite"
)

// TestRedisStores runs a conversation with threads, runs and agents in a
// real Redis, continues the thread, and re-joins runs from their shared log:
// on the same replica, and through a second gateway and a second agent
// replica while the first replica is still running the run.
func TestRedisStores(t *testing.T) {
	addr := testenv.Redis(t)
	env := startWick(t, func(c *suite.Config) { c.RedisAddr = addr })

	resp := openSSE(t, t.Context(), "POST", env.url+"/agents/default/stream", aliceToken, jsonBody(userMessage("hello", nil)))
	run := decodeRun(t, readEvents(t, resp.Body))
	checkDemoRun(t, run)

	r := call(t, "POST", env.url+"/agents/default/invoke", aliceToken, jsonBody(userMessage("more", map[string]any{"thread_id": run.threadID()})))
	var inv struct {
		ThreadID string `json:"thread_id"`
		Content  string `json:"content"`
	}
	if r.code != 200 || json.Unmarshal(r.body, &inv) != nil || inv.ThreadID != run.threadID() || inv.Content != e2eEndText {
		t.Fatalf("continue = %d %s", r.code, r)
	}

	rejoined := openSSE(t, t.Context(), "GET", env.url+"/runs/"+run.runID()+"/events", aliceToken, nil, "Last-Event-ID", run.frames[1].ID)
	rest := readEvents(t, rejoined.Body)
	if len(rest) != len(run.frames)-2 {
		t.Fatalf("re-join after event 1 gave %d events, want %d", len(rest), len(run.frames)-2)
	}
	for i, f := range rest {
		if f != run.frames[i+2] {
			t.Fatalf("re-joined event %d = %+v, want %+v", i, f, run.frames[i+2])
		}
	}
	if r := call(t, "GET", env.url+"/threads/"+run.threadID(), bobToken, nil); r.code != 404 {
		t.Fatalf("bob reads alice's thread in Redis: %d", r.code)
	}

	t.Run("re-join through another gateway and agent replica", func(t *testing.T) {
		other := startReplica(t, env, addr)
		ctx, cancel := context.WithCancel(t.Context())
		resp := openSSE(t, ctx, "POST", env.url+"/agents/default/stream", aliceToken, jsonBody(userMessage("hello", map[string]any{"background": true})))
		seen := readUntil(t, resp.Body, "on_tool_start")
		cancel()
		runID := decodeRun(t, seen).runID()
		rest := openSSE(t, t.Context(), "GET", other+"/runs/"+runID+"/events", aliceToken, nil, "Last-Event-ID", seen[len(seen)-1].ID)
		got := decodeRun(t, append(seen, readEvents(t, rest.Body)...))
		checkDemoRun(t, got)
		want := joinRun(t, env, "alice", runID, "")
		if len(want) != len(got.events) {
			t.Fatalf("re-joined stream has %d events, the run log %d", len(got.events), len(want))
		}
		for i := range want {
			if !proto.Equal(got.events[i], want[i]) {
				t.Fatalf("event %d: got %v, want %v", i, got.events[i], want[i])
			}
		}
	})
}

// startReplica starts a second agent service on the same Redis, using the
// suite's LLM gateway and sandbox, and a second REST gateway in front of
// it; it returns the second gateway's URL.
func startReplica(t *testing.T, env *wickEnv, redisAddr string) string {
	t.Helper()
	key := env.suite.Key
	llmConn, err := dial.New(env.suite.Addrs["llmgw"], dial.WithIdentity(key))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { llmConn.Close() })
	sbConn, err := dial.New(env.suite.Addrs["sandbox"], dial.WithIdentity(key))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { sbConn.Close() })
	rdb := redis.NewUniversalClient(&redis.UniversalOptions{Addrs: []string{redisAddr}})
	t.Cleanup(func() { rdb.Close() })
	svc, err := agent.New(agent.Deps{
		LLM:     llmv1.NewLLMServiceClient(llmConn),
		Sandbox: sandboxv1.NewSandboxServiceClient(sbConn),
		Stores:  agent.RedisStores(rdb, agent.RedisOptions{}),
		Logger:  quietLogger(),
	}, agent.WithDefaultModel(e2eModel), agent.WithDefaultBackend(backend.Local))
	if err != nil {
		t.Fatal(err)
	}
	srv := server.New("agent-2", quietLogger(), server.WithIdentity(key), server.WithDrainDelay(0), server.WithShutdownTimeout(5*time.Second))
	svc.Register(srv.GRPC())
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	served := make(chan struct{})
	go func() {
		defer close(served)
		_ = srv.Serve(ctx, lis)
	}()
	t.Cleanup(func() {
		cancel()
		<-served
		_ = svc.Close()
	})
	agentConn, err := dial.New(lis.Addr().String(), dial.WithIdentity(key), dial.WithDialOption(testenv.EventData()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { agentConn.Close() })
	gw, err := gateway.New(gateway.Config{Tokens: map[string]string{aliceToken: "alice", bobToken: "bob"}}, agentConn, gateway.WithLogger(quietLogger()))
	if err != nil {
		t.Fatal(err)
	}
	hs := httptest.NewServer(gw)
	t.Cleanup(hs.Close)
	return hs.URL
}
