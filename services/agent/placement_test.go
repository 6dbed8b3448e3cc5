package agent_test

import (
	"context"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	agentv1 "github.com/wick-agent/wick/gen/wick/agent/v1"
	llmv1 "github.com/wick-agent/wick/gen/wick/llm/v1"
	sandboxv1 "github.com/wick-agent/wick/gen/wick/sandbox/v1"
	"github.com/wick-agent/wick/platform/dial"
	"github.com/wick-agent/wick/services/agent"
	"github.com/wick-agent/wick/services/agent/internal/placement"
)

// engineSvc is one sandbox service of several, each with its own state,
// that a test can stop and start again on its address; its sandboxes
// survive, as containers and volumes survive a crashed wick-sandbox.
type engineSvc struct {
	s    *suite
	fake *fakeSandbox
	addr string
	mu   sync.Mutex
	g    *grpc.Server
}

func (s *suite) engine() *engineSvc {
	e := &engineSvc{s: s, fake: newFakeSandbox(s.t), addr: "127.0.0.1:0"}
	e.start()
	s.t.Cleanup(e.stop)
	return e
}

func (e *engineSvc) start() {
	e.s.t.Helper()
	lis, err := net.Listen("tcp", e.addr)
	if err != nil {
		e.s.t.Fatal(err)
	}
	e.addr = lis.Addr().String()
	g := grpc.NewServer(grpc.ChainUnaryInterceptor(e.s.key.UnaryServerInterceptor()), grpc.ChainStreamInterceptor(e.s.key.StreamServerInterceptor()))
	sandboxv1.RegisterSandboxServiceServer(g, e.fake)
	go g.Serve(lis)
	e.mu.Lock()
	e.g = g
	e.mu.Unlock()
}

func (e *engineSvc) stop() {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.g != nil {
		e.g.Stop()
		e.g = nil
	}
}

// placed returns a placement client over target, closed with the test.
func (s *suite) placed(target string) *placement.Client {
	s.t.Helper()
	d := func(t string, opts ...dial.Option) (*grpc.ClientConn, error) {
		return dial.New(t, append([]dial.Option{dial.WithIdentity(s.key)}, opts...)...)
	}
	c, err := placement.New(target, d, placement.WithReconnectMax(200*time.Millisecond))
	if err != nil {
		s.t.Fatal(err)
	}
	s.t.Cleanup(func() { c.Close() })
	return c
}

// TestPlacement runs the files API of many users through the agent service
// over three sandbox services: each user's workspace is on the service
// rendezvous hashing names, a restarted agent finds it there again, and a
// stopped service fails only its own users, Unavailable, until it returns.
func TestPlacement(t *testing.T) {
	s := newSuite(t, func(int, *llmv1.StreamRequest) reply { return text("ok") })
	engines := []*engineSvc{s.engine(), s.engine(), s.engine()}
	byAddr := map[string]*engineSvc{}
	var addrs []string
	for _, e := range engines {
		byAddr[e.addr] = e
		addrs = append(addrs, e.addr)
	}
	s.sbClient = s.placed(strings.Join(addrs, ","))
	r := s.agent(agent.MemoryStores(), nil)

	users := make([]string, 12)
	for i := range users {
		users[i] = fmt.Sprintf("user-%d", i)
	}
	holder := map[string]*engineSvc{}
	for _, u := range users {
		ctx := withTimeout(t, as(u), 20*time.Second)
		if _, err := r.client.WriteFile(ctx, &agentv1.WriteFileRequest{AgentId: "default", Path: "/workspace/who.txt", Content: u}); err != nil {
			t.Fatalf("%s: write: %v", u, err)
		}
		// The file is on exactly one engine, the one placement names.
		var on []*engineSvc
		for _, e := range engines {
			if _, err := os.Stat(filepath.Join(e.fake.dir, u, "default", "who.txt")); err == nil {
				on = append(on, e)
			}
		}
		want := byAddr[s.sbClient.(*placement.Client).Endpoint(u, "default")]
		if len(on) != 1 || on[0] != want {
			t.Fatalf("%s: workspace on %d engines, want only %s", u, len(on), want.addr)
		}
		holder[u] = want
	}
	used := map[*engineSvc]bool{}
	for _, e := range holder {
		used[e] = true
	}
	if len(used) < 2 {
		t.Fatalf("12 users landed on %d sandbox service(s), want several", len(used))
	}

	// A restarted agent, given the endpoints in another order, finds every
	// workspace where it was.
	r.stop()
	s.sbClient = s.placed(addrs[2] + "," + addrs[0] + "," + addrs[1])
	r = s.agent(agent.MemoryStores(), nil)
	read := func(u string) (string, error) {
		resp, err := r.client.ReadFile(withTimeout(t, as(u), 20*time.Second), &agentv1.ReadFileRequest{AgentId: "default", Path: "/workspace/who.txt"})
		return resp.GetContent(), err
	}
	for _, u := range users {
		if got, err := read(u); err != nil || !strings.Contains(got, u) {
			t.Fatalf("%s after an agent restart: %q, %v", u, got, err)
		}
	}

	dead := holder[users[0]]
	dead.stop()
	for _, u := range users {
		got, err := read(u)
		if holder[u] != dead {
			if err != nil || !strings.Contains(got, u) {
				t.Fatalf("%s, on a live sandbox service: %q, %v", u, got, err)
			}
			continue
		}
		if code(err) != codes.Unavailable || !strings.Contains(err.Error(), "sandbox service "+dead.addr) {
			t.Fatalf("%s, on the stopped sandbox service: %q, %v; want Unavailable naming %s", u, got, err, dead.addr)
		}
	}

	dead.start()
	ctx := withTimeout(t, context.Background(), 20*time.Second)
	for {
		got, err := read(users[0])
		if err == nil && strings.Contains(got, users[0]) {
			break
		}
		if ctx.Err() != nil {
			t.Fatalf("%s not served after its sandbox service returned: %q, %v", users[0], got, status.Convert(err).Message())
		}
		time.Sleep(50 * time.Millisecond) // reconnection backoff: no event to wait on
	}
}
