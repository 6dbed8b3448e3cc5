package sandbox

import (
	"context"
	"fmt"
	"net"
	"os"
	"path/filepath"

	"google.golang.org/grpc"

	daemonserver "github.com/wick-agent/wick/daemon/server"
	daemonv1 "github.com/wick-agent/wick/gen/wick/daemon/v1"
	"github.com/wick-agent/wick/wickfs"
)

// localHost serves one local sandbox's workdir with the daemon's own gRPC
// server on a Unix socket under the state dir, so local and Docker sandboxes
// are reached through the same daemonv1 client code.
type localHost struct {
	srv  *grpc.Server
	fs   *wickfs.LocalFS
	done chan struct{}
}

func (h *localHost) close() {
	h.srv.Stop()
	<-h.done
	h.fs.Close()
}

// startLocal brings up a local sandbox; b.life is held.
func (s *Service) startLocal(b *box) error {
	dir := filepath.Join(s.cfg.StateDir, "local", b.key)
	ws := filepath.Join(dir, "workspace")
	if err := os.MkdirAll(ws, 0o700); err != nil {
		return fmt.Errorf("local workdir: %w", err)
	}
	b.mu.Lock()
	set := b.set
	b.mu.Unlock()
	fs, err := wickfs.NewLocalFS(ws, wickfs.WithPrefix(set.Params.Workdir),
		wickfs.WithExecTimeout(set.ExecTimeout), wickfs.WithMaxOutputBytes(set.MaxOutput))
	if err != nil {
		return fmt.Errorf("local workdir: %w", err)
	}
	sock := filepath.Join(dir, "daemon.sock")
	_ = os.Remove(sock)
	lis, err := net.Listen("unix", sock)
	if err != nil {
		fs.Close()
		return fmt.Errorf("local sandbox socket: %w", err)
	}
	srv := grpc.NewServer(grpc.MaxRecvMsgSize(32 << 20))
	daemonserver.New(fs).Register(srv)
	h := &localHost{srv: srv, fs: fs, done: make(chan struct{})}
	go func() {
		defer close(h.done)
		_ = srv.Serve(lis)
	}()
	conn, err := dialSocket(sock)
	if err != nil {
		h.close()
		return err
	}
	ctx, cancel := context.WithTimeout(context.Background(), s.cfg.HealthTimeout)
	defer cancel()
	cli := daemonv1.NewDaemonClient(conn)
	hr, err := cli.Health(ctx, &daemonv1.HealthRequest{}, grpc.WaitForReady(true))
	if err != nil {
		conn.Close()
		h.close()
		return fmt.Errorf("local sandbox: %w", err)
	}
	b.mu.Lock()
	b.local, b.conn, b.daemon, b.version = h, conn, cli, hr.GetVersion()
	b.state, b.transport, b.containerID = stateRunning, transportLocal, ""
	b.mu.Unlock()
	return nil
}
