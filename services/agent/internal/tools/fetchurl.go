package tools

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net"
	"net/http"
	"net/url"
	"strings"
	"time"

	readability "codeberg.org/readeck/go-readability/v2"
	htmltomarkdown "github.com/JohannesKaufmann/html-to-markdown/v2"
	"github.com/JohannesKaufmann/html-to-markdown/v2/converter"
	"golang.org/x/net/html/charset"

	"github.com/wick-agent/wick/platform/netguard"
	"github.com/wick-agent/wick/services/agent/internal/loop"
)

// fetch_url limits.
const (
	// DefaultFetchMaxBytes caps the bytes of a page fetch_url reads; the
	// rest is cut, and the result says so.
	DefaultFetchMaxBytes = 5 << 20
	// MaxFetchRedirects bounds the redirects fetch_url follows.
	MaxFetchRedirects = 5
	// fetchTimeout bounds one fetch, redirects and download included.
	fetchTimeout = 30 * time.Second
	// MaxFetchResultChars caps the result, head and tail kept, as an MCP
	// tool's is: the eviction hook that cuts long results further runs only
	// for agents with a sandbox, and a thread should not take a whole page.
	MaxFetchResultChars = 1 << 20
)

// fetchDialer dials a fetch's connections.
type fetchDialer func(ctx context.Context, network, address string) (net.Conn, error)

// WithFetchMaxBytes caps the bytes of a page fetch_url reads.
func WithFetchMaxBytes(n int64) WebOption { return func(c *webConfig) { c.maxBytes = n } }

// WithFetchGuard sets the guard of fetch_url's connections (default
// netguard.New(): public addresses only). exempt are host:port addresses
// dialled without it: tests serve their pages on loopback.
func WithFetchGuard(g *netguard.Guard, exempt ...string) WebOption {
	return func(c *webConfig) {
		if len(exempt) == 0 {
			c.guard = g.DialContext
			return
		}
		direct := &net.Dialer{Timeout: netguard.DialTimeout}
		c.guard = func(ctx context.Context, network, address string) (net.Conn, error) {
			for _, e := range exempt {
				if address == e {
					return direct.DialContext(ctx, network, address)
				}
			}
			return g.DialContext(ctx, network, address)
		}
	}
}

type fetchTool struct {
	web    webConfig
	client *http.Client
}

// NewFetchURL returns the fetch_url tool. The model chooses its URLs, so
// every connection, the first and each redirect's, goes through the
// network guard: loopback, private, link-local and metadata addresses are
// refused when the socket connects, after name resolution.
func NewFetchURL(opts ...WebOption) loop.Tool {
	t := &fetchTool{web: webConfig{maxBytes: DefaultFetchMaxBytes, guard: netguard.New().DialContext}}
	for _, o := range opts {
		o(&t.web)
	}
	if t.web.maxBytes <= 0 {
		t.web.maxBytes = DefaultFetchMaxBytes
	}
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.Proxy = nil // through a proxy the guard would judge the proxy's address
	tr.DialContext = t.web.guard
	t.client = &http.Client{Transport: tr, CheckRedirect: checkFetchRedirect}
	return t
}

func checkFetchRedirect(req *http.Request, via []*http.Request) error {
	if len(via) > MaxFetchRedirects {
		return fmt.Errorf("stopped after %d redirects", MaxFetchRedirects)
	}
	if req.URL.Scheme != "http" && req.URL.Scheme != "https" {
		return fmt.Errorf("redirect to a %s: URL refused: only http and https are fetched", req.URL.Scheme)
	}
	return nil
}

func (t *fetchTool) Name() string { return FetchURL }
func (t *fetchTool) Description() string {
	return "Fetch a web page (http or https) and return its readable text as Markdown, with its title and URL; plain text and Markdown come back as they are, JSON pretty-printed."
}

func (t *fetchTool) Parameters() map[string]any {
	return map[string]any{
		"type": "object",
		"properties": map[string]any{
			"url": map[string]any{"type": "string", "description": "The page's http:// or https:// URL"},
		},
		"required": []string{"url"},
	}
}

// Execute fetches the page and returns it as Markdown.
func (t *fetchTool) Execute(ctx context.Context, args map[string]any) (string, error) {
	raw, _ := args["url"].(string)
	u, err := url.Parse(strings.TrimSpace(raw))
	if err != nil || raw == "" {
		return "", errors.New("fetch_url: argument \"url\" must be an http:// or https:// URL")
	}
	if u.Scheme != "http" && u.Scheme != "https" {
		return "", fmt.Errorf("fetch_url: %q: only http and https URLs are fetched", raw)
	}
	if u.Host == "" {
		return "", fmt.Errorf("fetch_url: %q has no host", raw)
	}
	if err := t.web.take(ctx, FetchURL); err != nil {
		return "", err
	}
	ctx, cancel := context.WithTimeout(ctx, fetchTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u.String(), nil)
	if err != nil {
		return "", fmt.Errorf("fetch_url: %w", err)
	}
	req.Header.Set("Accept", "text/html,application/xhtml+xml,text/markdown,text/plain,application/json;q=0.9,*/*;q=0.1")
	req.Header.Set("User-Agent", "Wick-fetch_url/1")
	resp, err := t.client.Do(req)
	if err != nil {
		if errors.Is(ctx.Err(), context.DeadlineExceeded) {
			return "", fmt.Errorf("fetch_url %s: no answer within %s", u, fetchTimeout)
		}
		return "", fmt.Errorf("fetch_url %s: %w", u, redactURL(err))
	}
	defer resp.Body.Close()
	final := resp.Request.URL
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		return "", fmt.Errorf("fetch_url %s: the server answered HTTP %d", final, resp.StatusCode)
	}
	data, err := io.ReadAll(io.LimitReader(resp.Body, t.web.maxBytes+1))
	if err != nil {
		if errors.Is(ctx.Err(), context.DeadlineExceeded) {
			return "", fmt.Errorf("fetch_url %s: the page did not arrive within %s", final, fetchTimeout)
		}
		return "", fmt.Errorf("fetch_url %s: reading the page: %w", final, err)
	}
	cut := int64(len(data)) > t.web.maxBytes
	if cut {
		data = data[:t.web.maxBytes]
	}
	ctype := resp.Header.Get("Content-Type")
	if ctype == "" {
		ctype = http.DetectContentType(data)
	}
	page, err := render(ctype, data, final)
	if err != nil {
		return "", fmt.Errorf("fetch_url %s: %w", final, err)
	}
	var b strings.Builder
	if page.title != "" {
		fmt.Fprintf(&b, "# %s\n\n", page.title)
	}
	fmt.Fprintf(&b, "URL: %s\n", final)
	if cut {
		fmt.Fprintf(&b, "Note: the page is larger than %d bytes; only its first %d bytes were read.\n", t.web.maxBytes, t.web.maxBytes)
	}
	b.WriteString("\n")
	b.WriteString(page.body)
	return Evict(b.String(), MaxFetchResultChars, MaxFetchResultChars/2), nil
}

type page struct{ title, body string }

// render turns a page into text by its content type: HTML into the
// Markdown of its main content, text and Markdown as they are, JSON
// indented. Anything else is refused, its type named.
func render(ctype string, data []byte, base *url.URL) (page, error) {
	mt, params, err := mime.ParseMediaType(ctype)
	if err != nil {
		return page{}, fmt.Errorf("the content type %q cannot be read", ctype)
	}
	switch {
	case mt == "text/html" || mt == "application/xhtml+xml":
		return readable(data, params["charset"], base)
	case mt == "text/plain" || mt == "text/markdown" || mt == "text/x-markdown":
		r, err := charset.NewReader(bytes.NewReader(data), ctype)
		if err != nil {
			return page{body: string(data)}, nil
		}
		text, _ := io.ReadAll(r)
		return page{body: string(text)}, nil
	case mt == "application/json" || strings.HasSuffix(mt, "+json"):
		var out bytes.Buffer
		if json.Indent(&out, data, "", "  ") != nil {
			return page{body: string(data)}, nil // cut at the cap, or not JSON after all: as it came
		}
		return page{body: out.String()}, nil
	}
	return page{}, fmt.Errorf("content type %s is not fetched (HTML, plain text, Markdown and JSON are)", mt)
}

// readable extracts the page's main content (readability drops navigation,
// ads and scripts) and converts it to Markdown; links stay absolute to base.
func readable(data []byte, cs string, base *url.URL) (page, error) {
	r, err := charset.NewReader(bytes.NewReader(data), "text/html; charset="+cs)
	if err != nil {
		r = bytes.NewReader(data)
	}
	parser := readability.NewParser()
	article, err := parser.Parse(r, base)
	if err != nil {
		return page{}, fmt.Errorf("no readable content: %w", err)
	}
	if article.Node == nil {
		return page{title: article.Title()}, nil
	}
	md, err := htmltomarkdown.ConvertNode(article.Node, converter.WithDomain(base.Scheme+"://"+base.Host))
	if err != nil {
		return page{}, fmt.Errorf("converting the page to Markdown: %w", err)
	}
	return page{title: strings.TrimSpace(article.Title()), body: strings.TrimSpace(string(md)) + "\n"}, nil
}
