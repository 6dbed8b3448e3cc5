// Command wick-agent serves the agent service.
package main

import (
	"context"
	"flag"
	"fmt"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	llmv1 "github.com/wick-agent/wick/gen/wick/llm/v1"
	sandboxv1 "github.com/wick-agent/wick/gen/wick/sandbox/v1"
	"github.com/wick-agent/wick/platform/app"
	"github.com/wick-agent/wick/platform/backend"
	"github.com/wick-agent/wick/platform/dial"
	"github.com/wick-agent/wick/platform/netguard"
	"github.com/wick-agent/wick/services/agent"
)

func main() {
	var (
		llmAddr, sandboxAddr, redisAddr, agentsFile, defaultModel, defaultBackend, defaultImage string
		toolAllow                                                                               string
		leaseDur, threadTTL, runRetention                                                       time.Duration
		maxTransfer                                                                             int64
		limits                                                                                  = agent.DefaultLimits()
	)
	define := func(fs *flag.FlagSet) {
		fs.StringVar(&llmAddr, "llm-addr", "127.0.0.1:7003", "LLM gateway gRPC address: "+dial.TargetHelp)
		fs.StringVar(&sandboxAddr, "sandbox-addr", "127.0.0.1:7002", "sandbox service gRPC address: "+dial.TargetHelp)
		fs.StringVar(&redisAddr, "redis-addr", "", "Redis address(es), comma-separated, shared by replicas; empty keeps state in memory")
		fs.StringVar(&agentsFile, "agents-file", "", "agents.yaml with agent templates; empty registers one default agent")
		fs.StringVar(&defaultModel, "default-model", agent.DefaultModel, "model of agents that name none")
		fs.StringVar(&defaultBackend, "default-backend", backend.Local, "backend of the built-in default agent: "+backend.Local+", "+backend.Docker+" or "+backend.None)
		fs.StringVar(&defaultImage, "default-image", backend.DefaultImage, "container image of agents switched to Docker without one")
		fs.DurationVar(&leaseDur, "run-lease", 15*time.Second, "lease of a thread's run lock (Redis); a crashed replica frees its threads after this")
		fs.DurationVar(&threadTTL, "thread-ttl", time.Hour, "sliding TTL of idle threads")
		fs.DurationVar(&runRetention, "run-retention", 10*time.Minute, "how long a finished run and its event log stay re-joinable (Redis)")
		fs.StringVar(&toolAllow, "tool-allow-nets", "", "comma-separated CIDRs that HTTP callback tools may reach although not public (loopback, private, link-local are refused by default)")
		fs.Int64Var(&maxTransfer, "max-transfer-bytes", agent.DefaultMaxTransferBytes, "largest file DownloadFile and UploadFile move")
		limits.RegisterFlags(fs)
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
		sbConn, err := env.Dial(sandboxAddr)
		if err != nil {
			return err
		}
		stores := agent.MemoryStores()
		var rdb redis.UniversalClient
		if redisAddr != "" {
			rdb = redis.NewUniversalClient(&redis.UniversalOptions{Addrs: strings.Split(redisAddr, ",")})
			pctx, cancel := context.WithTimeout(ctx, 10*time.Second)
			err := rdb.Ping(pctx).Err()
			cancel()
			if err != nil {
				return fmt.Errorf("redis %s: %w", redisAddr, err)
			}
			stores = agent.RedisStores(rdb, agent.RedisOptions{Lease: leaseDur, ThreadTTL: threadTTL, RunRetention: runRetention})
		} else {
			env.Logger.Warn("no -redis-addr: threads and runs live in this process only; replicas cannot share them")
		}
		opts := []agent.Option{
			agent.WithDefaultModel(defaultModel), agent.WithDefaultBackend(defaultBackend),
			agent.WithDefaultImage(defaultImage), agent.WithMaxTransferBytes(maxTransfer),
			agent.WithToolNetworkAllow(allow...), agent.WithLimits(limits),
		}
		if agentsFile != "" {
			opts = append(opts, agent.WithAgentsFile(agentsFile))
		}
		svc, err := agent.New(agent.Deps{
			LLM: llmv1.NewLLMServiceClient(llmConn), Sandbox: sandboxv1.NewSandboxServiceClient(sbConn),
			Stores: stores, Logger: env.Logger,
		}, opts...)
		if err != nil {
			return err
		}
		svc.Register(env.Server.GRPC())
		env.Logger.Info("agent service ready", "templates", svc.TemplateCount(), "redis", redisAddr != "")
		go func() {
			<-ctx.Done()
			_ = svc.Close()
			_ = llmConn.Close()
			_ = sbConn.Close()
			if rdb != nil {
				_ = rdb.Close()
			}
		}()
		return nil
	})
}
