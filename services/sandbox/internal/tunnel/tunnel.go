// Package tunnel serves connections made inside a sandbox that the service
// reaches only through its daemon (a Kubernetes pod, dialled through the API
// server): wick-daemon listens on the sandbox's loopback (-tunnel) and hands
// each connection to a Tunnel call, which this package's Listener makes and
// turns into a net.Conn for an ordinary server such as http.Server.
package tunnel

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"sync"
	"time"

	"golang.org/x/sys/unix"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	daemonv1 "github.com/wick-agent/wick/gen/wick/daemon/v1"
)

// Bounds of a Listener.
const (
	// chunk bounds the data of one TunnelRequest.
	chunk = 32 << 10
	// closeGrace is how long a connection the server closed may take to
	// deliver what was written to it before the call is cancelled.
	closeGrace = 10 * time.Second
	// maxBackoff bounds the wait between failed Tunnel calls (a daemon
	// restarting, a pod being replaced).
	maxBackoff = 2 * time.Second
)

// Listener accepts the connections of one daemon tunnel. Its Accept makes
// one Tunnel call at a time and returns when the daemon pairs it with a
// connection, so a server's accept loop keeps exactly one call waiting.
type Listener struct {
	name   string
	client func() daemonv1.DaemonClient
	log    *slog.Logger
	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup
}

// Listen returns a Listener of the daemon's tunnel name. client is asked
// for the daemon's current client at every call, so the listener follows a
// daemon that was replaced; nil means none is connected yet.
func Listen(name string, client func() daemonv1.DaemonClient, log *slog.Logger) *Listener {
	ctx, cancel := context.WithCancel(context.Background())
	return &Listener{name: name, client: client, log: log, ctx: ctx, cancel: cancel}
}

// Accept waits for the next connection to the tunnel. Failed calls are
// retried with a growing pause until Close.
func (l *Listener) Accept() (net.Conn, error) {
	backoff := 50 * time.Millisecond
	for {
		if l.ctx.Err() != nil {
			return nil, net.ErrClosed
		}
		if cli := l.client(); cli != nil {
			c, err := l.call(cli)
			if err == nil {
				return c, nil
			}
			if l.ctx.Err() != nil {
				return nil, net.ErrClosed
			}
			if status.Code(err) == codes.InvalidArgument || status.Code(err) == codes.Unimplemented {
				// A daemon without this tunnel: the next call would fail alike
				// until the daemon is replaced, so wait the longest.
				backoff = maxBackoff
			}
			l.log.Debug("tunnel call failed", "tunnel", l.name, "err", err)
		}
		select {
		case <-l.ctx.Done():
			return nil, net.ErrClosed
		case <-time.After(backoff):
		}
		backoff = min(2*backoff, maxBackoff)
	}
}

// call makes one Tunnel call and waits for its connection.
func (l *Listener) call(cli daemonv1.DaemonClient) (net.Conn, error) {
	ctx, cancel := context.WithCancel(l.ctx)
	st, err := cli.Tunnel(ctx)
	if err == nil {
		err = st.Send(&daemonv1.TunnelRequest{Name: l.name})
	}
	if err == nil {
		_, err = st.Recv()
	}
	if err != nil {
		cancel()
		return nil, err
	}
	mine, theirs, err := socketPair()
	if err != nil {
		cancel()
		return nil, err
	}
	ended := make(chan struct{})
	l.wg.Add(2)
	go func() {
		defer l.wg.Done()
		defer close(ended)
		fromStream(st, theirs)
	}()
	go func() {
		defer l.wg.Done()
		defer cancel()
		toStream(st, theirs)
		// The server closed its end: what it wrote may still be in flight,
		// and the call ends once the daemon has written it out.
		t := time.NewTimer(closeGrace)
		defer t.Stop()
		select {
		case <-ended:
		case <-t.C:
		}
	}()
	return mine, nil
}

// socketPair is a connected pair of Unix stream sockets: unlike net.Pipe
// they buffer, close for writing alone, and keep deadlines, which an
// http.Server relies on.
func socketPair() (mine, theirs *net.UnixConn, err error) {
	fds, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return nil, nil, fmt.Errorf("tunnel: socketpair: %w", err)
	}
	conns := make([]*net.UnixConn, 2)
	for i, fd := range fds {
		f := os.NewFile(uintptr(fd), "tunnel")
		c, cerr := net.FileConn(f) // a duplicate of fd
		f.Close()
		if cerr != nil {
			err = errors.Join(err, cerr)
			continue
		}
		conns[i] = c.(*net.UnixConn)
	}
	if err != nil {
		for _, c := range conns {
			if c != nil {
				c.Close()
			}
		}
		return nil, nil, fmt.Errorf("tunnel: socketpair: %w", err)
	}
	return conns[0], conns[1], nil
}

// fromStream writes what the daemon sends to p until the call ends; when the
// sandbox's side sends no more, p is closed for writing (the server reads
// its end) while the server may still answer.
func fromStream(st daemonv1.Daemon_TunnelClient, p *net.UnixConn) {
	defer p.Close()
	for {
		m, err := st.Recv()
		if err != nil {
			return
		}
		if len(m.GetData()) > 0 {
			if _, err := p.Write(m.GetData()); err != nil {
				return
			}
		}
		if m.GetEof() {
			_ = p.CloseWrite()
		}
	}
}

// toStream sends what the server writes to p until its end, then ends the
// request side, which closes the connection for writing.
func toStream(st daemonv1.Daemon_TunnelClient, p *net.UnixConn) {
	buf := make([]byte, chunk)
	for {
		n, err := p.Read(buf)
		if n > 0 {
			if serr := st.Send(&daemonv1.TunnelRequest{Data: buf[:n]}); serr != nil {
				p.Close()
				return
			}
		}
		if err != nil {
			_ = st.CloseSend()
			return
		}
	}
}

// Close stops accepting and cancels every connection's call.
func (l *Listener) Close() error {
	l.cancel()
	return nil
}

// Wait returns once every connection's copying has ended (after Close).
func (l *Listener) Wait() { l.wg.Wait() }

// Addr is a placeholder address naming the tunnel.
func (l *Listener) Addr() net.Addr { return addr(l.name) }

type addr string

func (addr) Network() string  { return "wick-tunnel" }
func (a addr) String() string { return string(a) }
