// Package wickserver runs Wick inside a Go program: the whole suite (LLM
// gateway, sandbox service, agent service, REST gateway) in this process,
// with agents and native tools the program registers in Go.
//
//	s, err := wickserver.New(wickserver.WithHTTPAddr("127.0.0.1:8000"))
//	s.RegisterAgent("default", &agentconfig.AgentConfig{Model: "gpt-4o-mini", Tools: []string{"add"}})
//	s.RegisterTool(&agent.FuncTool{ToolName: "add", ToolDesc: "Add two numbers", Fn: add})
//	err = s.Start(ctx) // returns once every service listens
//	defer s.Shutdown(context.Background())
//
// A native tool is a Go function the agent loop calls in-process, with the
// model's arguments as the decoded JSON object: no HTTP callback, no copy
// beyond the model's own JSON. It goes through the same hooks as the
// built-in tools — tracing spans, eviction of large results,
// on_tool_start/on_tool_end events, approval of interactive agents.
//
// An agent's configuration (agentconfig.AgentConfig) is the shape of one
// agent in agents.yaml, MCP servers, sub-agents and ACP included.
//
// The server is the one the `wick` command runs (it is built on this
// package), so everything it serves — REST, SSE, the OpenAI-compatible API,
// gRPC — serves the registered agents and tools too.
package wickserver

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sync"

	"github.com/wick-agent/wick/services/agent"
	"github.com/wick-agent/wick/services/agent/agentconfig"
	"github.com/wick-agent/wick/services/llmgw"
	"github.com/wick-agent/wick/wickserver/suite"
)

// Errors of a Server's life cycle and registrations.
var (
	// ErrStarted is returned by registrations and Start once Start has
	// succeeded: agents and tools are fixed when the services start.
	ErrStarted = errors.New("wickserver: the server has started")
	// ErrNotStarted is returned by Wait before Start.
	ErrNotStarted = errors.New("wickserver: the server has not started")
	// ErrAgentExists is wrapped when an agent id is registered twice, or is
	// also in the agents file.
	ErrAgentExists = errors.New("wickserver: agent already registered")
)

// Option configures a Server.
type Option func(*config)

type config struct {
	suite      suite.Config
	agentsFile string
}

// WithConfig sets the whole suite configuration (listen addresses, Redis,
// sandbox, LLM gateway, REST gateway, identity key…). It replaces what
// options before it set, so give it first.
func WithConfig(cfg suite.Config) Option { return func(c *config) { c.suite = cfg } }

// WithHTTPAddr sets the REST gateway's listen address (default
// suite.DefaultHTTPAddr); port 0 picks a free port, see Server.HTTPURL.
func WithHTTPAddr(addr string) Option { return func(c *config) { c.suite.HTTPAddr = addr } }

// WithModel sets the model of agents that name none (default: from
// OPENAI_API_KEY or ANTHROPIC_API_KEY, else the scripted demo model).
func WithModel(spec string) Option { return func(c *config) { c.suite.Model = spec } }

// WithBackend sets the sandbox backend: backend.Auto (the default),
// backend.Docker or backend.Local.
func WithBackend(b string) Option { return func(c *config) { c.suite.Backend = b } }

// WithLLM configures the LLM gateway: models file, script directory for
// "script:<name>" models, provider settings.
func WithLLM(cfg llmgw.Config) Option { return func(c *config) { c.suite.LLM = &cfg } }

// WithTokens sets the REST gateway's bearer tokens (token → user). Without
// tokens every request acts as one local user.
func WithTokens(tokens map[string]string) Option {
	return func(c *config) { c.suite.Gateway.Tokens = tokens }
}

// WithAllowLocal permits local sandboxes (commands on this host, confined
// with Landlock) when tokens make the server serve several users; a
// single-user server needs no permission.
func WithAllowLocal() Option { return func(c *config) { c.suite.Sandbox.AllowLocal = true } }

// WithWorkspaceBytes sets the size of a sandbox's workspace whose agent
// names none (default sandbox.DefaultWorkspaceBytes) and the most an agent
// may ask for (default sandbox.DefaultMaxWorkspaceBytes); 0 keeps a default.
func WithWorkspaceBytes(def, max int64) Option {
	return func(c *config) { c.suite.Sandbox.WorkspaceBytes, c.suite.Sandbox.MaxWorkspaceBytes = def, max }
}

// WithAgentsFile loads agent templates from an agents.yaml file; agents
// registered in Go come beside them, under other ids.
func WithAgentsFile(path string) Option { return func(c *config) { c.agentsFile = path } }

// WithLimits sets the agent service's per-user limits (default
// agent.DefaultLimits(): agents, tools, threads, runs going and queued,
// event streams, bytes per thread).
func WithLimits(l agent.Limits) Option {
	return func(c *config) { c.suite.AgentOptions = append(c.suite.AgentOptions, agent.WithLimits(l)) }
}

// WithLogger sets the logger of every service (default slog.Default()).
func WithLogger(l *slog.Logger) Option { return func(c *config) { c.suite.Logger = l } }

// Server is Wick embedded in a program. Register agents and tools, then
// Start; Shutdown (or the end of Start's context) stops it.
type Server struct {
	mu       sync.Mutex
	cfg      suite.Config
	file     string
	agents   map[string]*agentconfig.AgentConfig
	fromFile map[string]bool
	tools    []agent.Tool
	running  *suite.Suite
	cancel   context.CancelFunc
}

// New returns a server configured by opts; nothing listens until Start. It
// fails when the agents file cannot be read or is not valid.
func New(opts ...Option) (*Server, error) {
	var c config
	for _, o := range opts {
		o(&c)
	}
	s := &Server{cfg: c.suite, file: c.agentsFile, agents: map[string]*agentconfig.AgentConfig{}, fromFile: map[string]bool{}}
	if c.agentsFile != "" {
		t, err := agent.LoadAgentsFile(c.agentsFile)
		if err != nil {
			return nil, fmt.Errorf("wickserver: %w", err)
		}
		for id, cfg := range t {
			s.agents[id] = cfg
			s.fromFile[id] = true
		}
	}
	return s, nil
}

// RegisterAgent adds an agent template, as one entry of agents.yaml would:
// every user sees it and may change their own copy through the API. The
// server keeps cfg until Start; do not change it after registering. Once
// any agent is registered (here or by the agents file), the built-in
// "default" agent is not there: register one with that id to keep it.
func (s *Server) RegisterAgent(id string, cfg *agentconfig.AgentConfig) error {
	if err := agent.ValidateAgent(id, cfg); err != nil {
		return fmt.Errorf("wickserver: %w", err)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.running != nil {
		return ErrStarted
	}
	if _, dup := s.agents[id]; dup {
		if s.fromFile[id] {
			return fmt.Errorf("%w: %q is in %s", ErrAgentExists, id, s.file)
		}
		return fmt.Errorf("%w: %q", ErrAgentExists, id)
	}
	s.agents[id] = cfg
	return nil
}

// RegisterTool adds a native tool, usually an *agent.FuncTool. An agent
// uses it by naming it in its tools; the built-in "default" agent (there
// when no agent is registered) names every native tool. It fails when the
// tool is not valid (agent.ErrInvalidTool: name, function, parameter
// schema) or its name is taken (agent.ErrToolNameTaken: a built-in tool, a
// tool the hooks register, or a native tool registered before).
func (s *Server) RegisterTool(t agent.Tool) error {
	if err := agent.ValidateTool(t); err != nil {
		return fmt.Errorf("wickserver: %w", err)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.running != nil {
		return ErrStarted
	}
	for _, have := range s.tools {
		if have.Name() == t.Name() {
			return fmt.Errorf("wickserver: %w: %q is already registered", agent.ErrToolNameTaken, t.Name())
		}
	}
	s.tools = append(s.tools, t)
	return nil
}

// Start starts every service with the registered agents and tools and
// returns once all listen. The server runs until ctx ends or Shutdown is
// called.
func (s *Server) Start(ctx context.Context) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.running != nil {
		return ErrStarted
	}
	cfg := s.cfg
	cfg.AgentOptions = slices.Clone(cfg.AgentOptions)
	if len(s.agents) > 0 {
		cfg.AgentOptions = append(cfg.AgentOptions, agent.WithTemplates(s.agents))
	}
	if len(s.tools) > 0 {
		cfg.AgentOptions = append(cfg.AgentOptions, agent.WithNativeTools(s.tools...))
	}
	runCtx, cancel := context.WithCancel(ctx)
	running, err := suite.Start(runCtx, cfg)
	if err != nil {
		cancel()
		return fmt.Errorf("wickserver: %w", err)
	}
	s.running, s.cancel = running, cancel
	return nil
}

// Shutdown stops the server, the REST gateway first, and waits until every
// service has stopped or ctx ends. Runs in progress are cancelled, each
// saving its thread first. It does nothing before Start.
func (s *Server) Shutdown(ctx context.Context) error {
	s.mu.Lock()
	running, cancel := s.running, s.cancel
	s.mu.Unlock()
	if running == nil {
		return nil
	}
	cancel()
	done := make(chan struct{})
	go func() {
		_ = running.Wait()
		close(done)
	}()
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		return fmt.Errorf("wickserver: shutdown: %w", ctx.Err())
	}
}

// Wait blocks until the server has stopped, after Start's context ended or
// Shutdown was called.
func (s *Server) Wait() error {
	s.mu.Lock()
	running := s.running
	s.mu.Unlock()
	if running == nil {
		return ErrNotStarted
	}
	return running.Wait()
}

// HTTPURL is the REST gateway's base URL, such as "http://127.0.0.1:8000";
// empty before Start.
func (s *Server) HTTPURL() string {
	if r := s.Suite(); r != nil {
		return r.HTTPURL
	}
	return ""
}

// GRPCAddr is the gRPC address of one service: "gateway", "agent",
// "sandbox" or "llmgw"; empty before Start or for another name. The
// services other than the gateway take only calls signed with the
// suite's identity key (Suite().Key).
func (s *Server) GRPCAddr(service string) string {
	if r := s.Suite(); r != nil {
		return r.Addrs[service]
	}
	return ""
}

// Suite is the running suite (addresses, model, sandbox backend,
// authentication mode, identity key); nil before Start.
func (s *Server) Suite() *suite.Suite {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.running
}
