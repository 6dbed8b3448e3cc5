package egress_test

import (
	"bufio"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"net/url"
	"strings"
	"testing"

	"github.com/wick-agent/wick/platform/netguard"
	"github.com/wick-agent/wick/platform/testenv"
	"github.com/wick-agent/wick/services/sandbox/internal/egress"
)

// loopbackGuard lets the proxy reach the test servers, which listen on
// loopback like everything in these tests.
var loopbackGuard = netguard.New(netip.MustParsePrefix("127.0.0.0/8"), netip.MustParsePrefix("::1/128"))

// proxyFor serves the proxy of sandbox "sb-1" allowing patterns, and
// returns its URL and its log.
func proxyFor(t *testing.T, guard *netguard.Guard, patterns ...string) (*url.URL, *testenv.LogBuffer) {
	t.Helper()
	ps, err := egress.ParsePatterns(patterns)
	if err != nil {
		t.Fatal(err)
	}
	pol, err := egress.NewPolicy(ps, ps)
	if err != nil {
		t.Fatal(err)
	}
	var logs testenv.LogBuffer
	p := egress.New("sb-1", pol, egress.WithGuard(guard), egress.WithLogger(slog.New(slog.NewTextHandler(&logs, nil))))
	srv := httptest.NewServer(p)
	t.Cleanup(srv.Close)
	u, err := url.Parse(srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	return u, &logs
}

// hostPort is the "127.0.0.1:port" of a test server.
func hostPort(t *testing.T, srv *httptest.Server) string {
	t.Helper()
	u, err := url.Parse(srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	return u.Host
}

// raw sends one request line with a Host header to the proxy and returns the
// response's status and body, as a tool talking to the proxy sees them.
func raw(t *testing.T, proxy *url.URL, method, target string) (int, string) {
	t.Helper()
	c, err := net.Dial("tcp", proxy.Host)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	host := target
	if u, err := url.Parse(target); err == nil && u.Host != "" {
		host = u.Host
	} else if strings.HasPrefix(target, "/") {
		host = "example.com"
	}
	fmt.Fprintf(c, "%s %s HTTP/1.1\r\nHost: %s\r\n\r\n", method, target, host)
	resp, err := http.ReadResponse(bufio.NewReader(c), &http.Request{Method: method})
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(body)
}

func TestProxyConnect(t *testing.T) {
	t.Parallel()
	tlsSrv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, "hello over TLS")
	}))
	t.Cleanup(tlsSrv.Close)
	allowed := hostPort(t, tlsSrv)
	proxy, logs := proxyFor(t, loopbackGuard, allowed)

	t.Run("allowed destination is tunnelled", func(t *testing.T) {
		t.Parallel()
		// The test server's client trusts its certificate: the TLS session
		// goes end to end through the tunnel, unread by the proxy.
		cli := tlsSrv.Client()
		tr := cli.Transport.(*http.Transport).Clone()
		tr.Proxy = http.ProxyURL(proxy)
		cli.Transport = tr
		resp, err := cli.Get(tlsSrv.URL + "/x")
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		if resp.StatusCode != http.StatusOK || string(body) != "hello over TLS" {
			t.Fatalf("GET through the tunnel: %d %q", resp.StatusCode, body)
		}
	})

	other := httptest.NewTLSServer(http.NotFoundHandler())
	t.Cleanup(other.Close)
	for _, tc := range []struct {
		name, target string
		status       int
		body         string
	}{
		{"other port refused", hostPort(t, other), http.StatusForbidden,
			"egress to " + hostPort(t, other) + " is not allowed for this sandbox; allowed: " + allowed},
		{"other host refused", "example.com:443", http.StatusForbidden,
			"egress to example.com:443 is not allowed for this sandbox; allowed: " + allowed},
		{"no port", "example.com", http.StatusBadRequest, "must be host:port"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			status, body := raw(t, proxy, http.MethodConnect, tc.target)
			if status != tc.status || !strings.Contains(body, tc.body) {
				t.Fatalf("CONNECT %s: %d %q; want %d with %q", tc.target, status, body, tc.status, tc.body)
			}
		})
	}
	t.Cleanup(func() {
		// Denials are logged with the sandbox and the destination.
		want := `msg="egress denied" sandbox=sb-1 destination=example.com:443`
		if !strings.Contains(logs.String(), want) {
			t.Errorf("log lacks %q:\n%s", want, logs.String())
		}
	})
}

// TestProxyGuard: a name the policy allows is still refused when it
// resolves to an address the SSRF guard refuses (here: localhost, with the
// production guard, which refuses loopback).
func TestProxyGuard(t *testing.T) {
	t.Parallel()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		t.Errorf("the guard let a request reach %s", r.URL)
	}))
	t.Cleanup(srv.Close)
	_, port, err := net.SplitHostPort(hostPort(t, srv))
	if err != nil {
		t.Fatal(err)
	}
	dest := "localhost:" + port
	proxy, logs := proxyFor(t, netguard.New(), dest)
	for _, tc := range []struct{ method, target string }{
		{http.MethodConnect, dest},
		{http.MethodGet, "http://" + dest + "/"},
	} {
		status, body := raw(t, proxy, tc.method, tc.target)
		want := "egress to " + dest + " is not allowed for this sandbox: it resolves to an address sandboxes may not reach"
		if status != http.StatusForbidden || !strings.Contains(body, want) {
			t.Errorf("%s %s: %d %q; want 403 with %q", tc.method, tc.target, status, body, want)
		}
	}
	if want := "reason=loopback"; !strings.Contains(logs.String(), want) {
		t.Errorf("log lacks %q:\n%s", want, logs.String())
	}
}

func TestProxyPlainHTTP(t *testing.T) {
	t.Parallel()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintf(w, "%s %s proxy-auth=%q xff=%q", r.Method, r.URL.RequestURI(), r.Header.Get("Proxy-Authorization"), r.Header.Get("X-Forwarded-For"))
	}))
	t.Cleanup(srv.Close)
	allowed := hostPort(t, srv)
	proxy, _ := proxyFor(t, loopbackGuard, allowed)

	t.Run("allowed destination is forwarded", func(t *testing.T) {
		t.Parallel()
		withAuth := *proxy
		withAuth.User = url.UserPassword("u", "p")
		cli := &http.Client{Transport: &http.Transport{Proxy: http.ProxyURL(&withAuth)}}
		t.Cleanup(cli.CloseIdleConnections)
		resp, err := cli.Get(srv.URL + "/a?b=c")
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		if want := `GET /a?b=c proxy-auth="" xff=""`; resp.StatusCode != http.StatusOK || string(body) != want {
			t.Fatalf("GET through the proxy: %d %q; want %q", resp.StatusCode, body, want)
		}
	})
	for _, tc := range []struct {
		name, target string
		status       int
		body         string
	}{
		{"other host refused", "http://example.com/", http.StatusForbidden,
			"egress to example.com:80 is not allowed for this sandbox; allowed: " + allowed},
		{"origin form refused", "/a", http.StatusBadRequest, "this is a forward proxy"},
		{"https in absolute form refused", "https://" + allowed + "/", http.StatusBadRequest, "use CONNECT for https"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			status, body := raw(t, proxy, http.MethodGet, tc.target)
			if status != tc.status || !strings.Contains(body, tc.body) {
				t.Fatalf("GET %s: %d %q; want %d with %q", tc.target, status, body, tc.status, tc.body)
			}
		})
	}
}

// TestProxyDialFailure: an allowed destination that does not answer is a
// 502 that says so, not a denial.
func TestProxyDialFailure(t *testing.T) {
	t.Parallel()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	dest := l.Addr().String()
	l.Close()
	proxy, _ := proxyFor(t, loopbackGuard, dest)
	status, body := raw(t, proxy, http.MethodConnect, dest)
	if status != http.StatusBadGateway || !strings.Contains(body, "egress to "+dest+" failed") {
		t.Fatalf("CONNECT to a closed port: %d %q; want 502", status, body)
	}
}
