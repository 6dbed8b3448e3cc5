// Package langgraph serves LangGraph's Agent Server API (the part its SDK's
// Client and useStream use) over Wick's agent service: each agent is an
// assistant (and its graph), a Wick thread is a LangGraph thread, a run is
// a run, and a run's events are LangGraph's stream modes. Approvals and
// ask_user questions are interrupts, resumed with a Command.
package langgraph

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	agentv1 "github.com/wick-agent/wick/gen/wick/agent/v1"
	"github.com/wick-agent/wick/platform/identity"
	"github.com/wick-agent/wick/services/gateway/internal/httperr"
)

// AgentClient is the part of the agent service the API calls; the
// gateway's client, which signs the request's user onto every call.
type AgentClient interface {
	ListAgents(ctx context.Context, in *agentv1.ListAgentsRequest, opts ...grpc.CallOption) (*agentv1.ListAgentsResponse, error)
	GetAgent(ctx context.Context, in *agentv1.GetAgentRequest, opts ...grpc.CallOption) (*agentv1.GetAgentResponse, error)
	ListThreads(ctx context.Context, in *agentv1.ListThreadsRequest, opts ...grpc.CallOption) (*agentv1.ListThreadsResponse, error)
	GetThread(ctx context.Context, in *agentv1.GetThreadRequest, opts ...grpc.CallOption) (*agentv1.GetThreadResponse, error)
	DeleteThread(ctx context.Context, in *agentv1.DeleteThreadRequest, opts ...grpc.CallOption) (*agentv1.DeleteThreadResponse, error)
	Stream(ctx context.Context, in *agentv1.StreamRequest, opts ...grpc.CallOption) (grpc.ServerStreamingClient[agentv1.StreamResponse], error)
	JoinRun(ctx context.Context, in *agentv1.JoinRunRequest, opts ...grpc.CallOption) (grpc.ServerStreamingClient[agentv1.JoinRunResponse], error)
	GetRun(ctx context.Context, in *agentv1.GetRunRequest, opts ...grpc.CallOption) (*agentv1.GetRunResponse, error)
	CancelRun(ctx context.Context, in *agentv1.CancelRunRequest, opts ...grpc.CallOption) (*agentv1.CancelRunResponse, error)
	ResumeRun(ctx context.Context, in *agentv1.ResumeRunRequest, opts ...grpc.CallOption) (*agentv1.ResumeRunResponse, error)
}

// DefaultHeartbeat is how long a stream may be silent before a comment
// frame keeps it (and the SDK's idle detection) alive.
const DefaultHeartbeat = 15 * time.Second

// Option configures New.
type Option func(*Handler)

// WithLogger sets the logger of errors a client does not see in full.
func WithLogger(l *slog.Logger) Option { return func(h *Handler) { h.log = l } }

// WithHeartbeat sets the idle interval of streams' heartbeats.
func WithHeartbeat(d time.Duration) Option { return func(h *Handler) { h.heartbeat = d } }

// Handler serves the API; its paths are relative to where it is mounted.
type Handler struct {
	agent     AgentClient
	log       *slog.Logger
	heartbeat time.Duration
	memo      *memo
	mux       *http.ServeMux
}

// New returns the API over agent.
func New(agent AgentClient, opts ...Option) *Handler {
	h := &Handler{agent: agent, log: slog.Default(), heartbeat: DefaultHeartbeat, memo: newMemo(memoTTL, memoMax)}
	for _, o := range opts {
		o(h)
	}
	m := http.NewServeMux()
	m.HandleFunc("GET /info", h.info)
	m.HandleFunc("GET /ok", h.ok)
	m.HandleFunc("POST /assistants/search", h.searchAssistants)
	m.HandleFunc("POST /assistants/count", h.countAssistants)
	m.HandleFunc("GET /assistants/{assistant_id}", h.getAssistant)
	m.HandleFunc("GET /assistants/{assistant_id}/graph", h.getGraph)
	m.HandleFunc("GET /assistants/{assistant_id}/schemas", h.getSchemas)
	m.HandleFunc("GET /assistants/{assistant_id}/subgraphs", h.getSubgraphs)
	m.HandleFunc("POST /threads", h.createThread)
	m.HandleFunc("POST /threads/search", h.searchThreads)
	m.HandleFunc("POST /threads/count", h.countThreads)
	m.HandleFunc("GET /threads/{thread_id}", h.getThread)
	m.HandleFunc("DELETE /threads/{thread_id}", h.deleteThread)
	m.HandleFunc("GET /threads/{thread_id}/state", h.getState)
	m.HandleFunc("POST /threads/{thread_id}/history", h.getHistory)
	m.HandleFunc("GET /threads/{thread_id}/history", h.getHistory)
	m.HandleFunc("POST /threads/{thread_id}/runs/stream", h.streamRun)
	m.HandleFunc("POST /threads/{thread_id}/runs/wait", h.waitRun)
	m.HandleFunc("POST /runs/stream", h.streamRun)
	m.HandleFunc("POST /runs/wait", h.waitRun)
	m.HandleFunc("GET /threads/{thread_id}/runs/{run_id}", h.getRun)
	m.HandleFunc("GET /threads/{thread_id}/runs/{run_id}/stream", h.joinStream)
	m.HandleFunc("GET /threads/{thread_id}/runs/{run_id}/join", h.joinRun)
	m.HandleFunc("POST /threads/{thread_id}/runs/{run_id}/cancel", h.cancelRun)
	h.mux = m
	return h
}

// ServeHTTP routes a request; a path or method the API does not have is
// answered in its error shape.
func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if _, pattern := h.mux.Handler(r); pattern != "" {
		h.mux.ServeHTTP(w, r)
		return
	}
	for _, m := range []string{http.MethodGet, http.MethodPost, http.MethodDelete} {
		probe := r.Clone(r.Context())
		probe.Method = m
		if _, p := h.mux.Handler(probe); p != "" {
			writeDetail(w, http.StatusMethodNotAllowed, "Method Not Allowed")
			return
		}
	}
	writeDetail(w, http.StatusNotFound, "Not Found")
}

// writeDetail answers with LangGraph's error body, {"detail": "…"}.
func writeDetail(w http.ResponseWriter, code int, detail string) {
	h := w.Header()
	h.Set("Content-Type", "application/json")
	h.Del("Cache-Control")
	h.Del("X-Accel-Buffering")
	w.WriteHeader(code)
	_ = json.NewEncoder(w).Encode(map[string]string{"detail": detail})
}

// httpStatus is the status LangGraph answers for what a gRPC code says.
func httpStatus(c codes.Code) int {
	switch c {
	case codes.NotFound, codes.PermissionDenied:
		// Another user's ids are as unknown as ids nobody has.
		return http.StatusNotFound
	case codes.InvalidArgument, codes.OutOfRange:
		return http.StatusUnprocessableEntity
	case codes.FailedPrecondition, codes.AlreadyExists, codes.Aborted:
		return http.StatusConflict
	case codes.Unauthenticated:
		return http.StatusUnauthorized
	case codes.ResourceExhausted:
		return http.StatusTooManyRequests
	case codes.Unavailable:
		return http.StatusServiceUnavailable
	case codes.DeadlineExceeded:
		return http.StatusGatewayTimeout
	case codes.Unimplemented:
		return http.StatusNotImplemented
	case codes.Canceled:
		return 499
	}
	return http.StatusInternalServerError
}

// writeErr answers with err's status and message; a message not written
// for clients is logged under the trace id and replaced by a plain one.
func (h *Handler) writeErr(w http.ResponseWriter, r *http.Request, err error) {
	var ie errInput
	if errors.As(err, &ie) {
		writeDetail(w, http.StatusUnprocessableEntity, ie.msg)
		return
	}
	st := status.Convert(err)
	if st.Code() == codes.PermissionDenied {
		st = status.New(codes.NotFound, "not found")
	}
	b := httperr.ForClient(r.Context(), h.log.With("path", r.URL.Path), st)
	writeDetail(w, httpStatus(st.Code()), b.Message)
}

func writeJSON(w http.ResponseWriter, code int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	_ = json.NewEncoder(w).Encode(v)
}

// readBody decodes a request's JSON body into v; an empty body leaves v as is.
func readBody(r *http.Request, v any) error {
	if r.Body == nil || r.ContentLength == 0 {
		return nil
	}
	dec := json.NewDecoder(r.Body)
	if err := dec.Decode(v); err != nil {
		if err.Error() == "EOF" {
			return nil
		}
		var mbe *http.MaxBytesError
		if errors.As(err, &mbe) {
			return status.Errorf(codes.ResourceExhausted, "request body larger than %d bytes", mbe.Limit)
		}
		return errInput{fmt.Sprintf("malformed JSON body: %s", err)}
	}
	return nil
}

func (h *Handler) info(w http.ResponseWriter, _ *http.Request) {
	writeJSON(w, http.StatusOK, map[string]any{
		"version": "wick", "langgraph_py_version": nil,
		"flags": map[string]any{"assistants": true, "crons": false, "langsmith": false, "langsmith_tracing_replicas": false},
	})
}

func (h *Handler) ok(w http.ResponseWriter, _ *http.Request) {
	writeJSON(w, http.StatusOK, map[string]bool{"ok": true})
}

// userOf is the request's user, for the memory of created threads and interrupts.
func userOf(r *http.Request) string {
	u, _ := identity.User(r.Context())
	return u
}
