package gateway

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	agentv1 "github.com/wick-agent/wick/gen/wick/agent/v1"
	"github.com/wick-agent/wick/platform/tlsconf"
	"github.com/wick-agent/wick/services/gateway/internal/auth"
	"github.com/wick-agent/wick/services/gateway/internal/grpcedge"
)

// Defaults of the gRPC edge.
const (
	// DefaultGRPCMaxMsgBytes bounds one message to or from a gRPC client,
	// as inside the suite (dial.DefaultMaxMsgSize).
	DefaultGRPCMaxMsgBytes = grpcedge.DefaultMaxMsgBytes
	// DefaultGRPCMaxStreams bounds the calls open at once on one client
	// connection.
	DefaultGRPCMaxStreams = 1000
)

// ErrPlaintext is returned by GRPCEdge for a plaintext edge on an address
// other than loopback that was not explicitly allowed: bearer tokens would
// cross the network in clear.
var ErrPlaintext = errors.New("the gRPC API would take bearer tokens in plaintext on an address other than loopback; configure a TLS certificate and key, or allow plaintext explicitly when a proxy or mesh in front terminates TLS")

// GRPCConfig configures the gRPC edge.
type GRPCConfig struct {
	// CertFile and KeyFile are a PEM certificate (chain) and its key; both
	// or neither. With them the gRPC server speaks only TLS, and takes a
	// rewritten certificate from the next handshake on.
	CertFile, KeyFile string
	// AllowPlaintext serves without TLS on an address other than loopback,
	// for a proxy or service mesh in front that terminates TLS.
	AllowPlaintext bool
	// MaxMsgBytes bounds one message in either direction.
	MaxMsgBytes int
	// MaxConcurrentStreams bounds the calls open at once on one connection.
	MaxConcurrentStreams uint32
}

func (c *GRPCConfig) setDefaults() {
	if c.MaxMsgBytes <= 0 {
		c.MaxMsgBytes = DefaultGRPCMaxMsgBytes
	}
	if c.MaxConcurrentStreams == 0 {
		c.MaxConcurrentStreams = DefaultGRPCMaxStreams
	}
}

// Edge is the gateway's gRPC API: wick.agent.v1.AgentService served to
// external clients, authenticated with the same bearer tokens as REST
// (per-call "authorization: Bearer <token>" metadata) and forwarded to the
// agent service as the token's user. Messages are forwarded undecoded.
type Edge struct {
	fwd  *grpcedge.Forwarder
	opts []grpc.ServerOption
	tls  bool
}

// GRPCEdge prepares the gRPC edge for a server listening on addr (the
// listener's address, so that "localhost" and ":port" are judged by what
// was bound). Plaintext is refused on an address other than loopback
// unless cfg.GRPC.AllowPlaintext; without tokens the edge serves the
// single LocalUser only on loopback, as a suite without authentication
// must not be reachable from the network as someone.
func (g *Gateway) GRPCEdge(addr net.Addr) (*Edge, error) {
	cfg := g.cfg.GRPC
	local := isLoopback(addr)
	e := &Edge{}
	switch {
	case cfg.CertFile != "" || cfg.KeyFile != "":
		if cfg.CertFile == "" || cfg.KeyFile == "" {
			return nil, errors.New("gateway: gRPC TLS needs both a certificate file and a key file")
		}
		// TLS 1.2 still, unlike between services: clients outside the
		// suite may be older.
		src, err := tlsconf.Load(tlsconf.Files{CertFile: cfg.CertFile, KeyFile: cfg.KeyFile},
			tlsconf.WithMinVersion(tls.VersionTLS12), tlsconf.WithLogger(g.log))
		if err != nil {
			return nil, fmt.Errorf("gateway: gRPC TLS: %w", err)
		}
		e.tls = true
		e.opts = append(e.opts, grpc.Creds(src.ServerCredentials()))
	case !local && !cfg.AllowPlaintext:
		return nil, fmt.Errorf("gateway: listening on %s: %w", addr, ErrPlaintext)
	}
	if g.anonymous && !local {
		g.log.Warn("gRPC API: no tokens configured and the address is not loopback; every AgentService call is refused", "addr", addr.String())
	}
	e.opts = append(e.opts,
		grpc.ForceServerCodecV2(grpcedge.NewCodec()),
		grpc.MaxRecvMsgSize(cfg.MaxMsgBytes),
		grpc.MaxSendMsgSize(cfg.MaxMsgBytes),
		grpc.MaxConcurrentStreams(cfg.MaxConcurrentStreams),
	)
	e.fwd = grpcedge.New(g.conn, &agentv1.AgentService_ServiceDesc, g.grpcUser(local), grpcedge.WithMaxMsgBytes(cfg.MaxMsgBytes),
		grpcedge.WithOrgs(func(user string) []string { return g.cfg.Orgs[user] }))
	return e, nil
}

// ServerOptions are the options the edge's gRPC server must be built with:
// the pass-through codec, the message and stream bounds, and TLS.
func (e *Edge) ServerOptions() []grpc.ServerOption { return e.opts }

// Register serves the agent service on s, a server built with ServerOptions.
func (e *Edge) Register(s grpc.ServiceRegistrar) { e.fwd.Register(s) }

// TLS reports whether the edge serves TLS.
func (e *Edge) TLS() bool { return e.tls }

// isLoopback reports whether a listener at addr is reachable only from this
// machine: a loopback IP or a Unix socket.
func isLoopback(addr net.Addr) bool {
	switch a := addr.(type) {
	case *net.TCPAddr:
		return a.IP.IsLoopback()
	case *net.UnixAddr:
		return true
	}
	return false
}

var errNoGRPCToken = errors.New("missing bearer token: send the metadata authorization: Bearer <token>")

// grpcUser authenticates a gRPC call as REST authenticates a request: the
// same tokens and verifier, LocalUser when none are configured (on
// loopback only). Browsers cannot make gRPC calls, so the REST guards
// against cross-site pages (CORS, DNS rebinding) have no counterpart.
func (g *Gateway) grpcUser(local bool) grpcedge.Authenticate {
	return func(ctx context.Context, md metadata.MD) (string, error) {
		if g.auth == nil {
			if local {
				return LocalUser, nil
			}
			return "", status.Error(codes.Unauthenticated, "no tokens are configured, so the gRPC API serves the single local user only on a loopback address; configure tokens (WICK_TOKENS)")
		}
		vals := md.Get("authorization")
		if len(vals) != 1 {
			return "", status.Error(codes.Unauthenticated, errNoGRPCToken.Error())
		}
		tok, ok := parseBearer(vals[0])
		if !ok {
			return "", status.Error(codes.Unauthenticated, errNoGRPCToken.Error())
		}
		user, err := g.auth.Authenticate(ctx, tok)
		switch {
		case errors.Is(err, auth.ErrVerifierUnavailable):
			g.log.WarnContext(ctx, "token verifier unavailable", "error", err)
			return "", status.Error(codes.Unavailable, "the token verifier is unavailable; try again")
		case err != nil:
			return "", status.Error(codes.Unauthenticated, err.Error())
		}
		return user, nil
	}
}
