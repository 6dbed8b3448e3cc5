package agent

import (
	"time"

	"google.golang.org/protobuf/types/known/durationpb"
	"google.golang.org/protobuf/types/known/structpb"
	"google.golang.org/protobuf/types/known/timestamppb"

	agentv1 "github.com/wick-agent/wick/gen/wick/agent/v1"
	"github.com/wick-agent/wick/llm"
	"github.com/wick-agent/wick/services/agent/internal/hooks"
	"github.com/wick-agent/wick/services/agent/internal/loop"
	"github.com/wick-agent/wick/services/agent/internal/redact"
	"github.com/wick-agent/wick/services/agent/internal/registry"
	"github.com/wick-agent/wick/services/agent/internal/runs"
	"github.com/wick-agent/wick/services/agent/internal/tools"
)

// value converts a JSON-shaped Go value to a protobuf Value; values that do
// not convert (they never should, being JSON round-tripped) become null.
func value(v any) *structpb.Value {
	if v == nil {
		return nil
	}
	// Logged event data is already plain JSON; other values (typed slices
	// and structs) take a JSON round trip first.
	if pv, err := structpb.NewValue(v); err == nil {
		return pv
	}
	pv, err := structpb.NewValue(loop.JSONValue(v))
	if err != nil {
		return structpb.NewNullValue()
	}
	return pv
}

func structOf(m map[string]any) *structpb.Struct {
	if m == nil {
		return nil
	}
	s, err := structpb.NewStruct(loop.JSONValue(m).(map[string]any))
	if err != nil {
		return nil
	}
	return s
}

func toolCallsToProto(calls []llm.ToolCall, redacted bool) []*agentv1.ToolCall {
	var out []*agentv1.ToolCall
	for _, c := range calls {
		args := c.Args
		if redacted && args != nil {
			args, _ = redact.Value(loop.JSONValue(args)).(map[string]any)
		}
		out = append(out, &agentv1.ToolCall{Id: c.ID, Name: c.Name, Args: structOf(args)})
	}
	return out
}

func messagesToProto(msgs []llm.Message) []*agentv1.Message {
	out := make([]*agentv1.Message, 0, len(msgs))
	for _, m := range msgs {
		out = append(out, &agentv1.Message{
			Role: m.Role, Content: redact.String(m.Content), ToolCalls: toolCallsToProto(m.ToolCalls, true),
			ToolCallId: m.ToolCallID, Name: m.Name,
		})
	}
	return out
}

func messagesFromProto(msgs []*agentv1.Message) []llm.Message {
	out := make([]llm.Message, 0, len(msgs))
	for _, m := range msgs {
		cm := llm.Message{Role: m.GetRole(), Content: m.GetContent(), ToolCallID: m.GetToolCallId(), Name: m.GetName()}
		for _, tc := range m.GetToolCalls() {
			cm.ToolCalls = append(cm.ToolCalls, llm.ToolCall{ID: tc.GetId(), Name: tc.GetName(), Args: tc.GetArgs().AsMap()})
		}
		out = append(out, cm)
	}
	return out
}

func todosToProto(todos []loop.Todo) []*agentv1.Todo {
	out := make([]*agentv1.Todo, 0, len(todos))
	for _, t := range todos {
		out = append(out, &agentv1.Todo{Id: t.ID, Title: t.Title, Status: t.Status})
	}
	return out
}

func stateToProto(st *loop.AgentState) *agentv1.AgentState {
	files := make(map[string]string, len(st.Files))
	for k, v := range st.Files {
		files[k] = redact.String(v)
	}
	out := &agentv1.AgentState{
		ThreadId: st.ThreadID, Messages: messagesToProto(st.Messages), Todos: todosToProto(st.Todos),
		Files: files, AgentId: st.AgentID, Version: st.Version,
	}
	if !st.UpdatedAt.IsZero() {
		out.UpdatedAt = timestamppb.New(st.UpdatedAt)
	}
	return out
}

// eventToProto converts a logged event; its data was redacted when logged.
func eventToProto(ev loop.StreamEvent) *agentv1.StreamEvent {
	return &agentv1.StreamEvent{Event: ev.Event(), Name: ev.Name, RunId: ev.RunID, Payload: ev.Data, ThreadId: ev.ThreadID, Id: ev.ID}
}

func backendToProto(b *loop.BackendCfg) *agentv1.BackendConfig {
	if b == nil {
		return nil
	}
	out := &agentv1.BackendConfig{
		Type: b.Type, Image: b.Image, Workdir: b.Workdir, SandboxUrl: redact.String(b.SandboxURL),
		MaxOutputBytes: b.MaxOutputBytes, Network: b.Network, MemoryBytes: b.MemoryBytes, NanoCpus: b.NanoCPUs,
		WorkspaceBytes: b.WorkspaceBytes, ModelEndpoint: copyBool(b.ModelEndpoint),
		Egress: b.Egress,
	}
	if b.Timeout > 0 {
		out.Timeout = durationpb.New(b.Timeout)
	}
	return out
}

// copyBool copies an optional flag, so a config and its proto never share one.
func copyBool(p *bool) *bool {
	if p == nil {
		return nil
	}
	v := *p
	return &v
}

func backendFromProto(b *agentv1.BackendConfig) *loop.BackendCfg {
	if b == nil {
		return nil
	}
	out := &loop.BackendCfg{
		Type: b.GetType(), Image: b.GetImage(), Workdir: b.GetWorkdir(), SandboxURL: b.GetSandboxUrl(),
		MaxOutputBytes: b.GetMaxOutputBytes(), Network: b.GetNetwork(), MemoryBytes: b.GetMemoryBytes(), NanoCPUs: b.GetNanoCpus(),
		WorkspaceBytes: b.GetWorkspaceBytes(), ModelEndpoint: copyBool(b.ModelEndpoint),
		Egress: b.GetEgress(),
	}
	if b.GetTimeout() != nil {
		out.Timeout = b.GetTimeout().AsDuration()
	}
	return out
}

func agentToProto(e *registry.Entry, sandboxState string) *agentv1.Agent {
	c := e.Config
	out := &agentv1.Agent{
		AgentId: e.ID, Name: c.Name, Model: value(redact.Value(loop.JSONValue(c.Model))), SystemPrompt: redact.String(c.SystemPrompt),
		Tools: c.Tools, Backend: backendToProto(c.Backend), ContextWindow: int32(c.ContextWindow),
		MaxTurns: int32(c.MaxTurns), Approval: c.Approval, Hooks: c.Hooks, SandboxState: sandboxState, Template: e.Template,
		Collections: c.Collections, KnowledgeTopK: int32(c.KnowledgeTopK), KnowledgeMinScore: c.KnowledgeMinScore,
		ToolWait: c.ToolWait, Subagents: subagentsToProto(c.Subagents), TaskFollowUp: c.TaskFollowUp,
		McpServers: mcpServersToProto(c.MCPServers), Acp: acpToProto(c.ACP),
	}
	if c.Skills != nil {
		out.Skills = &agentv1.PathsConfig{Paths: c.Skills.Paths}
	}
	if c.Memory != nil {
		out.Memory = &agentv1.PathsConfig{Paths: c.Memory.Paths}
	}
	return out
}

func agentFromProto(a *agentv1.Agent) *loop.AgentConfig {
	c := &loop.AgentConfig{
		Name: a.GetName(), SystemPrompt: a.GetSystemPrompt(), Tools: a.GetTools(), Backend: backendFromProto(a.GetBackend()),
		ContextWindow: int(a.GetContextWindow()), MaxTurns: int(a.GetMaxTurns()), Approval: a.GetApproval(), Hooks: a.GetHooks(),
		Collections: a.GetCollections(), KnowledgeTopK: int(a.GetKnowledgeTopK()), KnowledgeMinScore: a.KnowledgeMinScore,
		ToolWait: a.GetToolWait(), Subagents: subagentsFromProto(a.GetSubagents()), TaskFollowUp: a.GetTaskFollowUp(),
		MCPServers: mcpServersFromProto(a.GetMcpServers()), ACP: acpFromProto(a.GetAcp()),
	}
	if a.GetModel() != nil {
		c.Model = a.GetModel().AsInterface()
	}
	if a.GetSkills() != nil {
		c.Skills = &loop.SkillsCfg{Paths: a.GetSkills().GetPaths()}
	}
	if a.GetMemory() != nil {
		c.Memory = &loop.MemoryCfg{Paths: a.GetMemory().GetPaths()}
	}
	return c
}

func subagentsToProto(subs []loop.SubagentCfg) []*agentv1.Subagent {
	var out []*agentv1.Subagent
	for _, s := range subs {
		p := &agentv1.Subagent{Name: s.Name, Description: s.Description, Prompt: redact.String(s.Prompt), Tools: s.Tools}
		if s.Model != nil {
			p.Model = value(redact.Value(loop.JSONValue(s.Model)))
		}
		if s.Timeout > 0 {
			p.Timeout = durationpb.New(s.Timeout)
		}
		if s.A2A != nil {
			p.A2A = &agentv1.A2AAgent{Url: redact.String(s.A2A.URL), Token: registry.Masked(map[string]string{"token": s.A2A.Token})["token"]}
		}
		out = append(out, p)
	}
	return out
}

func subagentsFromProto(subs []*agentv1.Subagent) []loop.SubagentCfg {
	var out []loop.SubagentCfg
	for _, p := range subs {
		s := loop.SubagentCfg{Name: p.GetName(), Description: p.GetDescription(), Prompt: p.GetPrompt(), Tools: p.GetTools()}
		if p.GetModel() != nil {
			s.Model = p.GetModel().AsInterface()
		}
		if p.GetTimeout() != nil {
			s.Timeout = p.GetTimeout().AsDuration()
		}
		if a := p.GetA2A(); a != nil {
			s.A2A = &loop.A2ACfg{URL: a.GetUrl(), Token: a.GetToken()}
		}
		out = append(out, s)
	}
	return out
}

// mcpServersToProto masks the header and env values that hold the servers'
// keys (registry.Masked).
func mcpServersToProto(servers []loop.MCPServerCfg) []*agentv1.McpServer {
	var out []*agentv1.McpServer
	for _, m := range servers {
		p := &agentv1.McpServer{
			Name: m.Name, Command: m.Command, Args: m.Args, Env: registry.Masked(m.Env),
			Url: redact.String(m.URL), Headers: registry.Masked(m.Headers),
		}
		if m.Timeout > 0 {
			p.Timeout = durationpb.New(m.Timeout)
		}
		out = append(out, p)
	}
	return out
}

func mcpServersFromProto(servers []*agentv1.McpServer) []loop.MCPServerCfg {
	var out []loop.MCPServerCfg
	for _, p := range servers {
		m := loop.MCPServerCfg{
			Name: p.GetName(), Command: p.GetCommand(), Args: p.GetArgs(), Env: p.GetEnv(),
			URL: p.GetUrl(), Headers: p.GetHeaders(),
		}
		if p.GetTimeout() != nil {
			m.Timeout = p.GetTimeout().AsDuration()
		}
		out = append(out, m)
	}
	return out
}

// acpToProto masks the env values that hold the external agent's key, as
// mcpServersToProto does.
func acpToProto(c *loop.ACPCfg) *agentv1.AcpAgent {
	if c == nil {
		return nil
	}
	return &agentv1.AcpAgent{Command: c.Command, Args: c.Args, Env: registry.Masked(c.Env), StateDir: c.StateDir}
}

func acpFromProto(a *agentv1.AcpAgent) *loop.ACPCfg {
	if a == nil {
		return nil
	}
	return &loop.ACPCfg{Command: a.GetCommand(), Args: a.GetArgs(), Env: a.GetEnv(), StateDir: a.GetStateDir()}
}

func hooksToProto(st []hooks.Status) []*agentv1.HookStatus {
	out := make([]*agentv1.HookStatus, 0, len(st))
	for _, h := range st {
		out = append(out, &agentv1.HookStatus{Name: h.Name, Enabled: h.Enabled, Phases: h.Phases})
	}
	return out
}

func toolToProto(d *tools.HTTPToolDef) *agentv1.ToolDefinition {
	out := &agentv1.ToolDefinition{
		Name: d.Name, Description: d.Description, Parameters: structOf(d.Parameters),
		Url: redact.String(d.URL), Headers: redact.Headers(d.Headers), Kind: ToolKindHTTP,
		Async: d.Async,
	}
	if d.Timeout > 0 {
		out.Timeout = durationpb.New(d.Timeout)
	}
	return out
}

func nativeToProto(n *tools.Native) *agentv1.ToolDefinition {
	return &agentv1.ToolDefinition{Name: n.Name(), Description: n.Description(), Parameters: structOf(n.Parameters()), Kind: ToolKindNative}
}

func toolFromProto(t *agentv1.ToolDefinition) *tools.HTTPToolDef {
	d := &tools.HTTPToolDef{
		Name: t.GetName(), Description: t.GetDescription(), URL: t.GetUrl(), Headers: t.GetHeaders(),
		Async: t.GetAsync(),
	}
	if t.GetParameters() != nil {
		d.Parameters = t.GetParameters().AsMap()
	}
	if t.GetTimeout() != nil {
		d.Timeout = t.GetTimeout().AsDuration()
	}
	return d
}

func runToProto(r *runs.Run, lastEventID string) *agentv1.Run {
	out := &agentv1.Run{
		RunId: r.ID, ThreadId: r.ThreadID, AgentId: r.AgentID, Status: r.Status,
		Pending: toolCallsToProto(r.Pending, true), LastEventId: lastEventID,
	}
	if !r.CreatedAt.IsZero() {
		out.CreatedAt = timestamppb.New(r.CreatedAt)
	}
	return out
}

func ts(t time.Time) *timestamppb.Timestamp {
	if t.IsZero() {
		return nil
	}
	return timestamppb.New(t)
}
