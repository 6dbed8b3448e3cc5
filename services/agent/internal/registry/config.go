package registry

import (
	"bytes"
	"fmt"
	"net/url"
	"os"
	"path"
	"regexp"
	"slices"
	"sort"
	"strings"
	"time"

	"google.golang.org/grpc/codes"
	"gopkg.in/yaml.v3"

	"github.com/wick-agent/wick/platform/backend"
	"github.com/wick-agent/wick/platform/errcode"
	"github.com/wick-agent/wick/services/agent/internal/hooks"
	"github.com/wick-agent/wick/services/agent/internal/ids"
	"github.com/wick-agent/wick/services/agent/internal/knowledge"
	"github.com/wick-agent/wick/services/agent/internal/loop"
	"github.com/wick-agent/wick/services/agent/internal/redact"
	"github.com/wick-agent/wick/services/agent/internal/secrets"
	"github.com/wick-agent/wick/services/agent/internal/tools"
	"github.com/wick-agent/wick/wickfs"
)

// Limits of an agent configuration.
const (
	// MaxTurnsLimit bounds a configured max_turns.
	MaxTurnsLimit = 1000
	// MaxConfigFileBytes bounds agents.yaml.
	MaxConfigFileBytes = 4 << 20
	// DefaultAgentID names the agent of a single-agent agents.yaml.
	DefaultAgentID = "default"
)

// ErrInvalid is wrapped by every configuration validation error.
var ErrInvalid = errcode.New(codes.InvalidArgument, "invalid agent configuration")

// fileDoc is agents.yaml: either a map of agents under "agents", or one
// agent at the top level (the short form), registered as "default" or
// under its "id".
type fileDoc struct {
	Agents map[string]*loop.AgentConfig `yaml:"agents"`
}

type singleDoc struct {
	ID               string `yaml:"id"`
	loop.AgentConfig `yaml:",inline"`
}

// LoadFile reads agents.yaml into validated templates by agent id.
func LoadFile(path string) (map[string]*loop.AgentConfig, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("read agents file: %w", err)
	}
	if len(data) > MaxConfigFileBytes {
		return nil, fmt.Errorf("agents file %s is larger than %d bytes", path, MaxConfigFileBytes)
	}
	return Parse(data)
}

// Parse parses agents.yaml content. Unknown keys are errors, so a typo
// does not silently drop a setting.
func Parse(data []byte) (map[string]*loop.AgentConfig, error) {
	var probe map[string]any
	if err := yaml.Unmarshal(data, &probe); err != nil {
		return nil, fmt.Errorf("parse agents file: %w", err)
	}
	out := map[string]*loop.AgentConfig{}
	if _, multi := probe["agents"]; multi {
		var doc fileDoc
		if err := strictYAML(data, &doc); err != nil {
			return nil, fmt.Errorf("parse agents file: %w", err)
		}
		for id, cfg := range doc.Agents {
			if cfg == nil {
				cfg = &loop.AgentConfig{}
			}
			out[id] = cfg
		}
	} else if len(probe) > 0 {
		var doc singleDoc
		if err := strictYAML(data, &doc); err != nil {
			return nil, fmt.Errorf("parse agents file: %w", err)
		}
		id := doc.ID
		if id == "" {
			id = DefaultAgentID
		}
		cfg := doc.AgentConfig
		out[id] = &cfg
	}
	idsSorted := make([]string, 0, len(out))
	for id := range out {
		idsSorted = append(idsSorted, id)
	}
	sort.Strings(idsSorted)
	for _, id := range idsSorted {
		if err := Validate(id, out[id]); err != nil {
			return nil, err
		}
	}
	return out, nil
}

func strictYAML(data []byte, v any) error {
	dec := yaml.NewDecoder(bytes.NewReader(data))
	dec.KnownFields(true)
	return dec.Decode(v)
}

// ReservedIDs are the path segments the REST API serves under /agents/ itself
// (/agents/tools, /agents/events, /agents/skills/available): an agent with
// one of these ids could be created but never reached by its routes.
var ReservedIDs = []string{"tools", "events", "skills"}

// Validate checks an agent id and configuration; errors name the field.
func Validate(id string, cfg *loop.AgentConfig) error {
	fail := func(format string, args ...any) error {
		return fmt.Errorf("%w: agent %q: %s", ErrInvalid, id, fmt.Sprintf(format, args...))
	}
	if err := ids.Check("agent_id", id); err != nil {
		return fmt.Errorf("%w: %w", ErrInvalid, err)
	}
	if slices.Contains(ReservedIDs, id) {
		return fmt.Errorf("%w: agent_id %q is reserved by the REST API's /agents/%s routes; choose another", ErrInvalid, id, id)
	}
	if cfg == nil {
		return fail("configuration is empty")
	}
	if _, err := ModelSpecs(cfg.Model, ""); err != nil {
		return fail("model: %v", err)
	}
	for i, t := range cfg.Tools {
		if !ids.Valid(t) {
			return fail("tools[%d] %q must be 1-64 letters, digits, '-' or '_'", i, t)
		}
	}
	if b := cfg.Backend; b != nil {
		switch b.Type {
		case backend.Local, backend.Docker:
		default:
			return fail("backend.type %q must be %q or %q", b.Type, backend.Local, backend.Docker)
		}
		switch b.Network {
		case "", "none", "bridge":
		default:
			return fail(`backend.network %q must be "none" or "bridge"`, b.Network)
		}
		if b.Timeout < 0 || b.MaxOutputBytes < 0 || b.MemoryBytes < 0 || b.NanoCPUs < 0 || b.WorkspaceBytes < 0 {
			return fail("backend limits must not be negative")
		}
	}
	if cfg.ContextWindow < 0 {
		return fail("context_window must not be negative")
	}
	if cfg.MaxTurns < 0 || cfg.MaxTurns > MaxTurnsLimit {
		return fail("max_turns must be between 0 and %d", MaxTurnsLimit)
	}
	switch cfg.Approval {
	case "", loop.ApprovalAutonomous, loop.ApprovalInteractive:
	default:
		return fail(`approval %q must be "autonomous" or "interactive"`, cfg.Approval)
	}
	if err := loop.CheckToolWait(cfg.ToolWait); err != nil {
		return fail(`tool_wait %q must be "all", "any" or "majority"`, cfg.ToolWait)
	}
	for name := range cfg.Hooks {
		if !KnownHook(name) {
			return fail("hooks: unknown hook %q (known: %v)", name, hooks.Names())
		}
	}
	if len(cfg.Collections) > MaxCollections {
		return fail("collections: at most %d", MaxCollections)
	}
	for _, c := range cfg.Collections {
		if c == "" || len(c) > 130 {
			return fail("collections: %q is not a collection id (name or org.name)", c)
		}
	}
	if cfg.KnowledgeTopK < 0 || cfg.KnowledgeTopK > knowledge.MaxTopK {
		return fail("knowledge_top_k must be between 0 and %d", knowledge.MaxTopK)
	}
	if m := cfg.KnowledgeMinScore; m != nil && !(*m >= 0 && *m <= 1) {
		return fail("knowledge_min_score must be between 0 and 1")
	}
	if err := validateSubagents(cfg.Subagents, fail); err != nil {
		return err
	}
	if err := validateACP(cfg, fail); err != nil {
		return err
	}
	return validateMCPServers(cfg, fail)
}

// validateACP checks an agent's acp: entry. The external agent has its own
// model and tools, so an agent that sets those too is refused rather than
// left to wonder which one runs.
func validateACP(cfg *loop.AgentConfig, fail func(string, ...any) error) error {
	a := cfg.ACP
	if a == nil {
		return nil
	}
	switch {
	case strings.TrimSpace(a.Command) == "":
		return fail("acp.command is required: the program of the ACP agent, run in the sandbox")
	case cfg.Backend == nil:
		return fail("acp runs a command, which needs a sandbox: set backend")
	case cfg.Model != nil:
		return fail("model: an agent backed by acp uses the ACP agent's own model; remove model or acp")
	case len(cfg.Tools) > 0:
		return fail("tools: an agent backed by acp uses the ACP agent's own tools; remove tools or acp (mcp_servers are handed to it)")
	case len(cfg.Subagents) > 0:
		return fail("subagents: an agent backed by acp cannot declare sub-agents; remove subagents or acp")
	}
	root := wickfs.DefaultPrefix
	if w := cfg.Backend.Workdir; w != "" {
		root = path.Clean(w)
	}
	if d := a.StateDir; d != "" && (path.Clean(d) != d || !strings.HasPrefix(d, root+"/")) {
		return fail("acp.state_dir %q must be a clean path under %s/, on the workspace volume", d, root)
	}
	if err := checkValues("acp", a.Env, fail); err != nil {
		return err
	}
	return checkEnvNames("acp.env", a.Env, fail)
}

// checkValues refuses a value the API showed masked and the client sent
// back where no stored value replaced it (storing it would replace the
// secret with the mask) and a malformed ${secret:NAME} reference.
func checkValues(at string, values map[string]string, fail func(string, ...any) error) error {
	for _, k := range sortedKeys(values) {
		v := values[k]
		if v == redact.Mask {
			return fail("%s: %q is %s, as the API shows it, and no stored value of the same command, args and url replaces it; give the real value or a ${secret:NAME} reference", at, k, redact.Mask)
		}
		if err := secrets.Check(v); err != nil {
			return fail("%s: %q: %v", at, k, err)
		}
	}
	return nil
}

// checkEnvNames refuses names a process environment cannot carry.
func checkEnvNames(at string, env map[string]string, fail func(string, ...any) error) error {
	for k := range env {
		if !envNameRE.MatchString(k) {
			return fail("%s: %q is not an environment variable name", at, k)
		}
	}
	return nil
}

// Bounds of declared sub-agents.
const (
	// MaxSubagents bounds the sub-agents one agent declares.
	MaxSubagents = 32
	// MaxSubagentDescription bounds a sub-agent's description, which goes
	// into the task tool's description on every model call.
	MaxSubagentDescription = 1000
)

// validateSubagents checks an agent's subagents: entries.
func validateSubagents(subs []loop.SubagentCfg, fail func(string, ...any) error) error {
	if len(subs) > MaxSubagents {
		return fail("subagents: at most %d", MaxSubagents)
	}
	seen := map[string]bool{tools.TaskGeneralPurpose: true}
	for i, s := range subs {
		switch {
		case !ids.Valid(s.Name):
			return fail("subagents[%d].name %q must be 1-64 letters, digits, '-' or '_'", i, s.Name)
		case seen[s.Name]:
			return fail("subagents[%d].name %q is taken (%q is built in)", i, s.Name, tools.TaskGeneralPurpose)
		case s.Description == "" || len(s.Description) > MaxSubagentDescription:
			return fail("subagents[%d].description is required, at most %d bytes", i, MaxSubagentDescription)
		case s.Timeout < 0:
			return fail("subagents[%d].timeout must not be negative", i)
		}
		seen[s.Name] = true
		if s.A2A != nil {
			if err := validateA2A(i, s, fail); err != nil {
				return err
			}
			continue
		}
		if s.Model != nil {
			if _, err := ModelSpecs(s.Model, ""); err != nil {
				return fail("subagents[%d].model: %v", i, err)
			}
		}
		for j, t := range s.Tools {
			if !ids.Valid(t) {
				return fail("subagents[%d].tools[%d] %q must be 1-64 letters, digits, '-' or '_'", i, j, t)
			}
		}
	}
	return nil
}

// validateA2A checks sub-agent i, declared as a remote A2A agent: the
// remote agent has its own prompt, model and tools, so setting those too is
// refused rather than silently ignored.
func validateA2A(i int, s loop.SubagentCfg, fail func(string, ...any) error) error {
	at := fmt.Sprintf("subagents[%d]", i)
	if s.Prompt != "" || s.Model != nil || len(s.Tools) > 0 {
		return fail("%s (%s) is a remote A2A agent, which has its own prompt, model and tools: remove prompt, model and tools, or a2a", at, s.Name)
	}
	u, err := url.Parse(s.A2A.URL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return fail("%s.a2a.url %q must be an http:// or https:// URL (the agent's JSON-RPC endpoint)", at, s.A2A.URL)
	}
	if u.User != nil {
		return fail("%s.a2a.url must not carry credentials; give them as token", at)
	}
	return checkValues(at+".a2a", map[string]string{"token": s.A2A.Token}, fail)
}

// Bounds of MCP servers.
const (
	// MaxMCPServers bounds the MCP servers one agent lists.
	MaxMCPServers = 16
	// MaxMCPServerName bounds a server's name, so that "<server>__<tool>"
	// leaves room for the tool's name within the 64 characters providers
	// accept.
	MaxMCPServerName = 24
	// MaxMCPTimeout is the longest per-call timeout of a server: the
	// loop's tool timeout (10 min) bounds every call anyway.
	MaxMCPTimeout = 10 * time.Minute
)

// envNameRE is a portable environment variable name.
var envNameRE = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)

// validateMCPServers checks an agent's mcp_servers: entries.
func validateMCPServers(cfg *loop.AgentConfig, fail func(string, ...any) error) error {
	if len(cfg.MCPServers) > MaxMCPServers {
		return fail("mcp_servers: at most %d", MaxMCPServers)
	}
	seen := map[string]bool{}
	for i, m := range cfg.MCPServers {
		at := fmt.Sprintf("mcp_servers[%d]", i)
		switch {
		case !ids.Valid(m.Name) || len(m.Name) > MaxMCPServerName || strings.Contains(m.Name, "__"):
			return fail("%s.name %q must be 1-%d letters, digits, '-' or '_', without \"__\"", at, m.Name, MaxMCPServerName)
		case seen[m.Name]:
			return fail("%s.name %q is listed twice", at, m.Name)
		case (m.Command == "") == (m.URL == ""):
			return fail("%s (%s) needs exactly one of command (a program run in the sandbox) or url (a streamable-HTTP endpoint)", at, m.Name)
		case m.Timeout < 0 || m.Timeout > MaxMCPTimeout:
			return fail("%s.timeout must be between 0 and %s", at, MaxMCPTimeout)
		}
		seen[m.Name] = true
		for _, v := range [...]map[string]string{m.Env, m.Headers} {
			if err := checkValues(at+" ("+m.Name+")", v, fail); err != nil {
				return err
			}
		}
		if m.Command != "" {
			if cfg.Backend == nil {
				return fail("%s (%s) runs a command, which needs a sandbox: set backend, or use url", at, m.Name)
			}
			if len(m.Headers) > 0 {
				return fail("%s (%s): headers go with url, not command", at, m.Name)
			}
			if err := checkEnvNames(at+".env", m.Env, fail); err != nil {
				return err
			}
			continue
		}
		if len(m.Args) > 0 || len(m.Env) > 0 {
			return fail("%s (%s): args and env go with command, not url", at, m.Name)
		}
		u, err := url.Parse(m.URL)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return fail("%s.url %q must be an http:// or https:// URL", at, m.URL)
		}
		if u.User != nil {
			return fail("%s.url must not carry credentials; send them in headers", at)
		}
		for k, v := range m.Headers {
			if k == "" || strings.ContainsAny(k, " \t\r\n:") || strings.ContainsAny(v, "\r\n") {
				return fail("%s.headers: %q is not a valid HTTP header", at, k)
			}
		}
	}
	return nil
}

// MaxCollections bounds the knowledge collections one agent searches.
const MaxCollections = 16

// KnownHook reports whether name is a hook name.
func KnownHook(name string) bool {
	for _, n := range hooks.Names() {
		if n == name {
			return true
		}
	}
	return false
}

// Clone deep-copies a configuration (through its JSON form, which every
// field has).
func Clone(cfg *loop.AgentConfig) *loop.AgentConfig {
	data, err := marshal(cfg)
	if err != nil {
		panic(fmt.Sprintf("registry: agent config does not encode: %v", err))
	}
	var c loop.AgentConfig
	if err := unmarshal(data, &c); err != nil {
		panic(fmt.Sprintf("registry: agent config does not decode: %v", err))
	}
	return &c
}
