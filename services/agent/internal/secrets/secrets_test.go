package secrets_test

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/wick-agent/wick/services/agent/internal/secrets"
)

// mounted lays out dir as a Kubernetes Secret volume does: each key a link
// into a ..data directory.
func mounted(t *testing.T, files map[string]string) string {
	t.Helper()
	dir := t.TempDir()
	data := filepath.Join(dir, "..2026_11_26_data")
	if err := os.Mkdir(data, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Base(data), filepath.Join(dir, "..data")); err != nil {
		t.Fatal(err)
	}
	for k, v := range files {
		if err := os.WriteFile(filepath.Join(data, k), []byte(v), 0o600); err != nil {
			t.Fatal(err)
		}
		if err := os.Symlink(filepath.Join("..data", k), filepath.Join(dir, k)); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

func TestExpand(t *testing.T) {
	dir := mounted(t, map[string]string{
		"api-key":  "sk-123\n",
		"crlf":     "tok\r\n",
		"two":      "a\nb\n",
		"big":      strings.Repeat("x", secrets.MaxBytes+1),
		"just-max": strings.Repeat("y", secrets.MaxBytes),
	})
	outside := filepath.Join(filepath.Dir(dir), "outside")
	if err := os.WriteFile(outside, []byte("nope"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(outside, filepath.Join(dir, "escape")); err != nil {
		t.Fatal(err)
	}
	d := secrets.NewDir(dir)
	tests := []struct {
		in, want string
		err      string
	}{
		{in: "plain", want: "plain"},
		{in: "${secret:api-key}", want: "sk-123"},
		{in: "Bearer ${secret:api-key}", want: "Bearer sk-123"},
		{in: "${secret:api-key}:${secret:crlf}", want: "sk-123:tok"},
		{in: "${secret:two}", want: "a\nb"},
		{in: "${secret:just-max}", want: strings.Repeat("y", secrets.MaxBytes)},
		{in: "${secret:missing}", err: "not mounted: missing"},
		{in: "${secret:big}", err: "larger than"},
		{in: "${secret:escape}", err: "escape"},
		{in: "${secret:..data}", err: "malformed"},
		{in: "${secret:../outside}", err: "malformed"},
		{in: "${secret:a/b}", err: "malformed"},
		{in: "${secret:api-key", err: "malformed"},
	}
	for _, tt := range tests {
		got, err := d.Expand(tt.in)
		if tt.err != "" {
			if err == nil || !strings.Contains(err.Error(), tt.err) {
				t.Errorf("Expand(%q) = %q, %v; want an error with %q", tt.in, got, err, tt.err)
			}
			continue
		}
		if err != nil || got != tt.want {
			t.Errorf("Expand(%q) = %q, %v; want %q", tt.in, got, err, tt.want)
		}
	}
}

func TestNoDirectory(t *testing.T) {
	var d secrets.Dir
	if got, err := d.Expand("no reference"); err != nil || got != "no reference" {
		t.Fatalf("Expand = %q, %v", got, err)
	}
	if _, err := d.Expand("${secret:key}"); !errors.Is(err, secrets.ErrNotFound) || !strings.Contains(err.Error(), "-secrets-dir") {
		t.Fatalf("Expand without a directory = %v", err)
	}
}

func TestExpandMap(t *testing.T) {
	d := secrets.NewDir(mounted(t, map[string]string{"k": "v"}))
	got, err := d.ExpandMap(map[string]string{"A": "${secret:k}", "B": "b"})
	if err != nil || got["A"] != "v" || got["B"] != "b" {
		t.Fatalf("ExpandMap = %v, %v", got, err)
	}
	if _, err := d.ExpandMap(map[string]string{"KEY": "${secret:gone}"}); err == nil || !strings.HasPrefix(err.Error(), "KEY: ") {
		t.Fatalf("ExpandMap names the entry: %v", err)
	}
	if m, err := d.ExpandMap(nil); m != nil || err != nil {
		t.Fatalf("ExpandMap(nil) = %v, %v", m, err)
	}
}

func TestShownAndCheck(t *testing.T) {
	tests := []struct {
		v      string
		shown  bool
		broken bool
	}{
		{v: "${secret:k}", shown: true},
		{v: "Bearer ${secret:k}", shown: true},
		{v: "${secret:user}:${secret:pass}", shown: false}, // ":" between them is text of the value
		{v: "sk-live ${secret:k}", shown: false},
		{v: "sk-live-123", shown: false},
		{v: "sk ${secret:k}", shown: false},
		{v: "", shown: false},
		{v: "${secret:", broken: true},
		{v: "x ${secret:.hidden}", broken: true},
	}
	for _, tt := range tests {
		if got := secrets.Shown(tt.v); got != tt.shown {
			t.Errorf("Shown(%q) = %v", tt.v, got)
		}
		if err := secrets.Check(tt.v); (err != nil) != tt.broken {
			t.Errorf("Check(%q) = %v", tt.v, err)
		}
		if err := secrets.Check(tt.v); err != nil && strings.Contains(err.Error(), ".hidden") {
			t.Errorf("Check(%q) quotes the value: %v", tt.v, err)
		}
	}
}

func TestGrants(t *testing.T) {
	t.Parallel()
	g, err := secrets.NewGrants(map[string]secrets.Grant{
		"a-key":  {Users: []string{"alice"}, Orgs: []string{"acme"}},
		"shared": {Users: []string{secrets.Everyone}},
	})
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name, secret, user string
		orgs               []string
		want               bool
	}{
		{"granted user", "a-key", "alice", nil, true},
		{"other user", "a-key", "bob", nil, false},
		{"member of a granted org", "a-key", "carol", []string{"x", "acme"}, true},
		{"member of another org", "a-key", "carol", []string{"x"}, false},
		{"everyone", "shared", "bob", nil, true},
		{"not granted at all", "other", "alice", []string{"acme"}, false},
	}
	for _, c := range cases {
		if got := g.Allows(c.secret, c.user, c.orgs); got != c.want {
			t.Errorf("%s: Allows = %v, want %v", c.name, got, c.want)
		}
	}
	if (secrets.Grants{}).Allows("a-key", "alice", nil) {
		t.Error("the zero Grants grants")
	}
}

func TestLoadGrants(t *testing.T) {
	t.Parallel()
	cases := []struct{ name, yaml, err string }{
		{"ok", "k1:\n  users: [alice, \"*\"]\n  orgs: [acme]\nk2: {orgs: [b]}\n", ""},
		{"empty", "", ""},
		{"unknown field", "k1: {user: [alice]}\n", "user"},
		{"bad secret name", "../etc: {users: [a]}\n", "not a secret name"},
		{"bad org", "k: {orgs: ['a b']}\n", "organisation"},
		{"empty user", "k: {users: ['']}\n", "empty user"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			p := filepath.Join(t.TempDir(), "grants.yaml")
			if err := os.WriteFile(p, []byte(c.yaml), 0o600); err != nil {
				t.Fatal(err)
			}
			_, err := secrets.LoadGrants(p)
			if c.err == "" && err != nil || c.err != "" && (err == nil || !strings.Contains(err.Error(), c.err)) {
				t.Fatalf("err = %v, want %q", err, c.err)
			}
		})
	}
	if g, err := secrets.LoadGrants(""); err != nil || len(g.Names()) != 0 {
		t.Fatalf("no file: %v %v", g.Names(), err)
	}
}

func TestRefs(t *testing.T) {
	t.Parallel()
	got := secrets.Refs("Bearer ${secret:a}:${secret:b.c}${secret:a} ${secret:../x}")
	if strings.Join(got, ",") != "a,b.c" {
		t.Fatalf("Refs = %v", got)
	}
}
