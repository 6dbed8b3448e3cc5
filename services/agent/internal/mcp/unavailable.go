package mcp

import (
	"context"
	"fmt"
	"strings"
	"unicode/utf8"

	"google.golang.org/protobuf/proto"

	agentv1 "github.com/wick-agent/wick/gen/wick/agent/v1"
	"github.com/wick-agent/wick/llm"
	"github.com/wick-agent/wick/services/agent/internal/loop"
	"github.com/wick-agent/wick/services/agent/internal/sandboxproc"
)

// Bounds of the standard error an unavailable server's event carries: the
// end of it says why a program stopped, and the event goes to every
// client of the run.
const (
	StderrTailLines = 20
	StderrTailBytes = 2 << 10
	// maxErrorChars bounds the error text of an unavailable server, which
	// may quote a server's answer.
	maxErrorChars = 1 << 10
)

// Unavailable is an MCP server whose tools a run does not have: it could
// not be started, failed the handshake or did not list its tools.
type Unavailable struct {
	// Server is the server's name in the agent's configuration.
	Server string
	// Err says what failed.
	Err string
	// Stderr is the end of a stdio server's standard error (StderrTailLines,
	// StderrTailBytes); empty when it wrote nothing or is reached over HTTP.
	Stderr string
}

func unavailable(server string, err error, stderr string) Unavailable {
	msg := err.Error()
	if stderr != "" {
		// The process's exit error quotes its standard error, which the
		// event carries on its own, bounded.
		if before, _, ok := strings.Cut(msg, sandboxproc.StderrIntro); ok {
			msg = before
		}
	}
	return Unavailable{Server: server, Err: truncate(msg, maxErrorChars), Stderr: tail(stderr, StderrTailLines, StderrTailBytes)}
}

// Event is the run event that tells the user.
func (u Unavailable) Event() loop.StreamEvent {
	d := &agentv1.McpServerErrorData{Server: u.Server, Error: u.Err}
	if u.Stderr != "" {
		d.Stderr = proto.String(u.Stderr)
	}
	return loop.StreamEvent{Name: u.Server, Data: &agentv1.RunEventData{Kind: &agentv1.RunEventData_OnMcpServerError{OnMcpServerError: d}}}
}

// Reason is what the model is told about the server.
func (u Unavailable) Reason() string {
	s := fmt.Sprintf("MCP server %s is unavailable, so its tools (%s%s*) cannot be called in this run: %s", u.Server, u.Server, Separator, u.Err)
	if u.Stderr != "" {
		s += "\nIts standard error ends with:\n" + u.Stderr
	}
	return s
}

// UnavailableHook tells the model which servers are unavailable and why:
// a note in the system message, and, for a call of one of their tools
// (which the model may know from earlier in the thread), a tool error
// saying so instead of an unknown tool.
func UnavailableHook(servers []Unavailable) loop.Hook {
	return unavailableHook{servers: servers}
}

type unavailableHook struct {
	loop.BaseHook
	servers []Unavailable
}

func (unavailableHook) Name() string { return "mcp_unavailable" }

func (unavailableHook) Phases() []string {
	return []string{loop.PhaseModifyRequest, loop.PhaseWrapToolCall}
}

func (h unavailableHook) ModifyRequest(_ context.Context, msgs []llm.Message) ([]llm.Message, error) {
	notes := make([]string, 0, len(h.servers))
	for _, u := range h.servers {
		notes = append(notes, u.Reason())
	}
	return loop.AppendSystem(msgs, "<mcp_servers_unavailable>\n"+strings.Join(notes, "\n\n")+"\n</mcp_servers_unavailable>"), nil
}

func (h unavailableHook) WrapToolCall(ctx context.Context, call llm.ToolCall, next loop.ToolCallFunc) (*loop.ToolResult, error) {
	for _, u := range h.servers {
		if strings.HasPrefix(call.Name, u.Server+Separator) {
			return &loop.ToolResult{ToolCallID: call.ID, Name: call.Name, Error: u.Reason()}, nil
		}
	}
	return next(ctx, call)
}

// tail keeps the last lines of s, at most maxLines and maxBytes (cut at a
// character boundary).
func tail(s string, maxLines, maxBytes int) string {
	s = strings.TrimSpace(s)
	if len(s) > maxBytes {
		s = s[len(s)-maxBytes:]
		for len(s) > 0 && !utf8.RuneStart(s[0]) {
			s = s[1:]
		}
	}
	if lines := strings.Split(s, "\n"); len(lines) > maxLines {
		s = strings.Join(lines[len(lines)-maxLines:], "\n")
	}
	return s
}

// truncate keeps the first n bytes of s, cut at a character boundary.
func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n] + "…"
}
