// Package netguard keeps connections whose destination a user chose (HTTP
// callback tools, a request's own LLM base_url) off the operator's network:
// loopback, private, shared (CGNAT), link-local and cloud metadata
// addresses are refused unless the operator allowlists them.
//
// The check runs in the dialer's Control hook, on the address the socket is
// about to connect to, after name resolution. A name that resolves to a
// public address when checked and to a private one when dialled (DNS
// rebinding) therefore cannot slip through: there is no second lookup. Every
// redirect opens its connection through the same hook, so it is checked too.
package netguard

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/netip"
	"strings"
	"syscall"
	"time"
)

// ErrDenied is wrapped by every refusal.
var ErrDenied = errors.New("destination address not allowed")

// DeniedError is a refusal. Dialled through the guard (DialContext,
// Transport), its text names the destination as the caller gave it and
// nothing else: the address a name resolved to, or the kind of that
// address, would tell whoever chose the name what the operator's DNS
// answers for it. Addr and Reason are for the operator's log.
type DeniedError struct {
	// Dest is the destination as dialled ("name:port"); empty when the
	// address was checked directly (Check, Control).
	Dest string
	// Addr is the address refused.
	Addr netip.Addr
	// Reason says what kind of address it is ("loopback").
	Reason string
}

func (e *DeniedError) Error() string {
	if e.Dest != "" {
		return "destination " + e.Dest + " is not allowed"
	}
	if !e.Addr.IsValid() {
		return ErrDenied.Error() + ": " + e.Reason
	}
	return fmt.Sprintf("%v: %s is a %s address", ErrDenied, e.Addr, e.Reason)
}

// Unwrap makes a refusal match ErrDenied under errors.Is.
func (e *DeniedError) Unwrap() error { return ErrDenied }

// DialTimeout bounds connecting to one address.
const DialTimeout = 10 * time.Second

// denied are the ranges a user-chosen destination may not reach, beyond what
// netip.Addr's own predicates (loopback, private, link-local, multicast,
// unspecified) cover.
var denied = []struct {
	prefix netip.Prefix
	kind   string
}{
	{netip.MustParsePrefix("0.0.0.0/8"), "this-network"},
	{netip.MustParsePrefix("100.64.0.0/10"), "shared (CGNAT)"}, // also Alibaba's metadata 100.100.100.200
	{netip.MustParsePrefix("192.0.0.0/24"), "IETF protocol"},
	{netip.MustParsePrefix("198.18.0.0/15"), "benchmarking"},
	{netip.MustParsePrefix("240.0.0.0/4"), "reserved"}, // and the broadcast address
}

// Embedded IPv4 addresses: a NAT64 or 6to4 address reaches the IPv4 address
// inside it, so that is the one to judge.
var (
	nat64   = netip.MustParsePrefix("64:ff9b::/96")
	sixToV4 = netip.MustParsePrefix("2002::/16")
)

// Guard decides which addresses a user-chosen destination may reach.
type Guard struct {
	allow []netip.Prefix
}

// New returns a guard that refuses non-public addresses except those in allow.
func New(allow ...netip.Prefix) *Guard {
	return &Guard{allow: allow}
}

// ParsePrefixes parses a comma-separated list of CIDR prefixes or single
// addresses ("10.0.0.0/8, 127.0.0.1"), the form of the services' allowlist flags.
func ParsePrefixes(s string) ([]netip.Prefix, error) {
	var out []netip.Prefix
	for _, f := range strings.Split(s, ",") {
		f = strings.TrimSpace(f)
		if f == "" {
			continue
		}
		if strings.Contains(f, "/") {
			p, err := netip.ParsePrefix(f)
			if err != nil {
				return nil, fmt.Errorf("allowlist entry %q: %w", f, err)
			}
			out = append(out, p.Masked())
			continue
		}
		a, err := netip.ParseAddr(f)
		if err != nil {
			return nil, fmt.Errorf("allowlist entry %q is neither an address nor a CIDR prefix", f)
		}
		out = append(out, netip.PrefixFrom(a.Unmap(), a.Unmap().BitLen()))
	}
	return out, nil
}

// Check returns nil when addr is public or allowlisted, and an error wrapping
// ErrDenied that names the kind of address otherwise.
func (g *Guard) Check(addr netip.Addr) error {
	addr = addr.Unmap().WithZone("")
	for _, p := range g.allow {
		if p.Contains(addr) {
			return nil
		}
	}
	if kind := classify(addr); kind != "" {
		return &DeniedError{Addr: addr, Reason: kind}
	}
	return nil
}

func classify(addr netip.Addr) string {
	switch {
	case addr.IsUnspecified():
		return "unspecified"
	case addr.IsLoopback():
		return "loopback"
	case addr.IsPrivate():
		return "private"
	case addr.IsLinkLocalUnicast():
		return "link-local (cloud metadata)"
	case addr.IsLinkLocalMulticast(), addr.IsInterfaceLocalMulticast(), addr.IsMulticast():
		return "multicast"
	}
	if addr.Is6() && (nat64.Contains(addr) || sixToV4.Contains(addr)) {
		b := addr.As16()
		off := 12 // NAT64: the last 32 bits
		if sixToV4.Contains(addr) {
			off = 2 // 6to4: the 32 bits after the prefix
		}
		v4 := netip.AddrFrom4([4]byte(b[off : off+4]))
		if kind := classify(v4); kind != "" {
			return kind + " (embedded in " + addr.String() + ")"
		}
		return ""
	}
	for _, d := range denied {
		if d.prefix.Contains(addr) {
			return d.kind
		}
	}
	return ""
}

// Control is a net.Dialer Control hook: it runs before every connect with the
// resolved address and refuses the connection when Check does.
func (g *Guard) Control(_, address string, _ syscall.RawConn) error {
	ap, err := netip.ParseAddrPort(address)
	if err != nil {
		return &DeniedError{Reason: fmt.Sprintf("cannot judge %q: %v", address, err)}
	}
	return g.Check(ap.Addr())
}

// Dialer returns a dialer that connects only where Check allows. Its
// refusals name the address refused; DialContext's do not.
func (g *Guard) Dialer() *net.Dialer {
	return &net.Dialer{Timeout: DialTimeout, KeepAlive: 30 * time.Second, Control: g.Control}
}

// DialContext connects to address only where Check allows. A refusal is a
// *DeniedError that names address as given; the address it resolved to is
// logged (slog's default logger, with ctx) rather than returned, as the
// error travels back to the user who chose the name.
func (g *Guard) DialContext(ctx context.Context, network, address string) (net.Conn, error) {
	conn, err := g.Dialer().DialContext(ctx, network, address)
	var de *DeniedError
	if err != nil && errors.As(err, &de) {
		slog.WarnContext(ctx, "network guard refused a connection",
			"destination", address, "address", de.Addr.String(), "reason", de.Reason)
		return nil, &DeniedError{Dest: address, Addr: de.Addr, Reason: de.Reason}
	}
	return conn, err
}

// Transport returns an HTTP transport that connects only where Check allows.
// It uses no proxy: through a proxy the guard would judge the proxy's
// address, not the destination's.
func (g *Guard) Transport() *http.Transport {
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.Proxy = nil
	tr.DialContext = g.DialContext
	return tr
}
