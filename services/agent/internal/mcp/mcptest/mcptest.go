// Package mcptest is a small MCP server written with the official SDK, the
// protocol peer of the agent's MCP tests: run in-process over streamable
// HTTP, or as the mcp-test-server program over stdio inside a sandbox.
package mcptest

import (
	"context"
	"fmt"
	"net/http"
	"strings"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// Tool names of the server.
const (
	// Echo answers "echo: <text>".
	Echo = "echo"
	// Big answers "BEGIN", size characters, then "END".
	Big = "big"
	// Wait answers only when its call is cancelled (the client's timeout).
	Wait = "wait"
	// Crash ends the server's process (only when Options.Exit is set).
	Crash = "crash"
	// Grow adds the tool Late, so the server announces a list change.
	Grow = "grow"
	// Late exists after Grow was called.
	Late = "late"
	// BadSchema is listed with an input schema that is not an object.
	BadSchema = "bad_schema"
	// Progress sends one progress notification when its call carries a
	// progress token, and answers "token: <the token>".
	Progress = "progress"
)

// Options configures the server.
type Options struct {
	// Exit ends the process; nil leaves out the crash tool.
	Exit func(code int)
}

type textArgs struct {
	Text string `json:"text" jsonschema:"the text to echo"`
}

type sizeArgs struct {
	Size int `json:"size" jsonschema:"how many characters to answer"`
}

type noArgs struct{}

func text(s string) *sdk.CallToolResult {
	return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: s}}}
}

// New returns the server.
func New(opts Options) *sdk.Server {
	s := sdk.NewServer(&sdk.Implementation{Name: "wick-mcp-test", Version: "1"}, nil)
	sdk.AddTool(s, &sdk.Tool{Name: Echo, Description: "Echoes its text."}, func(_ context.Context, _ *sdk.CallToolRequest, in textArgs) (*sdk.CallToolResult, any, error) {
		return text("echo: " + in.Text), nil, nil
	})
	sdk.AddTool(s, &sdk.Tool{Name: Big, Description: "Answers a large text."}, func(_ context.Context, _ *sdk.CallToolRequest, in sizeArgs) (*sdk.CallToolResult, any, error) {
		return text("BEGIN" + strings.Repeat("x", in.Size) + "END"), nil, nil
	})
	sdk.AddTool(s, &sdk.Tool{Name: Wait, Description: "Never answers."}, func(ctx context.Context, _ *sdk.CallToolRequest, _ noArgs) (*sdk.CallToolResult, any, error) {
		<-ctx.Done()
		return nil, nil, ctx.Err()
	})
	sdk.AddTool(s, &sdk.Tool{Name: Progress, Description: "Reports progress."}, func(ctx context.Context, req *sdk.CallToolRequest, _ noArgs) (*sdk.CallToolResult, any, error) {
		token := req.Params.GetProgressToken()
		if token != nil {
			_ = req.Session.NotifyProgress(ctx, &sdk.ProgressNotificationParams{ProgressToken: token, Progress: 1, Total: 1, Message: "done"})
		}
		return text(fmt.Sprintf("token: %v", token)), nil, nil
	})
	if opts.Exit != nil {
		sdk.AddTool(s, &sdk.Tool{Name: Crash, Description: "Ends the server."}, func(context.Context, *sdk.CallToolRequest, noArgs) (*sdk.CallToolResult, any, error) {
			opts.Exit(3)
			return nil, nil, nil
		})
	}
	sdk.AddTool(s, &sdk.Tool{Name: Grow, Description: "Adds the tool late."}, func(context.Context, *sdk.CallToolRequest, noArgs) (*sdk.CallToolResult, any, error) {
		sdk.AddTool(s, &sdk.Tool{Name: Late, Description: "Added by grow."}, func(context.Context, *sdk.CallToolRequest, noArgs) (*sdk.CallToolResult, any, error) {
			return text("late tool answered"), nil, nil
		})
		return text("added " + Late), nil, nil
	})
	sdk.AddTool(s, &sdk.Tool{Name: BadSchema, Description: "Listed with a string schema."}, func(context.Context, *sdk.CallToolRequest, noArgs) (*sdk.CallToolResult, any, error) {
		return text("should never be called"), nil, nil
	})
	// The SDK refuses to register a tool whose schema is not an object, so
	// the listing is rewritten on its way out, as a careless server would
	// send it.
	s.AddReceivingMiddleware(func(next sdk.MethodHandler) sdk.MethodHandler {
		return func(ctx context.Context, method string, req sdk.Request) (sdk.Result, error) {
			res, err := next(ctx, method, req)
			if lr, ok := res.(*sdk.ListToolsResult); ok && err == nil {
				for i, t := range lr.Tools {
					if t.Name == BadSchema {
						// A copy: the listed tool is the server's own.
						bad := *t
						bad.InputSchema = map[string]any{"type": "string"}
						lr.Tools[i] = &bad
					}
				}
			}
			return res, err
		}
	})
	return s
}

// Handler serves the server over streamable HTTP. A non-empty token is
// required as "Authorization: Bearer <token>" (401 otherwise), so tests see
// the configured headers arrive. Calls are answered as JSON bodies: the
// SDK's client reads SSE lines of at most 1 MiB, and Big answers more.
func Handler(s *sdk.Server, token string) http.Handler {
	h := sdk.NewStreamableHTTPHandler(func(*http.Request) *sdk.Server { return s }, &sdk.StreamableHTTPOptions{JSONResponse: true})
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if token != "" && r.Header.Get("Authorization") != "Bearer "+token {
			http.Error(w, "missing or wrong bearer token", http.StatusUnauthorized)
			return
		}
		h.ServeHTTP(w, r)
	})
}
