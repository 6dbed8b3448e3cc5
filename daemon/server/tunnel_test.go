package server_test

import (
	"io"
	"net"
	"testing"
	"time"

	"github.com/wick-agent/wick/daemon/server"
)

// TestTunnelWaitBound: a connection nobody takes is closed after the wait,
// so a client in the sandbox fails rather than hangs.
func TestTunnelWaitBound(t *testing.T) {
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	tun := server.NewTunnel(lis, server.WithTunnelWait(20*time.Millisecond))
	t.Cleanup(func() { tun.Close() })
	start(t, config{server: []server.Option{server.WithTunnels(map[string]*server.Tunnel{"web": tun})}})
	c, err := net.Dial("tcp", tun.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if err := c.SetReadDeadline(time.Now().Add(time.Minute)); err != nil {
		t.Fatal(err)
	}
	if n, err := c.Read(make([]byte, 1)); err != io.EOF {
		t.Fatalf("read %d bytes, %v; want the connection closed (EOF)", n, err)
	}
}
