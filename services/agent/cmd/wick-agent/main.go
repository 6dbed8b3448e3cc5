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
	"github.com/wick-agent/wick/platform/redisconn"
	"github.com/wick-agent/wick/services/agent"
	"github.com/wick-agent/wick/services/agent/internal/placement"
)

// The values of -sandbox-placement.
const (
	placementShared     = "shared"
	placementRendezvous = "rendezvous"
)

// options are wick-agent's flags as parsed: where the other services are,
// how this replica stores state, its default agent, and the agent service's
// flags it shares with wick (agent.Flags).
type options struct {
	llmAddr, sandboxAddr, redisAddr, agentsFile, defaultModel, defaultBackend, defaultImage string
	sandboxPlacement, secretsDir                                                            string
	sandboxRefresh                                                                          time.Duration
	agent                                                                                   agent.Flags
}

// defineFlags defines wick-agent's flags on fs, writing into the options
// it returns.
func defineFlags(fs *flag.FlagSet) *options {
	o := &options{agent: agent.DefaultFlags()}
	fs.StringVar(&o.llmAddr, "llm-addr", "127.0.0.1:7003", "LLM gateway gRPC address: "+dial.TargetHelp)
	fs.StringVar(&o.sandboxAddr, "sandbox-addr", "127.0.0.1:7002", "sandbox service gRPC address: "+dial.TargetHelp)
	fs.StringVar(&o.sandboxPlacement, "sandbox-placement", placementShared,
		placementShared+": every address of -sandbox-addr reaches every sandbox (replicas of one engine), calls spread round robin; "+
			placementRendezvous+": each address is a sandbox service owning its own engine, and each (user, agent) sandbox lives on the one rendezvous hashing picks")
	fs.DurationVar(&o.sandboxRefresh, "sandbox-refresh", placement.DefaultRefresh, "with -sandbox-placement "+placementRendezvous+", how often a DNS name in -sandbox-addr is resolved again")
	fs.StringVar(&o.redisAddr, "redis-addr", "", "Redis shared by replicas: host:port, host:port,… (a cluster), or redis://[user:password@]host:port[/db] (rediss:// for TLS); empty keeps state in memory")
	fs.StringVar(&o.agentsFile, "agents-file", "", "agents.yaml with agent templates; empty registers one default agent")
	fs.StringVar(&o.defaultModel, "default-model", agent.DefaultModel, "model of agents that name none")
	fs.StringVar(&o.defaultBackend, "default-backend", backend.Local, "backend of the built-in default agent: "+backend.Local+", "+backend.Docker+" or "+backend.None)
	fs.StringVar(&o.defaultImage, "default-image", backend.DefaultImage, "container image of agents switched to Docker without one")
	fs.StringVar(&o.secretsDir, "secrets-dir", "", "directory of mounted secrets (one file per key) that agents' MCP server env and headers and ACP env name as ${secret:NAME}")
	o.agent.RegisterFlags(fs)
	return o
}

func main() {
	var o *options
	define := func(fs *flag.FlagSet) { o = defineFlags(fs) }
	app.Main("wick-agent", "127.0.0.1:7001", define, func(ctx context.Context, env app.Env) error {
		agentOpts, err := o.agent.Options()
		if err != nil {
			return err
		}
		llmConn, err := env.Dial(o.llmAddr)
		if err != nil {
			return err
		}
		sb, closeSB, err := sandboxClient(env, o.sandboxPlacement, o.sandboxAddr, o.sandboxRefresh)
		if err != nil {
			return err
		}
		stores := agent.MemoryStores()
		var rdb redis.UniversalClient
		if o.redisAddr != "" {
			replica := redisconn.ReplicaName()
			rdb, err = redisconn.Open(ctx, o.redisAddr, "wick-agent@"+replica)
			if err != nil {
				return err
			}
			ropts := o.agent.Redis
			ropts.Replica = replica
			stores = agent.RedisStores(rdb, ropts)
		} else {
			env.Logger.Warn("no -redis-addr: threads and runs live in this process only; replicas cannot share them")
		}
		opts := append([]agent.Option{
			agent.WithDefaultModel(o.defaultModel), agent.WithDefaultBackend(o.defaultBackend),
			agent.WithDefaultImage(o.defaultImage), agent.WithMetrics(env.Metrics), agent.WithSecretsDir(o.secretsDir),
		}, agentOpts...)
		if o.agentsFile != "" {
			opts = append(opts, agent.WithAgentsFile(o.agentsFile))
		}
		svc, err := agent.New(agent.Deps{
			LLM: llmv1.NewLLMServiceClient(llmConn), Sandbox: sb,
			Stores: stores, Logger: env.Logger,
		}, opts...)
		if err != nil {
			return err
		}
		svc.Register(env.Server.GRPC())
		env.Logger.Info("agent service ready", "templates", svc.TemplateCount(), "redis", o.redisAddr != "")
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
