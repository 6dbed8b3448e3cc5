// Package skills is the library of skills that ships with Wick: one folder
// per skill, each with a SKILL.md (front matter name and description, then
// instructions) and the scripts it runs. The sandbox service places the
// library, merged with the operator's own skill folders, read-only in every
// sandbox, where the agent's skills hook finds it.
package skills

import (
	"embed"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"strings"
)

// The pattern takes every skill folder, recursively; Library hides the
// package's own files, which it takes too. Names starting with "." or "_"
// are left out, as go:embed leaves them out of directories.
//
//go:embed *
var embedded embed.FS

// MaxFileBytes bounds one file of a skill folder an operator adds: a skill is
// instructions and small scripts, and every sandbox sees the whole library.
const MaxFileBytes = 4 << 20

// Modes of the materialized library: nobody may change it, everyone may
// read it and run its scripts.
const (
	dirMode  = 0o555
	fileMode = 0o444
	execMode = 0o555
)

// ErrBadSkill is wrapped by every error about an operator's skill folder.
var ErrBadSkill = errors.New("bad skill folder")

// namePattern is a folder-safe skill name: it is a path element in every
// sandbox and a word in the agent's catalog, which loads no skill with
// another name.
var namePattern = regexp.MustCompile(`^[a-z0-9][a-z0-9-]{0,63}$`)

// ValidName reports whether name can name a skill folder: 1 to 64 lower-case
// letters, digits and '-', starting with a letter or digit.
func ValidName(name string) bool { return namePattern.MatchString(name) }

// Library is the built-in library: at its top, one directory per skill.
func Library() fs.FS { return library{embedded} }

// library hides the top-level files of the embedded tree (this package's
// sources): only skill folders are part of the library.
type library struct{ embed.FS }

func (l library) Open(name string) (fs.File, error) {
	if top, _, _ := strings.Cut(name, "/"); name != "." && !l.isSkill(top) {
		return nil, &fs.PathError{Op: "open", Path: name, Err: fs.ErrNotExist}
	}
	f, err := l.FS.Open(name)
	if err != nil || name != "." {
		return f, err
	}
	return &rootDir{ReadDirFile: f.(fs.ReadDirFile), l: l}, nil
}

func (l library) ReadDir(name string) ([]fs.DirEntry, error) {
	if name != "." {
		if top, _, _ := strings.Cut(name, "/"); !l.isSkill(top) {
			return nil, &fs.PathError{Op: "readdir", Path: name, Err: fs.ErrNotExist}
		}
		return l.FS.ReadDir(name)
	}
	all, err := l.FS.ReadDir(".")
	if err != nil {
		return nil, err
	}
	out := all[:0]
	for _, e := range all {
		if e.IsDir() {
			out = append(out, e)
		}
	}
	return out, nil
}

func (l library) isSkill(top string) bool {
	fi, err := fs.Stat(l.FS, top)
	return err == nil && fi.IsDir()
}

// rootDir lists only the skill folders of the library's root.
type rootDir struct {
	fs.ReadDirFile
	l    library
	read int
}

func (d *rootDir) ReadDir(n int) ([]fs.DirEntry, error) {
	all, err := d.l.ReadDir(".")
	if err != nil {
		return nil, err
	}
	rest := all[min(d.read, len(all)):]
	if n <= 0 {
		d.read = len(all)
		return rest, nil
	}
	if len(rest) == 0 {
		return nil, io.EOF
	}
	rest = rest[:min(n, len(rest))]
	d.read += len(rest)
	return rest, nil
}

// Names lists the skill folders of lib: its directories, and links to
// directories within it, whose names do not start with "." or "_".
func Names(lib fs.FS) ([]string, error) {
	entries, err := fs.ReadDir(lib, ".")
	if err != nil {
		return nil, err
	}
	var names []string
	for _, e := range entries {
		if hidden(e.Name()) {
			continue
		}
		if e.Type()&fs.ModeSymlink != 0 {
			// A link to a folder of the same dir is that folder; os.Root
			// refuses one that leads out of it.
			fi, err := fs.Stat(lib, e.Name())
			if err != nil {
				return nil, fmt.Errorf("%w: %s: a symbolic link that leads out of the dir: %v", ErrBadSkill, e.Name(), err)
			}
			if !fi.IsDir() {
				continue
			}
		} else if !e.IsDir() {
			continue
		}
		names = append(names, e.Name())
	}
	return names, nil
}

// Materialize writes one library into dst, which must not exist: the
// built-in library when builtin is set, then the skill folders of each of
// the operator's dirs, in order. A skill of a later source replaces one of
// the same name entirely. The result is read-only (directories 0555, files
// 0444, or 0555 when executable), so it can be shown to sandboxes as it is.
// An operator's dir is read confined to itself: a symbolic link that leads
// out of it, a file over MaxFileBytes, a skill folder whose name is not
// folder-safe (ValidName) or anything but regular files and directories
// fails the whole call with ErrBadSkill. Top-level files of a dir (a README)
// and names starting with "." are skipped.
func Materialize(dst string, builtin bool, dirs ...string) (err error) {
	if _, err := os.Lstat(dst); err == nil {
		return fmt.Errorf("skills: %s exists", dst)
	}
	type source struct {
		fsys fs.FS
		name string
		root *os.Root
	}
	var sources []source
	defer func() {
		for _, s := range sources {
			if s.root != nil {
				s.root.Close()
			}
		}
	}()
	if builtin {
		sources = append(sources, source{fsys: Library(), name: "built-in library"})
	}
	for _, d := range dirs {
		r, err := os.OpenRoot(d)
		if err != nil {
			return fmt.Errorf("skills: operator skills dir: %w", err)
		}
		sources = append(sources, source{fsys: r.FS(), name: d, root: r})
	}
	// Later sources win: find each skill's source first.
	from := map[string]int{}
	var order []string
	for i, s := range sources {
		names, err := Names(s.fsys)
		if err != nil {
			return fmt.Errorf("skills: %s: %w", s.name, err)
		}
		for _, n := range names {
			if !ValidName(n) {
				return fmt.Errorf("skills: %s: %w: %q is not a folder-safe name (1 to 64 lower-case letters, digits and '-', starting with a letter or digit)", s.name, ErrBadSkill, n)
			}
			if _, seen := from[n]; !seen {
				order = append(order, n)
			}
			from[n] = i
		}
	}
	tmp, err := os.MkdirTemp(filepath.Dir(dst), "."+filepath.Base(dst)+"-*")
	if err != nil {
		return fmt.Errorf("skills: %w", err)
	}
	defer func() {
		if err != nil {
			_ = removeReadOnly(tmp)
		}
	}()
	for _, n := range order {
		s := sources[from[n]]
		if err := copyTree(s.fsys, n, filepath.Join(tmp, n), s.root != nil); err != nil {
			return fmt.Errorf("skills: %s: %w", s.name, err)
		}
	}
	if err := os.Chmod(tmp, dirMode); err != nil {
		return fmt.Errorf("skills: %w", err)
	}
	if err := os.Rename(tmp, dst); err != nil {
		return fmt.Errorf("skills: %w", err)
	}
	return nil
}

// copyTree copies the folder name of fsys to dst. operator says fsys is an
// operator's dir (an os.Root), whose files are checked; the built-in
// library is trusted.
func copyTree(fsys fs.FS, name, dst string, operator bool) error {
	var dirs []string
	err := fs.WalkDir(fsys, name, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if p != name && hidden(d.Name()) {
			if d.IsDir() {
				return fs.SkipDir
			}
			return nil
		}
		out := filepath.Join(dst, filepath.FromSlash(strings.TrimPrefix(p, name)))
		if d.IsDir() {
			dirs = append(dirs, out)
			return os.Mkdir(out, 0o700)
		}
		// Stat follows a link within the dir; os.Root refuses one that
		// leads out of it.
		fi, err := fs.Stat(fsys, p)
		if err != nil {
			if d.Type()&fs.ModeSymlink != 0 {
				return fmt.Errorf("%w: %s: a symbolic link that leads out of the dir: %v", ErrBadSkill, p, err)
			}
			return err
		}
		switch {
		case !fi.Mode().IsRegular():
			return fmt.Errorf("%w: %s: not a regular file or directory", ErrBadSkill, p)
		case operator && fi.Size() > MaxFileBytes:
			return fmt.Errorf("%w: %s: %d bytes, more than the %d a skill's file may have", ErrBadSkill, p, fi.Size(), MaxFileBytes)
		}
		mode := os.FileMode(fileMode)
		if fi.Mode()&0o111 != 0 || path.Ext(p) == ".py" || path.Ext(p) == ".sh" {
			mode = execMode
		}
		return copyFile(fsys, p, out, mode)
	})
	if err != nil {
		return err
	}
	// Directories become read-only last, once their files are in.
	for i := len(dirs) - 1; i >= 0; i-- {
		if err := os.Chmod(dirs[i], dirMode); err != nil {
			return err
		}
	}
	return nil
}

func copyFile(fsys fs.FS, name, dst string, mode os.FileMode) error {
	in, err := fsys.Open(name)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.OpenFile(dst, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return err
	}
	// A file that grew since it was checked is still bounded.
	n, err := io.Copy(out, io.LimitReader(in, MaxFileBytes+1))
	if err == nil && n > MaxFileBytes {
		err = fmt.Errorf("%w: %s: more than the %d bytes a skill's file may have", ErrBadSkill, name, MaxFileBytes)
	}
	if cerr := out.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return err
	}
	return os.Chmod(dst, mode)
}

func hidden(name string) bool { return strings.HasPrefix(name, ".") || strings.HasPrefix(name, "_") }

// RemoveMaterialized removes a library Materialize wrote, whose read-only
// directories os.RemoveAll alone cannot empty.
func RemoveMaterialized(dir string) error { return removeReadOnly(dir) }

func removeReadOnly(dir string) error {
	_ = filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err == nil && d.IsDir() {
			_ = os.Chmod(p, 0o700)
		}
		return nil
	})
	return os.RemoveAll(dir)
}
