// Package mcpserver serves the caller's agents as the tools of a Model
// Context Protocol server over the streamable HTTP transport: listing the
// tools lists the agents the caller may run, and calling one runs that
// agent with a message through the agent service's Stream RPC, reporting
// the run's progress as MCP progress notifications.
//
// Sessions are stateful (the SDK's Mcp-Session-Id), so that a client's
// notifications/cancelled reaches the call it cancels. Each session is bound
// to the user who opened it: a request for it with another user's token is
// refused, and every call acts as the user its own request authenticated.
package mcpserver

import (
	"context"
	"log/slog"
	"net/http"
	"time"

	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"

	agentv1 "github.com/wick-agent/wick/gen/wick/agent/v1"
	"github.com/wick-agent/wick/platform/identity"
	"github.com/wick-agent/wick/services/gateway/internal/httperr"
)

// Defaults of the options.
const (
	// DefaultProgressInterval is the least time between two progress
	// notifications of one call: a model streams tokens far faster than a
	// client can usefully show them.
	DefaultProgressInterval = 250 * time.Millisecond
	// DefaultSessionTimeout closes a session no request used for this long,
	// so that clients that never send DELETE do not hold sessions forever.
	DefaultSessionTimeout = 30 * time.Minute
	// DefaultCancelTimeout bounds the CancelRun sent when a call is cancelled.
	DefaultCancelTimeout = 10 * time.Second
)

// Agents is the part of the agent service the server uses.
type Agents interface {
	ListAgents(ctx context.Context, in *agentv1.ListAgentsRequest, opts ...grpc.CallOption) (*agentv1.ListAgentsResponse, error)
	Stream(ctx context.Context, in *agentv1.StreamRequest, opts ...grpc.CallOption) (grpc.ServerStreamingClient[agentv1.StreamResponse], error)
	CancelRun(ctx context.Context, in *agentv1.CancelRunRequest, opts ...grpc.CallOption) (*agentv1.CancelRunResponse, error)
}

// Option configures New.
type Option func(*options)

type options struct {
	logger           *slog.Logger
	progressInterval time.Duration
	sessionTimeout   time.Duration
	cancelTimeout    time.Duration
	version          string
}

// WithLogger sets the logger.
func WithLogger(l *slog.Logger) Option { return func(o *options) { o.logger = l } }

// WithProgressInterval sets the least time between two progress
// notifications of a call (DefaultProgressInterval); the latest activity is
// sent when it has passed.
func WithProgressInterval(d time.Duration) Option {
	return func(o *options) { o.progressInterval = d }
}

// WithSessionTimeout sets how long an unused session lives (DefaultSessionTimeout).
func WithSessionTimeout(d time.Duration) Option { return func(o *options) { o.sessionTimeout = d } }

// WithVersion sets the version the server reports at initialization.
func WithVersion(v string) Option { return func(o *options) { o.version = v } }

// New returns the MCP endpoint over agents. Requests must carry the
// authenticated user in their context (identity.WithUser): the gateway's
// authentication runs before it.
func New(agents Agents, opts ...Option) http.Handler {
	o := options{
		logger:           slog.Default(),
		progressInterval: DefaultProgressInterval,
		sessionTimeout:   DefaultSessionTimeout,
		cancelTimeout:    DefaultCancelTimeout,
		version:          "dev",
	}
	for _, opt := range opts {
		opt(&o)
	}
	t := &tools{agents: agents, log: o.logger, progressInterval: o.progressInterval, cancelTimeout: o.cancelTimeout}
	srv := mcp.NewServer(&mcp.Implementation{Name: "wick", Title: "Wick agents", Version: o.version}, &mcp.ServerOptions{
		Instructions: "Each tool runs one of your Wick agents with a message and returns its final reply. " +
			"Pass the thread_id of a previous result to continue that conversation.",
		// The tools are the caller's agents, listed afresh on every
		// tools/list; no list_changed notification is sent.
		Capabilities: &mcp.ServerCapabilities{Tools: &mcp.ToolCapabilities{}},
	})
	srv.AddReceivingMiddleware(t.middleware)
	h := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv }, &mcp.StreamableHTTPOptions{
		SessionTimeout: o.sessionTimeout,
		Logger:         o.logger,
	})
	return allowMethods(withBearer(auth.RequireBearerToken(tokenInfo, nil)(h)))
}

// orgsKey is where a request's TokenInfo keeps the user's organisations.
const orgsKey = "wick_orgs"

// tokenInfo hands the SDK the user the gateway authenticated: the SDK binds
// a session to the TokenInfo's UserID (a request for a session opened by
// another user is refused), and every request's TokenInfo reaches the
// method handlers, which act as that user. The token itself was checked
// by the gateway already.
func tokenInfo(_ context.Context, _ string, r *http.Request) (*auth.TokenInfo, error) {
	user, ok := identity.User(r.Context())
	if !ok {
		return nil, auth.ErrInvalidToken
	}
	return &auth.TokenInfo{
		UserID: user,
		// The SDK refuses a TokenInfo without an expiry; the gateway's own
		// check of the token is what bounds it.
		Expiration: time.Now().Add(time.Hour),
		Extra:      map[string]any{orgsKey: identity.Orgs(r.Context())},
	}, nil
}

// withBearer gives the SDK's bearer check a header to read when the gateway
// authenticated the request otherwise (an X-API-Key header, a token in the
// query, or no tokens configured): the check is tokenInfo, which reads the
// user from the context, not the header.
func withBearer(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") == "" {
			r = r.Clone(r.Context())
			r.Header.Set("Authorization", "Bearer authenticated-by-gateway")
		}
		next.ServeHTTP(w, r)
	})
}

// allowMethods answers 405 for what the transport does not define; the
// SDK's handler would answer 400 for a missing Accept header first.
func allowMethods(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.Method {
		case http.MethodGet, http.MethodPost, http.MethodDelete:
			next.ServeHTTP(w, r)
		default:
			w.Header().Set("Allow", "GET, POST, DELETE")
			httperr.Write(w, http.StatusMethodNotAllowed, codes.Unimplemented, "method not allowed: the MCP endpoint takes GET, POST and DELETE")
		}
	})
}
