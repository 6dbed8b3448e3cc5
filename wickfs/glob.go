package wickfs

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"path"
	"strings"
)

// maxDoubleStars bounds "**" segments in a Glob pattern, since matching
// costs grow with the power of their number.
const maxDoubleStars = 8

var errStop = errors.New("stop")

// Glob finds files under p whose base name matches pattern (filepath.Match
// syntax), or, when the pattern has a "/" or "**", whose path relative to p
// matches it segment by segment with "**" standing for any number of
// directories. Directories are not returned; at most MaxGlobFiles results.
func (l *LocalFS) Glob(ctx context.Context, pattern, p string) (*GlobResult, error) {
	return l.GlobN(ctx, pattern, p, 0)
}

// GlobN is Glob with a result cap; max 0 means the configured default.
func (l *LocalFS) GlobN(ctx context.Context, pattern, p string, max int) (*GlobResult, error) {
	if max <= 0 {
		max = l.cfg.maxGlobFiles
	}
	rel, agent, err := l.Resolve(p)
	if err != nil {
		return nil, err
	}
	match, err := compileGlob(pattern, agent)
	if err != nil {
		return nil, err
	}
	st, err := l.root.Stat(rel)
	if err != nil {
		return nil, opError("glob", agent, err)
	}
	if !st.IsDir() {
		return nil, &PathError{Op: "glob", Path: agent, Err: invalid("not a directory")}
	}
	res := &GlobResult{Files: []string{}}
	err = l.walk(ctx, rel, func(dir string, d fs.DirEntry) error {
		frel := joinRel(dir, d.Name())
		sub := frel
		if rel != "." {
			sub = frel[len(rel)+1:]
		}
		if !match(sub, d.Name()) {
			return nil
		}
		if len(res.Files) == max {
			res.Truncated = true
			return errStop
		}
		res.Files = append(res.Files, l.agentPath(frel))
		return nil
	})
	if err != nil && !errors.Is(err, errStop) {
		return nil, opError("glob", agent, err)
	}
	return res, nil
}

// compileGlob validates pattern and returns its matcher of (path relative to
// the search directory, base name).
func compileGlob(pattern, searchAgent string) (func(rel, name string) bool, error) {
	if pattern == "" {
		return nil, invalid("glob pattern must not be empty")
	}
	if !strings.Contains(pattern, "/") && !strings.Contains(pattern, "**") {
		if _, err := path.Match(pattern, ""); err != nil {
			return nil, invalid(fmt.Sprintf("invalid glob pattern %q: %v", pattern, err))
		}
		return func(_, name string) bool {
			ok, _ := path.Match(pattern, name)
			return ok
		}, nil
	}
	pat := pattern
	if path.IsAbs(pat) {
		base := strings.TrimSuffix(searchAgent, "/") + "/"
		if !strings.HasPrefix(pat, base) {
			return nil, invalid(fmt.Sprintf("absolute glob pattern %q is not under the search path %s", pattern, searchAgent))
		}
		pat = pat[len(base):]
	}
	var segs []string
	stars := 0
	for _, s := range strings.Split(pat, "/") {
		if s == "" || s == "." {
			continue
		}
		if s == "**" {
			if len(segs) > 0 && segs[len(segs)-1] == "**" {
				continue
			}
			stars++
			segs = append(segs, s)
			continue
		}
		if _, err := path.Match(s, ""); err != nil {
			return nil, invalid(fmt.Sprintf("invalid glob pattern %q: %v", pattern, err))
		}
		segs = append(segs, s)
	}
	if stars > maxDoubleStars {
		return nil, invalid(fmt.Sprintf("glob pattern %q has more than %d \"**\" segments", pattern, maxDoubleStars))
	}
	if len(segs) == 0 {
		return nil, invalid(fmt.Sprintf("glob pattern %q matches no file name", pattern))
	}
	return func(rel, _ string) bool { return matchSegments(segs, strings.Split(rel, "/")) }, nil
}

// matchSegments matches path segments against pattern segments, "**"
// matching zero or more whole segments.
func matchSegments(pat, name []string) bool {
	for len(pat) > 0 {
		if pat[0] == "**" {
			pat = pat[1:]
			if len(pat) == 0 {
				return true
			}
			for i := 0; i <= len(name); i++ {
				if matchSegments(pat, name[i:]) {
					return true
				}
			}
			return false
		}
		if len(name) == 0 {
			return false
		}
		if ok, _ := path.Match(pat[0], name[0]); !ok {
			return false
		}
		pat, name = pat[1:], name[1:]
	}
	return len(name) == 0
}
