package wick

import (
	"context"
	"errors"
	"fmt"
	"io"
	"iter"
	"math/rand/v2"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/structpb"

	agentv1 "github.com/wick-agent/wick/gen/wick/agent/v1"
)

// Prompt is the input of a run made of one user message.
func Prompt(text string) []*Message {
	return []*Message{{Role: "user", Content: text}}
}

// RunOption configures Invoke and Stream.
type RunOption func(*runOptions)

type runOptions struct {
	threadID string
	enqueue  bool
	keep     bool
}

// OnThread continues a thread instead of starting a new one.
func OnThread(threadID string) RunOption { return func(o *runOptions) { o.threadID = threadID } }

// Enqueue waits for a run already going on the thread instead of failing
// with FailedPrecondition.
func Enqueue() RunOption { return func(o *runOptions) { o.enqueue = true } }

// KeepRunning lets a streamed run go on when the caller stops iterating or
// its context ends; by default Stream cancels it then. Join it later with
// Client.Join.
func KeepRunning() RunOption { return func(o *runOptions) { o.keep = true } }

func runOpts(opts []RunOption) runOptions {
	var o runOptions
	for _, opt := range opts {
		opt(&o)
	}
	return o
}

// Invoke runs an agent on input and returns when the run ends.
func (c *Client) Invoke(ctx context.Context, agentID string, input []*Message, opts ...RunOption) (*Result, error) {
	o := runOpts(opts)
	return c.api.Invoke(ctx, &agentv1.InvokeRequest{AgentId: agentID, Messages: input, ThreadId: o.threadID, Enqueue: o.enqueue})
}

// Stream runs an agent on input and yields the run's events as they come,
// from "on_run_start" to "done" or "error" (a failed run is an event, not
// an error). An error ends the sequence: the call's gRPC status error, or
// the context's.
//
// A dropped connection does not end it: the stream re-joins the run after
// the last event it yielded (JoinRun), so no event is lost or repeated,
// with bounded attempts (WithRejoin). This works because the run is
// started as a background run; so that a run nobody follows does not go
// on, Stream cancels it when the caller stops early (break, or ctx ends),
// unless KeepRunning.
func (c *Client) Stream(ctx context.Context, agentID string, input []*Message, opts ...RunOption) iter.Seq2[*Event, error] {
	o := runOpts(opts)
	req := &agentv1.StreamRequest{AgentId: agentID, Messages: input, ThreadId: o.threadID, Enqueue: o.enqueue, Background: true}
	return func(yield func(*Event, error) bool) {
		ctx, cancel := context.WithCancel(ctx)
		defer cancel()
		st, err := c.api.Stream(ctx, req)
		recv := func() (*Event, error) {
			if err != nil {
				return nil, err
			}
			m, err := st.Recv()
			return m.GetEvent(), err
		}
		c.follow(ctx, recv, "", "", !o.keep, yield)
	}
}

// Join yields a run's events after the event id afterEventID ("" from its
// first) until the run ends, re-joining after a dropped connection as
// Stream does. Stopping early leaves the run going.
func (c *Client) Join(ctx context.Context, runID, afterEventID string) iter.Seq2[*Event, error] {
	return func(yield func(*Event, error) bool) {
		ctx, cancel := context.WithCancel(ctx)
		defer cancel()
		c.follow(ctx, c.join(ctx, runID, afterEventID), runID, afterEventID, false, yield)
	}
}

// join opens JoinRun and returns its receive function; an error opening it
// is the function's first answer.
func (c *Client) join(ctx context.Context, runID, after string) func() (*Event, error) {
	st, err := c.api.JoinRun(ctx, &agentv1.JoinRunRequest{RunId: runID, AfterEventId: after})
	return func() (*Event, error) {
		if err != nil {
			return nil, err
		}
		m, err := st.Recv()
		return m.GetEvent(), err
	}
}

// follow yields the events recv returns, re-joining the run after a
// dropped connection. cancelOnStop cancels the run when it is left before
// its end.
func (c *Client) follow(ctx context.Context, recv func() (*Event, error), runID, lastID string, cancelOnStop bool, yield func(*Event, error) bool) {
	ended := false
	defer func() {
		if !ended && cancelOnStop && runID != "" {
			c.cancelAbandoned(ctx, runID)
		}
	}()
	failures := 0
	for {
		ev, err := recv()
		if err == nil {
			failures = 0
			if runID == "" {
				runID = ev.GetRunId()
			}
			if id := ev.GetId(); id != "" {
				lastID = id
			}
			if !yield(ev, nil) {
				return
			}
			continue
		}
		if errors.Is(err, io.EOF) {
			ended = true
			return
		}
		// Without a run id nothing can be re-joined: the connection was
		// lost before the run's first event.
		if ctx.Err() != nil || runID == "" || !dropped(err) || failures >= c.rejoin.attempts {
			yield(nil, err)
			return
		}
		failures++
		if !sleep(ctx, c.backoff(failures)) {
			yield(nil, status.FromContextError(ctx.Err()).Err())
			return
		}
		recv = c.join(ctx, runID, lastID)
	}
}

// dropped reports whether err is a lost connection rather than an answer.
func dropped(err error) bool { return status.Code(err) == codes.Unavailable }

// backoff is the wait before the nth re-join in a row, with jitter so that
// many clients cut at once do not come back at once.
func (c *Client) backoff(n int) time.Duration {
	d := c.rejoin.backoff
	for i := 1; i < n && d < MaxRejoinBackoff; i++ {
		d *= 2
	}
	d = min(d, MaxRejoinBackoff)
	if d <= 0 {
		return 0
	}
	return d/2 + rand.N(d/2+1)
}

func sleep(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
		return true
	}
}

// cancelAbandoned cancels a background run its stream's caller left. It
// runs after the caller's context may have ended, so it has its own bound.
func (c *Client) cancelAbandoned(ctx context.Context, runID string) {
	cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), cancelTimeout)
	defer cancel()
	_, _ = c.api.CancelRun(cctx, &agentv1.CancelRunRequest{RunId: runID})
}

// GetRun describes a run.
func (c *Client) GetRun(ctx context.Context, runID string) (*Run, error) {
	res, err := c.api.GetRun(ctx, &agentv1.GetRunRequest{RunId: runID})
	if err != nil {
		return nil, err
	}
	return res.GetRun(), nil
}

// CancelRun stops a run; tool calls in flight get a result that says so.
func (c *Client) CancelRun(ctx context.Context, runID string) (*Run, error) {
	res, err := c.api.CancelRun(ctx, &agentv1.CancelRunRequest{RunId: runID})
	if err != nil {
		return nil, err
	}
	return res.GetRun(), nil
}

// StopRun asks a run to stop gracefully, from any replica: the step in
// flight (a model call and the tool round it asked for) finishes and is
// saved, then the run ends with status "stopped" and a done event whose
// StopReason is "stopped". A run waiting for the user cannot be stopped
// (FailedPrecondition): answer it or cancel it.
func (c *Client) StopRun(ctx context.Context, runID string) (*Run, error) {
	res, err := c.api.StopRun(ctx, &agentv1.StopRunRequest{RunId: runID})
	if err != nil {
		return nil, err
	}
	return res.GetRun(), nil
}

// ContinueRun starts a new run on the thread of a stopped run, without a
// new message, and returns it; follow it with Join. A run that is not
// stopped, or whose thread changed since, is refused (FailedPrecondition).
func (c *Client) ContinueRun(ctx context.Context, runID string) (*Run, error) {
	res, err := c.api.ContinueRun(ctx, &agentv1.ContinueRunRequest{RunId: runID})
	if err != nil {
		return nil, err
	}
	return res.GetRun(), nil
}

// Resume continues a run that waits for approval of tool calls, or for the
// answer to its question (see Answer); a pending call without a decision
// is rejected.
func (c *Client) Resume(ctx context.Context, runID string, decisions ...*Decision) (*Run, error) {
	res, err := c.api.ResumeRun(ctx, &agentv1.ResumeRunRequest{RunId: runID, Decisions: decisions})
	if err != nil {
		return nil, err
	}
	return res.GetRun(), nil
}

// Approve lets a tool call run as the model asked.
func Approve(toolCallID string) *Decision {
	return &Decision{ToolCallId: toolCallID, Action: "approve"}
}

// Reject refuses a tool call; message is given to the model as its result.
func Reject(toolCallID, message string) *Decision {
	return &Decision{ToolCallId: toolCallID, Action: "reject", Message: message}
}

// Always makes an Approve, Reject or Edit decision one the run's thread
// remembers: later calls of the same tool (for an ACP agent, of the same
// kind) are approved or rejected without asking, in this run and the
// thread's next ones. An edit is remembered as an approval; its arguments
// apply to this call only. An answer cannot be "always".
//
//	c.Resume(ctx, runID, wick.Always(wick.Approve(call.GetId())))
func Always(d *Decision) *Decision {
	d.Always = true
	return d
}

// Answer answers the question of a pending ask_user call (an on_interrupt
// event QuestionOf returns); the answer is the call's result.
func Answer(toolCallID, answer string) *Decision {
	return &Decision{ToolCallId: toolCallID, Action: "answer", Message: answer}
}

// Edit runs a tool call with other arguments.
func Edit(toolCallID string, args map[string]any) (*Decision, error) {
	s, err := structpb.NewStruct(args)
	if err != nil {
		return nil, fmt.Errorf("wick: edit arguments: %w", err)
	}
	return &Decision{ToolCallId: toolCallID, Action: "edit", Args: s}, nil
}

// An event's data is typed by its kind: ev.GetPayload() holds it, in the
// field named after the kind (GetOnToolStart, GetDone, …), as
// wick.agent.v1.RunEventData defines them. The accessors below read the
// common ones.

// Delta is the text an on_chat_model_stream event adds to the answer (""
// for any other event).
func Delta(ev *Event) string { return ev.GetPayload().GetOnChatModelStream().GetDelta() }

// Thought is the text an on_thought_stream event adds to the agent's
// reasoning ("" for any other event); it is not part of the answer.
func Thought(ev *Event) string { return ev.GetPayload().GetOnThoughtStream().GetDelta() }

// StopReason is why a done event's run ended: "completed", or "stopped"
// for a run stopped by StopRun ("" for any other event).
func StopReason(ev *Event) string { return ev.GetPayload().GetDone().GetStopReason() }

// Interrupt is the data of an on_interrupt event: calls awaiting approval,
// or a question of the model's ask_user tool.
type Interrupt = agentv1.InterruptData

// QuestionOf returns an on_interrupt event's data when it asks the user a
// question (GetQuestion, GetChoices; answer GetToolCallId with Answer), or
// nil for an approval or another event.
func QuestionOf(ev *Event) *Interrupt {
	if in := ev.GetPayload().GetOnInterrupt(); in.GetKind() == "question" {
		return in
	}
	return nil
}

// PendingCalls returns the tool calls an on_interrupt event waits on (nil
// for any other event).
func PendingCalls(ev *Event) []*ToolCall {
	return ev.GetPayload().GetOnInterrupt().GetToolCalls()
}
