package wick

import (
	"google.golang.org/protobuf/types/known/structpb"

	agentv1 "github.com/wick-agent/wick/gen/wick/agent/v1"
)

// Subagent declares a sub-agent of an agent (Agent.Subagents): the task
// tool hands it goals, and it answers with its final reply.
type Subagent = agentv1.Subagent

// Event kinds of sub-agents in a run's stream. Each carries the tags of
// SubagentOf; a client nests a child's events under the parent's task
// call (tool_call_id) of the run parent_run_id.
const (
	// EventSubagentStart: a task call started a sub-agent (data.description
	// is its task).
	EventSubagentStart = "on_subagent_start"
	// EventSubagentEvent wraps one event of a sub-agent (SubagentInfo.Event),
	// so a child's "done" is never taken for the run's own.
	EventSubagentEvent = "on_subagent_event"
	// EventSubagentEnd: a sub-agent ended (SubagentInfo.Status).
	EventSubagentEnd = "on_subagent_end"
)

// SubagentInfo is what an on_subagent_* event says of its sub-agent.
type SubagentInfo struct {
	// Name is the sub-agent's name ("general-purpose" or a declared one).
	Name string
	// RunID and ThreadID are the child's; GetThread reads the thread.
	RunID, ThreadID string
	// ParentRunID is the run whose task call started it: the streamed run,
	// or, when nested, another sub-agent.
	ParentRunID string
	// ToolCallID is the parent's task call.
	ToolCallID string
	// Depth is 1 for a child of the streamed run.
	Depth int
	// Status is set on EventSubagentEnd: completed, failed, timeout,
	// stopped or cancelled; Error then says why it did not complete.
	Status, Error string
	// Event is the child's own event, for EventSubagentEvent.
	Event *Event
}

// SubagentOf returns what a sub-agent event says, or nil for any other event.
func SubagentOf(ev *Event) *SubagentInfo {
	switch ev.GetEvent() {
	case EventSubagentStart, EventSubagentEvent, EventSubagentEnd:
	default:
		return nil
	}
	f := ev.GetData().GetStructValue().GetFields()
	s := &SubagentInfo{
		Name: f["name"].GetStringValue(), RunID: f["run_id"].GetStringValue(), ThreadID: f["thread_id"].GetStringValue(),
		ParentRunID: f["parent_run_id"].GetStringValue(), ToolCallID: f["tool_call_id"].GetStringValue(),
		Depth: int(f["depth"].GetNumberValue()), Status: f["status"].GetStringValue(), Error: f["error"].GetStringValue(),
	}
	if inner := f["event"].GetStructValue().GetFields(); inner != nil {
		s.Event = &Event{
			Event: inner["event"].GetStringValue(), Name: inner["name"].GetStringValue(),
			RunId: s.RunID, ThreadId: s.ThreadID, Data: orNull(inner["data"]),
		}
	}
	return s
}

// orNull keeps an absent data field as the JSON null a direct event has.
func orNull(v *structpb.Value) *structpb.Value {
	if v == nil {
		return structpb.NewNullValue()
	}
	return v
}
