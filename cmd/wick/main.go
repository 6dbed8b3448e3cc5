// Command wick runs the whole suite in one process: the LLM gateway, the
// sandbox service, the agent service and the REST gateway, each as its real
// gRPC server on a loopback port, sharing one random identity key. It prints
// where to reach everything and stops cleanly on SIGTERM or SIGINT. It is
// the wickserver package with flags: a program that embeds Wick gets the
// same server, plus its own agents and native tools.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"go.opentelemetry.io/otel"

	"github.com/wick-agent/wick/platform/backend"
	"github.com/wick-agent/wick/platform/config"
	"github.com/wick-agent/wick/platform/diag"
	"github.com/wick-agent/wick/platform/logging"
	"github.com/wick-agent/wick/platform/redisconn"
	"github.com/wick-agent/wick/platform/telemetry"
	"github.com/wick-agent/wick/services/agent"
	"github.com/wick-agent/wick/services/gateway"
	"github.com/wick-agent/wick/services/llmgw"
	"github.com/wick-agent/wick/services/sandbox"
	"github.com/wick-agent/wick/wickserver"
	"github.com/wick-agent/wick/wickserver/suite"
)

func main() {
	if err := run(os.Args[1:], os.Stdout); err != nil {
		fmt.Fprintf(os.Stderr, "wick: %v\n", err)
		os.Exit(1)
	}
}

func run(args []string, out io.Writer) error {
	o, err := parseFlags(args)
	if err != nil {
		return err
	}
	logger, err := logging.New(os.Stderr, o.logLevel, o.logFormat)
	if err != nil {
		return err
	}
	cfg, err := o.config(logger)
	if err != nil {
		return err
	}

	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer stop()
	shutdownTelemetry, err := telemetry.Setup(ctx, "wick")
	if err != nil {
		return err
	}
	defer shutdownTelemetry(context.Background())
	// One registry and one meter provider for the process: every service
	// of the suite records on them.
	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	mp, err := telemetry.NewMeterProvider(ctx, "wick", reg)
	if err != nil {
		return err
	}
	otel.SetMeterProvider(mp)
	defer func() {
		if err := mp.Shutdown(context.Background()); err != nil {
			logger.Warn("metrics shutdown", "error", err)
		}
	}()
	cfg.Metrics, cfg.MeterProvider = reg, mp

	dl, err := startDiag(o, reg, logger)
	if err != nil {
		return err
	}
	defer dl.Close(context.Background())

	srv, err := wickserver.New(wickserver.WithConfig(cfg))
	if err != nil {
		return err
	}
	if err := srv.Start(ctx); errors.Is(err, gateway.ErrPlaintext) {
		return fmt.Errorf("%w (-gateway-grpc-tls-cert and -gateway-grpc-tls-key, or -gateway-grpc-allow-plaintext)", err)
	} else if err != nil {
		return err
	}
	s := srv.Suite()
	printReady(out, cfg, o.agent.Knowledge.Dir, s, dl.MetricsAddr)
	if s.Anonymous {
		logger.Warn("no authentication: every request acts as the single local user", "user", gateway.LocalUser)
	}
	return srv.Wait()
}

// DefaultMetricsAddr is where wick serves /metrics unless told otherwise:
// loopback, so that only this host scrapes it; 9464 is the port
// OpenTelemetry's Prometheus exporters use by convention.
const DefaultMetricsAddr = "127.0.0.1:9464"

// startDiag opens -pprof-addr and -metrics-addr. A second wick on one host
// finds the default metrics port taken: it then runs without a metrics
// listener rather than not at all, since the operator did not ask for that
// address.
func startDiag(o *options, reg *prometheus.Registry, logger *slog.Logger) (*diag.Listeners, error) {
	dl, err := diag.Start(o.diag, reg, logger)
	if err != nil && errors.Is(err, syscall.EADDRINUSE) && o.diag.MetricsAddr == DefaultMetricsAddr {
		logger.Warn("metrics not served: the default -metrics-addr is taken (another wick?); give -metrics-addr another address", "addr", DefaultMetricsAddr, "error", err)
		f := o.diag
		f.MetricsAddr = ""
		return diag.Start(f, reg, logger)
	}
	return dl, err
}

// options are wick's flags as parsed, before they become a suite.Config.
type options struct {
	cfg                                      suite.Config
	llm                                      llmgw.Config
	agent                                    agent.Flags
	diag                                     diag.Flags
	tokensFile, tokens, origins, agentsFile  string
	logLevel, logFormat, warmImages, localRO string
	egressAllow, skillsDirs                  string
	secretsDir                               string
	acpKeepIdle                              time.Duration
}

// parseFlags registers wick's flags, with their defaults, and parses args
// (and the environment, through config.Parse).
func parseFlags(args []string) (*options, error) {
	fs, o := defineFlags()
	if err := config.Parse(fs, args); err != nil {
		return nil, err
	}
	return o, nil
}

// defineFlags returns wick's flags, writing into the options it returns.
func defineFlags() (*flag.FlagSet, *options) {
	fs := flag.NewFlagSet("wick", flag.ContinueOnError)
	o := &options{agent: agent.DefaultFlags(), llm: llmgw.DefaultConfig()}
	fs.StringVar(&o.cfg.HTTPAddr, "http-addr", suite.DefaultHTTPAddr, "REST gateway listen address")
	fs.StringVar(&o.cfg.GatewayAddr, "gateway-grpc-addr", "127.0.0.1:7000", "public gRPC API address (wick.agent.v1.AgentService with bearer tokens) and gateway health")
	fs.StringVar(&o.cfg.Gateway.GRPC.CertFile, "gateway-grpc-tls-cert", "", "PEM certificate of the public gRPC API; with -gateway-grpc-tls-key it serves TLS only")
	fs.StringVar(&o.cfg.Gateway.GRPC.KeyFile, "gateway-grpc-tls-key", "", "PEM key of -gateway-grpc-tls-cert")
	fs.BoolVar(&o.cfg.Gateway.GRPC.AllowPlaintext, "gateway-grpc-allow-plaintext", false, "serve the public gRPC API without TLS on an address other than loopback (a proxy in front terminates TLS)")
	fs.StringVar(&o.cfg.AgentAddr, "agent-addr", "127.0.0.1:7001", "agent service gRPC address")
	fs.StringVar(&o.cfg.SandboxAddr, "sandbox-addr", "127.0.0.1:7002", "sandbox service gRPC address")
	fs.StringVar(&o.cfg.LLMAddr, "llm-addr", "127.0.0.1:7003", "LLM gateway gRPC address")
	fs.StringVar(&o.cfg.TLS.CertFile, "tls-cert", "", "PEM certificate the services present to each other; with -tls-key their gRPC ports speak only TLS (default: plaintext, over loopback)")
	fs.StringVar(&o.cfg.TLS.KeyFile, "tls-key", "", "PEM key of -tls-cert")
	fs.StringVar(&o.cfg.TLS.CAFile, "tls-ca", "", "PEM CA bundle: the services' gRPC ports then require client certificates it signed (mutual TLS)")
	fs.StringVar(&o.cfg.TLS.ServerName, "tls-server-name", "", "name verified in the services' certificates instead of the host of their addresses")
	fs.StringVar(&o.cfg.RedisAddr, "redis-addr", "", "Redis for threads, runs and agents: host:port or redis://[user:password@]host:port[/db] (default: in memory)")
	fs.StringVar(&o.cfg.Model, "model", "", "default agent's model (default: from OPENAI_API_KEY / ANTHROPIC_API_KEY, else "+suite.DemoModel+")")
	fs.StringVar(&o.cfg.Backend, "sandbox", backend.Auto, "sandbox backend: "+backend.Auto+" (Docker when an engine answers), "+backend.Docker+" or "+backend.Local)
	fs.StringVar(&o.cfg.Sandbox.StateDir, "sandbox-state-dir", "", "sandbox state directory; a restart on the same one adopts its sandboxes (default: a temporary one, whose sandboxes are removed at exit)")
	fs.StringVar(&o.cfg.Sandbox.ManagerID, "manager-id", "", sandbox.ManagerIDUsage)
	fs.StringVar(&o.cfg.Sandbox.DaemonBin, "daemon-bin", "", "static wick-daemon binary for Docker sandboxes (WICK_DAEMON_BIN; default: next to wick)")
	fs.StringVar(&o.cfg.Sandbox.WickfsBin, "wickfs-bin", "", "static wickfs binary for Docker sandboxes (WICK_WICKFS_BIN; default: next to wick)")
	fs.StringVar(&o.cfg.Sandbox.DefaultImage, "sandbox-image", "", "container image of Docker sandboxes")
	fs.IntVar(&o.cfg.Sandbox.WarmPool, "warm-pool", 0, fmt.Sprintf("ready Docker containers kept per image of -warm-pool-images, for new sandboxes to claim (0: none, at most %d)", sandbox.MaxWarmPool))
	fs.StringVar(&o.warmImages, "warm-pool-images", "", "comma-separated images kept warm (default: -sandbox-image)")
	fs.BoolVar(&o.cfg.Sandbox.BuiltinSkills, "builtin-skills", true, sandbox.BuiltinSkillsUsage)
	fs.StringVar(&o.skillsDirs, "skills-dir", "", sandbox.SkillsDirsUsage)
	fs.BoolVar(&o.cfg.Sandbox.AllowBridge, "allow-bridge", false, "let agents' sandboxes ask for network \"bridge\" (the engine's network, unfiltered); operators only")
	fs.DurationVar(&o.acpKeepIdle, "acp-keep-idle", agent.DefaultACPKeepIdle, "how long an ACP agent's process stays alive after a run for the thread's next message (0: stopped after every run)")
	fs.StringVar(&o.egressAllow, "egress-allow", "", "comma-separated host:port patterns that agents may let their sandboxes reach through the egress proxy (\"*.npmjs.org:443\" matches one more label; the port is required); empty: none")
	fs.BoolVar(&o.cfg.Sandbox.AllowLocal, "allow-local", false, "with tokens or a verifier (several users), permit local sandboxes: commands on this host, confined with Landlock")
	fs.StringVar(&o.localRO, "local-read-only", "", "comma-separated host paths local sandboxes' commands may read besides the system's (e.g. installed ACP adapters)")
	fs.IntVar(&o.cfg.Sandbox.LocalMaxProcs, "local-max-procs", sandbox.DefaultLocalMaxProcs, "processes (threads included) one local sandbox may run at once, where this host gives the service a pids cgroup")
	fs.Int64Var(&o.cfg.Sandbox.WorkspaceBytes, "workspace-bytes", sandbox.DefaultWorkspaceBytes, "size of a sandbox's workspace whose agent names none, in bytes: writes past it fail with \"No space left on device\"")
	fs.Int64Var(&o.cfg.Sandbox.MaxWorkspaceBytes, "max-workspace-bytes", sandbox.DefaultMaxWorkspaceBytes, "largest workspace an agent may ask for, in bytes")
	fs.BoolVar(&o.cfg.Sandbox.RequireWorkspaceBound, "require-workspace-bound", false, "refuse to start when workspaces cannot be bounded (no root, loop devices, mkfs.ext4 or mount) instead of serving them unbounded")
	fs.StringVar(&o.agentsFile, "agents-file", "", "agents.yaml with agent templates (default: one \"default\" agent)")
	fs.StringVar(&o.tokensFile, "tokens-file", "", `bearer token file: lines "token user [org1,org2]" or a JSON object`)
	fs.StringVar(&o.tokens, "tokens", "", "bearer tokens as token:user pairs (prefer WICK_TOKENS)")
	fs.StringVar(&o.cfg.Gateway.VerifierURL, "verifier-url", "", "external bearer token verifier URL")
	fs.StringVar(&o.origins, "cors-origins", "", "comma-separated browser origins allowed to call the API")
	fs.StringVar(&o.cfg.Gateway.UIDir, "ui-dir", "", "UI build directory served with SPA fallback")
	fs.Int64Var(&o.cfg.Gateway.MaxBodyBytes, "max-body-bytes", gateway.DefaultMaxBodyBytes, "largest JSON request body")
	fs.Int64Var(&o.cfg.Gateway.MaxUploadBytes, "max-upload-bytes", gateway.DefaultMaxUploadBytes, "largest raw file upload")
	o.agent.RegisterFlags(fs)
	fs.StringVar(&o.llm.ModelsFile, "models-file", "", "LLM gateway models file")
	fs.StringVar(&o.llm.ScriptDir, "script-dir", "", "directory of script files for script:<name> models")
	fs.StringVar(&o.secretsDir, "secrets-dir", "", "directory of mounted secrets, one file per key: provider keys (key_env) and the ${secret:NAME} references of agents' MCP servers and ACP env")
	o.diag.RegisterPprof(fs)
	fs.StringVar(&o.diag.MetricsAddr, "metrics-addr", DefaultMetricsAddr, "address serving the Prometheus metrics of every service at /metrics; empty: off. When the default address is taken, wick starts without it (and says so); an address given that is taken stops wick")
	o.cfg.Gateway.RegisterMetricsFlags(fs)
	fs.StringVar(&o.logLevel, "log-level", "info", "log level: debug, info, warn, error")
	fs.StringVar(&o.logFormat, "log-format", "text", "log format: json or text")
	return fs, o
}

// config turns the parsed flags into the suite's configuration: files
// read (tokens, organisations), lists split, and the agent service's
// options.
func (o *options) config(logger *slog.Logger) (suite.Config, error) {
	cfg := o.cfg
	llmCfg := o.llm
	llmCfg.SecretsDir = o.secretsDir
	cfg.LLM = &llmCfg
	cfg.Logger = logger
	var err error
	if cfg.Gateway.Tokens, err = gateway.LoadTokens(o.tokensFile, o.tokens); err != nil {
		return cfg, err
	}
	if cfg.Gateway.Orgs, err = gateway.LoadOrgs(o.tokensFile); err != nil {
		return cfg, err
	}
	cfg.Gateway.CORSOrigins = gateway.SplitList(o.origins)
	cfg.Sandbox.WarmPoolImages = gateway.SplitList(o.warmImages)
	cfg.Sandbox.EgressAllow = gateway.SplitList(o.egressAllow)
	cfg.Sandbox.LocalReadOnly = gateway.SplitList(o.localRO)
	cfg.Sandbox.SkillsDirs = gateway.SplitList(o.skillsDirs)
	if o.agentsFile != "" {
		cfg.AgentOptions = append(cfg.AgentOptions, agent.WithAgentsFile(o.agentsFile))
	}
	agentOpts, err := o.agent.Options()
	if err != nil {
		return cfg, err
	}
	cfg.AgentOptions = append(cfg.AgentOptions, agent.WithSecretsDir(o.secretsDir), agent.WithACPKeepIdle(o.acpKeepIdle, 0))
	cfg.AgentOptions = append(cfg.AgentOptions, agentOpts...)
	cfg.RedisOptions = o.agent.Redis
	return cfg, nil
}

// printReady tells the operator where everything is, how it is reached and
// stored, and how to try it.
func printReady(out io.Writer, cfg suite.Config, knowledgeDir string, s *suite.Suite, metricsAddr string) {
	fmt.Fprintf(out, "Wick is running.\n\n")
	if err := gateway.CheckUIDir(cfg.Gateway.UIDir); err != nil {
		fmt.Fprintf(out, "  UI         none: %s\n", strings.TrimPrefix(err.Error(), gateway.ErrNoUI.Error()+": "))
	} else {
		fmt.Fprintf(out, "  UI         %s/\n", s.HTTPURL)
	}
	fmt.Fprintf(out, "  REST API   %s   (SSE, WebSocket terminal; OpenAPI at %s/openapi.json)\n", s.HTTPURL, s.HTTPURL)
	fmt.Fprintf(out, "  OpenAI API %s/v1/\n", s.HTTPURL)
	fmt.Fprintf(out, "  gRPC API   %s   (wick.agent.v1.AgentService, %s)\n", s.Addrs["gateway"], grpcTransport(cfg))
	fmt.Fprintf(out, "  gRPC       gateway %s, agent %s, sandbox %s, llmgw %s   (%s between services)\n", s.Addrs["gateway"], s.Addrs["agent"], s.Addrs["sandbox"], s.Addrs["llmgw"], internalTransport(cfg))
	switch {
	case metricsAddr != "":
		fmt.Fprintf(out, "  metrics    http://%s/metrics\n", metricsAddr)
	case cfg.Gateway.PublicMetrics:
		fmt.Fprintf(out, "  metrics    %s/metrics\n", s.HTTPURL)
	default:
		fmt.Fprintf(out, "  metrics    off (-metrics-addr)\n")
	}
	fmt.Fprintf(out, "  model      %s\n", s.Model)
	fmt.Fprintf(out, "  sandbox    %s\n", s.Backend)
	store := "in memory"
	if cfg.RedisAddr != "" {
		store = "Redis at " + redisconn.ShownRedis(cfg.RedisAddr)
	}
	fmt.Fprintf(out, "  state      %s\n", store)
	switch {
	case cfg.RedisAddr != "":
		fmt.Fprintf(out, "  knowledge  Redis at %s\n", cfg.RedisAddr)
	case knowledgeDir != "":
		fmt.Fprintf(out, "  knowledge  %s\n", knowledgeDir)
	default:
		fmt.Fprintf(out, "  knowledge  in memory (-knowledge-dir keeps it across restarts)\n")
	}
	auth := ""
	if s.Anonymous {
		fmt.Fprintf(out, "\n  WARNING: no tokens configured (WICK_TOKENS, -tokens-file, -verifier-url):\n  anyone who reaches %s acts as the single user %q.\n", s.HTTPURL, gateway.LocalUser)
	} else {
		auth = "-H 'Authorization: Bearer <token>' "
	}
	fmt.Fprintf(out, "\nTry: curl -N %s-H 'Accept: text/event-stream' -d '{\"messages\":[{\"role\":\"user\",\"content\":\"hello\"}]}' %s/agents/default/stream\n", auth, s.HTTPURL)
}

// grpcTransport says how the public gRPC API is reached.
func grpcTransport(cfg suite.Config) string {
	if cfg.Gateway.GRPC.CertFile != "" {
		return "TLS"
	}
	return "plaintext"
}

// internalTransport says how the services reach each other.
func internalTransport(cfg suite.Config) string {
	switch {
	case cfg.TLS.CAFile != "":
		return "mutual TLS"
	case cfg.TLS.CertFile != "":
		return "TLS"
	}
	return "plaintext"
}
