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
		if s := wick.SubagentOf(ev); s != nil {
			if s.Name != "helper" || s.ParentRunID != runID || s.ToolCallID != "t1" || s.Depth != 1 || s.ThreadID == "" {
				t.Fatalf("sub-agent tags %+v", s)
			}
			switch ev.GetEvent() {
			case wick.EventSubagentStart:
				starts++
			case wick.EventSubagentEvent:
				childEvents = append(childEvents, s.Event.GetEvent())
			case wick.EventSubagentEnd:
				ends++
				if s.Status != "completed" {
					t.Fatalf("sub-agent ended %+v", s)
				}
			}
		}
		if ev.GetEvent() == wick.EventToolEnd {
			output = ev.GetData().GetStructValue().GetFields()["output"].GetStringValue()
		}
		last = ev
	}
	if starts != 1 || ends != 1 || len(childEvents) == 0 || childEvents[len(childEvents)-1] != wick.EventDone {
		t.Fatalf("starts %d, ends %d, child events %v", starts, ends, childEvents)
	}
	if output != "Hi from the helper." || wick.StopReason(last) != "completed" {
		t.Fatalf("task output %q, last event %v", output, last)
	}
}
