package identity

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc/metadata"
)

func TestHTTPIdentity(t *testing.T) {
	t.Parallel()
	key := RandomKey()
	now := time.Unix(1_800_000_000, 0)
	key.now = func() time.Time { return now }
	signed := func(user string, orgs ...string) http.Header {
		h := http.Header{}
		key.SetHTTP(h, user, orgs)
		return h
	}
	edit := func(h http.Header, f func(http.Header)) http.Header {
		h = h.Clone()
		f(h)
		return h
	}
	// A gRPC assertion copied into HTTP headers is refused: it was made for
	// a method, not for HTTP.
	fromGRPC := http.Header{}
	for k, v := range outgoingMD(t, key.Sign(context.Background(), getThread, "alice")) {
		fromGRPC[http.CanonicalHeaderKey(k)] = v
	}
	tests := []struct {
		name     string
		header   http.Header
		key      *Key
		at       time.Time
		wantUser string
		wantOrgs string
		wantErr  string
	}{
		{name: "valid", header: signed("alice"), wantUser: "alice"},
		{name: "valid with organisations", header: signed("alice", "acme", "research"), wantUser: "alice", wantOrgs: "acme,research"},
		{name: "no identity", header: http.Header{"Authorization": {"Bearer x"}}},
		{name: "other key", header: signed("alice"), key: RandomKey(), wantErr: "does not match"},
		{name: "forged user", header: edit(signed("alice"), func(h http.Header) { h.Set("X-Wick-User", "mallory") }), wantErr: "does not match"},
		{name: "widened organisations", header: edit(signed("alice", "acme"), func(h http.Header) { h.Set("X-Wick-Orgs", "acme,finance") }), wantErr: "does not match"},
		{name: "duplicated user", header: edit(signed("alice"), func(h http.Header) { h.Add("X-Wick-User", "bob") }), wantErr: "exactly once"},
		{name: "missing signature", header: edit(signed("alice"), func(h http.Header) { h.Del("X-Wick-User-Sig") }), wantErr: "exactly once"},
		{name: "stale", header: signed("alice"), at: now.Add(DefaultMaxSkew + time.Second), wantErr: "expired"},
		{name: "replayed from gRPC", header: fromGRPC, wantErr: "another method"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			k := key
			if tt.key != nil {
				k = tt.key
			}
			if !tt.at.IsZero() {
				k = &Key{secret: key.secret, maxSkew: key.maxSkew, now: func() time.Time { return tt.at }}
			}
			r := httptest.NewRequest(http.MethodPost, "/v1/messages", nil)
			r.Header = tt.header
			ctx, err := k.FromHTTP(r)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("err = %v, want containing %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			user, _ := User(ctx)
			if user != tt.wantUser || strings.Join(Orgs(ctx), ",") != tt.wantOrgs {
				t.Fatalf("FromHTTP = %q %v, want %q %q", user, Orgs(ctx), tt.wantUser, tt.wantOrgs)
			}
		})
	}
}

// TestHTTPIdentityNotReplayableAsGRPC: headers signed for HTTP do not
// verify as the metadata of any gRPC call.
func TestHTTPIdentityNotReplayableAsGRPC(t *testing.T) {
	t.Parallel()
	key := RandomKey()
	h := http.Header{}
	key.SetHTTP(h, "alice", nil)
	md := metadata.MD{}
	for k, v := range h {
		md[strings.ToLower(k)] = v
	}
	if _, err := key.Verify(md, getThread); err == nil {
		t.Fatal("an HTTP assertion verified as gRPC metadata")
	}
}

// TestSetHTTPReplaces: a proxy that signs for its user overwrites whatever
// identity its client sent.
func TestSetHTTPReplaces(t *testing.T) {
	t.Parallel()
	key := RandomKey()
	h := http.Header{"X-Wick-User": {"mallory"}, "X-Wick-Orgs": {"finance"}}
	key.SetHTTP(h, "alice", nil)
	if got := h.Values("X-Wick-User"); len(got) != 1 || got[0] != "alice" || h.Get("X-Wick-Orgs") != "" {
		t.Fatalf("headers after SetHTTP: %v", h)
	}
	DelHTTP(h)
	for _, name := range []string{"X-Wick-User", "X-Wick-User-Ts", "X-Wick-User-Sig", "X-Wick-Orgs"} {
		if h.Get(name) != "" {
			t.Errorf("DelHTTP left %s", name)
		}
	}
}
