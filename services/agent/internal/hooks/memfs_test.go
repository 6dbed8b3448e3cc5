package hooks_test

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"path"
	"regexp"
	"sort"
	"strings"
	"sync"

	"github.com/wick-agent/wick/wickfs"
)

// memFS is an in-memory wickfs.FileSystem for hook tests.
type memFS struct {
	mu    sync.Mutex
	files map[string]string
	exec  func(ctx context.Context, command string, o wickfs.ExecOptions) (*wickfs.ExecResult, error)
	// execOpts records the options of the last Exec.
	execOpts wickfs.ExecOptions
}

func newMemFS(files map[string]string) *memFS {
	m := &memFS{files: map[string]string{}}
	for k, v := range files {
		m.files[k] = v
	}
	return m
}

func (m *memFS) get(p string) (string, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	c, ok := m.files[path.Clean(p)]
	return c, ok
}

func (m *memFS) Ls(_ context.Context, p string) ([]wickfs.DirEntry, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	dir := path.Clean(p)
	seen := map[string]wickfs.DirEntry{}
	for f, c := range m.files {
		if !strings.HasPrefix(f, dir+"/") {
			continue
		}
		rest := strings.TrimPrefix(f, dir+"/")
		if i := strings.Index(rest, "/"); i >= 0 {
			seen[rest[:i]] = wickfs.DirEntry{Name: rest[:i], Type: "dir"}
		} else {
			seen[rest] = wickfs.DirEntry{Name: rest, Type: "file", Size: int64(len(c))}
		}
	}
	if len(seen) == 0 {
		return nil, &fs.PathError{Op: "ls", Path: p, Err: fs.ErrNotExist}
	}
	var out []wickfs.DirEntry
	for _, e := range seen {
		out = append(out, e)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out, nil
}

func (m *memFS) ReadFile(_ context.Context, p string) (string, error) {
	c, ok := m.get(p)
	if !ok {
		return "", &fs.PathError{Op: "read", Path: p, Err: fs.ErrNotExist}
	}
	return c, nil
}

func (m *memFS) ReadLines(_ context.Context, p string, offset, limit int) (*wickfs.LinesResult, error) {
	c, ok := m.get(p)
	if !ok {
		return nil, &fs.PathError{Op: "read", Path: p, Err: fs.ErrNotExist}
	}
	var lines []string
	if c != "" {
		lines = strings.Split(strings.TrimSuffix(c, "\n"), "\n")
	}
	res := &wickfs.LinesResult{Offset: offset, Lines: []string{}}
	if offset >= len(lines) {
		return res, nil
	}
	end := min(offset+limit, len(lines))
	res.Lines = lines[offset:end]
	res.MoreLines = end < len(lines)
	return res, nil
}

func (m *memFS) WriteFile(_ context.Context, p, content string) (*wickfs.WriteResult, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.files[path.Clean(p)] = content
	return &wickfs.WriteResult{Path: p, BytesWritten: len(content)}, nil
}

func (m *memFS) EditFile(_ context.Context, p, oldText, newText string, opts ...wickfs.EditOption) (*wickfs.EditResult, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	c, ok := m.files[path.Clean(p)]
	if !ok {
		return nil, &fs.PathError{Op: "edit", Path: p, Err: fs.ErrNotExist}
	}
	n := strings.Count(c, oldText)
	o := wickfs.ApplyEdit(opts)
	switch {
	case n == 0:
		return nil, errors.New("old_text not found in file")
	case n > 1 && !o.ReplaceAll:
		return nil, fmt.Errorf("old_text occurs %d times; use replace_all", n)
	}
	if o.ReplaceAll {
		c = strings.ReplaceAll(c, oldText, newText)
	} else {
		c = strings.Replace(c, oldText, newText, 1)
	}
	m.files[path.Clean(p)] = c
	return &wickfs.EditResult{Path: p, Replacements: map[bool]int{true: n, false: 1}[o.ReplaceAll]}, nil
}

func (m *memFS) Grep(_ context.Context, pattern, p string) (*wickfs.GrepResult, error) {
	re, err := regexp.Compile(pattern)
	if err != nil {
		return nil, err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	res := &wickfs.GrepResult{Matches: []wickfs.GrepMatch{}}
	var names []string
	for f := range m.files {
		if strings.HasPrefix(f, path.Clean(p)+"/") || f == path.Clean(p) {
			names = append(names, f)
		}
	}
	sort.Strings(names)
	for _, f := range names {
		for i, line := range strings.Split(m.files[f], "\n") {
			if re.MatchString(line) {
				res.Matches = append(res.Matches, wickfs.GrepMatch{File: f, Line: i + 1, Text: line})
			}
		}
	}
	return res, nil
}

func (m *memFS) Glob(_ context.Context, pattern, p string) (*wickfs.GlobResult, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	dir := path.Clean(p)
	res := &wickfs.GlobResult{Files: []string{}}
	found := false
	for f := range m.files {
		if !strings.HasPrefix(f, dir+"/") {
			continue
		}
		found = true
		if ok, _ := path.Match(pattern, path.Base(f)); ok {
			res.Files = append(res.Files, f)
		}
	}
	if !found {
		return nil, &fs.PathError{Op: "glob", Path: p, Err: fs.ErrNotExist}
	}
	sort.Strings(res.Files)
	return res, nil
}

func (m *memFS) Exec(ctx context.Context, command string, opts ...wickfs.ExecOption) (*wickfs.ExecResult, error) {
	o := wickfs.ApplyExec(opts)
	m.mu.Lock()
	m.execOpts = o
	fn := m.exec
	m.mu.Unlock()
	if fn == nil {
		return &wickfs.ExecResult{Stdout: "ran: " + command}, nil
	}
	return fn(ctx, command, o)
}

var _ wickfs.FileSystem = (*memFS)(nil)
