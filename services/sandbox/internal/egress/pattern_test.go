package egress

import (
	"errors"
	"strings"
	"testing"
)

func TestParsePattern(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		in   string
		want string // String() of the result; empty: an error
		err  string // part of the error
	}{
		{in: "registry.npmjs.org:443", want: "registry.npmjs.org:443"},
		{in: "Registry.NPMJS.org.:443", want: "registry.npmjs.org:443"},
		{in: "*.npmjs.org:443", want: "*.npmjs.org:443"},
		{in: "github.com:22", want: "github.com:22"},
		{in: "203.0.113.5:8080", want: "203.0.113.5:8080"},
		{in: "[2001:db8::1]:443", want: "[2001:db8::1]:443"},
		{in: "registry.npmjs.org", err: "want host:port"},
		{in: "registry.npmjs.org:*", err: "there is no wildcard port"},
		{in: "registry.npmjs.org:0", err: "from 1 to 65535"},
		{in: "registry.npmjs.org:65536", err: "from 1 to 65535"},
		{in: "*:443", err: "is not a DNS name"},
		{in: "*.:443", err: "is not a DNS name"},
		{in: "a.*.org:443", err: "is not a DNS name"},
		{in: "**.org:443", err: "is not a DNS name"},
		{in: "-a.org:443", err: "is not a DNS name"},
		{in: "a b.org:443", err: "is not a DNS name"},
		{in: "*.203.0.113.5:443", err: "takes no wildcard"},
		{in: "[fe80::1%eth0]:443", err: "takes no wildcard and no zone"},
	} {
		t.Run(tc.in, func(t *testing.T) {
			t.Parallel()
			p, err := ParsePattern(tc.in)
			if tc.err != "" {
				if err == nil || !errors.Is(err, ErrPattern) || !strings.Contains(err.Error(), tc.err) || !strings.Contains(err.Error(), tc.in) {
					t.Fatalf("ParsePattern(%q) = %v, %v; want an ErrPattern naming it and saying %q", tc.in, p, err, tc.err)
				}
				return
			}
			if err != nil || p.String() != tc.want {
				t.Fatalf("ParsePattern(%q) = %q, %v; want %q", tc.in, p, err, tc.want)
			}
		})
	}
}

func TestPatternMatch(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		pattern, host string
		port          uint16
		want          bool
	}{
		{"registry.npmjs.org:443", "registry.npmjs.org", 443, true},
		{"registry.npmjs.org:443", "REGISTRY.npmjs.org.", 443, true},
		{"registry.npmjs.org:443", "registry.npmjs.org", 80, false},
		{"registry.npmjs.org:443", "evil-registry.npmjs.org", 443, false},
		{"*.npmjs.org:443", "registry.npmjs.org", 443, true},
		{"*.npmjs.org:443", "npmjs.org", 443, false},
		{"*.npmjs.org:443", "a.b.npmjs.org", 443, false},
		{"*.npmjs.org:443", "registry.npmjs.org.evil.com", 443, false},
		{"*.npmjs.org:443", "registrynpmjs.org", 443, false},
		{"203.0.113.5:443", "203.0.113.5", 443, true},
		{"203.0.113.5:443", "::ffff:203.0.113.5", 443, true},
		{"[2001:db8::1]:443", "2001:DB8:0::1", 443, true},
	} {
		p, err := ParsePattern(tc.pattern)
		if err != nil {
			t.Fatal(err)
		}
		if got := p.Match(tc.host, tc.port); got != tc.want {
			t.Errorf("%s matches %s:%d = %v, want %v", tc.pattern, tc.host, tc.port, got, tc.want)
		}
	}
}

func TestNewPolicy(t *testing.T) {
	t.Parallel()
	must := func(s ...string) []Pattern {
		ps, err := ParsePatterns(s)
		if err != nil {
			t.Fatal(err)
		}
		return ps
	}
	bound := must("*.npmjs.org:443", "github.com:443", "github.com:22")
	for _, tc := range []struct {
		name      string
		requested []Pattern
		bound     []Pattern
		outside   string // the pattern refused; empty: accepted
	}{
		{name: "nothing asked", bound: bound},
		{name: "exact within wildcard", requested: must("registry.npmjs.org:443"), bound: bound},
		{name: "same wildcard", requested: must("*.npmjs.org:443", "github.com:22"), bound: bound},
		{name: "deeper wildcard", requested: must("*.cdn.npmjs.org:443"), bound: bound, outside: "*.cdn.npmjs.org:443"},
		{name: "apex of a wildcard", requested: must("npmjs.org:443"), bound: bound, outside: "npmjs.org:443"},
		{name: "other port", requested: must("github.com:443", "github.com:80"), bound: bound, outside: "github.com:80"},
		{name: "wildcard over exact", requested: must("*.github.com:443"), bound: bound, outside: "*.github.com:443"},
		{name: "operator allows nothing", requested: must("github.com:443"), outside: "github.com:443"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			pol, err := NewPolicy(tc.requested, tc.bound)
			if tc.outside == "" {
				if err != nil {
					t.Fatalf("NewPolicy: %v", err)
				}
				for _, q := range tc.requested {
					if !q.Wildcard && !pol.Allows(q.Host, q.Port) {
						t.Errorf("policy %s does not allow %s", pol, q)
					}
				}
				return
			}
			var ob *OutsideBoundError
			if !errors.As(err, &ob) || ob.Pattern.String() != tc.outside || !strings.Contains(err.Error(), tc.outside) {
				t.Fatalf("NewPolicy = %v; want an OutsideBoundError naming %s", err, tc.outside)
			}
		})
	}
}
