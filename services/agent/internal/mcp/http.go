package mcp

import (
	"fmt"
	"io"
	"net/http"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// httpTransport is the server's streamable-HTTP transport: the pool's
// client (the SSRF guard's dialer, no redirects) with the server's headers
// on every request, and its answers bounded like stdio messages.
func (s *server) httpTransport() sdk.Transport {
	base := s.pool.http
	if base == nil {
		base = http.DefaultClient
	}
	client := *base
	client.Transport = headerTransport{next: transportOf(base), headers: s.cfg.Headers, max: int64(s.pool.opts.maxMessageBytes)}
	// The standalone SSE stream that carries list changes lives as long
	// as the session, so no overall client timeout; calls have theirs.
	client.Timeout = 0
	// The session is restarted by the pool (once), not by the SDK.
	return &sdk.StreamableClientTransport{Endpoint: s.cfg.URL, HTTPClient: &client, MaxRetries: -1}
}

func transportOf(c *http.Client) http.RoundTripper {
	if c.Transport != nil {
		return c.Transport
	}
	return http.DefaultTransport
}

// headerTransport adds the server's headers and bounds each POST answer
// (one JSON message or the SSE stream of one call).
type headerTransport struct {
	next    http.RoundTripper
	headers map[string]string
	max     int64
}

func (t headerTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	req = req.Clone(req.Context())
	for k, v := range t.headers {
		req.Header.Set(k, v)
	}
	resp, err := t.next.RoundTrip(req)
	if err != nil || req.Method != http.MethodPost {
		return resp, err
	}
	resp.Body = &boundedBody{ReadCloser: resp.Body, left: t.max}
	return resp, nil
}

// boundedBody fails a read past its bound instead of buffering on.
type boundedBody struct {
	io.ReadCloser
	left int64
}

func (b *boundedBody) Read(p []byte) (int, error) {
	if b.left <= 0 {
		var one [1]byte
		if n, err := b.ReadCloser.Read(one[:]); n == 0 {
			return 0, err
		}
		return 0, fmt.Errorf("the MCP server's answer is larger than its bound")
	}
	if int64(len(p)) > b.left {
		p = p[:b.left]
	}
	n, err := b.ReadCloser.Read(p)
	b.left -= int64(n)
	return n, err
}
