// Package testenv gives tests the real dependencies they need: a fresh
// redis-server on a loopback port, and a Docker Engine client. When one is
// missing, a test skips with a one-line reason, except under CI=true, where a
// missing dependency fails the test: CI must never pass by skipping.
package testenv

import (
	"bufio"
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/containerd/errdefs"
	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/api/types/filters"
	"github.com/docker/docker/api/types/volume"
	"github.com/docker/docker/client"
)

// StartTimeout bounds how long a dependency may take to come up.
const StartTimeout = 20 * time.Second

// InCI reports whether the tests run in CI, where missing dependencies fail.
func InCI() bool {
	v, _ := strconv.ParseBool(os.Getenv("CI"))
	return v
}

// Missing skips t, or fails it in CI, because a dependency is unavailable.
func Missing(t testing.TB, format string, args ...any) {
	t.Helper()
	msg := fmt.Sprintf(format, args...)
	if InCI() {
		t.Fatalf("required test dependency unavailable in CI: %s (run scripts/test-deps.sh)", msg)
	}
	t.Skipf("skipping: %s (run scripts/test-deps.sh to install it)", msg)
}

// Redis starts a redis-server on a free loopback port, with no persistence,
// and returns its address. The server is stopped when the test ends.
func Redis(t testing.TB) string {
	t.Helper()
	bin, err := exec.LookPath("redis-server")
	if err != nil {
		Missing(t, "redis-server not found in PATH")
	}
	var lastErr error
	for range 5 {
		port, err := freePort()
		if err != nil {
			t.Fatalf("find a free port: %v", err)
		}
		addr, err := startRedis(t, bin, port)
		if err == nil {
			return addr
		}
		lastErr = err // the port may have been taken between probe and bind; try another
	}
	t.Fatalf("start redis-server: %v", lastErr)
	return ""
}

func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

func startRedis(t testing.TB, bin string, port int) (string, error) {
	dir := t.TempDir()
	cmd := exec.Command(bin,
		"--port", strconv.Itoa(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no",
		"--dir", dir, "--daemonize", "no", "--loglevel", "warning")
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return "", err
	}
	cmd.Stderr = cmd.Stdout
	if err := cmd.Start(); err != nil {
		return "", err
	}
	exited := make(chan error, 1)
	var log strings.Builder
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			log.WriteString(sc.Text() + "\n")
		}
		exited <- cmd.Wait()
	}()
	addr := net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
	deadline := time.Now().Add(StartTimeout)
	for {
		if redisPing(addr, "") == nil {
			break
		}
		select {
		case err := <-exited:
			return "", fmt.Errorf("redis-server exited: %v: %s", err, log.String())
		default:
		}
		if time.Now().After(deadline) {
			_ = cmd.Process.Kill()
			return "", fmt.Errorf("redis-server on %s did not answer PING within %s", addr, StartTimeout)
		}
		time.Sleep(10 * time.Millisecond) // polling a port: there is no event to wait on
	}
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		<-exited
	})
	return addr, nil
}

// redisPing sends PING, after AUTH when password is set, in RESP inline
// commands (the platform module does not depend on a Redis client).
func redisPing(addr, password string) error {
	c, err := net.DialTimeout("tcp", addr, time.Second)
	if err != nil {
		return err
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(time.Second))
	r := bufio.NewReader(c)
	if password != "" {
		if _, err := fmt.Fprintf(c, "AUTH %s\r\n", password); err != nil {
			return err
		}
		line, err := r.ReadString('\n')
		if err != nil {
			return err
		}
		if !strings.HasPrefix(line, "+OK") {
			return fmt.Errorf("unexpected AUTH reply %q", strings.TrimSpace(line))
		}
	}
	if _, err := c.Write([]byte("PING\r\n")); err != nil {
		return err
	}
	line, err := r.ReadString('\n')
	if err != nil {
		return err
	}
	if !strings.HasPrefix(line, "+PONG") {
		return fmt.Errorf("unexpected PING reply %q", strings.TrimSpace(line))
	}
	return nil
}

// Docker returns a client of the local Docker Engine (DOCKER_HOST or the
// default socket) with API version negotiation, closed when the test ends.
func Docker(t testing.TB) *client.Client {
	t.Helper()
	cli, err := client.NewClientWithOpts(client.FromEnv, client.WithAPIVersionNegotiation())
	if err != nil {
		Missing(t, "docker client: %v", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if _, err := cli.Ping(ctx); err != nil {
		cli.Close()
		Missing(t, "docker engine not reachable: %v", err)
	}
	cli.NegotiateAPIVersion(ctx)
	t.Cleanup(func() { cli.Close() })
	return cli
}

// RemoveLabelled removes, when the test ends, every container and then
// every volume on cli's engine that carries label ("key=value"), so a test
// leaves the engine as it found it. Register it before starting what makes
// them: cleanups run last first, so it runs after those have stopped.
func RemoveLabelled(t testing.TB, cli *client.Client, label string) {
	t.Helper()
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		f := filters.NewArgs(filters.Arg("label", label))
		cs, err := cli.ContainerList(ctx, container.ListOptions{All: true, Filters: f})
		if err != nil {
			t.Errorf("list containers labelled %s: %v", label, err)
		}
		for _, c := range cs {
			if err := cli.ContainerRemove(ctx, c.ID, container.RemoveOptions{Force: true}); err != nil && !errdefs.IsNotFound(err) {
				t.Errorf("remove container %s: %v", c.ID, err)
			}
		}
		vs, err := cli.VolumeList(ctx, volume.ListOptions{Filters: f})
		if err != nil {
			t.Errorf("list volumes labelled %s: %v", label, err)
			return
		}
		for _, v := range vs.Volumes {
			if err := cli.VolumeRemove(ctx, v.Name, true); err != nil && !errdefs.IsNotFound(err) {
				t.Errorf("remove volume %s: %v", v.Name, err)
			}
		}
	})
}

// RepoRoot returns the repository root: the nearest directory above the
// working directory that holds go.work.
func RepoRoot(t testing.TB) string {
	t.Helper()
	dir, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.work")); err == nil {
			return dir
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			t.Fatal("go.work not found above the working directory")
		}
		dir = parent
	}
}
