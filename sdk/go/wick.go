// Package wick is the Go client of Wick's public gRPC API: the agent
// service (wick.agent.v1.AgentService) as the gateway serves it to
// external programs, authenticated with a bearer token.
//
//	c, err := wick.New("wick.example.com:7000", wick.WithToken(token))
//	…
//	for ev, err := range c.Stream(ctx, "default", wick.Prompt("hello")) {
//		…
//	}
//
// The helpers cover agents, threads, runs and workspace files; API gives
// the generated client for everything else. Types are the generated ones
// (aliases such as Agent and Event), and errors are gRPC status errors:
// status.Code(err) tells NotFound from Unauthenticated.
package wick

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"strings"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/credentials/insecure"

	agentv1 "github.com/wick-agent/wick/gen/wick/agent/v1"
)

// APIVersion is the version of the Wick API this client was written for:
// the version of the OpenAPI document and of the TypeScript SDK.
const APIVersion = "1.0.0"

// Defaults of a client.
const (
	// DefaultMaxMsgBytes bounds a message to or from the API, as the
	// gateway does by default.
	DefaultMaxMsgBytes = 16 << 20
	// DefaultRejoinAttempts is how many times in a row a stream re-joins
	// its run after a dropped connection before it gives up.
	DefaultRejoinAttempts = 5
	// DefaultRejoinBackoff is the wait before the first re-join; it
	// doubles with each attempt in a row, up to MaxRejoinBackoff.
	DefaultRejoinBackoff = 200 * time.Millisecond
	// MaxRejoinBackoff caps the wait between re-joins.
	MaxRejoinBackoff = 5 * time.Second
	// cancelTimeout bounds the CancelRun a stream sends when its caller stops.
	cancelTimeout = 5 * time.Second
)

// Aliases of the generated types the helpers take and return: one shape
// per concept on each side of the wire.
type (
	// Agent is an agent's configuration and status.
	Agent = agentv1.Agent
	// BackendConfig says where an agent's file and shell tools run.
	BackendConfig = agentv1.BackendConfig
	// Message is one message of a conversation.
	Message = agentv1.Message
	// Event is one event of a run's stream.
	Event = agentv1.StreamEvent
	// Run describes a run.
	Run = agentv1.Run
	// Result is a finished run, as Invoke returns it.
	Result = agentv1.InvokeResponse
	// Thread is a thread's state: messages, todos and files.
	Thread = agentv1.AgentState
	// ThreadSummary describes a thread without its messages.
	ThreadSummary = agentv1.ThreadSummary
	// FileEntry is one entry of a workspace listing.
	FileEntry = agentv1.FileEntry
	// ToolCall is a model's request to call a tool.
	ToolCall = agentv1.ToolCall
	// Decision decides one tool call awaiting approval.
	Decision = agentv1.ApprovalDecision
	// Task is a background tool call: status, result, attempts.
	Task = agentv1.Task
)

// Client is a connection to Wick's gRPC API. It is safe for concurrent use.
type Client struct {
	conn   *grpc.ClientConn
	api    agentv1.AgentServiceClient
	rejoin rejoinPolicy
}

type rejoinPolicy struct {
	attempts int
	backoff  time.Duration
}

type options struct {
	token          string
	tls            *tls.Config
	plaintext      bool
	plaintextToken bool
	maxMsg         int
	rejoin         rejoinPolicy
	dial           []grpc.DialOption
}

// Option configures New.
type Option func(*options)

// WithToken authenticates every call with a bearer token.
func WithToken(token string) Option { return func(o *options) { o.token = token } }

// WithTLS connects over TLS with cfg (nil: the system's roots). TLS is the
// default.
func WithTLS(cfg *tls.Config) Option {
	return func(o *options) { o.tls, o.plaintext = cfg, false }
}

// WithInsecure connects in plaintext, as to a suite on this machine. A
// token is then sent only to a loopback address, unless
// WithTokenOverPlaintext.
func WithInsecure() Option { return func(o *options) { o.tls, o.plaintext = nil, true } }

// WithTokenOverPlaintext sends the token over a plaintext connection to
// any address: for a network that is trusted to carry it.
func WithTokenOverPlaintext() Option { return func(o *options) { o.plaintextToken = true } }

// WithRejoin sets how a stream recovers from a dropped connection: up to
// attempts re-joins in a row, the first after backoff, each next one after
// twice the wait (at most MaxRejoinBackoff). Zero attempts turns re-joining off.
func WithRejoin(attempts int, backoff time.Duration) Option {
	return func(o *options) { o.rejoin = rejoinPolicy{attempts: attempts, backoff: backoff} }
}

// WithMaxMsgBytes bounds a message to or from the API.
func WithMaxMsgBytes(n int) Option { return func(o *options) { o.maxMsg = n } }

// WithDialOption passes a gRPC dial option through (interceptors, a
// custom dialer, keepalive…).
func WithDialOption(opt grpc.DialOption) Option {
	return func(o *options) { o.dial = append(o.dial, opt) }
}

// ErrTokenOverPlaintext is returned by New for a token that would be sent
// in plaintext to an address other than loopback.
var ErrTokenOverPlaintext = errors.New("wick: the token would be sent in plaintext to an address other than loopback; use TLS (the default), or WithTokenOverPlaintext on a trusted network")

// New returns a client of the API at addr ("host:port", or any gRPC
// target). It does not connect until the first call.
func New(addr string, opts ...Option) (*Client, error) {
	o := options{maxMsg: DefaultMaxMsgBytes, rejoin: rejoinPolicy{attempts: DefaultRejoinAttempts, backoff: DefaultRejoinBackoff}}
	for _, opt := range opts {
		opt(&o)
	}
	if addr == "" {
		return nil, errors.New("wick: empty address")
	}
	if o.rejoin.attempts < 0 || o.rejoin.backoff < 0 {
		return nil, errors.New("wick: rejoin attempts and backoff must not be negative")
	}
	dopts := []grpc.DialOption{
		grpc.WithUserAgent("wick-go/" + APIVersion),
		grpc.WithDefaultCallOptions(grpc.MaxCallRecvMsgSize(o.maxMsg), grpc.MaxCallSendMsgSize(o.maxMsg)),
	}
	if o.plaintext {
		dopts = append(dopts, grpc.WithTransportCredentials(insecure.NewCredentials()))
	} else {
		cfg := o.tls
		if cfg == nil {
			cfg = &tls.Config{MinVersion: tls.VersionTLS12}
		}
		dopts = append(dopts, grpc.WithTransportCredentials(credentials.NewTLS(cfg)))
	}
	if o.token != "" {
		allowPlain := o.plaintextToken || loopback(addr)
		if o.plaintext && !allowPlain {
			return nil, fmt.Errorf("%w (address %s)", ErrTokenOverPlaintext, addr)
		}
		dopts = append(dopts, grpc.WithPerRPCCredentials(bearer{token: o.token, allowPlaintext: allowPlain}))
	}
	dopts = append(dopts, o.dial...)
	conn, err := grpc.NewClient(addr, dopts...)
	if err != nil {
		return nil, fmt.Errorf("wick: %w", err)
	}
	return &Client{conn: conn, api: agentv1.NewAgentServiceClient(conn), rejoin: o.rejoin}, nil
}

// Close closes the connection; calls in flight fail.
func (c *Client) Close() error { return c.conn.Close() }

// API returns the generated client of the agent service, authenticated as
// the Client is, for the calls the helpers do not cover (hooks, backends,
// tools, the terminal…).
func (c *Client) API() agentv1.AgentServiceClient { return c.api }

// loopback reports whether a gRPC target names this machine: a loopback IP,
// "localhost", or a Unix socket.
func loopback(addr string) bool {
	if strings.HasPrefix(addr, "unix:") {
		return true
	}
	addr = strings.TrimPrefix(addr, "dns:///")
	addr = strings.TrimPrefix(addr, "passthrough:///")
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		host = addr
	}
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip := net.ParseIP(strings.Trim(host, "[]"))
	return ip != nil && ip.IsLoopback()
}

// bearer sends the token as "authorization: Bearer <token>" on every call.
// It refuses a plaintext connection unless allowed, as a second line after
// New's check (a custom dialer could still reach elsewhere).
type bearer struct {
	token          string
	allowPlaintext bool
}

// GetRequestMetadata implements credentials.PerRPCCredentials.
func (b bearer) GetRequestMetadata(ctx context.Context, _ ...string) (map[string]string, error) {
	if !b.allowPlaintext {
		ri, _ := credentials.RequestInfoFromContext(ctx)
		if err := credentials.CheckSecurityLevel(ri.AuthInfo, credentials.PrivacyAndIntegrity); err != nil {
			return nil, ErrTokenOverPlaintext
		}
	}
	return map[string]string{"authorization": "Bearer " + b.token}, nil
}

// RequireTransportSecurity implements credentials.PerRPCCredentials. It is
// false so that a token may go to a suite on loopback in plaintext;
// GetRequestMetadata enforces the rule.
func (bearer) RequireTransportSecurity() bool { return false }
