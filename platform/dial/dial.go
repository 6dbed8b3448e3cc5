// Package dial opens gRPC client connections with the suite's plumbing:
// OpenTelemetry stats handler, identity signing, and round-robin balancing
// across every address a target resolves to (a Kubernetes headless service),
// and TLS when the service has a certificate.
package dial

import (
	"fmt"
	"net"
	"strconv"
	"strings"

	"github.com/fullstorydev/grpchan"
	"go.opentelemetry.io/contrib/instrumentation/google.golang.org/grpc/otelgrpc"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/resolver"
	"google.golang.org/grpc/resolver/manual"

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

// TargetHelp describes the targets New accepts, for flags' help text.
const TargetHelp = "host:port (every address the name resolves to), dns:///name:port (a headless Service), a comma-separated list host:port,host:port, or unix:///path; calls are spread round robin"

// listScheme names the resolver of a comma-separated list. Each connection
// has its own (grpc.WithResolvers), so nothing is registered globally.
const listScheme = "wick-list"

// New returns a client connection to target: "host:port" (resolved with DNS,
// every address used), "host:port,host:port" (each address used as given),
// "unix:///path", or any gRPC target URI such as "dns:///name:port". Calls
// are balanced round robin over every address. Without WithTLS the
// connection is plaintext: the cluster network or a service mesh must then
// carry TLS.
func New(target string, opts ...Option) (*grpc.ClientConn, error) {
	var o options
	for _, opt := range opts {
		opt(&o)
	}
	if target == "" {
		return nil, fmt.Errorf("dial: empty target")
	}
	var list *manual.Resolver
	switch {
	case strings.Contains(target, "://") || strings.HasPrefix(target, "unix:"):
	case strings.Contains(target, ","):
		addrs, err := parseList(target)
		if err != nil {
			return nil, err
		}
		list = manual.NewBuilderWithScheme(listScheme)
		list.InitialState(resolver.State{Addresses: addrs})
		target = listScheme + ":///" + target
	default:
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
	if list != nil {
		dopts = append(dopts, grpc.WithResolvers(list))
	}
	dopts = append(dopts, o.extra...)
	conn, err := grpc.NewClient(target, dopts...)
	if err != nil {
		return nil, fmt.Errorf("dial %s: %w", target, err)
	}
	return conn, nil
}

// parseList turns a comma-separated list into the resolver's addresses.
func parseList(target string) ([]resolver.Address, error) {
	elems, err := SplitList(target)
	if err != nil {
		return nil, err
	}
	addrs := make([]resolver.Address, 0, len(elems))
	for _, a := range elems {
		host, _, _ := net.SplitHostPort(a) // SplitList has checked it
		// ServerName keeps TLS verifying each replica by its own host,
		// not by the whole list the connection's authority would be.
		addrs = append(addrs, resolver.Address{Addr: a, ServerName: host})
	}
	return addrs, nil
}

// SplitList checks every element of a comma-separated list of host:port
// addresses and returns them trimmed, so that a typo fails at start rather
// than as calls that never reach a replica.
func SplitList(target string) ([]string, error) {
	var out []string
	for i, a := range strings.Split(target, ",") {
		a = strings.TrimSpace(a)
		if a == "" {
			return nil, fmt.Errorf("dial %q: element %d is empty", target, i+1)
		}
		host, port, err := net.SplitHostPort(a)
		if err != nil {
			return nil, fmt.Errorf("dial %q: element %d: %w (want host:port)", target, i+1, err)
		}
		if host == "" {
			return nil, fmt.Errorf("dial %q: element %d (%q) has no host", target, i+1, a)
		}
		if n, err := strconv.Atoi(port); err != nil || n < 1 || n > 65535 {
			return nil, fmt.Errorf("dial %q: element %d (%q): port %q is not a number from 1 to 65535", target, i+1, a, port)
		}
		out = append(out, a)
	}
	return out, nil
}

// InProcess returns a client of the in-process channel ch
// (server.InProcess) that signs the context's user as New's connections do
// with WithIdentity; WithTLS and WithDialOption have no meaning there.
func InProcess(ch grpc.ClientConnInterface, opts ...Option) grpc.ClientConnInterface {
	var o options
	for _, opt := range opts {
		opt(&o)
	}
	if o.key == nil {
		return ch
	}
	return grpchan.InterceptClientConn(ch, o.key.UnaryClientInterceptor(), o.key.StreamClientInterceptor())
}
