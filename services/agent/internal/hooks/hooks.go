// Package hooks holds the agent's built-in hooks (tracing, todo list,
// filesystem, skills, memory, knowledge, summarization) and Build, which assembles them
// for an agent in registration order.
package hooks

import (
	"github.com/wick-agent/wick/services/agent/internal/loop"
	"github.com/wick-agent/wick/wickfs"
)

// Hook names, as AgentConfig.Hooks toggles them.
const (
	NameTracing       = "tracing"
	NameTodoList      = "todolist"
	NameFilesystem    = "filesystem"
	NameSkills        = "skills"
	NameMemory        = "memory"
	NameSummarization = "summarization"
	NameKnowledge     = "knowledge"
)

// order is the registration order: the first is the outermost ring, so
// tracing's spans include the other hooks' work.
// The knowledge hook comes before summarization, so that the passages it
// injects count towards the context the summarizer measures.
var order = []string{NameTracing, NameTodoList, NameFilesystem, NameSkills, NameMemory, NameKnowledge, NameSummarization}

// Names returns the hook names in registration order.
func Names() []string { return append([]string(nil), order...) }

// ToolNames returns the names of the tools hooks register on a run's state,
// sorted. A run's state tools win over the agent's own tools of the same
// name, so these names are reserved.
func ToolNames() []string {
	return []string{ToolEditFile, ToolExecute, ToolGlob, ToolGrep, ToolLs, ToolReadFile, ToolSearchKnowledge, ToolWriteFile, ToolWriteTodos}
}

// phases are the loop phases each hook implements, as Describe reports them.
var phases = map[string][]string{
	NameTracing:       {loop.PhaseWrapModelCall, loop.PhaseWrapToolCall},
	NameTodoList:      {loop.PhaseBeforeAgent},
	NameFilesystem:    {loop.PhaseBeforeAgent, loop.PhaseWrapToolCall},
	NameSkills:        {loop.PhaseBeforeAgent, loop.PhaseModifyRequest},
	NameMemory:        {loop.PhaseBeforeAgent, loop.PhaseModifyRequest},
	NameSummarization: {loop.PhaseWrapModelCall},
	NameKnowledge:     {loop.PhaseBeforeAgent, loop.PhaseModifyRequest},
}

func phasesOf(name string) []string { return append([]string(nil), phases[name]...) }

// Status is a hook of an agent: whether it is enabled and its phases.
type Status struct {
	Name    string   `json:"name"`
	Enabled bool     `json:"enabled"`
	Phases  []string `json:"phases"`
}

// active applies cfg's toggles, then each hook's needs: the filesystem,
// skills and memory hooks need a backend, skills and memory their paths, the
// knowledge hook a collection.
func active(cfg *loop.AgentConfig, name string, hasBackend bool) bool {
	if !cfg.HookEnabled(name) {
		return false
	}
	switch name {
	case NameFilesystem:
		return hasBackend
	case NameSkills:
		return hasBackend && cfg.Skills != nil && len(cfg.Skills.Paths) > 0
	case NameMemory:
		return hasBackend && cfg.Memory != nil && len(cfg.Memory.Paths) > 0
	case NameKnowledge:
		return len(cfg.Collections) > 0
	default:
		return true
	}
}

// Describe lists every hook of cfg with its enabled state and phases, in
// registration order.
func Describe(cfg *loop.AgentConfig, hasBackend bool) []Status {
	if cfg == nil {
		cfg = &loop.AgentConfig{}
	}
	out := make([]Status, 0, len(order))
	for _, n := range order {
		out = append(out, Status{Name: n, Enabled: active(cfg, n, hasBackend), Phases: phasesOf(n)})
	}
	return out
}

// BuildOption gives Build what optional hooks need.
type BuildOption func(*buildOptions)

type buildOptions struct {
	knowledge KnowledgeSearcher
}

// WithKnowledge gives the knowledge hook its knowledge base; without it the
// hook is not built even for agents that name collections.
func WithKnowledge(k KnowledgeSearcher) BuildOption {
	return func(o *buildOptions) { o.knowledge = k }
}

// Build returns the agent's hooks in registration order, applying cfg.Hooks
// toggles and each hook's needs (active). fs is nil when the agent
// has no backend. Hooks keep per-run state, so build them for each run.
func Build(cfg *loop.AgentConfig, fs wickfs.FileSystem, model Caller, opts ...BuildOption) []loop.Hook {
	if cfg == nil {
		cfg = &loop.AgentConfig{}
	}
	var bo buildOptions
	for _, o := range opts {
		o(&bo)
	}
	hasBackend := cfg.Backend != nil && fs != nil
	var out []loop.Hook
	for _, n := range order {
		if !active(cfg, n, hasBackend) {
			continue
		}
		switch n {
		case NameTracing:
			out = append(out, NewTracingHook())
		case NameTodoList:
			out = append(out, NewTodoListHook())
		case NameFilesystem:
			out = append(out, NewFilesystemHook(fs, filesystemOptions(cfg.Backend)...))
		case NameSkills:
			out = append(out, NewSkillsHook(fs, cfg.Skills.Paths))
		case NameMemory:
			out = append(out, NewMemoryHook(fs, cfg.Memory.Paths))
		case NameKnowledge:
			if bo.knowledge != nil {
				out = append(out, NewKnowledgeHook(bo.knowledge, cfg.Collections, cfg.KnowledgeTopK, cfg.KnowledgeMinScore))
			}
		case NameSummarization:
			if model != nil {
				out = append(out, NewSummarizationHook(model, cfg.ContextWindow))
			}
		}
	}
	return out
}

// filesystemOptions carries the backend's command limits into the execute tool.
func filesystemOptions(b *loop.BackendCfg) []FilesystemOption {
	var opts []FilesystemOption
	if b.Workdir != "" {
		opts = append(opts, WithWorkdir(b.Workdir))
	}
	if b.Timeout > 0 {
		opts = append(opts, WithExecTimeout(b.Timeout))
	}
	if b.MaxOutputBytes > 0 {
		opts = append(opts, WithExecMaxOutput(b.MaxOutputBytes))
	}
	return opts
}
