package server

import (
	"errors"
	"io"
	"net"
	"sync"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	daemonv1 "github.com/wick-agent/wick/gen/wick/daemon/v1"
)

// DefaultTunnelWait is how long a connection to a tunnel listener waits
// for a Tunnel call to take it before it is closed: a client inside the
// sandbox then fails instead of hanging while nobody serves the tunnel.
const DefaultTunnelWait = 30 * time.Second

// tunnelChunk bounds one TunnelResponse's data.
const tunnelChunk = 32 << 10

// Tunnel is a listener inside the sandbox whose connections Tunnel calls
// take, one per call.
type Tunnel struct {
	lis   net.Listener
	conns chan net.Conn
	wait  time.Duration
	done  chan struct{}
	once  sync.Once
}

// TunnelOption configures a Tunnel.
type TunnelOption func(*Tunnel)

// WithTunnelWait sets how long an accepted connection waits for a Tunnel
// call (default DefaultTunnelWait).
func WithTunnelWait(d time.Duration) TunnelOption { return func(t *Tunnel) { t.wait = d } }

// NewTunnel accepts connections on lis until Close, each handed to the next
// Tunnel call that names it; the connections accepted while no call waits
// queue in the listener's backlog.
func NewTunnel(lis net.Listener, opts ...TunnelOption) *Tunnel {
	t := &Tunnel{lis: lis, conns: make(chan net.Conn), wait: DefaultTunnelWait, done: make(chan struct{})}
	for _, o := range opts {
		o(t)
	}
	go t.accept()
	return t
}

// Addr is the listener's address.
func (t *Tunnel) Addr() net.Addr { return t.lis.Addr() }

// Close stops accepting; connections already handed over stay open.
func (t *Tunnel) Close() error {
	t.once.Do(func() { close(t.done) })
	return t.lis.Close()
}

func (t *Tunnel) accept() {
	for {
		c, err := t.lis.Accept()
		if err != nil {
			if errors.Is(err, net.ErrClosed) {
				return
			}
			select {
			case <-t.done:
				return
			case <-time.After(10 * time.Millisecond): // EMFILE and the like pass
			}
			continue
		}
		timer := time.NewTimer(t.wait)
		select {
		case t.conns <- c:
		case <-timer.C:
			c.Close()
		case <-t.done:
			c.Close()
		}
		timer.Stop()
	}
}

// WithTunnels serves Tunnel calls for the listeners by name.
func WithTunnels(tunnels map[string]*Tunnel) Option {
	return func(o *options) { o.tunnels = tunnels }
}

// Tunnel hands the caller the next connection to the named tunnel
// listener and copies its bytes both ways.
func (s *Server) Tunnel(stream daemonv1.Daemon_TunnelServer) error {
	ctx := stream.Context()
	first, err := stream.Recv()
	if err != nil {
		return err
	}
	t := s.cfg.tunnels[first.GetName()]
	if t == nil {
		return status.Errorf(codes.InvalidArgument, "tunnel: no tunnel listener is named %q", first.GetName())
	}
	var conn net.Conn
	select {
	case conn = <-t.conns:
	case <-t.done:
		return status.Errorf(codes.Unavailable, "tunnel %q: the listener is closed", first.GetName())
	case <-ctx.Done():
		return status.FromContextError(ctx.Err()).Err()
	}
	defer conn.Close()
	if err := stream.Send(&daemonv1.TunnelResponse{}); err != nil {
		return err
	}
	if len(first.GetData()) > 0 {
		if _, err := conn.Write(first.GetData()); err != nil {
			return status.Errorf(codes.Aborted, "tunnel: write to the connection: %v", err)
		}
	}

	// Only this goroutine sends, and the handler returns only once it has
	// ended: a stream must not be written after its handler returned.
	sent := make(chan error, 1)
	go func() { sent <- copyToStream(stream, conn) }()
	received := make(chan error, 1)
	go func() { received <- copyFromStream(stream, conn) }()

	select {
	case err := <-sent:
		if err != nil {
			return err
		}
		// The connection sends no more; it may still be read until the
		// caller ends its side.
		select {
		case err := <-received:
			return err
		case <-ctx.Done():
			return status.FromContextError(ctx.Err()).Err()
		}
	case err := <-received:
		if err != nil {
			conn.Close()
			<-sent
			return err
		}
		// The caller wrote everything; the connection's answer still comes.
		select {
		case err := <-sent:
			return err
		case <-ctx.Done():
			conn.Close()
			<-sent
			return status.FromContextError(ctx.Err()).Err()
		}
	}
}

// copyToStream sends what conn reads until its end, then eof.
func copyToStream(stream daemonv1.Daemon_TunnelServer, conn net.Conn) error {
	buf := make([]byte, tunnelChunk)
	for {
		n, err := conn.Read(buf)
		if n > 0 {
			if serr := stream.Send(&daemonv1.TunnelResponse{Data: buf[:n]}); serr != nil {
				return serr
			}
		}
		if errors.Is(err, io.EOF) {
			return stream.Send(&daemonv1.TunnelResponse{Eof: true})
		}
		if err != nil {
			if errors.Is(err, net.ErrClosed) {
				return status.Error(codes.Canceled, "tunnel: connection closed")
			}
			return status.Errorf(codes.Aborted, "tunnel: read the connection: %v", err)
		}
	}
}

// copyFromStream writes the requests' data to conn until the caller ends
// its side, then closes conn for writing.
func copyFromStream(stream daemonv1.Daemon_TunnelServer, conn net.Conn) error {
	for {
		req, err := stream.Recv()
		if errors.Is(err, io.EOF) {
			if cw, ok := conn.(interface{ CloseWrite() error }); ok {
				_ = cw.CloseWrite()
			}
			return nil
		}
		if err != nil {
			return err
		}
		if _, err := conn.Write(req.GetData()); err != nil {
			return status.Errorf(codes.Aborted, "tunnel: write to the connection: %v", err)
		}
	}
}
