package endpoint

import (
	"context"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"testing"
)

var hello = http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { _, _ = io.WriteString(w, "hello") })

func get(t *testing.T, dial func(ctx context.Context, _, _ string) (net.Conn, error)) string {
	t.Helper()
	c := &http.Client{Transport: &http.Transport{DialContext: dial}}
	resp, err := c.Get("http://endpoint/")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return string(b)
}

// TestListenUnix: what was at the path is replaced (a symlink only as a
// link); a replacement of the socket is seen and left alone by Close.
func TestListenUnix(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	target := filepath.Join(dir, "target")
	if err := os.WriteFile(target, []byte("keep"), 0o600); err != nil {
		t.Fatal(err)
	}
	sock := filepath.Join(dir, "model.sock")
	if err := os.Symlink(target, sock); err != nil {
		t.Fatal(err)
	}
	s, err := ListenUnix(sock, hello)
	if err != nil {
		t.Fatal(err)
	}
	if b, err := os.ReadFile(target); err != nil || string(b) != "keep" {
		t.Fatalf("the symlink's target was touched: %q %v", b, err)
	}
	if fi, err := os.Stat(sock); err != nil || fi.Mode().Perm() != 0o666 || fi.Mode()&os.ModeSocket == 0 {
		t.Fatalf("socket %v %v", fi, err)
	}
	if got := get(t, func(ctx context.Context, _, _ string) (net.Conn, error) {
		return (&net.Dialer{}).DialContext(ctx, "unix", sock)
	}); got != "hello" {
		t.Fatalf("got %q", got)
	}
	if !s.Intact() {
		t.Fatal("fresh socket not intact")
	}
	// Replaced, as whoever can write the directory could.
	if err := os.Remove(sock); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(sock, []byte("theirs"), 0o600); err != nil {
		t.Fatal(err)
	}
	if s.Intact() {
		t.Fatal("a replaced socket is reported intact")
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if b, err := os.ReadFile(sock); err != nil || string(b) != "theirs" {
		t.Fatalf("Close removed what replaced its socket: %q %v", b, err)
	}
	if _, err := ListenUnix(dir, hello); err == nil {
		t.Fatal("a directory was replaced")
	}
}

func TestListenLoopback(t *testing.T) {
	t.Parallel()
	s, err := ListenLoopback(hello)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	if s.Port() == 0 || !s.Intact() {
		t.Fatalf("port %d intact %v", s.Port(), s.Intact())
	}
	if got := get(t, func(ctx context.Context, _, _ string) (net.Conn, error) {
		return (&net.Dialer{}).DialContext(ctx, "tcp", "127.0.0.1:"+strconv.Itoa(s.Port()))
	}); got != "hello" {
		t.Fatalf("got %q", got)
	}
}
