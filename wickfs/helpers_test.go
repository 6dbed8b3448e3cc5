package wickfs_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/wick-agent/wick/wickfs"
)

// newFS returns a LocalFS on a fresh directory holding files (path → content;
// a path ending in "/" is a directory).
func newFS(t *testing.T, files map[string]string, opts ...wickfs.LocalOption) (*wickfs.LocalFS, string) {
	t.Helper()
	dir := t.TempDir()
	writeTree(t, dir, files)
	fsys, err := wickfs.NewLocalFS(dir, opts...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { fsys.Close() })
	return fsys, dir
}

func writeTree(t testing.TB, dir string, files map[string]string) {
	t.Helper()
	for p, content := range files {
		full := filepath.Join(dir, filepath.FromSlash(p))
		if p[len(p)-1] == '/' {
			if err := os.MkdirAll(full, 0o755); err != nil {
				t.Fatal(err)
			}
			continue
		}
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(full, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

func readHost(t *testing.T, dir, p string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, filepath.FromSlash(p)))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// noTempFiles fails when an atomic write left a temporary file behind.
func noTempFiles(t *testing.T, dir string) {
	t.Helper()
	_ = filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err == nil && len(d.Name()) > 12 && d.Name()[:12] == ".wickfs-tmp-" {
			t.Errorf("temporary file left behind: %s", p)
		}
		return nil
	})
}
