package server

import (
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"strings"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
)

// TokenAuth returns interceptors that admit only calls whose "authorization"
// metadata is "Bearer <token>". The daemon needs them on TCP, where anyone who
// can reach the port could otherwise run commands; on the Unix socket the
// socket's directory is the access control.
func TokenAuth(token string) (grpc.UnaryServerInterceptor, grpc.StreamServerInterceptor) {
	want := sha256.Sum256([]byte(token))
	check := func(ctx context.Context) error {
		md, _ := metadata.FromIncomingContext(ctx)
		for _, v := range md.Get("authorization") {
			got, ok := strings.CutPrefix(v, "Bearer ")
			if !ok {
				continue
			}
			// Comparing digests keeps the comparison constant-time in the
			// token's length too.
			sum := sha256.Sum256([]byte(got))
			if subtle.ConstantTimeCompare(sum[:], want[:]) == 1 {
				return nil
			}
		}
		return status.Error(codes.Unauthenticated, "missing or wrong daemon token")
	}
	unary := func(ctx context.Context, req any, _ *grpc.UnaryServerInfo, h grpc.UnaryHandler) (any, error) {
		if err := check(ctx); err != nil {
			return nil, err
		}
		return h(ctx, req)
	}
	stream := func(srv any, ss grpc.ServerStream, _ *grpc.StreamServerInfo, h grpc.StreamHandler) error {
		if err := check(ss.Context()); err != nil {
			return err
		}
		return h(srv, ss)
	}
	return unary, stream
}
