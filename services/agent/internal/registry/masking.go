package registry

import (
	"slices"
	"strings"

	"github.com/wick-agent/wick/services/agent/internal/loop"
	"github.com/wick-agent/wick/services/agent/internal/redact"
	"github.com/wick-agent/wick/services/agent/internal/secrets"
)

// credentialWords are the parts of an env variable's or a header's name
// (compared in upper case) that say its value is a credential. The header
// names that carry credentials (Authorization, Proxy-Authorization, Cookie,
// X-Api-Key) contain one of them.
var credentialWords = []string{"KEY", "TOKEN", "SECRET", "PASSWORD", "PASSWD", "AUTH", "CREDENTIAL", "COOKIE", "SESSION", "PRIVATE"}

// CredentialName reports whether an env variable or header named name
// holds a credential.
func CredentialName(name string) bool {
	u := strings.ToUpper(name)
	return slices.ContainsFunc(credentialWords, func(w string) bool { return strings.Contains(u, w) })
}

// Masked returns the env or header values of an MCP server or ACP agent as
// the API shows them. A value made of ${secret:NAME} references (and an
// authorization scheme) holds no key and is shown as written; so is any
// other value, unless its name is a credential's (CredentialName) or its
// text looks like a key (a provider key, a bearer token ...): those are
// redact.Mask. Showing the rest keeps a configuration readable (a base
// URL, a model name) and lets a client send it back unchanged.
func Masked(values map[string]string) map[string]string {
	if values == nil {
		return nil
	}
	out := make(map[string]string, len(values))
	for k, v := range values {
		if hidden(k, v) {
			out[k] = redact.Mask
		} else {
			out[k] = v
		}
	}
	return out
}

// hidden reports whether the API masks the value v of k.
func hidden(k, v string) bool {
	switch {
	case v == "" || secrets.Shown(v):
		return false
	case CredentialName(k):
		return true
	}
	return redact.String(v) != v
}

// keepMasked gives each value of next that a client sent back as
// redact.Mask the value cur stores for the same key of the same entry: the
// acp agent, the MCP server of the same name, or the token of the remote
// A2A sub-agent of the same name and url. An entry whose command,
// args or url changed keeps nothing, so a stored key cannot be carried to
// another program or endpoint by a client that never knew it; its masked
// values are then refused by Validate, asking for the real ones.
func keepMasked(cur, next *loop.AgentConfig) {
	if cur.ACP != nil && next.ACP != nil && sameTarget(cur.ACP.Command, next.ACP.Command, cur.ACP.Args, next.ACP.Args, "", "") {
		keepValues(cur.ACP.Env, next.ACP.Env)
	}
	for i := range next.Subagents {
		n := &next.Subagents[i]
		j := slices.IndexFunc(cur.Subagents, func(c loop.SubagentCfg) bool { return c.Name == n.Name })
		if j < 0 || n.A2A == nil || cur.Subagents[j].A2A == nil || n.A2A.URL != cur.Subagents[j].A2A.URL {
			continue
		}
		if n.A2A.Token == redact.Mask {
			a := *n.A2A
			a.Token = cur.Subagents[j].A2A.Token
			n.A2A = &a
		}
	}
	for i := range next.MCPServers {
		n := &next.MCPServers[i]
		j := slices.IndexFunc(cur.MCPServers, func(c loop.MCPServerCfg) bool { return c.Name == n.Name })
		if j < 0 {
			continue
		}
		c := cur.MCPServers[j]
		if sameTarget(c.Command, n.Command, c.Args, n.Args, c.URL, n.URL) {
			keepValues(c.Env, n.Env)
			keepValues(c.Headers, n.Headers)
		}
	}
}

// sameTarget reports whether an entry still runs the same program or
// reaches the same endpoint.
func sameTarget(cmdA, cmdB string, argsA, argsB []string, urlA, urlB string) bool {
	return cmdA == cmdB && slices.Equal(argsA, argsB) && urlA == urlB
}

// keepValues replaces each masked value of next with the value cur holds
// for its key, where it holds one.
func keepValues(cur, next map[string]string) {
	for k, v := range next {
		if v != redact.Mask {
			continue
		}
		if old, ok := cur[k]; ok {
			next[k] = old
		}
	}
}
