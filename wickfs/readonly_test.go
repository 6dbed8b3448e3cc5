package wickfs_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/wick-agent/wick/wickfs"
)

// TestReadOnlyMount: a write into a read-only mount in the workspace (how
// the skills library appears) is a permission refusal that says why, for
// every way of writing.
func TestReadOnlyMount(t *testing.T) {
	t.Parallel()
	fsys, dir := newFS(t, map[string]string{"lib/.keep": ""})
	lib := filepath.Join(dir, "lib")
	if err := unix.Mount("tmpfs", lib, "tmpfs", unix.MS_RDONLY, ""); err != nil {
		t.Skipf("cannot mount here (needs root): %v", err)
	}
	t.Cleanup(func() { _ = unix.Unmount(lib, unix.MNT_DETACH) })
	ctx := context.Background()
	for name, write := range map[string]func() error{
		"write_file": func() error { _, err := fsys.WriteFile(ctx, "/workspace/lib/a.md", "x"); return err },
		"upload": func() error {
			_, err := fsys.Upload(ctx, "/workspace/lib/b.bin", 0o644, strings.NewReader("x"))
			return err
		},
	} {
		err := write()
		if !errors.Is(err, wickfs.ErrPermission) || !strings.Contains(err.Error(), "read-only file system") {
			t.Errorf("%s: %v, want ErrPermission saying read-only file system", name, err)
		}
	}
	if _, err := os.Stat(filepath.Join(dir, "elsewhere")); !errors.Is(err, os.ErrNotExist) {
		t.Fatal(err)
	}
	if _, err := fsys.WriteFile(ctx, "/workspace/elsewhere", "x"); err != nil {
		t.Fatalf("a write beside the mount: %v", err)
	}
}
