package wickfs_test

import (
	"context"
	"encoding/base64"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"syscall"
	"testing"

	"github.com/wick-agent/wick/wickfs"
)

func TestResolve(t *testing.T) {
	t.Parallel()
	fsys, _ := newFS(t, nil)
	tests := []struct {
		in, rel, agent string
		err            error
	}{
		{"", ".", "/workspace", nil},
		{"/workspace", ".", "/workspace", nil},
		{"/workspace/", ".", "/workspace", nil},
		{"app.py", "app.py", "/workspace/app.py", nil},
		{"./src/../app.py", "app.py", "/workspace/app.py", nil},
		{"/workspace/a/b/../c", "a/c", "/workspace/a/c", nil},
		{"/workspace/../etc/passwd", "", "", wickfs.ErrOutsideWorkspace},
		{"../x", "", "", wickfs.ErrOutsideWorkspace},
		{"/etc/passwd", "", "", wickfs.ErrOutsideWorkspace},
		{"/workspacefoo/x", "", "", wickfs.ErrOutsideWorkspace},
		{"/work\xffspace/x", "", "", wickfs.ErrInvalidArgument},
		{"a\x00b", "", "", wickfs.ErrInvalidArgument},
	}
	for _, tc := range tests {
		t.Run(tc.in, func(t *testing.T) {
			t.Parallel()
			rel, agent, err := fsys.Resolve(tc.in)
			if !errors.Is(err, tc.err) || (tc.err == nil && err != nil) {
				t.Fatalf("Resolve(%q) error = %v, want %v", tc.in, err, tc.err)
			}
			if rel != tc.rel || agent != tc.agent {
				t.Errorf("Resolve(%q) = %q, %q; want %q, %q", tc.in, rel, agent, tc.rel, tc.agent)
			}
		})
	}
}

func TestResolveRootPrefix(t *testing.T) {
	t.Parallel()
	fsys, _ := newFS(t, map[string]string{"etc/x": "1"}, wickfs.WithPrefix("/"))
	rel, agent, err := fsys.Resolve("/etc/x")
	if err != nil || rel != "etc/x" || agent != "/etc/x" {
		t.Fatalf("Resolve = %q, %q, %v", rel, agent, err)
	}
	if _, _, err := fsys.Resolve("/../../x"); err != nil {
		t.Fatalf("/.. cleans to / and stays inside: %v", err)
	}
}

// escapeFS is a workspace with symlinks that lead out of it.
func escapeFS(t *testing.T) (*wickfs.LocalFS, string) {
	t.Helper()
	outside := t.TempDir()
	writeTree(t, outside, map[string]string{"secret.txt": "top secret", "d/f.txt": "x"})
	fsys, dir := newFS(t, map[string]string{"ok.txt": "fine", "sub/": ""})
	for name, target := range map[string]string{
		"link-out":       filepath.Join(outside, "secret.txt"),
		"dir-out":        filepath.Join(outside, "d"),
		"sub/rel-out":    "../../" + filepath.Base(outside) + "/secret.txt",
		"link-in":        "ok.txt",
		"sub/link-up-in": "../ok.txt",
	} {
		if err := os.Symlink(target, filepath.Join(dir, name)); err != nil {
			t.Fatal(err)
		}
	}
	return fsys, dir
}

func TestSymlinkConfinement(t *testing.T) {
	t.Parallel()
	fsys, dir := escapeFS(t)
	ctx := context.Background()
	for _, p := range []string{"link-out", "dir-out/f.txt", "sub/rel-out"} {
		t.Run("read "+p, func(t *testing.T) {
			t.Parallel()
			got, err := fsys.ReadFile(ctx, p)
			if !errors.Is(err, wickfs.ErrOutsideWorkspace) {
				t.Fatalf("ReadFile(%s) = %q, %v; want ErrOutsideWorkspace", p, got, err)
			}
			if strings.Contains(err.Error(), dir) {
				t.Errorf("error %q shows the host path", err)
			}
		})
	}
	t.Run("write through dir link", func(t *testing.T) {
		t.Parallel()
		if _, err := fsys.WriteFile(ctx, "dir-out/new.txt", "x"); !errors.Is(err, wickfs.ErrOutsideWorkspace) {
			t.Fatalf("WriteFile through a link out = %v; want ErrOutsideWorkspace", err)
		}
	})
	t.Run("ls dir link", func(t *testing.T) {
		t.Parallel()
		if _, err := fsys.Ls(ctx, "dir-out"); !errors.Is(err, wickfs.ErrOutsideWorkspace) {
			t.Fatalf("Ls through a link out = %v; want ErrOutsideWorkspace", err)
		}
	})
	t.Run("exec workdir link", func(t *testing.T) {
		t.Parallel()
		if _, err := fsys.Exec(ctx, "pwd", wickfs.WithWorkdir("dir-out")); !errors.Is(err, wickfs.ErrOutsideWorkspace) {
			t.Fatalf("Exec in a link out = %v; want ErrOutsideWorkspace", err)
		}
	})
	for _, p := range []string{"link-in", "sub/link-up-in"} {
		t.Run("inside "+p, func(t *testing.T) {
			t.Parallel()
			if got, err := fsys.ReadFile(ctx, p); err != nil || got != "fine" {
				t.Fatalf("ReadFile(%s) = %q, %v; want fine", p, got, err)
			}
		})
	}
	t.Run("grep skips links", func(t *testing.T) {
		t.Parallel()
		res, err := fsys.Grep(ctx, "secret|fine", "/workspace")
		if err != nil {
			t.Fatal(err)
		}
		if len(res.Matches) != 1 || res.Matches[0].File != "/workspace/ok.txt" {
			t.Fatalf("Grep = %+v; want only ok.txt", res.Matches)
		}
	})
}

func TestLs(t *testing.T) {
	t.Parallel()
	fsys, dir := newFS(t, map[string]string{"b.txt": "12345", "a/": "", "a/x": "1"})
	if err := os.Symlink("b.txt", filepath.Join(dir, "c")); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	got, err := fsys.Ls(ctx, "/workspace")
	if err != nil {
		t.Fatal(err)
	}
	names := []string{}
	for _, e := range got {
		names = append(names, e.Name+":"+e.Type)
	}
	if want := []string{"a:dir", "b.txt:file", "c:symlink"}; !reflect.DeepEqual(names, want) {
		t.Errorf("Ls = %v; want %v", names, want)
	}
	if got[1].Size != 5 {
		t.Errorf("size of b.txt = %d; want 5", got[1].Size)
	}
	if err := syscall.Mkfifo(filepath.Join(dir, "fifo"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		path string
		err  error
	}{
		{"fifo", wickfs.ErrInvalidArgument},
		{"missing", wickfs.ErrNotFound},
		{"b.txt", wickfs.ErrInvalidArgument},
		{"/etc", wickfs.ErrOutsideWorkspace},
		{"\xff", wickfs.ErrInvalidArgument},
	} {
		t.Run(tc.path, func(t *testing.T) {
			if _, err := fsys.Ls(ctx, tc.path); !errors.Is(err, tc.err) {
				t.Errorf("Ls(%q) = %v; want %v", tc.path, err, tc.err)
			}
		})
	}
}

func TestReadFile(t *testing.T) {
	t.Parallel()
	bin := []byte{0xff, 0x00, 0x01, 'a'}
	fsys, dir := newFS(t, map[string]string{
		"text.txt": "héllo\nworld\n",
		"bin.dat":  string(bin),
		"empty":    "",
		"big.txt":  strings.Repeat("x", 2000),
		"dir/":     "",
	}, wickfs.WithMaxReadBytes(1000))
	tests := []struct {
		name, path, want string
		err              error
	}{
		{"text", "/workspace/text.txt", "héllo\nworld\n", nil},
		{"binary", "bin.dat", "base64:" + base64.StdEncoding.EncodeToString(bin), nil},
		{"empty", "empty", "", nil},
		{"missing", "nope.txt", "", wickfs.ErrNotFound},
		{"directory", "dir", "", wickfs.ErrInvalidArgument},
		{"too large", "big.txt", "", wickfs.ErrTooLarge},
		{"escape", "../etc/passwd", "", wickfs.ErrOutsideWorkspace},
		{"non-UTF-8 path", "a\xfe.txt", "", wickfs.ErrInvalidArgument},
		{"fifo", "fifo", "", wickfs.ErrInvalidArgument},
	}
	if err := syscall.Mkfifo(filepath.Join(dir, "fifo"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			got, err := fsys.ReadFile(context.Background(), tc.path)
			if !errors.Is(err, tc.err) || (tc.err == nil && err != nil) {
				t.Fatalf("ReadFile(%q) error = %v; want %v", tc.path, err, tc.err)
			}
			if got != tc.want {
				t.Errorf("ReadFile(%q) = %q; want %q", tc.path, got, tc.want)
			}
		})
	}
}

func TestReadLines(t *testing.T) {
	t.Parallel()
	fsys, _ := newFS(t, map[string]string{
		"f.txt":   "one\ntwo\r\nthree\nfour",
		"bin.txt": "ok\n\xff\xfe\n",
		"long":    strings.Repeat("y", 100) + "\nshort\n",
	}, wickfs.WithMaxReadBytes(50))
	tests := []struct {
		name          string
		path          string
		offset, limit int
		lines         []string
		more          bool
		err           error
	}{
		{"all", "f.txt", 0, 0, []string{"one", "two", "three", "four"}, false, nil},
		{"window", "f.txt", 1, 2, []string{"two", "three"}, true, nil},
		{"exact end", "f.txt", 2, 2, []string{"three", "four"}, false, nil},
		{"past end", "f.txt", 10, 5, []string{}, false, nil},
		{"negative", "f.txt", -1, 2, nil, false, wickfs.ErrInvalidArgument},
		{"binary line", "bin.txt", 0, 0, nil, false, wickfs.ErrInvalidArgument},
		{"skip long line", "long", 1, 1, []string{"short"}, false, nil},
		{"long line over limit", "long", 0, 1, nil, false, wickfs.ErrTooLarge},
		{"missing", "nope", 0, 1, nil, false, wickfs.ErrNotFound},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			res, err := fsys.ReadLines(context.Background(), tc.path, tc.offset, tc.limit)
			if !errors.Is(err, tc.err) || (tc.err == nil && err != nil) {
				t.Fatalf("error = %v; want %v", err, tc.err)
			}
			if err != nil {
				return
			}
			if !reflect.DeepEqual(res.Lines, tc.lines) || res.MoreLines != tc.more || res.Offset != tc.offset {
				t.Errorf("ReadLines = %+v; want lines %q more %v", res, tc.lines, tc.more)
			}
		})
	}
	res, _ := fsys.ReadLines(context.Background(), "f.txt", 1, 2)
	want := "     2\ttwo\n     3\tthree\n... more lines follow; continue with offset=3\n"
	if got := wickfs.FormatNumbered(res); got != want {
		t.Errorf("FormatNumbered = %q; want %q", got, want)
	}
}

func TestWriteFile(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	t.Run("new file with parents", func(t *testing.T) {
		t.Parallel()
		fsys, dir := newFS(t, nil)
		res, err := fsys.WriteFile(ctx, "/workspace/a/b/c.txt", "hi")
		if err != nil {
			t.Fatal(err)
		}
		if res.Path != "/workspace/a/b/c.txt" || res.BytesWritten != 2 {
			t.Errorf("result = %+v", res)
		}
		st, _ := os.Stat(filepath.Join(dir, "a/b/c.txt"))
		if st.Mode().Perm() != wickfs.DefaultFileMode {
			t.Errorf("mode = %v; want %v", st.Mode().Perm(), wickfs.DefaultFileMode)
		}
		noTempFiles(t, dir)
	})
	t.Run("overwrite keeps mode", func(t *testing.T) {
		t.Parallel()
		fsys, dir := newFS(t, map[string]string{"run.sh": "old"})
		if err := os.Chmod(filepath.Join(dir, "run.sh"), 0o751); err != nil {
			t.Fatal(err)
		}
		if _, err := fsys.WriteFile(ctx, "run.sh", "new"); err != nil {
			t.Fatal(err)
		}
		st, _ := os.Stat(filepath.Join(dir, "run.sh"))
		if st.Mode().Perm() != 0o751 || readHost(t, dir, "run.sh") != "new" {
			t.Errorf("mode %v content %q", st.Mode().Perm(), readHost(t, dir, "run.sh"))
		}
	})
	for _, tc := range []struct {
		name, path, content string
		err                 error
	}{
		{"oversized", "f.txt", strings.Repeat("z", 101), wickfs.ErrTooLarge},
		{"directory", "d", "x", wickfs.ErrInvalidArgument},
		{"root", "/workspace", "x", wickfs.ErrInvalidArgument},
		{"escape", "/tmp/evil", "x", wickfs.ErrOutsideWorkspace},
		{"non-UTF-8", "f\xff", "x", wickfs.ErrInvalidArgument},
		{"parent is a file", "f.txt/x", "x", nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			fsys, dir := newFS(t, map[string]string{"f.txt": "original", "d/": ""}, wickfs.WithMaxWriteBytes(100))
			_, err := fsys.WriteFile(ctx, tc.path, tc.content)
			if err == nil || (tc.err != nil && !errors.Is(err, tc.err)) {
				t.Fatalf("WriteFile(%q) = %v; want %v", tc.path, err, tc.err)
			}
			if got := readHost(t, dir, "f.txt"); got != "original" {
				t.Errorf("f.txt = %q after a failed write", got)
			}
			noTempFiles(t, dir)
		})
	}
}

func TestEditFile(t *testing.T) {
	t.Parallel()
	const src = "a := 1\nb := 2\na := 1\n"
	tests := []struct {
		name, path, old, new string
		all                  bool
		want                 string
		n                    int
		err                  error
		msg                  string
	}{
		{"unique", "f.go", "b := 2", "b := 3", false, "a := 1\nb := 3\na := 1\n", 1, nil, ""},
		{"replace all", "f.go", "a := 1", "a := 9", true, "a := 9\nb := 2\na := 9\n", 2, nil, ""},
		{"ambiguous", "f.go", "a := 1", "x", false, src, 0, wickfs.ErrInvalidArgument, "occurs 2 times"},
		{"not found", "f.go", "zzz", "x", false, src, 0, wickfs.ErrInvalidArgument, "old_text not found in file"},
		{"empty old", "f.go", "", "x", false, src, 0, wickfs.ErrInvalidArgument, "must not be empty"},
		{"missing file", "nope.go", "a", "b", false, src, 0, wickfs.ErrNotFound, ""},
		{"directory", "d", "a", "b", false, src, 0, wickfs.ErrInvalidArgument, "is a directory"},
		{"escape", "/root/x", "a", "b", false, src, 0, wickfs.ErrOutsideWorkspace, ""},
		{"grows past limit", "f.go", "b := 2", strings.Repeat("b", 200), false, src, 0, wickfs.ErrTooLarge, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			fsys, dir := newFS(t, map[string]string{"f.go": src, "d/": ""}, wickfs.WithMaxWriteBytes(100))
			var opts []wickfs.EditOption
			if tc.all {
				opts = append(opts, wickfs.ReplaceAll())
			}
			res, err := fsys.EditFile(context.Background(), tc.path, tc.old, tc.new, opts...)
			if !errors.Is(err, tc.err) || (tc.err == nil && err != nil) {
				t.Fatalf("EditFile error = %v; want %v", err, tc.err)
			}
			if err != nil && !strings.Contains(err.Error(), tc.msg) {
				t.Errorf("error %q does not say %q", err, tc.msg)
			}
			if err == nil && res.Replacements != tc.n {
				t.Errorf("replacements = %d; want %d", res.Replacements, tc.n)
			}
			if got := readHost(t, dir, "f.go"); got != tc.want {
				t.Errorf("file = %q; want %q", got, tc.want)
			}
			noTempFiles(t, dir)
		})
	}
}

// A name longer than a Linux file system stores, or a path longer than
// PATH_MAX, is the caller's mistake: ErrInvalidArgument saying which limit,
// whatever the operation, never an unclassified ENAMETOOLONG.
func TestLongPathsAreInvalidArguments(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	fsys, _ := newFS(t, nil)
	longName := "/workspace/" + strings.Repeat("a", wickfs.MaxNameBytes+1)
	longPath := "/workspace" + strings.Repeat("/d", (wickfs.MaxPathBytes+1)/2)
	ops := map[string]func(p string) error{
		"write": func(p string) error { _, err := fsys.WriteFile(ctx, p, "x"); return err },
		"read":  func(p string) error { _, err := fsys.ReadFile(ctx, p); return err },
		"ls":    func(p string) error { _, err := fsys.Ls(ctx, p); return err },
		"edit":  func(p string) error { _, err := fsys.EditFile(ctx, p, "a", "b"); return err },
		"create": func(p string) error {
			f, err := fsys.CreateAtomic(p, 0)
			if err == nil {
				f.Abort()
			}
			return err
		},
	}
	for op, do := range ops {
		for what, tc := range map[string]struct{ p, limit string }{
			"name": {longName, "255 bytes per name"},
			"path": {longPath, "limit of 4096 bytes"},
		} {
			t.Run(op+" "+what, func(t *testing.T) {
				t.Parallel()
				err := do(tc.p)
				if !errors.Is(err, wickfs.ErrInvalidArgument) || !strings.Contains(err.Error(), tc.limit) {
					t.Fatalf("%s = %v, want ErrInvalidArgument naming the %s", op, err, tc.limit)
				}
				if len(err.Error()) > 300 {
					t.Errorf("message of %d bytes echoes the whole path", len(err.Error()))
				}
			})
		}
	}
	t.Run("the limit itself is fine", func(t *testing.T) {
		t.Parallel()
		p := "/workspace/" + strings.Repeat("b", wickfs.MaxNameBytes)
		if _, err := fsys.WriteFile(ctx, p, "x"); err != nil {
			t.Fatalf("write a %d-byte name: %v", wickfs.MaxNameBytes, err)
		}
	})
}
