package sandbox

import (
	"context"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"time"

	"go.opentelemetry.io/contrib/instrumentation/google.golang.org/grpc/otelgrpc"
	"golang.org/x/sys/unix"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"

	"github.com/wick-agent/wick/daemon/daemonfs"
	daemonv1 "github.com/wick-agent/wick/gen/wick/daemon/v1"
	"github.com/wick-agent/wick/platform/backend"
	"github.com/wick-agent/wick/services/sandbox/internal/dockerbox"
)

// daemonPollInterval paces the wait for a freshly started daemon's socket;
// there is no event to wait on across the container boundary.
const daemonPollInterval = 5 * time.Millisecond

// daemonCommand is the wick-daemon command line of a sandbox.
func (s *Service) daemonCommand(set settings) []string {
	return dockerbox.DaemonCommand(set.Params.Workdir, append([]string{
		"-exec-timeout", set.ExecTimeout.String(), "-max-output-bytes", strconv.FormatInt(set.MaxOutput, 10),
		"-max-processes", strconv.Itoa(s.cfg.MaxProcesses),
		"-process-buffer-bytes", strconv.FormatInt(s.cfg.ProcessBufferBytes, 10)}, append(s.forwardArgs(set), s.traceArgs(set)...)...)...)
}

// injectAndConnect starts the daemon in the running container and waits
// until it answers Health; b.life is held (or b.reinjecting set).
func (s *Service) injectAndConnect(ctx context.Context, b *box) error {
	b.mu.Lock()
	e, id, cu, set := b.engine, b.containerID, b.cuser, b.set
	b.mu.Unlock()
	sock := filepath.Join(b.hostDir, dockerbox.SocketName)
	// The daemon needs the directory writable again to bind a fresh socket.
	if err := s.prepareHostDir(b.hostDir, cu); err != nil {
		return err
	}
	if err := dockerbox.InjectDaemon(ctx, e, id, cu, set.Params.Workdir, s.daemonCommand(set)); err != nil {
		return err
	}
	return s.connect(ctx, b, sock)
}

func (s *Service) connect(ctx context.Context, b *box, sock string) error {
	conn, err := dialSocket(sock, s.meters.dialOptions()...)
	if err != nil {
		return err
	}
	cli := daemonv1.NewDaemonClient(conn)
	deadline := time.Now().Add(s.cfg.DaemonStartTimeout)
	var lastErr error
	for {
		if _, err := os.Lstat(sock); err == nil {
			hc, cancel := context.WithTimeout(ctx, s.cfg.HealthTimeout)
			h, err := cli.Health(hc, &daemonv1.HealthRequest{}, grpc.WaitForReady(true))
			cancel()
			if err == nil {
				if err := s.lockHostDir(b); err != nil {
					conn.Close()
					return err
				}
				if err := s.serveEndpoints(b); err != nil {
					conn.Close()
					return err
				}
				s.attachDaemon(b, conn, cli, h.GetVersion())
				return nil
			}
			lastErr = err
		}
		if time.Now().After(deadline) {
			conn.Close()
			return fmt.Errorf("%w: wick-daemon did not answer within %s: %v", errUnavailable, s.cfg.DaemonStartTimeout, lastErr)
		}
		select {
		case <-ctx.Done():
			conn.Close()
			return ctx.Err()
		case <-time.After(daemonPollInterval):
		}
	}
}

// attachDaemon makes the daemon that answered on conn the running box's
// transport, closing the connection it replaces.
func (s *Service) attachDaemon(b *box, conn *grpc.ClientConn, cli daemonv1.DaemonClient, version string) {
	b.mu.Lock()
	old := b.conn
	b.conn, b.daemon, b.version = conn, daemonfs.New(cli, daemonfs.WithMaxOutputBytes(s.cfg.MaxOutputCap)), version
	b.state, b.transport = stateRunning, transportDaemon
	b.mu.Unlock()
	if old != nil {
		old.Close()
	}
}

// dialSocket opens a lazy client of a daemon socket. The sandbox can write
// the socket's directory (its daemon binds the socket there), so it could
// swap the socket for a symlink to another sandbox's socket, whose host path
// is predictable. The dialer therefore pins the file it checks: it opens the
// last path component without following it, checks that descriptor is a
// socket, and connects through the descriptor itself, so no swap can come
// between check and connect.
func dialSocket(sock string, extra ...grpc.DialOption) (*grpc.ClientConn, error) {
	dialer := func(ctx context.Context, _ string) (net.Conn, error) {
		return dialPinned(ctx, sock)
	}
	return grpc.NewClient("passthrough:///wick-daemon", append([]grpc.DialOption{
		grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithContextDialer(dialer),
		// The daemon hop belongs to the caller's trace like every other hop.
		grpc.WithStatsHandler(otelgrpc.NewClientHandler()),
		grpc.WithDefaultCallOptions(grpc.MaxCallRecvMsgSize(32<<20), grpc.MaxCallSendMsgSize(32<<20)),
	}, extra...)...)
}

// dialPinned connects to the Unix socket at path if, and only if, path
// itself (not a symlink's target) is a socket.
func dialPinned(ctx context.Context, path string) (net.Conn, error) {
	p, err := pinSocket(path)
	if err != nil {
		return nil, err
	}
	defer p.close()
	return p.dial(ctx)
}

// pinnedSocket is a descriptor of a socket file that was checked to be one.
type pinnedSocket struct{ fd int }

// pinSocket opens path without following a symlink in its last component
// and checks that it is a socket.
func pinSocket(path string) (*pinnedSocket, error) {
	fd, err := unix.Open(path, unix.O_PATH|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, &os.PathError{Op: "open", Path: path, Err: err}
	}
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		unix.Close(fd)
		return nil, &os.PathError{Op: "stat", Path: path, Err: err}
	}
	if st.Mode&unix.S_IFMT != unix.S_IFSOCK {
		unix.Close(fd)
		return nil, fmt.Errorf("%s is not a socket", path)
	}
	return &pinnedSocket{fd: fd}, nil
}

// dial connects to the pinned socket: /proc/self/fd/N names the very inode
// that was checked, whatever its path names now.
func (p *pinnedSocket) dial(ctx context.Context) (net.Conn, error) {
	var d net.Dialer
	return d.DialContext(ctx, "unix", "/proc/self/fd/"+strconv.Itoa(p.fd))
}

func (p *pinnedSocket) close() { unix.Close(p.fd) }

// fallback records that the daemon did not answer a call, which then takes
// Docker exec, and re-injects the daemon in the background.
func (s *Service) fallback(b *box, op string) {
	s.meters.fellBack(op)
	if s.onFallback != nil {
		s.onFallback(op)
	}
	b.mu.Lock()
	kube, seen := b.set.onKube(), b.containerID
	if b.transport == transportDaemon && !kube {
		b.transport = transportExec
	}
	b.mu.Unlock()
	if kube {
		s.log.Warn("wick-daemon of a sandbox pod not answering; checking the pod", "agent", b.agent, "op", op)
		s.mu.Lock()
		if s.closed {
			s.mu.Unlock()
			return
		}
		s.bg.Add(1)
		s.mu.Unlock()
		go func() {
			defer s.bg.Done()
			s.reviveKube(s.bgCtx, b, seen)
		}()
		return
	}
	s.log.Warn("wick-daemon not answering; using docker exec", "agent", b.agent, "op", op)
	s.reinject(b)
}

// Bounds of the back-off between failed re-injections.
const (
	reinjectBackoffMin = time.Second
	reinjectBackoffMax = 5 * time.Minute
)

// reinject brings the daemon back, one attempt at a time per sandbox, backing
// off after failures. A container that stopped running is marked stopped, so
// the next call starts it again.
func (s *Service) reinject(b *box) {
	b.mu.Lock()
	if b.reinjecting || b.state != stateRunning || b.set.DockerHost != "" || b.set.Type != backend.Docker || b.set.onKube() ||
		s.now().Before(b.reinjectAfter) {
		b.mu.Unlock()
		return
	}
	b.reinjecting = true
	b.mu.Unlock()
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		b.mu.Lock()
		b.reinjecting = false
		b.mu.Unlock()
		return
	}
	s.bg.Add(1)
	s.mu.Unlock()
	go func() {
		defer s.bg.Done()
		ok := false
		defer func() {
			b.mu.Lock()
			b.reinjecting = false
			if ok {
				b.backoff, b.reinjectAfter = 0, time.Time{}
			} else {
				b.backoff = min(max(2*b.backoff, reinjectBackoffMin), reinjectBackoffMax)
				b.reinjectAfter = s.now().Add(b.backoff)
			}
			b.mu.Unlock()
		}()
		b.life.Lock()
		defer b.life.Unlock()
		b.mu.Lock()
		running, e, id := b.state == stateRunning, b.engine, b.containerID
		b.mu.Unlock()
		if !running {
			ok = true
			return
		}
		ctx, cancel := context.WithTimeout(s.bgCtx, s.cfg.DaemonStartTimeout+5*time.Second)
		defer cancel()
		if in, err := e.ContainerInspect(ctx, id); dockerbox.IsNotFound(err) || err == nil && (in.State == nil || !in.State.Running) {
			s.log.Warn("sandbox container is gone; marking the sandbox stopped", "agent", b.agent)
			ok = s.stop(ctx, b) == nil
			return
		}
		if err := s.injectAndConnect(ctx, b); err != nil {
			s.log.Error("re-inject wick-daemon", "agent", b.agent, "err", err)
			return
		}
		ok = true
		s.log.Info("wick-daemon re-injected", "agent", b.agent)
	}()
}
