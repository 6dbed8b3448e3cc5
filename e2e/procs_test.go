package e2e

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"

	agentv1 "github.com/wick-agent/wick/gen/wick/agent/v1"
	"github.com/wick-agent/wick/platform/dial"
	"github.com/wick-agent/wick/platform/identity"
	"github.com/wick-agent/wick/platform/testenv"
)

// The service binaries the process suite runs, built once per test binary.
var (
	serviceBinOnce sync.Once
	serviceBinDir  string
	serviceBinErr  error
)

// TestMain removes the service binaries, which are large, after the tests.
func TestMain(m *testing.M) {
	code := m.Run()
	if serviceBinDir != "" {
		os.RemoveAll(serviceBinDir)
	}
	os.Exit(code)
}

// serviceBinaries builds wick-agent, wick-sandbox and wick-llmgw and returns
// the directory that holds them.
func serviceBinaries(t *testing.T) string {
	t.Helper()
	root := testenv.RepoRoot(t)
	serviceBinOnce.Do(func() {
		serviceBinDir, serviceBinErr = os.MkdirTemp("", "wick-e2e-svc-")
		if serviceBinErr != nil {
			return
		}
		build := exec.Command("go", "build", "-o", serviceBinDir+string(os.PathSeparator),
			"./services/agent/cmd/wick-agent", "./services/sandbox/cmd/wick-sandbox", "./services/llmgw/cmd/wick-llmgw")
		build.Dir = root
		if out, err := build.CombinedOutput(); err != nil {
			serviceBinErr = fmt.Errorf("go build: %v\n%s", err, out)
		}
	})
	if serviceBinErr != nil {
		t.Fatal(serviceBinErr)
	}
	return serviceBinDir
}

// proc is one process of the suite, which a test can kill with SIGKILL and
// start again with the same arguments, so on the same address.
type proc struct {
	t    *testing.T
	name string
	bin  string
	args []string
	// ready waits until the process serves, failing the test if it exits first.
	ready func(t *testing.T, exited <-chan error)

	out *lockedBuffer // stdout and stderr of every start, shown when the test fails
	cmd *exec.Cmd
	// done is closed when the running process has exited; its error goes
	// to the ready check's channel, which may or may not read it.
	done chan struct{}
}

// lockedBuffer collects a process's output, written from its own goroutines.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// newProc describes a process; start runs it. The process is killed when
// the test ends, and its output is logged if the test failed.
func newProc(t *testing.T, name, bin string, args []string, ready func(*testing.T, <-chan error)) *proc {
	p := &proc{t: t, name: name, bin: bin, args: args, ready: ready, out: &lockedBuffer{}}
	t.Cleanup(func() {
		if p.cmd != nil {
			p.kill()
		}
		if t.Failed() {
			t.Logf("output of %s:\n%s", name, p.out)
		}
	})
	return p
}

// start runs the process and returns once it serves.
func (p *proc) start() {
	p.t.Helper()
	if p.cmd != nil {
		p.t.Fatalf("%s is already running", p.name)
	}
	cmd := exec.Command(p.bin, p.args...)
	cmd.Stdout, cmd.Stderr = p.out, p.out
	// A test binary that dies (a timeout's panic) takes its processes along.
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		p.t.Fatalf("start %s: %v", p.name, err)
	}
	exited, done := make(chan error, 1), make(chan struct{})
	go func() {
		exited <- cmd.Wait()
		close(done)
	}()
	p.cmd, p.done = cmd, done
	p.ready(p.t, exited)
}

// kill ends the process with SIGKILL, as a crash or an OOM kill would: it
// gets no chance to finish its work or close its connections.
func (p *proc) kill() {
	p.t.Helper()
	if p.cmd == nil {
		p.t.Fatalf("%s is not running", p.name)
	}
	_ = p.cmd.Process.Signal(syscall.SIGKILL)
	<-p.done
	p.cmd = nil
}

// grpcReady waits for grpc.health.v1 SERVING on addr.
func grpcReady(addr string) func(*testing.T, <-chan error) {
	return func(t *testing.T, exited <-chan error) {
		t.Helper()
		conn, err := grpc.NewClient(addr, grpc.WithTransportCredentials(insecure.NewCredentials()))
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close()
		waitServing(t, conn, exited)
	}
}

// redisReady waits for redis-server to answer PING with its data loaded
// (it answers LOADING errors until then).
func redisReady(addr string) func(*testing.T, <-chan error) {
	return func(t *testing.T, exited <-chan error) {
		t.Helper()
		rdb := redis.NewClient(&redis.Options{Addr: addr, MaxRetries: -1})
		defer rdb.Close()
		deadline := time.Now().Add(testenv.StartTimeout)
		for {
			ctx, cancel := context.WithTimeout(context.Background(), time.Second)
			err := rdb.Ping(ctx).Err()
			cancel()
			if err == nil {
				return
			}
			select {
			case err := <-exited:
				t.Fatalf("redis-server exited before serving: %v", err)
			default:
			}
			if time.Now().After(deadline) {
				t.Fatalf("redis-server on %s: no PONG within %s: %v", addr, testenv.StartTimeout, err)
			}
			time.Sleep(20 * time.Millisecond) // polling a port: there is no event to wait on
		}
	}
}

// procSuite is the suite as separate processes: redis-server with
// persistence, wick-llmgw, wick-sandbox and wick-agent, each on a loopback
// port chosen once, so a restarted process is where the others expect it.
// Tests talk to the agent service over gRPC, as the gateway does.
type procSuite struct {
	redis, llmgw, sandbox, agent *proc
	key                          *identity.Key
	// client calls the agent service; as(ctx, user) picks the user.
	client agentv1.AgentServiceClient
}

// procConfig is what a test changes in the process suite.
type procConfig struct {
	// sandboxArgs are added to wick-sandbox's flags (backend, images, binaries).
	sandboxArgs []string
	// agentArgs are added to wick-agent's flags.
	agentArgs []string
}

// startProcs starts the process suite: redis-server (append-only file,
// fsync on every write, so a SIGKILL loses nothing it acknowledged), then
// wick-llmgw, wick-sandbox and wick-agent.
func startProcs(t *testing.T, cfg procConfig) *procSuite {
	t.Helper()
	redisBin, err := exec.LookPath("redis-server")
	if err != nil {
		testenv.Missing(t, "redis-server not found in PATH")
	}
	bins := serviceBinaries(t)
	key := identity.RandomKey()
	addr := func() string { return "127.0.0.1:" + strconv.Itoa(freePort(t)) }
	redisPort := strconv.Itoa(freePort(t))
	redisAddr, llmAddr, sandboxAddr, agentAddr := "127.0.0.1:"+redisPort, addr(), addr(), addr()
	common := func(grpcAddr string) []string {
		return []string{"-grpc-addr", grpcAddr, "-identity-key", key.String(), "-log-format", "text",
			"-drain-delay", "0s", "-shutdown-timeout", "1s"}
	}
	stateDir, err := os.MkdirTemp("", "wkf") // short: sandbox sockets live here
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(stateDir) })

	s := &procSuite{key: key}
	s.redis = newProc(t, "redis-server", redisBin, []string{
		"--port", redisPort, "--bind", "127.0.0.1", "--dir", t.TempDir(), "--daemonize", "no",
		"--save", "", "--appendonly", "yes", "--appendfsync", "always", "--loglevel", "warning",
	}, redisReady(redisAddr))
	s.llmgw = newProc(t, "wick-llmgw", filepath.Join(bins, "wick-llmgw"),
		append(common(llmAddr), "-script-dir", writeScripts(t), "-http-addr", ""), grpcReady(llmAddr))
	s.sandbox = newProc(t, "wick-sandbox", filepath.Join(bins, "wick-sandbox"),
		append(append(common(sandboxAddr), "-state-dir", stateDir), cfg.sandboxArgs...), grpcReady(sandboxAddr))
	s.agent = newProc(t, "wick-agent", filepath.Join(bins, "wick-agent"),
		append(append(common(agentAddr), "-llm-addr", llmAddr, "-sandbox-addr", sandboxAddr, "-redis-addr", redisAddr,
			"-default-model", e2eModel), cfg.agentArgs...), grpcReady(agentAddr))
	for _, p := range []*proc{s.redis, s.llmgw, s.sandbox, s.agent} {
		p.start()
	}
	conn, err := dial.New(agentAddr, dial.WithIdentity(key))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	s.client = agentv1.NewAgentServiceClient(conn)
	return s
}
