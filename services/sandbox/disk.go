package sandbox

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/wick-agent/wick/services/sandbox/internal/diskimage"
	"github.com/wick-agent/wick/services/sandbox/internal/dockerbox"
)

// Every workspace is bounded by a filesystem image of its own (package
// diskimage): <state>/workspaces/<volume>.img for a Docker workspace
// volume, <state>/local/<key>.img for a local sandbox. The service mounts an
// image while a container of its volume exists: the engine binds the
// mounted directory at every start of the container — its own restarts
// too — so the mount must outlive the first start; it is detached when the
// service removes the container (stop, delete), and the next start mounts
// it again. A local sandbox's image stays mounted while the sandbox runs.
// An image is formatted once, when its workspace is made, and only mounted
// again after that, so a restart of the service, the container or the host
// keeps the files and the size.
//
// A workspace made before bounds existed, a volume the operator made
// himself under the sandbox's name, and every workspace of a service that
// cannot mount (checkWorkspaceBounds) has no image: it is used as it is,
// unbounded.

// workspaceData is the directory in a workspace filesystem that holds the
// files, so the filesystem's lost+found stays out of the sandbox's sight.
const workspaceData = "workspace"

// checkWorkspaceBounds finds out, once at start, whether this service can
// bound workspaces, and says so.
func (s *Service) checkWorkspaceBounds() error {
	dir := filepath.Join(s.cfg.StateDir, "workspaces")
	err := s.diskProbe(context.Background(), dir)
	s.bounded = err == nil
	switch {
	case err == nil:
		s.log.Info("workspaces are bounded by a filesystem image each", "default_bytes", s.cfg.WorkspaceBytes, "max_bytes", s.cfg.MaxWorkspaceBytes)
	case s.cfg.RequireWorkspaceBound:
		return fmt.Errorf("sandbox: workspaces cannot be bounded here and -require-workspace-bound is set: %w", err)
	default:
		s.log.Warn("workspaces are UNBOUNDED: this service cannot loop-mount a filesystem image per workspace (it needs root with CAP_SYS_ADMIN, loop devices, mkfs.ext4 and mount), so a sandbox can fill the disk its workspace is on; set -require-workspace-bound to refuse to start instead",
			"err", err)
	}
	return nil
}

// workspaceImage is the image and mount point of a Docker workspace volume.
func (s *Service) workspaceImage(volume string) (img, mnt string) {
	dir := filepath.Join(s.cfg.StateDir, "workspaces")
	return filepath.Join(dir, volume+".img"), filepath.Join(dir, volume)
}

// boundVolume mounts the filesystem of a Docker workspace volume, making it
// when the volume is new, and returns the directory the volume binds ("" for
// a volume without a bound); releaseVolume undoes the mount. exists says
// the volume exists.
func (s *Service) boundVolume(ctx context.Context, e dockerbox.Engine, volume string, exists bool, size int64, cu dockerbox.User) (device string, err error) {
	img, mnt := s.workspaceImage(volume)
	_, statErr := os.Lstat(img)
	haveImage := statErr == nil
	if exists && !haveImage {
		v, err := e.VolumeInspect(ctx, volume)
		if err != nil {
			return "", fmt.Errorf("inspect volume %s: %w", volume, err)
		}
		if dev := v.Options["device"]; !strings.HasPrefix(dev, filepath.Join(s.cfg.StateDir, "workspaces")+"/") {
			return "", nil // unbounded: made before bounds, or by the operator
		}
		// The volume binds an image this state dir no longer has: its files
		// went with it. A fresh workspace replaces it rather than a
		// container that cannot start.
		s.log.Warn("workspace volume lost its image; making it anew", "volume", volume)
		if err := dockerbox.RemoveVolume(ctx, e, volume); err != nil {
			return "", err
		}
	}
	if !haveImage {
		if !s.bounded {
			return "", nil
		}
		if err := s.makeImage(ctx, img, size, cu); err != nil {
			return "", err
		}
	}
	if err := diskimage.Mount(ctx, img, mnt); err != nil {
		return "", fmt.Errorf("mount workspace image: %w", err)
	}
	data := filepath.Join(mnt, workspaceData)
	if err := giveDir(data, cu.UID, cu.GID); err != nil {
		s.releaseVolume(volume)
		return "", err
	}
	return data, nil
}

// makeImage formats a workspace image of size bytes owned by cu.
func (s *Service) makeImage(ctx context.Context, img string, size int64, cu dockerbox.User) error {
	if err := os.MkdirAll(filepath.Dir(img), 0o700); err != nil {
		return fmt.Errorf("workspace image: %w", err)
	}
	if err := diskimage.Create(ctx, img, size, cu.UID, cu.GID); err != nil && !errors.Is(err, diskimage.ErrExists) {
		return fmt.Errorf("workspace image: %w", err)
	}
	return nil
}

// giveDir makes dir, when missing, owned by uid:gid.
func giveDir(dir string, uid, gid int) error {
	if err := os.Mkdir(dir, 0o755); err != nil && !errors.Is(err, os.ErrExist) {
		return fmt.Errorf("workspace: %w", err)
	}
	if err := os.Lchown(dir, uid, gid); err != nil {
		return fmt.Errorf("workspace: %w", err)
	}
	return nil
}

// releaseVolume detaches the service's mount of a Docker workspace volume
// whose container is gone, so idle workspaces hold no loop device.
func (s *Service) releaseVolume(volume string) {
	if volume == "" {
		return
	}
	_, mnt := s.workspaceImage(volume)
	if err := diskimage.Release(mnt); err != nil {
		s.log.Warn("detach workspace image", "volume", volume, "err", err)
	}
}

// dropVolumeImage removes the image of a Docker workspace volume once the
// volume is gone. A container that still held it keeps its loop device
// until it ends; the disk space comes back then.
func (s *Service) dropVolumeImage(volume string) error {
	img, mnt := s.workspaceImage(volume)
	if err := diskimage.Release(mnt); err != nil {
		return err
	}
	if err := os.Remove(img); err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("remove workspace image: %w", err)
	}
	if err := os.Remove(mnt); err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("remove workspace mount point: %w", err)
	}
	return nil
}

// boundLocal mounts a local sandbox's filesystem on dir, which then holds
// its workspace and temp dir, making the image when dir is new. It returns
// false, and mounts nothing, for a workdir made before bounds and on a
// service that cannot mount.
func (s *Service) boundLocal(ctx context.Context, dir string, size int64) (bool, error) {
	img := dir + ".img"
	if _, err := os.Lstat(img); err != nil {
		if _, err := os.Lstat(dir); err == nil || !s.bounded {
			return false, nil
		}
		if err := s.makeImage(ctx, img, size, dockerbox.User{UID: os.Getuid(), GID: os.Getgid()}); err != nil {
			return false, err
		}
	}
	if err := diskimage.Mount(ctx, img, dir); err != nil {
		return false, fmt.Errorf("mount workspace image: %w", err)
	}
	if err := os.Chmod(dir, 0o700); err != nil {
		_ = diskimage.Release(dir)
		return false, fmt.Errorf("local workdir: %w", err)
	}
	return true, nil
}

// releaseLocal detaches a local sandbox's filesystem (if it has one): it is
// mounted only while the sandbox runs.
func (s *Service) releaseLocal(key string) {
	dir := filepath.Join(s.cfg.StateDir, "local", key)
	s.dropLocalSkills(dir, filepath.Join(dir, "workspace"))
	if err := diskimage.Release(dir); err != nil {
		s.log.Warn("detach local workspace image", "err", err)
	}
}

// RemoveStateDir removes a state directory the service no longer uses,
// first detaching any workspace filesystem still mounted in it (a local
// sandbox's, or one a crash left behind): removing through a mount would
// empty the workspace and then fail.
func RemoveStateDir(dir string) error {
	if err := diskimage.ReleaseAll(dir); err != nil {
		return err
	}
	// The skills library's snapshots and copies are read-only directories,
	// which a service that is not root cannot empty as they are.
	_ = filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err == nil && d.IsDir() {
			if fi, err := d.Info(); err == nil && fi.Mode().Perm()&0o200 == 0 {
				_ = os.Chmod(p, 0o700)
			}
		}
		return nil
	})
	return os.RemoveAll(dir)
}
