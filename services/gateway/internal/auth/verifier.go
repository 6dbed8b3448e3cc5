package auth

import (
	"context"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"sync"
	"time"

	"github.com/wick-agent/wick/platform/identity"
)

// Defaults of the external verifier.
const (
	DefaultVerifierTTL         = 30 * time.Second
	DefaultVerifierNegativeTTL = 5 * time.Second
	DefaultVerifierTimeout     = 5 * time.Second
	DefaultVerifierMaxEntries  = 10000
	// maxVerifierBody bounds the verifier's answer.
	maxVerifierBody = 64 << 10
)

// ErrVerifierUnavailable is returned when the verifier cannot be asked.
var ErrVerifierUnavailable = errors.New("token verifier unavailable")

// Verifier asks an external service whether a token is valid. It sends `GET <url>` with the token as
// `Authorization: Bearer <token>`; a 2xx answer with a JSON body
// {"user": "..."} (or "username", or "sub") names the user, 401 or 403
// refuses the token. Answers are cached briefly by the token's hash.
type Verifier struct {
	url        string
	client     *http.Client
	ttl        time.Duration
	negTTL     time.Duration
	maxEntries int
	now        func() time.Time

	mu    sync.Mutex
	cache map[[sha256.Size]byte]cached
}

type cached struct {
	user    string
	expires time.Time
}

// VerifierOption configures a Verifier.
type VerifierOption func(*Verifier)

// WithHTTPClient sets the client used to reach the verifier.
func WithHTTPClient(c *http.Client) VerifierOption { return func(v *Verifier) { v.client = c } }

// WithCacheTTL sets how long accepted and refused tokens are remembered.
func WithCacheTTL(accepted, refused time.Duration) VerifierOption {
	return func(v *Verifier) { v.ttl, v.negTTL = accepted, refused }
}

// WithMaxEntries bounds the cache.
func WithMaxEntries(n int) VerifierOption { return func(v *Verifier) { v.maxEntries = n } }

// NewVerifier returns a verifier for url.
func NewVerifier(url string, opts ...VerifierOption) *Verifier {
	v := &Verifier{
		url:        url,
		client:     &http.Client{Timeout: DefaultVerifierTimeout},
		ttl:        DefaultVerifierTTL,
		negTTL:     DefaultVerifierNegativeTTL,
		maxEntries: DefaultVerifierMaxEntries,
		now:        time.Now,
		cache:      map[[sha256.Size]byte]cached{},
	}
	for _, o := range opts {
		o(v)
	}
	return v
}

// Authenticate returns the token's user according to the verifier.
func (v *Verifier) Authenticate(ctx context.Context, token string) (string, error) {
	key := sha256.Sum256([]byte(token))
	now := v.now()
	v.mu.Lock()
	c, ok := v.cache[key]
	v.mu.Unlock()
	if ok && now.Before(c.expires) {
		if c.user == "" {
			return "", ErrInvalidToken
		}
		return c.user, nil
	}
	user, err := v.ask(ctx, token)
	switch {
	case err == nil:
		v.remember(key, cached{user: user, expires: now.Add(v.ttl)})
	case errors.Is(err, ErrInvalidToken):
		v.remember(key, cached{expires: now.Add(v.negTTL)})
	}
	return user, err
}

func (v *Verifier) remember(key [sha256.Size]byte, c cached) {
	v.mu.Lock()
	defer v.mu.Unlock()
	if len(v.cache) >= v.maxEntries {
		now := v.now()
		for k, e := range v.cache {
			if !now.Before(e.expires) {
				delete(v.cache, k)
			}
		}
		// Still full of live entries: forget an arbitrary one rather than grow.
		for k := range v.cache {
			if len(v.cache) < v.maxEntries {
				break
			}
			delete(v.cache, k)
		}
	}
	v.cache[key] = c
}

func (v *Verifier) ask(ctx context.Context, token string) (string, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, v.url, nil)
	if err != nil {
		return "", fmt.Errorf("%w: %v", ErrVerifierUnavailable, err)
	}
	req.Header.Set("Authorization", "Bearer "+token)
	req.Header.Set("Accept", "application/json")
	resp, err := v.client.Do(req)
	if err != nil {
		return "", fmt.Errorf("%w: %v", ErrVerifierUnavailable, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxVerifierBody))
	if err != nil {
		return "", fmt.Errorf("%w: read answer: %v", ErrVerifierUnavailable, err)
	}
	switch {
	case resp.StatusCode == http.StatusUnauthorized || resp.StatusCode == http.StatusForbidden:
		return "", ErrInvalidToken
	case resp.StatusCode < 200 || resp.StatusCode > 299:
		return "", fmt.Errorf("%w: answered %s", ErrVerifierUnavailable, resp.Status)
	}
	var ans struct {
		User     string `json:"user"`
		Username string `json:"username"`
		Sub      string `json:"sub"`
	}
	if err := json.Unmarshal(body, &ans); err != nil {
		return "", fmt.Errorf("%w: answer is not JSON: %v", ErrVerifierUnavailable, err)
	}
	user := ans.User
	if user == "" {
		user = ans.Username
	}
	if user == "" {
		user = ans.Sub
	}
	if err := identity.ValidUser(user); err != nil {
		return "", fmt.Errorf("%w: verifier named no usable user: %v", ErrVerifierUnavailable, err)
	}
	return user, nil
}
