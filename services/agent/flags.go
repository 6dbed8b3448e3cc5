package agent

import (
	"flag"
	"fmt"
	"time"

	"github.com/wick-agent/wick/platform/netguard"
)

// Flags are the agent service's flags that do not depend on how the
// service is deployed: wick-agent and wick define them alike, so that an
// agent behaves the same whichever binary serves it. Addresses, placement
// the default agent and what only one process can keep (ACP processes
// kept between runs) stay with each binary.
type Flags struct {
	Limits    Limits
	Knowledge KnowledgeConfig
	Web       WebConfig
	Usage     UsageConfig

	// ToolAllowNets is -tool-allow-nets as given: CIDRs that HTTP tools
	// and MCP servers may reach although not public.
	ToolAllowNets   string
	QuestionTimeout time.Duration
	SubagentDepth   int
	SubagentTimeout time.Duration
	TaskLease       time.Duration
	GrantsFile      string
	MaxTransfer     int64

	// Redis holds -run-lease, -thread-ttl and -run-retention, which apply
	// when the stores are in Redis.
	Redis RedisOptions
}

// DefaultFlags returns the flags' defaults.
func DefaultFlags() Flags {
	return Flags{
		Limits: DefaultLimits(), Knowledge: DefaultKnowledgeConfig(), Web: DefaultWebConfig(),
		QuestionTimeout: DefaultQuestionTimeout, SubagentDepth: DefaultSubagentMaxDepth, SubagentTimeout: DefaultSubagentTimeout,
		TaskLease: DefaultTaskLease, MaxTransfer: DefaultMaxTransferBytes,
		Redis: RedisOptions{Lease: 15 * time.Second, ThreadTTL: time.Hour, RunRetention: 10 * time.Minute},
	}
}

// RegisterFlags defines the flags on fs, with f's values as defaults.
func (f *Flags) RegisterFlags(fs *flag.FlagSet) {
	fs.StringVar(&f.ToolAllowNets, "tool-allow-nets", f.ToolAllowNets, "comma-separated CIDRs that HTTP callback tools and MCP servers over HTTP may reach although not public (loopback, private, link-local are refused by default), e.g. 127.0.0.0/8")
	fs.DurationVar(&f.QuestionTimeout, "question-timeout", f.QuestionTimeout, "how long a run waits for the user's answer to an ask_user question; the tool's result then says nobody answered")
	fs.IntVar(&f.SubagentDepth, "subagent-max-depth", f.SubagentDepth, "how deep sub-agents (the task tool) nest; a deeper task call is a tool error")
	fs.DurationVar(&f.SubagentTimeout, "subagent-timeout", f.SubagentTimeout, "how long a sub-agent runs when its declaration sets no timeout; then the task call is a tool error")
	fs.DurationVar(&f.TaskLease, "task-lease", f.TaskLease, "lease of a running background task; another replica takes over a crashed replica's tasks after this")
	fs.StringVar(&f.GrantsFile, "secret-grants", f.GrantsFile, "YAML file mapping mounted secret names to the users and orgs that may name them as ${secret:NAME} in agents they write; without it only agents.yaml templates may")
	fs.Int64Var(&f.MaxTransfer, "max-transfer-bytes", f.MaxTransfer, "largest file DownloadFile and UploadFile move")
	fs.DurationVar(&f.Redis.Lease, "run-lease", f.Redis.Lease, "lease of a thread's run lock (Redis); a crashed replica frees its threads after this")
	fs.DurationVar(&f.Redis.ThreadTTL, "thread-ttl", f.Redis.ThreadTTL, "sliding TTL of idle threads (Redis)")
	fs.DurationVar(&f.Redis.RunRetention, "run-retention", f.Redis.RunRetention, "how long a finished run and its event log stay re-joinable (Redis)")
	f.Limits.RegisterFlags(fs)
	f.Knowledge.RegisterFlags(fs)
	f.Web.RegisterFlags(fs)
	f.Usage.RegisterFlags(fs)
}

// Options turns the parsed flags into the service's options.
func (f *Flags) Options() ([]Option, error) {
	allow, err := netguard.ParsePrefixes(f.ToolAllowNets)
	if err != nil {
		return nil, fmt.Errorf("-tool-allow-nets: %w", err)
	}
	opts := []Option{
		WithLimits(f.Limits), WithToolNetworkAllow(allow...), WithQuestionTimeout(f.QuestionTimeout),
		WithSubagents(f.SubagentDepth, f.SubagentTimeout), WithTaskLease(f.TaskLease),
		WithSecretGrantsFile(f.GrantsFile), WithMaxTransferBytes(f.MaxTransfer),
		WithUsage(f.Usage),
	}
	kb, err := f.Knowledge.Options()
	if err != nil {
		return nil, err
	}
	opts = append(opts, kb...)
	return append(opts, f.Web.Options()...), nil
}
