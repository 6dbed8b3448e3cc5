package langgraph

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	agentv1 "github.com/wick-agent/wick/gen/wick/agent/v1"
	"github.com/wick-agent/wick/services/gateway/internal/sse"
)

// runRequest is the body of a run (stream, wait) as the SDK sends it; the
// fields Wick has no use for (config, context, checkpoints, webhooks,
// interrupt_before/after …) are ignored.
type runRequest struct {
	AssistantID       string          `json:"assistant_id"`
	Input             json.RawMessage `json:"input"`
	Command           *command        `json:"command"`
	StreamMode        json.RawMessage `json:"stream_mode"`
	MultitaskStrategy string          `json:"multitask_strategy"`
	OnDisconnect      string          `json:"on_disconnect"`
	OnCompletion      string          `json:"on_completion"`
}

type command struct {
	Resume json.RawMessage `json:"resume"`
	Goto   json.RawMessage `json:"goto"`
	Update json.RawMessage `json:"update"`
}

// streamModes reads stream_mode (a string or a list); default values.
func streamModes(raw json.RawMessage) (map[string]bool, error) {
	var list []string
	if len(raw) > 0 && string(raw) != "null" {
		var one string
		if json.Unmarshal(raw, &one) == nil {
			list = []string{one}
		} else if err := json.Unmarshal(raw, &list); err != nil {
			return nil, errInput{"stream_mode is a string or a list of strings"}
		}
	}
	if len(list) == 0 {
		list = []string{modeValues}
	}
	modes := map[string]bool{}
	for _, m := range list {
		switch m {
		case modeValues, modeMessages, modeMessagesTuple, modeUpdates, modeEvents, modeCustom:
			modes[m] = true
		default:
			if !ignoredModes[m] {
				return nil, errInput{fmt.Sprintf("stream_mode %q: want values, messages, messages-tuple, updates, events, custom, debug, tasks or checkpoints", m)}
			}
		}
	}
	return modes, nil
}

// eventSource is a run's event stream: Stream's or JoinRun's.
type eventSource func() (*agentv1.StreamEvent, error)

// started is a run begun (or resumed) for a LangGraph run request.
type started struct {
	threadID, runID, agentID string
	tr                       *translator
	next                     eventSource
	// cancel, when set, cancels the run if the client leaves before its end.
	cancel bool
	// stateless runs' threads are deleted at their end.
	stateless bool
}

// start begins the run a request asks for: a new run with the input, or
// the resumption of the thread's interrupted run with the Command.
func (h *Handler) start(ctx context.Context, r *http.Request, threadID string, req runRequest, modes map[string]bool) (*started, error) {
	if req.AssistantID == "" {
		return nil, errInput{"assistant_id is required"}
	}
	if req.Command != nil {
		if threadID == "" {
			return nil, errInput{"a command resumes a thread's run: use /threads/{thread_id}/runs"}
		}
		return h.resume(ctx, r, threadID, req, modes)
	}
	input, err := inputMessages(req.Input)
	if err != nil {
		return nil, err
	}
	if len(input) == 0 {
		return nil, errInput{"input.messages is required: Wick runs an agent on a new message"}
	}
	base := values{Messages: []message{}, Todos: []todo{}, Files: map[string]fileData{}}
	if threadID != "" {
		resp, err := h.agent.GetThread(ctx, &agentv1.GetThreadRequest{ThreadId: threadID})
		switch {
		case err == nil:
			base = valuesOf(resp.GetThread())
		case status.Code(err) != codes.NotFound:
			return nil, err
		}
	}
	// Background: an interrupt ends the LangGraph run while Wick's run
	// waits for the Command; a client that leaves is handled by cancel.
	stream, err := h.agent.Stream(ctx, &agentv1.StreamRequest{AgentId: req.AssistantID, ThreadId: threadID, Messages: input,
		Enqueue: req.MultitaskStrategy == "enqueue", Background: true})
	if err != nil {
		return nil, err
	}
	first, err := stream.Recv()
	if err != nil {
		return nil, err
	}
	rs := first.GetEvent().GetPayload().GetOnRunStart()
	if rs == nil {
		return nil, status.Errorf(codes.Internal, "run began with %s, not on_run_start", first.GetEvent().GetEvent())
	}
	s := &started{threadID: rs.GetThreadId(), runID: rs.GetRunId(), agentID: req.AssistantID,
		cancel: req.OnDisconnect != "continue", stateless: threadID == "" && req.OnCompletion != "keep"}
	s.tr = newTranslator(s.threadID, s.runID, s.agentID, modes, base)
	s.tr.addInput(input)
	s.next = func() (*agentv1.StreamEvent, error) {
		m, err := stream.Recv()
		return m.GetEvent(), err
	}
	return s, nil
}

// resume decides the thread's interrupted run with the Command's resume
// value and follows it from its interrupt on.
func (h *Handler) resume(ctx context.Context, r *http.Request, threadID string, req runRequest, modes map[string]bool) (*started, error) {
	if len(req.Command.Goto) > 0 || len(req.Command.Update) > 0 {
		return nil, errInput{"command: only resume is supported (Wick's loop has no nodes to go to, and its state is not written by clients)"}
	}
	if len(req.Command.Resume) == 0 {
		return nil, errInput{"command.resume is required"}
	}
	value, id := req.Command.Resume, ""
	var keyed map[string]json.RawMessage
	if json.Unmarshal(value, &keyed) == nil && len(keyed) == 1 {
		for k, v := range keyed {
			if _, _, ok := parseInterruptID(k); ok {
				id, value = k, v
			}
		}
	}
	if id == "" {
		e, _ := h.memo.get(userOf(r), threadID)
		id = e.interrupt
	}
	runID, eventID, ok := parseInterruptID(id)
	if !ok {
		return nil, status.Errorf(codes.FailedPrecondition, "thread %s has no interrupt to resume", threadID)
	}
	got, err := h.agent.GetRun(ctx, &agentv1.GetRunRequest{RunId: runID})
	if err != nil {
		return nil, err
	}
	run := got.GetRun()
	if run.GetThreadId() != threadID {
		return nil, status.Errorf(codes.NotFound, "interrupt %s not found on thread %s", id, threadID)
	}
	if run.GetStatus() != "waiting_approval" {
		return nil, status.Errorf(codes.FailedPrecondition, "run %s is %s, not interrupted", runID, run.GetStatus())
	}
	ds, err := decisions(run.GetPending(), value)
	if err != nil {
		return nil, err
	}
	base := values{Messages: []message{}, Todos: []todo{}, Files: map[string]fileData{}}
	if resp, err := h.agent.GetThread(ctx, &agentv1.GetThreadRequest{ThreadId: threadID}); err == nil {
		base = valuesOf(resp.GetThread())
	}
	if _, err := h.agent.ResumeRun(ctx, &agentv1.ResumeRunRequest{RunId: runID, Decisions: ds}); err != nil {
		return nil, err
	}
	h.memo.update(userOf(r), threadID, func(e *memoEntry) { e.interrupt = "" })
	return h.follow(ctx, run, eventID, modes, base, req.OnDisconnect != "continue")
}

// follow joins a run's events after eventID.
func (h *Handler) follow(ctx context.Context, run *agentv1.Run, eventID string, modes map[string]bool, base values, cancel bool) (*started, error) {
	stream, err := h.agent.JoinRun(ctx, &agentv1.JoinRunRequest{RunId: run.GetRunId(), AfterEventId: eventID})
	if err != nil {
		return nil, err
	}
	s := &started{threadID: run.GetThreadId(), runID: run.GetRunId(), agentID: run.GetAgentId(), cancel: cancel}
	s.tr = newTranslator(s.threadID, s.runID, s.agentID, modes, base)
	s.next = func() (*agentv1.StreamEvent, error) {
		m, err := stream.Recv()
		return m.GetEvent(), err
	}
	return s, nil
}

// outcome is how a LangGraph run ended.
type outcome struct {
	interrupt *interrupt
	err       *agentv1.ErrorData
}

// drive translates the run's events until its LangGraph end, handing each
// event's frames to emit with the event's id.
func (h *Handler) drive(ctx context.Context, r *http.Request, s *started, emit func(fs []frame, id string) error) (outcome, error) {
	for {
		ev, err := s.next()
		if err != nil {
			if errors.Is(err, io.EOF) {
				return outcome{}, status.Error(codes.Unavailable, "the run's stream ended before the run")
			}
			return outcome{}, err
		}
		fs, end, err := s.tr.event(ev)
		if err != nil {
			return outcome{}, err
		}
		if err := emit(fs, ev.GetId()); err != nil {
			return outcome{}, err
		}
		if !end {
			continue
		}
		var o outcome
		switch k := ev.GetPayload().GetKind().(type) {
		case *agentv1.RunEventData_OnInterrupt:
			in := newInterrupt(s.runID, ev.GetId(), k.OnInterrupt)
			o.interrupt = &in
			h.memo.update(userOf(r), s.threadID, func(e *memoEntry) { e.interrupt = in.ID })
		case *agentv1.RunEventData_Error:
			o.err = k.Error
		}
		return o, nil
	}
}

// finalValues is the thread's state at the run's end (with the interrupt
// it waits at).
func (h *Handler) finalValues(ctx context.Context, s *started, o outcome) any {
	v := s.tr.state
	if resp, err := h.agent.GetThread(ctx, &agentv1.GetThreadRequest{ThreadId: s.threadID}); err == nil {
		v = valuesOf(resp.GetThread())
	}
	if o.interrupt != nil {
		// The saved state holds only answered calls; the waiting ones are
		// in the streamed state.
		v = s.tr.state
		v.Interrupt = []interrupt{*o.interrupt}
	}
	return v
}

// afterRun cancels a run the client left (unless it asked to continue) and
// deletes a stateless run's thread.
func (h *Handler) afterRun(ctx context.Context, s *started, ended bool, o outcome) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
	defer cancel()
	if !ended && s.cancel {
		if _, err := h.agent.CancelRun(ctx, &agentv1.CancelRunRequest{RunId: s.runID}); err != nil {
			h.log.WarnContext(ctx, "cancel the run of a client that left", "run_id", s.runID, "error", err)
		}
	}
	if ended && s.stateless && o.interrupt == nil {
		if _, err := h.agent.DeleteThread(ctx, &agentv1.DeleteThreadRequest{ThreadId: s.threadID}); err != nil {
			h.log.WarnContext(ctx, "delete a stateless run's thread", "thread_id", s.threadID, "error", err)
		}
	}
}

func setRunHeaders(w http.ResponseWriter, s *started) {
	loc := "/threads/" + s.threadID + "/runs/" + s.runID
	w.Header().Set("Content-Location", loc)
	w.Header().Set("Location", loc+"/stream")
}

func (h *Handler) streamRun(w http.ResponseWriter, r *http.Request) {
	var req runRequest
	if err := readBody(r, &req); err != nil {
		h.writeErr(w, r, err)
		return
	}
	modes, err := streamModes(req.StreamMode)
	if err != nil {
		h.writeErr(w, r, err)
		return
	}
	s, err := h.start(r.Context(), r, r.PathValue("thread_id"), req, modes)
	if err != nil {
		h.writeErr(w, r, err)
		return
	}
	setRunHeaders(w, s)
	var initial []frame
	if modes[modeValues] && req.Command == nil {
		initial = append(initial, s.tr.valuesFrame())
	}
	h.serveStream(w, r, s, initial)
}

// serveStream writes the run's LangGraph stream: metadata, the initial
// frames, the run's frames, and the final values.
func (h *Handler) serveStream(w http.ResponseWriter, r *http.Request, s *started, initial []frame) {
	sw := sse.NewWriter(w, h.heartbeat)
	defer sw.Close()
	enc := newEncoder(sw)
	write := func(fs []frame, id string) error {
		if len(fs) == 0 {
			return nil
		}
		for i, f := range fs {
			fid := ""
			if i == len(fs)-1 {
				fid = id
			}
			if err := enc.frame(f, fid); err != nil {
				return err
			}
		}
		return sw.FlushError()
	}
	meta := frame{"metadata", map[string]string{"run_id": s.runID, "thread_id": s.threadID}}
	if err := write(append([]frame{meta}, initial...), ""); err != nil {
		h.afterRun(r.Context(), s, false, outcome{})
		return
	}
	o, err := h.drive(r.Context(), r, s, write)
	if err != nil {
		if r.Context().Err() == nil {
			b := statusBody(h, r, err)
			_ = write([]frame{{"error", b}}, "")
		}
		h.afterRun(r.Context(), s, false, outcome{})
		return
	}
	if s.tr.modes[modeValues] && o.err == nil && o.interrupt == nil {
		// The thread as saved, which a later read of its state returns.
		_ = write([]frame{{modeValues, h.finalValues(r.Context(), s, o)}}, "")
	}
	h.afterRun(r.Context(), s, true, o)
}

// statusBody is LangGraph's error event data for a failure of the stream
// itself (not of the run).
func statusBody(h *Handler, r *http.Request, err error) map[string]string {
	st := status.Convert(err)
	return map[string]string{"error": st.Code().String(), "message": messageFor(h, r, err)}
}

func messageFor(h *Handler, r *http.Request, err error) string {
	rec := &detailRecorder{header: http.Header{}}
	h.writeErr(rec, r, err)
	var d struct {
		Detail string `json:"detail"`
	}
	_ = json.Unmarshal([]byte(rec.body.String()), &d)
	return d.Detail
}

type detailRecorder struct {
	header http.Header
	body   strings.Builder
}

func (d *detailRecorder) Header() http.Header         { return d.header }
func (d *detailRecorder) WriteHeader(int)             {}
func (d *detailRecorder) Write(p []byte) (int, error) { return d.body.Write(p) }

func (h *Handler) waitRun(w http.ResponseWriter, r *http.Request) {
	var req runRequest
	if err := readBody(r, &req); err != nil {
		h.writeErr(w, r, err)
		return
	}
	s, err := h.start(r.Context(), r, r.PathValue("thread_id"), req, map[string]bool{})
	if err != nil {
		h.writeErr(w, r, err)
		return
	}
	h.serveWait(w, r, s)
}

// serveWait answers with the run's final values, or its error as
// {"__error__": {error, message}}.
func (h *Handler) serveWait(w http.ResponseWriter, r *http.Request, s *started) {
	setRunHeaders(w, s)
	o, err := h.drive(r.Context(), r, s, func([]frame, string) error { return nil })
	if err != nil {
		h.afterRun(r.Context(), s, false, outcome{})
		h.writeErr(w, r, err)
		return
	}
	var body any
	if o.err != nil {
		body = map[string]any{"__error__": map[string]string{"error": errorName(o.err.GetCode()), "message": o.err.GetMessage()}}
	} else {
		body = h.finalValues(r.Context(), s, o)
	}
	h.afterRun(r.Context(), s, true, o)
	writeJSON(w, http.StatusOK, body)
}

// runOf reads a run of the path's thread; a run of another thread is not found.
func (h *Handler) runOf(r *http.Request) (*agentv1.Run, error) {
	resp, err := h.agent.GetRun(r.Context(), &agentv1.GetRunRequest{RunId: r.PathValue("run_id")})
	if status.Code(err) == codes.InvalidArgument {
		return nil, status.Errorf(codes.NotFound, "run %s not found", r.PathValue("run_id"))
	}
	if err != nil {
		return nil, err
	}
	if resp.GetRun().GetThreadId() != r.PathValue("thread_id") {
		return nil, status.Errorf(codes.NotFound, "run %s not found on thread %s", r.PathValue("run_id"), r.PathValue("thread_id"))
	}
	return resp.GetRun(), nil
}

// runStatus is LangGraph's name for a Wick run's status.
func runStatus(s string) string {
	switch s {
	case "running":
		return "running"
	case "waiting_approval":
		return "interrupted"
	case "done", "stopped":
		return "success"
	case "cancelled":
		return "interrupted"
	}
	return "error"
}

func (h *Handler) getRun(w http.ResponseWriter, r *http.Request) {
	run, err := h.runOf(r)
	if err != nil {
		h.writeErr(w, r, err)
		return
	}
	at := epoch
	if t := run.GetCreatedAt(); t != nil {
		at = t.AsTime().UTC().Format(time.RFC3339Nano)
	}
	writeJSON(w, http.StatusOK, map[string]any{
		"run_id": run.GetRunId(), "thread_id": run.GetThreadId(), "assistant_id": run.GetAgentId(),
		"created_at": at, "updated_at": at, "status": runStatus(run.GetStatus()), "metadata": map[string]any{},
		"multitask_strategy": "reject",
	})
}

// joinStream re-joins a run's stream after Last-Event-ID (from its start
// without one), in the stream modes asked (values and messages-tuple by
// default: Wick does not keep the modes a run was started with).
func (h *Handler) joinStream(w http.ResponseWriter, r *http.Request) {
	run, err := h.runOf(r)
	if err != nil {
		h.writeErr(w, r, err)
		return
	}
	q := r.URL.Query()["stream_mode"]
	raw, _ := json.Marshal(q)
	if len(q) == 0 {
		raw = []byte(`["values","messages-tuple"]`)
	}
	modes, err := streamModes(raw)
	if err != nil {
		h.writeErr(w, r, err)
		return
	}
	s, err := h.follow(r.Context(), run, r.Header.Get("Last-Event-ID"), modes, h.baseOf(r, run.GetThreadId()), r.URL.Query().Get("cancel_on_disconnect") == "1")
	if err != nil {
		h.writeErr(w, r, err)
		return
	}
	h.serveStream(w, r, s, nil)
}

// baseOf is a thread's saved values, the base a joined stream grows.
func (h *Handler) baseOf(r *http.Request, threadID string) values {
	if resp, err := h.agent.GetThread(r.Context(), &agentv1.GetThreadRequest{ThreadId: threadID}); err == nil {
		return valuesOf(resp.GetThread())
	}
	return values{Messages: []message{}, Todos: []todo{}, Files: map[string]fileData{}}
}

// joinRun waits for the run's end and answers with the thread's values.
func (h *Handler) joinRun(w http.ResponseWriter, r *http.Request) {
	run, err := h.runOf(r)
	if err != nil {
		h.writeErr(w, r, err)
		return
	}
	s, err := h.follow(r.Context(), run, "", map[string]bool{}, h.baseOf(r, run.GetThreadId()), false)
	if err != nil {
		h.writeErr(w, r, err)
		return
	}
	h.serveWait(w, r, s)
}

func (h *Handler) cancelRun(w http.ResponseWriter, r *http.Request) {
	run, err := h.runOf(r)
	if err != nil {
		h.writeErr(w, r, err)
		return
	}
	if _, err := h.agent.CancelRun(r.Context(), &agentv1.CancelRunRequest{RunId: run.GetRunId()}); err != nil {
		h.writeErr(w, r, err)
		return
	}
	h.memo.update(userOf(r), run.GetThreadId(), func(e *memoEntry) { e.interrupt = "" })
	w.WriteHeader(http.StatusNoContent)
}
