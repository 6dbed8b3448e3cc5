package runexec

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/wick-agent/wick/llm"
	"github.com/wick-agent/wick/services/agent/internal/loop"
	"github.com/wick-agent/wick/services/agent/internal/runs"
	"github.com/wick-agent/wick/services/agent/internal/threads"
)

// approver is the loop.Approver of an interactive run: the run waits, as
// "waiting_approval", for decisions that Resume stores on any replica.
type approver struct{ r *Run }

// Approve implements loop.Approver.
func (a approver) Approve(ctx context.Context, _ string, calls []llm.ToolCall, announce func()) ([]loop.Decision, error) {
	return a.approve(ctx, calls, announce)
}

// approve marks the run waiting for decisions on calls, calls announce
// (when given) once Resume would accept them, and waits for them.
func (a approver) approve(ctx context.Context, calls []llm.ToolCall, announce func()) ([]loop.Decision, error) {
	r := a.r
	r.awaitUser(ctx, runs.AwaitApproval, calls)
	if announce != nil {
		announce()
	}
	d, err := r.nextDecisions(ctx, time.Now().Add(r.cfg.approvalTimeout))
	if errors.Is(err, errUserTimeout) {
		r.cancel(errApprovalTimeout)
		return nil, errApprovalTimeout
	}
	if err != nil {
		return nil, err
	}
	r.setStatus(ctx, runs.StatusRunning, nil, "")
	r.markThread(context.WithoutCancel(ctx), r.rec.ID, threads.MarkNone)
	return completeDecisions(calls, d), nil
}

// errUserTimeout is what nextDecisions returns at its deadline.
var errUserTimeout = errors.New("the user did not decide in time")

// nextDecisions waits for the decisions Resume stores for this run, on any
// replica: woken by a nudge, and polling in case a nudge was lost. It
// returns them, ctx's error, or errUserTimeout at the deadline.
func (r *Run) nextDecisions(ctx context.Context, deadline time.Time) ([]loop.Decision, error) {
	timeout := time.NewTimer(time.Until(deadline))
	defer timeout.Stop()
	poll := time.NewTicker(r.cfg.pollInterval)
	defer poll.Stop()
	for {
		d, err := r.runs.TakeDecisions(ctx, r.rec.ID)
		if err != nil {
			r.logger.Warn("read decisions", "run_id", r.rec.ID, "error", err)
		}
		if d != nil {
			return d, nil
		}
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-timeout.C:
			return nil, errUserTimeout
		case <-r.decide:
		case <-poll.C:
		}
	}
}

// completeDecisions gives every pending call a decision: a call the user
// did not decide is rejected.
func completeDecisions(calls []llm.ToolCall, d []loop.Decision) []loop.Decision {
	byID := map[string]loop.Decision{}
	for _, x := range d {
		byID[x.ToolCallID] = x
	}
	out := make([]loop.Decision, 0, len(calls))
	for _, c := range calls {
		if x, ok := byID[c.ID]; ok {
			out = append(out, x)
		} else {
			out = append(out, loop.Decision{ToolCallID: c.ID, Action: loop.ActionReject, Message: "no decision was given for this call"})
		}
	}
	return out
}

// Resume stores the user's decisions on the pending tool calls of a run
// waiting for approval and wakes the run when this replica executes it;
// its owner, on any replica, picks them up. The snapshot is the record as
// it was before the decisions.
func (e *Executor) Resume(ctx context.Context, user, runID string, decisions []loop.Decision) (*Snapshot, error) {
	rec, err := e.own(ctx, user, runID)
	if err != nil {
		return nil, err
	}
	if rec.Status != runs.StatusWaiting {
		if answers(decisions) {
			return nil, fmt.Errorf("run %s is %s and asked no question: %w", rec.ID, rec.Status, ErrNotWaiting)
		}
		return nil, fmt.Errorf("run %s is %s, %w", rec.ID, rec.Status, ErrNotWaiting)
	}
	if err := checkDecisions(rec, decisions); err != nil {
		return nil, err
	}
	if err := e.runs.PutDecisions(ctx, rec.ID, decisions); err != nil {
		return nil, fmt.Errorf("store decisions of run %s: %w", rec.ID, err)
	}
	if r := e.lookup(rec.ID); r != nil {
		signal(r.decide)
	}
	return e.snapshot(ctx, rec), nil
}

// answers reports whether any decision is an answer to a question.
func answers(decisions []loop.Decision) bool {
	for _, d := range decisions {
		if d.Action == ActionAnswer {
			return true
		}
	}
	return false
}

// checkDecisions accepts decisions on the run's pending calls only, each
// with a known action; an edit carries the new arguments; any of them may
// be "always". A run waiting for an answer takes exactly one: the answer
// to its question, never "always".
func checkDecisions(rec *runs.Run, decisions []loop.Decision) error {
	for i, d := range decisions {
		if d.Always && d.Action == ActionAnswer {
			return invalid(fmt.Sprintf("decisions[%d].always", i), `an answer is given once; always applies to "approve", "reject" and "edit"`)
		}
	}
	if rec.Awaiting == runs.AwaitAnswer {
		return checkAnswer(rec, decisions)
	}
	if answers(decisions) {
		return fmt.Errorf("run %s waits for approval of tool calls and asked no question; decide with approve, reject or edit: %w", rec.ID, ErrNotWaiting)
	}
	pending := map[string]bool{}
	for _, c := range rec.Pending {
		pending[c.ID] = true
	}
	for i, d := range decisions {
		field := fmt.Sprintf("decisions[%d]", i)
		if !pending[d.ToolCallID] {
			return invalid(field+".tool_call_id", fmt.Sprintf("%q is not a pending tool call of run %s", d.ToolCallID, rec.ID))
		}
		switch d.Action {
		case loop.ActionApprove, loop.ActionReject:
		case loop.ActionEdit:
			if d.Args == nil {
				return invalid(field+".args", `required when action is "edit"`)
			}
		default:
			return invalid(field+".action", fmt.Sprintf(`%q must be "approve", "reject" or "edit"`, d.Action))
		}
	}
	return nil
}

// checkAnswer accepts one non-empty answer to the run's pending question.
func checkAnswer(rec *runs.Run, decisions []loop.Decision) error {
	if len(decisions) != 1 {
		return invalid("decisions", fmt.Sprintf("run %s waits for one answer to its question, got %d decisions", rec.ID, len(decisions)))
	}
	d := decisions[0]
	if len(rec.Pending) != 1 || d.ToolCallID != rec.Pending[0].ID {
		return invalid("decisions[0].tool_call_id", fmt.Sprintf("%q is not the question run %s asked", d.ToolCallID, rec.ID))
	}
	if d.Action != ActionAnswer {
		return invalid("decisions[0].action", fmt.Sprintf(`run %s waits for an answer to its question: the action is %q`, rec.ID, ActionAnswer))
	}
	if strings.TrimSpace(d.Message) == "" {
		return invalid("decisions[0].message", "the answer is required")
	}
	if len(d.Message) > maxAnswerChars {
		return invalid("decisions[0].message", fmt.Sprintf("at most %d characters", maxAnswerChars))
	}
	return nil
}

// permissions is the acp.Approver of an interactive ACP agent's run: its
// permission requests wait for the user as tool calls do. The interrupt
// event goes out only once the run waits, so a client that answers it at
// once is never told the run is not waiting.
type permissions struct{ r *Run }

// Approve implements acp.Approver.
func (p permissions) Approve(ctx context.Context, call llm.ToolCall, announce func()) (loop.Decision, error) {
	d, err := approver(p).approve(ctx, []llm.ToolCall{call}, announce)
	if err != nil {
		return loop.Decision{}, err
	}
	return d[0], nil
}
