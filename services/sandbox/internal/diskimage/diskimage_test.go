package diskimage

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"sync"
	"syscall"
	"testing"

	"github.com/moby/sys/mountinfo"

	"github.com/wick-agent/wick/platform/testenv"
)

// newImage makes a MinBytes image in a fresh directory and names the
// directory to mount it on; whatever is mounted there is detached at the
// test's end.
func newImage(t *testing.T) (img, mnt string) {
	t.Helper()
	dir := t.TempDir()
	if err := Probe(context.Background(), dir); err != nil {
		testenv.Missing(t, "loop-mounted disk images (root, loop devices, mkfs.ext4): %v", err)
	}
	t.Cleanup(func() { _ = ReleaseAll(dir) })
	img, mnt = filepath.Join(dir, "ws.img"), filepath.Join(dir, "ws")
	if err := Create(context.Background(), img, MinBytes, os.Getuid(), os.Getgid()); err != nil {
		t.Fatal(err)
	}
	return img, mnt
}

func TestImageBoundsWrites(t *testing.T) {
	ctx := context.Background()
	img, mnt := newImage(t)
	if err := Mount(ctx, img, mnt); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(mnt, "keep.txt"), []byte("kept"), 0o600); err != nil {
		t.Fatal(err)
	}
	err := os.WriteFile(filepath.Join(mnt, "big.bin"), make([]byte, 2*MinBytes), 0o600)
	if !errors.Is(err, syscall.ENOSPC) {
		t.Fatalf("writing twice the image's size: %v, want ENOSPC", err)
	}
	if err := Release(mnt); err != nil {
		t.Fatal(err)
	}
	if ok, _ := Mounted(mnt); ok {
		t.Fatal("still mounted after Release")
	}

	// An image is never formatted twice: mounted again, it has its files.
	if err := Create(ctx, img, MinBytes, 0, 0); !errors.Is(err, ErrExists) {
		t.Fatalf("Create over an existing image: %v, want ErrExists", err)
	}
	if err := Mount(ctx, img, mnt); err != nil {
		t.Fatal(err)
	}
	if got, err := os.ReadFile(filepath.Join(mnt, "keep.txt")); err != nil || string(got) != "kept" {
		t.Fatalf("keep.txt after a second mount = %q %v", got, err)
	}
	if err := ReleaseAll(filepath.Dir(mnt)); err != nil {
		t.Fatal(err)
	}
	if ok, _ := Mounted(mnt); ok {
		t.Fatal("still mounted after ReleaseAll")
	}
}

func TestCreateRefusesTinyImages(t *testing.T) {
	t.Parallel()
	if err := Create(context.Background(), filepath.Join(t.TempDir(), "x.img"), MinBytes-1, 0, 0); err == nil {
		t.Fatal("an image below MinBytes was made")
	}
}

// TestConcurrentMountsMountOnce is two replicas starting one sandbox: every
// Mount succeeds and the image is mounted once, not stacked.
func TestConcurrentMountsMountOnce(t *testing.T) {
	ctx := context.Background()
	img, mnt := newImage(t)
	var wg sync.WaitGroup
	errs := make([]error, 8)
	for i := range errs {
		wg.Go(func() { errs[i] = Mount(ctx, img, mnt) })
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Errorf("mount %d: %v", i, err)
		}
	}
	mounts, err := mountinfo.GetMounts(mountinfo.SingleEntryFilter(mnt))
	if err != nil {
		t.Fatal(err)
	}
	if len(mounts) != 1 {
		t.Fatalf("%d mounts on %s, want 1", len(mounts), mnt)
	}
}

// Replicas sharing a state dir make a new workspace's image at once: one
// image must come out of it, so that every mount and lock uses that one.
func TestConcurrentCreatesMakeOneImage(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	if err := Probe(ctx, dir); err != nil {
		testenv.Missing(t, "loop-mounted disk images (root, loop devices, mkfs.ext4): %v", err)
	}
	img := filepath.Join(dir, "ws.img")
	errs := make([]error, 4)
	var wg sync.WaitGroup
	for i := range errs {
		wg.Go(func() { errs[i] = Create(ctx, img, MinBytes, os.Getuid(), os.Getgid()) })
	}
	wg.Wait()
	made := 0
	for i, err := range errs {
		switch {
		case err == nil:
			made++
		case !errors.Is(err, ErrExists):
			t.Errorf("create %d: %v", i, err)
		}
	}
	if made != 1 {
		t.Fatalf("%d creates made the image, want exactly 1", made)
	}
	left, err := filepath.Glob(filepath.Join(dir, ".ws.img-*"))
	if err != nil || len(left) != 0 {
		t.Fatalf("temporary images left behind: %v %v", left, err)
	}
}
