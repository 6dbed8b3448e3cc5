package sandbox

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"

	"golang.org/x/sys/unix"

	"github.com/wick-agent/wick/services/sandbox/internal/dockerbox"
	"github.com/wick-agent/wick/skills"
)

// The skills library (package skills, merged with the operator's
// SkillsDirs) appears read-only at <workdir>/skills in every sandbox. At
// start the service writes it once into <state>/skills/<content hash>/, a
// snapshot that never changes, so a sandbox sees the library of the
// service that made its container even after the operator edits a folder:
//
//   - Docker, local engine: a read-only bind mount of the snapshot.
//   - Docker, remote engine: a copy into the container's workspace volume,
//     owned by root with read-only modes, made when the container is
//     created.
//   - Local: a read-only bind mount of the snapshot on the workspace's
//     skills folder when the service can mount (root with CAP_SYS_ADMIN),
//     else a copy with read-only modes, made anew at each start of the
//     sandbox (commands running as the copy's owner could chmod it; the next
//     start repairs it).
//
// Containers take mounts when they are created, so a sandbox whose
// container exists keeps what it had until it is stopped and started again.
// Snapshots of earlier libraries stay in the state directory, as containers
// that still run may bind them.

// SkillsDirsUsage and BuiltinSkillsUsage describe the flags of every binary that hosts the service.
const (
	SkillsDirsUsage    = "comma-separated host folders of skill folders (each with a SKILL.md) added to the skills library every sandbox sees read-only at <workdir>/skills; a skill named like a built-in one replaces it"
	BuiltinSkillsUsage = "place Wick's built-in skills library at <workdir>/skills in every sandbox (with -skills-dir's folders); false leaves it out"
)

// localSkillsCopied, in a local sandbox's directory, says its workspace's
// skills folder is a copy the service made, which it may replace.
const localSkillsCopied = ".skills-copied"

// prepareSkills writes the library snapshot, when the service has one, and
// finds out how local sandboxes get it.
func (s *Service) prepareSkills() error {
	if !s.cfg.BuiltinSkills && len(s.cfg.SkillsDirs) == 0 {
		return nil
	}
	root := filepath.Join(s.cfg.StateDir, "skills")
	if err := os.MkdirAll(root, 0o711); err != nil {
		return fmt.Errorf("sandbox: skills library: %w", err)
	}
	build, err := os.MkdirTemp(root, ".build-")
	if err != nil {
		return fmt.Errorf("sandbox: skills library: %w", err)
	}
	defer func() { _ = skills.RemoveMaterialized(build) }()
	lib := filepath.Join(build, "library")
	if err := skills.Materialize(lib, s.cfg.BuiltinSkills, s.cfg.SkillsDirs...); err != nil {
		return fmt.Errorf("sandbox: skills library (-skills-dir): %w", err)
	}
	sum, err := treeHash(lib)
	if err != nil {
		return fmt.Errorf("sandbox: skills library: %w", err)
	}
	snap := filepath.Join(root, sum)
	if _, err := os.Lstat(snap); errors.Is(err, fs.ErrNotExist) {
		// Moving a directory to another parent rewrites its "..", which
		// needs write permission on it: a service that is not root (on
		// the Kubernetes engine) has none on the read-only library until
		// it lends itself some for the move.
		fi, err := os.Stat(lib)
		if err != nil {
			return fmt.Errorf("sandbox: skills library: %w", err)
		}
		if err := os.Chmod(lib, fi.Mode().Perm()|0o200); err != nil {
			return fmt.Errorf("sandbox: skills library: %w", err)
		}
		// Another instance on this state dir may rename the same content
		// into place first; either copy is the snapshot.
		err = os.Rename(lib, snap)
		switch {
		case err == nil:
			if err := os.Chmod(snap, fi.Mode().Perm()); err != nil {
				return fmt.Errorf("sandbox: skills library: %w", err)
			}
		case !errors.Is(err, fs.ErrExist) && !errors.Is(err, syscall.ENOTEMPTY):
			return fmt.Errorf("sandbox: skills library: %w", err)
		}
	}
	s.skillsDir = snap
	names, _ := skills.Names(os.DirFS(snap))
	s.log.Info("skills library placed read-only in every sandbox", "path", "<workdir>/"+dockerbox.SkillsDir,
		"snapshot", snap, "skills", names)
	if s.localAllowed() {
		s.skillsBind = s.skillsProbe(snap, build) == nil
		if !s.skillsBind {
			s.log.Warn("local sandboxes get a COPY of the skills library, with read-only modes only: this service cannot bind-mount (it needs root with CAP_SYS_ADMIN), so their commands could change their copy; each start of a sandbox makes it anew")
		}
	}
	return nil
}

// treeHash is a digest of a directory tree's names, modes and contents.
func treeHash(dir string) (string, error) {
	h := sha256.New()
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(dir, p)
		if err != nil {
			return err
		}
		fi, err := d.Info()
		if err != nil {
			return err
		}
		fmt.Fprintf(h, "%s\x00%o\x00%d\x00", filepath.ToSlash(rel), fi.Mode(), fi.Size())
		if d.IsDir() {
			return nil
		}
		f, err := os.Open(p)
		if err != nil {
			return err
		}
		defer f.Close()
		_, err = io.Copy(h, f)
		return err
	})
	if err != nil {
		return "", err
	}
	return hex.EncodeToString(h.Sum(nil)[:12]), nil
}

// probeBind tries a read-only bind mount of src, in dir.
func probeBind(src, dir string) error {
	target := filepath.Join(dir, "probe")
	if err := os.Mkdir(target, 0o700); err != nil {
		return err
	}
	defer os.Remove(target)
	if err := bindReadOnly(src, target); err != nil {
		return err
	}
	return unix.Unmount(target, unix.MNT_DETACH)
}

// bindReadOnly bind-mounts src on target, read-only: a bind mount takes
// its flags from a remount.
func bindReadOnly(src, target string) error {
	if err := unix.Mount(src, target, "", unix.MS_BIND, ""); err != nil {
		return fmt.Errorf("bind %s: %w", target, err)
	}
	if err := unix.Mount("", target, "", unix.MS_BIND|unix.MS_REMOUNT|unix.MS_RDONLY|unix.MS_NOSUID|unix.MS_NODEV, ""); err != nil {
		_ = unix.Unmount(target, unix.MNT_DETACH)
		return fmt.Errorf("make %s read-only: %w", target, err)
	}
	return nil
}

// placeLocalSkills puts the library at the skills folder of the local
// sandbox whose directory is dir and workspace ws. A skills folder of the
// sandbox's own (one the service did not copy) is left alone, hidden by the
// mount or, where the service copies, kept in place of the library.
func (s *Service) placeLocalSkills(dir, ws string) error {
	if s.skillsDir == "" {
		return nil
	}
	target := filepath.Join(ws, dockerbox.SkillsDir)
	s.dropLocalSkills(dir, ws)
	if s.skillsBind {
		if err := os.Mkdir(target, 0o755); err != nil && !errors.Is(err, fs.ErrExist) {
			return fmt.Errorf("skills library: %w", err)
		}
		if err := bindReadOnly(s.skillsDir, target); err != nil {
			return fmt.Errorf("skills library: %w", err)
		}
		return nil
	}
	if _, err := os.Lstat(target); err == nil {
		if err := os.Remove(target); err != nil { // only an empty folder goes
			s.log.Warn("local sandbox keeps its own skills folder; the skills library is not copied there", "path", target, "err", err)
			return nil
		}
	}
	if err := skills.Materialize(target, false, s.skillsDir); err != nil {
		return fmt.Errorf("skills library: %w", err)
	}
	if err := os.WriteFile(filepath.Join(dir, localSkillsCopied), nil, 0o600); err != nil {
		return fmt.Errorf("skills library: %w", err)
	}
	return nil
}

// dropLocalSkills undoes placeLocalSkills: the mount, or the service's copy.
func (s *Service) dropLocalSkills(dir, ws string) {
	target := filepath.Join(ws, dockerbox.SkillsDir)
	// EINVAL: not a mount point; ENOENT: no folder.
	if err := unix.Unmount(target, unix.MNT_DETACH); err != nil && !errors.Is(err, unix.EINVAL) && !errors.Is(err, unix.ENOENT) && !errors.Is(err, unix.EPERM) {
		s.log.Warn("unmount the skills library", "path", target, "err", err)
	}
	marker := filepath.Join(dir, localSkillsCopied)
	if _, err := os.Lstat(marker); err != nil {
		return
	}
	if err := skills.RemoveMaterialized(target); err != nil {
		s.log.Warn("remove the copy of the skills library", "path", target, "err", err)
		return
	}
	_ = os.Remove(marker)
}
