package mcpserver

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	agentv1 "github.com/wick-agent/wick/gen/wick/agent/v1"
)

// Statuses of a call's result (its structured content's status).
const (
	statusCompleted       = "completed"
	statusStopped         = "stopped"
	statusWaitingApproval = "waiting_approval"
	statusWaitingAnswer   = "waiting_answer"
	statusFailed          = "failed"
)

// progressTail is how much of the reply so far a progress message shows.
const progressTail = 200

// result is a call's structured content.
type result struct {
	ThreadID string `json:"thread_id"`
	RunID    string `json:"run_id"`
	Status   string `json:"status"`
}

// call runs the agent of a tool call with its message and answers the
// run's final reply.
func (t *tools) call(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	name := req.Params.Name
	agent, err := t.find(ctx, name)
	if err != nil {
		return nil, err
	}
	if agent == nil {
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: fmt.Sprintf("unknown tool %q", name)}
	}
	in, err := decodeInput(req.Params.Arguments)
	if err != nil {
		// Bad arguments are the caller's (a model's) to correct: a tool error.
		return toolError(err.Error(), result{}), nil
	}

	// A background run keeps waiting for approval after this call has
	// returned; the call cancels it itself when it is cancelled.
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	stream, err := t.agents.Stream(ctx, &agentv1.StreamRequest{
		AgentId:    agent.GetAgentId(),
		ThreadId:   in.ThreadID,
		Messages:   []*agentv1.Message{{Role: "user", Content: in.Message}},
		Background: true,
	})
	if err != nil {
		return toolError(t.clientMessage(ctx, err), result{ThreadID: in.ThreadID}), nil
	}
	events := make(chan *agentv1.StreamEvent)
	recvErr := make(chan error, 1)
	go func() {
		for {
			resp, err := stream.Recv()
			if err != nil {
				recvErr <- err
				return
			}
			select {
			case events <- resp.GetEvent():
			case <-ctx.Done():
				recvErr <- ctx.Err()
				return
			}
		}
	}()

	r := &run{res: result{ThreadID: in.ThreadID}}
	p := newProgress(req.Session, req.Params.GetProgressToken(), t.progressInterval)
	tick := time.NewTicker(max(t.progressInterval, time.Millisecond))
	defer tick.Stop()
	for {
		select {
		case ev := <-events:
			msg, out := r.apply(ev)
			if out != nil {
				return out, nil
			}
			if msg != "" {
				p.update(ctx, msg)
			}
		case <-tick.C:
			p.flush(ctx)
		case err := <-recvErr:
			if ctx.Err() != nil || errors.Is(err, context.Canceled) {
				t.cancelRun(ctx, r.res.RunID)
				return nil, ctx.Err()
			}
			if errors.Is(err, io.EOF) {
				return toolError("the run's stream ended before the run did; follow it with GET /runs/"+r.res.RunID+"/events", r.failed()), nil
			}
			return toolError(t.clientMessage(ctx, err), r.failed()), nil
		}
	}
}

// cancelRun cancels the run of a cancelled call. The call's context is
// over, so the request goes out on its own bounded one.
func (t *tools) cancelRun(ctx context.Context, runID string) {
	if runID == "" {
		return
	}
	cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), t.cancelTimeout)
	defer cancel()
	if _, err := t.agents.CancelRun(cctx, &agentv1.CancelRunRequest{RunId: runID}); err != nil {
		t.log.WarnContext(ctx, "MCP call cancelled: cancel its run", "run_id", runID, "error", err)
	}
}

// decodeInput reads a call's arguments, strictly: a misspelt argument is
// an error the caller sees, not one silently dropped.
func decodeInput(raw json.RawMessage) (input, error) {
	var in input
	if len(bytes.TrimSpace(raw)) == 0 {
		return in, errors.New(`missing argument "message"`)
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&in); err != nil {
		return in, fmt.Errorf("bad arguments: %v (want {\"message\": string, \"thread_id\"?: string})", err)
	}
	if strings.TrimSpace(in.Message) == "" {
		return in, errors.New(`missing argument "message"`)
	}
	return in, nil
}

// run is what a call has seen of its run so far.
type run struct {
	res result
	// reply is the text of the model's latest answer: the reply when the
	// run ends.
	reply strings.Builder
	// afterTool is set once a tool starts: the next text belongs to a new
	// answer.
	afterTool bool
}

// failed is the structured content of a run that failed.
func (r *run) failed() result {
	res := r.res
	res.Status = statusFailed
	return res
}

// apply takes one event into the run. It returns the progress message the
// event gives, if any, and the call's result once the run is over or
// waits for the user.
func (r *run) apply(ev *agentv1.StreamEvent) (string, *mcp.CallToolResult) {
	if id := ev.GetRunId(); id != "" && r.res.RunID == "" {
		r.res.RunID = id
	}
	if id := ev.GetThreadId(); id != "" {
		r.res.ThreadID = id
	}
	d := ev.GetPayload()
	switch k := d.GetKind().(type) {
	case *agentv1.RunEventData_OnRunStart:
		if id := k.OnRunStart.GetThreadId(); id != "" {
			r.res.ThreadID = id
		}
		if id := k.OnRunStart.GetRunId(); id != "" {
			r.res.RunID = id
		}
		// The ids let a client follow the run in Wick while it goes on.
		return fmt.Sprintf("run %s started on thread %s", r.res.RunID, r.res.ThreadID), nil
	case *agentv1.RunEventData_OnChatModelStream:
		if r.afterTool {
			r.reply.Reset()
			r.afterTool = false
		}
		r.reply.WriteString(k.OnChatModelStream.GetDelta())
		return tail(r.reply.String(), progressTail), nil
	case *agentv1.RunEventData_OnThoughtStream:
		return "thinking: " + tail(k.OnThoughtStream.GetDelta(), progressTail), nil
	case *agentv1.RunEventData_OnToolStart:
		r.afterTool = true
		return "calling tool " + ev.GetName(), nil
	case *agentv1.RunEventData_OnToolEnd:
		if k.OnToolEnd.GetError() != "" {
			return "tool " + ev.GetName() + " failed", nil
		}
		return "tool " + ev.GetName() + " done", nil
	case *agentv1.RunEventData_OnSubagentStart:
		return "sub-agent " + k.OnSubagentStart.GetName() + " started", nil
	case *agentv1.RunEventData_OnSubagentEnd:
		return "sub-agent " + k.OnSubagentEnd.GetName() + " " + k.OnSubagentEnd.GetStatus(), nil
	case *agentv1.RunEventData_OnTaskStart:
		return "background task " + k.OnTaskStart.GetTool() + " started", nil
	case *agentv1.RunEventData_OnInterrupt:
		return "", r.interrupted(k.OnInterrupt)
	case *agentv1.RunEventData_Done:
		res := r.res
		res.Status = statusCompleted
		if k.Done.GetStopReason() == statusStopped {
			res.Status = statusStopped
		}
		return "", &mcp.CallToolResult{
			Content:           []mcp.Content{&mcp.TextContent{Text: r.reply.String()}},
			StructuredContent: res,
		}
	case *agentv1.RunEventData_Error:
		res := r.res
		res.Status = statusFailed
		if k.Error.GetCode() == "cancelled" {
			res.Status = "cancelled"
		}
		return "", toolError(fmt.Sprintf("the run failed (%s): %s", k.Error.GetCode(), k.Error.GetMessage()), res)
	}
	return "", nil
}

// interrupted is the result of a run that waits for the user: an MCP call
// cannot ask its caller, so it returns, saying how to go on in Wick. The
// run keeps waiting.
func (r *run) interrupted(in *agentv1.InterruptData) *mcp.CallToolResult {
	res := r.res
	var b strings.Builder
	if in.GetKind() == "question" {
		res.Status = statusWaitingAnswer
		fmt.Fprintf(&b, "The agent asks: %s", in.GetQuestion())
		if len(in.GetChoices()) > 0 {
			fmt.Fprintf(&b, " (choices: %s)", strings.Join(in.GetChoices(), "; "))
		}
		fmt.Fprintf(&b, "\nRun %s on thread %s waits for the answer: POST /runs/%s/resume with "+
			`{"decisions":[{"tool_call_id":%q,"action":"answer","message":"…"}]}`+
			", then follow it with GET /runs/%s/events; or cancel it with POST /runs/%s/cancel.",
			res.RunID, res.ThreadID, res.RunID, in.GetToolCallId(), res.RunID, res.RunID)
		return toolError(b.String(), res)
	}
	res.Status = statusWaitingApproval
	names := make([]string, 0, len(in.GetToolCalls()))
	for _, c := range in.GetToolCalls() {
		names = append(names, fmt.Sprintf("%s (call %s)", c.GetName(), c.GetId()))
	}
	fmt.Fprintf(&b, "The run needs approval of tool calls: %s.\n", strings.Join(names, ", "))
	fmt.Fprintf(&b, "Run %s on thread %s waits: approve or reject each call with POST /runs/%s/resume "+
		`{"decisions":[{"tool_call_id":"…","action":"approve"}]}`+
		" (or \"reject\"), then follow it with GET /runs/%s/events; or cancel it with POST /runs/%s/cancel.",
		res.RunID, res.ThreadID, res.RunID, res.RunID, res.RunID)
	return toolError(b.String(), res)
}

// toolError is a call's result that reports a failure to its caller.
func toolError(msg string, res result) *mcp.CallToolResult {
	if res.Status == "" {
		res.Status = statusFailed
	}
	return &mcp.CallToolResult{
		Content:           []mcp.Content{&mcp.TextContent{Text: msg}},
		StructuredContent: res,
		IsError:           true,
	}
}

// tail is the end of s, at most n runes of it. It reads s from its end, so
// that a long reply costs no more per token than a short one.
func tail(s string, n int) string {
	i := len(s)
	for range n {
		if i == 0 {
			return s
		}
		_, size := utf8.DecodeLastRuneInString(s[:i])
		i -= size
	}
	if i == 0 {
		return s
	}
	return "…" + s[i:]
}
