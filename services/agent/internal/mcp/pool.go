// Package mcp gives agents the tools of their Model Context Protocol
// servers. A server is a program started inside the agent's sandbox through
// the sandbox service's process API and spoken to over its stdin and
// stdout, or a streamable-HTTP endpoint reached through the SSRF guard.
// Connections are kept per (user, agent, server) and reused by the agent's
// runs; each run lists the tools again, so a change of the list reaches the
// next run. Every tool is a loop.Tool named "<server>__<tool>", so its calls
// go through the same hooks, timeouts and eviction as any other tool's.
package mcp

import (
	"context"
	"encoding/json"
	"log/slog"
	"net/http"
	"sync"
	"time"

	"github.com/wick-agent/wick/services/agent/internal/loop"
	"github.com/wick-agent/wick/services/agent/internal/sandboxproc"
)

// Defaults of the pool; each has an option.
const (
	// DefaultCallTimeout bounds one tool call of a server whose
	// configuration sets no timeout.
	DefaultCallTimeout = 60 * time.Second
	// DefaultConnectTimeout bounds starting a server, the protocol's
	// handshake and one listing of its tools.
	DefaultConnectTimeout = 30 * time.Second
	// DefaultIdleTimeout is how long a connection no run used is kept
	// (and a stdio server left running) before it is closed.
	DefaultIdleTimeout = 10 * time.Minute
	// DefaultMaxOutputChars caps one call's result (its head and tail are
	// kept) before the loop's eviction rules apply, like the 1 MiB cap of
	// HTTP callback tools.
	DefaultMaxOutputChars = 1 << 20
	// DefaultMaxMessageBytes bounds one protocol message a server sends,
	// so that a server cannot make the agent buffer without end.
	DefaultMaxMessageBytes = 32 << 20
	// MaxRestarts is how many times a server that died is started again;
	// after that its calls are tool errors until the agent's configuration
	// changes or the connection is closed as idle.
	MaxRestarts = 1
	// MaxToolsPerServer bounds the tools one server lists: each one's
	// schema goes to the model on every call.
	MaxToolsPerServer = 128
	// Separator joins a server's name and its tool's name.
	Separator = "__"
)

// Sandbox is the slice of the sandbox service's client that runs stdio
// servers.
type Sandbox = sandboxproc.Sandbox

// processTagPrefix tags the servers' processes, so ListProcesses shows
// which are MCP servers.
const processTagPrefix = "mcp:"

// Pool keeps the connections to the agents' MCP servers.
type Pool struct {
	sandbox Sandbox
	http    *http.Client
	logger  *slog.Logger
	opts    options

	base context.Context
	stop context.CancelFunc
	wg   sync.WaitGroup

	mu      sync.Mutex
	servers map[serverKey]*server
	closed  bool
}

type options struct {
	connectTimeout  time.Duration
	idleTimeout     time.Duration
	maxOutputChars  int
	maxMessageBytes int
}

// Option configures a Pool.
type Option func(*options)

// WithConnectTimeout bounds starting a server, its handshake and a listing.
func WithConnectTimeout(d time.Duration) Option { return func(o *options) { o.connectTimeout = d } }

// WithIdleTimeout sets how long an unused connection is kept.
func WithIdleTimeout(d time.Duration) Option { return func(o *options) { o.idleTimeout = d } }

// WithMaxOutputChars caps one call's result.
func WithMaxOutputChars(n int) Option { return func(o *options) { o.maxOutputChars = n } }

// WithMaxMessageBytes bounds one protocol message of a stdio server.
func WithMaxMessageBytes(n int) Option { return func(o *options) { o.maxMessageBytes = n } }

// New returns a pool that starts stdio servers through sandbox and reaches
// HTTP servers with client, whose dialer must be the SSRF guard's (the
// user chooses the URL). logger may be nil. Close stops it.
func New(sandbox Sandbox, client *http.Client, logger *slog.Logger, opts ...Option) *Pool {
	o := options{
		connectTimeout: DefaultConnectTimeout, idleTimeout: DefaultIdleTimeout,
		maxOutputChars: DefaultMaxOutputChars, maxMessageBytes: DefaultMaxMessageBytes,
	}
	for _, opt := range opts {
		opt(&o)
	}
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	base, stop := context.WithCancel(context.Background())
	p := &Pool{sandbox: sandbox, http: client, logger: logger, opts: o, base: base, stop: stop, servers: map[serverKey]*server{}}
	p.wg.Add(1)
	go p.sweep()
	return p
}

// serverKey names one connection: a user's agent's server.
type serverKey struct{ user, agentID, name string }

// Tools connects to the agent's servers (or reuses their connections) and
// returns their tools, in the servers' order; the servers are asked at once,
// so a slow one delays the run by its own time only. A server that cannot
// be started or does not list its tools is returned as unavailable, with
// why and the end of its standard error, and the agent runs with the tools
// it has; a tool whose name or schema the providers would refuse is logged
// and left out.
func (p *Pool) Tools(ctx context.Context, user, agentID string, backend *loop.BackendCfg, servers []loop.MCPServerCfg) ([]loop.Tool, []Unavailable) {
	lists := make([][]loop.Tool, len(servers))
	failed := make([]*Unavailable, len(servers))
	var wg sync.WaitGroup
	for i, cfg := range servers {
		s, err := p.server(user, agentID, backend, cfg)
		if err != nil {
			p.logger.Warn("MCP server not used", "agent_id", agentID, "server", cfg.Name, "err", err)
			u := unavailable(cfg.Name, err, "")
			failed[i] = &u
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			ts, err := s.tools(ctx)
			if err != nil {
				p.logger.Warn("MCP server's tools not listed", "agent_id", agentID, "server", cfg.Name, "err", err)
				u := unavailable(cfg.Name, err, s.stderrTail())
				failed[i] = &u
			}
			lists[i] = ts
		}()
	}
	wg.Wait()
	var out []loop.Tool
	var down []Unavailable
	for i, ts := range lists {
		out = append(out, ts...)
		if failed[i] != nil {
			down = append(down, *failed[i])
		}
	}
	return out, down
}

// server returns the connection of the key, replacing one made from
// another configuration.
func (p *Pool) server(user, agentID string, backend *loop.BackendCfg, cfg loop.MCPServerCfg) (*server, error) {
	fp, err := json.Marshal(struct {
		Server  loop.MCPServerCfg
		Backend *loop.BackendCfg
	}{cfg, backend})
	if err != nil {
		return nil, err
	}
	key := serverKey{user, agentID, cfg.Name}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return nil, errClosed
	}
	if s := p.servers[key]; s != nil {
		if s.fingerprint == string(fp) {
			return s, nil
		}
		go s.close()
	}
	s := newServer(p, key, backend, cfg, string(fp))
	p.servers[key] = s
	return s, nil
}

// sweep closes connections no run used for the idle timeout.
func (p *Pool) sweep() {
	defer p.wg.Done()
	every := p.opts.idleTimeout / 4
	if every < time.Second {
		every = time.Second
	}
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-p.base.Done():
			return
		case now := <-t.C:
			p.mu.Lock()
			for k, s := range p.servers {
				if s.idleSince(now) >= p.opts.idleTimeout {
					delete(p.servers, k)
					go s.close()
				}
			}
			p.mu.Unlock()
		}
	}
}

// Close closes every connection (stopping stdio servers) and the sweeper.
func (p *Pool) Close() {
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		return
	}
	p.closed = true
	servers := p.servers
	p.servers = nil
	p.mu.Unlock()
	var wg sync.WaitGroup
	for _, s := range servers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			s.close()
		}()
	}
	wg.Wait()
	p.stop()
	p.wg.Wait()
}
