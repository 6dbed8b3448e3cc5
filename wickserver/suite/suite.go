// Package suite starts the whole of Wick in one process: the LLM gateway,
// the sandbox service, the agent service and the REST gateway, each as its
// real gRPC server on its own loopback port. The gateway calls the agent
// service, and the agent service the LLM gateway, over in-process gRPC
// channels that go through the same interceptors as the ports (identity,
// logging, recovery, OpenTelemetry) without encoding or sockets
// (Config.Loopback keeps every hop on the ports, as a deployment with one
// process per service has it). The all-in-one `wick` command and the
// end-to-end tests use it.
package suite

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"time"

	"github.com/docker/docker/client"
	"github.com/prometheus/client_golang/prometheus"
	"google.golang.org/grpc"

	llmv1 "github.com/wick-agent/wick/gen/wick/llm/v1"
	sandboxv1 "github.com/wick-agent/wick/gen/wick/sandbox/v1"
	"github.com/wick-agent/wick/platform/backend"
	"github.com/wick-agent/wick/platform/dial"
	"github.com/wick-agent/wick/platform/identity"
	"github.com/wick-agent/wick/platform/server"
	"github.com/wick-agent/wick/platform/tlsconf"
	"github.com/wick-agent/wick/services/agent"
	"github.com/wick-agent/wick/services/gateway"
	"github.com/wick-agent/wick/services/llmgw"
	"github.com/wick-agent/wick/services/sandbox"
	"github.com/wick-agent/wick/services/sandbox/sandboximage"
)

// Models chosen from the environment when none is configured.
const (
	OpenAIModel    = "gpt-4o-mini"
	AnthropicModel = "claude-sonnet-4-20250514"
	DemoModel      = llmgw.DefaultModel
)

// Defaults of the suite.
const (
	DefaultHTTPAddr        = "127.0.0.1:8000"
	DefaultShutdownTimeout = 10 * time.Second
	// dockerProbeTimeout bounds the check for a Docker engine at start-up.
	dockerProbeTimeout = 3 * time.Second
	// imageBuildTimeout bounds building the busybox sandbox image at start-up.
	imageBuildTimeout = time.Minute
)

// Config configures the suite. The zero value runs on loopback with random
// gRPC ports, in-memory stores, a local sandbox unless Docker answers, and
// the model the environment's keys allow.
type Config struct {
	// HTTPAddr is the REST gateway's listen address.
	HTTPAddr string
	// GatewayAddr, AgentAddr, SandboxAddr and LLMAddr are the gRPC listen
	// addresses; empty picks a free loopback port. GatewayAddr serves the
	// public gRPC API (AgentService with bearer tokens, Gateway.GRPC).
	GatewayAddr, AgentAddr, SandboxAddr, LLMAddr string
	// RedisAddr puts threads, runs and agents in Redis; empty keeps them in memory.
	RedisAddr string
	// Model is the default agent's model; empty chooses from the environment.
	Model string
	// Backend is backend.Auto (Docker when an engine answers and the daemon
	// binaries are found, else local), backend.Docker or backend.Local.
	Backend string
	// Sandbox configures the sandbox service (state dir, binaries, image…).
	Sandbox sandbox.Config
	// LLM configures the LLM gateway; zero means llmgw.DefaultConfig().
	LLM *llmgw.Config
	// AgentOptions are passed to agent.New.
	AgentOptions []agent.Option
	// Gateway configures the REST gateway.
	Gateway gateway.Config
	// Key signs identities between the services; nil makes a random one.
	Key *identity.Key
	// TLS, when set, is the certificate the services present to each other
	// (mutual TLS with a CA file). Over loopback inside one process it only
	// matters when another process calls their gRPC ports; the gateway's
	// public gRPC API keeps its own Gateway.GRPC certificate.
	TLS tlsconf.Files
	// Logger logs; nil uses slog.Default().
	Logger *slog.Logger
	// LookupEnv reads the environment (API keys); nil is os.LookupEnv.
	LookupEnv func(string) (string, bool)
	// ShutdownTimeout bounds each service's graceful stop.
	ShutdownTimeout time.Duration
	// GatewayOptions are passed to gateway.New.
	GatewayOptions []gateway.Option
	// Metrics is the registry of every service's Prometheus metrics,
	// served at the gateway's /metrics; nil makes one.
	Metrics *prometheus.Registry
	// Loopback has the gateway reach the agent service, and the agent
	// service the LLM gateway, over their loopback gRPC ports instead of
	// in process; the sandbox service is always reached on its port, where
	// the gRPC server's message limits bound file and process traffic.
	Loopback bool
}

// Suite is the running suite.
type Suite struct {
	// HTTPURL is the REST gateway's base URL.
	HTTPURL string
	// Addrs are the gRPC addresses by service: gateway (the public gRPC
	// API), agent, sandbox, llmgw.
	Addrs map[string]string
	// Model is the default agent's model.
	Model string
	// Backend is the sandbox backend of the default agent: docker or local.
	Backend string
	// Anonymous is true when no tokens are configured: every request acts
	// as the single user gateway.LocalUser.
	Anonymous bool
	// Key is the identity key the services share.
	Key *identity.Key

	stopped chan struct{}
}

// ChooseModel returns the model the environment's keys allow.
func ChooseModel(lookup func(string) (string, bool)) string {
	if v, ok := lookup("OPENAI_API_KEY"); ok && v != "" {
		return OpenAIModel
	}
	if v, ok := lookup("ANTHROPIC_API_KEY"); ok && v != "" {
		return AnthropicModel
	}
	return DemoModel
}

// layer is one group of servers stopped together, in reverse start order.
type layer struct {
	cancel context.CancelFunc
	wait   func()
	after  func()
}

// Start starts every service and returns once all listen. The suite stops
// when ctx ends: the gateway first, then the agent service, then the LLM
// gateway and the sandbox service; Wait reports the end.
func Start(ctx context.Context, cfg Config) (s *Suite, err error) {
	log := cfg.Logger
	if log == nil {
		log = slog.Default()
	}
	lookup := cfg.LookupEnv
	if lookup == nil {
		lookup = os.LookupEnv
	}
	if cfg.ShutdownTimeout <= 0 {
		cfg.ShutdownTimeout = DefaultShutdownTimeout
	}
	if cfg.HTTPAddr == "" {
		cfg.HTTPAddr = DefaultHTTPAddr
	}
	if cfg.Metrics == nil {
		cfg.Metrics = prometheus.NewRegistry()
	}
	key := cfg.Key
	if key == nil {
		key = identity.RandomKey()
	}
	var src *tlsconf.Source
	if cfg.TLS.Enabled() {
		if src, err = tlsconf.Load(cfg.TLS, tlsconf.WithLogger(log)); err != nil {
			return nil, err
		}
	}
	s = &Suite{Addrs: map[string]string{}, Key: key, stopped: make(chan struct{})}
	s.Model = cfg.Model
	if s.Model == "" {
		s.Model = ChooseModel(lookup)
	}

	var layers []layer
	var closers []func()
	defer func() {
		if err != nil {
			stopLayers(layers)
			for _, c := range closers {
				c()
			}
		}
	}()
	// serve starts one service's gRPC server; extra, if set, adds server
	// options that depend on the address bound (the gateway's edge), and
	// replaces the services' TLS with the edge's own.
	// inproc opens an in-process channel to a service started by serve.
	inproc := map[string]func() grpc.ClientConnInterface{}
	serve := func(name, addr string, register func(grpc.ServiceRegistrar), extra ...func(net.Addr) ([]server.Option, error)) (layer, error) {
		if addr == "" {
			addr = "127.0.0.1:0"
		}
		lis, err := net.Listen("tcp", addr)
		if err != nil {
			return layer{}, fmt.Errorf("%s: listen %s: %w", name, addr, err)
		}
		opts := []server.Option{server.WithIdentity(key), server.WithDrainDelay(0), server.WithShutdownTimeout(cfg.ShutdownTimeout)}
		if len(extra) == 0 {
			opts = append(opts, server.WithTLS(src))
		}
		for _, x := range extra {
			more, err := x(lis.Addr())
			if err != nil {
				lis.Close()
				return layer{}, fmt.Errorf("%s: %w", name, err)
			}
			opts = append(opts, more...)
		}
		srv := server.New(name, log, opts...)
		register(srv.GRPC())
		inproc[name] = func() grpc.ClientConnInterface {
			ch := srv.InProcess()
			register(ch)
			return ch
		}
		s.Addrs[name] = lis.Addr().String()
		sctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
		done := make(chan struct{})
		go func() {
			defer close(done)
			if err := srv.Serve(sctx, lis); err != nil {
				log.Error("server stopped", "service", name, "error", err)
			}
		}()
		return layer{cancel: cancel, wait: func() { <-done }}, nil
	}
	conn := func(name string) (*grpc.ClientConn, error) {
		c, err := dial.New(s.Addrs[name], dial.WithIdentity(key), dial.WithTLS(src))
		if err != nil {
			return nil, err
		}
		closers = append(closers, func() { c.Close() })
		return c, nil
	}
	// client is how one service calls another: in process, or over conn.
	client := func(name string, conn *grpc.ClientConn) grpc.ClientConnInterface {
		if cfg.Loopback {
			return conn
		}
		return dial.InProcess(inproc[name](), dial.WithIdentity(key))
	}

	// LLM gateway.
	llmCfg := llmgw.DefaultConfig()
	if cfg.LLM != nil {
		llmCfg = *cfg.LLM
	}
	llmSvc, err := llmgw.New(llmCfg, llmgw.WithLogger(log.With("service", "llmgw")), llmgw.WithLookupEnv(lookup))
	if err != nil {
		return nil, fmt.Errorf("llmgw: %w", err)
	}
	l, err := serve("llmgw", cfg.LLMAddr, llmSvc.Register)
	if err != nil {
		return nil, err
	}
	layers = append(layers, l)

	// Sandbox service.
	sbCfg := cfg.Sandbox
	if sbCfg.DefaultImage == "" {
		sbCfg.DefaultImage = backend.DefaultImage
	}
	s.Backend = chooseBackend(ctx, cfg.Backend, &sbCfg, log)
	sbCfg.DefaultType = s.Backend
	// A request for Docker when no engine answers is served locally rather
	// than failed, as the single-process default promises to just work.
	sbCfg.LocalFallback = sbCfg.LocalFallback || s.Backend == backend.Local
	// With tokens or a verifier several users share the sandboxes: local ones
	// then need -allow-local and a kernel with Landlock.
	sbCfg.MultiUser = sbCfg.MultiUser || len(cfg.Gateway.Tokens) > 0 || cfg.Gateway.VerifierURL != ""
	if sbCfg.StateDir == "" {
		dir, err := os.MkdirTemp("", "wick-sandbox-")
		if err != nil {
			return nil, err
		}
		sbCfg.StateDir = dir
		// The id generated into it dies with it: nothing can adopt these
		// sandboxes later, so they go at Close.
		sbCfg.Ephemeral = sbCfg.Ephemeral || sbCfg.ManagerID == ""
		closers = append(closers, func() { _ = sandbox.RemoveStateDir(dir) })
	}
	sbSvc, err := sandbox.New(sbCfg, sandbox.WithLogger(log.With("service", "sandbox")), sandbox.WithMetrics(cfg.Metrics))
	if err != nil {
		return nil, fmt.Errorf("sandbox: %w", err)
	}
	l, err = serve("sandbox", cfg.SandboxAddr, sbSvc.Register)
	if err != nil {
		cctx, cancel := context.WithTimeout(context.Background(), cfg.ShutdownTimeout)
		defer cancel()
		_ = sbSvc.Close(cctx)
		return nil, err
	}
	l.after = func() {
		cctx, cancel := context.WithTimeout(context.Background(), cfg.ShutdownTimeout)
		defer cancel()
		if err := sbSvc.Close(cctx); err != nil {
			log.Warn("sandbox close", "error", err)
		}
	}
	layers = append(layers, l)

	// Agent service.
	llmConn, err := conn("llmgw")
	if err != nil {
		return nil, err
	}
	sbConn, err := conn("sandbox")
	if err != nil {
		return nil, err
	}
	stores := agent.MemoryStores()
	if cfg.RedisAddr != "" {
		replica := agent.ReplicaName()
		rdb, err := agent.OpenRedis(ctx, cfg.RedisAddr, "wick@"+replica)
		if err != nil {
			return nil, err
		}
		closers = append(closers, func() { rdb.Close() })
		stores = agent.RedisStores(rdb, agent.RedisOptions{Replica: replica})
	}
	agentOpts := append([]agent.Option{
		agent.WithDefaultModel(s.Model),
		agent.WithDefaultBackend(s.Backend),
		agent.WithDefaultImage(sbCfg.DefaultImage),
		agent.WithMetrics(cfg.Metrics),
	}, cfg.AgentOptions...)
	agentSvc, err := agent.New(agent.Deps{
		LLM:     llmv1.NewLLMServiceClient(client("llmgw", llmConn)),
		Sandbox: sandboxv1.NewSandboxServiceClient(sbConn),
		Stores:  stores,
		Logger:  log.With("service", "agent"),
	}, agentOpts...)
	if err != nil {
		return nil, fmt.Errorf("agent: %w", err)
	}
	l, err = serve("agent", cfg.AgentAddr, agentSvc.Register)
	if err != nil {
		_ = agentSvc.Close()
		return nil, err
	}
	l.after = func() {
		if err := agentSvc.Close(); err != nil {
			log.Warn("agent close", "error", err)
		}
	}
	layers = append(layers, l)

	// REST gateway, with its own gRPC health server.
	agentConn, err := conn("agent")
	if err != nil {
		return nil, err
	}
	gwOpts := append([]gateway.Option{
		gateway.WithLogger(log.With("service", "gateway")),
		gateway.WithLLMHandler(llmSvc.HTTPHandler()),
		gateway.WithHealthCheck("agent", agentConn),
		gateway.WithHealthCheck("sandbox", sbConn),
		gateway.WithHealthCheck("llmgw", llmConn),
		gateway.WithRegistry(cfg.Metrics),
		gateway.WithAgentClient(client("agent", agentConn)),
	}, cfg.GatewayOptions...)
	gw, err := gateway.New(cfg.Gateway, agentConn, gwOpts...)
	if err != nil {
		return nil, fmt.Errorf("gateway: %w", err)
	}
	s.Anonymous = gw.Anonymous()
	// The gateway's gRPC server serves the agent service to external
	// clients (the edge) besides its health.
	var edge *gateway.Edge
	l, err = serve("gateway", cfg.GatewayAddr, func(g grpc.ServiceRegistrar) { edge.Register(g) }, func(addr net.Addr) ([]server.Option, error) {
		var err error
		if edge, err = gw.GRPCEdge(addr); err != nil {
			return nil, err
		}
		var opts []server.Option
		for _, o := range edge.ServerOptions() {
			opts = append(opts, server.WithGRPCOption(o))
		}
		return opts, nil
	})
	if err != nil {
		return nil, err
	}
	lis, err := net.Listen("tcp", cfg.HTTPAddr)
	if err != nil {
		l.cancel()
		l.wait()
		return nil, fmt.Errorf("gateway: listen %s: %w", cfg.HTTPAddr, err)
	}
	s.HTTPURL = "http://" + lis.Addr().String()
	hctx, hcancel := context.WithCancel(context.WithoutCancel(ctx))
	hdone := make(chan struct{})
	go func() {
		defer close(hdone)
		if err := gateway.Serve(hctx, lis, gw, log.With("service", "gateway"), cfg.ShutdownTimeout); err != nil && !errors.Is(err, http.ErrServerClosed) {
			log.Error("HTTP server stopped", "error", err)
		}
	}()
	gwLayer := l
	layers = append(layers, layer{
		cancel: func() { hcancel(); gwLayer.cancel() },
		wait:   func() { <-hdone; gwLayer.wait() },
	})

	go func() {
		<-ctx.Done()
		stopLayers(layers)
		for _, c := range closers {
			c()
		}
		close(s.stopped)
	}()
	return s, nil
}

func stopLayers(layers []layer) {
	for i := len(layers) - 1; i >= 0; i-- {
		l := layers[i]
		l.cancel()
		l.wait()
		if l.after != nil {
			l.after()
		}
	}
}

// Wait blocks until the suite has stopped after its context ended; failures
// while stopping are logged, not returned.
func (s *Suite) Wait() error {
	<-s.stopped
	return nil
}

// chooseBackend settles "auto": Docker when an engine answers, the daemon
// binaries are found (flags, WICK_DAEMON_BIN/WICK_WICKFS_BIN, or next to
// this executable) and the image is present (so that start-up never waits
// for a pull), else local.
func chooseBackend(ctx context.Context, want string, cfg *sandbox.Config, log *slog.Logger) string {
	if want == backend.Local {
		return want
	}
	findBinaries(cfg)
	if want == backend.Docker {
		return want
	}
	if cfg.DaemonBin == "" || cfg.WickfsBin == "" {
		log.Info("sandbox: wick-daemon or wickfs binary not found; using the local backend")
		return backend.Local
	}
	cli, err := client.NewClientWithOpts(client.FromEnv, client.WithAPIVersionNegotiation())
	if err != nil {
		return backend.Local
	}
	defer cli.Close()
	pctx, cancel := context.WithTimeout(ctx, dockerProbeTimeout)
	defer cancel()
	if _, err := cli.Ping(pctx); err != nil {
		log.Info("sandbox: no Docker engine answers; using the local backend", "error", err)
		return backend.Local
	}
	if _, err := cli.ImageInspect(pctx, cfg.DefaultImage); err != nil {
		if cfg.DefaultImage != backend.DefaultImage {
			log.Info("sandbox: image not present; using the local backend (pull it, or pass -sandbox docker)", "image", cfg.DefaultImage)
			return backend.Local
		}
		// No registry may be reachable: build the small busybox image from
		// the machine's static busybox rather than give up on containers.
		bctx, cancel := context.WithTimeout(ctx, imageBuildTimeout)
		defer cancel()
		img, err := sandboximage.Build(bctx, cli, map[string]string{"wick.image": "busybox"})
		if err != nil {
			log.Info("sandbox: image not present and the busybox image could not be built; using the local backend", "image", cfg.DefaultImage, "error", err)
			return backend.Local
		}
		log.Info("sandbox: default image not present; using the busybox image built from this machine's static busybox", "missing", cfg.DefaultImage, "image", img)
		cfg.DefaultImage = img
	}
	return backend.Docker
}

func findBinaries(cfg *sandbox.Config) {
	if cfg.DaemonBin == "" {
		cfg.DaemonBin = os.Getenv("WICK_DAEMON_BIN")
	}
	if cfg.WickfsBin == "" {
		cfg.WickfsBin = os.Getenv("WICK_WICKFS_BIN")
	}
	exe, err := os.Executable()
	if err != nil {
		return
	}
	dir := filepath.Dir(exe)
	for _, b := range []struct {
		p    *string
		name string
	}{{&cfg.DaemonBin, "wick-daemon"}, {&cfg.WickfsBin, "wickfs"}} {
		if *b.p != "" {
			continue
		}
		if st, err := os.Stat(filepath.Join(dir, b.name)); err == nil && st.Mode().IsRegular() {
			*b.p = filepath.Join(dir, b.name)
		}
	}
}
