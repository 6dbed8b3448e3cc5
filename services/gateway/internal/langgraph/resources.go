package langgraph

import (
	"context"
	"crypto/rand"
	"fmt"
	"net/http"
	"strconv"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	agentv1 "github.com/wick-agent/wick/gen/wick/agent/v1"
)

// assistant is LangGraph's Assistant: a Wick agent, whose id is also its
// graph's.
type assistant struct {
	AssistantID string         `json:"assistant_id"`
	GraphID     string         `json:"graph_id"`
	Config      map[string]any `json:"config"`
	Context     map[string]any `json:"context"`
	CreatedAt   string         `json:"created_at"`
	UpdatedAt   string         `json:"updated_at"`
	Metadata    map[string]any `json:"metadata"`
	Version     int            `json:"version"`
	Name        string         `json:"name"`
	Description *string        `json:"description"`
}

func assistantOf(a *agentv1.Agent) assistant {
	name := a.GetName()
	if name == "" {
		name = a.GetAgentId()
	}
	md := map[string]any{"template": a.GetTemplate()}
	if ap := a.GetApproval(); ap != "" {
		md["approval"] = ap
	}
	return assistant{AssistantID: a.GetAgentId(), GraphID: a.GetAgentId(), Config: map[string]any{}, Context: map[string]any{},
		CreatedAt: epoch, UpdatedAt: epoch, Metadata: md, Version: 1, Name: name}
}

// page is the limit/offset window LangGraph's searches take (default 10).
type page struct {
	Limit  *int `json:"limit"`
	Offset int  `json:"offset"`
}

func window[T any](items []T, p page) []T {
	limit := 10
	if p.Limit != nil {
		limit = *p.Limit
	}
	if p.Offset >= len(items) || p.Offset < 0 {
		return []T{}
	}
	items = items[p.Offset:]
	if limit >= 0 && limit < len(items) {
		items = items[:limit]
	}
	return items
}

type assistantQuery struct {
	page
	GraphID  string         `json:"graph_id"`
	Name     string         `json:"name"`
	Metadata map[string]any `json:"metadata"`
}

func (h *Handler) assistants(r *http.Request) ([]assistant, error) {
	var q assistantQuery
	if err := readBody(r, &q); err != nil {
		return nil, err
	}
	resp, err := h.agent.ListAgents(r.Context(), &agentv1.ListAgentsRequest{})
	if err != nil {
		return nil, err
	}
	out := []assistant{}
	for _, a := range resp.GetAgents() {
		as := assistantOf(a)
		if (q.GraphID != "" && q.GraphID != as.GraphID) || (q.Name != "" && q.Name != as.Name) || !metadataMatches(as.Metadata, q.Metadata) {
			continue
		}
		out = append(out, as)
	}
	return window(out, q.page), nil
}

func metadataMatches(have, want map[string]any) bool {
	for k, v := range want {
		if fmt.Sprint(have[k]) != fmt.Sprint(v) {
			return false
		}
	}
	return true
}

func (h *Handler) searchAssistants(w http.ResponseWriter, r *http.Request) {
	list, err := h.assistants(r)
	if err != nil {
		h.writeErr(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, list)
}

func (h *Handler) countAssistants(w http.ResponseWriter, r *http.Request) {
	list, err := h.assistants(r)
	if err != nil {
		h.writeErr(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, len(list))
}

func (h *Handler) agentOf(r *http.Request) (*agentv1.Agent, error) {
	resp, err := h.agent.GetAgent(r.Context(), &agentv1.GetAgentRequest{AgentId: r.PathValue("assistant_id")})
	if err != nil {
		return nil, err
	}
	return resp.GetAgent(), nil
}

func (h *Handler) getAssistant(w http.ResponseWriter, r *http.Request) {
	a, err := h.agentOf(r)
	if err != nil {
		h.writeErr(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, assistantOf(a))
}

// getGraph draws Wick's loop as the graph LangGraph's prebuilt ReAct agent
// has: the model, then tools while it calls some.
func (h *Handler) getGraph(w http.ResponseWriter, r *http.Request) {
	if _, err := h.agentOf(r); err != nil {
		h.writeErr(w, r, err)
		return
	}
	node := func(id string) map[string]any { return map[string]any{"id": id, "type": "runnable", "data": id} }
	edge := func(s, t string, cond bool) map[string]any {
		return map[string]any{"source": s, "target": t, "conditional": cond}
	}
	writeJSON(w, http.StatusOK, map[string]any{
		"nodes": []any{node("__start__"), node(nodeAgent), node(nodeTools), node("__end__")},
		"edges": []any{edge("__start__", nodeAgent, false), edge(nodeAgent, nodeTools, true), edge(nodeAgent, "__end__", true), edge(nodeTools, nodeAgent, false)},
	})
}

// stateSchema is the JSON schema of a thread's values.
var stateSchema = map[string]any{
	"title": "AgentState", "type": "object",
	"properties": map[string]any{
		"messages": map[string]any{"type": "array", "items": map[string]any{"type": "object"}},
		"todos":    map[string]any{"type": "array", "items": map[string]any{"type": "object"}},
		"files":    map[string]any{"type": "object"},
	},
	"required": []string{"messages"},
}

func (h *Handler) getSchemas(w http.ResponseWriter, r *http.Request) {
	a, err := h.agentOf(r)
	if err != nil {
		h.writeErr(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{
		"graph_id": a.GetAgentId(), "input_schema": stateSchema, "output_schema": stateSchema, "state_schema": stateSchema,
		"config_schema": map[string]any{"title": "Configurable", "type": "object", "properties": map[string]any{}}, "context_schema": nil,
	})
}

func (h *Handler) getSubgraphs(w http.ResponseWriter, r *http.Request) {
	if _, err := h.agentOf(r); err != nil {
		h.writeErr(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{})
}

// thread is LangGraph's Thread.
type thread struct {
	ThreadID       string                 `json:"thread_id"`
	CreatedAt      string                 `json:"created_at"`
	UpdatedAt      string                 `json:"updated_at"`
	StateUpdatedAt string                 `json:"state_updated_at"`
	Metadata       map[string]any         `json:"metadata"`
	Status         string                 `json:"status"`
	Values         any                    `json:"values"`
	Interrupts     map[string][]interrupt `json:"interrupts"`
	Config         map[string]any         `json:"config"`
	Error          any                    `json:"error"`
}

// threadStatus is LangGraph's name for a Wick thread's status.
func threadStatus(s string) string {
	switch s {
	case "running":
		return "busy"
	case "interrupted", "error":
		return s
	}
	return "idle"
}

func newThreadID() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	return fmt.Sprintf("%x-%x-%x-%x-%x", b[0:4], b[4:6], b[6:8], b[8:10], b[10:])
}

func (h *Handler) createThread(w http.ResponseWriter, r *http.Request) {
	var req struct {
		ThreadID string         `json:"thread_id"`
		Metadata map[string]any `json:"metadata"`
		IfExists string         `json:"if_exists"`
	}
	if err := readBody(r, &req); err != nil {
		h.writeErr(w, r, err)
		return
	}
	if req.ThreadID != "" {
		st, err := h.agent.GetThread(r.Context(), &agentv1.GetThreadRequest{ThreadId: req.ThreadID})
		switch {
		case err == nil && req.IfExists == "do_nothing":
			h.writeThread(w, r, st.GetThread(), "", nil)
			return
		case err == nil:
			writeDetail(w, http.StatusConflict, fmt.Sprintf("thread %s already exists", req.ThreadID))
			return
		case status.Code(err) != codes.NotFound:
			h.writeErr(w, r, err)
			return
		}
	} else {
		req.ThreadID = newThreadID()
	}
	h.memo.update(userOf(r), req.ThreadID, func(e *memoEntry) { e.created, e.metadata = true, req.Metadata })
	writeJSON(w, http.StatusOK, h.createdThread(req.ThreadID, req.Metadata, time.Now()))
}

// createdThread is a thread created but not yet run: Wick has no state for it.
func (h *Handler) createdThread(id string, md map[string]any, at time.Time) thread {
	if md == nil {
		md = map[string]any{}
	}
	ts := at.UTC().Format(time.RFC3339Nano)
	return thread{ThreadID: id, CreatedAt: ts, UpdatedAt: ts, StateUpdatedAt: ts, Metadata: md, Status: "idle",
		Values: map[string]any{}, Interrupts: map[string][]interrupt{}, Config: map[string]any{}}
}

// loadThread reads a thread's state and summary; a thread created here
// and not yet run reads as empty (nil, ok).
func (h *Handler) loadThread(r *http.Request, id string) (*agentv1.GetThreadResponse, memoEntry, error) {
	e, known := h.memo.get(userOf(r), id)
	resp, err := h.agent.GetThread(r.Context(), &agentv1.GetThreadRequest{ThreadId: id})
	if status.Code(err) == codes.NotFound && known && (e.created || e.interrupt != "") {
		return nil, e, nil
	}
	if status.Code(err) == codes.InvalidArgument {
		// A malformed id names no thread.
		return nil, e, status.Errorf(codes.NotFound, "thread %s not found", id)
	}
	if err != nil {
		return nil, e, err
	}
	return resp, e, nil
}

// pending is the interrupt the thread's run waits at, if this gateway saw it
// and the run still waits.
func (h *Handler) pending(r *http.Request, id string, e memoEntry) (*agentv1.Run, *interrupt) {
	if e.interrupt == "" {
		return nil, nil
	}
	runID, _, _ := parseInterruptID(e.interrupt)
	resp, err := h.agent.GetRun(r.Context(), &agentv1.GetRunRequest{RunId: runID})
	if err != nil || resp.GetRun().GetStatus() != "waiting_approval" || resp.GetRun().GetThreadId() != id {
		return nil, nil
	}
	in := pendingInterrupt(resp.GetRun())
	in.ID = e.interrupt
	return resp.GetRun(), &in
}

func (h *Handler) writeThread(w http.ResponseWriter, r *http.Request, st *agentv1.AgentState, summaryStatus string, e *memoEntry) {
	writeJSON(w, http.StatusOK, h.threadOf(r, st, summaryStatus, e))
}

func (h *Handler) threadOf(r *http.Request, st *agentv1.AgentState, summaryStatus string, e *memoEntry) thread {
	ts := timestamp(st)
	md := map[string]any{}
	if e != nil {
		for k, v := range e.metadata {
			md[k] = v
		}
	}
	md["graph_id"], md["assistant_id"] = st.GetAgentId(), st.GetAgentId()
	t := thread{ThreadID: st.GetThreadId(), CreatedAt: ts, UpdatedAt: ts, StateUpdatedAt: ts, Metadata: md,
		Status: threadStatus(summaryStatus), Values: valuesOf(st), Interrupts: map[string][]interrupt{}, Config: map[string]any{}}
	if e != nil {
		if _, in := h.pending(r, st.GetThreadId(), *e); in != nil {
			t.Status = "interrupted"
			t.Interrupts[in.ID] = []interrupt{*in}
		}
	}
	return t
}

func (h *Handler) getThread(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("thread_id")
	resp, e, err := h.loadThread(r, id)
	if err != nil {
		h.writeErr(w, r, err)
		return
	}
	if resp == nil {
		// Created here, or a first run waiting before its first save.
		t := h.createdThread(id, e.metadata, e.at)
		if _, in := h.pending(r, id, e); in != nil {
			t.Status = "interrupted"
			t.Interrupts[in.ID] = []interrupt{*in}
		}
		writeJSON(w, http.StatusOK, t)
		return
	}
	writeJSON(w, http.StatusOK, h.threadOf(r, resp.GetThread(), resp.GetSummary().GetStatus(), &e))
}

// allThreads reads every page of the user's threads of agentID (all agents
// when empty): a search filters and counts what the agent service does
// not.
func (h *Handler) allThreads(ctx context.Context, agentID string) ([]*agentv1.ThreadSummary, error) {
	var out []*agentv1.ThreadSummary
	req := &agentv1.ListThreadsRequest{AgentId: agentID, PageSize: maxThreadPage}
	for {
		resp, err := h.agent.ListThreads(ctx, req)
		if err != nil {
			return nil, err
		}
		out = append(out, resp.GetThreads()...)
		if resp.GetNextPageToken() == "" {
			return out, nil
		}
		req.PageToken = resp.GetNextPageToken()
	}
}

// maxThreadPage is the largest page ListThreads serves.
const maxThreadPage = 200

func (h *Handler) deleteThread(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("thread_id")
	_, e, err := h.loadThread(r, id)
	if err != nil {
		h.writeErr(w, r, err)
		return
	}
	if _, err := h.agent.DeleteThread(r.Context(), &agentv1.DeleteThreadRequest{ThreadId: id}); err != nil && !(e.created && status.Code(err) == codes.NotFound) {
		h.writeErr(w, r, err)
		return
	}
	h.memo.forget(userOf(r), id)
	w.WriteHeader(http.StatusNoContent)
}

type threadQuery struct {
	page
	IDs      []string       `json:"ids"`
	Metadata map[string]any `json:"metadata"`
	Status   string         `json:"status"`
}

func (h *Handler) threads(r *http.Request) ([]*agentv1.ThreadSummary, error) {
	var q threadQuery
	if err := readBody(r, &q); err != nil {
		return nil, err
	}
	agentID, _ := q.Metadata["graph_id"].(string)
	if a, ok := q.Metadata["assistant_id"].(string); ok {
		agentID = a
	}
	list, err := h.allThreads(r.Context(), agentID)
	if err != nil {
		return nil, err
	}
	ids := map[string]bool{}
	for _, id := range q.IDs {
		ids[id] = true
	}
	out := []*agentv1.ThreadSummary{}
	for _, t := range list {
		md := map[string]any{"graph_id": t.GetAgentId(), "assistant_id": t.GetAgentId()}
		if (len(ids) > 0 && !ids[t.GetThreadId()]) || (q.Status != "" && q.Status != threadStatus(t.GetStatus())) || !metadataMatches(md, q.Metadata) {
			continue
		}
		out = append(out, t)
	}
	return window(out, q.page), nil
}

func (h *Handler) searchThreads(w http.ResponseWriter, r *http.Request) {
	list, err := h.threads(r)
	if err != nil {
		h.writeErr(w, r, err)
		return
	}
	out := make([]thread, 0, len(list))
	for _, t := range list {
		resp, err := h.agent.GetThread(r.Context(), &agentv1.GetThreadRequest{ThreadId: t.GetThreadId()})
		if status.Code(err) == codes.NotFound {
			continue // deleted since it was listed
		}
		if err != nil {
			h.writeErr(w, r, err)
			return
		}
		e, _ := h.memo.get(userOf(r), t.GetThreadId())
		out = append(out, h.threadOf(r, resp.GetThread(), t.GetStatus(), &e))
	}
	writeJSON(w, http.StatusOK, out)
}

func (h *Handler) countThreads(w http.ResponseWriter, r *http.Request) {
	list, err := h.threads(r)
	if err != nil {
		h.writeErr(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, len(list))
}

// threadState is LangGraph's ThreadState: the thread's values at its latest
// (and, for Wick, only) checkpoint.
type threadState struct {
	Values           any            `json:"values"`
	Next             []string       `json:"next"`
	Checkpoint       checkpoint     `json:"checkpoint"`
	Metadata         map[string]any `json:"metadata"`
	CreatedAt        *string        `json:"created_at"`
	ParentCheckpoint *checkpoint    `json:"parent_checkpoint"`
	Tasks            []task         `json:"tasks"`
}

type checkpoint struct {
	ThreadID      string         `json:"thread_id"`
	CheckpointNS  string         `json:"checkpoint_ns"`
	CheckpointID  *string        `json:"checkpoint_id"`
	CheckpointMap map[string]any `json:"checkpoint_map"`
}

type task struct {
	ID         string      `json:"id"`
	Name       string      `json:"name"`
	Error      *string     `json:"error"`
	Interrupts []interrupt `json:"interrupts"`
	Checkpoint *checkpoint `json:"checkpoint"`
	State      any         `json:"state"`
}

func (h *Handler) stateOf(r *http.Request, id string) (threadState, error) {
	resp, e, err := h.loadThread(r, id)
	if err != nil {
		return threadState{}, err
	}
	st := resp.GetThread()
	s := threadState{Values: map[string]any{}, Next: []string{}, Checkpoint: checkpoint{ThreadID: id}, Metadata: map[string]any{}, Tasks: []task{}}
	if _, in := h.pending(r, id, e); in != nil {
		s.Next = []string{nodeTools}
		s.Tasks = []task{{ID: in.ID, Name: nodeTools, Interrupts: []interrupt{*in}}}
	}
	if st == nil {
		return s, nil
	}
	v := valuesOf(st)
	s.Values = v
	ver := strconv.FormatInt(st.GetVersion(), 10)
	s.Checkpoint.CheckpointID = &ver
	at := timestamp(st)
	s.CreatedAt = &at
	s.Metadata = map[string]any{"graph_id": st.GetAgentId(), "assistant_id": st.GetAgentId(), "step": st.GetVersion(), "source": "loop"}
	return s, nil
}

func (h *Handler) getState(w http.ResponseWriter, r *http.Request) {
	s, err := h.stateOf(r, r.PathValue("thread_id"))
	if err != nil {
		h.writeErr(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, s)
}

// getHistory lists the thread's checkpoints: Wick keeps only the latest.
func (h *Handler) getHistory(w http.ResponseWriter, r *http.Request) {
	var q struct {
		Limit *int `json:"limit"`
	}
	if r.Method == http.MethodPost {
		if err := readBody(r, &q); err != nil {
			h.writeErr(w, r, err)
			return
		}
	}
	s, err := h.stateOf(r, r.PathValue("thread_id"))
	if err != nil {
		h.writeErr(w, r, err)
		return
	}
	if s.Checkpoint.CheckpointID == nil || (q.Limit != nil && *q.Limit <= 0) {
		writeJSON(w, http.StatusOK, []threadState{})
		return
	}
	writeJSON(w, http.StatusOK, []threadState{s})
}
