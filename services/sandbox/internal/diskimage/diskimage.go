// Package diskimage bounds the size of a directory tree with a filesystem of
// its own: a sparse file formatted ext4 and loop-mounted on the directory.
// Writes past its size fail with ENOSPC ("No space left on device") for
// whoever writes, and the host's disk holds only what was written. It needs
// what a stock Linux host has and an unprivileged container lacks: root
// (CAP_SYS_ADMIN), loop devices, mkfs.ext4 (e2fsprogs) and mount
// (util-linux). Probe says whether all of them are there.
package diskimage

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sync"
	"syscall"

	"github.com/moby/sys/mountinfo"
	"golang.org/x/sys/unix"
)

// MinBytes is the smallest image Create makes: ext4 needs about 2 MiB of
// its own for a journal and inode tables.
const MinBytes = 8 << 20

// ErrExists is returned by Create when the image exists: an image is made
// once and only ever mounted again, never formatted anew.
var ErrExists = errors.New("disk image exists")

// Create makes a sparse ext4 image of size bytes at path whose root
// directory belongs to uid:gid. The image appears at path only once it is
// formatted, so a crash never leaves a half-made one behind to be mounted,
// and only if path is still free: of two replicas making one workspace at
// once, one image wins and the other gets ErrExists. (A rename would
// replace the first image under the mount and lock that already use it.)
func Create(ctx context.Context, path string, size int64, uid, gid int) error {
	if size < MinBytes {
		return fmt.Errorf("disk image of %d bytes: at least %d are needed", size, MinBytes)
	}
	if _, err := os.Lstat(path); err == nil {
		return fmt.Errorf("%w: %s", ErrExists, path)
	}
	mkfs, err := tool("mkfs.ext4", "/usr/sbin", "/sbin")
	if err != nil {
		return err
	}
	f, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+"-*")
	if err != nil {
		return fmt.Errorf("disk image: %w", err)
	}
	tmp := f.Name()
	defer os.Remove(tmp)
	err = f.Truncate(size)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("disk image: %w", err)
	}
	// No reserved blocks (the sandbox is the only user); lazy init keeps
	// the image sparse, as zeroing the inode tables and journal would
	// write tens of MiB per GiB up front.
	if err := run(ctx, mkfs, "-q", "-F", "-m", "0",
		"-E", fmt.Sprintf("root_owner=%d:%d,lazy_itable_init=1,lazy_journal_init=1,nodiscard", uid, gid), tmp); err != nil {
		return err
	}
	if err := os.Link(tmp, path); err != nil {
		if errors.Is(err, os.ErrExist) {
			return fmt.Errorf("%w: %s", ErrExists, path)
		}
		return fmt.Errorf("disk image: %w", err)
	}
	return nil
}

// Mount mounts image on dir (made when missing), unless something is
// mounted there already. The loop device is released by the kernel once
// the last mount of the filesystem goes (mount's autoclear), so Release
// is all it takes to undo.
func Mount(ctx context.Context, image, dir string) error {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("mount point: %w", err)
	}
	// Two starts of one sandbox (replicas sharing a state dir) mount the
	// same image at once: a lock on the image makes the second find it
	// mounted, instead of failing or stacking a second mount on the first.
	f, err := os.Open(image)
	if err != nil {
		return fmt.Errorf("disk image: %w", err)
	}
	defer f.Close()
	if err := unix.Flock(int(f.Fd()), unix.LOCK_EX); err != nil {
		return fmt.Errorf("lock disk image: %w", err)
	}
	if ok, err := Mounted(dir); err != nil || ok {
		return err
	}
	mount, err := tool("mount", "/usr/bin", "/bin")
	if err != nil {
		return err
	}
	return run(ctx, mount, "-t", "ext4", "-o", "loop,nosuid,nodev", image, dir)
}

// Mounted reports whether a filesystem other than its parent's is mounted
// on dir.
func Mounted(dir string) (bool, error) {
	var st, parent unix.Stat_t
	if err := unix.Lstat(dir, &st); err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return false, nil
		}
		return false, fmt.Errorf("mount point: %w", err)
	}
	if err := unix.Lstat(filepath.Dir(dir), &parent); err != nil {
		return false, fmt.Errorf("mount point: %w", err)
	}
	return st.Dev != parent.Dev, nil
}

// Release detaches the filesystem mounted on dir, if any. The detach is
// lazy: whatever still uses the filesystem (a container's bind mount of it,
// a process with a file open) keeps it whole and bounded, and the kernel
// frees the loop device when the last of them is gone.
func Release(dir string) error {
	ok, err := Mounted(dir)
	if err != nil || !ok {
		return err
	}
	if err := unix.Unmount(dir, unix.MNT_DETACH); err != nil && !errors.Is(err, syscall.EINVAL) {
		return fmt.Errorf("unmount %s: %w", dir, err)
	}
	return nil
}

// ReleaseAll detaches every filesystem mounted at or below dir, deepest
// first, so that dir can be removed.
func ReleaseAll(dir string) error {
	dir, err := filepath.Abs(dir)
	if err != nil {
		return err
	}
	mounts, err := mountinfo.GetMounts(mountinfo.PrefixFilter(dir))
	if err != nil {
		return fmt.Errorf("list mounts: %w", err)
	}
	points := make([]string, 0, len(mounts))
	for _, m := range mounts {
		points = append(points, m.Mountpoint)
	}
	slices.SortFunc(points, func(a, b string) int { return len(b) - len(a) })
	var errs []error
	for _, p := range points {
		if err := unix.Unmount(p, unix.MNT_DETACH); err != nil && !errors.Is(err, syscall.EINVAL) {
			errs = append(errs, fmt.Errorf("unmount %s: %w", p, err))
		}
	}
	return errors.Join(errs...)
}

// probes caches Probe's answer per filesystem: whether loop mounts work is
// a property of the process and of where the images live, and a probe
// costs a mkfs and a mount.
var probes sync.Map // device number → error (nil: works)

// Probe reports whether images can be made and mounted in dir, by doing so
// with a small one: the only reliable test, as a device node or a
// capability alone says little inside a container.
func Probe(ctx context.Context, dir string) error {
	var st unix.Stat_t
	if err := unix.Stat(dir, &st); err != nil {
		return fmt.Errorf("disk image dir: %w", err)
	}
	if v, ok := probes.Load(st.Dev); ok {
		err, _ := v.(error)
		return err
	}
	err := probe(ctx, dir)
	probes.Store(st.Dev, err)
	return err
}

func probe(ctx context.Context, dir string) error {
	scratch, err := os.MkdirTemp(dir, ".probe-")
	if err != nil {
		return fmt.Errorf("disk image dir: %w", err)
	}
	defer os.RemoveAll(scratch)
	img, mnt := filepath.Join(scratch, "img"), filepath.Join(scratch, "mnt")
	if err := Create(ctx, img, MinBytes, os.Getuid(), os.Getgid()); err != nil {
		return err
	}
	if err := Mount(ctx, img, mnt); err != nil {
		return err
	}
	defer Release(mnt)
	if ok, err := Mounted(mnt); err != nil || !ok {
		return fmt.Errorf("mount of a disk image on %s did not take: %v", mnt, err)
	}
	return nil
}

// tool finds a program in PATH or, as PATH often lacks the sbin
// directories, in dirs.
func tool(name string, dirs ...string) (string, error) {
	if p, err := exec.LookPath(name); err == nil {
		return p, nil
	}
	for _, d := range dirs {
		p := filepath.Join(d, name)
		if fi, err := os.Stat(p); err == nil && !fi.IsDir() && fi.Mode()&0o111 != 0 {
			return p, nil
		}
	}
	return "", fmt.Errorf("%s not found (install e2fsprogs and util-linux)", name)
}

func run(ctx context.Context, name string, args ...string) error {
	cmd := exec.CommandContext(ctx, name, args...)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("%s: %w: %s", filepath.Base(name), err, bytes.TrimSpace(out.Bytes()))
	}
	return nil
}
