package tunnel_test

import (
	"bytes"
	"context"
	"crypto/rand"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/wick-agent/wick/daemon/daemonfs"
	"github.com/wick-agent/wick/daemon/server"
	daemonv1 "github.com/wick-agent/wick/gen/wick/daemon/v1"
	"github.com/wick-agent/wick/services/sandbox/internal/tunnel"
	"github.com/wick-agent/wick/wickfs"
)

// sandbox is a daemon served over real gRPC on a Unix socket with one
// tunnel listener on loopback: addr is where a program "inside the
// sandbox" connects.
type sandbox struct {
	client daemonv1.DaemonClient
	addr   string
	stop   func()
}

func startDaemon(t *testing.T, name string) *sandbox { return startDaemonB(t, name) }

func startDaemonB(t testing.TB, name string) *sandbox {
	t.Helper()
	local, err := wickfs.NewLocalFS(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { local.Close() })
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	tun := server.NewTunnel(lis)
	g := grpc.NewServer(server.GRPCOptions()...)
	srv := server.New(local, server.WithTunnels(map[string]*server.Tunnel{name: tun}))
	srv.Register(g)
	sock := filepath.Join(t.TempDir(), "d.sock")
	ul, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	go func() { _ = g.Serve(ul) }()
	var once sync.Once
	stop := func() {
		once.Do(func() {
			g.Stop()
			tun.Close()
			srv.Close()
		})
	}
	t.Cleanup(stop)
	conn, err := daemonfs.Dial(context.Background(), sock, "")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	return &sandbox{client: daemonv1.NewDaemonClient(conn), addr: tun.Addr().String(), stop: stop}
}

// serve serves h on a Listener of the tunnel, asking current for the client.
func serve(t *testing.T, current func() daemonv1.DaemonClient, h http.Handler) {
	t.Helper()
	l := tunnel.Listen("web", current, slog.New(slog.DiscardHandler))
	srv := &http.Server{Handler: h}
	go func() { _ = srv.Serve(l) }()
	t.Cleanup(func() {
		srv.Close()
		l.Wait()
	})
}

func echo() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("X-Path", r.URL.Path)
		_, _ = io.Copy(w, r.Body)
	})
}

func TestHTTPThroughTheTunnel(t *testing.T) {
	sb := startDaemon(t, "web")
	serve(t, func() daemonv1.DaemonClient { return sb.client }, echo())
	client := &http.Client{Transport: &http.Transport{MaxConnsPerHost: 8}}
	t.Cleanup(client.CloseIdleConnections)

	big := make([]byte, 3<<20)
	_, _ = rand.Read(big)
	var wg sync.WaitGroup
	for i := range 24 {
		wg.Go(func() {
			body := []byte(fmt.Sprintf("request %d", i))
			if i%6 == 0 {
				body = big // both directions well past one chunk and one window
			}
			resp, err := client.Post("http://"+sb.addr+fmt.Sprintf("/r/%d", i), "application/octet-stream", bytes.NewReader(body))
			if err != nil {
				t.Errorf("request %d: %v", i, err)
				return
			}
			defer resp.Body.Close()
			got, err := io.ReadAll(resp.Body)
			if err != nil {
				t.Errorf("request %d: read: %v", i, err)
				return
			}
			if resp.Header.Get("X-Path") != fmt.Sprintf("/r/%d", i) || !bytes.Equal(got, body) {
				t.Errorf("request %d: path %q, %d bytes back of %d (equal %v)", i, resp.Header.Get("X-Path"), len(got), len(body), bytes.Equal(got, body))
			}
		})
	}
	wg.Wait()
}

// TestHalfClose: a client that sends everything and closes its writing side
// still gets the whole answer, then the end of the stream.
func TestHalfClose(t *testing.T) {
	sb := startDaemon(t, "web")
	l := tunnel.Listen("web", func() daemonv1.DaemonClient { return sb.client }, slog.New(slog.DiscardHandler))
	t.Cleanup(func() {
		l.Close()
		l.Wait()
	})
	served := make(chan error, 1)
	go func() {
		c, err := l.Accept()
		if err != nil {
			served <- err
			return
		}
		defer c.Close()
		// Reads to the end first, so nothing is answered before the client's
		// half-close arrives.
		in, err := io.ReadAll(c)
		if err == nil {
			_, err = c.Write(bytes.ToUpper(in))
		}
		served <- err
	}()
	c, err := net.Dial("tcp", sb.addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if _, err := c.Write([]byte("hello tunnel")); err != nil {
		t.Fatal(err)
	}
	if err := c.(*net.TCPConn).CloseWrite(); err != nil {
		t.Fatal(err)
	}
	got, err := io.ReadAll(c)
	if err != nil || string(got) != "HELLO TUNNEL" {
		t.Fatalf("got %q, %v; want the answer after the half-close", got, err)
	}
	if err := <-served; err != nil {
		t.Fatalf("server side: %v", err)
	}
}

// TestFollowsANewDaemon: the listener keeps serving across a daemon that
// went away and a new one that answers in its place.
func TestFollowsANewDaemon(t *testing.T) {
	first := startDaemon(t, "web")
	var current atomic.Pointer[sandbox]
	current.Store(first)
	serve(t, func() daemonv1.DaemonClient { return current.Load().client }, echo())
	get := func(sb *sandbox) string {
		t.Helper()
		c := &http.Client{Transport: &http.Transport{DisableKeepAlives: true}}
		resp, err := c.Get("http://" + sb.addr + "/ping")
		if err != nil {
			t.Fatalf("GET through %s: %v", sb.addr, err)
		}
		defer resp.Body.Close()
		return resp.Header.Get("X-Path")
	}
	if got := get(first); got != "/ping" {
		t.Fatalf("first daemon: path %q", got)
	}
	first.stop()
	second := startDaemon(t, "web")
	current.Store(second)
	if got := get(second); got != "/ping" {
		t.Fatalf("second daemon: path %q", got)
	}
}

// TestUnknownTunnel: a daemon without the tunnel refuses the call by name,
// and the listener keeps waiting rather than failing its server.
func TestUnknownTunnel(t *testing.T) {
	sb := startDaemon(t, "web")
	st, err := sb.client.Tunnel(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if err := st.Send(&daemonv1.TunnelRequest{Name: "model"}); err != nil {
		t.Fatal(err)
	}
	_, err = st.Recv()
	if status.Code(err) != codes.InvalidArgument || !strings.Contains(err.Error(), `no tunnel listener is named "model"`) {
		t.Fatalf("got %v, want InvalidArgument naming the tunnel", err)
	}
}

// BenchmarkTunnelRequest is one small HTTP request on a kept-alive
// connection through a daemon tunnel (loopback into the daemon, a Tunnel
// call over gRPC on a Unix socket, an http.Server on the service's side).
func BenchmarkTunnelRequest(b *testing.B) {
	sb := startDaemonB(b, "web")
	l := tunnel.Listen("web", func() daemonv1.DaemonClient { return sb.client }, slog.New(slog.DiscardHandler))
	srv := &http.Server{Handler: echo()}
	go func() { _ = srv.Serve(l) }()
	b.Cleanup(func() { srv.Close() })
	client := &http.Client{}
	b.Cleanup(client.CloseIdleConnections)
	url := "http://" + sb.addr + "/ping"
	for b.Loop() {
		resp, err := client.Get(url)
		if err != nil {
			b.Fatal(err)
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
	}
}
