package llmgw

import (
	"bytes"
	"errors"
	"flag"
	"fmt"
	"math"
	"net/netip"
	"os"
	"strings"
	"time"

	"gopkg.in/yaml.v3"

	"github.com/wick-agent/wick/llm"
	"github.com/wick-agent/wick/llm/hashembed"
	"github.com/wick-agent/wick/platform/netguard"
	"github.com/wick-agent/wick/services/llmgw/internal/router"
	"github.com/wick-agent/wick/services/llmgw/internal/spec"
	"github.com/wick-agent/wick/services/llmgw/internal/upstream"
)

// Defaults of the gateway's configuration.
const (
	// DefaultTimeout bounds one call, retries and fallbacks included.
	DefaultTimeout = 5 * time.Minute
	// MaxTimeout is the longest timeout a caller may ask for.
	MaxTimeout = 30 * time.Minute
	// DefaultModel answers when a request names no model and no default is
	// configured: the embedded demo script, which needs no key.
	DefaultModel = "script:demo"
	// MaxChain bounds a fallback chain.
	MaxChain = 8
	// DefaultMaxHTTPBodyBytes bounds a request to the OpenAI-compatible endpoint.
	DefaultMaxHTTPBodyBytes = 16 << 20
	// DefaultEmbedModel embeds when a request names no embedding model and
	// none is configured: the offline hash embedder, which needs no key.
	DefaultEmbedModel = hashembed.DefaultModel
	// MaxEmbedTexts bounds one Embed batch (OpenAI's own limit).
	MaxEmbedTexts = 2048
	// MaxImageBytes bounds one image of a request, decoded or fetched
	// (Anthropic's API takes at most 5 MB an image).
	MaxImageBytes = 5 << 20
	// MaxImages bounds the images of one request.
	MaxImages = 20
	// ImageFetchTimeout bounds fetching one http(s) image URL.
	ImageFetchTimeout = 10 * time.Second
	// MaxModelsFileBytes bounds the models file.
	MaxModelsFileBytes = 1 << 20
	// RecommendedGCPercent is the GOGC the binary uses unless GOGC is set:
	// the SDKs decode every streamed chunk by reflection and allocate about
	// 100 KB per call, mostly short-lived, so the default of 100 spends a
	// third of the CPU in the collector under load while the live heap stays
	// small (measured in BenchmarkThroughput: 905 → 585 CPU-µs per call).
	RecommendedGCPercent = 400
)

// Config is the gateway's configuration. The zero value is not useful; start
// from DefaultConfig.
type Config struct {
	// ModelsFile is a YAML or JSON file of named models (see docs/llmgw.md).
	ModelsFile string
	// Models are named models given directly (added after the file's).
	Models []ModelConfig
	// DefaultModel answers requests that name no model: a configured name or a
	// spec. Empty means the models file's default, else DefaultModel.
	DefaultModel string
	// DefaultEmbedModel embeds requests that name no model: a configured name
	// or a spec. Empty means the models file's default_embed, else
	// DefaultEmbedModel.
	DefaultEmbedModel string
	// Timeout bounds a call that gives no timeout of its own.
	Timeout time.Duration
	// Retry is the retry policy applied to each model of a chain.
	Retry router.Policy
	// AllowedKeyEnvs are the variables a request's api_key_env may name, on
	// top of OPENAI_API_KEY, ANTHROPIC_API_KEY and those of configured models.
	AllowedKeyEnvs []string
	// AllowRequestBaseURL lets a request's spec name its own base_url. Such a
	// spec is never sent a key unless a configured model pairs that base URL
	// with that key variable.
	AllowRequestBaseURL bool
	// RequestBaseURLAllowNets are the non-public networks (loopback, private,
	// link-local …) a request's own base_url may reach; by default it reaches
	// public addresses only. Base URLs of configured models are not limited.
	RequestBaseURLAllowNets []netip.Prefix
	// ImageURLAllowNets are the non-public networks an http(s) image URL of
	// a request may reach; by default it reaches public addresses only.
	ImageURLAllowNets []netip.Prefix
	// ScriptDir holds the script files "script:<name>" may name; empty allows
	// only script:demo and inline scripts.
	ScriptDir string
	// SecretsDir holds mounted secrets, one file per key variable name; it is
	// read when the variable is not set in the environment.
	SecretsDir string
	// MaxResponseBytes bounds the text plus tool arguments of one reply.
	MaxResponseBytes int
	// MaxHTTPBodyBytes bounds a request body of the OpenAI-compatible endpoint.
	MaxHTTPBodyBytes int64
}

// DefaultConfig returns the defaults.
func DefaultConfig() Config {
	return Config{
		Timeout:             DefaultTimeout,
		Retry:               router.DefaultPolicy(),
		AllowRequestBaseURL: true,
		MaxResponseBytes:    upstream.DefaultMaxResponseBytes,
		MaxHTTPBodyBytes:    DefaultMaxHTTPBodyBytes,
	}
}

// RegisterFlags defines the gateway's flags on fs (each also settable from
// WICK_<NAME> through platform/config), writing into c.
func (c *Config) RegisterFlags(fs *flag.FlagSet) {
	fs.StringVar(&c.ModelsFile, "models-file", c.ModelsFile, "YAML or JSON file of named models and fallback chains")
	fs.StringVar(&c.DefaultModel, "default-model", c.DefaultModel, "model for requests that name none (a configured name or a spec); default: the models file's default, else "+DefaultModel)
	fs.StringVar(&c.DefaultEmbedModel, "default-embed-model", c.DefaultEmbedModel, "embedding model for Embed requests that name none (a configured name or a spec); default: the models file's default_embed, else "+DefaultEmbedModel)
	fs.DurationVar(&c.Timeout, "timeout", c.Timeout, "default bound on one call, retries and fallbacks included")
	fs.IntVar(&c.Retry.MaxRetries, "max-retries", c.Retry.MaxRetries, "retries of one model on 408/409/429/5xx/529 and connection errors, before the first delta")
	fs.DurationVar(&c.Retry.BaseDelay, "retry-base-delay", c.Retry.BaseDelay, "first backoff step (doubles per retry, with jitter)")
	fs.DurationVar(&c.Retry.MaxDelay, "retry-max-delay", c.Retry.MaxDelay, "longest backoff step")
	fs.DurationVar(&c.Retry.MaxRetryAfter, "max-retry-after", c.Retry.MaxRetryAfter, "longest provider Retry-After to wait for; longer moves on to the next model")
	fs.Func("allowed-key-envs", "comma-separated extra variables a request's api_key_env may name", func(v string) error {
		for _, s := range strings.Split(v, ",") {
			if s = strings.TrimSpace(s); s != "" {
				c.AllowedKeyEnvs = append(c.AllowedKeyEnvs, s)
			}
		}
		return nil
	})
	fs.BoolVar(&c.AllowRequestBaseURL, "allow-request-base-url", c.AllowRequestBaseURL, "let requests name their own base_url (never sent a key unless configured)")
	fs.Func("request-base-url-allow-nets", "comma-separated CIDRs that a request's own base_url may reach although not public", func(v string) error {
		p, err := netguard.ParsePrefixes(v)
		c.RequestBaseURLAllowNets = append(c.RequestBaseURLAllowNets, p...)
		return err
	})
	fs.Func("image-url-allow-nets", "comma-separated CIDRs that an image_url of a request may reach although not public", func(v string) error {
		p, err := netguard.ParsePrefixes(v)
		c.ImageURLAllowNets = append(c.ImageURLAllowNets, p...)
		return err
	})
	fs.StringVar(&c.ScriptDir, "script-dir", c.ScriptDir, "directory of script files for script:<name>")
	fs.StringVar(&c.SecretsDir, "secrets-dir", c.SecretsDir, "directory of mounted secrets, one file per key variable")
	fs.IntVar(&c.MaxResponseBytes, "max-response-bytes", c.MaxResponseBytes, "bound on the text plus tool arguments of one reply")
	fs.Int64Var(&c.MaxHTTPBodyBytes, "max-http-body-bytes", c.MaxHTTPBodyBytes, "bound on a request body of the OpenAI-compatible endpoint")
}

// ModelConfig is one named model of the models file: a spec (string or
// object form) or a fallback chain of other names or specs.
type ModelConfig struct {
	// ID is the name clients use.
	ID string `yaml:"id" json:"id"`
	// Spec is the string form ("gpt-4o", "ollama:llama3.1:8b").
	Spec string `yaml:"spec" json:"spec"`
	// The object form.
	Provider      string `yaml:"provider" json:"provider"`
	Model         string `yaml:"model" json:"model"`
	BaseURL       string `yaml:"base_url" json:"base_url"`
	APIKeyEnv     string `yaml:"api_key_env" json:"api_key_env"`
	MaxTokens     int    `yaml:"max_tokens" json:"max_tokens"`
	ContextWindow int    `yaml:"context_window" json:"context_window"`
	// Dimensions marks an embedding model and gives its vector size; a
	// provider that returns vectors of another size is refused, and OpenAI's
	// text-embedding-3 models are asked for this size.
	Dimensions int `yaml:"dimensions" json:"dimensions"`
	// Fallback makes this name a chain of other names or specs.
	Fallback []string `yaml:"fallback" json:"fallback"`
	// Price turns the model's tokens into cost; a model without one has no
	// cost, only tokens.
	Price *Price `yaml:"price" json:"price"`
}

// Price is what a model costs, in US dollars per million tokens.
type Price struct {
	// Input is the price of a million prompt tokens.
	Input float64 `yaml:"input" json:"input"`
	// Output is the price of a million completion tokens.
	Output float64 `yaml:"output" json:"output"`
}

// CostMicroUSD is what u costs at p, in millionths of a US dollar: a
// price per million tokens is a price in millionths per token.
func (p *Price) CostMicroUSD(u llm.Usage) int64 {
	if p == nil {
		return 0
	}
	return int64(math.Round(float64(u.InputTokens)*p.Input + float64(u.OutputTokens)*p.Output))
}

func (p *Price) check() error {
	if p != nil && (p.Input < 0 || p.Output < 0 || math.IsNaN(p.Input) || math.IsNaN(p.Output) || math.IsInf(p.Input, 0) || math.IsInf(p.Output, 0)) {
		return errors.New("price: input and output must be finite and not negative")
	}
	return nil
}

type modelsFile struct {
	Default      string        `yaml:"default"`
	DefaultEmbed string        `yaml:"default_embed"`
	Models       []ModelConfig `yaml:"models"`
}

// loadModelsFile reads a models file; YAML is a superset of JSON, so one
// parser reads both.
func loadModelsFile(path string) (modelsFile, error) {
	var f modelsFile
	data, err := os.ReadFile(path)
	if err != nil {
		return f, fmt.Errorf("models file: %w", err)
	}
	if len(data) > MaxModelsFileBytes {
		return f, fmt.Errorf("models file %s is larger than %d bytes", path, MaxModelsFileBytes)
	}
	dec := yaml.NewDecoder(bytes.NewReader(data))
	dec.KnownFields(true)
	if err := dec.Decode(&f); err != nil {
		return f, fmt.Errorf("models file %s: %w", path, err)
	}
	return f, nil
}

// specOf returns the spec of a single (non-chain) model entry.
func (m ModelConfig) specOf() (spec.Spec, error) {
	obj := m.Provider != "" || m.Model != "" || m.BaseURL != "" || m.APIKeyEnv != ""
	var s spec.Spec
	switch {
	case m.Spec != "" && obj:
		return s, fmt.Errorf("%w: model %q gives both spec and object fields", spec.ErrInvalid, m.ID)
	case m.Spec != "":
		p, err := spec.Parse(m.Spec)
		if err != nil {
			return s, err
		}
		s = p
	default:
		s = spec.Spec{Provider: m.Provider, Model: m.Model, BaseURL: m.BaseURL, APIKeyEnv: m.APIKeyEnv}
	}
	s.MaxTokens, s.ContextWindow = m.MaxTokens, m.ContextWindow
	return spec.Normalize(s)
}
