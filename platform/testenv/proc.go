package testenv

import (
	"context"
	"fmt"
	"net/http"
	"os/exec"
	"sync"
	"syscall"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
)

// Ready waits until a process that was just started serves, failing t if
// the process exits first (its exit error arrives on exited).
type Ready func(t testing.TB, exited <-chan error)

// Proc is one process of a test: started with fixed arguments and
// environment, so that after a SIGKILL it starts again where the others
// expect it. It is killed when the test ends, and its output is logged if
// the test failed.
type Proc struct {
	t     testing.TB
	name  string
	bin   string
	args  []string
	env   []string // nil: the test's own environment
	ready Ready

	out *LogBuffer // stdout and stderr of every start

	mu   sync.Mutex
	cmd  *exec.Cmd
	done chan struct{} // closed when the running process has exited
}

// ProcOption configures NewProc.
type ProcOption func(*Proc)

// WithEnv gives the process exactly env ("NAME=value" entries) instead of
// the test's environment, as a container gets only what its spec names.
func WithEnv(env []string) ProcOption {
	return func(p *Proc) { p.env = append([]string{}, env...) }
}

// NewProc describes a process; Start runs it.
func NewProc(t testing.TB, name, bin string, args []string, ready Ready, opts ...ProcOption) *Proc {
	p := &Proc{t: t, name: name, bin: bin, args: args, ready: ready, out: &LogBuffer{}}
	for _, o := range opts {
		o(p)
	}
	t.Cleanup(func() {
		if p.Running() {
			p.Kill()
		}
		if t.Failed() {
			t.Logf("output of %s:\n%s", name, p.out)
		}
	})
	return p
}

// Name is the name the process was given.
func (p *Proc) Name() string { return p.name }

// Start runs the process and returns once it serves.
func (p *Proc) Start() {
	p.t.Helper()
	p.mu.Lock()
	if p.cmd != nil {
		p.mu.Unlock()
		p.t.Fatalf("%s is already running", p.name)
	}
	cmd := exec.Command(p.bin, p.args...)
	if p.env != nil {
		cmd.Env = p.env
	}
	cmd.Stdout, cmd.Stderr = p.out, p.out
	// A test binary that dies (a timeout's panic) takes its processes along.
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		p.mu.Unlock()
		p.t.Fatalf("start %s: %v", p.name, err)
	}
	exited, done := make(chan error, 1), make(chan struct{})
	go func() {
		exited <- cmd.Wait()
		close(done)
	}()
	p.cmd, p.done = cmd, done
	p.mu.Unlock()
	p.ready(p.t, exited)
}

// Running reports whether the process was started and not killed.
func (p *Proc) Running() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.cmd != nil
}

// Pid is the running process's id (0 when it is not running).
func (p *Proc) Pid() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.cmd == nil {
		return 0
	}
	return p.cmd.Process.Pid
}

// Kill ends the process with SIGKILL, as a crash or an OOM kill would: it
// gets no chance to finish its work or close its connections.
func (p *Proc) Kill() {
	p.t.Helper()
	p.mu.Lock()
	cmd, done := p.cmd, p.done
	p.cmd = nil
	p.mu.Unlock()
	if cmd == nil {
		p.t.Fatalf("%s is not running", p.name)
	}
	_ = cmd.Process.Signal(syscall.SIGKILL)
	<-done
}

// Output is what the process wrote to stdout and stderr, over every start.
func (p *Proc) Output() string { return p.out.String() }

// issuedPorts are the ports FreePort handed out in this process: the kernel
// may offer a port again once its probe listener closed, and two processes
// of one test must never be given the same one.
var issuedPorts = struct {
	sync.Mutex
	m map[int]bool
}{m: map[int]bool{}}

// FreePort returns a loopback TCP port that nothing listens on now and that
// no earlier call in this process returned.
func FreePort(t testing.TB) int {
	t.Helper()
	for range 100 {
		port, err := freePort()
		if err != nil {
			t.Fatalf("find a free port: %v", err)
		}
		issuedPorts.Lock()
		taken := issuedPorts.m[port]
		issuedPorts.m[port] = true
		issuedPorts.Unlock()
		if !taken {
			return port
		}
	}
	t.Fatal("find a free port: the kernel kept offering ports already handed out")
	return 0
}

// GRPCServing waits until grpc.health.v1 on addr (plaintext) says SERVING.
func GRPCServing(addr string) Ready {
	return func(t testing.TB, exited <-chan error) {
		t.Helper()
		conn, err := grpc.NewClient(addr, grpc.WithTransportCredentials(insecure.NewCredentials()))
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close()
		hc := healthpb.NewHealthClient(conn)
		poll(t, "grpc.health.v1 SERVING on "+addr, exited, func() error {
			ctx, cancel := context.WithTimeout(context.Background(), time.Second)
			defer cancel()
			resp, err := hc.Check(ctx, &healthpb.HealthCheckRequest{})
			if err != nil {
				return err
			}
			if resp.Status != healthpb.HealthCheckResponse_SERVING {
				return fmt.Errorf("status %v", resp.Status)
			}
			return nil
		})
	}
}

// RedisServing waits until redis-server on addr answers PING with its data
// loaded (it answers LOADING errors until then), after AUTH when password
// is not empty.
func RedisServing(addr, password string) Ready {
	return func(t testing.TB, exited <-chan error) {
		t.Helper()
		poll(t, "redis-server PONG on "+addr, exited, func() error { return redisPing(addr, password) })
	}
}

// HTTPServing waits until a GET of url answers with any HTTP status.
func HTTPServing(url string) Ready {
	return func(t testing.TB, exited <-chan error) {
		t.Helper()
		c := &http.Client{Timeout: time.Second}
		poll(t, "an HTTP answer from "+url, exited, func() error {
			resp, err := c.Get(url)
			if err != nil {
				return err
			}
			return resp.Body.Close()
		})
	}
}

// poll calls check until it succeeds, the process exits, or StartTimeout
// passes: a process start has no event to wait on but its port.
func poll(t testing.TB, what string, exited <-chan error, check func() error) {
	t.Helper()
	deadline := time.Now().Add(StartTimeout)
	for {
		err := check()
		if err == nil {
			return
		}
		select {
		case err := <-exited:
			t.Fatalf("exited before %s: %v", what, err)
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("no %s within %s: %v", what, StartTimeout, err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}
