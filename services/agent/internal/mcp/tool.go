package mcp

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/wick-agent/wick/services/agent/internal/ids"
	"github.com/wick-agent/wick/services/agent/internal/loop"
	"github.com/wick-agent/wick/services/agent/internal/tools"
)

// tool is one tool of an MCP server as the loop sees it.
type tool struct {
	server *server
	// remote is the tool's name on the server; name is "<server>__<remote>".
	remote, name, description string
	params                    map[string]any
}

// newTool checks what the server listed: a name the providers accept once
// prefixed, and an input schema that is a JSON Schema object, which is all
// function calling takes.
func newTool(s *server, t *sdk.Tool) (*tool, error) {
	name := toolName(s.cfg.Name, t.Name)
	if !ids.Valid(name) {
		return nil, fmt.Errorf("%w: name %q must be 1-64 letters, digits, '_' or '-'", tools.ErrInvalidToolDef, name)
	}
	raw, err := json.Marshal(t.InputSchema)
	if err != nil {
		return nil, fmt.Errorf("%w: input schema: %w", tools.ErrInvalidToolDef, err)
	}
	var params map[string]any
	if err := json.Unmarshal(raw, &params); err != nil {
		return nil, fmt.Errorf("%w: the input schema is not a JSON object", tools.ErrInvalidToolDef)
	}
	if err := tools.ValidateSchema(params); err != nil {
		return nil, err
	}
	return &tool{server: s, remote: t.Name, name: name, description: t.Description, params: params}, nil
}

func (t *tool) Name() string               { return t.name }
func (t *tool) Description() string        { return t.description }
func (t *tool) Parameters() map[string]any { return t.params }

// Execute calls the tool. The server's error answer (isError) is the
// call's error, with its text, so the model sees it as a failed tool. The
// server's progress notifications become on_tool_progress events of the
// run while the call lasts.
func (t *tool) Execute(ctx context.Context, args map[string]any) (string, error) {
	if args == nil {
		args = map[string]any{}
	}
	var progress *progressSink
	if info, ok := loop.CallInfoFromContext(ctx); ok && info.ToolCallID != "" {
		progress = newProgressSink(t.name, info.ToolCallID, func(ev loop.StreamEvent) { loop.Emit(ctx, ev) })
	}
	res, err := t.server.call(ctx, t.remote, args, progress)
	if err != nil {
		return "", err
	}
	// Capped like an HTTP tool's answer, in characters like the eviction
	// that follows it.
	maxOut := t.server.pool.opts.maxOutputChars
	out := tools.Evict(resultText(res), maxOut, maxOut/2)
	if res.IsError {
		if out == "" {
			out = "the tool reported an error without a message"
		}
		return "", errors.New(out)
	}
	return out, nil
}

// resultText turns a result's content into the text the model reads:
// text as is, other kinds as a line naming what they were; structured
// content as JSON when there is no content.
func resultText(res *sdk.CallToolResult) string {
	var parts []string
	for _, c := range res.Content {
		switch c := c.(type) {
		case *sdk.TextContent:
			parts = append(parts, c.Text)
		case *sdk.ImageContent:
			parts = append(parts, fmt.Sprintf("[image: %s, %d bytes]", c.MIMEType, len(c.Data)))
		case *sdk.AudioContent:
			parts = append(parts, fmt.Sprintf("[audio: %s, %d bytes]", c.MIMEType, len(c.Data)))
		case *sdk.ResourceLink:
			parts = append(parts, fmt.Sprintf("[resource: %s]", c.URI))
		case *sdk.EmbeddedResource:
			if r := c.Resource; r != nil && r.Text != "" {
				parts = append(parts, r.Text)
			} else if r != nil {
				parts = append(parts, fmt.Sprintf("[resource: %s, %d bytes]", r.URI, len(r.Blob)))
			}
		}
	}
	if len(parts) == 0 && res.StructuredContent != nil {
		if b, err := json.Marshal(res.StructuredContent); err == nil {
			return string(b)
		}
	}
	return strings.Join(parts, "\n")
}

// toolName is the name the model sees.
func toolName(server, tool string) string { return server + Separator + tool }
