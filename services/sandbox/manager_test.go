package sandbox

import (
	"errors"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

func TestValidManagerID(t *testing.T) {
	for _, tc := range []struct {
		id string
		ok bool
	}{
		{"wick-0a1b2c3d4e5f", true},
		{"sandbox-2", true},
		{"a", true},
		{"A.b_c-9", true},
		{strings.Repeat("x", MaxManagerID), true},
		{strings.Repeat("x", MaxManagerID+1), false},
		{"", false},
		{"-lead", false},
		{".hidden", false},
		{"has space", false},
		{"a=b", false},
		{"a,b", false},
		{"a/b", false},
		{"é", false},
		{"nul\x00", false},
	} {
		err := ValidManagerID(tc.id)
		if (err == nil) != tc.ok {
			t.Errorf("ValidManagerID(%q) = %v, want ok %v", tc.id, err, tc.ok)
		}
		if err != nil && (!errors.Is(err, errInvalid) || !strings.Contains(err.Error(), "-manager-id")) {
			t.Errorf("ValidManagerID(%q) = %v: not an invalid argument naming the flag", tc.id, err)
		}
	}
}

// TestManagerIDKeptInStateDir: an id is generated once per state
// directory and read back on the next start; a given id wins and is not
// stored; a directory made before ids were kept keeps the legacy one; a
// damaged file is an error naming it.
func TestManagerIDKeptInStateDir(t *testing.T) {
	t.Parallel()
	start := func(t *testing.T, dir, id string) (string, error) {
		svc, err := New(Config{AllowLocal: true, DefaultType: "local", StateDir: dir, ManagerID: id, ReapInterval: 1 << 40},
			WithLogger(slog.New(slog.DiscardHandler)))
		if err != nil {
			return "", err
		}
		t.Cleanup(func() { _ = svc.Close(t.Context()) })
		return svc.ManagerID(), nil
	}
	t.Run("generated once, then read back", func(t *testing.T) {
		dir := t.TempDir()
		a, err := start(t, dir, "")
		if err != nil {
			t.Fatal(err)
		}
		b, err := start(t, dir, "")
		if err != nil || b != a || ValidManagerID(a) != nil || a == LegacyManagerID {
			t.Fatalf("ids %q then %q (%v)", a, b, err)
		}
		c, err := start(t, t.TempDir(), "")
		if err != nil || c == a {
			t.Fatalf("another state dir got %q (%v), the first %q", c, err, a)
		}
	})
	t.Run("a given id wins and is not stored", func(t *testing.T) {
		dir := t.TempDir()
		stored, err := start(t, dir, "")
		if err != nil {
			t.Fatal(err)
		}
		if got, err := start(t, dir, "given-1"); err != nil || got != "given-1" {
			t.Fatalf("given id: %q %v", got, err)
		}
		if got, err := start(t, dir, ""); err != nil || got != stored {
			t.Fatalf("after a given id the stored one is %q (%v), want %q", got, err, stored)
		}
	})
	t.Run("a bad given id is refused", func(t *testing.T) {
		_, err := start(t, t.TempDir(), "no spaces")
		if !errors.Is(err, errInvalid) || !strings.Contains(err.Error(), "-manager-id") {
			t.Fatalf("New with a bad id: %v", err)
		}
	})
	t.Run("a state dir of an older version keeps the legacy id", func(t *testing.T) {
		dir := t.TempDir()
		if err := os.Mkdir(filepath.Join(dir, "sandboxes"), 0o700); err != nil {
			t.Fatal(err)
		}
		if got, err := start(t, dir, ""); err != nil || got != LegacyManagerID {
			t.Fatalf("legacy dir: %q %v", got, err)
		}
	})
	t.Run("a damaged file is an error naming it", func(t *testing.T) {
		dir := t.TempDir()
		if err := os.WriteFile(filepath.Join(dir, managerIDFile), []byte("bad id\n"), 0o600); err != nil {
			t.Fatal(err)
		}
		if _, err := start(t, dir, ""); err == nil || !strings.Contains(err.Error(), managerIDFile) {
			t.Fatalf("damaged file: %v", err)
		}
	})
	t.Run("instances starting at once agree", func(t *testing.T) {
		dir := t.TempDir()
		ids := make([]string, 8)
		var wg sync.WaitGroup
		for i := range ids {
			wg.Go(func() {
				id, err := storedManagerID(dir, false)
				if err != nil {
					t.Error(err)
				}
				ids[i] = id
			})
		}
		wg.Wait()
		for _, id := range ids {
			if id != ids[0] || id == "" {
				t.Fatalf("ids %q", ids)
			}
		}
	})
}
