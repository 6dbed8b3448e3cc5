// Package a2a publishes each of the caller's Wick agents as an Agent2Agent
// (A2A 0.3, JSON-RPC binding) agent: an agent card, and message/send,
// message/stream, tasks/get, tasks/cancel and tasks/resubscribe over the
// agent service's runs. A thread is an A2A context and a run is a task
// (task id = run id), so there is no second run engine and the agent
// service's per-user scoping applies unchanged.
package a2a

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	agentv1 "github.com/wick-agent/wick/gen/wick/agent/v1"
	"github.com/wick-agent/wick/services/gateway/internal/httperr"
	"github.com/wick-agent/wick/services/gateway/internal/sse"
)

// Prefix is where the handler serves: Prefix+"{agent_id}" is an agent's
// JSON-RPC endpoint, and CardPath below it its card.
const (
	Prefix   = "/a2a/agents/"
	CardPath = "/.well-known/agent-card.json"
)

// askUserTool is the tool whose pending call asks the user a question.
const askUserTool = "ask_user"

// Option configures New.
type Option func(*Handler)

// WithLogger sets the logger of errors whose text a client does not see.
func WithLogger(l *slog.Logger) Option { return func(h *Handler) { h.log = l } }

// WithHeartbeat sets how long a stream may be idle before a comment frame.
func WithHeartbeat(d time.Duration) Option { return func(h *Handler) { h.heartbeat = d } }

// Handler serves the A2A routes. Requests must carry the authenticated
// user in their context, as the agent client asserts it to the service.
type Handler struct {
	agent     agentv1.AgentServiceClient
	log       *slog.Logger
	heartbeat time.Duration
	mux       *http.ServeMux
}

// New returns the handler over the agent service.
func New(agent agentv1.AgentServiceClient, opts ...Option) *Handler {
	h := &Handler{agent: agent, log: slog.Default(), heartbeat: sse.DefaultHeartbeat, mux: http.NewServeMux()}
	for _, o := range opts {
		o(h)
	}
	h.mux.HandleFunc("GET "+Prefix+"{agent_id}"+CardPath, h.serveCard)
	h.mux.HandleFunc("POST "+Prefix+"{agent_id}", h.serveRPC)
	h.mux.HandleFunc(Prefix, func(w http.ResponseWriter, _ *http.Request) {
		httperr.Write(w, http.StatusNotFound, codes.NotFound, "no such A2A route: an agent's endpoint is POST "+Prefix+"{agent_id}, its card GET "+Prefix+"{agent_id}"+CardPath)
	})
	return h
}

// ServeHTTP serves a request.
func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) { h.mux.ServeHTTP(w, r) }

// serveCard answers an agent's card; a card names the endpoint on the
// host the client reached, so it works behind any address of the gateway.
func (h *Handler) serveCard(w http.ResponseWriter, r *http.Request) {
	agentID := r.PathValue("agent_id")
	resp, err := h.agent.GetAgent(r.Context(), &agentv1.GetAgentRequest{AgentId: agentID})
	if err != nil {
		httperr.WriteStatus(w, r, h.log, err)
		return
	}
	// Tool descriptions make the skills readable; without them the names do.
	var defs []*agentv1.ToolDefinition
	if tools, err := h.agent.ListTools(r.Context(), &agentv1.ListToolsRequest{}); err == nil {
		defs = tools.GetTools()
	}
	card := Card(resp.GetAgent(), endpointURL(r, agentID), defs)
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(card)
}

// endpointURL is the absolute URL of an agent's JSON-RPC endpoint as the
// client reached the gateway.
func endpointURL(r *http.Request, agentID string) string {
	scheme := "http"
	if r.TLS != nil {
		scheme = "https"
	}
	return scheme + "://" + r.Host + Prefix + agentID
}

// Card is the agent card of a: its name, a description from its system
// prompt's first line, one "chat" skill, and one skill per tool.
func Card(a *agentv1.Agent, url string, tools []*agentv1.ToolDefinition) *AgentCard {
	name := a.GetName()
	if name == "" {
		name = a.GetAgentId()
	}
	desc := describe(a)
	known := make(map[string]string, len(tools))
	for _, t := range tools {
		known[t.GetName()] = t.GetDescription()
	}
	skills := []Skill{{ID: "chat", Name: name, Description: desc, Tags: []string{"chat"}}}
	for _, t := range a.GetTools() {
		d := known[t]
		if d == "" {
			d = "Uses the tool " + t + "."
		}
		skills = append(skills, Skill{ID: "tool:" + t, Name: t, Description: d, Tags: []string{"tool"}})
	}
	return &AgentCard{
		ProtocolVersion:    ProtocolVersion,
		Name:               name,
		Description:        desc,
		URL:                url,
		PreferredTransport: "JSONRPC",
		Version:            "1.0.0",
		Capabilities:       Capabilities{Streaming: true},
		SecuritySchemes: map[string]SecurityScheme{
			"bearer": {Type: "http", Scheme: "bearer", Description: "A Wick API token."},
		},
		Security:           []map[string][]string{{"bearer": {}}},
		DefaultInputModes:  []string{"text/plain"},
		DefaultOutputModes: []string{"text/plain"},
		Skills:             skills,
	}
}

// maxDescription bounds the description a card takes from a system prompt.
const maxDescription = 300

func describe(a *agentv1.Agent) string {
	first, _, _ := strings.Cut(strings.TrimSpace(a.GetSystemPrompt()), "\n")
	first = strings.TrimSpace(first)
	if first == "" {
		return "The Wick agent " + a.GetAgentId() + "."
	}
	if r := []rune(first); len(r) > maxDescription {
		first = string(r[:maxDescription-1]) + "…"
	}
	return first
}

// serveRPC answers one JSON-RPC request. Errors are JSON-RPC error objects
// with HTTP status 200, as JSON-RPC over HTTP has them.
func (h *Handler) serveRPC(w http.ResponseWriter, r *http.Request) {
	agentID := r.PathValue("agent_id")
	// An agent the caller cannot use has no endpoint: 404 before anything
	// of the request is read, as for its card, so that nobody learns more
	// of another user's agent than that it is not theirs.
	if _, err := h.agent.GetAgent(r.Context(), &agentv1.GetAgentRequest{AgentId: agentID}); err != nil {
		code := http.StatusInternalServerError
		if status.Code(err) == codes.NotFound || status.Code(err) == codes.InvalidArgument {
			code = http.StatusNotFound
		}
		writeJSON(w, code, Response{JSONRPC: "2.0", ID: nullID, Error: h.rpcError(r.Context(), "", err)})
		return
	}
	body, err := io.ReadAll(r.Body)
	if err != nil {
		var tooLarge *http.MaxBytesError
		if errors.As(err, &tooLarge) {
			writeJSON(w, http.StatusRequestEntityTooLarge, Response{JSONRPC: "2.0", ID: nullID, Error: &Error{Code: CodeInvalidRequest, Message: "request body too large"}})
			return
		}
		writeJSON(w, http.StatusBadRequest, Response{JSONRPC: "2.0", ID: nullID, Error: &Error{Code: CodeParseError, Message: "cannot read the request body"}})
		return
	}
	req, rpcErr := parseRequest(body)
	if rpcErr != nil {
		id := nullID
		if req != nil && req.ID != nil {
			id = req.ID
		}
		writeJSON(w, http.StatusOK, Response{JSONRPC: "2.0", ID: id, Error: rpcErr})
		return
	}
	ctx := r.Context()
	reply := func(result any, err error) {
		resp := Response{JSONRPC: "2.0", ID: req.ID, Result: result}
		if err != nil {
			resp.Result, resp.Error = nil, h.rpcError(ctx, req.Method, err)
		}
		writeJSON(w, http.StatusOK, resp)
	}
	switch req.Method {
	case "message/send":
		var p SendParams
		if e := decodeParams(req.Params, &p); e != nil {
			reply(nil, e)
			return
		}
		reply(h.send(ctx, agentID, &p))
	case "message/stream":
		var p SendParams
		if e := decodeParams(req.Params, &p); e != nil {
			reply(nil, e)
			return
		}
		h.stream(w, r, req.ID, func(ctx context.Context) (*runStream, error) { return h.startRun(ctx, agentID, &p) })
	case "tasks/resubscribe":
		var p TaskParams
		if e := decodeTaskParams(req.Params, &p); e != nil {
			reply(nil, e)
			return
		}
		h.stream(w, r, req.ID, func(ctx context.Context) (*runStream, error) { return h.resubscribe(ctx, agentID, p.ID) })
	case "tasks/get":
		var p TaskParams
		if e := decodeTaskParams(req.Params, &p); e != nil {
			reply(nil, e)
			return
		}
		reply(h.getTask(ctx, agentID, p.ID))
	case "tasks/cancel":
		var p TaskParams
		if e := decodeTaskParams(req.Params, &p); e != nil {
			reply(nil, e)
			return
		}
		reply(h.cancelTask(ctx, agentID, p.ID))
	case "tasks/pushNotificationConfig/set", "tasks/pushNotificationConfig/get",
		"tasks/pushNotificationConfig/list", "tasks/pushNotificationConfig/delete":
		reply(nil, &Error{Code: CodePushNotSupported, Message: "push notifications are not supported; stream with message/stream or poll with tasks/get"})
	case "agent/getAuthenticatedExtendedCard":
		reply(nil, &Error{Code: CodeUnsupportedOperation, Message: "there is no extended agent card; the public card is the whole card"})
	default:
		reply(nil, &Error{Code: CodeMethodNotFound, Message: "method not found: " + req.Method})
	}
}

var nullID = json.RawMessage("null")

// parseRequest checks a request's envelope. The request it returns, even
// with an error, carries the id when one could be read.
func parseRequest(body []byte) (*Request, *Error) {
	trimmed := strings.TrimSpace(string(body))
	if strings.HasPrefix(trimmed, "[") {
		return nil, &Error{Code: CodeInvalidRequest, Message: "batch requests are not supported"}
	}
	var raw map[string]json.RawMessage
	if err := json.Unmarshal(body, &raw); err != nil {
		return nil, &Error{Code: CodeParseError, Message: "the body is not a JSON object"}
	}
	var req Request
	if id, ok := raw["id"]; ok {
		if !validID(id) {
			return nil, &Error{Code: CodeInvalidRequest, Message: "id must be a string, a number or null"}
		}
		req.ID = id
	}
	if err := json.Unmarshal(body, &req); err != nil {
		return &req, &Error{Code: CodeInvalidRequest, Message: "the request is not a JSON-RPC 2.0 request"}
	}
	if req.JSONRPC != "2.0" {
		return &req, &Error{Code: CodeInvalidRequest, Message: `jsonrpc must be "2.0"`}
	}
	if req.Method == "" {
		return &req, &Error{Code: CodeInvalidRequest, Message: "method is required"}
	}
	if req.ID == nil {
		// A notification asks for no answer, but every A2A method has one.
		return &req, &Error{Code: CodeInvalidRequest, Message: "id is required: A2A methods are not notifications"}
	}
	return &req, nil
}

func validID(id json.RawMessage) bool {
	var v any
	if err := json.Unmarshal(id, &v); err != nil {
		return false
	}
	switch v.(type) {
	case string, float64, nil:
		return true
	}
	return false
}

func decodeParams(raw json.RawMessage, v any) *Error {
	if len(raw) == 0 || string(raw) == "null" {
		return &Error{Code: CodeInvalidParams, Message: "params are required"}
	}
	if err := json.Unmarshal(raw, v); err != nil {
		return &Error{Code: CodeInvalidParams, Message: "invalid params: " + jsonProblem(err)}
	}
	return nil
}

func decodeTaskParams(raw json.RawMessage, p *TaskParams) *Error {
	if e := decodeParams(raw, p); e != nil {
		return e
	}
	if p.ID == "" {
		return &Error{Code: CodeInvalidParams, Message: "params.id (the task id) is required"}
	}
	return nil
}

// jsonProblem says what is wrong with params without Go's type names.
func jsonProblem(err error) string {
	var te *json.UnmarshalTypeError
	if errors.As(err, &te) && te.Field != "" {
		return te.Field + " has the wrong type"
	}
	return "not the expected object"
}

// rpcError is the JSON-RPC error of a failed call: the agent service's
// status mapped to A2A's codes, with its message only where it is written
// for users (httperr.Public).
func (h *Handler) rpcError(ctx context.Context, method string, err error) *Error {
	var e *Error
	if errors.As(err, &e) {
		return e
	}
	st := status.Convert(err)
	body := httperr.ForClient(ctx, h.log, st)
	switch st.Code() {
	case codes.InvalidArgument, codes.OutOfRange:
		return &Error{Code: CodeInvalidParams, Message: body.Message}
	case codes.NotFound, codes.PermissionDenied:
		return &Error{Code: CodeTaskNotFound, Message: body.Message}
	case codes.FailedPrecondition:
		if method == "tasks/cancel" {
			return &Error{Code: CodeTaskNotCancelable, Message: body.Message}
		}
	case codes.Unimplemented:
		return &Error{Code: CodeUnsupportedOperation, Message: body.Message}
	}
	data := map[string]any{"status": body.Status}
	if body.TraceID != "" {
		data["trace_id"] = body.TraceID
	}
	return &Error{Code: CodeInternalError, Message: body.Message, Data: data}
}

func writeJSON(w http.ResponseWriter, code int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	_ = json.NewEncoder(w).Encode(v)
}
