package sandbox

import (
	"context"
	"io"
	"log/slog"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	sandboxv1 "github.com/wick-agent/wick/gen/wick/sandbox/v1"
	"github.com/wick-agent/wick/platform/backend"
	"github.com/wick-agent/wick/platform/identity"
	"github.com/wick-agent/wick/platform/testenv"
	"github.com/wick-agent/wick/wickfs/confine"
)

// testKey stands for a provider key in the service's environment.
const testKey = "sk-wick-test-7f3a9c2e51"

func requireLandlock(t *testing.T) {
	t.Helper()
	if abi := confine.ABI(); abi < confine.MinABI {
		testenv.Missing(t, "Landlock ABI %d (confinement needs %d: Linux 6.2+, landlock in lsm=)", abi, confine.MinABI)
	}
}

func reverse(s string) string {
	b := []byte(s)
	for i, j := 0, len(b)-1; i < j; i, j = i+1, j-1 {
		b[i], b[j] = b[j], b[i]
	}
	return string(b)
}

// TestLocalConfinement tries, as alice's commands on the local backend, every
// escape the audit reproduced and a few more, with bob's sandbox beside hers.
// Not parallel: it sets the service's environment.
func TestLocalConfinement(t *testing.T) {
	requireLandlock(t)
	t.Setenv("OPENAI_API_KEY", testKey)
	t.Setenv("WICK_TOKENS", "tok-alice:alice")
	marker, err := os.CreateTemp("", "wick-host-marker-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.Remove(marker.Name()) })
	if _, err := marker.WriteString("host secret\n"); err != nil {
		t.Fatal(err)
	}
	marker.Close()
	home, err := os.UserHomeDir()
	if err != nil {
		t.Fatal(err)
	}

	svc, cli := newLocal(t, Config{AllowLocal: true, MultiUser: true})
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	spec := &sandboxv1.SandboxSpec{Type: backend.Local, Env: map[string]string{"GREETING": "hello"}}
	for _, u := range []string{"alice", "bob"} {
		if _, err := cli.EnsureSandbox(as(u), &sandboxv1.EnsureSandboxRequest{AgentId: "dev", Spec: spec}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := writeFile(as("bob"), cli, "dev", "/workspace/secret.txt", []byte("bob's secret\n")); err != nil {
		t.Fatal(err)
	}
	state := svc.cfg.StateDir
	dir := func(user string) string {
		return filepath.Join(state, "local", sandboxKey(svc.cfg.ManagerID, user, "dev"))
	}
	ws, tmp, bobWS := filepath.Join(dir("alice"), "workspace"), filepath.Join(dir("alice"), "tmp"), filepath.Join(dir("bob"), "workspace")

	tests := []struct {
		name string
		cmd  string
		ok   bool
		// want is the whole stdout of a command that succeeds.
		want string
		// never may appear in stdout or stderr.
		never []string
	}{
		{"provider key", "printenv OPENAI_API_KEY | rev; env", true, "",
			[]string{testKey, reverse(testKey), "tok-alice", "OPENAI_API_KEY"}},
		{"own variables", `echo "$GREETING $HOME $TMPDIR $PATH"`, true, "hello " + ws + " " + tmp + " " + DefaultLocalPath + "\n", nil},
		{"host temp listed", "ls " + os.TempDir(), false, "", []string{filepath.Base(marker.Name())}},
		{"host temp file read", "cat " + marker.Name(), false, "", []string{"host secret"}},
		{"other workspace read", "cat " + filepath.Join(bobWS, "secret.txt"), false, "", []string{"bob's secret"}},
		{"other workspace listed", "ls " + bobWS, false, "", []string{"secret.txt"}},
		{"other workspace written", "echo x > " + filepath.Join(bobWS, "pwned"), false, "", nil},
		{"state dir read", "ls " + state, false, "", []string{"sandboxes"}},
		{"outside written", "touch " + filepath.Join(state, "pwned"), false, "", nil},
		{"server home listed", "ls -a " + home, false, "", nil},
		{"workspace and temp dir", `echo w > w.txt && cat w.txt && echo t > "$TMPDIR/t" && cat "$TMPDIR/t"`, true, "w\nt\n", nil},
		{"ordinary commands", `printf 'b\na\n' | sort | head -n 1; ls /usr/bin | grep -q . && echo ls-ok; grep -q '^root:' /etc/passwd && echo etc-ok`,
			true, "a\nls-ok\netc-ok\n", nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			res, err := execOn(as("alice"), cli, &sandboxv1.ExecRequest{AgentId: "dev", Command: tc.cmd})
			if err != nil {
				t.Fatal(err)
			}
			code := res.exit.GetExitCode()
			if (code == 0) != tc.ok || (tc.ok && tc.want != "" && res.stdout != tc.want) {
				t.Fatalf("%q: exit %d, stdout %q, stderr %q", tc.cmd, code, res.stdout, res.stderr)
			}
			for _, n := range tc.never {
				if strings.Contains(res.stdout+res.stderr, n) {
					t.Fatalf("%q revealed %q: stdout %q, stderr %q", tc.cmd, n, res.stdout, res.stderr)
				}
			}
		})
	}
	for _, p := range []string{filepath.Join(bobWS, "pwned"), filepath.Join(state, "pwned")} {
		if _, err := os.Lstat(p); !os.IsNotExist(err) {
			t.Errorf("%s was written: %v", p, err)
		}
	}

	// The terminal is confined the same way.
	out := terminalSession(ctx, t, cli, "alice", "dev",
		"cat "+filepath.Join(bobWS, "secret.txt")+"; printenv OPENAI_API_KEY; echo end-$((6*7)); exit 0\n")
	if strings.Contains(out, "bob's secret") || strings.Contains(out, testKey) || !strings.Contains(out, "end-42") {
		t.Fatalf("terminal output %q", out)
	}
}

// terminalSession types input into a new terminal and returns everything it
// printed until the shell exited.
func terminalSession(ctx context.Context, t *testing.T, cli sandboxv1.SandboxServiceClient, user, agent, input string) string {
	t.Helper()
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	st, err := cli.Terminal(identity.WithUser(ctx, user))
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range []*sandboxv1.TerminalRequest{
		{Msg: &sandboxv1.TerminalRequest_Start{Start: &sandboxv1.TerminalStart{AgentId: agent}}},
		{Msg: &sandboxv1.TerminalRequest_Input{Input: []byte(input)}},
	} {
		if err := st.Send(m); err != nil {
			t.Fatal(err)
		}
	}
	var out strings.Builder
	for {
		m, err := st.Recv()
		if err != nil {
			t.Fatalf("terminal: %v (output %q)", err, out.String())
		}
		out.Write(m.GetOutput())
		if m.GetExit() != nil {
			return out.String()
		}
	}
}

// TestLocalWithoutLandlock takes the path of a kernel without Landlock: the
// service says so once at start-up; several users are refused local
// sandboxes, a single user gets them unconfined but still with a scrubbed
// environment. Not parallel: it sets the service's environment.
func TestLocalWithoutLandlock(t *testing.T) {
	t.Setenv("OPENAI_API_KEY", testKey)
	for _, tc := range []struct {
		name      string
		multiUser bool
		warning   string
	}{
		{"several users", true, "local sandboxes are REFUSED"},
		{"one user", false, "local sandboxes run UNCONFINED"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var logs testenv.LogBuffer
			_, cli := newLocal(t, Config{AllowLocal: true, MultiUser: tc.multiUser},
				withLandlockProbe(func() int { return 0 }), WithLogger(slog.New(slog.NewTextHandler(&logs, nil))))
			ctx, cancel := context.WithTimeout(as("alice"), time.Minute)
			defer cancel()
			for _, agent := range []string{"a", "b"} {
				_, err := cli.EnsureSandbox(ctx, &sandboxv1.EnsureSandboxRequest{AgentId: agent, Spec: &sandboxv1.SandboxSpec{Type: backend.Local}})
				if tc.multiUser {
					if status.Code(err) != codes.FailedPrecondition || !strings.Contains(err.Error(), "Landlock") {
						t.Fatalf("local sandbox for several users without Landlock: %v", err)
					}
					continue
				}
				if err != nil {
					t.Fatal(err)
				}
				res, err := execOn(ctx, cli, &sandboxv1.ExecRequest{AgentId: agent, Command: "printenv OPENAI_API_KEY; echo done"})
				if err != nil || res.stdout != "done\n" {
					t.Fatalf("unconfined local exec: %+v %v", res, err)
				}
			}
			if n := strings.Count(logs.String(), tc.warning); n != 1 || !strings.Contains(logs.String(), "level=WARN") {
				t.Fatalf("want one warning %q at start-up, logs:\n%s", tc.warning, logs.String())
			}
		})
	}
}

// TestLocalNeedsAllowLocalForSeveralUsers: with several users, neither the
// local default type nor the fallback implies AllowLocal.
func TestLocalNeedsAllowLocalForSeveralUsers(t *testing.T) {
	t.Parallel()
	for _, cfg := range []Config{
		{MultiUser: true, LocalFallback: true},
		{MultiUser: true, DefaultType: backend.Local},
	} {
		cfg.StateDir = filepath.Join(shortTemp(t), "s")
		if _, err := New(cfg, WithEngineDialer(noDocker), WithLogger(slog.New(slog.NewTextHandler(io.Discard, nil)))); err == nil || !strings.Contains(err.Error(), "-allow-local") {
			t.Fatalf("New(%+v) = %v; want a refusal naming -allow-local", cfg, err)
		}
	}
	_, cli := newLocal(t, Config{MultiUser: true})
	_, err := cli.EnsureSandbox(as("alice"), &sandboxv1.EnsureSandboxRequest{AgentId: "a", Spec: &sandboxv1.SandboxSpec{Type: backend.Local}})
	if status.Code(err) != codes.PermissionDenied {
		t.Fatalf("local sandbox for several users without AllowLocal: %v", err)
	}
}

// TestLocalNetwork: network "none" (the default) keeps a local sandbox's
// commands off TCP, loopback included, where services may trust their
// callers; "bridge" lets them connect, as it gives a Docker sandbox a network.
func TestLocalNetwork(t *testing.T) {
	requireLandlock(t)
	if confine.ABI() < 4 {
		testenv.Missing(t, "Landlock ABI 4 (TCP control)")
	}
	bash, err := exec.LookPath("bash")
	if err != nil {
		t.Skip("skipping: no bash to open a TCP connection from the shell")
	}
	t.Parallel()
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
	_, cli := newLocal(t, Config{AllowLocal: true, AllowBridge: true})
	ctx, cancel := context.WithTimeout(as("alice"), time.Minute)
	defer cancel()
	_, port, _ := net.SplitHostPort(lis.Addr().String())
	cmd := bash + " -c 'exec 3<>/dev/tcp/127.0.0.1/" + port + " && echo connected'"
	for _, tc := range []struct {
		network string
		ok      bool
	}{{"none", false}, {"bridge", true}} {
		if _, err := cli.EnsureSandbox(ctx, &sandboxv1.EnsureSandboxRequest{AgentId: tc.network, Spec: &sandboxv1.SandboxSpec{Type: backend.Local, Network: tc.network}}); err != nil {
			t.Fatal(err)
		}
		res, err := execOn(ctx, cli, &sandboxv1.ExecRequest{AgentId: tc.network, Command: cmd})
		if err != nil || (res.stdout == "connected\n") != tc.ok {
			t.Fatalf("network %s: %+v %v", tc.network, res, err)
		}
	}
}

// TestLocalReadOnly: a host directory named in LocalReadOnly is readable by
// a local sandbox's commands, not writable, and a directory beside it stays
// out of reach; a relative path is refused at start.
func TestLocalReadOnly(t *testing.T) {
	requireLandlock(t)
	host := t.TempDir()
	shared, private := filepath.Join(host, "shared"), filepath.Join(host, "private")
	for _, d := range []string{shared, private} {
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(d, "f.txt"), []byte("in "+filepath.Base(d)+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := New(Config{AllowLocal: true, StateDir: t.TempDir(), LocalReadOnly: []string{"relative/dir"}}); err == nil || !strings.Contains(err.Error(), "not absolute") {
		t.Fatalf("a relative read-only path: %v", err)
	}
	_, cli := newLocal(t, Config{AllowLocal: true, MultiUser: true, LocalReadOnly: []string{shared}})
	if _, err := cli.EnsureSandbox(as("alice"), &sandboxv1.EnsureSandboxRequest{AgentId: "ro", Spec: &sandboxv1.SandboxSpec{Type: backend.Local}}); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		cmd  string
		ok   bool
		want string
	}{
		{"cat " + filepath.Join(shared, "f.txt"), true, "in shared\n"},
		{"touch " + filepath.Join(shared, "new"), false, ""},
		{"cat " + filepath.Join(private, "f.txt"), false, ""},
	} {
		t.Run(tc.cmd, func(t *testing.T) {
			res, err := execOn(as("alice"), cli, &sandboxv1.ExecRequest{AgentId: "ro", Command: tc.cmd})
			if err != nil {
				t.Fatal(err)
			}
			if code := res.exit.GetExitCode(); (code == 0) != tc.ok || res.stdout != tc.want {
				t.Fatalf("exit %d, stdout %q, stderr %q", code, res.stdout, res.stderr)
			}
		})
	}
	if _, err := os.Stat(filepath.Join(shared, "new")); !os.IsNotExist(err) {
		t.Fatalf("the read-only directory was written: %v", err)
	}
}
