package identity

import (
	"context"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc/metadata"
)

const getThread = "/wick.agent.v1.AgentService/GetThread"

func outgoingMD(t *testing.T, ctx context.Context) metadata.MD {
	t.Helper()
	md, ok := metadata.FromOutgoingContext(ctx)
	if !ok {
		t.Fatal("no outgoing metadata")
	}
	return md
}

func TestSignVerify(t *testing.T) {
	t.Parallel()
	key := RandomKey()
	other := RandomKey()
	now := time.Unix(1_800_000_000, 0)
	key.now = func() time.Time { return now }

	signed := outgoingMD(t, key.Sign(context.Background(), getThread, "alice"))
	tests := []struct {
		name    string
		md      metadata.MD
		method  string // default getThread, the method it was signed for
		key     *Key
		want    string
		wantErr string
	}{
		{name: "valid", md: signed, key: key, want: "alice"},
		{name: "no identity", md: metadata.MD{}, key: key, want: ""},
		{name: "other key", md: signed, key: other, wantErr: "does not match"},
		// A captured read cannot be replayed as a delete.
		{name: "other method", md: signed, method: "/wick.agent.v1.AgentService/DeleteThread", key: key, wantErr: "another method"},
		{name: "forged user", md: func() metadata.MD {
			m := signed.Copy()
			m.Set(UserKey, "mallory")
			return m
		}(), key: key, wantErr: "does not match"},
		{name: "missing signature", md: metadata.Pairs(UserKey, "alice", TimestampKey, "1"), key: key, wantErr: "exactly once"},
		{name: "duplicated user", md: func() metadata.MD {
			m := signed.Copy()
			m.Append(UserKey, "bob")
			return m
		}(), key: key, wantErr: "exactly once"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			method := tt.method
			if method == "" {
				method = getThread
			}
			got, err := tt.key.Verify(tt.md, method)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("err = %v, want containing %q", err, tt.wantErr)
				}
				return
			}
			if err != nil || got != tt.want {
				t.Fatalf("Verify = %q, %v; want %q", got, err, tt.want)
			}
		})
	}
}

func TestVerifyExpired(t *testing.T) {
	t.Parallel()
	key := RandomKey()
	signedAt := time.Unix(1_800_000_000, 0)
	key.now = func() time.Time { return signedAt }
	md := outgoingMD(t, key.Sign(context.Background(), getThread, "alice"))
	key.now = func() time.Time { return signedAt.Add(DefaultMaxSkew + time.Second) }
	if _, err := key.Verify(md, getThread); err == nil || !strings.Contains(err.Error(), "expired") {
		t.Fatalf("err = %v, want expired", err)
	}
}

func TestValidUser(t *testing.T) {
	t.Parallel()
	for _, u := range []string{"", "a:b", "bad\nname", strings.Repeat("x", MaxUserLength+1)} {
		if ValidUser(u) == nil {
			t.Errorf("ValidUser(%q) = nil, want error", u)
		}
	}
	for _, u := range []string{"alice", "bob@example.com", "local"} {
		if err := ValidUser(u); err != nil {
			t.Errorf("ValidUser(%q) = %v", u, err)
		}
	}
}

func TestParseKey(t *testing.T) {
	t.Parallel()
	k := RandomKey()
	k2, err := ParseKey(k.String())
	if err != nil {
		t.Fatal(err)
	}
	md := outgoingMD(t, k.Sign(context.Background(), getThread, "alice"))
	if u, err := k2.Verify(md, getThread); err != nil || u != "alice" {
		t.Fatalf("round trip: %q, %v", u, err)
	}
	for _, bad := range []string{"zz", "abcd"} {
		if _, err := ParseKey(bad); err == nil {
			t.Errorf("ParseKey(%q) = nil error", bad)
		}
	}
}

// TestOrganisations: organisations travel signed with the user; they cannot
// be added, widened or stripped without the key, and a caller that sends
// none (as before organisations existed) has none.
func TestOrganisations(t *testing.T) {
	t.Parallel()
	key := RandomKey()
	withOrgs := outgoingMD(t, key.SignOrgs(context.Background(), getThread, "alice", []string{"acme", "research"}))
	plain := outgoingMD(t, key.Sign(context.Background(), getThread, "alice"))
	tests := []struct {
		name    string
		md      metadata.MD
		want    []string
		wantErr string
	}{
		{name: "signed organisations", md: withOrgs, want: []string{"acme", "research"}},
		{name: "none, the old way", md: plain},
		{name: "added to a plain signature", md: func() metadata.MD {
			m := plain.Copy()
			m.Set(OrgsKey, "acme")
			return m
		}(), wantErr: "does not match"},
		{name: "widened", md: func() metadata.MD {
			m := withOrgs.Copy()
			m.Set(OrgsKey, "acme,research,finance")
			return m
		}(), wantErr: "does not match"},
		{name: "stripped", md: func() metadata.MD {
			m := withOrgs.Copy()
			delete(m, OrgsKey)
			return m
		}(), wantErr: "does not match"},
		{name: "without a user", md: metadata.Pairs(OrgsKey, "acme"), wantErr: "without a signed user"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			user, orgs, err := key.VerifyOrgs(tt.md, getThread)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("err = %v, want containing %q", err, tt.wantErr)
				}
				return
			}
			if err != nil || user != "alice" || strings.Join(orgs, ",") != strings.Join(tt.want, ",") {
				t.Fatalf("VerifyOrgs = %q %v, %v; want alice %v", user, orgs, err, tt.want)
			}
		})
	}
	// The interceptors carry them: ctx → signed metadata → ctx.
	ctx := WithOrgs(WithUser(context.Background(), "alice"), []string{"acme"})
	md := outgoingMD(t, key.outgoing(ctx, getThread))
	in, err := key.incoming(metadata.NewIncomingContext(context.Background(), md), getThread)
	if err != nil || strings.Join(Orgs(in), ",") != "acme" {
		t.Fatalf("round trip through the interceptors: %v %v", Orgs(in), err)
	}
}
