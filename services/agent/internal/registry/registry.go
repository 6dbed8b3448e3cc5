// Package registry keeps agent configurations: templates loaded from
// agents.yaml, visible to every user and cloned per agentID:user when a user
// changes one, and each user's own agents and external tools. It also loads
// and validates agents.yaml and fans configuration events out to watchers.
package registry

import (
	"context"
	"errors"
	"fmt"
	"sort"

	"google.golang.org/grpc/codes"

	"github.com/wick-agent/wick/platform/errcode"
	"github.com/wick-agent/wick/services/agent/internal/loop"
	"github.com/wick-agent/wick/services/agent/internal/quota"
	"github.com/wick-agent/wick/services/agent/internal/secrets"
)

// Errors of the registry.
var (
	ErrExists   = errcode.New(codes.AlreadyExists, "agent already exists")
	ErrTemplate = errcode.New(codes.PermissionDenied, "agent is a shared template and cannot be deleted")
)

// Entry is an agent as one user sees it.
type Entry struct {
	ID     string
	Config *loop.AgentConfig
	// Template is true when the user sees the shared template unchanged.
	Template bool
}

// Registry resolves agents per user.
type Registry struct {
	templates map[string]*loop.AgentConfig
	store     Store
	// limit bounds the agents a user stores: created ones and changed
	// copies of templates.
	limit quota.Limit
	// grants lets users name the operator's secrets in their own agents.
	grants secrets.Grants
}

// Option configures a Registry.
type Option func(*Registry)

// WithAgentLimit bounds the agents each user stores (created ones and
// changed copies of templates); without it they are not bounded.
func WithAgentLimit(l quota.Limit) Option { return func(r *Registry) { r.limit = l } }

// New returns a registry of templates (already validated) over store.
func New(templates map[string]*loop.AgentConfig, store Store, opts ...Option) *Registry {
	t := map[string]*loop.AgentConfig{}
	for id, c := range templates {
		t[id] = Clone(c)
	}
	r := &Registry{templates: t, store: store}
	for _, o := range opts {
		o(r)
	}
	return r
}

// Store returns the underlying store (for tools).
func (r *Registry) Store() Store { return r.store }

// TemplateCount is the number of templates.
func (r *Registry) TemplateCount() int { return len(r.templates) }

// Get returns the user's agent: their own or their clone, else a fresh copy
// of the template.
func (r *Registry) Get(ctx context.Context, user, id string) (*Entry, error) {
	cfg, err := r.store.GetAgent(ctx, user, id)
	if err == nil {
		return &Entry{ID: id, Config: cfg}, nil
	}
	if !errors.Is(err, ErrNotFound) {
		return nil, err
	}
	if t, ok := r.templates[id]; ok {
		return &Entry{ID: id, Config: Clone(t), Template: true}, nil
	}
	return nil, ErrNotFound
}

// List returns every agent the user can use, sorted by id.
func (r *Registry) List(ctx context.Context, user string) ([]*Entry, error) {
	own, err := r.store.ListAgents(ctx, user)
	if err != nil {
		return nil, err
	}
	var out []*Entry
	for id, c := range own {
		out = append(out, &Entry{ID: id, Config: c})
	}
	for id, t := range r.templates {
		if _, ok := own[id]; !ok {
			out = append(out, &Entry{ID: id, Config: Clone(t), Template: true})
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].ID < out[j].ID })
	return out, nil
}

// Create registers a new agent for user.
func (r *Registry) Create(ctx context.Context, user, id string, cfg *loop.AgentConfig) (*Entry, error) {
	if err := Validate(id, cfg); err != nil {
		return nil, err
	}
	if err := r.CheckSecrets(ctx, user, id, cfg); err != nil {
		return nil, err
	}
	if _, err := r.Get(ctx, user, id); err == nil {
		return nil, fmt.Errorf("%w: %q", ErrExists, id)
	} else if !errors.Is(err, ErrNotFound) {
		return nil, err
	}
	if err := r.store.PutAgent(ctx, user, id, cfg, r.limit); err != nil {
		return nil, err
	}
	return &Entry{ID: id, Config: Clone(cfg)}, nil
}

// Update applies fn to the user's agent and stores the result; a template
// is cloned for the user first. Concurrent updates of one agent are last
// writer wins: configuration changes are rare and whole.
func (r *Registry) Update(ctx context.Context, user, id string, fn func(*loop.AgentConfig) error) (*Entry, error) {
	e, err := r.Get(ctx, user, id)
	if err != nil {
		return nil, err
	}
	if err := fn(e.Config); err != nil {
		return nil, err
	}
	if err := Validate(id, e.Config); err != nil {
		return nil, err
	}
	if err := r.CheckSecrets(ctx, user, id, e.Config); err != nil {
		return nil, err
	}
	if err := r.store.PutAgent(ctx, user, id, e.Config, r.limit); err != nil {
		return nil, err
	}
	return &Entry{ID: id, Config: e.Config}, nil
}

// Replace stores cfg as the user's agent id, which exists (a template is
// copied for the user). A value the API showed masked and the client sent
// back keeps the value stored for its key (keepMasked), so an agent read
// and written back unchanged keeps its keys.
func (r *Registry) Replace(ctx context.Context, user, id string, cfg *loop.AgentConfig) (*Entry, error) {
	return r.Update(ctx, user, id, func(c *loop.AgentConfig) error {
		next := Clone(cfg)
		keepMasked(c, next)
		*c = *next
		return nil
	})
}

// Delete removes the user's agent. Deleting a clone reverts the user to the
// template; a template itself cannot be deleted.
func (r *Registry) Delete(ctx context.Context, user, id string) error {
	ok, err := r.store.DeleteAgent(ctx, user, id)
	if err != nil {
		return err
	}
	if ok {
		return nil
	}
	if _, tmpl := r.templates[id]; tmpl {
		return fmt.Errorf("%w: %q", ErrTemplate, id)
	}
	return ErrNotFound
}
