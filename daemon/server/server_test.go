package server_test

import (
	"context"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc"

	"github.com/wick-agent/wick/daemon/daemonfs"
	"github.com/wick-agent/wick/daemon/server"
	daemonv1 "github.com/wick-agent/wick/gen/wick/daemon/v1"
	"github.com/wick-agent/wick/wickfs"
)

type daemon struct {
	client daemonv1.DaemonClient
	fs     *daemonfs.FS
	dir    string
	local  *wickfs.LocalFS
	srv    *server.Server
}

type config struct {
	files  map[string]string
	local  []wickfs.LocalOption
	server []server.Option
	grpc   []grpc.ServerOption
}

// start serves a daemon on a Unix socket in a temporary directory and
// returns a generated client connected to it.
func start(t testing.TB, c config) *daemon {
	t.Helper()
	dir := t.TempDir()
	writeTree(t, dir, c.files)
	local, err := wickfs.NewLocalFS(dir, c.local...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { local.Close() })
	g := grpc.NewServer(append(server.GRPCOptions(), c.grpc...)...)
	srv := server.New(local, c.server...)
	srv.Register(g)
	t.Cleanup(srv.Close)
	sock := filepath.Join(t.TempDir(), "d.sock")
	lis, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	go func() { _ = g.Serve(lis) }()
	t.Cleanup(g.Stop)
	conn, err := daemonfs.Dial(context.Background(), sock, "")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	client := daemonv1.NewDaemonClient(conn)
	return &daemon{client: client, fs: daemonfs.New(client), dir: dir, local: local, srv: srv}
}

func writeTree(t testing.TB, dir string, files map[string]string) {
	t.Helper()
	for p, content := range files {
		full := filepath.Join(dir, filepath.FromSlash(p))
		if strings.HasSuffix(p, "/") {
			if err := os.MkdirAll(full, 0o755); err != nil {
				t.Fatal(err)
			}
			continue
		}
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(full, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// groupAlive reports whether any live (non-zombie) process is in group pgid.
func groupAlive(pgid int) bool {
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		if _, err := strconv.Atoi(e.Name()); err != nil {
			continue
		}
		b, err := os.ReadFile("/proc/" + e.Name() + "/stat")
		if err != nil {
			continue
		}
		s := string(b)
		i := strings.LastIndexByte(s, ')')
		if i < 0 {
			continue
		}
		f := strings.Fields(s[i+1:])
		if len(f) < 3 || f[0] == "Z" {
			continue
		}
		if g, _ := strconv.Atoi(f[2]); g == pgid {
			return true
		}
	}
	return false
}

func noTempFiles(dir string) bool {
	found := false
	_ = filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err == nil && strings.HasPrefix(d.Name(), ".wickfs-tmp-") {
			found = true
		}
		return nil
	})
	return !found
}

// testCtx bounds a streaming call, so a broken stream fails the test instead
// of hanging it.
func testCtx(t testing.TB) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	t.Cleanup(cancel)
	return ctx
}
