package secrets

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"sort"

	"gopkg.in/yaml.v3"

	"github.com/wick-agent/wick/platform/identity"
)

// Everyone in a grant's users list gives the secret to every user.
const Everyone = "*"

// MaxGrantsFileBytes bounds a grants file: it maps names to lists of users
// and organisations, and is read once at start.
const MaxGrantsFileBytes = 1 << 20

// Grants says which users and organisations may name which secrets in the
// agents they write themselves. Secrets are the operator's: without a grant
// only the operator's agent templates may name them. The zero Grants grants
// nothing.
type Grants struct {
	byName map[string]Grant
}

// Grant lists who may name one secret.
type Grant struct {
	// Users are user ids; Everyone grants the secret to every user.
	Users []string `yaml:"users"`
	// Orgs are organisations; every member may name the secret.
	Orgs []string `yaml:"orgs"`
}

// NewGrants returns the grants of byName (secret name → who may name it),
// checked as LoadGrants checks a file.
func NewGrants(byName map[string]Grant) (Grants, error) {
	g := Grants{byName: make(map[string]Grant, len(byName))}
	for name, gr := range byName {
		if !ValidName(name) {
			return Grants{}, fmt.Errorf("secret grant %q: not a secret name (letters, digits, '.', '_' and '-', not starting with '.')", name)
		}
		for _, u := range gr.Users {
			if u == "" {
				return Grants{}, fmt.Errorf("secret grant %q: an empty user", name)
			}
		}
		for _, o := range gr.Orgs {
			if err := identity.ValidOrg(o); err != nil {
				return Grants{}, fmt.Errorf("secret grant %q: %w", name, err)
			}
		}
		g.byName[name] = Grant{Users: slices.Clone(gr.Users), Orgs: slices.Clone(gr.Orgs)}
	}
	return g, nil
}

// LoadGrants reads a YAML file that maps secret names to the users and
// organisations that may name them:
//
//	SEARCH_API_KEY:
//	  users: ["*"]
//	OPENAI_API_KEY:
//	  users: [alice]
//	  orgs: [research]
//
// An empty path grants nothing.
func LoadGrants(path string) (Grants, error) {
	if path == "" {
		return Grants{}, nil
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return Grants{}, fmt.Errorf("secret grants: %w", err)
	}
	if len(data) > MaxGrantsFileBytes {
		return Grants{}, fmt.Errorf("secret grants %s: larger than %d bytes", path, MaxGrantsFileBytes)
	}
	var byName map[string]Grant
	dec := yaml.NewDecoder(bytes.NewReader(data))
	dec.KnownFields(true)
	if err := dec.Decode(&byName); err != nil && !errors.Is(err, io.EOF) {
		return Grants{}, fmt.Errorf("secret grants %s: %w", path, err)
	}
	g, err := NewGrants(byName)
	if err != nil {
		return Grants{}, fmt.Errorf("secret grants %s: %w", path, err)
	}
	return g, nil
}

// Allows reports whether user, a member of orgs, may name the secret.
func (g Grants) Allows(name, user string, orgs []string) bool {
	gr, ok := g.byName[name]
	if !ok {
		return false
	}
	if slices.Contains(gr.Users, Everyone) || slices.Contains(gr.Users, user) {
		return true
	}
	return slices.ContainsFunc(orgs, func(o string) bool { return slices.Contains(gr.Orgs, o) })
}

// Names returns the granted secret names, sorted.
func (g Grants) Names() []string {
	out := make([]string, 0, len(g.byName))
	for n := range g.byName {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}

// ValidName reports whether name can be referenced as ${secret:NAME}.
func ValidName(name string) bool { return nameRE.MatchString(name) }

// Refs returns the names v references, in order, once each.
func Refs(v string) []string {
	var out []string
	for _, m := range refRE.FindAllStringSubmatch(v, -1) {
		if !slices.Contains(out, m[1]) {
			out = append(out, m[1])
		}
	}
	return out
}
