// Package agent is the agent service: it keeps agent configurations, runs
// the LLM ↔ tool loop on threads, and reaches each agent's sandbox, behind
// the wick.agent.v1.AgentService gRPC API. It is a library with a thin main,
// so one process can host it beside the other services.
package agent

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/netip"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/redis/go-redis/v9"
	"go.opentelemetry.io/otel/metric"
	"google.golang.org/grpc"

	agentv1 "github.com/wick-agent/wick/gen/wick/agent/v1"
	llmv1 "github.com/wick-agent/wick/gen/wick/llm/v1"
	sandboxv1 "github.com/wick-agent/wick/gen/wick/sandbox/v1"
	"github.com/wick-agent/wick/llm"
	"github.com/wick-agent/wick/platform/backend"
	"github.com/wick-agent/wick/platform/redisconn"
	"github.com/wick-agent/wick/platform/usage"
	"github.com/wick-agent/wick/services/agent/internal/acp"
	"github.com/wick-agent/wick/services/agent/internal/budget"
	"github.com/wick-agent/wick/services/agent/internal/ids"
	"github.com/wick-agent/wick/services/agent/internal/knowledge"
	"github.com/wick-agent/wick/services/agent/internal/llmclient"
	"github.com/wick-agent/wick/services/agent/internal/loop"
	"github.com/wick-agent/wick/services/agent/internal/mcp"
	"github.com/wick-agent/wick/services/agent/internal/meters"
	"github.com/wick-agent/wick/services/agent/internal/quota"
	"github.com/wick-agent/wick/services/agent/internal/registry"
	"github.com/wick-agent/wick/services/agent/internal/runexec"
	"github.com/wick-agent/wick/services/agent/internal/runs"
	"github.com/wick-agent/wick/services/agent/internal/sandboxfs"
	"github.com/wick-agent/wick/services/agent/internal/secrets"
	"github.com/wick-agent/wick/services/agent/internal/subagent"
	"github.com/wick-agent/wick/services/agent/internal/tasks"
	"github.com/wick-agent/wick/services/agent/internal/threads"
	"github.com/wick-agent/wick/services/agent/internal/tools"
	"github.com/wick-agent/wick/wickfs"
)

// Defaults of the service; each has an option.
const (
	// DefaultModel is used by agents without a model when none is configured:
	// the LLM gateway's scripted demo model, which needs no provider key.
	DefaultModel = "script:demo"
	// DefaultMaxTransferBytes bounds DownloadFile and UploadFile.
	DefaultMaxTransferBytes = 1 << 30
	// DefaultMaxTextFileBytes bounds ReadFile and WriteFile, which carry the
	// whole file in one message.
	DefaultMaxTextFileBytes = 8 << 20
	// DefaultTransferChunk is the chunk size of DownloadFile.
	DefaultTransferChunk = 256 << 10
	// DefaultApprovalTimeout is how long an interactive run waits for a decision.
	DefaultApprovalTimeout = runexec.DefaultApprovalTimeout
	// DefaultQuestionTimeout is how long a run waits for the answer to an
	// ask_user question.
	DefaultQuestionTimeout = runexec.DefaultQuestionTimeout
	// DefaultACPKeepIdle is how long cmd/wick keeps an ACP agent's process
	// alive after a run for the thread's next message.
	DefaultACPKeepIdle = acp.DefaultPoolIdle
	// DefaultSubagentMaxDepth is how deep sub-agents nest.
	DefaultSubagentMaxDepth = subagent.DefaultMaxDepth
	// DefaultSubagentTimeout bounds one sub-agent run.
	DefaultSubagentTimeout = subagent.DefaultTimeout
	// DefaultPollInterval is how often a run's owner checks for cancel
	// requests and decisions that a lost pub/sub message did not announce.
	DefaultPollInterval = runexec.DefaultPollInterval
	// DefaultJoinBlock is how long a JoinRun read waits for new events before
	// it checks that the run's owner is still alive.
	DefaultJoinBlock = runexec.DefaultJoinBlock
	// DefaultLocalLogRetention is how long this replica keeps its own copy of
	// a finished run's events for fast re-joins.
	DefaultLocalLogRetention = runexec.DefaultLocalLogRetention
	// DefaultMaxInputMessages bounds the messages of one Invoke or Stream.
	DefaultMaxInputMessages = runexec.DefaultMaxInputMessages
	// DefaultMaxRunDuration bounds a run's wall time.
	DefaultMaxRunDuration = runexec.DefaultMaxRunDuration
	// DefaultTaskLease is the lease of a running background task: another
	// replica takes over a dead replica's tasks after at most this.
	DefaultTaskLease = tasks.DefaultLease
)

// Stores are where the service keeps its state: in memory for one process,
// in Redis when replicas share it. Build them with MemoryStores or RedisStores.
type Stores struct {
	Threads threads.Store
	Locker  threads.Locker
	Runs    runs.Store
	Log     runs.Log
	Agents  registry.Store
	// Quota counts what users hold while it lasts: runs going, runs queued,
	// open event streams.
	Quota quota.Store
	// Rates counts what users do per minute (web tool calls); nil counts
	// in this process.
	Rates quota.Rates
	// Tasks keeps background tasks and their leases; nil keeps them in
	// this process.
	Tasks tasks.Store
	// Usage counts model calls' tokens and cost per user, agent, model and
	// day; nil keeps them in this process.
	Usage usage.Store
	// Redis carries configuration events between replicas; nil keeps them local.
	// With it, the knowledge base is shared through Redis too.
	Redis redis.UniversalClient
	// prefix is the Redis key prefix the knowledge base uses ("wick" when empty).
	prefix string
	close  func() error
}

// MemoryStores returns single-process stores.
func MemoryStores() Stores {
	ts := threads.NewMemoryStore()
	rm := runs.NewMemory()
	q := quota.NewMemory()
	return Stores{Threads: ts, Locker: ts, Runs: rm, Log: rm, Agents: registry.NewMemoryStore(), Quota: q, Rates: q, Tasks: tasks.NewMemoryStore(), Usage: usage.NewMemory(), close: ts.Close}
}

// RedisOptions tune RedisStores.
type RedisOptions struct {
	// Prefix starts every key (default "wick").
	Prefix string
	// ThreadTTL is the sliding TTL of threads (default 1 h).
	ThreadTTL time.Duration
	// Lease is the run lock's lease (default 15 s), and how long a replica
	// that died still counts its users' runs and streams against their limits.
	Lease time.Duration
	// RunRetention is how long a finished run and its event log are kept
	// (default 10 min).
	RunRetention time.Duration
	// Replica names this replica in the thread locks it holds (ReplicaName).
	Replica string
	// MeterProvider gets the count of the stores' Redis errors
	// (wick.agent.redis.errors); nil means the global provider.
	MeterProvider metric.MeterProvider
}

// RedisStores returns stores shared by every replica on rdb; the caller owns rdb.
func RedisStores(rdb redis.UniversalClient, o RedisOptions) Stores {
	topts := []threads.RedisOption{threads.WithRedisMeterProvider(o.MeterProvider)}
	if o.Prefix != "" {
		topts = append(topts, threads.WithPrefix(o.Prefix))
	}
	if o.ThreadTTL > 0 {
		topts = append(topts, threads.WithRedisTTL(o.ThreadTTL))
	}
	if o.Lease > 0 {
		topts = append(topts, threads.WithLease(o.Lease))
	}
	if o.Replica != "" {
		topts = append(topts, threads.WithHolderName(o.Replica))
	}
	ts := threads.NewRedisStore(rdb, topts...)
	ropts := []runs.RedisOption{runs.WithRedisMeterProvider(o.MeterProvider)}
	if o.Prefix != "" {
		ropts = append(ropts, runs.WithRedisPrefix(o.Prefix))
	}
	if o.RunRetention > 0 {
		ropts = append(ropts, runs.WithRedisRetention(o.RunRetention))
	}
	rr := runs.NewRedis(rdb, ropts...)
	q := quota.NewRedis(rdb, o.Prefix, o.Lease, quota.WithRedisErrors(meters.NewRedisErrors(o.MeterProvider)))
	return Stores{Threads: ts, Locker: ts, Runs: rr, Log: rr, Agents: registry.NewRedisStore(rdb, o.Prefix),
		Quota: q, Rates: q, Tasks: tasks.NewRedisStore(rdb, o.Prefix), Usage: usage.NewRedis(rdb, o.Prefix), Redis: rdb, prefix: o.Prefix}
}

// Deps are the service's dependencies.
type Deps struct {
	// LLM is the LLM gateway.
	LLM llmv1.LLMServiceClient
	// Sandbox is the sandbox service.
	Sandbox sandboxv1.SandboxServiceClient
	// Stores hold threads, runs, agents and tools.
	Stores Stores
	// Logger logs; nil discards.
	Logger *slog.Logger
}

type options struct {
	templates      map[string]*loop.AgentConfig
	defaultModel   string
	defaultBackend string
	defaultImage   string
	maxTransfer    int64
	maxTextFile    int64
	watchBuffer    int
	llmTimeout     time.Duration
	agentsFile     string
	secretGrants   string
	secretsDir     string
	knowledgeDir   string
	knowledge      []knowledge.Option
	native         []Tool
	limits         Limits
	// tasks configures the background task manager.
	tasks []tasks.Option
	// run configures the run executor: its limits, in the order given.
	run []runexec.Option
	// metrics, when set, gets the service's Prometheus metrics.
	metrics prometheus.Registerer
	// web configures the web tools; nil offers none.
	web *WebConfig
	// meterProvider gets the service's OpenTelemetry instruments.
	meterProvider metric.MeterProvider
	// usage holds the monthly budgets and the operators.
	usage UsageConfig
}

// Option configures the service.
type Option func(*options)

// WithTemplates sets the agent templates (as from agents.yaml); they are
// validated by New. Without templates, New registers one "default" agent.
func WithTemplates(t map[string]*AgentConfig) Option {
	return func(o *options) { o.templates = t }
}

// WithAgentsFile loads the templates from an agents.yaml file. With
// WithTemplates too, the service has both sets; an id in both is an error.
func WithAgentsFile(path string) Option { return func(o *options) { o.agentsFile = path } }

// WithDefaultModel sets the model of agents that name none.
func WithDefaultModel(spec string) Option { return func(o *options) { o.defaultModel = spec } }

// WithDefaultBackend sets the backend (backend.Local, backend.Docker or
// backend.None) of the built-in default agent.
func WithDefaultBackend(t string) Option { return func(o *options) { o.defaultBackend = t } }

// WithDefaultImage sets the image used when an agent switches to Docker
// without one (default backend.DefaultImage).
func WithDefaultImage(img string) Option { return func(o *options) { o.defaultImage = img } }

// WithMaxTransferBytes bounds DownloadFile and UploadFile.
func WithMaxTransferBytes(n int64) Option { return func(o *options) { o.maxTransfer = n } }

// WithMaxTextFileBytes bounds ReadFile and WriteFile.
func WithMaxTextFileBytes(n int64) Option { return func(o *options) { o.maxTextFile = n } }

// WithApprovalTimeout bounds how long an interactive run waits for a decision.
func WithApprovalTimeout(d time.Duration) Option { return runOption(runexec.WithApprovalTimeout(d)) }

// WithQuestionTimeout bounds how long a run waits for the answer to an
// ask_user question (default DefaultQuestionTimeout).
func WithQuestionTimeout(d time.Duration) Option { return runOption(runexec.WithQuestionTimeout(d)) }

// WithSecretsDir resolves the ${secret:NAME} references in agents' MCP
// server env and headers and ACP env from the files of dir (a mounted
// Kubernetes Secret, say) at each run's start. Empty: references cannot be
// resolved, and a run of an agent that holds one fails to start.
func WithSecretsDir(dir string) Option {
	return func(o *options) {
		o.secretsDir = dir // the web search key is read from here too
		runOption(runexec.WithSecrets(secrets.NewDir(dir)))(o)
	}
}

// WithSecretGrantsFile lets the users and organisations a YAML file names
// use the mounted secrets granted to them (${secret:NAME}) in agents they
// create or change themselves. Without it, only the operator's templates
// (agents.yaml, RegisterAgent) and unchanged copies of their MCP servers
// and ACP agents may name a secret; any other agent naming one is refused
// with PermissionDenied when it is created or changed, and at run time.
func WithSecretGrantsFile(path string) Option {
	return func(o *options) { o.secretGrants = path }
}

// WithSubagents bounds sub-agents (the task tool): how deep they nest
// (default DefaultSubagentMaxDepth) and how long one runs when its
// declaration sets no timeout (default DefaultSubagentTimeout); zero keeps
// a default.
func WithSubagents(maxDepth int, timeout time.Duration) Option {
	return runOption(runexec.WithSubagentOptions(subagent.WithMaxDepth(maxDepth), subagent.WithTimeout(timeout)))
}

// WithPollInterval sets how often run owners poll for cancel requests and decisions.
func WithPollInterval(d time.Duration) Option { return runOption(runexec.WithPollInterval(d)) }

// WithJoinBlock sets how long a re-join waits for events before checking the run's owner.
func WithJoinBlock(d time.Duration) Option { return runOption(runexec.WithJoinBlock(d)) }

// WithMerging sets whether a stream's text deltas that wait for a client
// which fell behind are merged into one event (on by default; docs/api.md).
func WithMerging(on bool) Option { return runOption(runexec.WithMerging(on)) }

// WithMaxInputMessages bounds the input messages of a run.
func WithMaxInputMessages(n int) Option { return runOption(runexec.WithMaxInputMessages(n)) }

// WithMaxRunDuration bounds a run's wall time.
func WithMaxRunDuration(d time.Duration) Option { return runOption(runexec.WithMaxRunDuration(d)) }

// WithACPKeepIdle keeps an ACP agent's process alive between the runs of
// a thread for at most idle (at most size processes); 0 stops it after
// every run.
func WithACPKeepIdle(idle time.Duration, size int) Option {
	return runOption(runexec.WithACPKeepIdle(idle, size))
}

// WithStoreRetry bounds how long a replica keeps writing the end of a run
// stopped because its store did not answer, once the store is back
// (runexec.DefaultStoreRetry, 10 min).
func WithStoreRetry(d time.Duration) Option { return runOption(runexec.WithStoreRetry(d)) }

// WithWatchBuffer sets how far a WatchEvents subscriber may fall behind.
func WithWatchBuffer(n int) Option { return func(o *options) { o.watchBuffer = n } }

// WithHTTPClient sets the client of external HTTP callback tools.
func WithHTTPClient(c *http.Client) Option { return runOption(runexec.WithHTTPClient(c)) }

// WithToolNetworkAllow lets HTTP callback tools reach these non-public
// networks; by default they reach public addresses only.
func WithToolNetworkAllow(prefixes ...netip.Prefix) Option {
	return runOption(runexec.WithToolNetworkAllow(prefixes...))
}

// WithLLMTimeout bounds each model call at the gateway.
func WithLLMTimeout(d time.Duration) Option { return func(o *options) { o.llmTimeout = d } }

// WithRunnerOptions passes options to every run's loop (turn limits, tool timeouts).
func WithRunnerOptions(opts ...loop.RunnerOption) Option {
	return runOption(runexec.WithRunnerOptions(opts...))
}

// WithLimits sets the per-user limits (default DefaultLimits()).
func WithLimits(l Limits) Option { return func(o *options) { o.limits = l } }

// runOption passes an option on to the run executor.
// WithMetrics registers the service's Prometheus metrics on reg:
// wick_agent_run_log_append_seconds, the time each event of a run takes to
// be appended to the run log.
func WithMetrics(reg prometheus.Registerer) Option { return func(o *options) { o.metrics = reg } }

// WithMeterProvider sets where the service records its OpenTelemetry
// instruments: runs, tool calls and quota rejections (docs/agent-service.md,
// "Metrics"); the default is the global provider. The Redis stores take
// theirs in RedisOptions.
func WithMeterProvider(mp metric.MeterProvider) Option {
	return func(o *options) { o.meterProvider = mp }
}

// appendHistogram is wick_agent_run_log_append_seconds, registered on reg.
func appendHistogram(reg prometheus.Registerer) (prometheus.Histogram, error) {
	h := prometheus.NewHistogram(prometheus.HistogramOpts{
		Name:    "wick_agent_run_log_append_seconds",
		Help:    "Time to append one event of a run to the run log (a Redis stream when replicas share it).",
		Buckets: prometheus.ExponentialBuckets(0.00005, 2, 14), // 50 µs to 0.4 s
	})
	if err := reg.Register(h); err != nil {
		return nil, fmt.Errorf("agent: metrics: %w", err)
	}
	return h, nil
}

func runOption(ro runexec.Option) Option {
	return func(o *options) { o.run = append(o.run, ro) }
}

// Service implements agentv1.AgentServiceServer.
type Service struct {
	agentv1.UnimplementedAgentServiceServer

	llm      llmv1.LLMServiceClient
	sandbox  sandboxv1.SandboxServiceClient
	st       Stores
	registry *registry.Registry
	hub      *registry.Hub
	exec     *runexec.Executor
	// mcp keeps the connections to the agents' MCP servers.
	mcp    *mcp.Pool
	logger *slog.Logger
	cfg    options
	// native are the embedding program's Go tools by name, fixed at New.
	native map[string]*tools.Native
	// background names the native tools whose calls run as background tasks.
	background map[string]bool
	// web are the web tools the operator offers, by name.
	web map[string]loop.Tool
	// tasks runs background tasks; followUps counts the follow-up runs it
	// is starting, which Close waits for.
	tasks     *tasks.Manager
	followUps sync.WaitGroup
	// followCtx ends at Close, so a follow-up waiting for a busy thread gives up.
	followCtx  context.Context
	followStop context.CancelFunc
	// kb is the knowledge base; closeKB closes its store.
	kb      *knowledge.Service
	closeKB func() error
	// budget checks users' monthly budgets.
	budget *budget.Checker

	stop      context.CancelFunc
	closeOnce sync.Once
}

// New returns the service and starts its background work (pub/sub
// subscriptions), which Close stops.
func New(deps Deps, opts ...Option) (*Service, error) {
	cfg := options{
		defaultModel: DefaultModel, defaultBackend: backend.Local, defaultImage: backend.DefaultImage,
		maxTransfer: DefaultMaxTransferBytes, maxTextFile: DefaultMaxTextFileBytes,
		watchBuffer: registry.DefaultWatchBuffer, limits: DefaultLimits(),
	}
	for _, o := range opts {
		o(&cfg)
	}
	if err := cfg.limits.Validate(); err != nil {
		return nil, err
	}
	cfg.limits.rejections = quota.NewRejections(meters.Meter(cfg.meterProvider))
	switch cfg.defaultBackend {
	case backend.Local, backend.Docker, backend.None:
	default:
		return nil, fmt.Errorf("agent: default backend %q must be %q, %q or %q", cfg.defaultBackend, backend.Local, backend.Docker, backend.None)
	}
	native, background, err := nativeTools(cfg.native)
	if err != nil {
		return nil, err
	}
	if cfg.agentsFile != "" {
		t, err := registry.LoadFile(cfg.agentsFile)
		if err != nil {
			return nil, err
		}
		for id, c := range cfg.templates {
			if _, dup := t[id]; dup {
				return nil, fmt.Errorf("agent: agent %q is both in %s and among the templates", id, cfg.agentsFile)
			}
			t[id] = c
		}
		cfg.templates = t
	}
	if deps.LLM == nil || deps.Sandbox == nil {
		return nil, errors.New("agent: Deps.LLM and Deps.Sandbox are required")
	}
	st := deps.Stores
	if st.Threads == nil || st.Locker == nil || st.Runs == nil || st.Log == nil || st.Agents == nil || st.Quota == nil {
		return nil, errors.New("agent: Deps.Stores is incomplete; use MemoryStores or RedisStores")
	}
	if st.Tasks == nil {
		st.Tasks = tasks.NewMemoryStore()
	}
	if st.Rates == nil {
		st.Rates = quota.NewMemory()
	}
	web, err := webTools(cfg.web, cfg.secretsDir, st.Rates)
	if err != nil {
		return nil, err
	}
	if st.Usage == nil {
		st.Usage = usage.NewMemory()
	}
	limits, err := cfg.usage.limits()
	if err != nil {
		return nil, err
	}
	checker, err := budget.New(st.Usage, limits)
	if err != nil {
		return nil, fmt.Errorf("agent: %w", err)
	}
	logger := deps.Logger
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	templates := cfg.templates
	if templates == nil {
		templates = map[string]*loop.AgentConfig{registry.DefaultAgentID: defaultAgent(cfg, nativeNames(native))}
	}
	for id, t := range templates {
		if err := registry.Validate(id, t); err != nil {
			return nil, err
		}
	}
	grants, err := secrets.LoadGrants(cfg.secretGrants)
	if err != nil {
		return nil, fmt.Errorf("agent: %w", err)
	}
	base, stop := context.WithCancel(context.Background())
	s := &Service{
		llm: deps.LLM, sandbox: deps.Sandbox, st: st,
		registry: registry.New(templates, st.Agents, registry.WithAgentLimit(cfg.limits.agents()), registry.WithSecretGrants(grants)),
		hub:      registry.NewHub(st.Redis, "", cfg.watchBuffer, logger), logger: logger, cfg: cfg, stop: stop,
		native: native, background: background, web: web, budget: checker,
	}
	if err := s.hub.Start(base); err != nil {
		stop()
		return nil, err
	}
	if s.kb, s.closeKB, err = s.openKnowledge(base); err != nil {
		stop()
		return nil, err
	}
	exec, err := s.newExecutor()
	if err != nil {
		stop()
		if s.mcp != nil {
			s.mcp.Close()
		}
		_ = s.closeKB()
		return nil, err
	}
	s.exec = exec
	s.followCtx, s.followStop = context.WithCancel(context.Background())
	s.tasks.Carry(tasks.KindSubagent, exec.RunSubagentTask)
	s.tasks.Start(taskListener{s})
	return s, nil
}

// newExecutor builds the run executor over the service's stores, with the
// LLM gateway and the sandbox service behind its factories.
func (s *Service) newExecutor() (*runexec.Executor, error) {
	var lopts []llmclient.Option
	if s.cfg.llmTimeout > 0 {
		lopts = append(lopts, llmclient.WithTimeout(s.cfg.llmTimeout))
	}
	httpClient := runexec.HTTPClient(s.cfg.run...)
	// MCP servers over HTTP are user-chosen URLs, so they share the
	// external tools' SSRF policy.
	s.mcp = mcp.New(s.sandbox, httpClient, s.logger)
	bgTools := map[string]loop.Tool{}
	for name, t := range s.native {
		if s.background[name] {
			bgTools[name] = t
		}
	}
	s.tasks = tasks.NewManager(s.st.Tasks, redisconn.ReplicaName()+"/"+ids.New("r"), bgTools, s.st.Agents, httpClient,
		append([]tasks.Option{tasks.WithLogger(s.logger)}, s.cfg.tasks...)...)
	native := make(map[string]loop.Tool, len(s.native))
	for name, t := range s.native {
		native[name] = t
		if s.background[name] {
			native[name] = s.tasks.Native(t)
		}
	}
	deps := runexec.Deps{
		Threads: s.st.Threads, Locker: s.st.Locker, Runs: s.st.Runs, Log: s.st.Log, Quota: s.st.Quota,
		Agents: s.registry, Tools: s.st.Agents, Native: native, Builtins: s.web,
		Models: func(user, agentID string, specs []*llmv1.ModelSpec) runexec.Model {
			return llmclient.New(s.llm, specs, append(lopts, llmclient.WithUsage(func(ctx context.Context, provider, model string, u llm.Usage) {
				s.recordUsage(ctx, user, agentID, provider, model, u)
			}))...)
		},
		Sandboxes: func(agentID string, b *loop.BackendCfg) wickfs.FileSystem {
			return sandboxfs.New(s.sandbox, agentID, sandboxfs.Spec(b))
		},
		Knowledge: s.kb,
		Logger:    s.logger,
		Tasks:     s.tasks,
		MCP:       s.mcp,
		Processes: s.sandbox,
	}
	opts := []runexec.Option{runexec.WithDefaultModel(s.cfg.defaultModel), runexec.WithLimits(s.cfg.limits.run()),
		runexec.WithMeterProvider(s.cfg.meterProvider), runexec.WithBudget(s.budget.Check)}
	if s.cfg.metrics != nil {
		h, err := appendHistogram(s.cfg.metrics)
		if err != nil {
			return nil, err
		}
		opts = append(opts, runexec.WithAppendLatency(h))
	}
	return runexec.New(deps, append(opts, s.cfg.run...)...)
}

// defaultAgent is the agent of a service without templates: the built-in
// tools and every native tool, so that a program which only registers tools
// can use them at once; with a sandbox, the skills library the sandbox
// service places there (DefaultSkillsPath).
func defaultAgent(cfg options, native []string) *loop.AgentConfig {
	c := &loop.AgentConfig{
		Name:         "Default agent",
		SystemPrompt: "You are a helpful assistant.",
		Tools:        append(append([]string{"calculate", "datetime"}, webToolNames(cfg.web)...), native...),
	}
	switch cfg.defaultBackend {
	case backend.Local:
		c.Backend = &loop.BackendCfg{Type: backend.Local}
	case backend.Docker:
		c.Backend = &loop.BackendCfg{Type: backend.Docker, Image: cfg.defaultImage}
	}
	if c.Backend != nil {
		c.Skills = &loop.SkillsCfg{Paths: []string{DefaultSkillsPath}}
	}
	return c
}

// DefaultSkillsPath is where the sandbox service places the skills library
// in every sandbox (<workdir>/skills of the default workdir).
const DefaultSkillsPath = "/workspace/skills"

// Register registers the service on r.
func (s *Service) Register(r grpc.ServiceRegistrar) { agentv1.RegisterAgentServiceServer(r, s) }

// Close cancels this replica's runs (each saves its thread first), waits for
// them, and stops background work. Stores it was given are not closed,
// except those MemoryStores made.
func (s *Service) Close() error {
	var err error
	s.closeOnce.Do(func() {
		// Tasks stop first, unfinished, so another replica takes them over.
		s.tasks.Close()
		s.followStop()
		s.followUps.Wait()
		s.exec.Close()
		s.mcp.Close()
		s.stop()
		err = s.closeKB()
		if s.st.close != nil {
			err = errors.Join(err, s.st.close())
		}
	})
	return err
}

// TemplateCount is the number of agent templates (for health reporting).
func (s *Service) TemplateCount() int { return s.registry.TemplateCount() }

func (s *Service) String() string {
	return fmt.Sprintf("agent service (%d templates)", s.registry.TemplateCount())
}
