package wick_test

import (
	"context"
	"testing"

	"google.golang.org/protobuf/types/known/structpb"

	wick "github.com/wick-agent/wick/sdk/go"
)

// TestSubagents streams a run whose scripted model hands a task to a
// declared sub-agent with its own inline scripted model: the child's
// events come tagged and wrapped, and its answer is the task's result.
func TestSubagents(t *testing.T) {
	c := client(t, aliceToken)
	parent, _ := structpb.NewValue(`script:[{"tool_calls":[{"id":"t1","name":"task","arguments":{"subagent_type":"helper","description":"say hi"}}]},{"text":"Parent done."}]`)
	child, _ := structpb.NewValue(`script:[{"text":"Hi from the helper."}]`)
	const id = "sdk-subagents"
	if _, err := c.CreateAgent(t.Context(), &wick.Agent{AgentId: id, Model: parent, Subagents: []*wick.Subagent{
		{Name: "helper", Description: "says hi", Model: child},
	}}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.DeleteAgent(context.Background(), id) })

	var runID, output string
	var starts, ends int
	var childEvents []string
	var last *wick.Event
	for ev, err := range c.Stream(t.Context(), id, wick.Prompt("delegate")) {
		if err != nil {
			t.Fatal(err)
		}
		if runID == "" {
			runID = ev.GetRunId()
		}
		// The tags every sub-agent event carries.
		type tags interface {
			GetName() string
			GetParentRunId() string
			GetToolCallId() string
			GetDepth() int32
			GetThreadId() string
		}
		var s tags
		p := ev.GetPayload()
		switch {
		case p.GetOnSubagentStart() != nil:
			s = p.GetOnSubagentStart()
			starts++
		case p.GetOnSubagentEvent() != nil:
			s = p.GetOnSubagentEvent()
			childEvents = append(childEvents, p.GetOnSubagentEvent().GetEvent().GetEvent())
		case p.GetOnSubagentEnd() != nil:
			s = p.GetOnSubagentEnd()
			ends++
			if p.GetOnSubagentEnd().GetStatus() != "completed" {
				t.Fatalf("sub-agent ended %v", s)
			}
		}
		if s != nil && (s.GetName() != "helper" || s.GetParentRunId() != runID || s.GetToolCallId() != "t1" || s.GetDepth() != 1 || s.GetThreadId() == "") {
			t.Fatalf("sub-agent tags %v", s)
		}
		if end := p.GetOnToolEnd(); end != nil {
			output = end.GetOutput()
		}
		last = ev
	}
	if starts != 1 || ends != 1 || len(childEvents) == 0 || childEvents[len(childEvents)-1] != "done" {
		t.Fatalf("starts %d, ends %d, child events %v", starts, ends, childEvents)
	}
	if output != "Hi from the helper." || wick.StopReason(last) != "completed" {
		t.Fatalf("task output %q, last event %v", output, last)
	}
}
