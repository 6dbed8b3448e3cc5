package runexec

import (
	"context"
	"fmt"

	"github.com/wick-agent/wick/llm"
	"github.com/wick-agent/wick/services/agent/internal/loop"
	"github.com/wick-agent/wick/services/agent/internal/registry"
	"github.com/wick-agent/wick/services/agent/internal/subagent"
)

// spawner runs the sub-agents of one user's agent (subagent.Spawner). A
// child is not a run of its own: it has no run record and no event log,
// and lives inside its parent's task call, whose context carries the
// parent's cancellation. Its thread is a real thread, saved after every
// tool round like a run's, so it can be read afterwards.
type spawner struct {
	e       *Executor
	user    string
	agentID string
}

// Spawn implements subagent.Spawner. The child keeps the parent's agent
// id, so its file tools reach the parent's sandbox and workspace.
func (s spawner) Spawn(ctx context.Context, c subagent.Child, emit func(loop.StreamEvent)) (*loop.AgentState, error) {
	p, err := s.e.runnerParts(ctx, s.user, &registry.Entry{ID: s.agentID, Config: c.Config})
	if err != nil {
		return nil, err
	}
	lease, err := s.e.locker.Acquire(ctx, s.user, c.ThreadID, false)
	if err != nil {
		return nil, fmt.Errorf("lock thread %s: %w", c.ThreadID, err)
	}
	defer func() {
		if err := lease.Release(context.WithoutCancel(ctx)); err != nil {
			s.e.logger.Warn("release sub-agent thread lock", "thread_id", c.ThreadID, "error", err)
		}
	}()
	state, err := s.e.threads.LoadOrCreate(ctx, s.user, c.ThreadID)
	if err != nil {
		return nil, fmt.Errorf("load thread %s: %w", c.ThreadID, err)
	}
	state.AgentID = s.agentID
	opts := append([]loop.RunnerOption{loop.WithLogger(s.e.logger), loop.WithStopCheck(c.Stop)}, s.e.cfg.runnerOptions...)
	runner := loop.NewRunner(c.Config, p.model, p.hooks, p.tools, opts...)
	// The child saves as a run does (bounds, cutting old tool results),
	// fenced by its own thread's lease.
	saver := &Run{env: s.e.env, user: s.user, lease: lease}
	err = runner.Run(ctx, c.RunID, state, []llm.Message{loop.Human(c.Goal)}, emit, saver.save)
	return state, err
}
