package testenv

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"
)

// Pinned is a program a test runs, built from a Go module of its own under
// tools/ (its go.mod and go.sum pin it, and its dependencies never move the
// suite's).
type Pinned struct {
	// Name names the cached binary.
	Name string
	// Module is the module's directory, relative to the repository root.
	Module string
	// Package is the main package to build.
	Package string
	// LDFlags are passed to go build's -ldflags.
	LDFlags string
}

var pinnedMu sync.Mutex

// Path is where the binary of p is cached: the user cache directory's
// wick-testenv/<name>-<hash of go.mod and go.sum>. scripts/test-deps.sh
// computes the same name to build it ahead of the tests.
func (p Pinned) Path(root string) (string, error) {
	h := sha256.New()
	for _, f := range []string{"go.mod", "go.sum"} {
		b, err := os.ReadFile(filepath.Join(root, p.Module, f))
		if err != nil {
			return "", fmt.Errorf("%s pin: %w", p.Name, err)
		}
		h.Write(b)
	}
	cache, err := os.UserCacheDir()
	if err != nil {
		return "", fmt.Errorf("no cache directory for %s: %w", p.Name, err)
	}
	return filepath.Join(cache, "wick-testenv", p.Name+"-"+hex.EncodeToString(h.Sum(nil))[:16]), nil
}

// Build returns the path of p's binary, building it first when this pin
// was never built on this machine (cold, minutes; then never again).
func (p Pinned) Build(t testing.TB) (string, error) {
	t.Helper()
	root := RepoRoot(t)
	bin, err := p.Path(root)
	if err != nil {
		return "", err
	}
	// One build at a time in a test binary; test binaries of other
	// packages building the same pin at once each write a temporary file
	// and rename it, so none sees half a binary.
	pinnedMu.Lock()
	defer pinnedMu.Unlock()
	if _, err := os.Stat(bin); err == nil {
		return bin, nil
	}
	if err := os.MkdirAll(filepath.Dir(bin), 0o755); err != nil {
		return "", err
	}
	tmp, err := os.CreateTemp(filepath.Dir(bin), "."+p.Name+"-*")
	if err != nil {
		return "", err
	}
	tmp.Close()
	defer os.Remove(tmp.Name())
	goBin, err := exec.LookPath("go")
	if err != nil {
		// go test runs test binaries with GOROOT set, also where go is not
		// on PATH (an IDE's go).
		if goBin = filepath.Join(os.Getenv("GOROOT"), "bin", "go"); os.Getenv("GOROOT") == "" {
			return "", fmt.Errorf("no go command to build %s", p.Name)
		}
	}
	args := []string{"build", "-o", tmp.Name()}
	if p.LDFlags != "" {
		args = append(args, "-ldflags="+p.LDFlags)
	}
	cmd := exec.Command(goBin, append(args, p.Package)...)
	cmd.Dir = filepath.Join(root, p.Module)
	cmd.Env = append(os.Environ(), "GOWORK=off", "GOFLAGS=-mod=readonly")
	if out, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("go build %s: %v\n%s", p.Package, err, tail(out, 4000))
	}
	if err := os.Rename(tmp.Name(), bin); err != nil {
		return "", fmt.Errorf("%s binary: %w", p.Name, err)
	}
	return bin, nil
}
