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
	"os"
	"os/signal"
	"strings"
	"syscall"

	"github.com/wick-agent/wick/platform/backend"
	"github.com/wick-agent/wick/platform/config"
	"github.com/wick-agent/wick/platform/diag"
	"github.com/wick-agent/wick/platform/logging"
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
	fs := flag.NewFlagSet("wick", flag.ContinueOnError)
	var (
		cfg        suite.Config
		tokensFile string
		tokens     string
		origins    string
		agentsFile string
		logLevel   string
		logFormat  string
		warmImages string
		secretsDir string
		grantsFile string
		diagFlags  diag.Flags
	)
	fs.StringVar(&cfg.HTTPAddr, "http-addr", suite.DefaultHTTPAddr, "REST gateway listen address")
	fs.StringVar(&cfg.GatewayAddr, "gateway-grpc-addr", "127.0.0.1:7000", "public gRPC API address (wick.agent.v1.AgentService with bearer tokens) and gateway health")
	fs.StringVar(&cfg.Gateway.GRPC.CertFile, "gateway-grpc-tls-cert", "", "PEM certificate of the public gRPC API; with -gateway-grpc-tls-key it serves TLS only")
	fs.StringVar(&cfg.Gateway.GRPC.KeyFile, "gateway-grpc-tls-key", "", "PEM key of -gateway-grpc-tls-cert")
	fs.BoolVar(&cfg.Gateway.GRPC.AllowPlaintext, "gateway-grpc-allow-plaintext", false, "serve the public gRPC API without TLS on an address other than loopback (a proxy in front terminates TLS)")
	fs.StringVar(&cfg.AgentAddr, "agent-addr", "127.0.0.1:7001", "agent service gRPC address")
	fs.StringVar(&cfg.SandboxAddr, "sandbox-addr", "127.0.0.1:7002", "sandbox service gRPC address")
	fs.StringVar(&cfg.LLMAddr, "llm-addr", "127.0.0.1:7003", "LLM gateway gRPC address")
	fs.StringVar(&cfg.TLS.CertFile, "tls-cert", "", "PEM certificate the services present to each other; with -tls-key their gRPC ports speak only TLS (default: plaintext, over loopback)")
	fs.StringVar(&cfg.TLS.KeyFile, "tls-key", "", "PEM key of -tls-cert")
	fs.StringVar(&cfg.TLS.CAFile, "tls-ca", "", "PEM CA bundle: the services' gRPC ports then require client certificates it signed (mutual TLS)")
	fs.StringVar(&cfg.TLS.ServerName, "tls-server-name", "", "name verified in the services' certificates instead of the host of their addresses")
	fs.StringVar(&cfg.RedisAddr, "redis-addr", "", "Redis for threads, runs and agents: host:port or redis://[user:password@]host:port[/db] (default: in memory)")
	fs.StringVar(&cfg.Model, "model", "", "default agent's model (default: from OPENAI_API_KEY / ANTHROPIC_API_KEY, else "+suite.DemoModel+")")
	fs.StringVar(&cfg.Backend, "sandbox", backend.Auto, "sandbox backend: "+backend.Auto+" (Docker when an engine answers), "+backend.Docker+" or "+backend.Local)
	fs.StringVar(&cfg.Sandbox.StateDir, "sandbox-state-dir", "", "sandbox state directory; a restart on the same one adopts its sandboxes (default: a temporary one, whose sandboxes are removed at exit)")
	fs.StringVar(&cfg.Sandbox.ManagerID, "manager-id", "", sandbox.ManagerIDUsage)
	fs.StringVar(&cfg.Sandbox.DaemonBin, "daemon-bin", "", "static wick-daemon binary for Docker sandboxes (WICK_DAEMON_BIN; default: next to wick)")
	fs.StringVar(&cfg.Sandbox.WickfsBin, "wickfs-bin", "", "static wickfs binary for Docker sandboxes (WICK_WICKFS_BIN; default: next to wick)")
	fs.StringVar(&cfg.Sandbox.DefaultImage, "sandbox-image", "", "container image of Docker sandboxes")
	fs.IntVar(&cfg.Sandbox.WarmPool, "warm-pool", 0, fmt.Sprintf("ready Docker containers kept per image of -warm-pool-images, for new sandboxes to claim (0: none, at most %d)", sandbox.MaxWarmPool))
	fs.StringVar(&warmImages, "warm-pool-images", "", "comma-separated images kept warm (default: -sandbox-image)")
	fs.BoolVar(&cfg.Sandbox.AllowLocal, "allow-local", false, "with tokens or a verifier (several users), permit local sandboxes: commands on this host, confined with Landlock")
	fs.IntVar(&cfg.Sandbox.LocalMaxProcs, "local-max-procs", sandbox.DefaultLocalMaxProcs, "processes (threads included) one local sandbox may run at once, where this host gives the service a pids cgroup")
	fs.Int64Var(&cfg.Sandbox.WorkspaceBytes, "workspace-bytes", sandbox.DefaultWorkspaceBytes, "size of a sandbox's workspace whose agent names none, in bytes: writes past it fail with \"No space left on device\"")
	fs.Int64Var(&cfg.Sandbox.MaxWorkspaceBytes, "max-workspace-bytes", sandbox.DefaultMaxWorkspaceBytes, "largest workspace an agent may ask for, in bytes")
	fs.BoolVar(&cfg.Sandbox.RequireWorkspaceBound, "require-workspace-bound", false, "refuse to start when workspaces cannot be bounded (no root, loop devices, mkfs.ext4 or mount) instead of serving them unbounded")
	fs.StringVar(&agentsFile, "agents-file", "", "agents.yaml with agent templates (default: one \"default\" agent)")
	fs.StringVar(&tokensFile, "tokens-file", "", `bearer token file: lines "token user [org1,org2]" or a JSON object`)
	fs.StringVar(&tokens, "tokens", "", "bearer tokens as token:user pairs (prefer WICK_TOKENS)")
	fs.StringVar(&cfg.Gateway.VerifierURL, "verifier-url", "", "external bearer token verifier URL")
	fs.StringVar(&origins, "cors-origins", "", "comma-separated browser origins allowed to call the API")
	fs.StringVar(&cfg.Gateway.UIDir, "ui-dir", "", "UI build directory served with SPA fallback")
	fs.Int64Var(&cfg.Gateway.MaxBodyBytes, "max-body-bytes", gateway.DefaultMaxBodyBytes, "largest JSON request body")
	fs.Int64Var(&cfg.Gateway.MaxUploadBytes, "max-upload-bytes", gateway.DefaultMaxUploadBytes, "largest raw file upload")
	limits := agent.DefaultLimits()
	limits.RegisterFlags(fs)
	kb := agent.DefaultKnowledgeConfig()
	kb.RegisterFlags(fs)
	questionTimeout := fs.Duration("question-timeout", agent.DefaultQuestionTimeout, "how long a run waits for the user's answer to an ask_user question; the tool's result then says nobody answered")
	subagentDepth := fs.Int("subagent-max-depth", agent.DefaultSubagentMaxDepth, "how deep sub-agents (the task tool) nest; a deeper task call is a tool error")
	subagentTimeout := fs.Duration("subagent-timeout", agent.DefaultSubagentTimeout, "how long a sub-agent runs when its declaration sets no timeout; then the task call is a tool error")
	llmCfg := llmgw.DefaultConfig()
	fs.StringVar(&llmCfg.ModelsFile, "models-file", "", "LLM gateway models file")
	fs.StringVar(&llmCfg.ScriptDir, "script-dir", "", "directory of script files for script:<name> models")
	fs.StringVar(&secretsDir, "secrets-dir", "", "directory of mounted secrets, one file per key: provider keys (key_env) and the ${secret:NAME} references of agents' MCP servers and ACP env")
	fs.StringVar(&grantsFile, "secret-grants", "", "YAML file mapping mounted secret names to the users and orgs that may name them as ${secret:NAME} in agents they write; without it only agents.yaml templates may")
	diagFlags.RegisterPprof(fs)
	fs.StringVar(&logLevel, "log-level", "info", "log level: debug, info, warn, error")
	fs.StringVar(&logFormat, "log-format", "text", "log format: json or text")
	if err := config.Parse(fs, args); err != nil {
		return err
	}
	llmCfg.SecretsDir = secretsDir
	cfg.LLM = &llmCfg
	logger, err := logging.New(os.Stderr, logLevel, logFormat)
	if err != nil {
		return err
	}
	cfg.Logger = logger
	cfg.Gateway.Tokens, err = gateway.LoadTokens(tokensFile, tokens)
	if err != nil {
		return err
	}
	if cfg.Gateway.Orgs, err = gateway.LoadOrgs(tokensFile); err != nil {
		return err
	}
	cfg.Gateway.CORSOrigins = gateway.SplitList(origins)
	cfg.Sandbox.WarmPoolImages = gateway.SplitList(warmImages)
	if agentsFile != "" {
		cfg.AgentOptions = append(cfg.AgentOptions, agent.WithAgentsFile(agentsFile))
	}
	cfg.AgentOptions = append(cfg.AgentOptions, agent.WithLimits(limits), agent.WithQuestionTimeout(*questionTimeout),
		agent.WithSubagents(*subagentDepth, *subagentTimeout), agent.WithSecretsDir(secretsDir),
		agent.WithSecretGrantsFile(grantsFile))
	kbOpts, err := kb.Options()
	if err != nil {
		return err
	}
	cfg.AgentOptions = append(cfg.AgentOptions, kbOpts...)

	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer stop()
	shutdownTelemetry, err := telemetry.Setup(ctx, "wick")
	if err != nil {
		return err
	}
	defer shutdownTelemetry(context.Background())

	dl, err := diag.Start(diagFlags, nil, logger)
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
	fmt.Fprintf(out, "  model      %s\n", s.Model)
	fmt.Fprintf(out, "  sandbox    %s\n", s.Backend)
	store := "in memory"
	if cfg.RedisAddr != "" {
		store = "Redis at " + agent.ShownRedis(cfg.RedisAddr)
	}
	fmt.Fprintf(out, "  state      %s\n", store)
	switch {
	case cfg.RedisAddr != "":
		fmt.Fprintf(out, "  knowledge  Redis at %s\n", cfg.RedisAddr)
	case kb.Dir != "":
		fmt.Fprintf(out, "  knowledge  %s\n", kb.Dir)
	default:
		fmt.Fprintf(out, "  knowledge  in memory (-knowledge-dir keeps it across restarts)\n")
	}
	if s.Anonymous {
		fmt.Fprintf(out, "\n  WARNING: no tokens configured (WICK_TOKENS, -tokens-file, -verifier-url):\n  anyone who reaches %s acts as the single user %q.\n", s.HTTPURL, gateway.LocalUser)
		logger.Warn("no authentication: every request acts as the single local user", "user", gateway.LocalUser)
	}
	auth := ""
	if !s.Anonymous {
		auth = "-H 'Authorization: Bearer <token>' "
	}
	fmt.Fprintf(out, "\nTry: curl -N %s-H 'Accept: text/event-stream' -d '{\"messages\":[{\"role\":\"user\",\"content\":\"hello\"}]}' %s/agents/default/stream\n", auth, s.HTTPURL)
	return srv.Wait()
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
