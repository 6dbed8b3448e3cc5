package a2a

import (
	"fmt"
	"strings"
	"time"

	agentv1 "github.com/wick-agent/wick/gen/wick/agent/v1"
)

// Run statuses of the agent service (agentv1.Run.status).
const (
	runRunning   = "running"
	runWaiting   = "waiting_approval"
	runDone      = "done"
	runStopped   = "stopped"
	runCancelled = "cancelled"
	runFailed    = "failed"
)

// StateOf maps a run's status to its task's state. A run stopped at a step
// boundary is "canceled": A2A has no paused state, and a stopped run is
// continued by a new run, so the task itself is over.
func StateOf(runStatus string) string {
	switch runStatus {
	case runRunning:
		return StateWorking
	case runWaiting:
		return StateInputRequired
	case runDone:
		return StateCompleted
	case runStopped, runCancelled:
		return StateCanceled
	default:
		return StateFailed
	}
}

// terminal reports whether a task in state can change no more.
func terminal(state string) bool {
	return state == StateCompleted || state == StateCanceled || state == StateFailed
}

// tracker turns one run's events into A2A stream events and keeps the task
// they add up to. Each stretch of answer text between tool calls is one
// artifact, streamed as artifact-update events.
type tracker struct {
	task Task
	// open is true while the last artifact takes more text, which text
	// collects (appending to a string per token would copy the answer
	// each time).
	open bool
	text strings.Builder
	now  func() time.Time
}

func newTracker(runID, threadID string) *tracker {
	t := &tracker{now: time.Now}
	t.task = Task{Kind: "task", ID: runID, ContextID: threadID, Status: TaskStatus{State: StateWorking}}
	return t
}

func (t *tracker) timestamp() string { return t.now().UTC().Format(time.RFC3339Nano) }

// agentMessage is a message of the agent about the task.
func (t *tracker) agentMessage(id string, parts ...Part) *Message {
	return &Message{Kind: "message", MessageID: t.task.ID + "-" + id, Role: "agent", Parts: parts, ContextID: t.task.ContextID, TaskID: t.task.ID}
}

func (t *tracker) status(state string, msg *Message, final bool) *StatusUpdate {
	t.task.Status = TaskStatus{State: state, Message: msg, Timestamp: t.timestamp()}
	return &StatusUpdate{Kind: "status-update", TaskID: t.task.ID, ContextID: t.task.ContextID, Status: t.task.Status, Final: final}
}

// answer is the text of the last artifact: the agent's final reply once
// the run is done.
func (t *tracker) answer() string {
	t.sync()
	if n := len(t.task.Artifacts); n > 0 {
		return t.task.Artifacts[n-1].Parts[0].Text
	}
	return ""
}

// sync puts the collected text into the open artifact.
func (t *tracker) sync() {
	if t.open {
		t.task.Artifacts[len(t.task.Artifacts)-1].Parts[0].Text = t.text.String()
	}
}

// close ends the open artifact.
func (t *tracker) close() {
	t.sync()
	t.open = false
}

// snapshot is a copy of the task as it stands.
func (t *tracker) snapshot() *Task {
	t.sync()
	c := t.task
	c.Artifacts = make([]Artifact, len(t.task.Artifacts))
	for i, a := range t.task.Artifacts {
		a.Parts = append([]Part(nil), a.Parts...)
		c.Artifacts[i] = a
	}
	c.History = append([]Message(nil), t.task.History...)
	return &c
}

// apply returns what ev adds to the A2A stream (nil for events A2A has no
// word for: usage, todos, knowledge, sub-agents' inner events) and
// whether the stream ends with it.
func (t *tracker) apply(ev *agentv1.StreamEvent) (out any, final bool) {
	d := ev.GetPayload()
	switch k := d.GetKind().(type) {
	case *agentv1.RunEventData_OnRunStart:
		if id := k.OnRunStart.GetRunId(); id != "" {
			t.task.ID = id
		}
		if id := k.OnRunStart.GetThreadId(); id != "" {
			t.task.ContextID = id
		}
		t.task.Status = TaskStatus{State: StateWorking, Timestamp: t.timestamp()}
		return t.snapshot(), false
	case *agentv1.RunEventData_OnChatModelStream:
		delta := k.OnChatModelStream.GetDelta()
		appendTo := t.open
		if !t.open {
			t.open = true
			t.text.Reset()
			t.task.Artifacts = append(t.task.Artifacts, Artifact{
				// Named by the event that opened it: unique also across the
				// streams of a run resumed after an interrupt.
				ArtifactID: fmt.Sprintf("%s-answer-%s", t.task.ID, ev.GetId()),
				Name:       "answer",
				Parts:      []Part{{Kind: "text"}},
			})
		}
		a := &t.task.Artifacts[len(t.task.Artifacts)-1]
		t.text.WriteString(delta)
		return &ArtifactUpdate{
			Kind: "artifact-update", TaskID: t.task.ID, ContextID: t.task.ContextID, Append: appendTo,
			Artifact: Artifact{ArtifactID: a.ArtifactID, Name: a.Name, Parts: []Part{{Kind: "text", Text: delta}}},
		}, false
	case *agentv1.RunEventData_OnToolStart:
		t.close()
		call := map[string]any{"id": k.OnToolStart.GetToolCallId(), "name": ev.GetName()}
		if args := k.OnToolStart.GetArgs(); args != nil {
			call["args"] = args.AsMap()
		}
		return t.status(StateWorking, t.agentMessage(ev.GetId(), Part{Kind: "data", Data: map[string]any{"tool_call": call}}), false), false
	case *agentv1.RunEventData_OnToolEnd:
		res := map[string]any{"id": k.OnToolEnd.GetToolCallId(), "name": ev.GetName()}
		if k.OnToolEnd.Output != nil {
			res["output"] = k.OnToolEnd.GetOutput()
		}
		if k.OnToolEnd.Error != nil {
			res["error"] = k.OnToolEnd.GetError()
		}
		return t.status(StateWorking, t.agentMessage(ev.GetId(), Part{Kind: "data", Data: map[string]any{"tool_result": res}}), false), false
	case *agentv1.RunEventData_OnInterrupt:
		t.close()
		return t.status(StateInputRequired, t.interruptMessage(ev.GetId(), k.OnInterrupt.GetQuestion(), k.OnInterrupt.GetToolCalls()), true), true
	case *agentv1.RunEventData_Done:
		t.close()
		var msg *Message
		if a := t.answer(); a != "" {
			msg = t.agentMessage(ev.GetId(), Part{Kind: "text", Text: a})
		}
		return t.status(StateCompleted, msg, true), true
	case *agentv1.RunEventData_Error:
		t.close()
		state := StateFailed
		if r := k.Error.GetStopReason(); r == runCancelled || r == runStopped {
			state = StateCanceled
		}
		return t.status(state, t.agentMessage(ev.GetId(), Part{Kind: "text", Text: k.Error.GetMessage()}), true), true
	}
	return nil, false
}

// interruptMessage says what the run waits for: the answer to question,
// or a decision on calls. Its data part lists the calls, so that a client
// can decide each (see resumeDecisions).
func (t *tracker) interruptMessage(id, question string, calls []*agentv1.ToolCall) *Message {
	text := question
	if text == "" {
		names := make([]string, len(calls))
		for i, c := range calls {
			names[i] = c.GetName()
		}
		text = "Approve the tool calls " + strings.Join(names, ", ") + "? Reply \"approve\" or \"reject\"."
	}
	list := make([]any, len(calls))
	for i, c := range calls {
		call := map[string]any{"id": c.GetId(), "name": c.GetName()}
		if c.GetArgs() != nil {
			call["args"] = c.GetArgs().AsMap()
		}
		list[i] = call
	}
	return t.agentMessage("interrupt-"+id, Part{Kind: "text", Text: text}, Part{Kind: "data", Data: map[string]any{"pending": list}})
}

// fromRun sets the task's state from the run's record; a run waiting for
// the user says what for.
func (t *tracker) fromRun(r *agentv1.Run) {
	state := StateOf(r.GetStatus())
	var msg *Message
	switch {
	case state == StateInputRequired:
		question := ""
		for _, c := range r.GetPending() {
			if c.GetName() == askUserTool {
				question = c.GetArgs().GetFields()["question"].GetStringValue()
			}
		}
		msg = t.interruptMessage(r.GetLastEventId(), question, r.GetPending())
	case state == t.task.Status.State:
		msg = t.task.Status.Message
	case state == StateCompleted && t.answer() != "":
		msg = t.agentMessage(r.GetLastEventId(), Part{Kind: "text", Text: t.answer()})
	}
	ts := t.task.Status.Timestamp
	if ts == "" {
		ts = t.timestamp()
	}
	t.task.Status = TaskStatus{State: state, Message: msg, Timestamp: ts}
}
