package testenv

import (
	"fmt"
	"os/exec"
	"strconv"
	"testing"
)

func TestFreePortNeverRepeats(t *testing.T) {
	t.Parallel()
	seen := map[int]bool{}
	for range 200 {
		p := FreePort(t)
		if seen[p] {
			t.Fatalf("port %d handed out twice", p)
		}
		seen[p] = true
	}
}

// TestProcKillAndRestart runs a password-protected redis-server as a Proc:
// it is ready only after AUTH and PING succeed, a SIGKILL stops it, and
// Start brings it back on the same port.
func TestProcKillAndRestart(t *testing.T) {
	t.Parallel()
	bin, err := exec.LookPath("redis-server")
	if err != nil {
		Missing(t, "redis-server not found in PATH")
	}
	port := strconv.Itoa(FreePort(t))
	addr := "127.0.0.1:" + port
	p := NewProc(t, "redis-server", bin, []string{"--port", port, "--bind", "127.0.0.1", "--save", "",
		"--requirepass", "s3cret", "--dir", t.TempDir()}, RedisServing(addr, "s3cret"), WithEnv([]string{}))
	p.Start()
	pid := p.Pid()
	if pid == 0 || !p.Running() {
		t.Fatalf("started process: pid %d, running %v", pid, p.Running())
	}
	if err := redisPing(addr, "wrong"); err == nil {
		t.Fatal("PING after a wrong password succeeded")
	}
	p.Kill()
	if p.Running() || redisPing(addr, "s3cret") == nil {
		t.Fatal("redis-server still answers after Kill")
	}
	p.Start()
	if p.Pid() == pid {
		t.Fatalf("restart kept pid %d", pid)
	}
	if err := redisPing(addr, "s3cret"); err != nil {
		t.Fatalf("after restart: %v", err)
	}
}

// TestProcExitBeforeReady fails the ready check of a process that exits at
// once instead of waiting out StartTimeout.
func TestProcExitBeforeReady(t *testing.T) {
	t.Parallel()
	ft := &fakeT{TB: t}
	done := make(chan struct{})
	go func() {
		defer close(done)
		defer func() { _ = recover() }() // fakeT.Fatalf stops the goroutine
		NewProc(ft, "false", "/bin/false", nil, GRPCServing("127.0.0.1:"+strconv.Itoa(FreePort(t)))).Start()
	}()
	<-done
	if ft.fatal == "" {
		t.Fatal("a process that exited at once was taken for ready")
	}
}

// fakeT records the first Fatalf and stops the calling goroutine.
type fakeT struct {
	testing.TB
	fatal string
}

func (f *fakeT) Helper()                           {}
func (f *fakeT) Cleanup(func())                    {}
func (f *fakeT) Fatalf(format string, args ...any) { f.fatal = fmt.Sprintf(format, args...); panic(f) }
func (f *fakeT) Fatal(...any)                      { f.fatal = "fatal"; panic(f) }
