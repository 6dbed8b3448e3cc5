package llmgw

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"

	"github.com/wick-agent/wick/llm"
	"github.com/wick-agent/wick/llm/hashembed"
	"github.com/wick-agent/wick/services/llmgw/internal/anthropic"
	"github.com/wick-agent/wick/services/llmgw/internal/openai"
	"github.com/wick-agent/wick/services/llmgw/internal/router"
	"github.com/wick-agent/wick/services/llmgw/internal/script"
	"github.com/wick-agent/wick/services/llmgw/internal/spec"
	"github.com/wick-agent/wick/services/llmgw/internal/upstream"
)

// keyEnvName is what a key variable's name must look like; it keeps names
// usable as file names in the secrets directory.
var keyEnvName = regexp.MustCompile(`^[A-Z][A-Z0-9_]{0,127}$`)

// resolved is one model with its spec checked and its defaults filled in.
type resolved struct {
	name string
	spec spec.Spec
	// dims is an embedding model's configured vector size (0: not an
	// embedding model, or size not configured).
	dims int
	// price is the configured model's price (nil: none).
	price *Price
}

// entry is a configured name: one model or a chain.
type entry struct {
	id    string
	model *resolved
	chain []resolved
}

// registry holds the configured models.
type registry struct {
	order    []string
	byID     map[string]*entry
	def      string
	defEmbed string
	keyEnvs  map[string]bool    // variables a request may name
	keyPairs map[[2]string]bool // (base_url, key env) pairs configured together
	baseURLs map[string]bool    // base URLs the operator configured: reached without the guard
	// configured are the model names the operator wrote (models file
	// entries, chain members, default models): their models are metric
	// labels, unlike those requests name.
	configured map[string]bool
}

func newRegistry(cfg Config) (*registry, error) {
	r := &registry{byID: map[string]*entry{}, keyEnvs: map[string]bool{spec.OpenAIKeyEnv: true, spec.AnthropicKeyEnv: true}, keyPairs: map[[2]string]bool{}, baseURLs: map[string]bool{}, configured: map[string]bool{}}
	models := cfg.Models
	if cfg.ModelsFile != "" {
		f, err := loadModelsFile(cfg.ModelsFile)
		if err != nil {
			return nil, err
		}
		models = append(f.Models, models...)
		r.def = f.Default
		r.defEmbed = f.DefaultEmbed
	}
	for _, env := range cfg.AllowedKeyEnvs {
		if !keyEnvName.MatchString(env) {
			return nil, fmt.Errorf("allowed key variable %q is not an upper-case variable name", env)
		}
		r.keyEnvs[env] = true
	}
	var chains []ModelConfig
	for _, m := range models {
		if m.ID == "" {
			return nil, fmt.Errorf("models: a model has no id")
		}
		if _, dup := r.byID[m.ID]; dup {
			return nil, fmt.Errorf("models: id %q is defined twice", m.ID)
		}
		e := &entry{id: m.ID}
		r.byID[m.ID] = e
		r.order = append(r.order, m.ID)
		if len(m.Fallback) > 0 {
			if m.Price != nil {
				return nil, fmt.Errorf("models: %s: a chain has no price of its own; price its models", m.ID)
			}
			chains = append(chains, m)
			continue
		}
		if err := m.Price.check(); err != nil {
			return nil, fmt.Errorf("models: %s: %w", m.ID, err)
		}
		s, err := m.specOf()
		if err != nil {
			return nil, fmt.Errorf("models: %s: %w", m.ID, err)
		}
		if s.APIKeyEnv != "" {
			if !keyEnvName.MatchString(s.APIKeyEnv) {
				return nil, fmt.Errorf("models: %s: api_key_env %q is not an upper-case variable name", m.ID, s.APIKeyEnv)
			}
			r.keyEnvs[s.APIKeyEnv] = true
			r.keyPairs[[2]string{strings.TrimRight(s.BaseURL, "/"), s.APIKeyEnv}] = true
		}
		r.baseURLs[strings.TrimRight(s.BaseURL, "/")] = true
		if m.Dimensions < 0 || m.Dimensions > hashembed.MaxDimensions {
			return nil, fmt.Errorf("models: %s: dimensions %d outside 0..%d", m.ID, m.Dimensions, hashembed.MaxDimensions)
		}
		e.model = &resolved{name: m.ID, spec: s, dims: m.Dimensions, price: m.Price}
		r.configured[m.ID] = true
	}
	for _, m := range chains {
		if len(m.Fallback) > MaxChain {
			return nil, fmt.Errorf("models: %s: a chain has at most %d models", m.ID, MaxChain)
		}
		e := r.byID[m.ID]
		for _, name := range m.Fallback {
			if ref, ok := r.byID[name]; ok {
				if ref.model == nil {
					return nil, fmt.Errorf("models: %s: chain member %q is itself a chain", m.ID, name)
				}
				e.chain = append(e.chain, *ref.model)
				continue
			}
			p, err := spec.Parse(name)
			if err == nil {
				p, err = spec.Normalize(p)
			}
			if err != nil {
				return nil, fmt.Errorf("models: %s: chain member %q: %w", m.ID, name, err)
			}
			r.baseURLs[strings.TrimRight(p.BaseURL, "/")] = true
			e.chain = append(e.chain, resolved{name: name, spec: p})
			r.configured[name] = true
		}
	}
	if cfg.DefaultModel != "" {
		r.def = cfg.DefaultModel
	}
	if r.def == "" {
		r.def = DefaultModel
	}
	if cfg.DefaultEmbedModel != "" {
		r.defEmbed = cfg.DefaultEmbedModel
	}
	if r.defEmbed == "" {
		r.defEmbed = DefaultEmbedModel
	}
	r.trustDefault(r.def)
	r.trustDefault(r.defEmbed)
	r.configured[r.def], r.configured[r.defEmbed] = true, true
	return r, nil
}

// trustDefault adds the base URL of a default model that the operator gave as
// a spec ("-default-model ollama:llama3") to the configured ones, as if it
// were a models file entry. A name that does not parse is reported when the
// default is first resolved.
func (r *registry) trustDefault(name string) {
	if _, ok := r.byID[name]; ok {
		return
	}
	p, err := spec.Parse(name)
	if err == nil {
		p, err = spec.Normalize(p)
	}
	if err == nil && p.BaseURL != "" {
		r.baseURLs[strings.TrimRight(p.BaseURL, "/")] = true
	}
}

// requestSpec is a model as a request names it.
type requestSpec struct {
	str string
	obj spec.Spec
}

// resolve turns a request's models into a chain, applying the key and base
// URL policy to every spec the operator did not configure.
func (s *Service) resolve(models []requestSpec) ([]resolved, error) {
	if len(models) == 0 {
		models = []requestSpec{{str: s.reg.def}}
	}
	var out []resolved
	for i, m := range models {
		if m.str != "" {
			if e, ok := s.reg.byID[m.str]; ok {
				if e.model != nil {
					r := *e.model
					if m.obj.MaxTokens > 0 {
						r.spec.MaxTokens = m.obj.MaxTokens
					}
					out = append(out, r)
				} else {
					out = append(out, e.chain...)
				}
				continue
			}
		}
		var sp spec.Spec
		if m.str != "" {
			p, err := spec.Parse(m.str)
			if err != nil {
				return nil, upstream.Errorf(upstream.KindBadSpec, "model %d: %v", i, err)
			}
			p.MaxTokens, p.ContextWindow = m.obj.MaxTokens, m.obj.ContextWindow
			sp = p
		} else {
			sp = m.obj
		}
		explicitKey := sp.APIKeyEnv != ""
		n, err := spec.Normalize(sp)
		if err != nil {
			return nil, upstream.Errorf(upstream.KindBadSpec, "model %d: %v", i, err)
		}
		if err := s.allowed(n, explicitKey); err != nil {
			return nil, err
		}
		name := m.str
		if name == "" {
			name = n.String()
		}
		out = append(out, resolved{name: name, spec: n})
	}
	if len(out) > MaxChain {
		return nil, upstream.Errorf(upstream.KindBadSpec, "a fallback chain has at most %d models, got %d", MaxChain, len(out))
	}
	return out, nil
}

// allowed is the policy for specs named by a request: a caller must not be
// able to make the gateway send a key it holds to a host of the caller's
// choosing, nor read an arbitrary environment variable.
func (s *Service) allowed(n spec.Spec, explicitKey bool) error {
	if n.Provider == spec.Script || n.Provider == spec.Hash {
		return nil // checked when the script is opened; the hash embedder has no URL or key
	}
	custom := strings.TrimRight(n.BaseURL, "/") != spec.DefaultBaseURL(n.Provider)
	if custom && !s.cfg.AllowRequestBaseURL {
		return upstream.Errorf(upstream.KindForbidden, "this gateway does not accept a base_url in requests; configure the model in its models file")
	}
	if n.APIKeyEnv == "" {
		return nil
	}
	if explicitKey && !s.reg.keyEnvs[n.APIKeyEnv] {
		return upstream.Errorf(upstream.KindForbidden, "api_key_env %q is not one the gateway allows (allowed: %s)", n.APIKeyEnv, strings.Join(s.allowedKeyEnvs(), ", "))
	}
	if custom && !s.reg.keyPairs[[2]string{strings.TrimRight(n.BaseURL, "/"), n.APIKeyEnv}] {
		return upstream.Errorf(upstream.KindForbidden, "the key in %s is only sent to %s's own API or to a base_url configured with it in the models file, not to %s", n.APIKeyEnv, n.Provider, n.BaseURL)
	}
	return nil
}

func (s *Service) allowedKeyEnvs() []string {
	var out []string
	for k := range s.reg.keyEnvs {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

// lookupKey returns the key in variable name: from the environment, else from
// the file of that name in the secrets directory.
func (s *Service) lookupKey(name string) (string, bool) {
	if v, ok := s.opts.lookupEnv(name); ok && strings.TrimSpace(v) != "" {
		return strings.TrimSpace(v), true
	}
	if s.cfg.SecretsDir == "" || !keyEnvName.MatchString(name) {
		return "", false
	}
	data, err := os.ReadFile(filepath.Join(s.cfg.SecretsDir, name))
	if err != nil {
		return "", false
	}
	v := strings.TrimSpace(string(data))
	return v, v != ""
}

// target turns a resolved model into a router target.
// price is the price of the model t answers with: a configured model's, or
// none for a spec given in a request.
func (s *Service) price(t *router.Target) *Price {
	if t == nil {
		return nil
	}
	if e, ok := s.reg.byID[t.Name]; ok && e.model != nil {
		return e.model.price
	}
	return nil
}

func (s *Service) target(r resolved) router.Target {
	return router.Target{
		Name:      r.name,
		Provider:  r.spec.Provider,
		Model:     r.spec.Model,
		MaxTokens: r.spec.MaxTokens,
		Open: func() (llm.Provider, error) {
			p, err := s.provider(r)
			if err != nil {
				return nil, err
			}
			if a, ok := p.(llm.ImageAccepter); ok && a.AcceptsImages() {
				return p, nil
			}
			return textOnly{Provider: p, name: r.name}, nil
		},
	}
}

// textOnly is a provider of a model that takes no images: it refuses a
// request that has some, before sending anything.
type textOnly struct {
	llm.Provider
	name string
}

func (t textOnly) Stream(ctx context.Context, req llm.Request, emit llm.Emit) (llm.Result, error) {
	if req.HasImages() {
		return llm.Result{}, upstream.Errorf(upstream.KindBadSpec, "model %s does not accept images", t.name)
	}
	return t.Provider.Stream(ctx, req, emit)
}

// clientKey identifies a cached provider client; the key is hashed so that
// it never sits in a map key in clear.
type clientKey struct {
	provider, baseURL, keyHash string
}

func (s *Service) provider(r resolved) (llm.Provider, error) {
	sp := r.spec
	if sp.Provider == spec.Script {
		return s.scriptProvider(sp.Model)
	}
	if sp.Provider == spec.Hash {
		return nil, upstream.Errorf(upstream.KindBadSpec, "%s is an embedding model: use it with Embed, not for chat", sp.Model)
	}
	var key string
	if sp.APIKeyEnv != "" {
		v, ok := s.lookupKey(sp.APIKeyEnv)
		if !ok {
			return nil, upstream.Errorf(upstream.KindMissingKey, "the API key variable %s is not set (set it in the gateway's environment or as a file in its secrets directory)", sp.APIKeyEnv)
		}
		key = v
	}
	sum := sha256.Sum256([]byte(key))
	ck := clientKey{provider: sp.Provider, baseURL: sp.BaseURL, keyHash: hex.EncodeToString(sum[:8])}
	if p, ok := s.clients.Load(ck); ok {
		return p.(llm.Provider), nil
	}
	// A base URL a request chose, or a local provider's default the operator
	// did not configure, goes through the guard, so that a caller cannot point
	// the gateway at the operator's own network or probe its loopback.
	hc := s.opts.httpClient
	if !s.operatorURL(sp) {
		hc = s.guarded
	}
	var p llm.Provider
	switch sp.Provider {
	case spec.Anthropic:
		p = anthropic.New(hc, sp.BaseURL, key, anthropic.WithMaxResponseBytes(s.cfg.MaxResponseBytes))
	case spec.OpenAI:
		p = openai.New(hc, sp.BaseURL, key, openai.WithMaxResponseBytes(s.cfg.MaxResponseBytes))
	default:
		p = openai.New(hc, sp.BaseURL, key, openai.WithMaxResponseBytes(s.cfg.MaxResponseBytes), openai.WithLegacyMaxTokens())
	}
	actual, _ := s.clients.LoadOrStore(ck, p)
	return actual.(llm.Provider), nil
}

// operatorURL reports whether sp's base URL is its provider's public API or
// one the operator configured (models file, default model flags). The
// defaults of ollama: and vllm: specs are loopback addresses: a spec from a
// request or a user's agent reaches them only when the operator configured a
// model there, since the gateway cannot tell which caller's spec an operator
// wrote.
func (s *Service) operatorURL(sp spec.Spec) bool {
	u := strings.TrimRight(sp.BaseURL, "/")
	return s.reg.baseURLs[u] || (spec.PublicDefault(sp.Provider) && u == spec.DefaultBaseURL(sp.Provider))
}

// scriptProvider opens "script:<model>": an embedded script (demo,
// showcase), an inline script
// (JSON object or array), or a file of the script directory.
func (s *Service) scriptProvider(model string) (llm.Provider, error) {
	t := strings.TrimSpace(model)
	if strings.HasPrefix(t, "{") || strings.HasPrefix(t, "[") {
		sc, err := script.Parse([]byte(t))
		if err != nil {
			return nil, upstream.Errorf(upstream.KindBadSpec, "%v", err)
		}
		return script.New(sc, -1), nil
	}
	name, delay, err := script.SplitName(t)
	if err != nil {
		return nil, upstream.Errorf(upstream.KindBadSpec, "%v", err)
	}
	if sc := s.embedded[name]; sc != nil {
		return script.New(sc, delay), nil
	}
	if s.cfg.ScriptDir == "" {
		return nil, upstream.Errorf(upstream.KindBadSpec, "script %q: no script directory is configured (-script-dir); use script:demo, script:showcase or an inline script", name)
	}
	root, err := os.OpenRoot(s.cfg.ScriptDir)
	if err != nil {
		return nil, upstream.Errorf(upstream.KindBadSpec, "script directory: %v", err)
	}
	defer root.Close()
	// os.Root refuses names that leave the directory, so a request cannot
	// read other files of the gateway's host.
	f, err := root.Open(name)
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return nil, upstream.Errorf(upstream.KindBadSpec, "script %q does not exist in the script directory", name)
		}
		return nil, upstream.Errorf(upstream.KindBadSpec, "script %q: cannot be opened from the script directory", name)
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, script.MaxScriptBytes+1))
	if err != nil {
		return nil, upstream.Errorf(upstream.KindBadSpec, "script %q: %v", name, err)
	}
	sc, err := script.Parse(data)
	if err != nil {
		return nil, upstream.Errorf(upstream.KindBadSpec, "script %q: %v", name, err)
	}
	return script.New(sc, delay), nil
}
