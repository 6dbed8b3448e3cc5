package tools

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"golang.org/x/net/html"

	"github.com/wick-agent/wick/platform/identity"
	"github.com/wick-agent/wick/services/agent/internal/loop"
	"github.com/wick-agent/wick/services/agent/internal/quota"
)

// Names of the web tools. They are reserved whether or not a service offers
// them, so a user's tool never takes a name an operator may switch on later.
const (
	WebSearch = "web_search"
	FetchURL  = "fetch_url"
)

// Search providers of web_search.
const (
	ProviderSearXNG = "searxng"
	ProviderBrave   = "brave"
	ProviderTavily  = "tavily"
)

// Public endpoints of the hosted search providers.
const (
	DefaultBraveURL  = "https://api.search.brave.com/res/v1/web/search"
	DefaultTavilyURL = "https://api.tavily.com/search"
)

// web_search limits.
const (
	// DefaultSearchResults is k when the model gives none.
	DefaultSearchResults = 5
	// MaxSearchResults is the largest k; a larger one is lowered to it.
	MaxSearchResults = 20
	// searchTimeout bounds one provider request.
	searchTimeout = 30 * time.Second
	// maxSearchBytes caps a provider's answer; twenty results are far less.
	maxSearchBytes = 4 << 20
)

// SearchConfig is the operator's search provider.
type SearchConfig struct {
	// Provider is ProviderSearXNG, ProviderBrave or ProviderTavily.
	Provider string
	// URL is SearXNG's base URL (required), or the Brave or Tavily
	// endpoint (default their public one).
	URL string
	// Key returns the provider's API key, read at each call so a rotated
	// secret is used at once; required for Brave and Tavily.
	Key func(context.Context) (string, error)
}

// WebOption configures the web tools.
type WebOption func(*webConfig)

type webConfig struct {
	rates    quota.Rates
	limit    quota.RateLimit
	client   *http.Client
	maxBytes int64
	guard    fetchDialer
}

// WithWebRate counts each tool's calls per user in r under l (per tool:
// l's Name and Unit get the tool's name in front).
func WithWebRate(r quota.Rates, l quota.RateLimit) WebOption {
	return func(c *webConfig) { c.rates, c.limit = r, l }
}

// WithSearchClient sets the client of the provider's requests (tests);
// the default follows no redirect, so the configured URL is the only
// destination.
func WithSearchClient(hc *http.Client) WebOption { return func(c *webConfig) { c.client = hc } }

// SearchResult is one result of web_search.
type SearchResult struct {
	Title   string `json:"title"`
	URL     string `json:"url"`
	Snippet string `json:"snippet"`
}

type searchTool struct {
	cfg      SearchConfig
	name     string // the provider as users know it
	endpoint *url.URL
	web      webConfig
}

// NewWebSearch returns the web_search tool over cfg's provider. The
// provider's URL is the operator's, so it may be on a private network (a
// self-hosted SearXNG): the model chooses only the query, and no redirect
// is followed, so the request reaches nothing else.
func NewWebSearch(cfg SearchConfig, opts ...WebOption) (loop.Tool, error) {
	t := &searchTool{cfg: cfg}
	raw := cfg.URL
	switch cfg.Provider {
	case ProviderSearXNG:
		t.name = "SearXNG"
		if raw == "" {
			return nil, errors.New("web search: SearXNG needs its base URL")
		}
	case ProviderBrave:
		t.name = "Brave Search"
		if raw == "" {
			raw = DefaultBraveURL
		}
	case ProviderTavily:
		t.name = "Tavily"
		if raw == "" {
			raw = DefaultTavilyURL
		}
	default:
		return nil, fmt.Errorf("web search: provider %q: want %s, %s or %s", cfg.Provider, ProviderSearXNG, ProviderBrave, ProviderTavily)
	}
	if cfg.Provider != ProviderSearXNG && cfg.Key == nil {
		return nil, fmt.Errorf("web search: %s needs an API key", t.name)
	}
	u, err := url.Parse(raw)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("web search: URL %q must be an http:// or https:// URL", raw)
	}
	if cfg.Provider == ProviderSearXNG {
		u = u.JoinPath("search")
	}
	t.endpoint = u
	for _, o := range opts {
		o(&t.web)
	}
	if t.web.client == nil {
		t.web.client = &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	}
	return t, nil
}

func (t *searchTool) Name() string { return WebSearch }
func (t *searchTool) Description() string {
	return "Search the web. Returns a JSON list of results, each with title, url and snippet; read a result's page with fetch_url."
}

func (t *searchTool) Parameters() map[string]any {
	return map[string]any{
		"type": "object",
		"properties": map[string]any{
			"query": map[string]any{"type": "string", "description": "What to search for"},
			"k":     map[string]any{"type": "integer", "description": fmt.Sprintf("How many results (default %d, at most %d)", DefaultSearchResults, MaxSearchResults)},
		},
		"required": []string{"query"},
	}
}

// Execute searches and returns the results as JSON.
func (t *searchTool) Execute(ctx context.Context, args map[string]any) (string, error) {
	query, _ := args["query"].(string)
	if query = strings.TrimSpace(query); query == "" {
		return "", errors.New("web_search: argument \"query\" must be a non-empty string")
	}
	k, err := intArg(args, "k", DefaultSearchResults)
	if err != nil {
		return "", fmt.Errorf("web_search: %w", err)
	}
	if k < 1 {
		return "", fmt.Errorf("web_search: k must be between 1 and %d", MaxSearchResults)
	}
	k = min(k, MaxSearchResults)
	if err := t.web.take(ctx, WebSearch); err != nil {
		return "", err
	}
	ctx, cancel := context.WithTimeout(ctx, searchTimeout)
	defer cancel()
	key := ""
	if t.cfg.Key != nil {
		if key, err = t.cfg.Key(ctx); err != nil {
			return "", fmt.Errorf("web_search: the %s key cannot be read: %w", t.name, err)
		}
	}
	req, err := t.request(ctx, query, k, key)
	if err != nil {
		return "", fmt.Errorf("web_search: build the %s request: %w", t.name, err)
	}
	resp, err := t.web.client.Do(req)
	if err != nil {
		if errors.Is(ctx.Err(), context.DeadlineExceeded) {
			return "", fmt.Errorf("web_search: %s did not answer within %s", t.name, searchTimeout)
		}
		return "", t.scrub(fmt.Errorf("web_search: %s cannot be reached: %w", t.name, redactURL(err)), key)
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, maxSearchBytes+1))
	if err != nil {
		return "", t.scrub(fmt.Errorf("web_search: reading %s's answer: %w", t.name, err), key)
	}
	if resp.StatusCode != http.StatusOK {
		return "", t.scrub(t.statusError(resp, data), key)
	}
	if len(data) > maxSearchBytes {
		return "", fmt.Errorf("web_search: %s answered more than %d bytes", t.name, maxSearchBytes)
	}
	results, err := t.parse(data)
	if err != nil {
		return "", fmt.Errorf("web_search: %s answered JSON of another shape: %w", t.name, err)
	}
	if len(results) > k {
		results = results[:k]
	}
	out, err := json.Marshal(results)
	if err != nil {
		return "", err
	}
	return string(out), nil
}

// request builds the provider's request as its API reference gives it.
func (t *searchTool) request(ctx context.Context, query string, k int, key string) (*http.Request, error) {
	u := *t.endpoint
	q := u.Query()
	switch t.cfg.Provider {
	case ProviderSearXNG:
		q.Set("q", query)
		q.Set("format", "json")
		u.RawQuery = q.Encode()
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, u.String(), nil)
		if err == nil && key != "" {
			req.Header.Set("Authorization", "Bearer "+key)
		}
		return req, err
	case ProviderBrave:
		q.Set("q", query)
		q.Set("count", strconv.Itoa(k))
		u.RawQuery = q.Encode()
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, u.String(), nil)
		if err == nil {
			req.Header.Set("X-Subscription-Token", key)
		}
		return req, err
	default: // Tavily
		body, err := json.Marshal(map[string]any{"query": query, "max_results": k, "search_depth": "basic"})
		if err != nil {
			return nil, err
		}
		req, err := http.NewRequestWithContext(ctx, http.MethodPost, u.String(), bytes.NewReader(body))
		if err == nil {
			req.Header.Set("Content-Type", "application/json")
			req.Header.Set("Authorization", "Bearer "+key)
		}
		return req, err
	}
}

// parse reads the results out of the provider's answer.
func (t *searchTool) parse(data []byte) ([]SearchResult, error) {
	type hit struct {
		Title       string `json:"title"`
		URL         string `json:"url"`
		Content     string `json:"content"`
		Description string `json:"description"`
	}
	var hits []hit
	switch t.cfg.Provider {
	case ProviderBrave:
		var r struct {
			Web *struct {
				Results []hit `json:"results"`
			} `json:"web"`
		}
		if err := json.Unmarshal(data, &r); err != nil {
			return nil, err
		}
		if r.Web != nil { // no "web" key: no web results for the query
			hits = r.Web.Results
		}
	default: // SearXNG and Tavily both answer {"results": [{title, url, content}]}
		var r struct {
			Results *[]hit `json:"results"`
		}
		if err := json.Unmarshal(data, &r); err != nil {
			return nil, err
		}
		if r.Results == nil {
			return nil, errors.New(`no "results" list`)
		}
		hits = *r.Results
	}
	out := make([]SearchResult, 0, len(hits))
	for _, h := range hits {
		snippet := h.Content
		if t.cfg.Provider == ProviderBrave {
			snippet = h.Description
		}
		out = append(out, SearchResult{Title: plainText(h.Title), URL: h.URL, Snippet: plainText(snippet)})
	}
	return out, nil
}

// statusError says what the provider's refusal means, in its own words
// when its error body has them. The request is not quoted: it holds the key.
func (t *searchTool) statusError(resp *http.Response, data []byte) error {
	msg := providerMessage(data)
	if resp.StatusCode == http.StatusTooManyRequests {
		retry := ""
		if d, ok := retryAfter(resp.Header.Get("Retry-After")); ok {
			retry = fmt.Sprintf("; retry after %s", d)
		}
		return fmt.Errorf("web_search: %s is rate limiting this service's searches (HTTP 429)%s%s", t.name, retry, prefixed(msg))
	}
	hint := ""
	switch resp.StatusCode {
	case http.StatusUnauthorized, http.StatusForbidden:
		hint = " (the operator's search key or the provider's settings refuse the request)"
		if t.cfg.Provider == ProviderSearXNG {
			hint = " (the instance must allow format json in its settings.yml)"
		}
	}
	return fmt.Errorf("web_search: %s answered HTTP %d%s%s", t.name, resp.StatusCode, hint, prefixed(msg))
}

// scrub removes the key from a message that might echo it back.
func (t *searchTool) scrub(err error, key string) error {
	if key == "" || !strings.Contains(err.Error(), key) {
		return err
	}
	return errors.New(strings.ReplaceAll(err.Error(), key, "[key]"))
}

func prefixed(msg string) string {
	if msg == "" {
		return ""
	}
	return ": " + msg
}

// providerMessage finds the message in an error body: Brave's
// {"error": {"detail"}}, Tavily's {"detail": {"error"}}, else the body's
// text.
func providerMessage(data []byte) string {
	var e struct {
		Error  json.RawMessage `json:"error"`
		Detail json.RawMessage `json:"detail"`
	}
	if json.Unmarshal(data, &e) == nil {
		for _, raw := range []json.RawMessage{e.Error, e.Detail} {
			if len(raw) == 0 {
				continue
			}
			var s string
			if json.Unmarshal(raw, &s) == nil && s != "" {
				return clip(s, errorBodyChars)
			}
			var inner struct {
				Detail string `json:"detail"`
				Error  string `json:"error"`
			}
			if json.Unmarshal(raw, &inner) == nil {
				if inner.Detail != "" {
					return clip(inner.Detail, errorBodyChars)
				}
				if inner.Error != "" {
					return clip(inner.Error, errorBodyChars)
				}
			}
		}
	}
	return clip(strings.Join(strings.Fields(plainText(string(data))), " "), errorBodyChars)
}

// retryAfter reads a Retry-After header: seconds or an HTTP date.
func retryAfter(v string) (time.Duration, bool) {
	v = strings.TrimSpace(v)
	if v == "" {
		return 0, false
	}
	if s, err := strconv.Atoi(v); err == nil && s >= 0 {
		return time.Duration(s) * time.Second, true
	}
	if at, err := http.ParseTime(v); err == nil {
		return max(time.Until(at).Round(time.Second), 0), true
	}
	return 0, false
}

// plainText is the text of an HTML fragment (Brave marks the query's words
// with <strong>, and its entities are escaped).
func plainText(s string) string {
	if !strings.ContainsAny(s, "<&") {
		return s
	}
	var b strings.Builder
	z := html.NewTokenizer(strings.NewReader(s))
	for {
		switch z.Next() {
		case html.ErrorToken:
			return b.String()
		case html.TextToken:
			b.Write(z.Text())
		}
	}
}

// intArg reads an integer argument, def when absent.
func intArg(args map[string]any, name string, def int) (int, error) {
	v, ok := args[name]
	if !ok || v == nil {
		return def, nil
	}
	switch n := v.(type) {
	case float64:
		if n == float64(int(n)) {
			return int(n), nil
		}
	case json.Number:
		if i, err := n.Int64(); err == nil {
			return int(i), nil
		}
	case int:
		return n, nil
	case string:
		if i, err := strconv.Atoi(strings.TrimSpace(n)); err == nil {
			return i, nil
		}
	}
	return 0, fmt.Errorf("argument %q must be an integer", name)
}

// take counts one call of tool for the calling user.
func (c *webConfig) take(ctx context.Context, tool string) error {
	if c.rates == nil || c.limit.Max <= 0 {
		return nil
	}
	user, err := identity.Require(ctx)
	if err != nil {
		return err
	}
	l := c.limit
	l.Name = tool + " " + l.Name
	l.Unit = tool + " " + l.Unit
	return quota.Take(ctx, c.rates, user, tool, l)
}
