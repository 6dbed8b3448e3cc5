package mcp

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/wick-agent/wick/platform/identity"
	"github.com/wick-agent/wick/services/agent/internal/loop"
	"github.com/wick-agent/wick/services/agent/internal/sandboxproc"
)

// codeRejectedByTransport is the SDK's JSON-RPC code of a message the
// transport could not deliver (an HTTP error status, say): the server is
// gone, it did not answer.
const codeRejectedByTransport = -32005

var errClosed = errors.New("this MCP connection was closed (the agent's configuration changed, it was idle, or the service is stopping); the next run connects again")

// clientInfo is how the agent introduces itself to servers.
var clientInfo = &sdk.Implementation{Name: "wick-agent", Version: "1"}

// server is the connection to one MCP server of a user's agent. It starts
// the server when first used and again, once, after it died.
type server struct {
	pool        *Pool
	key         serverKey
	backend     *loop.BackendCfg
	cfg         loop.MCPServerCfg
	fingerprint string
	// ctx carries the user to the sandbox service; it ends with the pool.
	ctx context.Context

	// lastUsed is when a run last used the server (Unix nanoseconds),
	// read by the pool's sweeper without waiting for a start under mu.
	lastUsed atomic.Int64

	// progress routes the servers' progress notifications to their calls.
	progress progressRoutes

	mu   sync.Mutex
	sess *sdk.ClientSession
	// proc is the stdio server's latest process, kept after it stopped for
	// the end of its standard error.
	proc   *sandboxproc.Process
	starts int
	closed bool
}

func newServer(p *Pool, key serverKey, backend *loop.BackendCfg, cfg loop.MCPServerCfg, fingerprint string) *server {
	s := &server{
		pool: p, key: key, backend: backend, cfg: cfg, fingerprint: fingerprint,
		ctx: identity.WithUser(p.base, key.user),
	}
	s.lastUsed.Store(time.Now().UnixNano())
	return s
}

// session returns the live session, starting the server when it has none:
// the first time, or once more after it died.
func (s *server) session(ctx context.Context) (*sdk.ClientSession, error) {
	s.lastUsed.Store(time.Now().UnixNano())
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return nil, errClosed
	}
	if s.sess != nil {
		return s.sess, nil
	}
	if s.starts > MaxRestarts {
		return nil, fmt.Errorf("MCP server %s stopped and was already restarted %d time(s); its tools are unavailable until the agent's configuration changes", s.cfg.Name, MaxRestarts)
	}
	s.starts++
	ctx, cancel := context.WithTimeout(ctx, s.pool.opts.connectTimeout)
	defer cancel()
	sess, err := s.connect(ctx)
	if err != nil {
		return nil, fmt.Errorf("start MCP server %s: %w", s.cfg.Name, err)
	}
	s.sess = sess
	go s.watch(sess)
	return sess, nil
}

// connect starts the server (stdio) or opens the HTTP session, and does
// the protocol's handshake.
func (s *server) connect(ctx context.Context) (*sdk.ClientSession, error) {
	client := sdk.NewClient(clientInfo, &sdk.ClientOptions{
		ProgressNotificationHandler: func(_ context.Context, req *sdk.ProgressNotificationClientRequest) { s.progress.route(req.Params) },
	})
	var t sdk.Transport
	var proc *sandboxproc.Process
	if s.cfg.URL != "" {
		t = s.httpTransport()
	} else {
		cmd := sandboxproc.Command{Argv: append([]string{s.cfg.Command}, s.cfg.Args...), Env: s.cfg.Env, Tag: processTagPrefix + s.cfg.Name}
		p, err := sandboxproc.Start(ctx, s.ctx, s.pool.sandbox, s.key.agentID, s.backend, cmd, s.pool.opts.maxMessageBytes)
		if err != nil {
			return nil, err
		}
		proc, s.proc = p, p
		t = &sdk.IOTransport{Reader: p, Writer: p}
	}
	sess, err := client.Connect(ctx, t, nil)
	if err != nil {
		if proc != nil {
			_ = proc.Close()
		}
		return nil, fmt.Errorf("handshake: %w", err)
	}
	return sess, nil
}

// watch forgets the session once it ends (the process exited, the HTTP
// session was lost), so that the next use starts the server again.
func (s *server) watch(sess *sdk.ClientSession) {
	err := sess.Wait()
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.sess == sess {
		s.sess = nil
		if !s.closed {
			s.pool.logger.Warn("MCP server stopped", "agent_id", s.key.agentID, "server", s.cfg.Name, "err", err)
		}
	}
}

// stderrTail is the end of the stdio server's standard error so far;
// empty for a server over HTTP or one never started.
func (s *server) stderrTail() string {
	s.mu.Lock()
	p := s.proc
	s.mu.Unlock()
	if p == nil {
		return ""
	}
	return p.StderrTail()
}

func (s *server) idleSince(now time.Time) time.Duration {
	return now.Sub(time.Unix(0, s.lastUsed.Load()))
}

// tools lists the server's tools (again when it said they changed) as loop
// tools. A tool the providers would refuse is logged and left out.
func (s *server) tools(ctx context.Context) ([]loop.Tool, error) {
	listed, err := s.list(ctx)
	if err != nil {
		return nil, err
	}
	out := make([]loop.Tool, 0, len(listed))
	for _, t := range listed {
		lt, err := newTool(s, t)
		if err != nil {
			s.pool.logger.Warn("MCP tool refused", "agent_id", s.key.agentID, "server", s.cfg.Name, "tool", t.Name, "err", err)
			continue
		}
		out = append(out, lt)
	}
	return out, nil
}

// list asks the server for its tools. It is asked at the start of every
// run, so a change reaches the next run whether or not the server
// announced it (notifications/tools/list_changed).
func (s *server) list(ctx context.Context) ([]*sdk.Tool, error) {
	sess, err := s.session(ctx)
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(ctx, s.pool.opts.connectTimeout)
	defer cancel()
	var listed []*sdk.Tool
	for t, err := range sess.Tools(ctx, nil) {
		if err != nil {
			return nil, fmt.Errorf("list tools: %w", err)
		}
		if len(listed) == MaxToolsPerServer {
			return nil, fmt.Errorf("list tools: the server lists more than %d tools", MaxToolsPerServer)
		}
		listed = append(listed, t)
	}
	return listed, nil
}

// call calls one tool of the server within the server's timeout, asking
// for progress notifications when progress is not nil. A call
// that fails for another reason than the server's own error answer means
// the server is gone (its process exited, its endpoint stopped answering):
// its session is dropped, so the next call starts it again, once.
func (s *server) call(ctx context.Context, name string, args map[string]any, progress *progressSink) (*sdk.CallToolResult, error) {
	sess, err := s.session(ctx)
	if err != nil {
		return nil, err
	}
	timeout := s.cfg.Timeout
	if timeout <= 0 {
		timeout = DefaultCallTimeout
	}
	callCtx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	// A long call keeps the connection from looking idle.
	defer func() { s.lastUsed.Store(time.Now().UnixNano()) }()
	params := &sdk.CallToolParams{Name: name, Arguments: args}
	if progress != nil {
		// SetProgressToken writes into the existing Meta only: on a nil one
		// it sets nothing.
		params.Meta = sdk.Meta{}
		token := newProgressToken()
		s.progress.add(token, progress)
		defer s.progress.remove(token)
		params.SetProgressToken(token)
	}
	res, err := sess.CallTool(callCtx, params)
	var wire *jsonrpc.Error
	switch {
	case err == nil:
		return res, nil
	case ctx.Err() != nil:
		return nil, fmt.Errorf("MCP server %s: %w", s.cfg.Name, context.Cause(ctx))
	case errors.Is(callCtx.Err(), context.DeadlineExceeded):
		return nil, fmt.Errorf("MCP server %s did not answer %s within %s", s.cfg.Name, name, timeout)
	case errors.As(err, &wire) && wire.Code != codeRejectedByTransport:
		return nil, fmt.Errorf("MCP server %s: %w", s.cfg.Name, err)
	}
	s.drop(sess)
	return nil, fmt.Errorf("MCP server %s stopped during the call of %s (%v); %s", s.cfg.Name, name, err, s.restartNote())
}

// restartNote tells the model what becomes of a server that stopped.
func (s *server) restartNote() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.starts > MaxRestarts {
		return fmt.Sprintf("it was already restarted %d time(s), so its tools stay unavailable", MaxRestarts)
	}
	return "it is started again on the next call"
}

// drop forgets a session that failed and closes it.
func (s *server) drop(sess *sdk.ClientSession) {
	s.mu.Lock()
	if s.sess == sess {
		s.sess = nil
	}
	s.mu.Unlock()
	_ = sess.Close()
}

// close ends the session; a stdio server's process is killed with it.
func (s *server) close() {
	s.mu.Lock()
	s.closed = true
	sess := s.sess
	s.sess = nil
	s.mu.Unlock()
	if sess != nil {
		_ = sess.Close()
	}
}
