// Command wick-sandbox serves the sandbox service.
package main

import (
	"context"
	"flag"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/wick-agent/wick/platform/app"
	"github.com/wick-agent/wick/platform/backend"
	"github.com/wick-agent/wick/platform/telemetry"
	"github.com/wick-agent/wick/services/sandbox"
	"github.com/wick-agent/wick/services/sandbox/kubebox"
)

func main() {
	var cfg sandbox.Config
	var hosts, warmImages, localRO, llmHTTP, llmToken, egressAllow, skillsDirs string
	var singleUser bool
	var engine, kubeconfig, runAs string
	var kube kubebox.Config
	define := func(fs *flag.FlagSet) {
		fs.StringVar(&cfg.ManagerID, "manager-id", "", sandbox.ManagerIDUsage)
		fs.StringVar(&cfg.StateDir, "state-dir", sandbox.DefaultStateDir, "directory for sandbox sockets, local workdirs and the wick binaries")
		fs.StringVar(&cfg.DaemonBin, "daemon-bin", "", "static wick-daemon binary placed in containers (WICK_DAEMON_BIN)")
		fs.StringVar(&cfg.WickfsBin, "wickfs-bin", "", "static wickfs binary placed in containers (WICK_WICKFS_BIN)")
		fs.StringVar(&cfg.DefaultImage, "default-image", backend.DefaultImage, "image of sandboxes whose spec names none")
		fs.StringVar(&cfg.DefaultType, "default-type", backend.Docker, "sandbox type when a spec names none: "+backend.Docker+" or "+backend.Local)
		fs.BoolVar(&cfg.LocalFallback, "local-fallback", false, "serve docker sandboxes locally when no Docker engine is reachable")
		fs.StringVar(&engine, "container-engine", "docker", "where container (docker-type) sandboxes run: docker (a Docker engine) or kubernetes (one pod per sandbox through the API server)")
		fs.StringVar(&kube.Namespace, "kube-namespace", "wick-sandboxes", "with -container-engine kubernetes: the namespace of the sandbox pods, claims, secrets and network policies (the service needs rights there only)")
		fs.StringVar(&kubeconfig, "kubeconfig", "", "with -container-engine kubernetes: kubeconfig file; empty: the pod's service account (in-cluster)")
		fs.StringVar(&kube.DaemonImage, "kube-daemon-image", "", "with -container-engine kubernetes: image carrying wick-daemon and wickfs in /usr/local/bin (the wick-sandbox image); its init container places them in each pod")
		fs.StringVar(&kube.RuntimeClass, "kube-runtime-class", "", "with -container-engine kubernetes: runtimeClassName of sandbox pods (e.g. gvisor or kata); empty: the cluster's default runtime")
		fs.StringVar(&kube.StorageClass, "kube-storage-class", "", "with -container-engine kubernetes: storage class of workspace claims; empty: the cluster's default")
		fs.StringVar(&runAs, "kube-run-as", "1000:1000", "with -container-engine kubernetes: uid:gid sandbox pods run as (never 0: pods pass Pod Security restricted)")
		fs.BoolVar(&cfg.AllowLocal, "allow-local", false, "permit local sandboxes: commands on this host with a scrubbed environment, confined with Landlock (refused without it unless -single-user)")
		fs.IntVar(&cfg.LocalMaxProcs, "local-max-procs", sandbox.DefaultLocalMaxProcs, "processes (threads included) one local sandbox may run at once, where this host gives the service a pids cgroup; a spec's pids_limit may set fewer")
		fs.StringVar(&localRO, "local-read-only", "", "comma-separated host paths local sandboxes' commands may read besides the system's (e.g. installed ACP adapters)")
		fs.BoolVar(&singleUser, "single-user", false, "only one user reaches this service: -default-type local and -local-fallback imply -allow-local, and local sandboxes run unconfined where the kernel has no Landlock")
		fs.BoolVar(&cfg.AllowBridge, "allow-bridge", true, "let specs ask for network bridge")
		fs.StringVar(&egressAllow, "egress-allow", "", "comma-separated host:port patterns that agents may let their sandboxes reach through the egress proxy (\"*.npmjs.org:443\" matches one more label; the port is required); empty: none")
		fs.StringVar(&hosts, "allowed-docker-hosts", "", "comma-separated remote engines specs may name (tcp://host:port), or *")
		fs.DurationVar(&cfg.IdleTimeout, "idle-timeout", sandbox.DefaultIdleTimeout, "stop sandboxes unused this long (negative: never)")
		fs.DurationVar(&cfg.ReapInterval, "reap-interval", sandbox.DefaultReapInterval, "how often idle and expired sandboxes are looked for")
		fs.Int64Var(&cfg.DefaultMemory, "default-memory", sandbox.DefaultMemory, "default memory limit in bytes")
		fs.Int64Var(&cfg.DefaultNanoCPUs, "default-nano-cpus", sandbox.DefaultNanoCPUs, "default CPU limit in billionths of a CPU")
		fs.Int64Var(&cfg.DefaultPids, "default-pids", sandbox.DefaultPids, "default pids limit")
		fs.DurationVar(&cfg.DefaultExecTimeout, "exec-timeout", sandbox.DefaultExecTimeout, "default command timeout")
		fs.Int64Var(&cfg.DefaultMaxOutput, "max-output", sandbox.DefaultMaxOutput, "default cap on a command's output in bytes")
		fs.Int64Var(&cfg.WorkspaceBytes, "workspace-bytes", sandbox.DefaultWorkspaceBytes, "size of a workspace whose agent names none, in bytes: writes past it fail with \"No space left on device\"")
		fs.Int64Var(&cfg.MaxWorkspaceBytes, "max-workspace-bytes", sandbox.DefaultMaxWorkspaceBytes, "largest workspace an agent may ask for, in bytes")
		fs.BoolVar(&cfg.RequireWorkspaceBound, "require-workspace-bound", false, "refuse to start when workspaces cannot be bounded (no root, loop devices, mkfs.ext4 or mount) instead of serving them unbounded")
		fs.IntVar(&cfg.MaxProcesses, "max-processes", sandbox.DefaultMaxProcesses, "running processes (StartProcess) one sandbox may have")
		fs.Int64Var(&cfg.ProcessBufferBytes, "process-buffer-bytes", sandbox.DefaultProcessBufferBytes, "output kept per process: how far it may run ahead of an attached caller, and the tail kept while nobody is attached")
		fs.DurationVar(&cfg.DaemonStartTimeout, "daemon-start-timeout", sandbox.DefaultDaemonStart, "bound on the wait for wick-daemon to answer")
		fs.IntVar(&cfg.WarmPool, "warm-pool", 0, fmt.Sprintf("ready containers kept per image of -warm-pool-images on the local engine, for new sandboxes to claim (0: none, at most %d)", sandbox.MaxWarmPool))
		fs.StringVar(&warmImages, "warm-pool-images", "", "comma-separated images kept warm (default: -default-image)")
		fs.BoolVar(&cfg.BuiltinSkills, "builtin-skills", true, sandbox.BuiltinSkillsUsage)
		fs.StringVar(&skillsDirs, "skills-dir", "", sandbox.SkillsDirsUsage)
		fs.StringVar(&llmHTTP, "llm-http-addr", "", "LLM gateway's HTTP API base URL (e.g. http://llmgw:8080), offered inside sandboxes whose spec sets model_endpoint; empty: such specs are refused")
		fs.StringVar(&llmToken, "llm-http-token", "", "bearer token the LLM gateway's HTTP API requires, if any")
	}
	app.Main("wick-sandbox", "127.0.0.1:7002", define, func(ctx context.Context, env app.Env) error {
		cfg.MultiUser = !singleUser
		if localRO != "" {
			cfg.LocalReadOnly = strings.Split(localRO, ",")
		}
		if hosts != "" {
			cfg.AllowedDockerHosts = strings.Split(hosts, ",")
		}
		if warmImages != "" {
			cfg.WarmPoolImages = strings.Split(warmImages, ",")
		}
		if egressAllow != "" {
			cfg.EgressAllow = strings.Split(egressAllow, ",")
		}
		if skillsDirs != "" {
			cfg.SkillsDirs = strings.Split(skillsDirs, ",")
		}
		opts := []sandbox.Option{sandbox.WithLogger(env.Logger), sandbox.WithMetrics(env.Metrics)}
		if llmHTTP != "" {
			upstream, err := sandbox.RemoteLLM(llmHTTP, llmToken)
			if err != nil {
				return err
			}
			key := env.Key
			opts = append(opts, sandbox.WithModelEndpoint(upstream, func(h http.Header, user string) { key.SetHTTP(h, user, nil) }))
		}
		switch engine {
		case "docker":
		case "kubernetes":
			var err error
			if kube.RunAs, err = kubebox.ParseRunAs(runAs); err != nil {
				return fmt.Errorf("-kube-run-as: %w", err)
			}
			rc, err := kubebox.LoadConfig(kubeconfig)
			if err != nil {
				return err
			}
			c, err := kubebox.New(rc, kube)
			if err != nil {
				return err
			}
			opts = append(opts, sandbox.WithKubernetes(c))
		default:
			return fmt.Errorf("-container-engine %q must be docker or kubernetes", engine)
		}
		relay, err := telemetry.NewTraceClient(ctx)
		if err != nil {
			return err
		}
		if relay != nil {
			opts = append(opts, sandbox.WithTraceRelay(relay))
		}
		svc, err := sandbox.New(cfg, opts...)
		if err != nil {
			return err
		}
		svc.Register(env.Server.GRPC())
		// Commands go on while the server drains; the service closes once it has stopped.
		env.OnStop(func() {
			cctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			_ = svc.Close(cctx)
			if relay != nil {
				_ = relay.Stop(cctx)
			}
		})
		return nil
	})
}
