// Package egress is the sandbox service's HTTP(S) forward proxy: the one way
// out of a sandbox that has no network, to destinations the agent named and
// the operator allowed. It tunnels CONNECT without looking inside (no TLS
// interception) and forwards plain-HTTP requests in absolute form, and it
// dials every destination through the SSRF guard (platform/netguard), so an
// allowed name that resolves to a loopback or private address is refused
// all the same.
package egress

import (
	"errors"
	"fmt"
	"net"
	"net/netip"
	"strconv"
	"strings"
)

// ErrPattern is wrapped by every malformed pattern.
var ErrPattern = errors.New("egress pattern")

// Pattern is one allowed destination, written "host:port". The host is a DNS
// name, an IP address (IPv6 in brackets), or "*." followed by a name, which
// matches exactly one more label on the left, as in a TLS certificate:
// "*.npmjs.org:443" allows "registry.npmjs.org:443" but neither
// "npmjs.org:443" nor "a.b.npmjs.org:443". The port is required and is one
// number: a wildcard port would open every service of a host, so each port
// is named.
type Pattern struct {
	// Host is the name or address, lower case without a trailing dot; for a
	// wildcard, the part after "*.".
	Host string
	// Wildcard says Host is a suffix that takes one more label.
	Wildcard bool
	// Port is the destination port.
	Port uint16
}

// ParsePattern parses "host:port" (see Pattern).
func ParsePattern(s string) (Pattern, error) {
	host, port, err := net.SplitHostPort(strings.TrimSpace(s))
	if err != nil {
		return Pattern{}, fmt.Errorf("%w %q: want host:port, e.g. registry.npmjs.org:443 or *.npmjs.org:443", ErrPattern, s)
	}
	n, err := strconv.ParseUint(port, 10, 16)
	if err != nil || n == 0 {
		return Pattern{}, fmt.Errorf("%w %q: port %q must be a number from 1 to 65535 (there is no wildcard port)", ErrPattern, s, port)
	}
	p := Pattern{Port: uint16(n)}
	if rest, ok := strings.CutPrefix(host, "*."); ok {
		p.Wildcard, host = true, rest
	}
	host = normHost(host)
	if a, err := netip.ParseAddr(host); err == nil {
		if p.Wildcard || a.Zone() != "" {
			return Pattern{}, fmt.Errorf("%w %q: an IP address takes no wildcard and no zone", ErrPattern, s)
		}
		p.Host = a.Unmap().String()
		return p, nil
	}
	if !validName(host) {
		return Pattern{}, fmt.Errorf("%w %q: host %q is not a DNS name (letters, digits, '-' and '.'; '*' only as the whole leftmost label)", ErrPattern, s, host)
	}
	p.Host = host
	return p, nil
}

// ParsePatterns parses each pattern of list; the error names the first bad one.
func ParsePatterns(list []string) ([]Pattern, error) {
	out := make([]Pattern, 0, len(list))
	for _, s := range list {
		p, err := ParsePattern(s)
		if err != nil {
			return nil, err
		}
		out = append(out, p)
	}
	return out, nil
}

// String is the pattern as written.
func (p Pattern) String() string {
	h := p.Host
	if p.Wildcard {
		h = "*." + h
	}
	return net.JoinHostPort(h, strconv.Itoa(int(p.Port)))
}

// Match reports whether the destination host:port is allowed by p; host is
// compared case-insensitively and without a trailing dot.
func (p Pattern) Match(host string, port uint16) bool {
	if port != p.Port {
		return false
	}
	host = normHost(host)
	if a, err := netip.ParseAddr(host); err == nil {
		host = a.Unmap().String()
	}
	if !p.Wildcard {
		return host == p.Host
	}
	label, rest, ok := strings.Cut(host, ".")
	return ok && label != "" && rest == p.Host
}

// Covers reports whether every destination q allows is allowed by p too.
func (p Pattern) Covers(q Pattern) bool {
	if p.Port != q.Port {
		return false
	}
	if p.Wildcard {
		// One label each: *.a.b never covers *.x.a.b.
		return q.Wildcard && q.Host == p.Host || !q.Wildcard && p.Match(q.Host, q.Port)
	}
	return !q.Wildcard && q.Host == p.Host
}

func normHost(h string) string {
	return strings.TrimSuffix(strings.ToLower(h), ".")
}

// validName reports whether h is a DNS name of letters, digits and hyphens
// in dot-separated labels of at most 63 bytes.
func validName(h string) bool {
	if h == "" || len(h) > 253 {
		return false
	}
	for _, label := range strings.Split(h, ".") {
		if label == "" || len(label) > 63 || label[0] == '-' || label[len(label)-1] == '-' {
			return false
		}
		for _, c := range label {
			if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '-') {
				return false
			}
		}
	}
	return true
}

// Policy is the set of destinations a sandbox may reach: what its agent
// asked for, within what the operator allows.
type Policy struct {
	allowed []Pattern
}

// OutsideBoundError names the requested pattern the operator's bound does
// not cover.
type OutsideBoundError struct {
	// Pattern is the requested pattern.
	Pattern Pattern
	// Bound is the operator's bound.
	Bound []Pattern
}

func (e *OutsideBoundError) Error() string {
	return fmt.Sprintf("egress to %s is not allowed on this service (the operator allows: %s)", e.Pattern, list(e.Bound))
}

// NewPolicy checks requested against the operator's bound and returns the
// policy of the requested patterns. A pattern the bound does not cover is an
// *OutsideBoundError: a sandbox never silently gets less than it asked for.
func NewPolicy(requested, bound []Pattern) (Policy, error) {
	for _, q := range requested {
		covered := false
		for _, b := range bound {
			if b.Covers(q) {
				covered = true
				break
			}
		}
		if !covered {
			return Policy{}, &OutsideBoundError{Pattern: q, Bound: bound}
		}
	}
	return Policy{allowed: append([]Pattern(nil), requested...)}, nil
}

// Allows reports whether the destination host:port is in the policy.
func (p Policy) Allows(host string, port uint16) bool {
	for _, a := range p.allowed {
		if a.Match(host, port) {
			return true
		}
	}
	return false
}

// String lists the allowed patterns, "nothing" when there are none.
func (p Policy) String() string { return list(p.allowed) }

func list(ps []Pattern) string {
	if len(ps) == 0 {
		return "nothing"
	}
	s := make([]string, len(ps))
	for i, p := range ps {
		s[i] = p.String()
	}
	return strings.Join(s, ", ")
}
