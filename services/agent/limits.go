package agent

import (
	"flag"
	"fmt"

	"github.com/wick-agent/wick/services/agent/internal/quota"
	"github.com/wick-agent/wick/services/agent/internal/runexec"
)

// Default per-user limits; see Limits.
const (
	DefaultMaxAgentsPerUser     = 100
	DefaultMaxToolsPerUser      = 64
	DefaultMaxThreadsPerUser    = 1000
	DefaultMaxRunsPerUser       = 8
	DefaultMaxQueuedRunsPerUser = 32
	DefaultMaxWatchersPerUser   = 16
	DefaultMaxThreadBytes       = 8 << 20
)

// Limits bound what one user may hold, so that one user cannot exhaust the
// service for the others. Each is counted where the thing is kept, so the
// bound holds across replicas: agents, tools and threads in their stores,
// atomically with the write; runs going, runs queued and open event streams
// in a lease-scored set per user (the Stores' Quota) that forgets the holds
// of a replica that died. A call over a limit fails with ResourceExhausted
// and a message naming the limit, its value, its flag and how to get under
// it. 0 disables a limit; negative values are refused by New.
type Limits struct {
	// AgentsPerUser bounds the agents a user stores: the ones they created
	// and the templates they changed (a changed template is their copy).
	AgentsPerUser int
	// ToolsPerUser bounds the external HTTP tools a user registered.
	ToolsPerUser int
	// ThreadsPerUser bounds a user's threads; expired ones do not count.
	ThreadsPerUser int
	// RunsPerUser bounds the runs going at once (running or waiting for
	// approval), over every thread; a thread runs one run at a time.
	RunsPerUser int
	// QueuedRunsPerUser bounds the runs waiting for a busy thread (enqueue).
	QueuedRunsPerUser int
	// WatchersPerUser bounds the open event streams that are not runs:
	// WatchEvents and JoinRun.
	WatchersPerUser int
	// ThreadBytes bounds one thread's stored (encoded) state. A save over it
	// first cuts the oldest tool results, read_file's included; a state
	// still too large fails its run and the thread stays as last saved.
	ThreadBytes int64

	// rejections counts every limit's refusals; New sets it.
	rejections *quota.Rejections
}

// DefaultLimits are the limits of a service without WithLimits.
func DefaultLimits() Limits {
	return Limits{
		AgentsPerUser: DefaultMaxAgentsPerUser, ToolsPerUser: DefaultMaxToolsPerUser,
		ThreadsPerUser: DefaultMaxThreadsPerUser, RunsPerUser: DefaultMaxRunsPerUser,
		QueuedRunsPerUser: DefaultMaxQueuedRunsPerUser, WatchersPerUser: DefaultMaxWatchersPerUser,
		ThreadBytes: DefaultMaxThreadBytes,
	}
}

// Flags of the limits, named in their errors.
const (
	flagAgents   = "-max-agents-per-user"
	flagTools    = "-max-tools-per-user"
	flagThreads  = "-max-threads-per-user"
	flagRuns     = "-max-runs-per-user"
	flagQueued   = "-max-queued-runs-per-user"
	flagWatchers = "-max-watchers-per-user"
	flagBytes    = "-max-thread-bytes"
)

// RegisterFlags defines the limits' flags on fs, with l's values as
// defaults; wick-agent and wick share them.
func (l *Limits) RegisterFlags(fs *flag.FlagSet) {
	fs.IntVar(&l.AgentsPerUser, flagAgents[1:], l.AgentsPerUser, "agents a user may store (created or changed templates); 0: no limit")
	fs.IntVar(&l.ToolsPerUser, flagTools[1:], l.ToolsPerUser, "external HTTP tools a user may register; 0: no limit")
	fs.IntVar(&l.ThreadsPerUser, flagThreads[1:], l.ThreadsPerUser, "threads a user may have; 0: no limit")
	fs.IntVar(&l.RunsPerUser, flagRuns[1:], l.RunsPerUser, "runs a user may have going at once; 0: no limit")
	fs.IntVar(&l.QueuedRunsPerUser, flagQueued[1:], l.QueuedRunsPerUser, "runs a user may have waiting for a busy thread; 0: no limit")
	fs.IntVar(&l.WatchersPerUser, flagWatchers[1:], l.WatchersPerUser, "event streams (WatchEvents, JoinRun) a user may have open; 0: no limit")
	fs.Int64Var(&l.ThreadBytes, flagBytes[1:], l.ThreadBytes, "bytes one thread's stored state may take; 0: no limit")
}

// Validate refuses negative limits.
func (l Limits) Validate() error {
	for _, f := range []struct {
		flag string
		v    int64
	}{
		{flagAgents, int64(l.AgentsPerUser)}, {flagTools, int64(l.ToolsPerUser)}, {flagThreads, int64(l.ThreadsPerUser)},
		{flagRuns, int64(l.RunsPerUser)}, {flagQueued, int64(l.QueuedRunsPerUser)}, {flagWatchers, int64(l.WatchersPerUser)},
		{flagBytes, l.ThreadBytes},
	} {
		if f.v < 0 {
			return fmt.Errorf("agent: limit %s is %d; use 0 for no limit", f.flag, f.v)
		}
	}
	return nil
}

func (l Limits) agents() quota.Limit {
	return quota.Limit{Max: int64(l.AgentsPerUser), Name: "agents per user", Unit: "agents", Flag: flagAgents,
		Free: "delete one (a changed template counts until deleted) to store another", Rejections: l.rejections}
}

func (l Limits) tools() quota.Limit {
	return quota.Limit{Max: int64(l.ToolsPerUser), Name: "registered tools per user", Unit: "registered tools", Flag: flagTools,
		Free: "delete one to register another", Rejections: l.rejections}
}

func (l Limits) watchers() quota.Limit {
	return quota.Limit{Max: int64(l.WatchersPerUser), Name: "open event streams per user", Unit: "event streams open", Flag: flagWatchers,
		Free: "close one (WatchEvents, JoinRun) to open another", Rejections: l.rejections}
}

func (l Limits) run() runexec.Limits {
	return runexec.Limits{
		Runs: quota.Limit{Max: int64(l.RunsPerUser), Name: "concurrent runs per user", Unit: "runs going", Flag: flagRuns,
			Free: "wait for one to end or cancel one", Rejections: l.rejections},
		Queued: quota.Limit{Max: int64(l.QueuedRunsPerUser), Name: "queued runs per user", Unit: "runs waiting for a busy thread", Flag: flagQueued,
			Free: "wait for one to start or cancel its request", Rejections: l.rejections},
		Threads: quota.Limit{Max: int64(l.ThreadsPerUser), Name: "threads per user", Unit: "threads", Flag: flagThreads,
			Free: "delete one (DeleteThread) or wait for an idle one to expire", Rejections: l.rejections},
		ThreadBytes: quota.Limit{Max: l.ThreadBytes, Name: "stored bytes per thread", Unit: "bytes", Flag: flagBytes,
			Free: "continue in a new thread", Rejections: l.rejections},
	}
}
