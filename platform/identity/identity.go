// Package identity carries the caller's user from the gateway, which
// authenticates it, to every service behind it. The user travels in gRPC
// metadata with an HMAC signature made with a key that only the suite's own
// processes hold, so a client that reaches a service directly cannot claim to
// be someone else. Over plain HTTP (the LLM gateway's model APIs) the same
// assertion travels in X-Wick-User, X-Wick-User-Ts, X-Wick-User-Sig and
// X-Wick-Orgs headers (Key.SetHTTP, Key.FromHTTP).
package identity

import (
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
)

// Metadata keys of a signed identity. OrgsKey carries the user's
// organisations (comma-separated); when present it is part of the signature,
// so it can be neither added, changed nor removed by anyone without the key.
const (
	UserKey      = "x-wick-user"
	TimestampKey = "x-wick-user-ts"
	SignatureKey = "x-wick-user-sig"
	OrgsKey      = "x-wick-orgs"
)

// DefaultMaxSkew is how old (or how far in the future) a signature may be
// before it is refused: the window in which a captured assertion could be
// replayed. Each call is signed as it starts and a stream is verified once,
// when it opens, so long streams are not cut by it; only clocks more than
// this far apart across the suite's hosts are.
const DefaultMaxSkew = 30 * time.Second

// MaxUserLength bounds a user name.
const MaxUserLength = 256

// ErrNoUser is returned by Require when the context carries no user.
var ErrNoUser = errors.New("no authenticated user")

type userKey struct{}

type orgsKey struct{}

// WithOrgs returns a context that carries the user's organisations.
func WithOrgs(ctx context.Context, orgs []string) context.Context {
	if len(orgs) == 0 {
		return ctx
	}
	return context.WithValue(ctx, orgsKey{}, slices.Clone(orgs))
}

// Orgs returns the organisations ctx carries (none when the caller's
// identity names none).
func Orgs(ctx context.Context) []string {
	o, _ := ctx.Value(orgsKey{}).([]string)
	return o
}

// ValidOrg reports whether an organisation name is acceptable: letters,
// digits, '-' and '_', at most 64 bytes.
func ValidOrg(o string) error {
	if o == "" || len(o) > 64 {
		return fmt.Errorf("organisation %q: 1..64 bytes", o)
	}
	for _, r := range o {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '-' || r == '_') {
			return fmt.Errorf("organisation %q: use letters, digits, '-' or '_'", o)
		}
	}
	return nil
}

// WithUser returns a context that carries user.
func WithUser(ctx context.Context, user string) context.Context {
	return context.WithValue(ctx, userKey{}, user)
}

// User returns the user ctx carries.
func User(ctx context.Context) (string, bool) {
	u, ok := ctx.Value(userKey{}).(string)
	return u, ok && u != ""
}

// Require returns the user ctx carries, or a gRPC Unauthenticated error.
func Require(ctx context.Context) (string, error) {
	u, ok := User(ctx)
	if !ok {
		return "", status.Error(codes.Unauthenticated, ErrNoUser.Error())
	}
	return u, nil
}

// ValidUser reports whether a user name is acceptable: non-empty, bounded, and
// free of control characters and of ':' (used in keys as a separator).
func ValidUser(u string) error {
	if u == "" {
		return errors.New("user is empty")
	}
	if len(u) > MaxUserLength {
		return fmt.Errorf("user is longer than %d bytes", MaxUserLength)
	}
	for _, r := range u {
		if r < 0x20 || r == 0x7f || r == ':' {
			return fmt.Errorf("user %q has a forbidden character %q", u, r)
		}
	}
	return nil
}

// Key signs and verifies identities. The zero Key is unusable.
type Key struct {
	secret  []byte
	maxSkew time.Duration
	now     func() time.Time
}

// NewKey returns a Key for a shared secret of at least 16 bytes.
func NewKey(secret []byte) (*Key, error) {
	if len(secret) < 16 {
		return nil, errors.New("identity key must be at least 16 bytes")
	}
	return &Key{secret: append([]byte(nil), secret...), maxSkew: DefaultMaxSkew, now: time.Now}, nil
}

// RandomKey returns a Key with a fresh random secret, for suites that run in one process.
func RandomKey() *Key {
	b := make([]byte, 32)
	if _, err := rand.Read(b); err != nil {
		panic(fmt.Sprintf("identity: crypto/rand failed: %v", err))
	}
	k, _ := NewKey(b)
	return k
}

// ParseKey decodes a hex secret, as kept in WICK_IDENTITY_KEY.
func ParseKey(s string) (*Key, error) {
	b, err := hex.DecodeString(strings.TrimSpace(s))
	if err != nil {
		return nil, fmt.Errorf("identity key is not hex: %w", err)
	}
	return NewKey(b)
}

// String returns the secret in hex, the form ParseKey reads.
func (k *Key) String() string { return hex.EncodeToString(k.secret) }

// mac binds the user to the time and to the full gRPC method, so that a
// captured assertion cannot be replayed on another method (a read turned
// into a delete) nor after DefaultMaxSkew.
// Organisations, when there are any, are bound too: without them the
// signature is the one callers made before organisations existed.
func (k *Key) mac(method, user, ts, orgs string) string {
	m := hmac.New(sha256.New, k.secret)
	m.Write([]byte(method))
	m.Write([]byte{0})
	m.Write([]byte(user))
	m.Write([]byte{0})
	m.Write([]byte(ts))
	if orgs != "" {
		m.Write([]byte{0})
		m.Write([]byte("orgs"))
		m.Write([]byte{0})
		m.Write([]byte(orgs))
	}
	return hex.EncodeToString(m.Sum(nil))
}

// Sign returns ctx with outgoing metadata that asserts user for a call of
// method (the full name, "/wick.agent.v1.AgentService/Stream").
func (k *Key) Sign(ctx context.Context, method, user string) context.Context {
	return k.SignOrgs(ctx, method, user, nil)
}

// SignOrgs is Sign for a user who belongs to organisations.
func (k *Key) SignOrgs(ctx context.Context, method, user string, orgs []string) context.Context {
	ts := strconv.FormatInt(k.now().Unix(), 10)
	o := strings.Join(orgs, ",")
	kv := []string{UserKey, user, TimestampKey, ts, SignatureKey, k.mac(method, user, ts, o)}
	if o != "" {
		kv = append(kv, OrgsKey, o)
	}
	return metadata.AppendToOutgoingContext(ctx, kv...)
}

// Verify returns the user asserted by incoming metadata for a call of
// method. It returns "" and no error when md asserts no user, and an error
// when the assertion is forged, made for another method, stale or malformed.
func (k *Key) Verify(md metadata.MD, method string) (string, error) {
	user, _, err := k.VerifyOrgs(md, method)
	return user, err
}

// VerifyOrgs is Verify that also returns the organisations the signature
// asserts (none for a caller that sends none).
func (k *Key) VerifyOrgs(md metadata.MD, method string) (string, []string, error) {
	users := md.Get(UserKey)
	if len(users) == 0 {
		if len(md.Get(OrgsKey)) > 0 {
			return "", nil, errors.New("organisations without a signed user")
		}
		return "", nil, nil
	}
	tss, sigs, orgss := md.Get(TimestampKey), md.Get(SignatureKey), md.Get(OrgsKey)
	if len(users) != 1 || len(tss) != 1 || len(sigs) != 1 || len(orgss) > 1 {
		return "", nil, errors.New("identity metadata must appear exactly once")
	}
	user, ts, sig, orgs := users[0], tss[0], sigs[0], ""
	if len(orgss) == 1 {
		orgs = orgss[0]
	}
	if !hmac.Equal([]byte(sig), []byte(k.mac(method, user, ts, orgs))) {
		return "", nil, errors.New("identity signature does not match (forged, or made for another method)")
	}
	sec, err := strconv.ParseInt(ts, 10, 64)
	if err != nil {
		return "", nil, errors.New("identity timestamp is not a number")
	}
	if d := k.now().Sub(time.Unix(sec, 0)); d > k.maxSkew || d < -k.maxSkew {
		return "", nil, errors.New("identity signature has expired")
	}
	if err := ValidUser(user); err != nil {
		return "", nil, err
	}
	var list []string
	if orgs != "" {
		list = strings.Split(orgs, ",")
		for _, o := range list {
			if err := ValidOrg(o); err != nil {
				return "", nil, err
			}
		}
	}
	return user, list, nil
}

func (k *Key) incoming(ctx context.Context, method string) (context.Context, error) {
	md, _ := metadata.FromIncomingContext(ctx)
	user, orgs, err := k.VerifyOrgs(md, method)
	if err != nil {
		return nil, status.Error(codes.Unauthenticated, err.Error())
	}
	if user != "" {
		ctx = WithOrgs(WithUser(ctx, user), orgs)
	}
	return ctx, nil
}

// UnaryServerInterceptor puts a verified user into each call's context and
// refuses forged assertions.
func (k *Key) UnaryServerInterceptor() grpc.UnaryServerInterceptor {
	return func(ctx context.Context, req any, info *grpc.UnaryServerInfo, h grpc.UnaryHandler) (any, error) {
		ctx, err := k.incoming(ctx, info.FullMethod)
		if err != nil {
			return nil, err
		}
		return h(ctx, req)
	}
}

// StreamServerInterceptor is UnaryServerInterceptor for streams.
func (k *Key) StreamServerInterceptor() grpc.StreamServerInterceptor {
	return func(srv any, ss grpc.ServerStream, info *grpc.StreamServerInfo, h grpc.StreamHandler) error {
		ctx, err := k.incoming(ss.Context(), info.FullMethod)
		if err != nil {
			return err
		}
		return h(srv, &contextStream{ServerStream: ss, ctx: ctx})
	}
}

type contextStream struct {
	grpc.ServerStream
	ctx context.Context
}

func (s *contextStream) Context() context.Context { return s.ctx }

func (k *Key) outgoing(ctx context.Context, method string) context.Context {
	if md, ok := metadata.FromOutgoingContext(ctx); ok && len(md.Get(UserKey)) > 0 {
		return ctx
	}
	if user, ok := User(ctx); ok {
		return k.SignOrgs(ctx, method, user, Orgs(ctx))
	}
	return ctx
}

// UnaryClientInterceptor signs the context's user onto every outgoing call, so
// a service calling another acts for the same user.
func (k *Key) UnaryClientInterceptor() grpc.UnaryClientInterceptor {
	return func(ctx context.Context, method string, req, reply any, cc *grpc.ClientConn, invoker grpc.UnaryInvoker, opts ...grpc.CallOption) error {
		return invoker(k.outgoing(ctx, method), method, req, reply, cc, opts...)
	}
}

// StreamClientInterceptor is UnaryClientInterceptor for streams.
func (k *Key) StreamClientInterceptor() grpc.StreamClientInterceptor {
	return func(ctx context.Context, desc *grpc.StreamDesc, cc *grpc.ClientConn, method string, streamer grpc.Streamer, opts ...grpc.CallOption) (grpc.ClientStream, error) {
		return streamer(k.outgoing(ctx, method), desc, cc, method, opts...)
	}
}
