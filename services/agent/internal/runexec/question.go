package runexec

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	agentv1 "github.com/wick-agent/wick/gen/wick/agent/v1"

	"google.golang.org/protobuf/proto"

	"github.com/wick-agent/wick/llm"
	"github.com/wick-agent/wick/services/agent/internal/loop"
	"github.com/wick-agent/wick/services/agent/internal/runs"
	"github.com/wick-agent/wick/services/agent/internal/threads"
	"github.com/wick-agent/wick/services/agent/internal/tools"
)

// AskUserTool is the built-in tool by which the model asks the user a
// question; an agent names it in its tools like any built-in.
const AskUserTool = tools.AskUser

// ActionAnswer is the decision action that answers a pending ask_user call;
// the decision's Message is the answer.
const ActionAnswer = "answer"

// InterruptQuestion is the data.kind of the on_interrupt event of a question.
const InterruptQuestion = "question"

// Bounds of one question.
const (
	// DefaultQuestionTimeout is how long a run waits for an answer.
	DefaultQuestionTimeout = 30 * time.Minute
	maxQuestionChars       = 4000
	maxChoices             = 20
	maxChoiceChars         = 200
	maxAnswerChars         = 20_000
)

// NoAnswerResult is the tool result when the user did not answer in time.
const NoAnswerResult = "the user did not answer within %s; go on without the answer, or end the turn and ask again later"

// asker is the ask_user tool of one run. The run waits for the answer as
// it waits for approval ("waiting_approval", awaiting an answer); the
// answer comes through Resume on any replica and becomes the tool result.
type asker struct {
	r *Run
	// mu asks one question at a time, so the run's pending call is one.
	mu sync.Mutex
}

// Name implements loop.Tool.
func (a *asker) Name() string { return AskUserTool }

// Description implements loop.Tool.
func (a *asker) Description() string {
	return "Ask the user a question and wait for the answer, which is this tool's result. " +
		"Use it when you cannot go on without the user's decision or information; offer choices when the answer is one of a few."
}

// Parameters implements loop.Tool.
func (a *asker) Parameters() map[string]any {
	return map[string]any{
		"type": "object",
		"properties": map[string]any{
			"question": map[string]any{"type": "string", "description": "The question, in one or two sentences.", "maxLength": maxQuestionChars},
			"choices": map[string]any{"type": "array", "items": map[string]any{"type": "string", "maxLength": maxChoiceChars}, "maxItems": maxChoices,
				"description": "Answers to offer; the user may still answer otherwise."},
		},
		"required": []string{"question"},
	}
}

// questionArgs checks the model's arguments against the bounds.
func questionArgs(args map[string]any) (string, []string, error) {
	q, _ := args["question"].(string)
	q = strings.TrimSpace(q)
	if q == "" {
		return "", nil, fmt.Errorf("question: required")
	}
	if len(q) > maxQuestionChars {
		return "", nil, fmt.Errorf("question: at most %d characters", maxQuestionChars)
	}
	raw, _ := args["choices"].([]any)
	if len(raw) > maxChoices {
		return "", nil, fmt.Errorf("choices: at most %d", maxChoices)
	}
	choices := make([]string, 0, len(raw))
	for i, v := range raw {
		c, ok := v.(string)
		if !ok || strings.TrimSpace(c) == "" || len(c) > maxChoiceChars {
			return "", nil, fmt.Errorf("choices[%d]: a non-empty string of at most %d characters", i, maxChoiceChars)
		}
		choices = append(choices, c)
	}
	return q, choices, nil
}

// Execute implements loop.Tool: it announces the question and waits for
// the answer, the question timeout or the end of the run.
func (a *asker) Execute(ctx context.Context, args map[string]any) (string, error) {
	q, choices, err := questionArgs(args)
	if err != nil {
		return "", err
	}
	info, _ := loop.CallInfoFromContext(ctx)
	call := llm.ToolCall{ID: info.ToolCallID, Name: AskUserTool, Args: args}
	a.mu.Lock()
	defer a.mu.Unlock()
	r := a.r
	// Waiting first: a client that answers the event at once finds the run
	// waiting for it.
	r.awaitUser(ctx, runs.AwaitAnswer, []llm.ToolCall{call})
	loop.Emit(ctx, loop.StreamEvent{Data: &agentv1.RunEventData{Kind: &agentv1.RunEventData_OnInterrupt{OnInterrupt: &agentv1.InterruptData{
		Kind: proto.String(InterruptQuestion), Question: proto.String(q), Choices: choices, ToolCallId: proto.String(call.ID),
		ToolCalls: loop.ToolCalls([]llm.ToolCall{call}),
	}}}})
	defer func() {
		// The question may end while its run goes on (answered, timed out,
		// or cancelled as not needed by tool_wait): the run runs again.
		if r.ctx.Err() == nil {
			live := context.WithoutCancel(ctx)
			r.setStatus(live, runs.StatusRunning, nil, "")
			r.markThread(live, r.rec.ID, threads.MarkNone)
		}
	}()
	deadline := time.Now().Add(r.cfg.questionTimeout)
	for {
		d, err := r.nextDecisions(ctx, deadline)
		if errors.Is(err, errUserTimeout) {
			return fmt.Sprintf(NoAnswerResult, r.cfg.questionTimeout), nil
		}
		if err != nil {
			return "", err
		}
		// Resume accepts only the answer to this call (checkAnswer).
		for _, x := range d {
			if x.ToolCallID == call.ID && x.Action == ActionAnswer {
				return x.Message, nil
			}
		}
	}
}

// WaitsForUser implements loop.UserWait: the question timeout, not the
// tool timeout, bounds the wait, and nobody approves a question.
func (a *asker) WaitsForUser() bool { return true }
