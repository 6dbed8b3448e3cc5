package wickfs_test

import (
	"bytes"
	"context"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/wick-agent/wick/platform/testenv"
	"github.com/wick-agent/wick/wickfs"
	"github.com/wick-agent/wick/wickfs/confine"
)

// requireLandlock skips where the kernel cannot confine, except in CI.
func requireLandlock(t *testing.T) {
	t.Helper()
	if abi := confine.ABI(); abi < confine.MinABI {
		if os.Getenv("CI") == "true" {
			t.Fatalf("Landlock ABI %d, confinement needs %d", abi, confine.MinABI)
		}
		t.Skipf("skipping: Landlock ABI %d, confinement needs %d", abi, confine.MinABI)
	}
}

func TestConfinedEnvironment(t *testing.T) {
	t.Setenv("WICK_TEST_SECRET", "s3cret")
	fsys, dir := newFS(t, nil, wickfs.WithConfinement(wickfs.Confinement{Env: map[string]string{"PATH": "/usr/bin:/bin", "HOME": "/home/agent"}}))
	res, err := fsys.Exec(context.Background(), `printenv WICK_TEST_SECRET; echo "$HOME $GREETING"`, wickfs.WithEnv(map[string]string{"GREETING": "hi"}))
	if err != nil {
		t.Fatal(err)
	}
	if res.Stdout != "/home/agent hi\n" {
		t.Fatalf("confined environment: %+v", res)
	}
	// The kill of a timed-out command still reaches its whole group: a
	// confined command leads a session of its own.
	res, err = fsys.Exec(context.Background(), "sleep 1000 & echo $! > bg.pid; wait", wickfs.WithTimeout(300*time.Millisecond))
	if err != nil || !res.TimedOut {
		t.Fatalf("Exec = %+v, %v", res, err)
	}
	pid := readPid(t, dir, "bg.pid")
	testenv.Eventually(t, 20*time.Second, func() bool { return !running(pid) }, "background process to die")

	// Without confinement the process's environment is inherited, as
	// wick-daemon in a container expects.
	plain, _ := newFS(t, nil)
	res, err = plain.Exec(context.Background(), "printenv WICK_TEST_SECRET")
	if err != nil || res.Stdout != "s3cret\n" {
		t.Fatalf("unconfined environment: %+v, %v", res, err)
	}
}

func TestConfinedPolicy(t *testing.T) {
	requireLandlock(t)
	t.Parallel()
	outside := t.TempDir()
	marker := filepath.Join(outside, "marker")
	if err := os.WriteFile(marker, []byte("host file\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	policy := &confine.Policy{ReadOnly: confine.SystemReadOnly, Devices: confine.SystemDevices}
	fsys, _ := newFS(t, map[string]string{"in.txt": "inside\n"},
		wickfs.WithConfinement(wickfs.Confinement{Env: map[string]string{"PATH": "/usr/bin:/bin"}, Policy: policy}))
	ctx := context.Background()
	res, err := fsys.Exec(ctx, "cat in.txt && echo out > out.txt && cat out.txt")
	if err != nil || res.Stdout != "inside\nout\n" || res.ExitCode != 0 {
		t.Fatalf("workspace: %+v, %v", res, err)
	}
	res, err = fsys.Exec(ctx, "cat "+marker+"; ls "+outside+"; echo x > "+filepath.Join(outside, "w"))
	if err != nil || strings.Contains(res.Stdout, "host file") || strings.Contains(res.Stdout, "marker") || res.ExitCode == 0 {
		t.Fatalf("outside: %+v, %v", res, err)
	}
	if _, err := os.Stat(filepath.Join(outside, "w")); err == nil {
		t.Fatal("a file was written outside the workspace")
	}

	// The terminal starts through the same confinement.
	var mu sync.Mutex
	var out bytes.Buffer
	closed := make(chan struct{})
	defer close(closed)
	exit, err := fsys.Terminal(ctx, wickfs.TerminalOptions{Command: "cat " + marker + "; echo done"},
		func() (wickfs.TerminalInput, error) { <-closed; return wickfs.TerminalInput{}, io.EOF },
		func(b []byte) error { mu.Lock(); defer mu.Unlock(); out.Write(b); return nil })
	if err != nil || exit == nil {
		t.Fatalf("terminal: %v %v", exit, err)
	}
	mu.Lock()
	defer mu.Unlock()
	if strings.Contains(out.String(), "host file") || !strings.Contains(out.String(), "done") {
		t.Fatalf("terminal output %q", out.String())
	}
}

// BenchmarkExecTrue runs `true` plain, with a scrubbed environment only, and
// confined: the difference is the launcher (this binary started again as
// /proc/self/exe up to the confine package's init) and building the ruleset.
func BenchmarkExecTrue(b *testing.B) {
	env := map[string]string{"PATH": "/usr/bin:/bin"}
	for _, bc := range []struct {
		name string
		opts []wickfs.LocalOption
	}{
		{"plain", nil},
		{"env-only", []wickfs.LocalOption{wickfs.WithConfinement(wickfs.Confinement{Env: env})}},
		{"landlock", []wickfs.LocalOption{wickfs.WithConfinement(wickfs.Confinement{Env: env,
			Policy: &confine.Policy{ReadOnly: confine.SystemReadOnly, Devices: confine.SystemDevices}})}},
	} {
		b.Run(bc.name, func(b *testing.B) {
			if bc.name == "landlock" && confine.ABI() < confine.MinABI {
				b.Skip("no Landlock")
			}
			fsys, err := wickfs.NewLocalFS(b.TempDir(), bc.opts...)
			if err != nil {
				b.Fatal(err)
			}
			defer fsys.Close()
			for b.Loop() {
				if res, err := fsys.Exec(context.Background(), "true"); err != nil || res.ExitCode != 0 {
					b.Fatalf("%+v %v", res, err)
				}
			}
		})
	}
}
