package sandbox

import (
	"context"
	"net"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
)

// listenUnix serves a Unix socket that counts its connections.
func listenUnix(t *testing.T, path string) *atomic.Int64 {
	t.Helper()
	lis, err := net.Listen("unix", path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { lis.Close() })
	var n atomic.Int64
	go func() {
		for {
			c, err := lis.Accept()
			if err != nil {
				return
			}
			n.Add(1)
			c.Close()
		}
	}()
	return &n
}

// A sandbox can write its socket directory, so it can replace its socket
// with a symlink to another sandbox's socket at any moment. The dialer must
// never reach the other socket, however the swap is timed against it.
func TestDaemonSocketCannotBeRedirected(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	mine, other := filepath.Join(dir, "mine"), filepath.Join(dir, "other")
	for _, d := range []string{mine, other} {
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	sock, otherSock := filepath.Join(mine, "wick.sock"), filepath.Join(other, "wick.sock")
	mineHits := listenUnix(t, sock)
	otherHits := listenUnix(t, otherSock)
	ctx := context.Background()

	// A static symlink is refused outright.
	link := filepath.Join(mine, "link.sock")
	if err := os.Symlink(otherSock, link); err != nil {
		t.Fatal(err)
	}
	if c, err := dialPinned(ctx, link); err == nil {
		c.Close()
		t.Fatal("dialled through a symlink")
	}

	// The real socket answers.
	c, err := dialPinned(ctx, sock)
	if err != nil {
		t.Fatalf("dial the real socket: %v", err)
	}
	c.Close()

	// The swap that comes after the check and before the connect: the
	// connection still reaches the socket that was checked.
	pinned, err := pinSocket(sock)
	if err != nil {
		t.Fatal(err)
	}
	moved := filepath.Join(mine, "moved.sock")
	if err := os.Rename(sock, moved); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(otherSock, sock); err != nil {
		t.Fatal(err)
	}
	c, err = pinned.dial(ctx)
	pinned.close()
	if err != nil {
		t.Fatalf("dial the pinned socket: %v", err)
	}
	c.Close()
	if err := os.Remove(sock); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(moved, sock); err != nil {
		t.Fatal(err)
	}

	// Swap the socket and the symlink back and forth (rename is atomic)
	// while dialling: every dial reaches this sandbox's socket or fails.
	real := filepath.Join(mine, "real.sock")
	var wg sync.WaitGroup
	stop := make(chan struct{})
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			select {
			case <-stop:
				return
			default:
			}
			os.Rename(sock, real)
			os.Rename(link, sock)
			os.Rename(sock, link)
			os.Rename(real, sock)
		}
	}()
	for range 3000 {
		if c, err := dialPinned(ctx, sock); err == nil {
			c.Close()
		}
	}
	close(stop)
	wg.Wait()
	if n := otherHits.Load(); n != 0 {
		t.Fatalf("the other sandbox's socket was reached %d times", n)
	}
	if mineHits.Load() < 2 {
		t.Fatalf("this sandbox's socket was reached %d times", mineHits.Load())
	}
}
