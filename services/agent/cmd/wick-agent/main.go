// Command wick-agent serves the agent service.
package main

import (
	"context"
	"flag"
	"fmt"
	"time"

	"github.com/redis/go-redis/v9"
	"google.golang.org/grpc"

	llmv1 "github.com/wick-agent/wick/gen/wick/llm/v1"
	sandboxv1 "github.com/wick-agent/wick/gen/wick/sandbox/v1"
	"github.com/wick-agent/wick/platform/app"
	"github.com/wick-agent/wick/platform/backend"
	"github.com/wick-agent/wick/platform/dial"
	"github.com/wick-agent/wick/platform/netguard"
	"github.com/wick-agent/wick/platform/redisconn"
	"github.com/wick-agent/wick/services/agent"
	"github.com/wick-agent/wick/services/agent/internal/placement"
)

// The values of -sandbox-placement.
const (
	placementShared     = "shared"
	placementRendezvous = "rendezvous"
)

func main() {
	var (
		llmAddr, sandboxAddr, redisAddr, agentsFile, defaultModel, defaultBackend, defaultImage        string
		toolAllow, sandboxPlacement, secretsDir, grantsFile                                            string
		leaseDur, threadTTL, runRetention, sandboxRefresh, questionTimeout, subagentTimeout, taskLease time.Duration
		subagentDepth                                                                                  int
		maxTransfer                                                                                    int64
		limits                                                                                         = agent.DefaultLimits()
		kb                                                                                             = agent.DefaultKnowledgeConfig()
		web                                                                                            = agent.DefaultWebConfig()
		usageCfg                                                                                       agent.UsageConfig
	)
	define := func(fs *flag.FlagSet) {
		fs.StringVar(&llmAddr, "llm-addr", "127.0.0.1:7003", "LLM gateway gRPC address: "+dial.TargetHelp)
		fs.StringVar(&sandboxAddr, "sandbox-addr", "127.0.0.1:7002", "sandbox service gRPC address: "+dial.TargetHelp)
		fs.StringVar(&sandboxPlacement, "sandbox-placement", placementShared,
			placementShared+": every address of -sandbox-addr reaches every sandbox (replicas of one engine), calls spread round robin; "+
				placementRendezvous+": each address is a sandbox service owning its own engine, and each (user, agent) sandbox lives on the one rendezvous hashing picks")
		fs.DurationVar(&sandboxRefresh, "sandbox-refresh", placement.DefaultRefresh, "with -sandbox-placement "+placementRendezvous+", how often a DNS name in -sandbox-addr is resolved again")
		fs.StringVar(&redisAddr, "redis-addr", "", "Redis shared by replicas: host:port, host:port,… (a cluster), or redis://[user:password@]host:port[/db] (rediss:// for TLS); empty keeps state in memory")
		fs.StringVar(&agentsFile, "agents-file", "", "agents.yaml with agent templates; empty registers one default agent")
		fs.StringVar(&defaultModel, "default-model", agent.DefaultModel, "model of agents that name none")
		fs.StringVar(&defaultBackend, "default-backend", backend.Local, "backend of the built-in default agent: "+backend.Local+", "+backend.Docker+" or "+backend.None)
		fs.StringVar(&defaultImage, "default-image", backend.DefaultImage, "container image of agents switched to Docker without one")
		fs.DurationVar(&leaseDur, "run-lease", 15*time.Second, "lease of a thread's run lock (Redis); a crashed replica frees its threads after this")
		fs.DurationVar(&taskLease, "task-lease", agent.DefaultTaskLease, "lease of a running background task; another replica takes over a crashed replica's tasks after this")
		fs.DurationVar(&threadTTL, "thread-ttl", time.Hour, "sliding TTL of idle threads")
		fs.DurationVar(&runRetention, "run-retention", 10*time.Minute, "how long a finished run and its event log stay re-joinable (Redis)")
		fs.StringVar(&toolAllow, "tool-allow-nets", "", "comma-separated CIDRs that HTTP callback tools may reach although not public (loopback, private, link-local are refused by default)")
		fs.DurationVar(&questionTimeout, "question-timeout", agent.DefaultQuestionTimeout, "how long a run waits for the user's answer to an ask_user question; the tool's result then says nobody answered")
		fs.IntVar(&subagentDepth, "subagent-max-depth", agent.DefaultSubagentMaxDepth, "how deep sub-agents (the task tool) nest; a deeper task call is a tool error")
		fs.DurationVar(&subagentTimeout, "subagent-timeout", agent.DefaultSubagentTimeout, "how long a sub-agent runs when its declaration sets no timeout; then the task call is a tool error")
		fs.StringVar(&secretsDir, "secrets-dir", "", "directory of mounted secrets (one file per key) that agents' MCP server env and headers and ACP env name as ${secret:NAME}")
		fs.StringVar(&grantsFile, "secret-grants", "", "YAML file mapping mounted secret names to the users and orgs that may name them as ${secret:NAME} in agents they write; without it only agents.yaml templates may")
		fs.Int64Var(&maxTransfer, "max-transfer-bytes", agent.DefaultMaxTransferBytes, "largest file DownloadFile and UploadFile move")
		limits.RegisterFlags(fs)
		kb.RegisterFlags(fs)
		web.RegisterFlags(fs)
		usageCfg.RegisterFlags(fs)
	}
	app.Main("wick-agent", "127.0.0.1:7001", define, func(ctx context.Context, env app.Env) error {
		allow, err := netguard.ParsePrefixes(toolAllow)
		if err != nil {
			return fmt.Errorf("-tool-allow-nets: %w", err)
		}
		llmConn, err := env.Dial(llmAddr)
		if err != nil {
			return err
		}
		sb, closeSB, err := sandboxClient(env, sandboxPlacement, sandboxAddr, sandboxRefresh)
		if err != nil {
			return err
		}
		stores := agent.MemoryStores()
		var rdb redis.UniversalClient
		if redisAddr != "" {
			replica := redisconn.ReplicaName()
			rdb, err = redisconn.Open(ctx, redisAddr, "wick-agent@"+replica)
			if err != nil {
				return err
			}
			stores = agent.RedisStores(rdb, agent.RedisOptions{Lease: leaseDur, ThreadTTL: threadTTL, RunRetention: runRetention, Replica: replica})
		} else {
			env.Logger.Warn("no -redis-addr: threads and runs live in this process only; replicas cannot share them")
		}
		kbOpts, err := kb.Options()
		if err != nil {
			return err
		}
		opts := append([]agent.Option{
			agent.WithDefaultModel(defaultModel), agent.WithDefaultBackend(defaultBackend),
			agent.WithDefaultImage(defaultImage), agent.WithMaxTransferBytes(maxTransfer),
			agent.WithToolNetworkAllow(allow...), agent.WithLimits(limits), agent.WithMetrics(env.Metrics),
			agent.WithQuestionTimeout(questionTimeout), agent.WithSubagents(subagentDepth, subagentTimeout), agent.WithTaskLease(taskLease),
			agent.WithSecretsDir(secretsDir), agent.WithSecretGrantsFile(grantsFile), agent.WithUsage(usageCfg),
		}, kbOpts...)
		opts = append(opts, web.Options()...)
		if agentsFile != "" {
			opts = append(opts, agent.WithAgentsFile(agentsFile))
		}
		svc, err := agent.New(agent.Deps{
			LLM: llmv1.NewLLMServiceClient(llmConn), Sandbox: sb,
			Stores: stores, Logger: env.Logger,
		}, opts...)
		if err != nil {
			return err
		}
		svc.Register(env.Server.GRPC())
		env.Logger.Info("agent service ready", "templates", svc.TemplateCount(), "redis", redisAddr != "")
		// Runs go on while the server drains; they end only once it has stopped.
		env.OnStop(func() {
			_ = svc.Close()
			_ = llmConn.Close()
			_ = closeSB()
			if rdb != nil {
				_ = rdb.Close()
			}
		})
		return nil
	})
}

// sandboxClient connects to the sandbox service(s). Placement is a flag, not
// inferred from the number of addresses: a headless Service of replicas
// that share one engine (and -manager-id) and one of sandbox services each
// owning an engine resolve alike, and only the operator knows which it is.
// Round robin over engines would be wrong: a sandbox lives on one.
func sandboxClient(env app.Env, mode, target string, refresh time.Duration) (sandboxv1.SandboxServiceClient, func() error, error) {
	switch mode {
	case placementShared:
		conn, err := env.Dial(target)
		if err != nil {
			return nil, nil, err
		}
		return sandboxv1.NewSandboxServiceClient(conn), conn.Close, nil
	case placementRendezvous:
		d := func(t string, opts ...dial.Option) (*grpc.ClientConn, error) {
			return dial.New(t, append([]dial.Option{dial.WithIdentity(env.Key), dial.WithTLS(env.TLS)}, opts...)...)
		}
		c, err := placement.New(target, d, placement.WithRefresh(refresh), placement.WithLogger(env.Logger))
		if err != nil {
			return nil, nil, fmt.Errorf("-sandbox-addr: %w", err)
		}
		env.Logger.Info("sandboxes placed by rendezvous hashing", "target", target, "endpoints", c.Endpoints())
		return c, c.Close, nil
	}
	return nil, nil, fmt.Errorf("-sandbox-placement %q: want %s or %s", mode, placementShared, placementRendezvous)
}
