package confine

import (
	"bytes"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"golang.org/x/sys/unix"
)

// helperEnv makes the test binary, started as a confined program, answer
// one question about its own process instead of running tests.
const helperEnv = "CONFINE_TEST_HELPER"

func TestMain(m *testing.M) {
	if h := os.Getenv(helperEnv); h != "" {
		os.Exit(helper(strings.Fields(h)))
	}
	os.Exit(m.Run())
}

// helper prints what it was asked about and exits 0, or exits 3 when the
// operation was refused.
func helper(args []string) int {
	switch args[0] {
	case "nnp":
		v, err := unix.PrctlRetInt(unix.PR_GET_NO_NEW_PRIVS, 0, 0, 0, 0)
		if err != nil {
			return 1
		}
		fmt.Println(v)
	case "caps":
		hdr := unix.CapUserHeader{Version: unix.LINUX_CAPABILITY_VERSION_3}
		var data [2]unix.CapUserData
		if err := unix.Capget(&hdr, &data[0]); err != nil {
			return 1
		}
		fmt.Println(data[0].Effective|data[0].Permitted, data[1].Effective|data[1].Permitted)
	case "euid":
		fmt.Println(os.Geteuid())
	case "dial":
		c, err := net.Dial("tcp", args[1])
		if err != nil {
			fmt.Println(err)
			return 3
		}
		c.Close()
	case "signal":
		pid, _ := strconv.Atoi(args[1])
		if err := syscall.Kill(pid, 0); err != nil {
			fmt.Println(err)
			return 3
		}
	}
	return 0
}

// requireLandlock skips where the kernel cannot confine, except in CI, which
// must test confinement.
func requireLandlock(t *testing.T) {
	t.Helper()
	if abi := ABI(); abi < MinABI {
		if os.Getenv("CI") == "true" {
			t.Fatalf("Landlock ABI %d, confinement needs %d", abi, MinABI)
		}
		t.Skipf("skipping: Landlock ABI %d, confinement needs %d", abi, MinABI)
	}
}

type result struct {
	stdout, stderr string
	code           int
}

// run starts prog confined by p, in dir, with env, and waits for it.
func run(t *testing.T, p Policy, dir string, env []string, prog string, args ...string) result {
	t.Helper()
	cmd := exec.Command(prog, args...)
	cmd.Dir, cmd.Env = dir, env
	if err := Wrap(cmd, p); err != nil {
		t.Fatal(err)
	}
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	var exit *exec.ExitError
	if err != nil && !errors.As(err, &exit) {
		t.Fatal(err)
	}
	return result{stdout.String(), stderr.String(), cmd.ProcessState.ExitCode()}
}

func shell(t *testing.T) string {
	t.Helper()
	sh, err := exec.LookPath("sh")
	if err != nil {
		t.Fatal(err)
	}
	return sh
}

func TestConfinedShell(t *testing.T) {
	requireLandlock(t)
	t.Parallel()
	ws, tmp, other := t.TempDir(), t.TempDir(), t.TempDir()
	if err := os.WriteFile(filepath.Join(other, "secret"), []byte("other"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(ws, "mine"), []byte("mine\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	p := Policy{ReadWrite: []string{ws, tmp}, ReadOnly: SystemReadOnly, Devices: SystemDevices}
	env := []string{"PATH=/usr/local/bin:/usr/bin:/bin", "TMPDIR=" + tmp, "HOME=" + ws}
	tests := []struct {
		name   string
		script string
		ok     bool
		out    string
	}{
		{"read in workspace", "cat mine", true, "mine\n"},
		{"write in workspace", "echo new > new && mkdir -p d/e && mv new d/e/new && cat d/e/new", true, "new\n"},
		{"write in temp dir", `echo t > "$TMPDIR/t" && cat "$TMPDIR/t" && rm "$TMPDIR/t"`, true, "t\n"},
		{"pipeline and system binaries", "printf 'b\\na\\n' | sort | head -n 1", true, "a\n"},
		{"devices", "echo x > /dev/null && head -c 4 /dev/urandom | wc -c", true, "4\n"},
		{"stderr through /dev/stderr", "echo e > /dev/stderr", true, ""},
		{"system config", "grep -q '^root:' /etc/passwd && echo yes", true, "yes\n"},
		{"other directory read", "cat " + filepath.Join(other, "secret"), false, ""},
		{"other directory listed", "ls " + other, false, ""},
		{"other directory written", "echo x > " + filepath.Join(other, "x"), false, ""},
		{"host temp listed", "ls " + filepath.Dir(other), false, ""},
		{"outside workspace created", "mkdir " + filepath.Join(filepath.Dir(ws), "escape"), false, ""},
		{"shadow", "cat /etc/shadow", false, ""},
		{"proc", "cat /proc/1/cmdline", false, ""},
		{"device node", "mknod blk b 8 0", false, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := run(t, p, ws, env, shell(t), "-c", tc.script)
			if (r.code == 0) != tc.ok || (tc.ok && r.stdout != tc.out) {
				t.Fatalf("%q: exit %d, stdout %q, stderr %q; want ok=%v stdout %q", tc.script, r.code, r.stdout, r.stderr, tc.ok, tc.out)
			}
		})
	}
	if _, err := os.Stat(filepath.Join(other, "x")); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("a file was written outside: %v", err)
	}
}

// TestConfinedProcess asks a confined copy of the test binary about itself:
// no_new_privs set, no capabilities, no TCP, no signals out of its domain.
func TestConfinedProcess(t *testing.T) {
	requireLandlock(t)
	t.Parallel()
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { lis.Close() })
	go func() {
		for {
			c, err := lis.Accept()
			if err != nil {
				return
			}
			c.Close()
		}
	}()
	ws := t.TempDir()
	p := Policy{ReadWrite: []string{ws}, ReadOnly: append([]string{filepath.Dir(self)}, SystemReadOnly...), Devices: SystemDevices}
	ask := func(p Policy, question string) result {
		return run(t, p, ws, []string{helperEnv + "=" + question}, self)
	}
	if r := ask(p, "nnp"); r.code != 0 || r.stdout != "1\n" {
		t.Errorf("no_new_privs: %+v", r)
	}
	if r := ask(p, "caps"); r.code != 0 || r.stdout != "0 0\n" {
		t.Errorf("capabilities: %+v", r)
	}
	if r := ask(p, "dial "+lis.Addr().String()); r.code != 3 {
		t.Errorf("TCP connect without network: %+v", r)
	}
	open := p
	open.Network = true
	if r := ask(open, "dial "+lis.Addr().String()); r.code != 0 {
		t.Errorf("TCP connect with network: %+v", r)
	}
	if ABI() >= 6 {
		if r := ask(p, "signal "+strconv.Itoa(os.Getpid())); r.code != 3 {
			t.Errorf("signal to the parent: %+v", r)
		}
	}
}

// TestNoSetuidEscape runs a setuid-root copy of the test binary as an
// unprivileged user under confinement: no_new_privs keeps the setuid bit
// from raising its effective user.
func TestNoSetuidEscape(t *testing.T) {
	requireLandlock(t)
	if os.Geteuid() != 0 {
		t.Skip("skipping: making a setuid-root binary needs root")
	}
	t.Parallel()
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	// Not t.TempDir: its parent is private, and nobody must reach the binary.
	dir, err := os.MkdirTemp("", "confine-suid-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	suid := filepath.Join(dir, "suid")
	// cp writes the copy, not this process: a descriptor open for writing
	// here would be inherited by a fork of a parallel test until its exec,
	// and executing the copy would fail "text file busy" (golang/go#22315).
	if out, err := exec.Command("cp", self, suid).CombinedOutput(); err != nil {
		t.Fatalf("copy the test binary: %v: %s", err, out)
	}
	if err := os.Chmod(suid, 0o755|os.ModeSetuid); err != nil {
		t.Fatal(err)
	}
	const nobody = 65534
	cmd := exec.Command(suid)
	cmd.Dir, cmd.Env = dir, []string{helperEnv + "=euid"}
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: nobody, Gid: nobody}}
	// Unconfined, the setuid bit works: the check below can fail.
	if b, err := cmd.Output(); err != nil || string(b) != "0\n" {
		t.Fatalf("setuid copy unconfined: %q %v", b, err)
	}
	cmd = exec.Command(suid)
	cmd.Dir, cmd.Env = dir, []string{helperEnv + "=euid"}
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: nobody, Gid: nobody}}
	if err := Wrap(cmd, Policy{ReadOnly: append([]string{dir}, SystemReadOnly...)}); err != nil {
		t.Fatal(err)
	}
	b, err := cmd.CombinedOutput()
	if err != nil || string(b) != fmt.Sprintln(nobody) {
		t.Fatalf("setuid copy confined: %q %v", b, err)
	}
}

func TestWrapRefuses(t *testing.T) {
	t.Parallel()
	if err := Wrap(exec.Command("relative/sh"), Policy{}); err == nil {
		t.Error("relative program accepted")
	}
	if err := Wrap(exec.Command("no-such-program-anywhere"), Policy{}); err == nil {
		t.Error("missing program accepted")
	}
}

// TestConnectTCPPort opens one port to a command without a network: it
// reaches a listener on that port and no other.
func TestConnectTCPPort(t *testing.T) {
	requireLandlock(t)
	if ABI() < 4 {
		t.Skipf("skipping: Landlock ABI %d has no TCP rules", ABI())
	}
	t.Parallel()
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	listen := func() net.Listener {
		lis, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { lis.Close() })
		go func() {
			for {
				c, err := lis.Accept()
				if err != nil {
					return
				}
				c.Close()
			}
		}()
		return lis
	}
	allowed, other := listen(), listen()
	ws := t.TempDir()
	p := Policy{ReadWrite: []string{ws}, ReadOnly: append([]string{filepath.Dir(self)}, SystemReadOnly...), Devices: SystemDevices,
		ConnectTCP: []uint16{uint16(allowed.Addr().(*net.TCPAddr).Port)}}
	for _, tc := range []struct {
		name string
		addr string
		code int
	}{
		{"the allowed port", allowed.Addr().String(), 0},
		{"another port", other.Addr().String(), 3},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if r := run(t, p, ws, []string{helperEnv + "=dial " + tc.addr}, self); r.code != tc.code {
				t.Fatalf("dial %s: %+v; want exit %d", tc.addr, r, tc.code)
			}
		})
	}
}
