package forward

import (
	"context"
	"io"
	"log/slog"
	"net"
	"path/filepath"
	"strconv"
	"testing"
)

func TestParseRule(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		in   string
		want Rule
		ok   bool
	}{
		{"47100=/run/wick/model.sock", Rule{47100, "/run/wick/model.sock"}, true},
		{"0=/run/wick/model.sock", Rule{}, false},
		{"70000=/x.sock", Rule{}, false},
		{"47100=relative.sock", Rule{}, false},
		{"47100", Rule{}, false},
		{"x=/a.sock", Rule{}, false},
	} {
		got, err := ParseRule(tc.in)
		if (err == nil) != tc.ok || got != tc.want {
			t.Errorf("ParseRule(%q) = %v, %v; want %v, ok %v", tc.in, got, err, tc.want, tc.ok)
		}
	}
}

// TestServeCopiesBothWays sends a request that ends with a half close and
// expects the socket's answer back, as an HTTP/1.0 client would.
func TestServeCopiesBothWays(t *testing.T) {
	t.Parallel()
	sock := filepath.Join(t.TempDir(), "s.sock")
	ul, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ul.Close() })
	go func() {
		for {
			c, err := ul.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				b, _ := io.ReadAll(c) // until the caller's half close
				_, _ = c.Write(append([]byte("echo:"), b...))
			}()
		}
	}()
	// A free port: listen, note it, close, let Serve take it.
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := l.Addr().(*net.TCPAddr).Port
	l.Close()
	ctx, cancel := context.WithCancel(context.Background())
	served := make(chan error, 1)
	go func() { served <- Serve(ctx, Rule{Port: port, Socket: sock}, slog.New(slog.DiscardHandler)) }()
	t.Cleanup(func() {
		cancel()
		if err := <-served; err != nil {
			t.Errorf("Serve: %v", err)
		}
	})
	var c net.Conn
	for c == nil { // Serve binds asynchronously; a refused dial is retried
		select {
		case err := <-served:
			t.Fatalf("Serve ended: %v", err)
		default:
		}
		c, _ = net.Dial("tcp", "127.0.0.1:"+strconv.Itoa(port))
	}
	defer c.Close()
	if _, err := c.Write([]byte("hello")); err != nil {
		t.Fatal(err)
	}
	_ = c.(*net.TCPConn).CloseWrite()
	got, err := io.ReadAll(c)
	if err != nil {
		t.Fatal(err)
	}
	if string(got) != "echo:hello" {
		t.Fatalf("got %q, want %q", got, "echo:hello")
	}
}
