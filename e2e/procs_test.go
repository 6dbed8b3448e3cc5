package e2e

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"sync"
	"testing"

	agentv1 "github.com/wick-agent/wick/gen/wick/agent/v1"
	"github.com/wick-agent/wick/platform/dial"
	"github.com/wick-agent/wick/platform/identity"
	"github.com/wick-agent/wick/platform/testenv"
	"github.com/wick-agent/wick/services/sandbox"
)

// The service binaries the process suite runs, built once per test binary.
var (
	serviceBinOnce sync.Once
	serviceBinDir  string
	serviceBinErr  error
)

// TestMain removes the service binaries, which are large, after the tests.
func TestMain(m *testing.M) {
	if os.Getenv(benchChildEnv) != "" {
		// The server process of BenchmarkSuiteSSEStreams.
		os.Exit(serveBenchChild())
	}
	code := m.Run()
	if serviceBinDir != "" {
		os.RemoveAll(serviceBinDir)
	}
	os.Exit(code)
}

// serviceBinaries builds wick-agent, wick-sandbox, wick-llmgw and
// wick-gateway and returns
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
			"./services/agent/cmd/wick-agent", "./services/sandbox/cmd/wick-sandbox", "./services/llmgw/cmd/wick-llmgw",
			"./services/gateway/cmd/wick-gateway")
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

// procSuite is the suite as separate processes: redis-server with
// persistence, wick-llmgw, wick-sandbox and wick-agent, each on a loopback
// port chosen once, so a restarted process is where the others expect it.
// Tests talk to the agent service over gRPC, as the gateway does.
type procSuite struct {
	redis, llmgw, sandbox, agent *testenv.Proc
	// gateway runs when procConfig.gateway is set; gatewayURL is its HTTP base.
	gateway    *testenv.Proc
	gatewayURL string
	key        *identity.Key
	// client calls the agent service; as(ctx, user) picks the user.
	client agentv1.AgentServiceClient
	// agentAddr and redisAddr are where the agent service and Redis listen.
	agentAddr, redisAddr string
	// agentArgs are the flags of a wick-agent serving on grpcAddr beside
	// the first, on the same Redis, gateway and sandbox service (a replica).
	agentArgs func(grpcAddr string) []string
}

// procConfig is what a test changes in the process suite.
type procConfig struct {
	// sandboxArgs are added to wick-sandbox's flags (backend, images, binaries).
	sandboxArgs []string
	// agentArgs are added to wick-agent's flags.
	agentArgs []string
	// commonArgs are added to every Wick binary's flags, after the defaults.
	commonArgs []string
	// env is added to the test's environment for every Wick binary.
	env []string
	// gateway also starts wick-gateway in front of the agent service, with
	// alice's and bob's tokens.
	gateway bool
}

// replica starts another wick-agent beside the first, on the same Redis,
// LLM gateway and sandbox service, and returns a client of it.
func (s *procSuite) replica(t *testing.T) agentv1.AgentServiceClient {
	t.Helper()
	addr := "127.0.0.1:" + strconv.Itoa(testenv.FreePort(t))
	testenv.NewProc(t, "wick-agent-b", filepath.Join(serviceBinaries(t), "wick-agent"), s.agentArgs(addr), testenv.GRPCServing(addr)).Start()
	conn, err := dial.New(addr, dial.WithIdentity(s.key), dial.WithDialOption(testenv.EventData()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	return agentv1.NewAgentServiceClient(conn)
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
	addr := func() string { return "127.0.0.1:" + strconv.Itoa(testenv.FreePort(t)) }
	redisPort := strconv.Itoa(testenv.FreePort(t))
	redisAddr, llmAddr, sandboxAddr, agentAddr := "127.0.0.1:"+redisPort, addr(), addr(), addr()
	common := func(grpcAddr string) []string {
		return append([]string{"-grpc-addr", grpcAddr, "-identity-key", key.String(), "-log-format", "text",
			"-drain-delay", "0s", "-shutdown-timeout", "1s"}, cfg.commonArgs...)
	}
	var opts []testenv.ProcOption
	if cfg.env != nil {
		opts = append(opts, testenv.WithEnv(append(os.Environ(), cfg.env...)))
	}
	stateDir, err := os.MkdirTemp("", "wkf") // short: sandbox sockets live here
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = sandbox.RemoveStateDir(stateDir) })

	s := &procSuite{key: key, agentAddr: agentAddr, redisAddr: redisAddr}
	s.redis = testenv.NewProc(t, "redis-server", redisBin, []string{
		"--port", redisPort, "--bind", "127.0.0.1", "--dir", t.TempDir(), "--daemonize", "no",
		"--save", "", "--appendonly", "yes", "--appendfsync", "always", "--loglevel", "warning",
	}, testenv.RedisServing(redisAddr, ""))
	s.llmgw = testenv.NewProc(t, "wick-llmgw", filepath.Join(bins, "wick-llmgw"),
		append(common(llmAddr), "-script-dir", writeScripts(t), "-http-addr", ""), testenv.GRPCServing(llmAddr), opts...)
	s.sandbox = testenv.NewProc(t, "wick-sandbox", filepath.Join(bins, "wick-sandbox"),
		append(append(common(sandboxAddr), "-state-dir", stateDir), cfg.sandboxArgs...), testenv.GRPCServing(sandboxAddr), opts...)
	s.agentArgs = func(grpcAddr string) []string {
		return append(append(common(grpcAddr), "-llm-addr", llmAddr, "-sandbox-addr", sandboxAddr, "-redis-addr", redisAddr,
			"-default-model", e2eModel), cfg.agentArgs...)
	}
	s.agent = testenv.NewProc(t, "wick-agent", filepath.Join(bins, "wick-agent"), s.agentArgs(agentAddr), testenv.GRPCServing(agentAddr), opts...)
	procs := []*testenv.Proc{s.redis, s.llmgw, s.sandbox, s.agent}
	if cfg.gateway {
		httpAddr := "127.0.0.1:" + strconv.Itoa(testenv.FreePort(t))
		s.gatewayURL = "http://" + httpAddr
		s.gateway = testenv.NewProc(t, "wick-gateway", filepath.Join(bins, "wick-gateway"),
			append(common(addr()), "-http-addr", httpAddr, "-agent-addr", agentAddr,
				"-tokens", aliceToken+":alice,"+bobToken+":bob"), testenv.HTTPServing(s.gatewayURL+"/health"), opts...)
		procs = append(procs, s.gateway)
	}
	for _, p := range procs {
		p.Start()
	}
	conn, err := dial.New(agentAddr, dial.WithIdentity(key), dial.WithDialOption(testenv.EventData()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	s.client = agentv1.NewAgentServiceClient(conn)
	return s
}
