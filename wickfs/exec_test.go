package wickfs_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/wick-agent/wick/platform/testenv"
	"github.com/wick-agent/wick/wickfs"
)

// running reports whether pid is a live (not zombie) process.
func running(pid int) bool {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return false
	}
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	return i < 0 || i+2 >= len(s) || s[i+2] != 'Z'
}

func readPid(t *testing.T, dir, name string) int {
	t.Helper()
	var pid int
	testenv.Eventually(t, 20*time.Second, func() bool {
		b, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil || !strings.HasSuffix(string(b), "\n") {
			return false
		}
		pid, err = strconv.Atoi(strings.TrimSpace(string(b)))
		return err == nil
	}, "%s", name)
	return pid
}

func TestExec(t *testing.T) {
	t.Parallel()
	fsys, _ := newFS(t, map[string]string{"sub/f.txt": "x"})
	ctx := context.Background()
	for _, tc := range []struct {
		name    string
		cmd     string
		opts    []wickfs.ExecOption
		want    wickfs.ExecResult
		wantErr error
	}{
		{"stdout stderr exit", "echo out; echo err >&2; exit 3", nil, wickfs.ExecResult{Stdout: "out\n", Stderr: "err\n", ExitCode: 3}, nil},
		{"workdir root", "pwd | sed 's|.*/||'; ls", nil, wickfs.ExecResult{Stdout: "", ExitCode: 0}, nil},
		{"workdir", "ls", []wickfs.ExecOption{wickfs.WithWorkdir("/workspace/sub")}, wickfs.ExecResult{Stdout: "f.txt\n"}, nil},
		{"env", `printf %s "$GREETING"`, []wickfs.ExecOption{wickfs.WithEnv(map[string]string{"GREETING": "hi there"})}, wickfs.ExecResult{Stdout: "hi there"}, nil},
		{"signal", "kill -9 $$", nil, wickfs.ExecResult{ExitCode: -1}, nil},
		{"invalid UTF-8", `printf 'a\377\376b'`, nil, wickfs.ExecResult{Stdout: "a\uFFFD\uFFFDb"}, nil},
		{"empty", "  ", nil, wickfs.ExecResult{}, wickfs.ErrInvalidArgument},
		{"nul", "echo \x00", nil, wickfs.ExecResult{}, wickfs.ErrInvalidArgument},
		{"workdir escape", "ls", []wickfs.ExecOption{wickfs.WithWorkdir("/etc")}, wickfs.ExecResult{}, wickfs.ErrOutsideWorkspace},
		{"workdir missing", "ls", []wickfs.ExecOption{wickfs.WithWorkdir("nope")}, wickfs.ExecResult{}, wickfs.ErrNotFound},
		{"workdir file", "ls", []wickfs.ExecOption{wickfs.WithWorkdir("sub/f.txt")}, wickfs.ExecResult{}, wickfs.ErrInvalidArgument},
		{"bad env", "true", []wickfs.ExecOption{wickfs.WithEnv(map[string]string{"A=B": "c"})}, wickfs.ExecResult{}, wickfs.ErrInvalidArgument},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			res, err := fsys.Exec(ctx, tc.cmd, tc.opts...)
			if !errors.Is(err, tc.wantErr) || (tc.wantErr == nil && err != nil) {
				t.Fatalf("Exec error = %v; want %v", err, tc.wantErr)
			}
			if err != nil {
				return
			}
			if tc.name == "workdir root" {
				if !strings.Contains(res.Stdout, "sub\n") {
					t.Errorf("root listing = %q", res.Stdout)
				}
				return
			}
			if *res != tc.want {
				t.Errorf("Exec = %+v; want %+v", *res, tc.want)
			}
		})
	}
}

func TestExecTimeoutKillsGroup(t *testing.T) {
	t.Parallel()
	fsys, dir := newFS(t, nil)
	res, err := fsys.Exec(context.Background(), "sleep 1000 & echo $! > bg.pid; echo started; wait", wickfs.WithTimeout(300*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	if !res.TimedOut || res.ExitCode != -1 || res.Stdout != "started\n" {
		t.Fatalf("Exec = %+v; want a timed-out kill with its output", res)
	}
	pid := readPid(t, dir, "bg.pid")
	testenv.Eventually(t, 20*time.Second, func() bool { return !running(pid) }, "background process to die")
}

func TestExecCancelKillsGroup(t *testing.T) {
	t.Parallel()
	fsys, dir := newFS(t, nil)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		_, err := fsys.Exec(ctx, "sleep 1000 & echo $! > bg.pid; wait")
		done <- err
	}()
	pid := readPid(t, dir, "bg.pid")
	cancel()
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Fatalf("Exec after cancel = %v; want context.Canceled", err)
	}
	testenv.Eventually(t, 20*time.Second, func() bool { return !running(pid) }, "background process to die")
}

func TestExecOutputCap(t *testing.T) {
	t.Parallel()
	fsys, _ := newFS(t, nil, wickfs.WithMaxOutputBytes(1<<20))
	// 64 MB of output against a 1 MiB cap: the result is cut, memory stays flat.
	res, err := fsys.Exec(context.Background(), "head -c 67108864 /dev/zero; echo tail >&2; exit 4")
	if err != nil {
		t.Fatal(err)
	}
	if !res.Truncated || len(res.Stdout)+len(res.Stderr) != 1<<20 || res.ExitCode != 4 {
		t.Fatalf("stdout %d bytes, stderr %q, truncated %v, exit %d", len(res.Stdout), res.Stderr, res.Truncated, res.ExitCode)
	}
	res, err = fsys.Exec(context.Background(), "echo 0123456789", wickfs.WithMaxOutput(4))
	if err != nil || res.Stdout != "0123" || !res.Truncated {
		t.Fatalf("per-call cap: %+v, %v", res, err)
	}
}

func TestExecBackgroundDoesNotHang(t *testing.T) {
	t.Parallel()
	// A background process that keeps the output pipe open must not keep
	// Exec waiting past the wait delay.
	fsys, dir := newFS(t, nil, wickfs.WithWaitDelay(100*time.Millisecond))
	res, err := fsys.Exec(context.Background(), "sleep 30 & echo $! > bg.pid; echo fg")
	if err != nil || res.Stdout != "fg\n" || res.ExitCode != 0 {
		t.Fatalf("Exec = %+v, %v", res, err)
	}
	pid := readPid(t, dir, "bg.pid")
	_ = syscall.Kill(pid, syscall.SIGKILL)
}
