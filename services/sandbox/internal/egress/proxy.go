package egress

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httputil"
	"strconv"
	"sync"

	"github.com/wick-agent/wick/platform/netguard"
)

// Dialer connects to a destination the policy allowed; netguard.Guard's
// DialContext is the one production uses.
type Dialer interface {
	DialContext(ctx context.Context, network, address string) (net.Conn, error)
}

// Proxy is the forward proxy of one sandbox: an http.Handler serving CONNECT
// and absolute-form plain-HTTP requests to the destinations of its policy.
type Proxy struct {
	key    string
	policy Policy
	dialer Dialer
	log    *slog.Logger
	fwd    *httputil.ReverseProxy
}

// Option configures a Proxy.
type Option func(*Proxy)

// WithGuard dials through g instead of a guard that refuses every
// non-public address. Tests give one that allows loopback (netguard.New with
// the loopback prefixes); operators have no flag for it, since a sandbox
// reaching the service's own network is what the guard exists to prevent.
func WithGuard(g *netguard.Guard) Option { return func(p *Proxy) { p.dialer = g } }

// WithLogger logs denials and failed dials to l (default slog.Default()).
func WithLogger(l *slog.Logger) Option { return func(p *Proxy) { p.log = l } }

// New returns the proxy of the sandbox key (named in its log records) that
// allows exactly policy.
func New(key string, policy Policy, opts ...Option) *Proxy {
	p := &Proxy{key: key, policy: policy, dialer: netguard.New(), log: slog.Default()}
	for _, o := range opts {
		o(p)
	}
	tr := &http.Transport{
		// No proxy of its own: the destination is the one judged.
		Proxy:             nil,
		DialContext:       p.dialer.DialContext,
		ForceAttemptHTTP2: false,
		MaxIdleConns:      16,
	}
	p.fwd = &httputil.ReverseProxy{
		// The request is already in absolute form, so there is nothing to
		// rewrite; unlike a Director, Rewrite adds no X-Forwarded-For,
		// which would tell the destination about the service's host.
		Rewrite:      func(*httputil.ProxyRequest) {},
		Transport:    tr,
		ErrorHandler: p.forwardError,
	}
	return p
}

// ServeHTTP serves one request of the sandbox.
func (p *Proxy) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method == http.MethodConnect {
		p.connect(w, r)
		return
	}
	if !r.URL.IsAbs() || r.URL.Host == "" {
		http.Error(w, "this is a forward proxy: send CONNECT host:port, or a request with an absolute http:// URL", http.StatusBadRequest)
		return
	}
	if r.URL.Scheme != "http" {
		http.Error(w, fmt.Sprintf("scheme %q is not proxied: use CONNECT for https", r.URL.Scheme), http.StatusBadRequest)
		return
	}
	host, port, ok := p.check(w, r, r.URL.Host, 80)
	if !ok {
		return
	}
	// The dial goes to exactly the checked destination.
	r.URL.Host = net.JoinHostPort(host, strconv.Itoa(int(port)))
	r.Header.Del("Proxy-Authorization")
	p.fwd.ServeHTTP(w, r)
}

// check splits target ("host[:port]"), answers 400 or 403 itself when the
// destination is malformed or not allowed, and reports whether to go on.
func (p *Proxy) check(w http.ResponseWriter, r *http.Request, target string, defPort uint16) (string, uint16, bool) {
	host, portStr, err := net.SplitHostPort(target)
	port := defPort
	if err != nil {
		if defPort == 0 {
			http.Error(w, fmt.Sprintf("CONNECT target %q must be host:port", target), http.StatusBadRequest)
			return "", 0, false
		}
		host = target
	} else {
		n, err := strconv.ParseUint(portStr, 10, 16)
		if err != nil || n == 0 {
			http.Error(w, fmt.Sprintf("destination %q has no valid port", target), http.StatusBadRequest)
			return "", 0, false
		}
		port = uint16(n)
	}
	dest := net.JoinHostPort(host, strconv.Itoa(int(port)))
	if !p.policy.Allows(host, port) {
		p.log.WarnContext(r.Context(), "egress denied", "sandbox", p.key, "destination", dest, "reason", "not in the sandbox's allowlist")
		p.deny(w, dest)
		return "", 0, false
	}
	return host, port, true
}

// deny answers 403 with a body that a tool shows as its error.
func (p *Proxy) deny(w http.ResponseWriter, dest string) {
	http.Error(w, fmt.Sprintf("egress to %s is not allowed for this sandbox; allowed: %s", dest, p.policy), http.StatusForbidden)
}

// connect tunnels one CONNECT: the bytes are copied both ways unread.
func (p *Proxy) connect(w http.ResponseWriter, r *http.Request) {
	host, port, ok := p.check(w, r, r.Host, 0)
	if !ok {
		return
	}
	dest := net.JoinHostPort(host, strconv.Itoa(int(port)))
	up, err := p.dialer.DialContext(r.Context(), "tcp", dest)
	if err != nil {
		p.dialFailed(w, r, dest, err)
		return
	}
	defer up.Close()
	conn, brw, err := http.NewResponseController(w).Hijack()
	if err != nil {
		http.Error(w, "this server cannot tunnel: "+err.Error(), http.StatusInternalServerError)
		return
	}
	defer conn.Close()
	if _, err := io.WriteString(conn, "HTTP/1.1 200 Connection Established\r\n\r\n"); err != nil {
		return
	}
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		// What the client sent after its CONNECT (a TLS ClientHello) may
		// already sit in the server's read buffer.
		_, _ = io.Copy(up, brw.Reader)
		closeWrite(up)
	}()
	_, _ = io.Copy(conn, up)
	closeWrite(conn)
	wg.Wait()
}

// closeWrite passes a half-close on, so a peer waiting for EOF gets it.
func closeWrite(c net.Conn) {
	if cw, ok := c.(interface{ CloseWrite() error }); ok {
		_ = cw.CloseWrite()
		return
	}
	_ = c.Close()
}

// dialFailed answers a failed dial: 403 when the guard refused the address
// the name resolved to, else 502.
func (p *Proxy) dialFailed(w http.ResponseWriter, r *http.Request, dest string, err error) {
	var de *netguard.DeniedError
	if errors.As(err, &de) {
		p.log.WarnContext(r.Context(), "egress denied", "sandbox", p.key, "destination", dest,
			"address", de.Addr.String(), "reason", de.Reason)
		http.Error(w, fmt.Sprintf("egress to %s is not allowed for this sandbox: it resolves to an address sandboxes may not reach", dest), http.StatusForbidden)
		return
	}
	p.log.InfoContext(r.Context(), "egress dial failed", "sandbox", p.key, "destination", dest, "error", err)
	http.Error(w, fmt.Sprintf("egress to %s failed: %v", dest, err), http.StatusBadGateway)
}

func (p *Proxy) forwardError(w http.ResponseWriter, r *http.Request, err error) {
	p.dialFailed(w, r, r.URL.Host, err)
}
