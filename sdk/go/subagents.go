package wick

import (
	agentv1 "github.com/wick-agent/wick/gen/wick/agent/v1"
)

// Subagent declares a sub-agent of an agent (Agent.Subagents): the task
// tool hands it goals, and it answers with its final reply.
//
// A sub-agent's events in a run's stream are on_subagent_start,
// on_subagent_event (one event of the child, in GetEvent, so that its done
// is never taken for the run's own) and on_subagent_end; their data
// (GetOnSubagentStart, GetOnSubagentEvent, GetOnSubagentEnd of
// Event.GetPayload) tag the child with its run, thread, parent run and the
// parent's task call, under which a client nests it.
type Subagent = agentv1.Subagent
