// Package runexec executes runs: it starts an agent's loop on a thread under
// the thread's run lock, logs the run's events so any replica can follow
// them, waits for approval decisions of interactive agents, and cancels,
// resumes and reaps runs, on this replica or on one that died. It knows
// nothing of gRPC: the agent service converts its requests and errors at the
// edge.
package runexec

import (
	"cmp"
	"context"
	"errors"
	"log/slog"
	"net/http"
	"net/netip"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"go.opentelemetry.io/otel/metric"

	llmv1 "github.com/wick-agent/wick/gen/wick/llm/v1"
	"github.com/wick-agent/wick/llm"
	"github.com/wick-agent/wick/platform/netguard"
	"github.com/wick-agent/wick/services/agent/internal/acp"
	"github.com/wick-agent/wick/services/agent/internal/hooks"
	"github.com/wick-agent/wick/services/agent/internal/loop"
	"github.com/wick-agent/wick/services/agent/internal/mcp"
	"github.com/wick-agent/wick/services/agent/internal/quota"
	"github.com/wick-agent/wick/services/agent/internal/registry"
	"github.com/wick-agent/wick/services/agent/internal/runs"
	"github.com/wick-agent/wick/services/agent/internal/sandboxproc"
	"github.com/wick-agent/wick/services/agent/internal/secrets"
	"github.com/wick-agent/wick/services/agent/internal/subagent"
	"github.com/wick-agent/wick/services/agent/internal/threads"
	"github.com/wick-agent/wick/services/agent/internal/tools"
	"github.com/wick-agent/wick/wickfs"
)

// Defaults of the executor; each has an option.
const (
	// DefaultApprovalTimeout is how long an interactive run waits for a decision.
	DefaultApprovalTimeout = 30 * time.Minute
	// DefaultPollInterval is how often a run's owner checks for cancel
	// requests and decisions that a lost pub/sub message did not announce.
	DefaultPollInterval = time.Second
	// DefaultJoinBlock is how long a follower's read waits for new events
	// before it checks that the run's owner is still alive.
	DefaultJoinBlock = 2 * time.Second
	// DefaultLocalLogRetention is how long this replica keeps its own copy of
	// a finished run's events for fast re-joins.
	DefaultLocalLogRetention = time.Minute
	// DefaultMaxInputMessages bounds the input messages of one run.
	DefaultMaxInputMessages = 100
	// DefaultMaxRunDuration bounds a run's wall time.
	DefaultMaxRunDuration = 2 * time.Hour
)

// followBatch is how many events one log read returns.
const followBatch = 256

// ThreadStore is the slice of threads.Store that runs use.
type ThreadStore interface {
	LoadOrCreate(ctx context.Context, user, threadID string) (*loop.AgentState, error)
	Get(ctx context.Context, user, threadID string) (*loop.AgentState, error)
	Save(ctx context.Context, user string, state *loop.AgentState, fence string, b threads.Bounds) error
	Count(ctx context.Context, user string) (int64, error)
	MarkRun(ctx context.Context, user, threadID, fence, runID, mark string) error
}

// Agents resolves the agent a user names (registry.Registry implements it).
type Agents interface {
	Get(ctx context.Context, user, agentID string) (*registry.Entry, error)
	// CheckSecrets refuses a ${secret:NAME} reference of cfg that the user
	// (and the organisations ctx carries) may not use in agent agentID.
	CheckSecrets(ctx context.Context, user, agentID string, cfg *loop.AgentConfig) error
}

// ToolDefs resolves a user's external HTTP tools by name (registry.Store
// implements it).
type ToolDefs interface {
	GetTool(ctx context.Context, user, name string) (*tools.HTTPToolDef, error)
}

// ModelFactory returns the model client of one run of user's agent, for the
// agent's resolved model specs (empty: the gateway's default).
type ModelFactory func(user, agentID string, specs []*llmv1.ModelSpec) Model

// Model is what a run asks of its model: the loop streams from it, the
// summarization hook calls it.
type Model interface {
	llm.Provider
	hooks.Caller
}

// SandboxFactory returns the file system of an agent's sandbox; it is only
// called for agents with a backend.
type SandboxFactory func(agentID string, backend *loop.BackendCfg) wickfs.FileSystem

// Deps are the executor's dependencies.
type Deps struct {
	// Threads keeps the conversations runs load and save.
	Threads ThreadStore
	// Locker gives each thread one run at a time, across replicas.
	Locker threads.Locker
	// Runs keeps run records and the requests addressed to a run's owner.
	Runs runs.Store
	// Log is the event log every replica reads.
	Log runs.Log
	// Quota counts each user's runs going and runs waiting for a busy
	// thread, across replicas.
	Quota quota.Store
	// Agents resolves the agent of a run.
	Agents Agents
	// Tools resolves the external tools an agent names.
	Tools ToolDefs
	// Builtins are the built-in tools this service offers beyond
	// tools.Builtins (web_search and fetch_url when the operator configured
	// them), by name.
	Builtins map[string]loop.Tool
	// Native are the embedding program's Go tools by name (none when nil);
	// an agent names them like built-ins, and they win over a user's
	// external tool of the same name.
	Native map[string]loop.Tool
	// Models builds each run's model client.
	Models ModelFactory
	// Sandboxes builds each run's sandbox file system.
	Sandboxes SandboxFactory
	// Knowledge is the knowledge base searched by agents that name
	// collections; nil leaves knowledge retrieval off.
	Knowledge hooks.KnowledgeSearcher
	// Logger logs; nil discards.
	Logger *slog.Logger
	// Tasks runs tool calls in the background; nil leaves async HTTP tools
	// synchronous and gives no task notes.
	Tasks Tasks
	// MCP gives agents the tools of their MCP servers; nil gives none.
	MCP MCPTools
	// Processes runs the external ACP agents (AgentConfig.ACP) in their
	// sandboxes; nil refuses to run such agents.
	Processes sandboxproc.Sandbox
}

// MCPTools lists the tools of an agent's MCP servers when a run starts,
// and the servers that could not give theirs (mcp.Pool implements it).
type MCPTools interface {
	Tools(ctx context.Context, user, agentID string, backend *loop.BackendCfg, servers []loop.MCPServerCfg) ([]loop.Tool, []mcp.Unavailable)
}

type config struct {
	acpKeepIdle     time.Duration
	acpKeepSize     int
	defaultModel    string
	approvalTimeout time.Duration
	questionTimeout time.Duration
	pollInterval    time.Duration
	joinBlock       time.Duration
	localRetention  time.Duration
	maxInput        int
	maxRunDuration  time.Duration
	storeRetry      time.Duration
	httpClient      *http.Client
	toolNetAllow    []netip.Prefix
	runnerOptions   []loop.RunnerOption
	secrets         secrets.Dir
	// subagentOptions configure every run's task tool.
	subagentOptions []subagent.Option
	limits          Limits
	// appendLatency, when set, observes run log appends.
	appendLatency prometheus.Observer
	// merge merges the text deltas waiting for a follower (mergeDeltas).
	merge bool
	// meterProvider gets the executor's instruments (nil: the global one).
	meterProvider metric.MeterProvider
	// budget, when set, may refuse a user's new run.
	budget func(ctx context.Context, user string) error
}

// Limits bound what one user's runs hold; a zero Limit does not bound.
type Limits struct {
	// Runs bounds the runs going at once (running or waiting for approval).
	Runs quota.Limit
	// Queued bounds the runs waiting for a busy thread (enqueue).
	Queued quota.Limit
	// Threads bounds the threads a user has; a run on a new thread is
	// refused at its start when the user has Threads.Max.
	Threads quota.Limit
	// ThreadBytes bounds one thread's encoded state (Max in bytes). A save
	// over it first cuts old tool results; a state still too large fails
	// the run and leaves the thread as last saved.
	ThreadBytes quota.Limit
}

// Kinds of what quota counts for runs.
const (
	kindRuns   = "runs"
	kindQueued = "queued"
)

// Option configures an Executor.
type Option func(*config)

// WithDefaultModel sets the model of agents that name none; without it the
// LLM gateway picks its default.
func WithDefaultModel(spec string) Option { return func(c *config) { c.defaultModel = spec } }

// WithApprovalTimeout bounds how long an interactive run waits for a decision.
func WithApprovalTimeout(d time.Duration) Option { return func(c *config) { c.approvalTimeout = d } }

// WithQuestionTimeout bounds how long a run waits for the answer to an
// ask_user question; the tool's result then says nobody answered.
func WithQuestionTimeout(d time.Duration) Option { return func(c *config) { c.questionTimeout = d } }

// WithPollInterval sets how often run owners poll for cancel requests and decisions.
func WithPollInterval(d time.Duration) Option { return func(c *config) { c.pollInterval = d } }

// WithJoinBlock sets how long a follower waits for events before checking the run's owner.
func WithJoinBlock(d time.Duration) Option { return func(c *config) { c.joinBlock = d } }

// WithLocalLogRetention sets how long this replica keeps its copy of a
// finished run's events (when the shared log is not already in memory).
func WithLocalLogRetention(d time.Duration) Option { return func(c *config) { c.localRetention = d } }

// WithMaxInputMessages bounds the input messages of a run.
func WithMaxInputMessages(n int) Option { return func(c *config) { c.maxInput = n } }

// WithMaxRunDuration bounds a run's wall time.
func WithMaxRunDuration(d time.Duration) Option { return func(c *config) { c.maxRunDuration = d } }

// WithHTTPClient sets the client of external HTTP callback tools (default
// tools.SafeHTTPClient); its policy replaces WithToolNetworkAllow's.
func WithHTTPClient(hc *http.Client) Option { return func(c *config) { c.httpClient = hc } }

// WithToolNetworkAllow lets HTTP callback tools reach these non-public
// networks (loopback, private, link-local …), which they are refused by default.
func WithToolNetworkAllow(prefixes ...netip.Prefix) Option {
	return func(c *config) { c.toolNetAllow = append(c.toolNetAllow, prefixes...) }
}

// WithRunnerOptions passes options to every run's loop (turn limits, tool timeouts).
func WithRunnerOptions(opts ...loop.RunnerOption) Option {
	return func(c *config) { c.runnerOptions = append(c.runnerOptions, opts...) }
}

// WithSubagentOptions configure the task tool of every run (depth bound,
// default timeout).
func WithSubagentOptions(opts ...subagent.Option) Option {
	return func(c *config) { c.subagentOptions = append(c.subagentOptions, opts...) }
}

// WithAppendLatency observes the time each append of a run's event to the
// run log takes (a Redis round trip in the shared setup), in seconds.
func WithAppendLatency(o prometheus.Observer) Option { return func(c *config) { c.appendLatency = o } }

// WithMeterProvider sets where the executor records runs and tool calls
// (wick.agent.runs.*, wick.agent.run.duration, wick.agent.tool.*); the
// default is the global provider.
func WithMeterProvider(mp metric.MeterProvider) Option {
	return func(c *config) { c.meterProvider = mp }
}

// WithMerging sets whether the text deltas waiting for a follower that fell
// behind are merged into one event (mergeDeltas; on by default).
func WithMerging(on bool) Option { return func(c *config) { c.merge = on } }

// WithACPKeepIdle keeps an ACP agent's process alive between the runs of
// a thread on this replica for at most idle, at most size processes at
// once (acp.Pool); 0 (the default) stops it gracefully after every run.
func WithACPKeepIdle(idle time.Duration, size int) Option {
	return func(c *config) { c.acpKeepIdle, c.acpKeepSize = idle, size }
}

// WithBudget has check refuse a user's new run (a new message, a
// continuation, a follow-up) before it takes its thread; sub-agents and
// the model calls of runs going are not checked.
func WithBudget(check func(ctx context.Context, user string) error) Option {
	return func(c *config) { c.budget = check }
}

// WithLimits bounds what each user's runs hold.
func WithLimits(l Limits) Option { return func(c *config) { c.limits = l } }

// toolClient is the client of external tools: WithHTTPClient's, or the
// SSRF-guarded client reaching WithToolNetworkAllow's networks besides
// public addresses.
func (c *config) toolClient() *http.Client {
	if c.httpClient != nil {
		return c.httpClient
	}
	return tools.SafeHTTPClient(netguard.New(c.toolNetAllow...))
}

// HTTPClient is the client external tools get under opts, for other callers
// of user-chosen URLs (background tasks' status URLs) to share its policy.
func HTTPClient(opts ...Option) *http.Client {
	var c config
	for _, o := range opts {
		o(&c)
	}
	return c.toolClient()
}

// env is what a run uses of its executor; none of it changes after New.
type env struct {
	threads ThreadStore
	quota   quota.Store
	runs    runs.Store
	log     runs.Log
	local   *runs.Memory // this replica's copy of its runs' events
	logger  *slog.Logger
	cfg     config
	metrics *metrics
}

// Executor starts and controls runs. Runs it started live on this replica;
// runs of other replicas are reached through the shared stores.
type Executor struct {
	*env
	knowledge hooks.KnowledgeSearcher
	locker    threads.Locker
	agents    Agents
	tools     ToolDefs
	native    map[string]loop.Tool
	builtins  map[string]loop.Tool
	models    ModelFactory
	sandboxes SandboxFactory
	tasks     Tasks
	mcp       MCPTools
	processes sandboxproc.Sandbox
	// acpPool keeps ACP agents' processes between the runs of a thread.
	acpPool *acp.Pool

	base   context.Context
	stop   context.CancelFunc
	wg     sync.WaitGroup
	mu     sync.Mutex
	active map[string]*Run
	closed bool
}

// New returns an executor and starts listening for cancel requests and
// decisions addressed to its runs; Close stops it.
func New(deps Deps, opts ...Option) (*Executor, error) {
	if deps.Threads == nil || deps.Locker == nil || deps.Runs == nil || deps.Log == nil || deps.Quota == nil ||
		deps.Agents == nil || deps.Tools == nil || deps.Models == nil || deps.Sandboxes == nil {
		return nil, errors.New("runexec: every dependency but Logger is required")
	}
	cfg := config{
		approvalTimeout: DefaultApprovalTimeout, questionTimeout: DefaultQuestionTimeout, pollInterval: DefaultPollInterval, joinBlock: DefaultJoinBlock,
		localRetention: DefaultLocalLogRetention, maxInput: DefaultMaxInputMessages, maxRunDuration: DefaultMaxRunDuration, storeRetry: DefaultStoreRetry, merge: true,
	}
	for _, o := range opts {
		o(&cfg)
	}
	cfg.httpClient = cfg.toolClient()
	logger := deps.Logger
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	en := &env{threads: deps.Threads, quota: deps.Quota, runs: deps.Runs, log: deps.Log, logger: logger, cfg: cfg, metrics: newMetrics(cfg.meterProvider)}
	if mem, ok := deps.Log.(*runs.Memory); ok {
		en.local = mem
	} else {
		en.local = runs.NewMemory(runs.WithMemoryRetention(cfg.localRetention))
	}
	base, stop := context.WithCancel(context.Background())
	e := &Executor{
		env: en, locker: deps.Locker, agents: deps.Agents, tools: deps.Tools, native: deps.Native, builtins: deps.Builtins, models: deps.Models, sandboxes: deps.Sandboxes,
		knowledge: deps.Knowledge, tasks: deps.Tasks, mcp: deps.MCP, processes: deps.Processes, base: base, stop: stop, active: map[string]*Run{},
	}
	if cfg.acpKeepIdle > 0 {
		e.acpPool = acp.NewPool(acp.WithPoolIdle(cfg.acpKeepIdle), acp.WithPoolSize(cmp.Or(cfg.acpKeepSize, acp.DefaultPoolSize)))
	}
	nudges, err := deps.Runs.Nudges(base)
	if err != nil {
		stop()
		return nil, err
	}
	e.wg.Add(1)
	go func() {
		defer e.wg.Done()
		e.dispatchNudges(nudges)
	}()
	return e, nil
}

// sharedLog reports whether the shared log is another store than this
// replica's copy, so that events go to both.
func (en *env) sharedLog() bool { return en.log != runs.Log(en.local) }

// Close cancels this replica's runs (each saves its thread first), waits for
// them, and stops listening for requests. Runs started after Close fail
// with ErrShutdown.
func (e *Executor) Close() {
	e.mu.Lock()
	if e.closed {
		e.mu.Unlock()
		return
	}
	e.closed = true
	active := make([]*Run, 0, len(e.active))
	for _, r := range e.active {
		active = append(active, r)
	}
	e.mu.Unlock()
	for _, r := range active {
		r.cancel(ErrShutdown)
	}
	for _, r := range active {
		<-r.done
	}
	if e.acpPool != nil {
		e.acpPool.Close()
	}
	e.stop()
	e.wg.Wait()
}

// lookup returns the run with this id when this replica executes it.
func (e *Executor) lookup(runID string) *Run {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.active[runID]
}

func (e *Executor) dispatchNudges(ch <-chan string) {
	for {
		select {
		case <-e.base.Done():
			return
		case id := <-ch:
			if r := e.lookup(id); r != nil {
				signal(r.nudge)
			}
		}
	}
}

// signal wakes the receiver of a one-slot channel without blocking.
func signal(ch chan struct{}) {
	select {
	case ch <- struct{}{}:
	default:
	}
}
