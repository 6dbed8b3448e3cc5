package registry

import (
	"bytes"
	"context"
	"fmt"
	"slices"

	"google.golang.org/grpc/codes"

	"github.com/wick-agent/wick/platform/errcode"
	"github.com/wick-agent/wick/platform/identity"
	"github.com/wick-agent/wick/services/agent/internal/loop"
	"github.com/wick-agent/wick/services/agent/internal/secrets"
)

// ErrSecretDenied is returned for an agent that names a mounted secret its
// user may not use.
var ErrSecretDenied = errcode.New(codes.PermissionDenied, "secret reference not allowed")

// WithSecretGrants lets the users and organisations of g name the secrets
// granted to them in agents they write; without it only templates do.
func WithSecretGrants(g secrets.Grants) Option { return func(r *Registry) { r.grants = g } }

// CheckSecrets refuses a ${secret:NAME} reference in cfg, the user's agent
// id, that the user (with the organisations ctx carries) may not use.
// Mounted secrets are the operator's: a reference is allowed where the
// agent's template holds the same MCP server, ACP agent or remote A2A
// sub-agent unchanged — so a
// copy of a template keeps working while a changed command or URL cannot
// carry the template's secret elsewhere — or where the operator granted the
// secret to the user or one of their organisations.
func (r *Registry) CheckSecrets(ctx context.Context, user, id string, cfg *loop.AgentConfig) error {
	tmpl := r.templates[id]
	orgs := identity.Orgs(ctx)
	check := func(at string, values map[string]string) error {
		for _, k := range sortedKeys(values) {
			for _, name := range secrets.Refs(values[k]) {
				if !r.grants.Allows(name, user, orgs) {
					return fmt.Errorf("%w: %s %q names ${secret:%s}, a secret of the operator's that this user may not use (only the operator's agent templates name secrets, or an operator grant)", ErrSecretDenied, at, k, name)
				}
			}
		}
		return nil
	}
	for i, m := range cfg.MCPServers {
		if tmpl != nil && slices.ContainsFunc(tmpl.MCPServers, func(t loop.MCPServerCfg) bool { return sameConfig(t, m) }) {
			continue
		}
		if err := check(fmt.Sprintf("mcp_servers[%d].env", i), m.Env); err != nil {
			return err
		}
		if err := check(fmt.Sprintf("mcp_servers[%d].headers", i), m.Headers); err != nil {
			return err
		}
	}
	for i, s := range cfg.Subagents {
		if s.A2A == nil || tmpl != nil && slices.ContainsFunc(tmpl.Subagents, func(t loop.SubagentCfg) bool { return sameConfig(t, s) }) {
			continue
		}
		if err := check(fmt.Sprintf("subagents[%d].a2a", i), map[string]string{"token": s.A2A.Token}); err != nil {
			return err
		}
	}
	if cfg.ACP != nil && (tmpl == nil || tmpl.ACP == nil || !sameConfig(*tmpl.ACP, *cfg.ACP)) {
		return check("acp.env", cfg.ACP.Env)
	}
	return nil
}

// sameConfig compares two configurations as they are stored, so that a nil
// and an empty list or map, which encode alike, are the same.
func sameConfig(a, b any) bool {
	x, err := marshal(a)
	if err != nil {
		return false
	}
	y, err := marshal(b)
	if err != nil {
		return false
	}
	return bytes.Equal(x, y)
}

func sortedKeys(m map[string]string) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}
