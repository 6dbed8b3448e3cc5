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
	"go.opentelemetry.io/otel/metric"
	"google.golang.org/grpc"

	llmv1 "github.com/wick-agent/wick/gen/wick/llm/v1"
	sandboxv1 "github.com/wick-agent/wick/gen/wick/sandbox/v1"
	"github.com/wick-agent/wick/platform/backend"
	"github.com/wick-agent/wick/platform/dial"
	"github.com/wick-agent/wick/platform/identity"
	"github.com/wick-agent/wick/platform/redisconn"
	"github.com/wick-agent/wick/platform/server"
	"github.com/wick-agent/wick/platform/telemetry"
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
	// RedisOptions tune the Redis stores (leases, TTLs, retention); zero
	// values keep their defaults. Replica and MeterProvider are the suite's.
	RedisOptions agent.RedisOptions
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
	// Metrics is the registry of every service's Prometheus metrics, where
	// MeterProvider's instruments are exported too; nil makes one. The
	// caller serves it (cmd/wick's -metrics-addr); the gateway's public
	// listener serves it only with Gateway.PublicMetrics.
	Metrics *prometheus.Registry
	// MeterProvider receives every service's OpenTelemetry instruments; nil
	// makes one for the suite that exports them to Metrics (and over OTLP
	// when OTEL_EXPORTER_OTLP_ENDPOINT is set), shut down with the suite. A
	// program that installs its own provider passes it here, with the
	// registry its exporter writes to.
	MeterProvider metric.MeterProvider
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
func Start(ctx context.Context, cfg Config) (_ *Suite, err error) {
	b, err := newStarter(ctx, cfg)
	if err != nil {
		return nil, err
	}
	defer func() {
		if err != nil {
			b.stop()
		}
	}()
	stores, err := b.openStores()
	if err != nil {
		return nil, err
	}
	// The LLM gateway records the usage of external agents' calls where the
	// agent service records its own, so GET /usage shows both.
	llmSvc, err := b.startLLM(llmgw.WithUsageRecorder(stores.Usage))
	if err != nil {
		return nil, err
	}
	// The sandbox's model endpoint signs its user into each call.
	sbImage, err := b.startSandbox(llmSvc.HTTPHandler(llmgw.WithHTTPIdentity(b.key), llmgw.WithHTTPUserRequired()))
	if err != nil {
		return nil, err
	}
	llmConn, err := b.conn("llmgw")
	if err != nil {
		return nil, err
	}
	sbConn, err := b.conn("sandbox")
	if err != nil {
		return nil, err
	}
	if err := b.startAgent(stores, llmConn, sbConn, sbImage); err != nil {
		return nil, err
	}
	if err := b.startGateway(llmSvc, llmConn, sbConn); err != nil {
		return nil, err
	}
	go func() {
		<-ctx.Done()
		b.stop()
		close(b.s.stopped)
	}()
	return b.s, nil
}

// starter is the state Start shares between its steps: the configuration
// with its defaults, the suite it fills in, and what stops it.
type starter struct {
	ctx    context.Context
	cfg    Config
	log    *slog.Logger
	lookup func(string) (string, bool)
	key    *identity.Key
	src    *tlsconf.Source
	s      *Suite
	// layers are the servers started, stopped in reverse; closers run
	// after them (connections, Redis, a temporary state directory).
	layers  []layer
	closers []func()
	// inproc opens an in-process channel to a service started by serve.
	inproc map[string]func() grpc.ClientConnInterface
}

// newStarter fills in cfg's defaults and the suite's identity key, TLS and
// model.
func newStarter(ctx context.Context, cfg Config) (*starter, error) {
	b := &starter{ctx: ctx, log: cfg.Logger, lookup: cfg.LookupEnv, key: cfg.Key, inproc: map[string]func() grpc.ClientConnInterface{}}
	if b.log == nil {
		b.log = slog.Default()
	}
	if b.lookup == nil {
		b.lookup = os.LookupEnv
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
	b.cfg = cfg
	if b.key == nil {
		b.key = identity.RandomKey()
	}
	if cfg.TLS.Enabled() {
		var err error
		if b.src, err = tlsconf.Load(cfg.TLS, tlsconf.WithLogger(b.log)); err != nil {
			return nil, err
		}
	}
	b.s = &Suite{Addrs: map[string]string{}, Key: b.key, stopped: make(chan struct{}), Model: cfg.Model}
	if b.s.Model == "" {
		b.s.Model = ChooseModel(b.lookup)
	}
	if cfg.MeterProvider == nil {
		// Not installed as the global provider: a process may host several
		// suites (tests do), each with its own registry.
		mp, err := telemetry.NewMeterProvider(ctx, "wick", cfg.Metrics)
		if err != nil {
			return nil, err
		}
		b.cfg.MeterProvider = mp
		// The first closer, after every service stopped: pushes the last
		// OTLP figures.
		b.closers = append(b.closers, func() { _ = mp.Shutdown(context.Background()) })
	}
	return b, nil
}

// stop stops the servers started, in reverse, then runs the closers.
func (b *starter) stop() {
	stopLayers(b.layers)
	for _, c := range b.closers {
		c()
	}
}

// serve starts one service's gRPC server; extra, if set, adds server
// options that depend on the address bound (the gateway's edge), and
// replaces the services' TLS with the edge's own.
func (b *starter) serve(name, addr string, register func(grpc.ServiceRegistrar), extra ...func(net.Addr) ([]server.Option, error)) (layer, error) {
	if addr == "" {
		addr = "127.0.0.1:0"
	}
	lis, err := net.Listen("tcp", addr)
	if err != nil {
		return layer{}, fmt.Errorf("%s: listen %s: %w", name, addr, err)
	}
	opts := []server.Option{server.WithIdentity(b.key), server.WithDrainDelay(0), server.WithShutdownTimeout(b.cfg.ShutdownTimeout)}
	if len(extra) == 0 {
		opts = append(opts, server.WithTLS(b.src))
	}
	for _, x := range extra {
		more, err := x(lis.Addr())
		if err != nil {
			lis.Close()
			return layer{}, fmt.Errorf("%s: %w", name, err)
		}
		opts = append(opts, more...)
	}
	srv := server.New(name, b.log, opts...)
	register(srv.GRPC())
	b.inproc[name] = func() grpc.ClientConnInterface {
		ch := srv.InProcess()
		register(ch)
		return ch
	}
	b.s.Addrs[name] = lis.Addr().String()
	sctx, cancel := context.WithCancel(context.WithoutCancel(b.ctx))
	done := make(chan struct{})
	go func() {
		defer close(done)
		if err := srv.Serve(sctx, lis); err != nil {
			b.log.Error("server stopped", "service", name, "error", err)
		}
	}()
	return layer{cancel: cancel, wait: func() { <-done }}, nil
}

// conn dials a started service's port; the connection closes with the suite.
func (b *starter) conn(name string) (*grpc.ClientConn, error) {
	c, err := dial.New(b.s.Addrs[name], dial.WithIdentity(b.key), dial.WithTLS(b.src))
	if err != nil {
		return nil, err
	}
	b.closers = append(b.closers, func() { c.Close() })
	return c, nil
}

// client is how one service calls another: in process, or over conn.
func (b *starter) client(name string, conn *grpc.ClientConn) grpc.ClientConnInterface {
	if b.cfg.Loopback {
		return conn
	}
	return dial.InProcess(b.inproc[name](), dial.WithIdentity(b.key))
}

// startLLM starts the LLM gateway.
func (b *starter) startLLM(opts ...llmgw.Option) (*llmgw.Service, error) {
	llmCfg := llmgw.DefaultConfig()
	if b.cfg.LLM != nil {
		llmCfg = *b.cfg.LLM
	}
	llmSvc, err := llmgw.New(llmCfg, append([]llmgw.Option{llmgw.WithLogger(b.log.With("service", "llmgw")), llmgw.WithLookupEnv(b.lookup),
		llmgw.WithMeterProvider(b.cfg.MeterProvider)}, opts...)...)
	if err != nil {
		return nil, fmt.Errorf("llmgw: %w", err)
	}
	l, err := b.serve("llmgw", b.cfg.LLMAddr, llmSvc.Register)
	if err != nil {
		return nil, err
	}
	b.layers = append(b.layers, l)
	return llmSvc, nil
}

// startSandbox starts the sandbox service on the backend chosen, and
// returns its default image.
func (b *starter) startSandbox(llmHTTP http.Handler) (string, error) {
	cfg := b.cfg
	sbCfg := cfg.Sandbox
	if sbCfg.DefaultImage == "" {
		sbCfg.DefaultImage = backend.DefaultImage
	}
	b.s.Backend = chooseBackend(b.ctx, cfg.Backend, &sbCfg, b.log)
	sbCfg.DefaultType = b.s.Backend
	// A request for Docker when no engine answers is served locally rather
	// than failed, as the single-process default promises to just work.
	sbCfg.LocalFallback = sbCfg.LocalFallback || b.s.Backend == backend.Local
	// With tokens or a verifier several users share the sandboxes: local ones
	// then need -allow-local and a kernel with Landlock.
	sbCfg.MultiUser = sbCfg.MultiUser || len(cfg.Gateway.Tokens) > 0 || cfg.Gateway.VerifierURL != ""
	if sbCfg.StateDir == "" {
		dir, err := os.MkdirTemp("", "wick-sandbox-")
		if err != nil {
			return "", err
		}
		sbCfg.StateDir = dir
		// The id generated into it dies with it: nothing can adopt these
		// sandboxes later, so they go at Close.
		sbCfg.Ephemeral = sbCfg.Ephemeral || sbCfg.ManagerID == ""
		b.closers = append(b.closers, func() { _ = sandbox.RemoveStateDir(dir) })
	}
	// Sandboxes that ask for a model endpoint reach the LLM gateway in this
	// process, as their user, signed with the suite's key.
	key := b.key
	sbSvc, err := sandbox.New(sbCfg, sandbox.WithLogger(b.log.With("service", "sandbox")), sandbox.WithMetrics(cfg.Metrics),
		sandbox.WithMeterProvider(b.cfg.MeterProvider),
		sandbox.WithModelEndpoint(llmHTTP, func(h http.Header, user string) { key.SetHTTP(h, user, nil) }))
	if err != nil {
		return "", fmt.Errorf("sandbox: %w", err)
	}
	closeSandbox := func() error {
		cctx, cancel := context.WithTimeout(context.Background(), cfg.ShutdownTimeout)
		defer cancel()
		return sbSvc.Close(cctx)
	}
	l, err := b.serve("sandbox", cfg.SandboxAddr, sbSvc.Register)
	if err != nil {
		_ = closeSandbox()
		return "", err
	}
	l.after = func() {
		if err := closeSandbox(); err != nil {
			b.log.Warn("sandbox close", "error", err)
		}
	}
	b.layers = append(b.layers, l)
	return sbCfg.DefaultImage, nil
}

// openStores opens the agent service's stores, in memory or Redis.
func (b *starter) openStores() (agent.Stores, error) {
	if b.cfg.RedisAddr == "" {
		return agent.MemoryStores(), nil
	}
	replica := redisconn.ReplicaName()
	rdb, err := redisconn.Open(b.ctx, b.cfg.RedisAddr, "wick@"+replica)
	if err != nil {
		return agent.Stores{}, err
	}
	b.closers = append(b.closers, func() { rdb.Close() })
	ropts := b.cfg.RedisOptions
	ropts.Replica, ropts.MeterProvider = replica, b.cfg.MeterProvider
	return agent.RedisStores(rdb, ropts), nil
}

// startAgent starts the agent service on stores, calling the LLM gateway
// and the sandbox service.
func (b *starter) startAgent(stores agent.Stores, llmConn, sbConn *grpc.ClientConn, sbImage string) error {
	cfg := b.cfg
	agentOpts := append([]agent.Option{
		agent.WithDefaultModel(b.s.Model),
		agent.WithDefaultBackend(b.s.Backend),
		agent.WithDefaultImage(sbImage),
		agent.WithMetrics(cfg.Metrics),
		agent.WithMeterProvider(b.cfg.MeterProvider),
	}, cfg.AgentOptions...)
	agentSvc, err := agent.New(agent.Deps{
		LLM:     llmv1.NewLLMServiceClient(b.client("llmgw", llmConn)),
		Sandbox: sandboxv1.NewSandboxServiceClient(sbConn),
		Stores:  stores,
		Logger:  b.log.With("service", "agent"),
	}, agentOpts...)
	if err != nil {
		return fmt.Errorf("agent: %w", err)
	}
	l, err := b.serve("agent", cfg.AgentAddr, agentSvc.Register)
	if err != nil {
		_ = agentSvc.Close()
		return err
	}
	l.after = func() {
		if err := agentSvc.Close(); err != nil {
			b.log.Warn("agent close", "error", err)
		}
	}
	b.layers = append(b.layers, l)
	return nil
}

// startGateway starts the REST gateway and its gRPC server, which serves
// the agent service to external clients (the edge) besides its health.
func (b *starter) startGateway(llmSvc *llmgw.Service, llmConn, sbConn *grpc.ClientConn) error {
	cfg, log := b.cfg, b.log
	agentConn, err := b.conn("agent")
	if err != nil {
		return err
	}
	gwOpts := append([]gateway.Option{
		gateway.WithLogger(log.With("service", "gateway")),
		gateway.WithLLMHandler(llmSvc.HTTPHandler()),
		gateway.WithHealthCheck("agent", agentConn),
		gateway.WithHealthCheck("sandbox", sbConn),
		gateway.WithHealthCheck("llmgw", llmConn),
		gateway.WithRegistry(cfg.Metrics),
		gateway.WithAgentClient(b.client("agent", agentConn)),
	}, cfg.GatewayOptions...)
	gw, err := gateway.New(cfg.Gateway, agentConn, gwOpts...)
	if err != nil {
		return fmt.Errorf("gateway: %w", err)
	}
	b.s.Anonymous = gw.Anonymous()
	var edge *gateway.Edge
	l, err := b.serve("gateway", cfg.GatewayAddr, func(g grpc.ServiceRegistrar) { edge.Register(g) }, func(addr net.Addr) ([]server.Option, error) {
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
		return err
	}
	lis, err := net.Listen("tcp", cfg.HTTPAddr)
	if err != nil {
		l.cancel()
		l.wait()
		return fmt.Errorf("gateway: listen %s: %w", cfg.HTTPAddr, err)
	}
	b.s.HTTPURL = "http://" + lis.Addr().String()
	hctx, hcancel := context.WithCancel(context.WithoutCancel(b.ctx))
	hdone := make(chan struct{})
	go func() {
		defer close(hdone)
		if err := gateway.Serve(hctx, lis, gw, log.With("service", "gateway"), cfg.ShutdownTimeout); err != nil && !errors.Is(err, http.ErrServerClosed) {
			log.Error("HTTP server stopped", "error", err)
		}
	}()
	b.layers = append(b.layers, layer{
		cancel: func() { hcancel(); l.cancel() },
		wait:   func() { <-hdone; l.wait() },
	})
	return nil
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
		log.Info("sandbox: default image not present; using the busybox image built from this machine's static busybox (make image-runtime builds the runtime image)", "missing", cfg.DefaultImage, "image", img)
		cfg.DefaultImage = img
		return backend.Docker
	}
	log.Info("sandbox: Docker sandboxes use the default image", "image", cfg.DefaultImage)
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
