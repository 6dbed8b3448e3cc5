package testenv

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// ImagesLock is the file on which scripts/test-deps.sh holds an exclusive
// lock while it builds the sandbox images in the background
// (WICK_IMAGES_LOCK, else wick-images.lock in the temporary directory).
func ImagesLock() string {
	if p := os.Getenv("WICK_IMAGES_LOCK"); p != "" {
		return p
	}
	return filepath.Join(os.TempDir(), "wick-images.lock")
}

// Image returns img once the engine has it. It first waits for a build of
// scripts/test-deps.sh that may still be running (a shared lock on
// ImagesLock), then skips the test without the image, or fails it in CI
// with the end of the build's log.
func Image(t testing.TB, img, builder string) string {
	t.Helper()
	lock := ImagesLock()
	if f, err := os.Open(lock); err == nil {
		// Blocks until the background build lets go of its exclusive lock.
		if err := syscall.Flock(int(f.Fd()), syscall.LOCK_SH); err != nil {
			t.Logf("wait for the image build (%s): %v", lock, err)
		}
		f.Close()
	}
	cli := Docker(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if _, err := cli.ImageInspect(ctx, img); err != nil {
		if b, rerr := os.ReadFile(strings.TrimSuffix(lock, ".lock") + ".log"); rerr == nil && InCI() {
			t.Logf("the image build's log ends with:\n%s", tail(b, 4096))
		}
		Missing(t, "sandbox image %s (%s builds it)", img, builder)
	}
	return img
}

func tail(b []byte, n int) []byte {
	if len(b) > n {
		return b[len(b)-n:]
	}
	return b
}
