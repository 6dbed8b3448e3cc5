package e2e

import (
	"context"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	agentv1 "github.com/wick-agent/wick/gen/wick/agent/v1"
	"github.com/wick-agent/wick/platform/dial"
	"github.com/wick-agent/wick/platform/identity"
	"github.com/wick-agent/wick/platform/testenv"
	"github.com/wick-agent/wick/services/sandbox"
)

// TestSandboxPlacement runs three wick-sandbox processes, each with its own
// state directory and manager id (three engines; here local sandboxes on
// one host), behind one wick-agent with -sandbox-placement rendezvous:
// each user's workspace is on one of them, a restarted agent finds it
// there, and a SIGKILLed sandbox service fails only its own users,
// Unavailable, until it is started again.
func TestSandboxPlacement(t *testing.T) {
	bins := serviceBinaries(t)
	key := identity.RandomKey()
	common := func(grpcAddr string) []string {
		return []string{"-grpc-addr", grpcAddr, "-identity-key", key.String(), "-log-format", "text",
			"-drain-delay", "0s", "-shutdown-timeout", "1s"}
	}
	addr := func() string { return "127.0.0.1:" + strconv.Itoa(testenv.FreePort(t)) }

	type engine struct {
		proc     *testenv.Proc
		addr     string
		stateDir string
	}
	var engines []*engine
	var addrs []string
	for i := range 3 {
		dir, err := os.MkdirTemp("", "wkp") // short: sandbox sockets live here
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = sandbox.RemoveStateDir(dir) })
		e := &engine{addr: addr(), stateDir: dir}
		args := append(common(e.addr), "-state-dir", dir, "-manager-id", fmt.Sprintf("wick-e2e-place-%d", i))
		e.proc = testenv.NewProc(t, fmt.Sprintf("wick-sandbox-%d", i), filepath.Join(bins, "wick-sandbox"), append(args, localSandboxArgs...), testenv.GRPCServing(e.addr))
		e.proc.Start()
		engines = append(engines, e)
		addrs = append(addrs, e.addr)
	}
	agentAddr := addr()
	newAgent := func(sandboxAddr string) *testenv.Proc {
		p := testenv.NewProc(t, "wick-agent", filepath.Join(bins, "wick-agent"), append(common(agentAddr),
			"-llm-addr", addr(), "-sandbox-addr", sandboxAddr, "-sandbox-placement", "rendezvous", "-default-model", e2eModel), testenv.GRPCServing(agentAddr))
		p.Start()
		return p
	}
	ag := newAgent(strings.Join(addrs, ","))
	conn, err := dial.New(agentAddr, dial.WithIdentity(key), dial.WithDialOption(testenv.EventData()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	client := agentv1.NewAgentServiceClient(conn)

	call := func(user string) context.Context {
		ctx, cancel := context.WithTimeout(as(t.Context(), user), time.Minute)
		t.Cleanup(cancel)
		return ctx
	}
	// holder finds the engine whose state directory holds the user's file.
	holder := func(user string) *engine {
		t.Helper()
		var on []*engine
		for _, e := range engines {
			_ = filepath.WalkDir(e.stateDir, func(p string, d fs.DirEntry, err error) error {
				if err == nil && d.Name() == "who-"+user+".txt" {
					on = append(on, e)
				}
				return nil
			})
		}
		if len(on) != 1 {
			t.Fatalf("%s's workspace is in %d state directories, want 1", user, len(on))
		}
		return on[0]
	}
	users := make([]string, 9)
	held := map[string]*engine{}
	used := map[*engine]bool{}
	for i := range users {
		users[i] = fmt.Sprintf("placed-%d", i)
		u := users[i]
		if _, err := client.WriteFile(call(u), &agentv1.WriteFileRequest{AgentId: "default", Path: "/workspace/who-" + u + ".txt", Content: u}); err != nil {
			t.Fatalf("%s: write: %v", u, err)
		}
		held[u] = holder(u)
		used[held[u]] = true
	}
	if len(used) < 2 {
		t.Fatalf("9 users landed on %d sandbox service(s), want several", len(used))
	}
	read := func(u string) (string, error) {
		resp, err := client.ReadFile(call(u), &agentv1.ReadFileRequest{AgentId: "default", Path: "/workspace/who-" + u + ".txt"})
		return resp.GetContent(), err
	}

	// A restarted agent, given the list in another order, finds every file.
	ag.Kill()
	newAgent(addrs[1] + "," + addrs[2] + "," + addrs[0])
	for _, u := range users {
		if got, err := read(u); err != nil || !strings.Contains(got, u) {
			t.Fatalf("%s after an agent restart: %q, %v", u, got, err)
		}
	}

	dead := held[users[0]]
	dead.proc.Kill()
	for _, u := range users {
		got, err := read(u)
		if held[u] != dead {
			if err != nil || !strings.Contains(got, u) {
				t.Fatalf("%s, on a live sandbox service: %q, %v", u, got, err)
			}
			continue
		}
		if status.Code(err) != codes.Unavailable || !strings.Contains(err.Error(), "sandbox service "+dead.addr) {
			t.Fatalf("%s, on the killed sandbox service: %q, %v; want Unavailable naming %s", u, got, err, dead.addr)
		}
	}

	dead.proc.Start()
	deadline := time.Now().Add(time.Minute)
	for {
		got, err := read(users[0])
		if err == nil && strings.Contains(got, users[0]) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s not served after its sandbox service returned: %q, %v", users[0], got, err)
		}
		time.Sleep(100 * time.Millisecond) // reconnection backoff: no event to wait on
	}
}
