// Package forward offers a Unix socket of the sandbox service as a TCP port
// on the container's loopback: a sandbox with no network still has its own
// loopback, and programs that speak HTTP to a base URL (an SDK's
// ANTHROPIC_BASE_URL, an HTTP proxy) cannot speak to a Unix socket.
package forward

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"strconv"
	"strings"
	"sync"
)

// Rule is one forwarded port: 127.0.0.1:Port to the Unix socket Socket.
type Rule struct {
	Port   int
	Socket string
}

// ParseRule reads "port=/path/to.sock".
func ParseRule(s string) (Rule, error) {
	p, sock, ok := strings.Cut(s, "=")
	port, err := strconv.Atoi(p)
	if !ok || err != nil || port < 1 || port > 65535 || !strings.HasPrefix(sock, "/") {
		return Rule{}, fmt.Errorf("forward %q: want port=/absolute/socket/path", s)
	}
	return Rule{Port: port, Socket: sock}, nil
}

// Serve listens on 127.0.0.1:r.Port and copies every connection to a new
// connection on r.Socket until ctx ends. The socket is dialled per
// connection, so the service may bind it after the daemon starts and bind it
// again after its own restart.
func Serve(ctx context.Context, r Rule, log *slog.Logger) error {
	var lc net.ListenConfig
	lis, err := lc.Listen(ctx, "tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(r.Port)))
	if err != nil {
		return fmt.Errorf("forward: %w", err)
	}
	var wg sync.WaitGroup
	stop := context.AfterFunc(ctx, func() { lis.Close() })
	defer stop()
	defer wg.Wait()
	for {
		c, err := lis.Accept()
		if err != nil {
			if ctx.Err() != nil || errors.Is(err, net.ErrClosed) {
				return nil
			}
			return fmt.Errorf("forward: %w", err)
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			pipe(ctx, c, r.Socket, log)
		}()
	}
}

// pipe copies c to and from a new connection on sock. The caller's end of
// input is passed on as a half close, so a request without a length still
// ends; the service's end of output ends both.
func pipe(ctx context.Context, c net.Conn, sock string, log *slog.Logger) {
	defer c.Close()
	var d net.Dialer
	u, err := d.DialContext(ctx, "unix", sock)
	if err != nil {
		log.Warn("forward: the service's socket does not answer", "socket", sock, "err", err)
		return
	}
	defer u.Close()
	stop := context.AfterFunc(ctx, func() { c.Close(); u.Close() })
	defer stop()
	done := make(chan struct{})
	go func() {
		defer close(done)
		_, _ = io.Copy(u, c)
		_ = u.(*net.UnixConn).CloseWrite()
	}()
	_, _ = io.Copy(c, u)
	c.Close()
	u.Close()
	<-done
}
