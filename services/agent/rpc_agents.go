package agent

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strconv"
	"strings"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"

	agentv1 "github.com/wick-agent/wick/gen/wick/agent/v1"
	sandboxv1 "github.com/wick-agent/wick/gen/wick/sandbox/v1"
	"github.com/wick-agent/wick/platform/backend"
	"github.com/wick-agent/wick/platform/identity"
	"github.com/wick-agent/wick/services/agent/internal/hooks"
	"github.com/wick-agent/wick/services/agent/internal/ids"
	"github.com/wick-agent/wick/services/agent/internal/loop"
	"github.com/wick-agent/wick/services/agent/internal/quota"
	"github.com/wick-agent/wick/services/agent/internal/redact"
	"github.com/wick-agent/wick/services/agent/internal/registry"
	"github.com/wick-agent/wick/services/agent/internal/sandboxfs"
	"github.com/wick-agent/wick/services/agent/internal/tasks"
	"github.com/wick-agent/wick/services/agent/internal/tools"
)

// Sandbox states reported when the sandbox service has none or cannot say.
const (
	sandboxNone    = "none"
	sandboxUnknown = "unknown"
)

// EventSubscribed is the first event of WatchEvents, sent at once so that
// a streaming client gets its response headers before any change happens.
const EventSubscribed = "subscribed"

// jsonData turns an (already redacted) proto message into event data.
func jsonData(m proto.Message) any {
	b, err := protojson.MarshalOptions{UseProtoNames: true}.Marshal(m)
	if err != nil {
		return nil
	}
	var v any
	if err := json.Unmarshal(b, &v); err != nil {
		return nil
	}
	return v
}

func (s *Service) publish(ctx context.Context, user, event, agentID, name string, data any) {
	s.hub.Publish(ctx, registry.ConfigEvent{User: user, Event: event, AgentID: agentID, Name: name, Data: data})
}

func (s *Service) sandboxState(ctx context.Context, e *registry.Entry) string {
	if e.Config.Backend == nil {
		return ""
	}
	resp, err := s.sandbox.GetSandbox(ctx, &sandboxv1.GetSandboxRequest{AgentId: e.ID})
	if status.Code(err) == codes.NotFound {
		return sandboxNone
	}
	if err != nil {
		return sandboxUnknown
	}
	return resp.GetSandbox().GetState()
}

// ListAgents implements agentv1.AgentServiceServer.
func (s *Service) ListAgents(ctx context.Context, _ *agentv1.ListAgentsRequest) (*agentv1.ListAgentsResponse, error) {
	user, err := identity.Require(ctx)
	if err != nil {
		return nil, err
	}
	entries, err := s.registry.List(ctx, user)
	if err != nil {
		return nil, rpcErr(ctx, err)
	}
	out := &agentv1.ListAgentsResponse{}
	for _, e := range entries {
		out.Agents = append(out.Agents, agentToProto(e, ""))
	}
	return out, nil
}

// CreateAgent implements agentv1.AgentServiceServer.
func (s *Service) CreateAgent(ctx context.Context, req *agentv1.CreateAgentRequest) (*agentv1.CreateAgentResponse, error) {
	user, err := identity.Require(ctx)
	if err != nil {
		return nil, err
	}
	a := req.GetAgent()
	if a == nil {
		return nil, invalid("agent", "required")
	}
	if err := checkID("agent.agent_id", a.GetAgentId()); err != nil {
		return nil, err
	}
	e, err := s.registry.Create(ctx, user, a.GetAgentId(), agentFromProto(a))
	if err != nil {
		return nil, rpcErr(ctx, err)
	}
	pa := agentToProto(e, "")
	s.publish(ctx, user, registry.EventAgentCreated, e.ID, "", jsonData(pa))
	return &agentv1.CreateAgentResponse{Agent: pa}, nil
}

// GetAgent implements agentv1.AgentServiceServer.
func (s *Service) GetAgent(ctx context.Context, req *agentv1.GetAgentRequest) (*agentv1.GetAgentResponse, error) {
	user, e, err := s.agentFor(ctx, req.GetAgentId())
	if err != nil {
		return nil, err
	}
	_ = user
	return &agentv1.GetAgentResponse{Agent: agentToProto(e, s.sandboxState(ctx, e))}, nil
}

// UpdateAgent implements agentv1.AgentServiceServer. The configuration is
// replaced whole; a value sent back as the redaction mask keeps its stored
// value (registry.Replace). A changed backend stops the old sandbox (its
// workspace kept), as SwitchBackend does, so the next use builds one from
// the new backend.
func (s *Service) UpdateAgent(ctx context.Context, req *agentv1.UpdateAgentRequest) (*agentv1.UpdateAgentResponse, error) {
	user, e, err := s.agentFor(ctx, req.GetAgentId())
	if err != nil {
		return nil, err
	}
	a := req.GetAgent()
	if a == nil {
		return nil, invalid("agent", "required")
	}
	if id := a.GetAgentId(); id != "" && id != e.ID {
		return nil, invalid("agent.agent_id", fmt.Sprintf("%q is not the agent updated, %q; an agent cannot be renamed", id, e.ID))
	}
	prev := backendToProto(e.Config.Backend)
	e, err = s.registry.Replace(ctx, user, e.ID, agentFromProto(a))
	if err != nil {
		return nil, rpcErr(ctx, err)
	}
	if prev != nil && !proto.Equal(prev, backendToProto(e.Config.Backend)) {
		if _, err := s.sandbox.StopSandbox(ctx, &sandboxv1.StopSandboxRequest{AgentId: e.ID}); err != nil && status.Code(err) != codes.NotFound {
			return nil, rpcErr(ctx, fmt.Errorf("stop the old sandbox: %w", err))
		}
	}
	pa := agentToProto(e, s.sandboxState(ctx, e))
	s.publish(ctx, user, registry.EventAgentUpdated, e.ID, "", jsonData(pa))
	return &agentv1.UpdateAgentResponse{Agent: pa}, nil
}

// agentFor returns the caller and their agent.
func (s *Service) agentFor(ctx context.Context, agentID string) (string, *registry.Entry, error) {
	user, err := identity.Require(ctx)
	if err != nil {
		return "", nil, err
	}
	if err := checkID("agent_id", agentID); err != nil {
		return "", nil, err
	}
	e, err := s.registry.Get(ctx, user, agentID)
	if errors.Is(err, registry.ErrNotFound) {
		return "", nil, status.Errorf(codes.NotFound, "agent %s not found", agentID)
	}
	if err != nil {
		return "", nil, rpcErr(ctx, err)
	}
	return user, e, nil
}

// DeleteAgent implements agentv1.AgentServiceServer. The agent's unfinished
// runs are cancelled first, on whichever replica runs them, and its sandbox
// goes after the agent; the answer names what was removed.
func (s *Service) DeleteAgent(ctx context.Context, req *agentv1.DeleteAgentRequest) (*agentv1.DeleteAgentResponse, error) {
	user, e, err := s.agentFor(ctx, req.GetAgentId())
	if err != nil {
		return nil, err
	}
	// Runs record the agent id they were started with, which is the one asked for.
	cancelled, err := s.exec.CancelAgent(ctx, user, req.GetAgentId())
	if err != nil {
		return nil, rpcErr(ctx, fmt.Errorf("cancel runs of agent %s: %w", e.ID, err))
	}
	if err := s.registry.Delete(ctx, user, e.ID); err != nil {
		return nil, rpcErr(ctx, err)
	}
	out := &agentv1.DeleteAgentResponse{CancelledRunIds: cancelled}
	if e.Config.Backend != nil {
		_, err := s.sandbox.DeleteSandbox(ctx, &sandboxv1.DeleteSandboxRequest{AgentId: e.ID})
		switch {
		case err == nil:
			out.SandboxDeleted = true
		case status.Code(err) != codes.NotFound:
			s.logger.Warn("delete sandbox of deleted agent", "agent_id", e.ID, "error", err)
		}
	}
	s.publish(ctx, user, registry.EventAgentDeleted, e.ID, "", nil)
	return out, nil
}

// UpdateHooks implements agentv1.AgentServiceServer.
func (s *Service) UpdateHooks(ctx context.Context, req *agentv1.UpdateHooksRequest) (*agentv1.UpdateHooksResponse, error) {
	user, e, err := s.agentFor(ctx, req.GetAgentId())
	if err != nil {
		return nil, err
	}
	names := make([]string, 0, len(req.GetHooks()))
	for name := range req.GetHooks() {
		if !registry.KnownHook(name) {
			return nil, invalid("hooks", fmt.Sprintf("unknown hook %q (known: %s)", name, strings.Join(hooks.Names(), ", ")))
		}
		names = append(names, name)
	}
	sort.Strings(names)
	e, err = s.registry.Update(ctx, user, e.ID, func(c *loop.AgentConfig) error {
		if c.Hooks == nil {
			c.Hooks = map[string]bool{}
		}
		for name, on := range req.GetHooks() {
			c.Hooks[name] = on
		}
		return nil
	})
	if err != nil {
		return nil, rpcErr(ctx, err)
	}
	st := hooks.Describe(e.Config, e.Config.Backend != nil)
	s.publish(ctx, user, registry.EventAgentUpdated, e.ID, strings.Join(names, ","), map[string]any{"hooks": loop.JSONValue(st)})
	return &agentv1.UpdateHooksResponse{Hooks: hooksToProto(st)}, nil
}

// SwitchBackend implements agentv1.AgentServiceServer. A mode is what a user
// picks, not a backend type: "local" is the local backend; "remote" is
// Docker, on the local engine when sandbox_url is empty and on the engine at
// sandbox_url otherwise.
func (s *Service) SwitchBackend(ctx context.Context, req *agentv1.SwitchBackendRequest) (*agentv1.SwitchBackendResponse, error) {
	user, e, err := s.agentFor(ctx, req.GetAgentId())
	if err != nil {
		return nil, err
	}
	url := strings.TrimSpace(req.GetSandboxUrl())
	var next *loop.BackendCfg
	prev := e.Config.Backend
	switch req.GetMode() {
	case backend.Local:
		if url != "" {
			return nil, invalid("sandbox_url", `only a "remote" backend has a sandbox_url`)
		}
		next = &loop.BackendCfg{Type: backend.Local}
	case "remote":
		if url != "" && !strings.HasPrefix(url, "tcp://") {
			return nil, invalid("sandbox_url", fmt.Sprintf("%q must be a tcp:// Docker engine URL, or empty for the local engine", url))
		}
		next = &loop.BackendCfg{Type: backend.Docker, SandboxURL: url, Image: s.cfg.defaultImage}
		if prev != nil && prev.Image != "" {
			next.Image = prev.Image
		}
		if img := req.GetImage(); img != "" {
			next.Image = img
		}
	default:
		return nil, invalid("mode", fmt.Sprintf(`%q must be "local" or "remote"`, req.GetMode()))
	}
	if prev != nil {
		next.Workdir, next.Timeout, next.MaxOutputBytes = prev.Workdir, prev.Timeout, prev.MaxOutputBytes
		next.Network, next.MemoryBytes, next.NanoCPUs = prev.Network, prev.MemoryBytes, prev.NanoCPUs
		next.WorkspaceBytes, next.Egress = prev.WorkspaceBytes, prev.Egress
		// The old sandbox is stopped (its workspace kept) so the next use
		// builds one from the new backend.
		if _, err := s.sandbox.StopSandbox(ctx, &sandboxv1.StopSandboxRequest{AgentId: e.ID}); err != nil && status.Code(err) != codes.NotFound {
			return nil, rpcErr(ctx, fmt.Errorf("stop the old sandbox: %w", err))
		}
	}
	e, err = s.registry.Update(ctx, user, e.ID, func(c *loop.AgentConfig) error {
		c.Backend = next
		return nil
	})
	if err != nil {
		return nil, rpcErr(ctx, err)
	}
	pa := agentToProto(e, s.sandboxState(ctx, e))
	s.publish(ctx, user, registry.EventBackendSwitched, e.ID, "", jsonData(pa.GetBackend()))
	return &agentv1.SwitchBackendResponse{Agent: pa}, nil
}

// ControlContainer implements agentv1.AgentServiceServer.
func (s *Service) ControlContainer(ctx context.Context, req *agentv1.ControlContainerRequest) (*agentv1.ControlContainerResponse, error) {
	user, e, err := s.agentFor(ctx, req.GetAgentId())
	if err != nil {
		return nil, err
	}
	if e.Config.Backend == nil {
		return nil, status.Errorf(codes.FailedPrecondition, "agent %s has no backend", e.ID)
	}
	var box *sandboxv1.Sandbox
	switch req.GetAction() {
	case "stop":
		resp, err := s.sandbox.StopSandbox(ctx, &sandboxv1.StopSandboxRequest{AgentId: e.ID})
		if status.Code(err) == codes.NotFound {
			return &agentv1.ControlContainerResponse{Status: sandboxNone}, nil
		}
		if err != nil {
			return nil, rpcErr(ctx, fmt.Errorf("stop sandbox: %w", err))
		}
		box = resp.GetSandbox()
	case "restart":
		resp, err := s.sandbox.RestartSandbox(ctx, &sandboxv1.RestartSandboxRequest{AgentId: e.ID})
		if status.Code(err) == codes.NotFound {
			er, err2 := s.sandbox.EnsureSandbox(ctx, &sandboxv1.EnsureSandboxRequest{AgentId: e.ID, Spec: sandboxfs.Spec(e.Config.SandboxBackend())})
			if err2 != nil {
				return nil, rpcErr(ctx, fmt.Errorf("start sandbox: %w", err2))
			}
			box = er.GetSandbox()
		} else if err != nil {
			return nil, rpcErr(ctx, fmt.Errorf("restart sandbox: %w", err))
		} else {
			box = resp.GetSandbox()
		}
	default:
		return nil, invalid("action", fmt.Sprintf(`%q must be "stop" or "restart"`, req.GetAction()))
	}
	s.publish(ctx, user, registry.EventContainerChanged, e.ID, req.GetAction(), map[string]any{"action": req.GetAction(), "status": box.GetState()})
	return &agentv1.ControlContainerResponse{Status: box.GetState()}, nil
}

// ListTools implements agentv1.AgentServiceServer: the caller's external
// tools and the native tools, by name. An external tool that a native tool
// of the same name shadows (registered before the native tool existed) is
// left out, as runs never call it.
func (s *Service) ListTools(ctx context.Context, _ *agentv1.ListToolsRequest) (*agentv1.ListToolsResponse, error) {
	user, err := identity.Require(ctx)
	if err != nil {
		return nil, err
	}
	defs, err := s.st.Agents.ListTools(ctx, user)
	if err != nil {
		return nil, rpcErr(ctx, err)
	}
	out := &agentv1.ListToolsResponse{}
	for _, d := range defs {
		if _, shadowed := s.native[d.Name]; !shadowed {
			out.Tools = append(out.Tools, toolToProto(d))
		}
	}
	for _, n := range s.native {
		out.Tools = append(out.Tools, nativeToProto(n))
	}
	sort.Slice(out.Tools, func(i, j int) bool { return out.Tools[i].GetName() < out.Tools[j].GetName() })
	return out, nil
}

// RegisterTool implements agentv1.AgentServiceServer. A header sent back
// as the redaction mask (a client that edits a listed tool) keeps its
// stored value.
func (s *Service) RegisterTool(ctx context.Context, req *agentv1.RegisterToolRequest) (*agentv1.RegisterToolResponse, error) {
	user, err := identity.Require(ctx)
	if err != nil {
		return nil, err
	}
	if req.GetTool() == nil {
		return nil, invalid("tool", "required")
	}
	if err := checkID("tool.name", req.GetTool().GetName()); err != nil {
		return nil, err
	}
	if tools.IsBuiltin(req.GetTool().GetName()) {
		return nil, invalid("tool.name", fmt.Sprintf("%q is a built-in tool", req.GetTool().GetName()))
	}
	if slices.Contains(tasks.ToolNames(), req.GetTool().GetName()) {
		return nil, invalid("tool.name", fmt.Sprintf("%q is a tool of background tasks", req.GetTool().GetName()))
	}
	if _, native := s.native[req.GetTool().GetName()]; native {
		return nil, invalid("tool.name", fmt.Sprintf("%q is a native tool of this server", req.GetTool().GetName()))
	}
	def := toolFromProto(req.GetTool())
	if old, err := s.st.Agents.GetTool(ctx, user, def.Name); err == nil {
		for k, v := range def.Headers {
			if v == redact.Mask {
				if ov, ok := old.Headers[k]; ok {
					def.Headers[k] = ov
				}
			}
		}
	}
	if err := tools.ValidateHTTPToolDef(*def); err != nil {
		return nil, invalid("tool", err.Error())
	}
	if err := s.st.Agents.PutTool(ctx, user, def, s.cfg.limits.tools()); err != nil {
		return nil, rpcErr(ctx, err)
	}
	pt := toolToProto(def)
	s.publish(ctx, user, registry.EventToolRegistered, "", def.Name, jsonData(pt))
	return &agentv1.RegisterToolResponse{Tool: pt}, nil
}

// DeleteTool implements agentv1.AgentServiceServer.
func (s *Service) DeleteTool(ctx context.Context, req *agentv1.DeleteToolRequest) (*agentv1.DeleteToolResponse, error) {
	user, err := identity.Require(ctx)
	if err != nil {
		return nil, err
	}
	if err := checkID("name", req.GetName()); err != nil {
		return nil, err
	}
	ok, err := s.st.Agents.DeleteTool(ctx, user, req.GetName())
	if err != nil {
		return nil, rpcErr(ctx, err)
	}
	if !ok {
		if _, native := s.native[req.GetName()]; native {
			return nil, status.Errorf(codes.FailedPrecondition, "tool %s is a native tool of this server and cannot be deleted", req.GetName())
		}
		return nil, status.Errorf(codes.NotFound, "tool %s not found", req.GetName())
	}
	s.publish(ctx, user, registry.EventToolDeleted, "", req.GetName(), nil)
	return &agentv1.DeleteToolResponse{}, nil
}

// ListAvailableSkills implements agentv1.AgentServiceServer. Skills live in
// the agents' sandboxes, and listing must not start one (a container per
// agent, for a listing): only running sandboxes are read, and the agents
// whose sandbox is not running are named instead. An agent whose sandbox
// cannot be read is skipped (and logged) when listing all.
func (s *Service) ListAvailableSkills(ctx context.Context, req *agentv1.ListAvailableSkillsRequest) (*agentv1.ListAvailableSkillsResponse, error) {
	user, err := identity.Require(ctx)
	if err != nil {
		return nil, err
	}
	var entries []*registry.Entry
	if id := req.GetAgentId(); id != "" {
		_, e, err := s.agentFor(ctx, id)
		if err != nil {
			return nil, err
		}
		entries = []*registry.Entry{e}
	} else if entries, err = s.registry.List(ctx, user); err != nil {
		return nil, rpcErr(ctx, err)
	}
	seen, seenProblem := map[string]bool{}, map[string]bool{}
	out := &agentv1.ListAvailableSkillsResponse{}
	for _, e := range entries {
		c := e.Config
		if c.Backend == nil || c.Skills == nil || len(c.Skills.Paths) == 0 {
			continue
		}
		box, err := s.sandbox.GetSandbox(ctx, &sandboxv1.GetSandboxRequest{AgentId: e.ID})
		if err != nil && status.Code(err) != codes.NotFound {
			// One agent's sandbox that cannot be asked about must not hide
			// every other agent's skills; asked for that agent alone, it is
			// the answer.
			if req.GetAgentId() != "" {
				return nil, rpcErr(ctx, fmt.Errorf("sandbox of %s: %w", e.ID, err))
			}
			s.logger.Warn("list skills: sandbox state", "agent_id", e.ID, "error", err)
			continue
		}
		if box.GetSandbox().GetState() != sandboxRunning {
			out.NotRunningAgentIds = append(out.NotRunningAgentIds, e.ID)
			continue
		}
		fs := sandboxfs.New(runningSandbox{s.sandbox, box.GetSandbox()}, e.ID, sandboxfs.Spec(c.SandboxBackend()))
		found, problems, err := hooks.DiscoverSkills(ctx, fs, c.Skills.Paths)
		if err != nil {
			if req.GetAgentId() != "" {
				return nil, rpcErr(ctx, fmt.Errorf("discover skills of %s: %w", e.ID, err))
			}
			s.logger.Warn("discover skills", "agent_id", e.ID, "error", err)
			continue
		}
		for _, sk := range found {
			key := sk.Name + "\x00" + sk.Path
			if seen[key] {
				continue
			}
			seen[key] = true
			out.Skills = append(out.Skills, &agentv1.Skill{Name: sk.Name, Description: sk.Description, Path: sk.Path})
		}
		for _, p := range problems {
			if seenProblem[p.Path] {
				continue
			}
			seenProblem[p.Path] = true
			out.Problems = append(out.Problems, &agentv1.SkillProblem{Path: p.Path, Warning: p.Warning})
		}
	}
	sort.Slice(out.Skills, func(i, j int) bool {
		if out.Skills[i].Name != out.Skills[j].Name {
			return out.Skills[i].Name < out.Skills[j].Name
		}
		return out.Skills[i].Path < out.Skills[j].Path
	})
	sort.Slice(out.Problems, func(i, j int) bool { return out.Problems[i].Path < out.Problems[j].Path })
	sort.Strings(out.NotRunningAgentIds)
	return out, nil
}

// sandboxRunning is the sandbox service's state of a running sandbox.
const sandboxRunning = "running"

// runningSandbox is the sandbox client for reading a sandbox known to run:
// its EnsureSandbox answers with that sandbox instead of creating or
// starting one, so reading files through sandboxfs never starts a container.
type runningSandbox struct {
	sandboxv1.SandboxServiceClient
	box *sandboxv1.Sandbox
}

// EnsureSandbox answers with the running sandbox.
func (r runningSandbox) EnsureSandbox(context.Context, *sandboxv1.EnsureSandboxRequest, ...grpc.CallOption) (*sandboxv1.EnsureSandboxResponse, error) {
	return &sandboxv1.EnsureSandboxResponse{Sandbox: r.box}, nil
}

// holdWatcher takes one of the user's event stream slots for a stream
// that is not a run (runs have their own bound).
func (s *Service) holdWatcher(ctx context.Context, user string) (func(), error) {
	release, err := quota.Hold(ctx, s.st.Quota, user, kindWatchers, ids.New("w_"), s.cfg.limits.watchers())
	if err != nil {
		return nil, rpcErr(ctx, err)
	}
	return release, nil
}

// kindWatchers is what quota counts for open event streams.
const kindWatchers = "watchers"

// WatchEvents implements agentv1.AgentServiceServer. A subscriber that falls
// too far behind is disconnected with ResourceExhausted; it never slows
// the others.
func (s *Service) WatchEvents(_ *agentv1.WatchEventsRequest, stream agentv1.AgentService_WatchEventsServer) error {
	ctx := stream.Context()
	user, err := identity.Require(ctx)
	if err != nil {
		return err
	}
	release, err := s.holdWatcher(ctx, user)
	if err != nil {
		return err
	}
	defer release()
	sub, cancel := s.hub.Subscribe(user)
	defer cancel()
	seq := 0
	send := func(ev registry.ConfigEvent) error {
		seq++
		return stream.Send(&agentv1.WatchEventsResponse{Event: &agentv1.ConfigEvent{
			Event: ev.Event, AgentId: ev.AgentID, Name: ev.Name, Data: value(ev.Data), Id: strconv.Itoa(seq), Time: ts(ev.Time),
		}})
	}
	if err := send(registry.ConfigEvent{Event: EventSubscribed}); err != nil {
		return err
	}
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-sub.Done():
			if err := sub.Err(); err != nil {
				return status.Error(codes.ResourceExhausted, err.Error())
			}
			return nil
		case ev := <-sub.C:
			if err := send(ev); err != nil {
				return err
			}
		}
	}
}
