// Package endpoint serves an HTTP handler of the sandbox service to one
// sandbox: on a Unix socket in the sandbox's socket directory (a Docker
// sandbox, where wick-daemon offers it as a loopback port) or on a host
// loopback port (a local sandbox, whose Landlock policy opens that port).
package endpoint

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"net/http"
	"os"
	"time"

	"golang.org/x/sys/unix"
)

// Server is one handler served on one listener until Close.
type Server struct {
	lis  net.Listener
	srv  *http.Server
	path string
	// dev and ino identify the socket file this server bound.
	dev, ino uint64
}

// ListenUnix serves h on a Unix socket at path, replacing what is there
// (not a directory). The socket is open to every user: the sandbox's user
// must connect to it, and the directory, mounted into that one sandbox only,
// is what limits who can.
func ListenUnix(path string, h http.Handler) (*Server, error) {
	if fi, err := os.Lstat(path); err == nil {
		if fi.IsDir() {
			return nil, fmt.Errorf("endpoint socket %s is a directory", path)
		}
		// os.Remove does not follow a symlink: only the link goes.
		if err := os.Remove(path); err != nil {
			return nil, fmt.Errorf("endpoint socket: %w", err)
		}
	}
	lis, err := net.Listen("unix", path)
	if err != nil {
		return nil, fmt.Errorf("endpoint socket: %w", err)
	}
	// Closing must not unlink a file that replaced this one.
	lis.(*net.UnixListener).SetUnlinkOnClose(false)
	if err := os.Chmod(path, 0o666); err != nil {
		lis.Close()
		return nil, fmt.Errorf("endpoint socket: %w", err)
	}
	var st unix.Stat_t
	if err := unix.Lstat(path, &st); err != nil {
		lis.Close()
		return nil, fmt.Errorf("endpoint socket: %w", err)
	}
	s := &Server{lis: lis, path: path, dev: uint64(st.Dev), ino: st.Ino}
	s.serve(h)
	return s, nil
}

// ListenLoopback serves h on a free port of 127.0.0.1.
func ListenLoopback(h http.Handler) (*Server, error) {
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("endpoint port: %w", err)
	}
	return Serve(lis, h), nil
}

// Serve serves h on lis, which the Server then owns.
func Serve(lis net.Listener, h http.Handler) *Server {
	s := &Server{lis: lis}
	s.serve(h)
	return s
}

func (s *Server) serve(h http.Handler) {
	// No WriteTimeout: a model's streamed answer may take minutes. An idle
	// kept-alive connection is closed after a while: through a tunnel it
	// holds a call open.
	s.srv = &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second, IdleTimeout: 5 * time.Minute}
	go func() { _ = s.srv.Serve(s.lis) }()
}

// Port is the TCP port of a loopback server; 0 for a Unix socket.
func (s *Server) Port() int {
	if a, ok := s.lis.Addr().(*net.TCPAddr); ok {
		return a.Port
	}
	return 0
}

// Intact reports whether the socket path still names the socket this
// server bound. Whoever can write the directory could remove or replace it;
// the service then binds a new one.
func (s *Server) Intact() bool {
	if s.path == "" {
		return true
	}
	var st unix.Stat_t
	if err := unix.Lstat(s.path, &st); err != nil {
		return false
	}
	return st.Mode&unix.S_IFMT == unix.S_IFSOCK && uint64(st.Dev) == s.dev && st.Ino == s.ino
}

// Close stops serving, ending requests in flight, and removes the socket
// file if it is still this server's.
func (s *Server) Close() error {
	intact := s.Intact()
	err := s.srv.Close()
	if s.path != "" && intact {
		if rerr := os.Remove(s.path); rerr != nil && !errors.Is(rerr, fs.ErrNotExist) {
			err = errors.Join(err, rerr)
		}
	}
	return err
}

// Shutdown is Close after the requests in flight finish or ctx ends.
func (s *Server) Shutdown(ctx context.Context) error {
	if err := s.srv.Shutdown(ctx); err != nil {
		return errors.Join(err, s.Close())
	}
	return s.Close()
}
