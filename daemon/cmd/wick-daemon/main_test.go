package main

import (
	"bytes"
	"context"
	"errors"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/wick-agent/wick/daemon/daemonfs"
	daemonv1 "github.com/wick-agent/wick/gen/wick/daemon/v1"
	"github.com/wick-agent/wick/platform/testenv"
)

var (
	buildOnce sync.Once
	binPath   string
	buildErr  error
)

// build compiles the daemon once, the way it ships: static, with a version.
func build(t *testing.T) string {
	t.Helper()
	buildOnce.Do(func() {
		var dir string
		dir, buildErr = os.MkdirTemp("", "wick-daemon-")
		if buildErr != nil {
			return
		}
		binPath = filepath.Join(dir, "wick-daemon")
		cmd := exec.Command("go", "build",
			"-ldflags", "-X github.com/wick-agent/wick/daemon.Version=v-test", "-o", binPath, ".")
		cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
		if out, err := cmd.CombinedOutput(); err != nil {
			buildErr = errors.New(string(out))
		}
	})
	if buildErr != nil {
		t.Fatalf("build: %v", buildErr)
	}
	return binPath
}

func TestMain(m *testing.M) {
	code := m.Run()
	if binPath != "" {
		os.RemoveAll(filepath.Dir(binPath))
	}
	os.Exit(code)
}

func health(t *testing.T, target, token string) *daemonv1.HealthResponse {
	t.Helper()
	conn, err := daemonfs.Dial(context.Background(), target, token)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	var res *daemonv1.HealthResponse
	testenv.Eventually(t, 20*time.Second, func() bool {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		res, err = daemonv1.NewDaemonClient(conn).Health(ctx, &daemonv1.HealthRequest{})
		return err == nil
	}, "the daemon to answer")
	return res
}

func TestDaemonBinary(t *testing.T) {
	bin := build(t)
	t.Run("serves socket and TCP, stops on SIGTERM", func(t *testing.T) {
		root := t.TempDir()
		sock := filepath.Join(t.TempDir(), "run", "wick", "d.sock")
		// A free port: listen, note it, close. Another process could take it
		// in between; that would fail the test loudly, not hide a bug.
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		addr := l.Addr().String()
		l.Close()
		cmd := exec.Command(bin, "-socket", sock, "-root", root, "-tcp-addr", addr, "-log-format", "text")
		cmd.Env = append(os.Environ(), "WICK_DAEMON_TOKEN=tok", "WICK_EXEC_TIMEOUT=5s")
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = cmd.Process.Kill() })
		res := health(t, sock, "")
		if res.GetVersion() != "v-test" || res.GetWorkspaceRoot() != root {
			t.Fatalf("Health = %v", res)
		}
		if res := health(t, addr, "tok"); res.GetVersion() != "v-test" {
			t.Fatalf("Health over TCP = %v", res)
		}
		conn, err := daemonfs.Dial(context.Background(), addr, "wrong")
		if err != nil {
			t.Fatal(err)
		}
		_, err = daemonv1.NewDaemonClient(conn).Health(context.Background(), &daemonv1.HealthRequest{})
		conn.Close()
		if status.Code(err) != codes.Unauthenticated {
			t.Fatalf("Health over TCP with a wrong token = %v; want Unauthenticated", err)
		}
		st, err := os.Stat(sock)
		if err != nil || st.Mode().Perm() != 0o666 {
			t.Fatalf("socket mode = %v, %v; want 0666", st.Mode().Perm(), err)
		}
		if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
			t.Fatal(err)
		}
		if err := cmd.Wait(); err != nil {
			t.Fatalf("exit after SIGTERM = %v; stderr:\n%s", err, stderr.String())
		}
		if _, err := os.Stat(sock); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("socket left behind: %v", err)
		}
	})
	for _, tc := range []struct {
		name string
		args []string
		env  []string
		msg  string
	}{
		{"TCP without token", []string{"-tcp-addr", "127.0.0.1:0"}, nil, "needs -token"},
		{"missing root", []string{"-root", "/nonexistent/ws"}, nil, "open root"},
		{"bad socket mode", []string{"-socket-mode", "99"}, nil, "-socket-mode"},
		{"bad env", nil, []string{"WICK_EXEC_TIMEOUT=soon"}, "WICK_EXEC_TIMEOUT"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			args := append([]string{"-socket", filepath.Join(t.TempDir(), "d.sock"), "-root", t.TempDir()}, tc.args...)
			cmd := exec.Command(bin, args...)
			cmd.Env = append(os.Environ(), tc.env...)
			out, err := cmd.CombinedOutput()
			var exitErr *exec.ExitError
			if !errors.As(err, &exitErr) || !strings.Contains(string(out), tc.msg) {
				t.Fatalf("wick-daemon %v: %v\n%s\nwant a refusal mentioning %q", tc.args, err, out, tc.msg)
			}
		})
	}
	t.Run("version", func(t *testing.T) {
		out, err := exec.Command(bin, "-version").Output()
		if err != nil || strings.TrimSpace(string(out)) != "v-test" {
			t.Fatalf("-version = %q, %v", out, err)
		}
	})
}

// TestPID1ReapsOrphans runs the daemon as PID 1 of a new PID namespace, as in
// a container, and checks that orphans it inherits are reaped while exec
// results (exit codes) stay correct.
func TestPID1ReapsOrphans(t *testing.T) {
	bin := build(t)
	root := t.TempDir()
	sock := filepath.Join(t.TempDir(), "d.sock")
	cmd := exec.Command(bin, "-socket", sock, "-root", root)
	cmd.SysProcAttr = &syscall.SysProcAttr{Cloneflags: syscall.CLONE_NEWPID}
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		// Root can always create one; CI runs as root, so there this fails.
		testenv.Missing(t, "cannot create a PID namespace here (needs root): %v", err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	if pid := health(t, sock, "").GetPid(); pid == 1 {
		t.Fatalf("the daemon itself is PID 1; want it to be init's child")
	}
	conn, err := daemonfs.Dial(context.Background(), sock, "")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	fs := daemonfs.New(daemonv1.NewDaemonClient(conn))
	// The subshell exits at once, so the sleeps are re-parented to PID 1;
	// each prints its host-visible pid first.
	res, err := fs.Exec(context.Background(), "(sleep 0.2 & echo $!) ; exit 7")
	if err != nil || res.ExitCode != 7 {
		t.Fatalf("Exec = %+v, %v; want exit 7", res, err)
	}
	initPid := cmd.Process.Pid
	testenv.Eventually(t, 20*time.Second, func() bool { return len(zombieChildren(initPid)) == 0 && len(children(initPid)) == 1 }, "orphans of init to be reaped")
	// Exit statuses are still the commands' own while init reaps.
	for i := range 20 {
		res, err := fs.Exec(context.Background(), "(true &) ; exit "+strconv.Itoa(i))
		if err != nil || res.ExitCode != i {
			t.Fatalf("Exec %d = %+v, %v", i, res, err)
		}
	}
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if err := cmd.Wait(); err != nil {
		t.Fatalf("init exit after SIGTERM = %v; stderr:\n%s", err, stderr.String())
	}
}

// children lists the host pids whose parent is ppid.
func children(ppid int) []int {
	return procs(func(state string, parent int) bool { return parent == ppid })
}

func zombieChildren(ppid int) []int {
	return procs(func(state string, parent int) bool { return parent == ppid && state == "Z" })
}

func procs(keep func(state string, ppid int) bool) []int {
	var out []int
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
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
		if len(f) < 2 {
			continue
		}
		ppid, _ := strconv.Atoi(f[1])
		if keep(f[0], ppid) {
			out = append(out, pid)
		}
	}
	return out
}

// TestInstall places the daemon and the wickfs beside it into a directory,
// as the init container of a sandbox pod does, and refuses a target that is
// not a directory.
func TestInstall(t *testing.T) {
	bin := build(t)
	// The daemon as the image holds it: wickfs in the same directory.
	from := t.TempDir()
	daemonBin := filepath.Join(from, "wick-daemon")
	self, err := os.ReadFile(bin)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(daemonBin, self, 0o755); err != nil {
		t.Fatal(err)
	}
	wickfs := []byte("#!wickfs stand-in\n")
	if err := os.WriteFile(filepath.Join(from, "wickfs"), wickfs, 0o755); err != nil {
		t.Fatal(err)
	}

	t.Run("copies both read-only", func(t *testing.T) {
		to := t.TempDir()
		// A previous copy is replaced, not appended to.
		if err := os.WriteFile(filepath.Join(to, "wickfs"), []byte("old and longer than the new one"), 0o755); err != nil {
			t.Fatal(err)
		}
		if out, err := exec.Command(daemonBin, "-install", to).CombinedOutput(); err != nil {
			t.Fatalf("-install: %v\n%s", err, out)
		}
		for name, want := range map[string][]byte{"wick-daemon": self, "wickfs": wickfs} {
			p := filepath.Join(to, name)
			got, err := os.ReadFile(p)
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(got, want) {
				t.Errorf("%s: %d bytes differ from the source's %d", name, len(got), len(want))
			}
			st, err := os.Stat(p)
			if err != nil {
				t.Fatal(err)
			}
			if st.Mode() != 0o555 {
				t.Errorf("%s: mode %v, want -r-xr-xr-x", name, st.Mode())
			}
		}
		entries, err := os.ReadDir(to)
		if err != nil {
			t.Fatal(err)
		}
		if len(entries) != 2 {
			t.Errorf("%d entries in the target, want wick-daemon and wickfs only: %v", len(entries), entries)
		}
		// The copy runs.
		out, err := exec.Command(filepath.Join(to, "wick-daemon"), "-version").Output()
		if err != nil || strings.TrimSpace(string(out)) != "v-test" {
			t.Fatalf("installed -version = %q, %v", out, err)
		}
	})
	for _, tc := range []struct {
		name, msg string
		target    func(t *testing.T) string
		from      string
	}{
		{"a file", "not a directory", func(t *testing.T) string {
			f := filepath.Join(t.TempDir(), "file")
			if err := os.WriteFile(f, nil, 0o644); err != nil {
				t.Fatal(err)
			}
			return f
		}, daemonBin},
		{"missing", "no such file", func(t *testing.T) string { return filepath.Join(t.TempDir(), "none") }, daemonBin},
		{"no wickfs beside", "wickfs", func(t *testing.T) string { return t.TempDir() }, bin},
	} {
		t.Run("refuses "+tc.name, func(t *testing.T) {
			target := tc.target(t)
			out, err := exec.Command(tc.from, "-install", target).CombinedOutput()
			var exitErr *exec.ExitError
			if !errors.As(err, &exitErr) || !strings.Contains(string(out), tc.msg) {
				t.Fatalf("-install %s: %v\n%s\nwant a refusal mentioning %q", target, err, out, tc.msg)
			}
			if entries, _ := os.ReadDir(target); len(entries) != 0 {
				t.Errorf("refused, yet wrote %v", entries)
			}
		})
	}
}
