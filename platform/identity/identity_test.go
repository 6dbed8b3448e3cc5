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
