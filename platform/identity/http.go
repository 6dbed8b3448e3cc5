package identity

import (
	"context"
	"net/http"
	"strconv"
	"strings"

	"google.golang.org/grpc/metadata"
)

// HTTP header names of a signed identity: the gRPC metadata keys in their
// canonical HTTP form (X-Wick-User, X-Wick-User-Ts, X-Wick-User-Sig,
// X-Wick-Orgs).
var httpHeaders = []string{
	http.CanonicalHeaderKey(UserKey),
	http.CanonicalHeaderKey(TimestampKey),
	http.CanonicalHeaderKey(SignatureKey),
	http.CanonicalHeaderKey(OrgsKey),
}

// HTTPAudience is what an identity carried in HTTP headers is signed for, in
// place of a gRPC method. Every gRPC method name starts with "/", so an
// assertion captured from an HTTP request cannot be replayed as gRPC
// metadata, nor one captured from a gRPC call as HTTP headers.
const HTTPAudience = "http"

// SetHTTP puts into h a signed assertion that the request is made for user
// (and the user's organisations), replacing any identity headers h had. The
// receiver verifies it with FromHTTP and the same key, within DefaultMaxSkew,
// so sign each request as it is sent.
func (k *Key) SetHTTP(h http.Header, user string, orgs []string) {
	DelHTTP(h)
	ts := strconv.FormatInt(k.now().Unix(), 10)
	o := strings.Join(orgs, ",")
	h.Set(UserKey, user)
	h.Set(TimestampKey, ts)
	h.Set(SignatureKey, k.mac(HTTPAudience, user, ts, o))
	if o != "" {
		h.Set(OrgsKey, o)
	}
}

// DelHTTP removes identity headers from h. A proxy that signs for the user
// it authenticated removes what the client sent first.
func DelHTTP(h http.Header) {
	for _, name := range httpHeaders {
		h.Del(name)
	}
}

// FromHTTP verifies the identity r's headers assert and returns r's context
// carrying that user and organisations (see User, Orgs, Require). A request
// that asserts no identity gets its context back unchanged and no error, so
// the caller decides whether a user is required; a forged, stale, malformed
// or repeated assertion is an error.
func (k *Key) FromHTTP(r *http.Request) (context.Context, error) {
	md := metadata.MD{}
	for _, name := range httpHeaders {
		if v := r.Header.Values(name); len(v) > 0 {
			md[strings.ToLower(name)] = v
		}
	}
	user, orgs, err := k.VerifyOrgs(md, HTTPAudience)
	if err != nil {
		return nil, err
	}
	ctx := r.Context()
	if user != "" {
		ctx = WithOrgs(WithUser(ctx, user), orgs)
	}
	return ctx, nil
}
