package netguard_test

import (
	"bytes"
	"errors"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strings"
	"testing"

	"github.com/wick-agent/wick/platform/netguard"
)

func TestCheck(t *testing.T) {
	allow, err := netguard.ParsePrefixes("10.1.0.0/16, 127.0.0.2")
	if err != nil {
		t.Fatal(err)
	}
	g := netguard.New(allow...)
	tests := []struct {
		addr string
		kind string // "" when allowed
	}{
		{"93.184.216.34", ""},
		{"2606:4700::1111", ""},
		{"127.0.0.1", "loopback"},
		{"::1", "loopback"},
		{"::ffff:127.0.0.1", "loopback"},
		{"10.0.0.1", "private"},
		{"172.16.5.4", "private"},
		{"192.168.1.1", "private"},
		{"fd00:ec2::254", "private"}, // AWS metadata over IPv6 (ULA)
		{"169.254.169.254", "link-local"},
		{"fe80::1", "link-local"},
		{"100.100.100.200", "shared (CGNAT)"},
		{"0.0.0.0", "unspecified"},
		{"0.1.2.3", "this-network"},
		{"255.255.255.255", "reserved"},
		{"224.0.0.1", "multicast"},
		{"64:ff9b::a9fe:a9fe", "link-local"}, // NAT64 of 169.254.169.254
		{"2002:7f00:1::", "loopback"},        // 6to4 of 127.0.0.1
		{"64:ff9b::5db8:d822", ""},           // NAT64 of a public address
		// Allowlisted.
		{"10.1.2.3", ""},
		{"127.0.0.2", ""},
		{"::ffff:10.1.0.9", ""},
	}
	for _, tt := range tests {
		t.Run(tt.addr, func(t *testing.T) {
			err := g.Check(netip.MustParseAddr(tt.addr))
			if tt.kind == "" {
				if err != nil {
					t.Fatalf("Check(%s) = %v, want allowed", tt.addr, err)
				}
				return
			}
			if !errors.Is(err, netguard.ErrDenied) || !strings.Contains(err.Error(), tt.kind) {
				t.Fatalf("Check(%s) = %v, want ErrDenied naming %q", tt.addr, err, tt.kind)
			}
		})
	}
}

func TestParsePrefixesRefusesGarbage(t *testing.T) {
	for _, in := range []string{"10.0.0.0/33", "example.com", "10.0.0.1/8/2"} {
		if _, err := netguard.ParsePrefixes(in); err == nil {
			t.Errorf("ParsePrefixes(%q) accepted it", in)
		}
	}
}

// The guard judges the address the socket connects to, so a name that
// resolves to loopback is refused like the address itself.
func TestTransportRefusesLoopbackByNameAndAddress(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { w.Write([]byte("secret")) }))
	t.Cleanup(srv.Close)
	_, port, _ := net.SplitHostPort(srv.Listener.Addr().String())
	client := &http.Client{Transport: netguard.New().Transport()}
	for _, u := range []string{srv.URL, "http://localhost:" + port} {
		resp, err := client.Get(u)
		if err == nil {
			resp.Body.Close()
			t.Fatalf("GET %s went through the guard", u)
		}
		if !errors.Is(err, netguard.ErrDenied) {
			t.Fatalf("GET %s: %v, want ErrDenied", u, err)
		}
	}

	allowed := &http.Client{Transport: netguard.New(netip.MustParsePrefix("127.0.0.1/32")).Transport()}
	resp, err := allowed.Get(srv.URL)
	if err != nil {
		t.Fatalf("allowlisted GET: %v", err)
	}
	resp.Body.Close()
}

// A redirect opens its connection through the same hook, so an allowed
// server cannot bounce the client to a refused one.
func TestTransportChecksRedirects(t *testing.T) {
	lis, err := net.Listen("tcp", "127.0.0.2:0")
	if err != nil {
		t.Skipf("no 127.0.0.2 on this host: %v", err)
	}
	inner := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { w.Write([]byte("secret")) }))
	inner.Listener = lis
	inner.Start()
	t.Cleanup(inner.Close)
	outer := httptest.NewServer(http.RedirectHandler(inner.URL, http.StatusFound))
	t.Cleanup(outer.Close)

	client := &http.Client{Transport: netguard.New(netip.MustParsePrefix("127.0.0.1/32")).Transport()}
	resp, err := client.Get(outer.URL)
	if err == nil {
		resp.Body.Close()
		t.Fatal("the redirect to 127.0.0.2 went through the guard")
	}
	if !errors.Is(err, netguard.ErrDenied) {
		t.Fatalf("redirect: %v, want ErrDenied", err)
	}
}

// A refusal tells the user who chose a name only that the destination is not
// allowed: the address the name resolved to (or its kind) would answer what
// the operator's DNS says for it. The operator's log keeps the address.
func TestRefusalNamesTheDestinationNotTheAddress(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { w.Write([]byte("secret")) }))
	t.Cleanup(srv.Close)
	_, port, _ := net.SplitHostPort(srv.Listener.Addr().String())
	var logged bytes.Buffer
	prev := slog.Default()
	slog.SetDefault(slog.New(slog.NewTextHandler(&logged, nil)))
	t.Cleanup(func() { slog.SetDefault(prev) })

	client := &http.Client{Transport: netguard.New().Transport()}
	resp, err := client.Get("http://localhost:" + port + "/x")
	if err == nil {
		resp.Body.Close()
		t.Fatal("GET localhost went through the guard")
	}
	if !errors.Is(err, netguard.ErrDenied) {
		t.Fatalf("GET: %v, want ErrDenied", err)
	}
	msg := err.Error()
	if !strings.Contains(msg, "destination localhost:"+port+" is not allowed") {
		t.Errorf("error %q does not name the destination as given", msg)
	}
	for _, leak := range []string{"127.0.0.1", "::1", "loopback", "dial tcp"} {
		if strings.Contains(msg, leak) {
			t.Errorf("error %q reveals %q", msg, leak)
		}
	}
	var de *netguard.DeniedError
	if !errors.As(err, &de) || !de.Addr.IsLoopback() || de.Reason != "loopback" {
		t.Errorf("DeniedError = %+v, want the loopback address for the log", de)
	}
	if !strings.Contains(logged.String(), "localhost:"+port) || !strings.Contains(logged.String(), "reason=loopback") {
		t.Errorf("log %q lacks the destination and the reason", logged.String())
	}
}
