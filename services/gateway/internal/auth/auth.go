// Package auth maps the bearer token of an HTTP request to a user: from a
// static table (a file or the environment) or from an external verifier.
package auth

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"

	"github.com/wick-agent/wick/platform/identity"
)

// ErrInvalidToken is returned for a token that maps to no user.
var ErrInvalidToken = errors.New("invalid or unknown bearer token")

// Authenticator maps a bearer token to a user.
type Authenticator interface {
	Authenticate(ctx context.Context, token string) (string, error)
}

type tokenEntry struct {
	hash [sha256.Size]byte
	user string
}

// Tokens is a static token table. Tokens are kept hashed and every entry is
// compared in constant time, so neither a memory dump nor response timing
// gives a token away.
type Tokens struct {
	entries []tokenEntry
}

// NewTokens returns the table for token → user.
func NewTokens(m map[string]string) (*Tokens, error) {
	t := &Tokens{}
	for tok, user := range m {
		if tok == "" {
			return nil, fmt.Errorf("token of user %q is empty", user)
		}
		if err := identity.ValidUser(user); err != nil {
			return nil, fmt.Errorf("token table: %w", err)
		}
		t.entries = append(t.entries, tokenEntry{hash: sha256.Sum256([]byte(tok)), user: user})
	}
	return t, nil
}

// Len is the number of tokens.
func (t *Tokens) Len() int { return len(t.entries) }

// Authenticate returns the token's user.
func (t *Tokens) Authenticate(_ context.Context, token string) (string, error) {
	h := sha256.Sum256([]byte(token))
	user := ""
	for _, e := range t.entries {
		if subtle.ConstantTimeCompare(h[:], e.hash[:]) == 1 {
			user = e.user
		}
	}
	if user == "" {
		return "", ErrInvalidToken
	}
	return user, nil
}

// ParseTokens reads "token:user" pairs separated by commas (WICK_TOKENS).
func ParseTokens(s string) (map[string]string, error) {
	m := map[string]string{}
	for pair := range strings.SplitSeq(s, ",") {
		pair = strings.TrimSpace(pair)
		if pair == "" {
			continue
		}
		tok, user, ok := strings.Cut(pair, ":")
		if !ok || tok == "" || user == "" {
			return nil, fmt.Errorf("token pair %q: want token:user", redact(pair))
		}
		if err := add(m, tok, user); err != nil {
			return nil, err
		}
	}
	return m, nil
}

// LoadTokensFile reads a token file: a JSON object {"token": "user"} (a
// value may also be {"user": "…", "orgs": ["…"]}), or lines "token user"
// (optionally "token user org1,org2") with '#' comments.
func LoadTokensFile(path string) (map[string]string, error) {
	tokens, _, err := LoadTokensAndOrgs(path)
	return tokens, err
}

// LoadTokensAndOrgs reads a token file like LoadTokensFile and also returns
// the organisations it gives each user.
func LoadTokensAndOrgs(path string) (map[string]string, map[string][]string, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, nil, fmt.Errorf("read token file: %w", err)
	}
	tokens, orgs := map[string]string{}, map[string][]string{}
	addOrgs := func(user string, list []string) error {
		for _, o := range list {
			if err := identity.ValidOrg(o); err != nil {
				return err
			}
			if !slices.Contains(orgs[user], o) {
				orgs[user] = append(orgs[user], o)
			}
		}
		return nil
	}
	if t := bytes.TrimSpace(b); len(t) > 0 && t[0] == '{' {
		var m map[string]json.RawMessage
		if err := json.Unmarshal(t, &m); err != nil {
			return nil, nil, fmt.Errorf("token file %s: %w", path, err)
		}
		for tok, raw := range m {
			var e struct {
				User string   `json:"user"`
				Orgs []string `json:"orgs"`
			}
			if err := json.Unmarshal(raw, &e.User); err != nil {
				dec := json.NewDecoder(bytes.NewReader(raw))
				dec.DisallowUnknownFields()
				if err := dec.Decode(&e); err != nil {
					return nil, nil, fmt.Errorf("token file %s: a value is a user or {\"user\", \"orgs\"}: %w", path, err)
				}
			}
			if err := add(tokens, tok, e.User); err != nil {
				return nil, nil, fmt.Errorf("token file %s: %w", path, err)
			}
			if err := addOrgs(e.User, e.Orgs); err != nil {
				return nil, nil, fmt.Errorf("token file %s: %w", path, err)
			}
		}
		return tokens, orgs, nil
	}
	sc := bufio.NewScanner(bytes.NewReader(b))
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		f := strings.Fields(line)
		if len(f) != 2 && len(f) != 3 {
			return nil, nil, fmt.Errorf("token file %s line %d: want \"token user\" or \"token user org1,org2\"", path, n)
		}
		if err := add(tokens, f[0], f[1]); err != nil {
			return nil, nil, fmt.Errorf("token file %s line %d: %w", path, n, err)
		}
		if len(f) == 3 {
			if err := addOrgs(f[1], strings.Split(f[2], ",")); err != nil {
				return nil, nil, fmt.Errorf("token file %s line %d: %w", path, n, err)
			}
		}
	}
	if err := sc.Err(); err != nil {
		return nil, nil, fmt.Errorf("token file %s: %w", path, err)
	}
	return tokens, orgs, nil
}

func add(m map[string]string, tok, user string) error {
	if tok == "" {
		return errors.New("empty token")
	}
	if err := identity.ValidUser(user); err != nil {
		return err
	}
	if prev, ok := m[tok]; ok && prev != user {
		return fmt.Errorf("token %s is given to two users", redact(tok))
	}
	m[tok] = user
	return nil
}

// redact keeps a token out of error messages and logs.
func redact(s string) string {
	if len(s) <= 4 {
		return "****"
	}
	return s[:2] + "…" + s[len(s)-2:]
}

// Chain tries each authenticator in turn and returns the first user found.
type Chain []Authenticator

// Authenticate asks each authenticator; a verifier that is down is reported
// only when no other one knows the token.
func (c Chain) Authenticate(ctx context.Context, token string) (string, error) {
	var firstErr error
	for _, a := range c {
		user, err := a.Authenticate(ctx, token)
		if err == nil {
			return user, nil
		}
		if !errors.Is(err, ErrInvalidToken) && firstErr == nil {
			firstErr = err
		}
	}
	if firstErr != nil {
		return "", firstErr
	}
	return "", ErrInvalidToken
}
