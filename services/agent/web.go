package agent

import (
	"context"
	"flag"
	"fmt"
	"time"

	"github.com/wick-agent/wick/services/agent/internal/loop"
	"github.com/wick-agent/wick/services/agent/internal/quota"
	"github.com/wick-agent/wick/services/agent/internal/secrets"
	"github.com/wick-agent/wick/services/agent/internal/tools"
)

// Web tool defaults, re-exported for the programs that configure them.
const (
	DefaultWebRatePerMinute = 30
	DefaultFetchMaxBytes    = tools.DefaultFetchMaxBytes
)

const flagWebRate = "-web-rate-per-minute"

// WebConfig is the web tools' configuration as flags give it. web_search
// is offered only with a provider; fetch_url unless Fetch is false.
type WebConfig struct {
	// SearchProvider is searxng, brave or tavily; empty offers no web_search.
	SearchProvider string
	// SearchURL is SearXNG's base URL (required for it), or another
	// endpoint for Brave or Tavily (default their public one).
	SearchURL string
	// KeySecret names the mounted secret (-secrets-dir) holding the
	// provider's API key; required for Brave and Tavily.
	KeySecret string
	// Fetch offers fetch_url.
	Fetch bool
	// FetchMaxBytes caps the bytes of a page fetch_url reads.
	FetchMaxBytes int64
	// RatePerMinute bounds each web tool's calls per user per minute; 0: no limit.
	RatePerMinute int
}

// DefaultWebConfig returns the defaults of the programs' flags: fetch_url
// on, no search provider.
func DefaultWebConfig() WebConfig {
	return WebConfig{Fetch: true, FetchMaxBytes: DefaultFetchMaxBytes, RatePerMinute: DefaultWebRatePerMinute}
}

// RegisterFlags defines the web tools' flags on fs, writing into c;
// wick-agent and wick share them.
func (c *WebConfig) RegisterFlags(fs *flag.FlagSet) {
	fs.StringVar(&c.SearchProvider, "web-search-provider", c.SearchProvider, "provider of the web_search tool: searxng, brave or tavily; empty: web_search is not offered")
	fs.StringVar(&c.SearchURL, "web-search-url", c.SearchURL, "SearXNG's base URL (required with searxng; may be on a private network), or another Brave or Tavily endpoint (default their public one)")
	fs.StringVar(&c.KeySecret, "web-search-key-secret", c.KeySecret, "name of the mounted secret (a file of -secrets-dir) that holds the search provider's API key; required with brave and tavily")
	fs.BoolVar(&c.Fetch, "web-fetch", c.Fetch, "offer the fetch_url tool (pages through the network guard: public addresses only)")
	fs.Int64Var(&c.FetchMaxBytes, "web-fetch-max-bytes", c.FetchMaxBytes, "bytes of a page fetch_url reads; the rest is cut and the result says so")
	fs.IntVar(&c.RatePerMinute, flagWebRate[1:], c.RatePerMinute, "calls of each web tool (web_search, fetch_url) a user may make per minute, counted across replicas; 0: no limit")
}

// Options returns the service options of c.
func (c WebConfig) Options() []Option { return []Option{WithWebTools(c)} }

// WithWebTools offers the web tools c configures; the service offers none
// without it. The default agent names those offered.
func WithWebTools(c WebConfig) Option { return func(o *options) { o.web = &c } }

// webTools builds the web tools cfg offers, by name: web_search with a
// provider, reading its key from the mounted secrets at each call, and
// fetch_url, both counted in rates.
func webTools(cfg *WebConfig, secretsDir string, rates quota.Rates) (map[string]loop.Tool, error) {
	if cfg == nil {
		return nil, nil
	}
	if cfg.RatePerMinute < 0 {
		return nil, fmt.Errorf("agent: %s is %d; use 0 for no limit", flagWebRate, cfg.RatePerMinute)
	}
	opts := []tools.WebOption{tools.WithWebRate(rates, quota.RateLimit{
		Limit:  quota.Limit{Max: int64(cfg.RatePerMinute), Name: "calls per user per minute", Unit: "calls in the last minute", Flag: flagWebRate},
		Window: time.Minute,
	})}
	out := map[string]loop.Tool{}
	if cfg.SearchProvider != "" {
		sc := tools.SearchConfig{Provider: cfg.SearchProvider, URL: cfg.SearchURL}
		if cfg.KeySecret != "" {
			ref := "${secret:" + cfg.KeySecret + "}"
			if err := secrets.Check(ref); err != nil {
				return nil, fmt.Errorf("agent: -web-search-key-secret: %w", err)
			}
			dir := secrets.NewDir(secretsDir)
			sc.Key = func(context.Context) (string, error) { return dir.Expand(ref) }
		}
		t, err := tools.NewWebSearch(sc, opts...)
		if err != nil {
			return nil, fmt.Errorf("agent: %w (-web-search-provider, -web-search-url, -web-search-key-secret)", err)
		}
		out[tools.WebSearch] = t
	}
	if cfg.Fetch {
		if cfg.FetchMaxBytes < 0 {
			return nil, fmt.Errorf("agent: -web-fetch-max-bytes is %d", cfg.FetchMaxBytes)
		}
		out[tools.FetchURL] = tools.NewFetchURL(append(opts, tools.WithFetchMaxBytes(cfg.FetchMaxBytes))...)
	}
	return out, nil
}

// webToolNames are the names of the web tools cfg offers, in a fixed order.
func webToolNames(cfg *WebConfig) []string {
	if cfg == nil {
		return nil
	}
	var names []string
	if cfg.SearchProvider != "" {
		names = append(names, tools.WebSearch)
	}
	if cfg.Fetch {
		names = append(names, tools.FetchURL)
	}
	return names
}
