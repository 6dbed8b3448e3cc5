package auth

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"reflect"
	"sync/atomic"
	"testing"
	"time"
)

func TestParseTokens(t *testing.T) {
	t.Parallel()
	tests := []struct {
		in      string
		want    map[string]string
		wantErr bool
	}{
		{"tok1:alice,tok2:bob", map[string]string{"tok1": "alice", "tok2": "bob"}, false},
		{" tok1:alice , ", map[string]string{"tok1": "alice"}, false},
		{"", map[string]string{}, false},
		{"tok1", nil, true},
		{":alice", nil, true},
		{"tok1:al\x01ice", nil, true},
		{"tok1:alice,tok1:bob", nil, true},
	}
	for _, tc := range tests {
		t.Run(tc.in, func(t *testing.T) {
			got, err := ParseTokens(tc.in)
			if (err != nil) != tc.wantErr {
				t.Fatalf("err = %v", err)
			}
			if !tc.wantErr && !reflect.DeepEqual(got, tc.want) {
				t.Fatalf("got %v", got)
			}
		})
	}
}

func TestLoadTokensFile(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	tests := []struct {
		name, content string
		want          map[string]string
		wantErr       bool
	}{
		{"lines", "# tokens\ntok1 alice\n\n  tok2   bob  \n", map[string]string{"tok1": "alice", "tok2": "bob"}, false},
		{"json", `{"tok1":"alice"}`, map[string]string{"tok1": "alice"}, false},
		{"bad line", "tok1 alice acme extra\n", nil, true},
		{"bad organisation", "tok1 alice ac/me\n", nil, true},
		{"lines with organisations", "tok1 alice acme,research\ntok2 bob\n", map[string]string{"tok1": "alice", "tok2": "bob"}, false},
		{"json with organisations", `{"tok1":{"user":"alice","orgs":["acme"]},"tok2":"bob"}`, map[string]string{"tok1": "alice", "tok2": "bob"}, false},
		{"json with an unknown field", `{"tok1":{"user":"alice","org":["acme"]}}`, nil, true},
		{"bad json", `{"tok1":`, nil, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			p := filepath.Join(dir, tc.name)
			if err := os.WriteFile(p, []byte(tc.content), 0o600); err != nil {
				t.Fatal(err)
			}
			got, err := LoadTokensFile(p)
			if (err != nil) != tc.wantErr {
				t.Fatalf("err = %v", err)
			}
			if !tc.wantErr && !reflect.DeepEqual(got, tc.want) {
				t.Fatalf("got %v", got)
			}
		})
	}
}

func TestLoadTokensAndOrgs(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	for name, content := range map[string]string{
		"lines": "tok1 alice acme,research\ntok3 alice acme\ntok2 bob\n",
		"json":  `{"tok1":{"user":"alice","orgs":["acme","research"]},"tok2":"bob"}`,
	} {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
		_, orgs, err := LoadTokensAndOrgs(p)
		if err != nil || !reflect.DeepEqual(orgs, map[string][]string{"alice": {"acme", "research"}}) {
			t.Fatalf("%s: orgs %v, %v", name, orgs, err)
		}
	}
}

func TestTokens(t *testing.T) {
	t.Parallel()
	tok, err := NewTokens(map[string]string{"secret-a": "alice", "secret-b": "bob"})
	if err != nil {
		t.Fatal(err)
	}
	for in, want := range map[string]string{"secret-a": "alice", "secret-b": "bob", "secret-c": "", "": "", "secret-": ""} {
		got, err := tok.Authenticate(context.Background(), in)
		if want == "" {
			if !errors.Is(err, ErrInvalidToken) {
				t.Errorf("%q: err = %v", in, err)
			}
			continue
		}
		if err != nil || got != want {
			t.Errorf("%q = %q, %v", in, got, err)
		}
	}
}

func TestVerifier(t *testing.T) {
	t.Parallel()
	var calls atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		calls.Add(1)
		switch r.Header.Get("Authorization") {
		case "Bearer good":
			_, _ = w.Write([]byte(`{"username":"dave"}`))
		case "Bearer sub":
			_, _ = w.Write([]byte(`{"sub":"erin"}`))
		case "Bearer nouser":
			_, _ = w.Write([]byte(`{}`))
		case "Bearer down":
			w.WriteHeader(http.StatusBadGateway)
		default:
			w.WriteHeader(http.StatusForbidden)
		}
	}))
	t.Cleanup(srv.Close)
	now := time.Unix(1000, 0)
	v := NewVerifier(srv.URL, WithCacheTTL(time.Minute, time.Second), WithMaxEntries(2))
	v.now = func() time.Time { return now }
	ctx := context.Background()
	for _, tc := range []struct {
		token, user string
		err         error
	}{
		{"good", "dave", nil},
		{"sub", "erin", nil},
		{"bad", "", ErrInvalidToken},
		{"down", "", ErrVerifierUnavailable},
		{"nouser", "", ErrVerifierUnavailable},
	} {
		user, err := v.Authenticate(ctx, tc.token)
		if user != tc.user || !errors.Is(err, tc.err) {
			t.Errorf("%s = %q, %v; want %q, %v", tc.token, user, err, tc.user, tc.err)
		}
	}
	n := calls.Load()
	if _, err := v.Authenticate(ctx, "bad"); !errors.Is(err, ErrInvalidToken) || calls.Load() != n {
		t.Errorf("a refused token was not cached: %v, %d calls", err, calls.Load()-n)
	}
	now = now.Add(2 * time.Second) // the refusal expires
	if _, err := v.Authenticate(ctx, "bad"); !errors.Is(err, ErrInvalidToken) || calls.Load() != n+1 {
		t.Errorf("an expired refusal was not asked again: %d calls", calls.Load()-n)
	}
	v.mu.Lock()
	size := len(v.cache)
	v.mu.Unlock()
	if size > 2 {
		t.Errorf("cache holds %d entries, bound is 2", size)
	}
}
