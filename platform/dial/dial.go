// Package dial opens gRPC client connections with the suite's plumbing:
// OpenTelemetry stats handler, identity signing, and round-robin balancing
// across every address a target resolves to (a Kubernetes headless service),
// and TLS when the service has a certificate.
package dial

import (
	"fmt"
	"strings"

	"go.opentelemetry.io/contrib/instrumentation/google.golang.org/grpc/otelgrpc"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"

	"github.com/wick-agent/wick/platform/identity"
	"github.com/wick-agent/wick/platform/tlsconf"
)

// DefaultMaxMsgSize is the largest message a client sends or receives.
const DefaultMaxMsgSize = 16 << 20

const serviceConfig = `{"loadBalancingConfig":[{"round_robin":{}}]}`

type options struct {
	key   *identity.Key
	tls   *tlsconf.Source
	extra []grpc.DialOption
}

// Option configures New.
type Option func(*options)

// WithIdentity signs the context's user onto every call with key.
func WithIdentity(key *identity.Key) Option { return func(o *options) { o.key = key } }

// WithTLS speaks TLS with src's certificate, verifying the server against
// its CA; nil keeps plaintext.
func WithTLS(src *tlsconf.Source) Option { return func(o *options) { o.tls = src } }

// WithDialOption passes a raw grpc.DialOption through.
func WithDialOption(opt grpc.DialOption) Option {
	return func(o *options) { o.extra = append(o.extra, opt) }
}

// New returns a client connection to target: "host:port" (resolved with DNS,
// every address used), "unix:///path", or any gRPC target URI. Without
// WithTLS the connection is plaintext: the cluster network or a service
// mesh must then carry TLS.
func New(target string, opts ...Option) (*grpc.ClientConn, error) {
	var o options
	for _, opt := range opts {
		opt(&o)
	}
	if target == "" {
		return nil, fmt.Errorf("dial: empty target")
	}
	if !strings.Contains(target, "://") && !strings.HasPrefix(target, "unix:") {
		target = "dns:///" + target
	}
	creds := insecure.NewCredentials()
	if o.tls != nil {
		creds = o.tls.ClientCredentials()
	}
	dopts := []grpc.DialOption{
		grpc.WithTransportCredentials(creds),
		grpc.WithStatsHandler(otelgrpc.NewClientHandler()),
		grpc.WithDefaultServiceConfig(serviceConfig),
		grpc.WithDefaultCallOptions(grpc.MaxCallRecvMsgSize(DefaultMaxMsgSize), grpc.MaxCallSendMsgSize(DefaultMaxMsgSize)),
	}
	if o.key != nil {
		dopts = append(dopts,
			grpc.WithChainUnaryInterceptor(o.key.UnaryClientInterceptor()),
			grpc.WithChainStreamInterceptor(o.key.StreamClientInterceptor()))
	}
	dopts = append(dopts, o.extra...)
	conn, err := grpc.NewClient(target, dopts...)
	if err != nil {
		return nil, fmt.Errorf("dial %s: %w", target, err)
	}
	return conn, nil
}
