package server_test

import (
	"context"
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	daemonv1 "github.com/wick-agent/wick/gen/wick/daemon/v1"
	"github.com/wick-agent/wick/wickfs"
)

// TestFileSystemMatchesLocal runs every FileSystem operation through the
// daemon (generated client over a Unix socket) and directly on a LocalFS of a
// twin workspace, and wants the same results and error kinds.
func TestFileSystemMatchesLocal(t *testing.T) {
	t.Parallel()
	files := map[string]string{
		"app.py":    "print('hi')\n# TODO one\n",
		"src/a.go":  "package a\n// TODO two\n",
		"bin.dat":   "\xff\x00\x01",
		"dup.txt":   "x x x",
		"lines.txt": "1\n2\n3\n4\n",
		"empty":     "",
		"d/":        "",
	}
	d := start(t, config{files: files})
	twin := start(t, config{files: files})
	ctx := context.Background()
	type op func(fs wickfs.FileSystem) (any, error)
	for _, tc := range []struct {
		name string
		op   op
	}{
		{"ls", func(fs wickfs.FileSystem) (any, error) { return fs.Ls(ctx, "") }},
		{"ls missing", func(fs wickfs.FileSystem) (any, error) { return fs.Ls(ctx, "nope") }},
		{"ls file", func(fs wickfs.FileSystem) (any, error) { return fs.Ls(ctx, "app.py") }},
		{"read", func(fs wickfs.FileSystem) (any, error) { return fs.ReadFile(ctx, "/workspace/app.py") }},
		{"read empty", func(fs wickfs.FileSystem) (any, error) { return fs.ReadFile(ctx, "empty") }},
		{"read binary", func(fs wickfs.FileSystem) (any, error) { return fs.ReadFile(ctx, "bin.dat") }},
		{"read dir", func(fs wickfs.FileSystem) (any, error) { return fs.ReadFile(ctx, "d") }},
		{"read escape", func(fs wickfs.FileSystem) (any, error) { return fs.ReadFile(ctx, "../../etc/passwd") }},
		{"read non-UTF-8 path", func(fs wickfs.FileSystem) (any, error) { return fs.ReadFile(ctx, "\xff") }},
		{"lines", func(fs wickfs.FileSystem) (any, error) { return fs.ReadLines(ctx, "lines.txt", 1, 2) }},
		{"lines all", func(fs wickfs.FileSystem) (any, error) { return fs.ReadLines(ctx, "lines.txt", 0, 0) }},
		{"lines past end", func(fs wickfs.FileSystem) (any, error) { return fs.ReadLines(ctx, "lines.txt", 9, 2) }},
		{"lines binary", func(fs wickfs.FileSystem) (any, error) { return fs.ReadLines(ctx, "bin.dat", 0, 2) }},
		{"write", func(fs wickfs.FileSystem) (any, error) { return fs.WriteFile(ctx, "new/x.txt", "content") }},
		{"write dir", func(fs wickfs.FileSystem) (any, error) { return fs.WriteFile(ctx, "d", "content") }},
		{"write escape", func(fs wickfs.FileSystem) (any, error) { return fs.WriteFile(ctx, "/tmp/x", "content") }},
		{"edit", func(fs wickfs.FileSystem) (any, error) { return fs.EditFile(ctx, "app.py", "hi", "bye") }},
		{"edit ambiguous", func(fs wickfs.FileSystem) (any, error) { return fs.EditFile(ctx, "dup.txt", "x", "y") }},
		{"edit all", func(fs wickfs.FileSystem) (any, error) {
			return fs.EditFile(ctx, "dup.txt", "x", "y", wickfs.ReplaceAll())
		}},
		{"edit not found", func(fs wickfs.FileSystem) (any, error) { return fs.EditFile(ctx, "app.py", "zzz", "y") }},
		{"edit empty", func(fs wickfs.FileSystem) (any, error) { return fs.EditFile(ctx, "app.py", "", "y") }},
		{"grep", func(fs wickfs.FileSystem) (any, error) { return fs.Grep(ctx, "TODO", "") }},
		{"grep file", func(fs wickfs.FileSystem) (any, error) { return fs.Grep(ctx, "TODO", "src/a.go") }},
		{"grep bad", func(fs wickfs.FileSystem) (any, error) { return fs.Grep(ctx, "[", "") }},
		{"glob", func(fs wickfs.FileSystem) (any, error) { return fs.Glob(ctx, "*.go", "") }},
		{"glob none", func(fs wickfs.FileSystem) (any, error) { return fs.Glob(ctx, "*.rs", "") }},
		{"glob bad", func(fs wickfs.FileSystem) (any, error) { return fs.Glob(ctx, "[", "") }},
		{"exec", func(fs wickfs.FileSystem) (any, error) {
			return fs.Exec(ctx, "pwd | sed 's|.*/||'; echo e >&2; exit 5", wickfs.WithWorkdir("src"), wickfs.WithEnv(map[string]string{"A": "b"}))
		}},
		{"exec timeout", func(fs wickfs.FileSystem) (any, error) {
			return fs.Exec(ctx, "echo before; sleep 10", wickfs.WithTimeout(200*time.Millisecond))
		}},
		{"exec cap", func(fs wickfs.FileSystem) (any, error) { return fs.Exec(ctx, "echo 123456", wickfs.WithMaxOutput(3)) }},
		{"exec binary output", func(fs wickfs.FileSystem) (any, error) { return fs.Exec(ctx, `printf 'x\377\376y'`) }},
		{"exec empty", func(fs wickfs.FileSystem) (any, error) { return fs.Exec(ctx, "") }},
		{"exec bad workdir", func(fs wickfs.FileSystem) (any, error) { return fs.Exec(ctx, "ls", wickfs.WithWorkdir("/etc")) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rres, rerr := tc.op(d.fs)
			lres, lerr := tc.op(twin.local)
			if (lerr == nil) != (rerr == nil) {
				t.Fatalf("local error %v, daemon error %v", lerr, rerr)
			}
			if lerr != nil {
				if wickfs.ErrorKind(lerr) == "" || wickfs.ErrorKind(lerr) != wickfs.ErrorKind(rerr) || lerr.Error() != rerr.Error() {
					t.Fatalf("local error %q (%s), daemon error %q (%s)", lerr, wickfs.ErrorKind(lerr), rerr, wickfs.ErrorKind(rerr))
				}
				return
			}
			if !reflect.DeepEqual(lres, rres) {
				t.Fatalf("local %+v\ndaemon %+v", lres, rres)
			}
		})
	}
}

func TestStatusCodes(t *testing.T) {
	t.Parallel()
	d := start(t, config{files: map[string]string{"f.txt": "x"}, server: nil})
	ctx := context.Background()
	for _, tc := range []struct {
		name string
		call func() error
		code codes.Code
	}{
		{"not found", func() error { _, err := d.client.Ls(ctx, &daemonv1.LsRequest{Path: "nope"}); return err }, codes.NotFound},
		{"escape", func() error { _, err := d.client.Ls(ctx, &daemonv1.LsRequest{Path: "/etc"}); return err }, codes.PermissionDenied},
		{"bad regex", func() error { _, err := d.client.Grep(ctx, &daemonv1.GrepRequest{Pattern: "("}); return err }, codes.InvalidArgument},
		{"negative cap", func() error {
			_, err := d.client.Grep(ctx, &daemonv1.GrepRequest{Pattern: "x", MaxMatches: -1})
			return err
		}, codes.InvalidArgument},
		{"cap above ceiling", func() error {
			_, err := d.client.Glob(ctx, &daemonv1.GlobRequest{Pattern: "*", MaxFiles: 1 << 30})
			return err
		}, codes.InvalidArgument},
		{"edit empty", func() error {
			_, err := d.client.EditFile(ctx, &daemonv1.EditFileRequest{Path: "f.txt"})
			return err
		}, codes.InvalidArgument},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			if got := status.Code(tc.call()); got != tc.code {
				t.Fatalf("code = %v; want %v", got, tc.code)
			}
		})
	}
	res, err := d.client.Glob(ctx, &daemonv1.GlobRequest{Pattern: "*", MaxFiles: 1})
	if err != nil || len(res.GetFiles()) != 1 {
		t.Fatalf("Glob with a cap = %v, %v", res, err)
	}
	if _, err := d.fs.Ls(ctx, "/etc"); !errors.Is(err, wickfs.ErrOutsideWorkspace) || status.Code(err) != codes.PermissionDenied {
		t.Fatalf("daemonfs error = %v; want ErrOutsideWorkspace keeping its status", err)
	}
}

func TestHealth(t *testing.T) {
	t.Parallel()
	d := start(t, config{server: nil})
	res, err := d.client.Health(context.Background(), &daemonv1.HealthRequest{})
	if err != nil {
		t.Fatal(err)
	}
	if res.GetVersion() != "dev" || res.GetUptime().AsDuration() < 0 || res.GetWorkspaceRoot() != d.dir || res.GetPid() == 0 {
		t.Fatalf("Health = %v", res)
	}
	if !strings.HasPrefix(d.dir, "/") {
		t.Fatal("workspace root not absolute")
	}
}
