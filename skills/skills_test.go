package skills

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"testing/fstest"
)

// TestLibraryHoldsOnlySkillFolders: the package's sources are embedded with
// the library but never part of it, and every skill folder has a SKILL.md.
func TestLibraryHoldsOnlySkillFolders(t *testing.T) {
	lib := Library()
	for _, name := range []string{"skills.go", "skills_test.go"} {
		if _, err := fs.Stat(lib, name); !errors.Is(err, fs.ErrNotExist) {
			t.Errorf("Stat(%s) = %v, want not exist", name, err)
		}
	}
	entries, err := fs.ReadDir(lib, ".")
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		if !e.IsDir() {
			t.Errorf("library root holds file %s", e.Name())
			continue
		}
		if !ValidName(e.Name()) {
			t.Errorf("skill folder %q has no folder-safe name", e.Name())
		}
		if _, err := fs.Stat(lib, e.Name()+"/SKILL.md"); err != nil {
			t.Errorf("skill %s: %v", e.Name(), err)
		}
	}
	// The filtering FS still passes the standard checks.
	var files []string
	_ = fs.WalkDir(lib, ".", func(p string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			files = append(files, p)
		}
		return nil
	})
	if err := fstest.TestFS(lib, files...); err != nil {
		t.Error(err)
	}
}

// writeTree makes files (path → content) under dir.
func writeTree(t *testing.T, dir string, files map[string]string) {
	t.Helper()
	for p, c := range files {
		full := filepath.Join(dir, filepath.FromSlash(p))
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(full, []byte(c), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

func read(t *testing.T, p string) string {
	t.Helper()
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func TestMaterializeMergesAndOverrides(t *testing.T) {
	base := t.TempDir()
	one, two := filepath.Join(base, "one"), filepath.Join(base, "two")
	writeTree(t, one, map[string]string{
		"alpha/SKILL.md":        "alpha from one",
		"alpha/helper.py":       "print(1)",
		"beta/SKILL.md":         "beta from one",
		"beta/sub/notes.txt":    "notes",
		"README.md":             "not a skill",
		".git/config":           "hidden",
		"beta/.cache/junk":      "hidden",
		"gamma/data/input.json": "{}",
	})
	writeTree(t, two, map[string]string{"alpha/SKILL.md": "alpha from two"})
	dst := filepath.Join(base, "out")
	t.Cleanup(func() { _ = RemoveMaterialized(dst) })
	if err := Materialize(dst, true, one, two); err != nil {
		t.Fatal(err)
	}
	if got := read(t, filepath.Join(dst, "alpha", "SKILL.md")); got != "alpha from two" {
		t.Errorf("alpha/SKILL.md = %q, want the later dir's", got)
	}
	// A replaced skill is replaced whole, not merged file by file.
	if _, err := os.Stat(filepath.Join(dst, "alpha", "helper.py")); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("alpha/helper.py of the replaced skill: %v", err)
	}
	if got := read(t, filepath.Join(dst, "beta", "sub", "notes.txt")); got != "notes" {
		t.Errorf("beta/sub/notes.txt = %q", got)
	}
	for _, p := range []string{"README.md", ".git", "beta/.cache"} {
		if _, err := os.Stat(filepath.Join(dst, p)); !errors.Is(err, fs.ErrNotExist) {
			t.Errorf("%s was copied: %v", p, err)
		}
	}
	names, err := Names(os.DirFS(dst))
	if err != nil {
		t.Fatal(err)
	}
	builtin, _ := Names(Library())
	want := slices.Sorted(slices.Values(append(builtin, "alpha", "beta", "gamma")))
	want = slices.Compact(want)
	if !slices.Equal(names, want) {
		t.Errorf("skills = %v, want %v", names, want)
	}
	// Everything is read-only; scripts stay runnable.
	err = filepath.WalkDir(dst, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		fi, err := d.Info()
		if err != nil {
			return err
		}
		if fi.Mode().Perm()&0o222 != 0 {
			t.Errorf("%s is writable: %v", p, fi.Mode())
		}
		if strings.HasSuffix(p, ".py") && fi.Mode().Perm()&0o111 == 0 {
			t.Errorf("%s is not executable: %v", p, fi.Mode())
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := Materialize(dst, true); err == nil {
		t.Error("Materialize over an existing dst succeeded")
	}
}

func TestMaterializeWithoutBuiltin(t *testing.T) {
	base := t.TempDir()
	writeTree(t, filepath.Join(base, "ops"), map[string]string{"mine/SKILL.md": "x"})
	dst := filepath.Join(base, "out")
	t.Cleanup(func() { _ = RemoveMaterialized(dst) })
	if err := Materialize(dst, false, filepath.Join(base, "ops")); err != nil {
		t.Fatal(err)
	}
	names, err := Names(os.DirFS(dst))
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(names, []string{"mine"}) {
		t.Errorf("skills = %v, want only the operator's", names)
	}
}

func TestMaterializeRefusesBadFolders(t *testing.T) {
	outside := t.TempDir()
	writeTree(t, outside, map[string]string{"secret.txt": "host secret"})
	tests := []struct {
		name  string
		setup func(t *testing.T, dir string)
	}{
		{"name with a space", func(t *testing.T, dir string) {
			writeTree(t, dir, map[string]string{"bad name/SKILL.md": "x"})
		}},
		{"name with a colon", func(t *testing.T, dir string) {
			writeTree(t, dir, map[string]string{"a:b/SKILL.md": "x"})
		}},
		{"upper-case name", func(t *testing.T, dir string) {
			writeTree(t, dir, map[string]string{"Mine/SKILL.md": "x"})
		}},
		{"name too long", func(t *testing.T, dir string) {
			writeTree(t, dir, map[string]string{strings.Repeat("a", 65) + "/SKILL.md": "x"})
		}},
		{"symlinked file out of the dir", func(t *testing.T, dir string) {
			writeTree(t, dir, map[string]string{"s/SKILL.md": "x"})
			if err := os.Symlink(filepath.Join(outside, "secret.txt"), filepath.Join(dir, "s", "leak.txt")); err != nil {
				t.Fatal(err)
			}
		}},
		{"relative symlink out of the dir", func(t *testing.T, dir string) {
			writeTree(t, dir, map[string]string{"s/SKILL.md": "x"})
			rel, err := filepath.Rel(filepath.Join(dir, "s"), filepath.Join(outside, "secret.txt"))
			if err != nil {
				t.Fatal(err)
			}
			if err := os.Symlink(rel, filepath.Join(dir, "s", "leak.txt")); err != nil {
				t.Fatal(err)
			}
		}},
		{"symlinked skill folder out of the dir", func(t *testing.T, dir string) {
			if err := os.MkdirAll(dir, 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.Symlink(outside, filepath.Join(dir, "s")); err != nil {
				t.Fatal(err)
			}
		}},
		{"file over the cap", func(t *testing.T, dir string) {
			writeTree(t, dir, map[string]string{"s/SKILL.md": "x"})
			f, err := os.Create(filepath.Join(dir, "s", "big.bin"))
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			if err := f.Truncate(MaxFileBytes + 1); err != nil {
				t.Fatal(err)
			}
		}},
		{"a fifo", func(t *testing.T, dir string) {
			writeTree(t, dir, map[string]string{"s/SKILL.md": "x"})
			if err := syscall.Mkfifo(filepath.Join(dir, "s", "pipe"), 0o644); err != nil {
				t.Skip("no fifo here:", err)
			}
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			base := t.TempDir()
			dir := filepath.Join(base, "ops")
			tc.setup(t, dir)
			dst := filepath.Join(base, "out")
			err := Materialize(dst, true, dir)
			if !errors.Is(err, ErrBadSkill) {
				t.Fatalf("Materialize = %v, want ErrBadSkill", err)
			}
			if _, serr := os.Lstat(dst); !errors.Is(serr, fs.ErrNotExist) {
				t.Errorf("a failed Materialize left %s: %v", dst, serr)
			}
			leftovers, _ := filepath.Glob(filepath.Join(base, ".out-*"))
			if len(leftovers) != 0 {
				t.Errorf("a failed Materialize left %v", leftovers)
			}
		})
	}
}

// TestMaterializeKeepsLinksWithin: a link to a file of the same dir is
// copied as that file.
func TestMaterializeKeepsLinksWithin(t *testing.T) {
	base := t.TempDir()
	dir := filepath.Join(base, "ops")
	writeTree(t, dir, map[string]string{"s/SKILL.md": "skill", "shared/common.py": "common"})
	if err := os.Symlink("../shared/common.py", filepath.Join(dir, "s", "common.py")); err != nil {
		t.Fatal(err)
	}
	dst := filepath.Join(base, "out")
	t.Cleanup(func() { _ = RemoveMaterialized(dst) })
	if err := Materialize(dst, false, dir); err != nil {
		t.Fatal(err)
	}
	fi, err := os.Lstat(filepath.Join(dst, "s", "common.py"))
	if err != nil {
		t.Fatal(err)
	}
	if !fi.Mode().IsRegular() {
		t.Errorf("s/common.py is %v, want a regular file", fi.Mode())
	}
	if got := read(t, filepath.Join(dst, "s", "common.py")); got != "common" {
		t.Errorf("s/common.py = %q", got)
	}
}

func TestValidName(t *testing.T) {
	for name, want := range map[string]bool{
		"csv-analyzer": true, "a": true, "9lives": true,
		"": false, ".hidden": false, "-x": false, "a/b": false, "a b": false, "a..b": false, "é": false,
		"data_analysis": false, "v1.2": false, "Upper": false,
		strings.Repeat("x", 64): true, strings.Repeat("x", 65): false,
	} {
		if got := ValidName(name); got != want {
			t.Errorf("ValidName(%q) = %v, want %v", name, got, want)
		}
	}
}
