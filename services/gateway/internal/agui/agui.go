// Package agui serves AG-UI (the Agent–User Interaction protocol) over
// Wick's runs: POST /ag-ui/agents/{agent_id} takes a RunAgentInput and
// answers with the run's events as AG-UI events, one SSE `data:` frame
// each. The AG-UI thread is the caller's Wick thread of the same id; the
// run is a Wick run started (or resumed) through the agent service, so
// approvals, the run log and per-user scoping are the service's own.
package agui

import (
	"context"
	"errors"
	"log/slog"
	"net/http"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	agentv1 "github.com/wick-agent/wick/gen/wick/agent/v1"
	"github.com/wick-agent/wick/services/gateway/internal/httperr"
	"github.com/wick-agent/wick/services/gateway/internal/sse"
)

// cancelTimeout bounds the CancelRun sent for a client that went away.
const cancelTimeout = 10 * time.Second

// Option configures New.
type Option func(*Handler)

// WithLogger sets the logger of errors whose text the client does not see.
func WithLogger(l *slog.Logger) Option { return func(h *Handler) { h.log = l } }

// WithHeartbeat sets how long a stream may be idle before a comment frame
// (sse.DefaultHeartbeat by default).
func WithHeartbeat(d time.Duration) Option { return func(h *Handler) { h.heartbeat = d } }

// Handler serves AG-UI runs of the agents of the request's user.
type Handler struct {
	agent     agentv1.AgentServiceClient
	log       *slog.Logger
	heartbeat time.Duration
}

// New returns the handler of POST /ag-ui/agents/{agent_id}. agent must
// carry the user the request's context holds.
func New(agent agentv1.AgentServiceClient, opts ...Option) *Handler {
	h := &Handler{agent: agent, log: slog.Default(), heartbeat: sse.DefaultHeartbeat}
	for _, o := range opts {
		o(h)
	}
	return h
}

// eventSource is a run's event stream: Stream's or JoinRun's.
type eventSource func() (*agentv1.StreamEvent, error)

// ServeHTTP runs the agent and streams the run as AG-UI events.
func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost {
		w.Header().Set("Allow", http.MethodPost)
		httperr.Write(w, http.StatusMethodNotAllowed, codes.Unimplemented, "AG-UI runs are started with POST")
		return
	}
	agentID := r.PathValue("agent_id")
	req, err := parseInput(r.Body)
	if err != nil {
		httperr.Write(w, http.StatusBadRequest, codes.InvalidArgument, err.Error())
		return
	}
	ctx, cancel := context.WithCancel(r.Context())
	defer cancel()

	t := newTranslator(req.threadID, req.runID)
	var next eventSource
	if len(req.resume) > 0 {
		next, err = h.resume(ctx, agentID, req, t)
	} else {
		next, err = h.start(ctx, agentID, req)
	}
	var first *agentv1.StreamEvent
	if err == nil {
		first, err = next()
	}
	if err != nil {
		// Nothing went out yet: the client gets a status and a JSON body
		// (404 for an unknown agent or run, 400 for bad input).
		h.writeError(w, r, err)
		return
	}

	sw := sse.NewWriter(w, h.heartbeat)
	defer sw.Close()
	w.WriteHeader(http.StatusOK)
	buf := make([]byte, 0, 512)
	for ev := first; ; {
		if buf, err = t.frames(buf[:0], ev); err != nil {
			h.log.ErrorContext(ctx, "encode AG-UI event", "event", ev.GetEvent(), "error", err)
			buf, _ = t.fail(buf[:0], "internal error", "internal")
		}
		if len(buf) > 0 {
			if _, werr := sw.Write(buf); werr != nil {
				break
			}
			sw.Flush()
		}
		if t.ended {
			return
		}
		if ev, err = next(); err != nil {
			break
		}
	}
	if r.Context().Err() != nil {
		// The client went away: its run goes with it, as a Wick stream's
		// does. (The run is started in the background so that a run that
		// ends suspended, waiting for approval, outlives its stream.)
		h.cancelRun(r.Context(), t.wickRunID)
		return
	}
	st := status.Convert(err)
	if errors.Is(err, context.Canceled) {
		st = status.New(codes.Canceled, "the stream ended")
	}
	body := httperr.ForClient(ctx, h.log, st)
	if buf, err = t.fail(buf[:0], body.Message, body.Status); err == nil && len(buf) > 0 {
		_, _ = sw.Write(buf)
		sw.Flush()
	}
}

// start starts a run of the user's text on the thread. The run is a
// background one, so that a run suspended for approval survives the end of
// its stream; ServeHTTP cancels it when its client goes away.
func (h *Handler) start(ctx context.Context, agentID string, req request) (eventSource, error) {
	st, err := h.agent.Stream(ctx, &agentv1.StreamRequest{
		AgentId:    agentID,
		ThreadId:   req.threadID,
		Messages:   []*agentv1.Message{{Role: "user", Content: req.text}},
		Background: true,
	})
	if err != nil {
		return nil, err
	}
	return func() (*agentv1.StreamEvent, error) {
		m, err := st.Recv()
		return m.GetEvent(), err
	}, nil
}

func (h *Handler) cancelRun(ctx context.Context, runID string) {
	if runID == "" {
		return
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), cancelTimeout)
	defer cancel()
	if _, err := h.agent.CancelRun(ctx, &agentv1.CancelRunRequest{RunId: runID}); err != nil && status.Code(err) != codes.FailedPrecondition {
		h.log.WarnContext(ctx, "cancel the run of a client that went away", "run_id", runID, "error", err)
	}
}

func (h *Handler) writeError(w http.ResponseWriter, r *http.Request, err error) {
	var ie *inputError
	if errors.As(err, &ie) {
		httperr.Write(w, http.StatusBadRequest, codes.InvalidArgument, ie.Error())
		return
	}
	httperr.WriteStatus(w, r, h.log, err)
}
