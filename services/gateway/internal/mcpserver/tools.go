package mcpserver

import (
	"context"
	"fmt"
	"log/slog"
	"regexp"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"google.golang.org/grpc/status"

	agentv1 "github.com/wick-agent/wick/gen/wick/agent/v1"
	"github.com/wick-agent/wick/platform/identity"
	"github.com/wick-agent/wick/services/gateway/internal/httperr"
)

// tools answers tools/list and tools/call from the caller's agents.
type tools struct {
	agents           Agents
	log              *slog.Logger
	progressInterval time.Duration
	cancelTimeout    time.Duration
}

// middleware takes the tool methods over from the SDK's static tool set:
// the tools are whatever agents the caller has at the time of the request.
func (t *tools) middleware(next mcp.MethodHandler) mcp.MethodHandler {
	return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
		switch method {
		case "tools/list":
			ctx, err := asCaller(ctx, req)
			if err != nil {
				return nil, err
			}
			return t.list(ctx)
		case "tools/call":
			ctx, err := asCaller(ctx, req)
			if err != nil {
				return nil, err
			}
			call, ok := req.(*mcp.CallToolRequest)
			if !ok {
				return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidRequest, Message: "not a tool call"}
			}
			return t.call(ctx, call)
		}
		return next(ctx, method, req)
	}
}

// asCaller returns ctx acting as the user of the request itself. The
// session's context holds the user who opened it; the SDK has checked that
// it is the same user, and the request's organisations are the current ones.
func asCaller(ctx context.Context, req mcp.Request) (context.Context, error) {
	extra := req.GetExtra()
	if extra == nil || extra.TokenInfo == nil || extra.TokenInfo.UserID == "" {
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidRequest, Message: "unauthenticated request"}
	}
	orgs, _ := extra.TokenInfo.Extra[orgsKey].([]string)
	return identity.WithOrgs(identity.WithUser(ctx, extra.TokenInfo.UserID), orgs), nil
}

// validToolName is what MCP allows as a tool's name.
var validToolName = regexp.MustCompile(`^[A-Za-z0-9_.-]{1,128}$`)

// toolName is the name of an agent's tool: its id, which agent ids'
// alphabet (letters, digits, '-', '_') keeps valid; "" when it is not.
func toolName(agentID string) string {
	if !validToolName.MatchString(agentID) {
		return ""
	}
	return agentID
}

// input is a tool call's arguments.
type input struct {
	Message  string `json:"message"`
	ThreadID string `json:"thread_id,omitempty"`
}

// inputSchema and outputSchema are every agent tool's schemas.
var (
	inputSchema = map[string]any{
		"type": "object",
		"properties": map[string]any{
			"message": map[string]any{
				"type":        "string",
				"description": "What to ask or tell the agent.",
			},
			"thread_id": map[string]any{
				"type":        "string",
				"description": "Continue this thread (the thread_id of an earlier result); omitted: a new thread.",
			},
		},
		"required":             []string{"message"},
		"additionalProperties": false,
	}
	outputSchema = map[string]any{
		"type": "object",
		"properties": map[string]any{
			"thread_id": map[string]any{"type": "string", "description": "The thread the run used; pass it to continue the conversation."},
			"run_id":    map[string]any{"type": "string", "description": "The run."},
			"status":    map[string]any{"type": "string", "description": "completed, stopped, waiting_approval, waiting_answer, failed or cancelled."},
		},
		"required": []string{"thread_id", "run_id", "status"},
	}
)

// list lists the caller's agents (its own and the templates every user
// shares) as tools.
func (t *tools) list(ctx context.Context) (*mcp.ListToolsResult, error) {
	agents, err := t.agentList(ctx)
	if err != nil {
		return nil, err
	}
	out := &mcp.ListToolsResult{Tools: []*mcp.Tool{}}
	for _, a := range agents {
		name := toolName(a.GetAgentId())
		if name == "" {
			continue
		}
		out.Tools = append(out.Tools, &mcp.Tool{
			Name:         name,
			Title:        a.GetName(),
			Description:  describe(a),
			InputSchema:  inputSchema,
			OutputSchema: outputSchema,
		})
	}
	return out, nil
}

// describe is an agent tool's description: what calling it does, for the
// model or person choosing a tool.
func describe(a *agentv1.Agent) string {
	who := a.GetAgentId()
	if n := a.GetName(); n != "" && n != who {
		who = fmt.Sprintf("%s (%s)", n, who)
	}
	d := fmt.Sprintf("Run the Wick agent %s with a message and return its final reply. "+
		"Pass thread_id from an earlier result to continue that conversation.", who)
	if a.GetApproval() == "interactive" {
		d += " Its tool calls need approval: a call that reaches one returns an error naming the run to approve or reject in Wick."
	}
	return d
}

// agentList is the caller's agents.
func (t *tools) agentList(ctx context.Context) ([]*agentv1.Agent, error) {
	resp, err := t.agents.ListAgents(ctx, &agentv1.ListAgentsRequest{})
	if err != nil {
		return nil, t.rpcError(ctx, err)
	}
	return resp.GetAgents(), nil
}

// find returns the caller's agent whose tool is name, or nil.
func (t *tools) find(ctx context.Context, name string) (*agentv1.Agent, error) {
	agents, err := t.agentList(ctx)
	if err != nil {
		return nil, err
	}
	for _, a := range agents {
		if n := toolName(a.GetAgentId()); n != "" && n == name {
			return a, nil
		}
	}
	return nil, nil
}

// rpcError is a JSON-RPC error for a failed agent service call, with the
// words a client may read (httperr.ForClient: internals are logged, not
// sent).
func (t *tools) rpcError(ctx context.Context, err error) error {
	b := httperr.ForClient(ctx, t.log, status.Convert(err))
	return &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: b.Message}
}

// clientMessage is what a client reads of a failed agent service call.
func (t *tools) clientMessage(ctx context.Context, err error) string {
	return httperr.ForClient(ctx, t.log, status.Convert(err)).Message
}
