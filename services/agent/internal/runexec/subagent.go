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
// parent's cancellation — or, in the background, inside its task. Its
// thread is a real thread, saved after every tool round like a run's, so
// it can be read afterwards, and a take-over goes on from it.
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
	// A new thread is free at once; the thread of a background child taken
	// over may still be locked by the replica that died, until its lease ends.
	lease, err := s.e.locker.Acquire(ctx, s.user, c.ThreadID, true)
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
	opts := append([]loop.RunnerOption{loop.WithLogger(s.e.logger), loop.WithStopCheck(c.Stop),
		loop.WithToolObserver(toolObserver{s.e.metrics, p.labels})}, s.e.cfg.runnerOptions...)
	runner := loop.NewRunner(c.Config, p.model, p.hooks, p.tools, opts...)
	// The child saves as a run does (bounds, cutting old tool results),
	// fenced by its own thread's lease.
	saver := &Run{env: s.e.env, user: s.user, lease: lease}
	switch {
	case len(state.Messages) == 0:
		err = runner.Run(ctx, c.RunID, state, []llm.Message{loop.Human(c.Goal)}, emit, saver.save)
	case finalReply(state.Messages):
		// Taken over after the child answered but before its task was
		// finished: the answer is saved, nothing is run again.
	default:
		// Taken over mid-way: the model goes on from the saved rounds (a
		// round cut short has its calls answered "interrupted").
		err = runner.Continue(ctx, c.RunID, state, emit, saver.save)
	}
	return state, err
}

// finalReply reports whether a thread ends with the model's answer.
func finalReply(msgs []llm.Message) bool {
	last := msgs[len(msgs)-1]
	return last.Role == llm.RoleAssistant && len(last.ToolCalls) == 0
}
