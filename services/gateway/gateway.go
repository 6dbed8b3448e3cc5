// Package gateway is Wick's edge: the REST API mapped by grpc-gateway
// onto the agent service, Server-Sent Events for run streams, a WebSocket
// terminal, raw file transfer, bearer-token auth, CORS, health, OpenAPI,
// metrics, the built UI and the LLM gateway's OpenAI-compatible endpoints;
// and the agent service itself over gRPC for external clients (GRPCEdge).
// It is a library with a thin main, so one process can host it beside the
// other services.
package gateway

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"go.opentelemetry.io/contrib/instrumentation/net/http/otelhttp"
	"go.opentelemetry.io/otel/trace"
	"google.golang.org/grpc"

	agentv1 "github.com/wick-agent/wick/gen/wick/agent/v1"
	"github.com/wick-agent/wick/platform/identity"
	"github.com/wick-agent/wick/services/gateway/internal/a2a"
	"github.com/wick-agent/wick/services/gateway/internal/agui"
	"github.com/wick-agent/wick/services/gateway/internal/aisdk"
	"github.com/wick-agent/wick/services/gateway/internal/auth"
	"github.com/wick-agent/wick/services/gateway/internal/files"
	"github.com/wick-agent/wick/services/gateway/internal/langgraph"
	"github.com/wick-agent/wick/services/gateway/internal/mcpserver"
	"github.com/wick-agent/wick/services/gateway/internal/protoutf8"
	"github.com/wick-agent/wick/services/gateway/internal/sse"
	"github.com/wick-agent/wick/services/gateway/internal/terminal"
)

// Defaults of the gateway's address and limits; each has a Config field.
const (
	DefaultHTTPAddr          = ":8000"
	DefaultMaxBodyBytes      = 4 << 20
	DefaultMaxUploadBytes    = files.DefaultMaxUploadBytes
	DefaultUploadChunkBytes  = files.DefaultChunkBytes
	DefaultHeartbeat         = sse.DefaultHeartbeat
	DefaultTerminalReadLimit = terminal.DefaultReadLimit
	DefaultHealthTimeout     = 2 * time.Second
	DefaultReadHeaderTimeout = 10 * time.Second
	DefaultIdleTimeout       = 2 * time.Minute
	DefaultShutdownTimeout   = 15 * time.Second
	// LocalUser is the one user of a suite that has no tokens configured.
	LocalUser = "local"
)

// Config is what the gateway needs besides its connections.
type Config struct {
	// Tokens maps bearer tokens to users. With no tokens and no VerifierURL,
	// every request acts as LocalUser.
	Tokens map[string]string
	// Orgs maps users to the organisations they belong to (from the token
	// file, LoadOrgs). They are signed with the user's identity, so the
	// services can trust them: members share an organisation's knowledge
	// collections. Users of the verifier belong to none.
	Orgs map[string][]string
	// VerifierURL is an external token verifier (auth.Verifier).
	VerifierURL string
	// VerifierCacheTTL is how long the verifier's answers are cached.
	VerifierCacheTTL time.Duration
	// CORSOrigins are the origins allowed to call the API from a browser
	// ("https://app.example.com"; "*" allows any); same-origin needs none.
	CORSOrigins []string
	// UIDir holds the UI's built files, served with SPA fallback; empty serves no UI.
	UIDir string
	// MaxBodyBytes bounds a request body (413 beyond).
	MaxBodyBytes int64
	// MaxUploadBytes bounds a raw file upload (413 beyond).
	MaxUploadBytes int64
	// UploadChunkBytes is the size of each upload message to the agent service.
	UploadChunkBytes int
	// Heartbeat is how long an SSE stream may be idle before a comment frame.
	Heartbeat time.Duration
	// TerminalReadLimit bounds one WebSocket frame from a terminal client.
	TerminalReadLimit int64
	// HealthTimeout bounds each service's health check.
	HealthTimeout time.Duration
	// LLMURL is the LLM gateway's OpenAI-compatible HTTP endpoint, proxied at
	// /v1/ when no in-process handler is given.
	LLMURL string
	// LLMToken is the bearer token the LLM gateway's HTTP endpoint requires, if any.
	LLMToken string
	// GRPC configures the gRPC edge (see GRPCEdge).
	GRPC GRPCConfig
	// PublicMetrics serves the process's Prometheus metrics at /metrics on
	// this (public) listener; off, /metrics answers 404 and an operator
	// scrapes -metrics-addr instead. The figures show traffic, models and
	// error rates of every user, so whoever reaches the listener sees them
	// unless MetricsToken is set.
	PublicMetrics bool
	// MetricsToken, with PublicMetrics, is the bearer token /metrics
	// requires (401 without it); empty: none.
	MetricsToken string
}

func (c *Config) setDefaults() {
	if c.MaxBodyBytes <= 0 {
		c.MaxBodyBytes = DefaultMaxBodyBytes
	}
	if c.MaxUploadBytes <= 0 {
		c.MaxUploadBytes = DefaultMaxUploadBytes
	}
	if c.UploadChunkBytes <= 0 {
		c.UploadChunkBytes = DefaultUploadChunkBytes
	}
	if c.Heartbeat <= 0 {
		c.Heartbeat = DefaultHeartbeat
	}
	if c.TerminalReadLimit <= 0 {
		c.TerminalReadLimit = DefaultTerminalReadLimit
	}
	if c.HealthTimeout <= 0 {
		c.HealthTimeout = DefaultHealthTimeout
	}
	if c.VerifierCacheTTL <= 0 {
		c.VerifierCacheTTL = auth.DefaultVerifierTTL
	}
	c.GRPC.setDefaults()
}

// Option configures New.
type Option func(*options)

type options struct {
	logger         *slog.Logger
	llm            http.Handler
	health         []healthTarget
	tracerProvider trace.TracerProvider
	registry       *prometheus.Registry
	verifierClient *http.Client
	agentClient    grpc.ClientConnInterface
	identityKey    *identity.Key
}

// WithLogger sets the logger.
func WithLogger(l *slog.Logger) Option { return func(o *options) { o.logger = l } }

// WithLLMHandler mounts the LLM gateway's OpenAI-compatible handler at /v1/
// in-process.
func WithLLMHandler(h http.Handler) Option { return func(o *options) { o.llm = h } }

// WithHealthCheck adds a service to /health, asked over grpc.health.v1.
func WithHealthCheck(name string, conn grpc.ClientConnInterface) Option {
	return func(o *options) { o.health = append(o.health, healthTarget{name: name, conn: conn}) }
}

// WithTracerProvider sets the tracer provider of the HTTP spans (default: the global one).
func WithTracerProvider(tp trace.TracerProvider) Option {
	return func(o *options) { o.tracerProvider = tp }
}

// WithRegistry sets the Prometheus registry served at /metrics (default: a new one).
func WithRegistry(r *prometheus.Registry) Option { return func(o *options) { o.registry = r } }

// WithAgentClient has the REST API, the terminal and file transfer call the
// agent service over cc (the one-process suite's in-process channel)
// instead of the connection given to New, which the gRPC edge keeps using.
// cc must sign the context's user as that connection does.
func WithAgentClient(cc grpc.ClientConnInterface) Option {
	return func(o *options) { o.agentClient = cc }
}

// WithIdentityKey sets the suite's identity key, with which the proxy to a
// separate LLM gateway (Config.LLMURL) signs each request's user into its
// headers (identity.Key.SetHTTP), so the LLM gateway knows whom it serves.
// Without it the proxied requests carry no user.
func WithIdentityKey(k *identity.Key) Option { return func(o *options) { o.identityKey = k } }

// WithVerifierClient sets the HTTP client used to reach the token verifier.
func WithVerifierClient(c *http.Client) Option { return func(o *options) { o.verifierClient = c } }

// Gateway is the HTTP handler of the suite's edge.
type Gateway struct {
	cfg       Config
	log       *slog.Logger
	conn      *grpc.ClientConn
	agent     agentv1.AgentServiceClient
	auth      auth.Authenticator // nil: every request is LocalUser
	health    []healthTarget
	metrics   *metrics
	handler   http.Handler
	anonymous bool
	// patterns are the top-level mux's patterns, for tests.
	patterns []string
}

// New returns the gateway for the agent service behind agentConn. The
// connection must sign the context's user (dial.WithIdentity): the gateway
// authenticates each request and puts its user into the request context,
// and the connection asserts it to the services.
func New(cfg Config, agentConn *grpc.ClientConn, opts ...Option) (*Gateway, error) {
	if agentConn == nil {
		return nil, errors.New("gateway: no agent service connection")
	}
	cfg.setDefaults()
	o := options{logger: slog.Default()}
	for _, opt := range opts {
		opt(&o)
	}
	var agentCC grpc.ClientConnInterface = agentConn
	if o.agentClient != nil {
		agentCC = o.agentClient
	}
	g := &Gateway{
		cfg:  cfg,
		log:  o.logger,
		conn: agentConn,
		// Every string a REST request puts into a message is checked here,
		// once for all routes and handlers (protoutf8).
		agent:  agentv1.NewAgentServiceClient(protoutf8.Conn(agentCC)),
		health: o.health,
	}
	var chain auth.Chain
	if len(cfg.Tokens) > 0 {
		t, err := auth.NewTokens(cfg.Tokens)
		if err != nil {
			return nil, fmt.Errorf("gateway: %w", err)
		}
		chain = append(chain, t)
	}
	if cfg.VerifierURL != "" {
		u, err := url.Parse(cfg.VerifierURL)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return nil, fmt.Errorf("gateway: verifier URL %q must be an http or https URL", cfg.VerifierURL)
		}
		vopts := []auth.VerifierOption{auth.WithCacheTTL(cfg.VerifierCacheTTL, auth.DefaultVerifierNegativeTTL)}
		if o.verifierClient != nil {
			vopts = append(vopts, auth.WithHTTPClient(o.verifierClient))
		}
		chain = append(chain, auth.NewVerifier(cfg.VerifierURL, vopts...))
	}
	if len(chain) > 0 {
		g.auth = chain
	} else {
		g.anonymous = true
	}

	reg := o.registry
	if reg == nil {
		reg = prometheus.NewRegistry()
	}
	m, err := newMetrics(reg)
	if err != nil {
		return nil, fmt.Errorf("gateway: %w", err)
	}
	g.metrics = m

	api, err := g.newAPIMux()
	if err != nil {
		return nil, err
	}
	llm := o.llm
	if llm == nil && cfg.LLMURL != "" {
		u, err := url.Parse(cfg.LLMURL)
		if err != nil || u.Host == "" {
			return nil, fmt.Errorf("gateway: LLM URL %q is not an http URL", cfg.LLMURL)
		}
		llm = newLLMProxy(u, cfg.LLMToken, o.identityKey)
	}

	mux := newRouteMux()
	mux.HandleFunc("GET /health", g.serveHealth)
	mux.Handle("GET /openapi.json", serveOpenAPI())
	if cfg.PublicMetrics {
		mux.Handle("GET /metrics", metricsToken(cfg.MetricsToken, m.handler(reg)))
	} else {
		// Answered here, not by the UI's fallback, which would serve its page.
		mux.Handle("GET /metrics", http.NotFoundHandler())
	}
	authed := g.authenticate
	mux.Handle("/agents/{agent_id}/terminal", authed(terminal.New(g.agent, cfg.CORSOrigins, cfg.TerminalReadLimit, g.log)))
	mux.Handle("/agents/{agent_id}/files/raw/{path...}", authed(files.New(g.agent, cfg.MaxUploadBytes, cfg.UploadChunkBytes, g.log)))
	mux.Handle("/langgraph/", authed(g.limitBody(http.StripPrefix("/langgraph", langgraph.New(g.agent, langgraph.WithLogger(g.log), langgraph.WithHeartbeat(cfg.Heartbeat))))))
	mux.Handle("POST /ag-ui/agents/{agent_id}", authed(g.limitBody(agui.New(g.agent, agui.WithLogger(g.log), agui.WithHeartbeat(cfg.Heartbeat)))))
	mux.Handle("/ai-sdk/agents/{agent_id}/chat", authed(g.limitBody(aisdk.New(g.agent, g.log))))
	mux.Handle("/mcp", authed(g.limitBody(mcpserver.New(g.agent, mcpserver.WithLogger(g.log)))))
	a2aHandler := authed(g.limitBody(a2a.New(g.agent, a2a.WithLogger(g.log), a2a.WithHeartbeat(cfg.Heartbeat))))
	mux.Handle("GET "+a2a.Prefix+"{agent_id}"+a2a.CardPath, a2aHandler)
	mux.Handle("POST "+a2a.Prefix+"{agent_id}", a2aHandler)
	if llm != nil {
		mux.Handle(llmMount, authed(g.limitBody(withoutClientIdentity(llm))))
	}
	apiHandler := authed(g.limitBody(g.sseAware(api)))
	for _, prefix := range apiPrefixes {
		mux.Handle(prefix, apiHandler)
		mux.Handle(prefix+"/", apiHandler)
	}
	mux.Handle("/", g.uiHandler())

	g.patterns = mux.patterns
	var h http.Handler = recordMuxRoute(mux.ServeMux)
	h = normalizePath(h)
	h = g.cors(h)
	h = g.localHostOnly(h)
	h = secureHeaders(h)
	h = m.instrument(h, g.log)
	h = traceResponse(h)
	otelOpts := []otelhttp.Option{
		// Renamed by route once routed (metrics.instrument).
		otelhttp.WithSpanNameFormatter(func(_ string, r *http.Request) string { return r.Method }),
	}
	if o.tracerProvider != nil {
		otelOpts = append(otelOpts, otelhttp.WithTracerProvider(o.tracerProvider))
	}
	h = otelhttp.NewHandler(h, "gateway", otelOpts...)
	// Taken out of the URL before anything (spans, logs) records it.
	h = tokenFromQuery(h)
	g.handler = h
	return g, nil
}

// apiPrefixes are the paths grpc-gateway serves.
var apiPrefixes = []string{"/agents", "/threads", "/runs", "/tasks", "/knowledge", "/usage"}

// llmMount is where the LLM gateway's OpenAI-compatible API is served.
const llmMount = "/v1/"

// Anonymous reports whether the gateway runs without authentication, as the
// single LocalUser.
func (g *Gateway) Anonymous() bool { return g.anonymous }

// ServeHTTP serves a request.
func (g *Gateway) ServeHTTP(w http.ResponseWriter, r *http.Request) { g.handler.ServeHTTP(w, r) }

// NewHTTPServer returns an http.Server for h with the timeouts an API with
// long streams needs: bounded header reads and idle keep-alives, and no
// write timeout, which would cut SSE streams and terminals.
func NewHTTPServer(h http.Handler, logger *slog.Logger) *http.Server {
	return &http.Server{
		Handler:           h,
		ReadHeaderTimeout: DefaultReadHeaderTimeout,
		IdleTimeout:       DefaultIdleTimeout,
		MaxHeaderBytes:    1 << 20,
		ErrorLog:          slog.NewLogLogger(logger.Handler(), slog.LevelWarn),
	}
}

// Serve serves h on lis until ctx ends, then shuts down: new connections are
// refused, requests in flight get shutdownTimeout to finish, and streams
// still open then are cut (they never end on their own).
func Serve(ctx context.Context, lis net.Listener, h http.Handler, logger *slog.Logger, shutdownTimeout time.Duration) error {
	srv := NewHTTPServer(h, logger)
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(lis) }()
	logger.Info("serving HTTP", "addr", lis.Addr().String())
	select {
	case err := <-errc:
		return fmt.Errorf("http serve: %w", err)
	case <-ctx.Done():
	}
	sctx, cancel := context.WithTimeout(context.Background(), shutdownTimeout)
	defer cancel()
	if err := srv.Shutdown(sctx); err != nil {
		logger.Warn("HTTP shutdown timeout passed; cutting open streams", "error", err)
		_ = srv.Close()
	}
	if err := <-errc; err != nil && !errors.Is(err, http.ErrServerClosed) {
		return fmt.Errorf("http serve: %w", err)
	}
	return nil
}

// newLLMProxy forwards /v1/ to the LLM gateway's HTTP endpoint, flushing
// every write so that streamed completions are not buffered. With key, the
// user the gateway authenticated is signed into the request's headers.
func newLLMProxy(target *url.URL, token string, key *identity.Key) http.Handler {
	return &httputil.ReverseProxy{
		Rewrite: func(pr *httputil.ProxyRequest) {
			pr.SetURL(target)
			pr.SetXForwarded()
			// The caller's token is for the gateway, not the LLM gateway.
			pr.Out.Header.Del("Authorization")
			pr.Out.Header.Del(apiKeyHeader)
			if token != "" {
				pr.Out.Header.Set("Authorization", "Bearer "+token)
			}
			if user, ok := identity.User(pr.In.Context()); ok && key != nil {
				key.SetHTTP(pr.Out.Header, user, identity.Orgs(pr.In.Context()))
			}
		},
		FlushInterval: -1,
	}
}

// withoutClientIdentity drops identity headers a client sent: only the
// gateway asserts who the caller is, after authenticating it.
func withoutClientIdentity(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		r = r.Clone(r.Context())
		identity.DelHTTP(r.Header)
		next.ServeHTTP(w, r)
	})
}
