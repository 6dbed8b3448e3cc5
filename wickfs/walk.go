package wickfs

import (
	"context"
	"io/fs"
	"os"
	"path"
	"slices"
	"strings"
)

// skipDirs are directory names Grep and Glob never descend into (hidden
// directories, starting with '.', are skipped too).
var skipDirs = map[string]bool{
	"node_modules": true,
	"__pycache__":  true,
	"vendor":       true,
}

// binaryExts are extensions of files Grep never opens.
var binaryExts = map[string]bool{
	".png": true, ".jpg": true, ".jpeg": true, ".gif": true, ".bmp": true, ".ico": true, ".webp": true, ".tiff": true,
	".zip": true, ".tar": true, ".gz": true, ".tgz": true, ".bz2": true, ".xz": true, ".zst": true, ".7z": true, ".rar": true,
	".pdf": true, ".doc": true, ".docx": true, ".xls": true, ".xlsx": true, ".ppt": true, ".pptx": true,
	".so": true, ".dll": true, ".exe": true, ".dylib": true, ".a": true, ".o": true, ".bin": true,
	".wasm": true, ".pyc": true, ".pyo": true, ".class": true, ".jar": true,
	".mp3": true, ".mp4": true, ".wav": true, ".avi": true, ".mov": true, ".mkv": true, ".flac": true, ".ogg": true,
	".woff": true, ".woff2": true, ".ttf": true, ".otf": true, ".eot": true,
	".db": true, ".sqlite": true, ".parquet": true,
}

// SkipDir reports whether Grep and Glob skip a directory named name.
func SkipDir(name string) bool {
	return strings.HasPrefix(name, ".") || skipDirs[name]
}

// BinaryExt reports whether Grep skips a file because of its extension.
func BinaryExt(name string) bool {
	return binaryExts[strings.ToLower(path.Ext(name))]
}

// walkFunc sees one non-directory entry; dir is root-relative.
type walkFunc func(dir string, d fs.DirEntry) error

// walk visits every non-directory entry under the directory rel in lexical
// depth-first order, skipping SkipDir directories below it and never following
// symlinks. Each directory is opened once, relative to its parent, so a walk
// costs one lookup per entry rather than one per path component. Unreadable
// subdirectories are skipped, as `grep -rs` does.
func (l *LocalFS) walk(ctx context.Context, rel string, visit walkFunc) error {
	dr, err := l.root.OpenRoot(rel)
	if err != nil {
		return err
	}
	defer dr.Close()
	return walkDir(ctx, dr, rel, visit)
}

func walkDir(ctx context.Context, dr *os.Root, dir string, visit walkFunc) error {
	f, err := dr.Open(".")
	if err != nil {
		return err
	}
	des, err := f.ReadDir(-1)
	f.Close()
	if err != nil {
		return err
	}
	slices.SortFunc(des, func(a, b fs.DirEntry) int { return strings.Compare(a.Name(), b.Name()) })
	for _, d := range des {
		if err := ctx.Err(); err != nil {
			return err
		}
		name := d.Name()
		if d.IsDir() {
			if SkipDir(name) {
				continue
			}
			sub, err := dr.OpenRoot(name)
			if err != nil {
				continue
			}
			err = walkDir(ctx, sub, joinRel(dir, name), visit)
			sub.Close()
			if err != nil {
				return err
			}
			continue
		}
		if err := visit(dir, d); err != nil {
			return err
		}
	}
	return nil
}

func joinRel(dir, name string) string {
	if dir == "." {
		return name
	}
	return dir + "/" + name
}
