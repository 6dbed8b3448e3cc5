package main

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
)

// installed are the files -install places, by the name they get; each is
// read from beside the running executable ("" is the executable itself).
var installed = []struct{ name, source string }{
	{"wick-daemon", ""},
	{"wickfs", "wickfs"},
}

// install copies this executable and the wickfs next to it into dir, each
// written under a temporary name and renamed, so that a container starting
// from dir never runs a half-written binary. The copies are 0555: whoever
// runs them must not be able to change them.
func install(dir string) error {
	st, err := os.Stat(dir)
	if err != nil {
		return fmt.Errorf("-install: %w", err)
	}
	if !st.IsDir() {
		return fmt.Errorf("-install %s: not a directory", dir)
	}
	exe, err := os.Executable()
	if err != nil {
		return fmt.Errorf("-install: find this executable: %w", err)
	}
	if exe, err = filepath.EvalSymlinks(exe); err != nil {
		return fmt.Errorf("-install: %w", err)
	}
	sources := make([]string, len(installed))
	for i, f := range installed {
		sources[i] = exe
		if f.source != "" {
			sources[i] = filepath.Join(filepath.Dir(exe), f.source)
		}
		// All or nothing: a missing wickfs is found before anything is written.
		if _, err := os.Stat(sources[i]); err != nil {
			return fmt.Errorf("-install: %w", err)
		}
	}
	for i, f := range installed {
		if err := copyExecutable(sources[i], filepath.Join(dir, f.name)); err != nil {
			return fmt.Errorf("-install: %w", err)
		}
	}
	return nil
}

// copyExecutable copies src to dst as a read-only executable, replacing dst.
func copyExecutable(src, dst string) (err error) {
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	tmp, err := os.CreateTemp(filepath.Dir(dst), "."+filepath.Base(dst)+".*")
	if err != nil {
		return err
	}
	defer func() {
		if err != nil {
			tmp.Close()
			os.Remove(tmp.Name())
		}
	}()
	if _, err = io.Copy(tmp, in); err != nil {
		return fmt.Errorf("copy %s: %w", src, err)
	}
	if err = tmp.Chmod(0o555); err != nil {
		return err
	}
	if err = tmp.Sync(); err != nil {
		return err
	}
	if err = tmp.Close(); err != nil {
		return err
	}
	return os.Rename(tmp.Name(), dst)
}
