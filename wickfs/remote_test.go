package wickfs_test

import (
	"bytes"
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/wick-agent/wick/wickfs"
)

var (
	buildOnce sync.Once
	cliPath   string
	buildErr  error
	buildDir  string
)

// buildCLI builds cmd/wickfs once per test binary, static as it ships.
func buildCLI(t *testing.T) string {
	t.Helper()
	buildOnce.Do(func() {
		buildDir, buildErr = os.MkdirTemp("", "wickfs-cli-")
		if buildErr != nil {
			return
		}
		cliPath = filepath.Join(buildDir, "wickfs")
		cmd := exec.Command("go", "build", "-o", cliPath, "./cmd/wickfs")
		cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
		if out, err := cmd.CombinedOutput(); err != nil {
			buildErr = errors.New(string(out))
		}
	})
	if buildErr != nil {
		t.Fatalf("build wickfs: %v", buildErr)
	}
	return cliPath
}

func TestMain(m *testing.M) {
	code := m.Run()
	if buildDir != "" {
		os.RemoveAll(buildDir)
	}
	os.Exit(code)
}

// shellExecutor runs command lines with sh, the way docker exec does in a
// container, with WICKFS_ROOT pointing at the workspace.
type shellExecutor struct{ root string }

func (e shellExecutor) Run(ctx context.Context, command string) (string, int, error) {
	return e.RunWithStdin(ctx, command, "")
}

func (e shellExecutor) RunWithStdin(ctx context.Context, command, stdin string) (string, int, error) {
	cmd := exec.CommandContext(ctx, "sh", "-c", command)
	cmd.Env = append(os.Environ(), "WICKFS_ROOT="+e.root)
	cmd.Stdin = strings.NewReader(stdin)
	var out bytes.Buffer
	cmd.Stdout = &out
	cmd.Stderr = &out // noise on the same stream, as a tty-less docker exec may give
	err := cmd.Run()
	var exitErr *exec.ExitError
	if errors.As(err, &exitErr) {
		return out.String(), exitErr.ExitCode(), nil
	}
	return out.String(), 0, err
}

// TestRemoteMatchesLocal runs every operation through RemoteFS and the real
// CLI and through LocalFS on twin workspaces, and wants the same results.
func TestRemoteMatchesLocal(t *testing.T) {
	t.Parallel()
	bin := buildCLI(t)
	files := map[string]string{
		"app.py":       "print('hi')\n# TODO it's 'quoted'\n",
		"src/a.go":     "package a\n// TODO\n",
		"bin.dat":      "\xff\x00\x01",
		"dup.txt":      "x x x",
		"lines.txt":    "1\n2\n3\n4\n",
		"with space/f": "TODO space",
	}
	local, _ := newFS(t, files)
	rdir := t.TempDir()
	writeTree(t, rdir, files)
	remote := wickfs.NewRemoteFS(shellExecutor{root: rdir}, wickfs.WithBinary(bin))
	ctx := context.Background()

	type op func(fs wickfs.FileSystem) (any, error)
	for _, tc := range []struct {
		name string
		op   op
	}{
		{"ls", func(fs wickfs.FileSystem) (any, error) { return fs.Ls(ctx, "/workspace") }},
		{"ls missing", func(fs wickfs.FileSystem) (any, error) { return fs.Ls(ctx, "nope") }},
		{"read", func(fs wickfs.FileSystem) (any, error) { return fs.ReadFile(ctx, "app.py") }},
		{"read binary", func(fs wickfs.FileSystem) (any, error) { return fs.ReadFile(ctx, "bin.dat") }},
		{"read escape", func(fs wickfs.FileSystem) (any, error) { return fs.ReadFile(ctx, "/etc/passwd") }},
		{"read dir", func(fs wickfs.FileSystem) (any, error) { return fs.ReadFile(ctx, "src") }},
		{"read lines", func(fs wickfs.FileSystem) (any, error) { return fs.ReadLines(ctx, "lines.txt", 1, 2) }},
		{"write", func(fs wickfs.FileSystem) (any, error) {
			return fs.WriteFile(ctx, "new/dir/o'dd name.txt", "it's\n$(echo nope) `x` \"q\"\n")
		}},
		{"write then read", func(fs wickfs.FileSystem) (any, error) {
			if _, err := fs.WriteFile(ctx, "rt.txt", "ünïcode\n"); err != nil {
				return nil, err
			}
			return fs.ReadFile(ctx, "rt.txt")
		}},
		{"edit", func(fs wickfs.FileSystem) (any, error) {
			return fs.EditFile(ctx, "app.py", "print('hi')", "print(\"bye\")")
		}},
		{"edit ambiguous", func(fs wickfs.FileSystem) (any, error) { return fs.EditFile(ctx, "dup.txt", "x", "y") }},
		{"edit all", func(fs wickfs.FileSystem) (any, error) {
			return fs.EditFile(ctx, "lines.txt", "\n", "\r\n", wickfs.ReplaceAll())
		}},
		{"edit empty", func(fs wickfs.FileSystem) (any, error) { return fs.EditFile(ctx, "app.py", "", "x") }},
		{"grep", func(fs wickfs.FileSystem) (any, error) { return fs.Grep(ctx, "TODO", "") }},
		{"grep dash pattern", func(fs wickfs.FileSystem) (any, error) { return fs.Grep(ctx, "-x", "") }},
		{"grep bad", func(fs wickfs.FileSystem) (any, error) { return fs.Grep(ctx, "(", "") }},
		{"glob", func(fs wickfs.FileSystem) (any, error) { return fs.Glob(ctx, "**/*.go", "/workspace") }},
		{"glob bad", func(fs wickfs.FileSystem) (any, error) { return fs.Glob(ctx, "[", "") }},
		{"exec", func(fs wickfs.FileSystem) (any, error) {
			return fs.Exec(ctx, "echo 'a b'; echo $X >&2; exit 2", wickfs.WithEnv(map[string]string{"X": "y z"}), wickfs.WithWorkdir("src"))
		}},
		{"exec timeout", func(fs wickfs.FileSystem) (any, error) {
			return fs.Exec(ctx, "sleep 5", wickfs.WithTimeout(200*time.Millisecond))
		}},
		{"exec cap", func(fs wickfs.FileSystem) (any, error) { return fs.Exec(ctx, "echo 123456", wickfs.WithMaxOutput(3)) }},
		{"exec binary output", func(fs wickfs.FileSystem) (any, error) { return fs.Exec(ctx, `printf 'x\377\376y'`) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			lres, lerr := tc.op(local)
			rres, rerr := tc.op(remote)
			if (lerr == nil) != (rerr == nil) {
				t.Fatalf("local error %v, remote error %v", lerr, rerr)
			}
			if lerr != nil {
				if wickfs.ErrorKind(lerr) != wickfs.ErrorKind(rerr) || lerr.Error() != rerr.Error() {
					t.Fatalf("local error %q (%s), remote error %q (%s)", lerr, wickfs.ErrorKind(lerr), rerr, wickfs.ErrorKind(rerr))
				}
				return
			}
			if !reflect.DeepEqual(lres, rres) {
				t.Fatalf("local %+v\nremote %+v", lres, rres)
			}
		})
	}
}

func TestRemoteNoCLI(t *testing.T) {
	t.Parallel()
	remote := wickfs.NewRemoteFS(shellExecutor{root: t.TempDir()}, wickfs.WithBinary("/nonexistent/wickfs"))
	_, err := remote.Ls(context.Background(), "")
	if !errors.Is(err, wickfs.ErrNoResponse) {
		t.Fatalf("Ls without the CLI = %v; want ErrNoResponse", err)
	}
}

func TestCLI(t *testing.T) {
	t.Parallel()
	bin := buildCLI(t)
	dir := t.TempDir()
	writeTree(t, dir, map[string]string{"f.txt": "hello\n"})
	for _, tc := range []struct {
		name  string
		args  []string
		stdin string
		code  int
		out   string
	}{
		{"read", []string{"read", "/workspace/f.txt"}, "", 0, `{"ok":true,"data":"hello\n"}`},
		{"no command", nil, "", 1, `"kind":"invalid_argument"`},
		{"unknown", []string{"frobnicate"}, "", 1, `unknown command \"frobnicate\"`},
		{"read no path", []string{"read"}, "", 1, `usage: wickfs read`},
		{"missing", []string{"read", "nope"}, "", 1, `{"ok":false,"error":"read /workspace/nope: no such file or directory","kind":"not_found"}`},
		{"edit bad json", []string{"edit", "f.txt"}, "not json", 1, `stdin is not the JSON`},
		{"edit", []string{"edit", "f.txt"}, `{"old_text":"hello","new_text":"bye"}`, 0, `"replacements":1`},
		{"oversized write", []string{"-max-write-bytes", "4", "write", "g.txt"}, "12345", 1, `"kind":"too_large"`},
		{"write", []string{"write", "g.txt"}, "1234", 0, `{"ok":true,"data":{"path":"/workspace/g.txt","bytes_written":4}}`},
		{"exec joins args", []string{"exec", "echo", "a", "b"}, "", 0, `"stdout":"a b\n"`},
		{"exec flags", []string{"exec", "-env", "A=1", "--", "echo $A"}, "", 0, `"stdout":"1\n"`},
		{"exec bad flag", []string{"exec", "-nope", "x"}, "", 1, `usage: wickfs exec`},
		{"root flag", []string{"-root", dir, "-prefix", "/", "ls", "/"}, "", 0, `"name":"f.txt"`},
		{"missing root", []string{"-root", filepath.Join(dir, "nope"), "ls"}, "", 1, `open root`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cmd := exec.Command(bin, tc.args...)
			cmd.Env = append(os.Environ(), "WICKFS_ROOT="+dir)
			cmd.Stdin = strings.NewReader(tc.stdin)
			out, err := cmd.Output()
			code := 0
			var exitErr *exec.ExitError
			if errors.As(err, &exitErr) {
				code = exitErr.ExitCode()
			} else if err != nil {
				t.Fatal(err)
			}
			if code != tc.code || !strings.Contains(string(out), tc.out) {
				t.Fatalf("wickfs %q: exit %d, output %s; want exit %d and %s", tc.args, code, out, tc.code, tc.out)
			}
			if strings.Count(string(out), "\n") != 1 {
				t.Errorf("output is not one JSON line: %q", out)
			}
		})
	}
}

func TestShellQuote(t *testing.T) {
	t.Parallel()
	for _, s := range []string{"", "plain", "it's", "'", "''", "a b\tc\nd", "$(rm -rf /)", "`x`", `\"\\`, "ü 日本"} {
		t.Run(s, func(t *testing.T) {
			t.Parallel()
			out, err := exec.Command("sh", "-c", "printf %s "+wickfs.ShellQuote(s)).Output()
			if err != nil || string(out) != s {
				t.Fatalf("sh printf %s = %q, %v; want %q", wickfs.ShellQuote(s), out, err, s)
			}
		})
	}
}
