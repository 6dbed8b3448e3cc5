package placement

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"slices"
	"strings"
	"sync"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/backoff"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	sandboxv1 "github.com/wick-agent/wick/gen/wick/sandbox/v1"
	"github.com/wick-agent/wick/platform/dial"
	"github.com/wick-agent/wick/platform/identity"
)

// Defaults; each is an Option.
const (
	// DefaultRefresh is how often a DNS name is resolved again, so that a
	// new engine takes its share of new sandboxes within this long.
	DefaultRefresh = 30 * time.Second
	// DefaultResolveTimeout bounds one resolution.
	DefaultResolveTimeout = 5 * time.Second
	// DefaultReconnectMax caps the wait between attempts to reach a dead
	// endpoint, so its sandboxes are served again soon after it returns
	// (gRPC's own cap is two minutes).
	DefaultReconnectMax = 5 * time.Second
)

// Dialer opens one connection to one sandbox service; production passes
// dial.New with the service's identity and TLS options.
type Dialer func(target string, opts ...dial.Option) (*grpc.ClientConn, error)

// Resolver finds the addresses of a name; *net.Resolver is one.
type Resolver interface {
	LookupHost(ctx context.Context, host string) ([]string, error)
}

type options struct {
	resolver       Resolver
	refresh        time.Duration
	resolveTimeout time.Duration
	reconnectMax   time.Duration
	logger         *slog.Logger
}

// Option configures New.
type Option func(*options)

// WithResolver replaces net.DefaultResolver.
func WithResolver(r Resolver) Option { return func(o *options) { o.resolver = r } }

// WithRefresh sets how often a DNS name is resolved again; zero or less
// resolves it only at start (and on Refresh).
func WithRefresh(d time.Duration) Option { return func(o *options) { o.refresh = d } }

// WithReconnectMax caps the wait between attempts to reach a dead endpoint.
func WithReconnectMax(d time.Duration) Option { return func(o *options) { o.reconnectMax = d } }

// WithLogger logs changes of the endpoint set and failed resolutions.
func WithLogger(l *slog.Logger) Option { return func(o *options) { o.logger = l } }

// endpoint is one sandbox service and the connection to it.
type endpoint struct {
	addr   string
	conn   *grpc.ClientConn
	client sandboxv1.SandboxServiceClient
}

// wrap names the endpoint in an Unavailable error: the sandbox is not
// moved to another engine, since its workspace lives on this one.
func (e *endpoint) wrap(err error) error {
	st, ok := status.FromError(err)
	if err == nil || !ok || st.Code() != codes.Unavailable {
		return err
	}
	return status.Errorf(codes.Unavailable,
		"sandbox service %s, which holds this sandbox, is unavailable; the sandbox and its workspace stay on that engine and are served again when the service returns: %s",
		e.addr, st.Message())
}

// Client is a sandboxv1.SandboxServiceClient that sends each call for
// (user, agent) — the user from the context's identity, the agent from the
// request — to the endpoint Pick chooses among those resolved from the
// target. There is no failover: a call whose endpoint is down fails
// Unavailable, naming it.
type Client struct {
	sandboxv1.SandboxServiceClient // routed through the Client's ClientConnInterface

	target     string
	host, port string // set when target is a DNS name resolved again and again
	dialer     Dialer
	o          options
	cancel     context.CancelFunc
	done       chan struct{}

	mu        sync.RWMutex
	endpoints map[string]*endpoint
	addrs     []string // sorted keys of endpoints
	closed    bool
}

var _ sandboxv1.SandboxServiceClient = (*Client)(nil)

// New places sandboxes over target: a comma-separated list host:port,…
// (each element one sandbox service, dialled as given), unix:///path (one),
// or host:port or dns:///host:port (every address the name resolves to is
// one sandbox service; the name is resolved again every refresh interval).
// A name that does not resolve yet is not an error: calls fail Unavailable
// until it does.
func New(target string, d Dialer, opts ...Option) (*Client, error) {
	o := options{resolver: net.DefaultResolver, refresh: DefaultRefresh, resolveTimeout: DefaultResolveTimeout,
		reconnectMax: DefaultReconnectMax, logger: slog.New(slog.DiscardHandler)}
	for _, opt := range opts {
		opt(&o)
	}
	static, host, port, err := parseTarget(target)
	if err != nil {
		return nil, err
	}
	c := &Client{target: target, host: host, port: port, dialer: d, o: o, endpoints: map[string]*endpoint{}, done: make(chan struct{})}
	c.SandboxServiceClient = sandboxv1.NewSandboxServiceClient(router{c})
	if static != nil {
		close(c.done)
		if err := c.set(static, ""); err != nil {
			_ = c.Close() // the endpoints dialled before the failure
			return nil, err
		}
		return c, nil
	}
	ctx, cancel := context.WithCancel(context.Background())
	c.cancel = cancel
	if err := c.Refresh(ctx); err != nil {
		o.logger.Warn("sandbox endpoints: first resolution failed; calls fail Unavailable until one succeeds", "target", target, "err", err)
	}
	go c.loop(ctx)
	return c, nil
}

// parseTarget splits target into static endpoints, or the host and port of
// a name to resolve.
func parseTarget(target string) (static []string, host, port string, err error) {
	switch {
	case target == "":
		return nil, "", "", errors.New("placement: empty sandbox target")
	case strings.Contains(target, ","):
		list, err := dial.SplitList(target)
		if err != nil {
			return nil, "", "", fmt.Errorf("placement: %w", err)
		}
		return list, "", "", nil
	case strings.HasPrefix(target, "unix:"):
		return []string{target}, "", "", nil
	case strings.HasPrefix(target, "dns:"):
		name, ok := strings.CutPrefix(target, "dns:///")
		if !ok {
			return nil, "", "", fmt.Errorf("placement: %q: want dns:///host:port (no DNS server authority)", target)
		}
		target = name
	case strings.Contains(target, "://"):
		return nil, "", "", fmt.Errorf("placement: %q: want host:port, dns:///host:port, unix:///path or a comma-separated list", target)
	}
	host, port, err = net.SplitHostPort(target)
	if err != nil || host == "" || port == "" {
		return nil, "", "", fmt.Errorf("placement: %q: want host:port", target)
	}
	if net.ParseIP(host) != nil {
		return []string{target}, "", "", nil // an address, nothing to resolve
	}
	return nil, host, port, nil
}

func (c *Client) loop(ctx context.Context) {
	defer close(c.done)
	if c.o.refresh <= 0 {
		return
	}
	t := time.NewTicker(c.o.refresh)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			if err := c.Refresh(ctx); err != nil && ctx.Err() == nil {
				c.o.logger.Warn("sandbox endpoints: resolution failed; keeping the last set", "target", c.target, "err", err)
			}
		}
	}
}

// Refresh resolves a DNS target now. A failed or empty answer keeps the
// endpoints known so far: a DNS outage must not move every sandbox. An
// endpoint missing from a good answer is dropped and its sandboxes go to
// the others (the operator removed that engine), so a sandbox service that
// only restarts must keep its address listed (publishNotReadyAddresses on
// a headless Service).
func (c *Client) Refresh(ctx context.Context) error {
	if c.host == "" {
		return nil
	}
	ctx, cancel := context.WithTimeout(ctx, c.o.resolveTimeout)
	defer cancel()
	ips, err := c.o.resolver.LookupHost(ctx, c.host)
	if err != nil {
		return fmt.Errorf("resolve %s: %w", c.host, err)
	}
	if len(ips) == 0 {
		return fmt.Errorf("resolve %s: no addresses", c.host)
	}
	addrs := make([]string, 0, len(ips))
	for _, ip := range ips {
		addrs = append(addrs, net.JoinHostPort(ip, c.port))
	}
	// TLS verifies every endpoint by the name, as it would one connection
	// to the name.
	return c.set(addrs, net.JoinHostPort(c.host, c.port))
}

// set makes addrs the endpoints, dialling new ones and closing gone ones.
func (c *Client) set(addrs []string, authority string) error {
	want := map[string]bool{}
	for _, a := range addrs {
		want[a] = true
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return errors.New("placement: closed")
	}
	var added, removed []string
	for a := range want {
		if c.endpoints[a] != nil {
			continue
		}
		opts := []dial.Option{dial.WithDialOption(grpc.WithConnectParams(grpc.ConnectParams{
			Backoff: backoff.Config{BaseDelay: backoff.DefaultConfig.BaseDelay, Multiplier: backoff.DefaultConfig.Multiplier,
				Jitter: backoff.DefaultConfig.Jitter, MaxDelay: c.o.reconnectMax},
			MinConnectTimeout: 20 * time.Second,
		}))}
		if authority != "" {
			opts = append(opts, dial.WithDialOption(grpc.WithAuthority(authority)))
		}
		conn, err := c.dialer(a, opts...)
		if err != nil {
			return fmt.Errorf("placement: sandbox service %s: %w", a, err)
		}
		c.endpoints[a] = &endpoint{addr: a, conn: conn, client: sandboxv1.NewSandboxServiceClient(conn)}
		added = append(added, a)
	}
	for a, e := range c.endpoints {
		if !want[a] {
			_ = e.conn.Close()
			delete(c.endpoints, a)
			removed = append(removed, a)
		}
	}
	c.addrs = c.addrs[:0]
	for a := range c.endpoints {
		c.addrs = append(c.addrs, a)
	}
	slices.Sort(c.addrs)
	if len(added)+len(removed) > 0 {
		slices.Sort(added)
		slices.Sort(removed)
		c.o.logger.Info("sandbox endpoints changed", "target", c.target, "endpoints", len(c.addrs), "added", added, "removed", removed)
	}
	return nil
}

// Endpoints returns the current endpoints, sorted.
func (c *Client) Endpoints() []string {
	c.mu.RLock()
	defer c.mu.RUnlock()
	return slices.Clone(c.addrs)
}

// Endpoint returns the endpoint that holds (user, agent)'s sandbox, "" when
// none is known.
func (c *Client) Endpoint(user, agent string) string {
	c.mu.RLock()
	defer c.mu.RUnlock()
	return Pick(c.addrs, user, agent)
}

// route returns the endpoint of the caller's sandbox for agent.
func (c *Client) route(ctx context.Context, agent string) (*endpoint, error) {
	user, _ := identity.User(ctx) // the sandbox service refuses a call without one
	// A name that had no address yet (this service started before the
	// sandbox services had theirs) is asked again now, not at the next
	// refresh: until it answers, every sandbox call fails.
	c.mu.RLock()
	unknown := len(c.addrs) == 0
	c.mu.RUnlock()
	if unknown {
		_ = c.Refresh(ctx)
	}
	c.mu.RLock()
	defer c.mu.RUnlock()
	if c.closed {
		return nil, status.Error(codes.Unavailable, "sandbox placement is closed: the agent service is stopping")
	}
	e := c.endpoints[Pick(c.addrs, user, agent)]
	if e == nil {
		return nil, status.Errorf(codes.Unavailable, "no sandbox service is known yet: %s resolved to no address", c.target)
	}
	return e, nil
}

// ListSandboxes asks every endpoint, since the caller's sandboxes are spread
// over them; one unreachable endpoint fails the call, as a partial list
// would look like sandboxes were lost.
func (c *Client) ListSandboxes(ctx context.Context, in *sandboxv1.ListSandboxesRequest, opts ...grpc.CallOption) (*sandboxv1.ListSandboxesResponse, error) {
	c.mu.RLock()
	eps := make([]*endpoint, 0, len(c.addrs))
	for _, a := range c.addrs {
		eps = append(eps, c.endpoints[a])
	}
	c.mu.RUnlock()
	out := &sandboxv1.ListSandboxesResponse{}
	for _, e := range eps {
		resp, err := e.client.ListSandboxes(ctx, in, opts...)
		if err != nil {
			return nil, e.wrap(err)
		}
		out.Sandboxes = append(out.Sandboxes, resp.GetSandboxes()...)
	}
	return out, nil
}

// Close stops resolving and closes every connection.
func (c *Client) Close() error {
	if c.cancel != nil {
		c.cancel()
	}
	<-c.done
	c.mu.Lock()
	defer c.mu.Unlock()
	c.closed = true
	var errs []error
	for a, e := range c.endpoints {
		errs = append(errs, e.conn.Close())
		delete(c.endpoints, a)
	}
	c.addrs = nil
	return errors.Join(errs...)
}

// agentOf is the agent a request names: every request but ListSandboxes
// has an agent_id; a stream's first message carries it.
func agentOf(m any) (string, bool) {
	switch m := m.(type) {
	case *sandboxv1.WriteFileRequest:
		return m.GetHeader().GetAgentId(), m.GetHeader() != nil
	case *sandboxv1.TerminalRequest:
		return m.GetStart().GetAgentId(), m.GetStart() != nil
	case interface{ GetAgentId() string }:
		return m.GetAgentId(), true
	}
	return "", false
}

// router is the grpc.ClientConnInterface under the generated client: it
// places each call by the agent its request names.
type router struct{ c *Client }

func (r router) Invoke(ctx context.Context, method string, args, reply any, opts ...grpc.CallOption) error {
	agent, ok := agentOf(args)
	if !ok {
		return status.Errorf(codes.Internal, "placement: %s names no agent to place the call by", method)
	}
	e, err := r.c.route(ctx, agent)
	if err != nil {
		return err
	}
	return e.wrap(e.conn.Invoke(ctx, method, args, reply, opts...))
}

// NewStream opens the stream on its first message, the one that names the
// agent.
func (r router) NewStream(ctx context.Context, desc *grpc.StreamDesc, method string, opts ...grpc.CallOption) (grpc.ClientStream, error) {
	return &lazyStream{c: r.c, ctx: ctx, desc: desc, method: method, opts: opts}, nil
}

// lazyStream is a client stream whose endpoint is chosen by its first
// message.
type lazyStream struct {
	c      *Client
	ctx    context.Context
	desc   *grpc.StreamDesc
	method string
	opts   []grpc.CallOption

	mu sync.Mutex
	cs grpc.ClientStream // nil until the first SendMsg
	e  *endpoint
}

var errNotOpen = status.Error(codes.Internal, "placement: a sandbox stream is used before its first message, which names the agent")

func (s *lazyStream) open(m any) (grpc.ClientStream, *endpoint, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.cs != nil {
		return s.cs, s.e, nil
	}
	agent, ok := agentOf(m)
	if !ok {
		return nil, nil, status.Errorf(codes.InvalidArgument, "placement: the first message of %s names no agent", s.method)
	}
	e, err := s.c.route(s.ctx, agent)
	if err != nil {
		return nil, nil, err
	}
	cs, err := e.conn.NewStream(s.ctx, s.desc, s.method, s.opts...)
	if err != nil {
		return nil, nil, e.wrap(err)
	}
	s.cs, s.e = cs, e
	return cs, e, nil
}

func (s *lazyStream) opened() (grpc.ClientStream, *endpoint) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.cs, s.e
}

func (s *lazyStream) SendMsg(m any) error {
	cs, e, err := s.open(m)
	if err != nil {
		return err
	}
	if err := cs.SendMsg(m); !errors.Is(err, io.EOF) {
		return e.wrap(err)
	}
	return io.EOF // the server ended the call; RecvMsg says how
}

func (s *lazyStream) RecvMsg(m any) error {
	cs, e := s.opened()
	if cs == nil {
		return errNotOpen
	}
	if err := cs.RecvMsg(m); !errors.Is(err, io.EOF) {
		return e.wrap(err)
	}
	return io.EOF
}

func (s *lazyStream) Header() (metadata.MD, error) {
	cs, e := s.opened()
	if cs == nil {
		return nil, errNotOpen
	}
	md, err := cs.Header()
	return md, e.wrap(err)
}

func (s *lazyStream) Trailer() metadata.MD {
	if cs, _ := s.opened(); cs != nil {
		return cs.Trailer()
	}
	return nil
}

func (s *lazyStream) CloseSend() error {
	if cs, _ := s.opened(); cs != nil {
		return cs.CloseSend()
	}
	return nil
}

func (s *lazyStream) Context() context.Context {
	if cs, _ := s.opened(); cs != nil {
		return cs.Context()
	}
	return s.ctx
}
