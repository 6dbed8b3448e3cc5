// Command embed is Wick inside a Go program, built the way any program
// outside the Wick repository builds it: the whole suite runs in this
// process, the agent loop calls a Go function of this program as a tool, and
// the agents are configured in Go — one with an MCP server and sub-agents,
// one backed by an external coding agent over the Agent Client Protocol.
//
// With the default model, script:demo, it needs no provider key and no
// network:
//
//	go run . -addr 127.0.0.1:8000
//	curl -s -d '{"messages":[{"role":"user","content":"hello"}]}' localhost:8000/agents/assistant/invoke
//
// Give -model a hosted model ("gpt-4o-mini" with OPENAI_API_KEY set) to
// have the assistant choose its tools itself.
//
// Its go.mod requires github.com/wick-agent/wick v0.0.0, which no proxy
// serves until Wick is tagged, and the repository's go.work leaves this
// module out, as another repository's would. To run it against the working
// tree, from the repository's root, give it a workspace of its own:
//
//	export GOWORK=/tmp/embed.work
//	go work init ./examples/embed && go work edit -replace=github.com/wick-agent/wick=$PWD
//	go run ./examples/embed
//
// e2e's TestConsumer builds it as a consumer would, from a module proxy.
package main

import (
	"context"
	"crypto/rand"
	"flag"
	"fmt"
	"log"
	"net"
	"net/http"
	"net/netip"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/wick-agent/wick/platform/backend"
	"github.com/wick-agent/wick/services/agent"
	"github.com/wick-agent/wick/services/agent/agentconfig"
	"github.com/wick-agent/wick/wickserver"
	"github.com/wick-agent/wick/wickserver/suite"
)

func main() {
	addr := flag.String("addr", "127.0.0.1:8000", "listen address of the REST API")
	model := flag.String("model", "script:demo", `model of the agents: "script:demo" (offline), a hosted model ("gpt-4o-mini"), or an inline script`)
	flag.Parse()

	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, *addr, *model); err != nil {
		log.Fatal(err)
	}
}

func run(ctx context.Context, addr, model string) error {
	glossaryURL, glossaryToken, err := serveGlossary(ctx)
	if err != nil {
		return err
	}
	s, err := wickserver.New(
		// MCP servers over HTTP pass the same SSRF guard as HTTP tools, which
		// refuses loopback; the glossary server below listens there. This
		// lets every HTTP tool of the server reach loopback too: right for
		// one local user, not for a server shared by several.
		wickserver.WithConfig(suite.Config{AgentOptions: []agent.Option{
			agent.WithToolNetworkAllow(netip.MustParsePrefix("127.0.0.1/32")),
		}}),
		wickserver.WithHTTPAddr(addr),
		wickserver.WithModel(model),
	)
	if err != nil {
		return err
	}
	if err := s.RegisterTool(wordCount); err != nil {
		return err
	}
	if err := s.RegisterAgent("assistant", &agentconfig.AgentConfig{
		Name:         "Assistant",
		SystemPrompt: "You answer questions about texts. Count words with word_count; look terms up with glossary__define.",
		Tools:        []string{"word_count", "calculate"},
		// Its files and commands: a workdir on this machine.
		Backend: &agentconfig.BackendCfg{Type: backend.Local},
		// Its tools include the glossary server's, as glossary__<tool>.
		MCPServers: []agentconfig.MCPServerCfg{{
			Name:    "glossary",
			URL:     glossaryURL,
			Headers: map[string]string{"Authorization": "Bearer " + glossaryToken},
			Timeout: 10 * time.Second,
		}},
		// Its "task" tool hands a goal to this sub-agent, which works on a
		// thread of its own and answers with its final reply.
		Subagents: []agentconfig.SubagentCfg{{
			Name:        "summarizer",
			Description: "Summarizes a text in one sentence. Give it the whole text.",
			Prompt:      "You summarize the text you are given in one sentence.",
			Tools:       []string{"word_count"},
			Timeout:     2 * time.Minute,
		}},
	}); err != nil {
		return err
	}
	// An agent backed by Claude Code over the Agent Client Protocol: Wick
	// runs the adapter inside the agent's container for each run and streams
	// what it does as Wick's events. Its runs need a Docker engine, the
	// image (docs/acp.md builds it) and the key as a file of the agent
	// service's secrets directory (agent.WithSecretsDir).
	if err := s.RegisterAgent("coder", &agentconfig.AgentConfig{
		Name:     "Coder (Claude Code)",
		Backend:  &agentconfig.BackendCfg{Type: backend.Docker, Image: "wick-claude-code:latest", Network: "bridge"},
		Approval: agentconfig.ApprovalInteractive,
		ACP: &agentconfig.ACPCfg{
			Command: "claude-code-acp",
			Env:     map[string]string{"ANTHROPIC_API_KEY": "${secret:anthropic-key}"},
		},
	}); err != nil {
		return err
	}

	if err := s.Start(ctx); err != nil { // returns once every service listens
		return err
	}
	log.Printf("Wick serves at %s (agents: assistant, coder)", s.HTTPURL())
	return s.Wait() // until SIGINT or SIGTERM
}

// wordCount is a native tool: the agent loop calls it in this process, with
// the model's arguments decoded.
var wordCount = &agent.FuncTool{
	ToolName: "word_count",
	ToolDesc: "Count the words of a text",
	ToolParams: map[string]any{
		"type":       "object",
		"properties": map[string]any{"text": map[string]any{"type": "string"}},
		"required":   []string{"text"},
	},
	Fn: func(ctx context.Context, args map[string]any) (string, error) {
		text, _ := args["text"].(string)
		return fmt.Sprintf("%d words", len(strings.Fields(text))), nil
	},
}

// glossary is what the MCP server's define tool knows.
var glossary = map[string]string{
	"mcp": "Model Context Protocol: how an agent gets tools from a server.",
	"acp": "Agent Client Protocol: how an editor, or Wick, drives a coding agent.",
}

type defineArgs struct {
	Term string `json:"term" jsonschema:"the term to define"`
}

// serveGlossary serves an MCP server with one tool, define, over streamable
// HTTP on a loopback port until ctx ends, behind a bearer token.
func serveGlossary(ctx context.Context) (url, token string, err error) {
	server := mcp.NewServer(&mcp.Implementation{Name: "glossary", Version: "1"}, nil)
	mcp.AddTool(server, &mcp.Tool{Name: "define", Description: "Defines a term"},
		func(_ context.Context, _ *mcp.CallToolRequest, in defineArgs) (*mcp.CallToolResult, any, error) {
			def, ok := glossary[strings.ToLower(in.Term)]
			if !ok {
				def = "not in the glossary"
			}
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: in.Term + ": " + def}}}, nil, nil
		})
	token = rand.Text()
	h := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return server }, nil)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", "", err
	}
	srv := &http.Server{
		Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.Header.Get("Authorization") != "Bearer "+token {
				http.Error(w, "missing or wrong bearer token", http.StatusUnauthorized)
				return
			}
			h.ServeHTTP(w, r)
		}),
		ReadHeaderTimeout: 10 * time.Second,
	}
	go srv.Serve(ln)
	context.AfterFunc(ctx, func() { srv.Close() })
	return "http://" + ln.Addr().String() + "/mcp", token, nil
}
