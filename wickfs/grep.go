package wickfs

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"regexp"
	"regexp/syntax"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"unicode/utf8"
)

const (
	// grepChunk is how much of a file Grep reads at once; a line longer than
	// this is matched in pieces of this size.
	grepChunk = 256 << 10
	// binarySniff is how much of a file's start is checked for a NUL byte,
	// the sign of a binary file, as GNU grep does.
	binarySniff = 8 << 10
)

// Grep searches files under p (or the file p) line by line with an RE2
// pattern, in lexical walk order, and returns at most MaxGrepMatches matches.
// Hidden directories, node_modules, __pycache__, vendor, files with binary
// extensions and files with a NUL byte near their start are skipped.
func (l *LocalFS) Grep(ctx context.Context, pattern, p string) (*GrepResult, error) {
	return l.GrepN(ctx, pattern, p, 0)
}

// GrepN is Grep with a match cap; max 0 means the configured default.
func (l *LocalFS) GrepN(ctx context.Context, pattern, p string, max int) (*GrepResult, error) {
	if max <= 0 {
		max = l.cfg.maxGrepMatches
	}
	m, err := newLineMatcher(pattern)
	if err != nil {
		return nil, err
	}
	rel, agent, err := l.Resolve(p)
	if err != nil {
		return nil, err
	}
	st, err := l.root.Stat(rel)
	if err != nil {
		return nil, opError("grep", agent, err)
	}
	if !st.IsDir() && !st.Mode().IsRegular() {
		return nil, &PathError{Op: "grep", Path: agent, Err: invalid("not a regular file or directory")}
	}
	// The root resolves the starting point (following in-root symlinks);
	// below it the walk never follows one.
	f, err := l.root.Open(rel)
	if err != nil {
		return nil, opError("grep", agent, err)
	}
	res := &GrepResult{Matches: []GrepMatch{}}
	if !st.IsDir() {
		defer f.Close()
		s := l.newFileScanner(m, max+1)
		for _, mt := range s.scan(ctx, int(f.Fd()), agent) {
			if len(res.Matches) == max {
				res.Truncated = true
				break
			}
			res.Matches = append(res.Matches, mt)
		}
		return res, ctx.Err()
	}
	root := &dirRef{f: f, fd: int(f.Fd())}
	root.refs.Store(1)
	if err := l.grepTree(ctx, m, root, rel, max, res); err != nil {
		return nil, opError("grep", agent, err)
	}
	return res, nil
}

// grepBatch is how many files of one directory make one job.
const grepBatch = 16

// dirRef is an open directory shared by the jobs of its files; the last one
// to finish closes it.
type dirRef struct {
	f    *os.File
	fd   int
	refs atomic.Int32
}

func (d *dirRef) release() {
	if d.refs.Add(-1) == 0 {
		d.f.Close()
	}
}

// grepJob is a run of files of one directory, consecutive in walk order.
type grepJob struct {
	dir     *dirRef
	dirRel  string
	names   []string
	matches []GrepMatch
	done    chan struct{}
}

// grepTree walks the tree and greps its files with bounded parallelism,
// merging matches in walk order, so the result is the same as a sequential
// scan. The walk runs at most a window of jobs ahead of the merge, which
// bounds memory and open directories.
func (l *LocalFS) grepTree(ctx context.Context, m *lineMatcher, root *dirRef, rel string, max int, res *GrepResult) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	workers := l.cfg.grepWorkers
	ordered := make(chan *grepJob, 8*workers)
	jobs := make(chan *grepJob)
	var walkErr error
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		defer close(jobs)
		defer close(ordered)
		w := &grepWalker{ordered: ordered, jobs: jobs}
		walkErr = w.walkDir(ctx, root, rel)
		root.release()
	}()
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			s := l.newFileScanner(m, max+1)
			for j := range jobs {
				for _, name := range j.names {
					if len(j.matches) > max || ctx.Err() != nil {
						break
					}
					fd, err := openBeneath(j.dir.fd, name)
					if err != nil {
						continue
					}
					j.matches = append(j.matches, s.scan(ctx, fd, l.agentPath(joinRel(j.dirRel, name)))...)
					syscall.Close(fd)
				}
				j.dir.release()
				close(j.done)
			}
		}()
	}
	// Stop the walk and the workers before waiting for them, on every return.
	defer func() {
		cancel()
		wg.Wait()
	}()
	for j := range ordered {
		select {
		case <-j.done:
		case <-ctx.Done():
			return ctx.Err()
		}
		for _, mt := range j.matches {
			if len(res.Matches) == max {
				res.Truncated = true
				return nil
			}
			res.Matches = append(res.Matches, mt)
		}
	}
	wg.Wait()
	if walkErr != nil {
		return walkErr
	}
	return ctx.Err()
}

type grepWalker struct {
	ordered chan<- *grepJob
	jobs    chan<- *grepJob
}

// walkDir lists one directory and emits jobs for its files in lexical
// depth-first order, descending into subdirectories opened relative to it.
func (w *grepWalker) walkDir(ctx context.Context, d *dirRef, rel string) error {
	des, err := d.f.ReadDir(-1)
	if err != nil {
		return err
	}
	slices.SortFunc(des, func(a, b fs.DirEntry) int { return strings.Compare(a.Name(), b.Name()) })
	var run []string
	flush := func() error {
		if len(run) == 0 {
			return nil
		}
		d.refs.Add(1)
		j := &grepJob{dir: d, dirRel: rel, names: run, done: make(chan struct{})}
		run = nil
		select {
		case w.ordered <- j:
		case <-ctx.Done():
			d.release()
			return ctx.Err()
		}
		select {
		case w.jobs <- j:
			return nil
		case <-ctx.Done():
			d.release()
			return ctx.Err()
		}
	}
	for _, e := range des {
		name := e.Name()
		switch {
		case e.IsDir():
			if SkipDir(name) {
				continue
			}
			if err := flush(); err != nil {
				return err
			}
			fd, err := openDirBeneath(d.fd, name)
			if err != nil {
				continue // unreadable, or replaced by a symlink since listed
			}
			sub := &dirRef{f: os.NewFile(uintptr(fd), name), fd: fd}
			sub.refs.Store(1)
			err = w.walkDir(ctx, sub, joinRel(rel, name))
			sub.release()
			if err != nil {
				return err
			}
		case e.Type().IsRegular() && !BinaryExt(name):
			run = append(run, name)
			if len(run) == grepBatch {
				if err := flush(); err != nil {
					return err
				}
			}
		}
	}
	return flush()
}

// openBeneath opens the file name (one component from a listing of dirfd)
// for reading. The directory was reached through the root without following
// symlinks, and O_NOFOLLOW refuses a symlink swapped in since the listing,
// so the open cannot leave the root. Raw descriptors skip os.File's poller
// set-up, which costs more system calls than reading a small file.
func openBeneath(dirfd int, name string) (int, error) {
	for {
		fd, err := syscall.Openat(dirfd, name, syscall.O_RDONLY|syscall.O_CLOEXEC|syscall.O_NOFOLLOW|syscall.O_NOCTTY|syscall.O_NONBLOCK, 0)
		if err != syscall.EINTR {
			return fd, err
		}
	}
}

// openDirBeneath is openBeneath for a subdirectory.
func openDirBeneath(dirfd int, name string) (int, error) {
	for {
		fd, err := syscall.Openat(dirfd, name, syscall.O_RDONLY|syscall.O_CLOEXEC|syscall.O_NOFOLLOW|syscall.O_DIRECTORY, 0)
		if err != syscall.EINTR {
			return fd, err
		}
	}
}

// lineMatcher matches lines. Searching a whole buffer with a multi-line form
// of the pattern and checking only the lines it hits is much faster than
// running the pattern on every line, and finds the same lines: a match inside
// a line is a match of the multi-line form starting in that line.
type lineMatcher struct {
	line  *regexp.Regexp
	multi *regexp.Regexp // nil when the pattern anchors to the text (\A, \z)
}

func newLineMatcher(pattern string) (*lineMatcher, error) {
	re, err := regexp.Compile(pattern)
	if err != nil {
		return nil, invalid(fmt.Sprintf("invalid regular expression %q: %v", pattern, err))
	}
	m := &lineMatcher{line: re}
	if parsed, err := syntax.Parse(pattern, syntax.Perl); err == nil && !anchorsText(parsed) {
		m.multi, _ = regexp.Compile("(?m:" + pattern + ")")
	}
	return m, nil
}

func anchorsText(re *syntax.Regexp) bool {
	if re.Op == syntax.OpBeginText || re.Op == syntax.OpEndText {
		return true
	}
	for _, s := range re.Sub {
		if anchorsText(s) {
			return true
		}
	}
	return false
}

// fileScanner is one worker's reusable state.
type fileScanner struct {
	l   *LocalFS
	m   *lineMatcher
	max int
	buf []byte
}

func (l *LocalFS) newFileScanner(m *lineMatcher, max int) *fileScanner {
	return &fileScanner{l: l, m: m, max: max, buf: make([]byte, grepChunk)}
}

// fdReader reads a raw descriptor.
type fdReader int

func (r fdReader) Read(b []byte) (int, error) {
	for {
		n, err := syscall.Read(int(r), b)
		switch {
		case err == syscall.EINTR:
			continue
		case err != nil:
			return 0, err
		case n == 0 && len(b) > 0:
			return 0, io.EOF
		}
		return n, nil
	}
}

// scan returns up to s.max matches of the open file fd; unreadable and
// binary files have none.
func (s *fileScanner) scan(ctx context.Context, fd int, agent string) []GrepMatch {
	if ctx.Err() != nil {
		return nil
	}
	f := fdReader(fd)
	var out []GrepMatch
	line, carry := 1, 0
	first := true
	for {
		n, err := io.ReadFull(f, s.buf[carry:])
		data := s.buf[:carry+n]
		eof := err != nil
		if err != nil && !errors.Is(err, io.EOF) && !errors.Is(err, io.ErrUnexpectedEOF) {
			return out
		}
		if first {
			first = false
			if bytes.IndexByte(data[:min(len(data), binarySniff)], 0) >= 0 {
				return nil
			}
		}
		region := data
		if !eof {
			if i := bytes.LastIndexByte(data, '\n'); i >= 0 {
				region = data[:i+1]
			}
		}
		var full bool
		out, full = s.scanRegion(region, line, agent, out)
		if full || eof || ctx.Err() != nil {
			return out
		}
		line += bytes.Count(region, []byte{'\n'})
		carry = copy(s.buf, data[len(region):])
	}
}

// scanRegion appends the matching lines of region, whose first line is number
// first; it reports whether the cap was reached.
func (s *fileScanner) scanRegion(region []byte, first int, file string, out []GrepMatch) ([]GrepMatch, bool) {
	pos, counted, line := 0, 0, first
	for pos < len(region) {
		var start int
		if s.m.multi != nil {
			loc := s.m.multi.FindIndex(region[pos:])
			if loc == nil {
				return out, false
			}
			start = pos + loc[0]
		} else {
			start = pos
		}
		ls := pos + bytes.LastIndexByte(region[pos:start], '\n') + 1
		if ls >= len(region) {
			return out, false
		}
		le := bytes.IndexByte(region[ls:], '\n')
		if le < 0 {
			le = len(region)
		} else {
			le += ls
		}
		line += bytes.Count(region[counted:ls], []byte{'\n'})
		counted = ls
		text := bytes.TrimSuffix(region[ls:le], []byte{'\r'})
		if s.m.line.Match(text) {
			out = append(out, GrepMatch{File: file, Line: line, Text: s.l.cutLine(text)})
			if len(out) >= s.max {
				return out, true
			}
		}
		pos = le + 1
	}
	return out, false
}

// cutLine bounds a result line and makes it valid UTF-8 (results travel as
// JSON and protobuf strings).
func (l *LocalFS) cutLine(b []byte) string {
	cut := false
	if len(b) > l.cfg.maxLineBytes {
		b = b[:l.cfg.maxLineBytes]
		// Drop a rune the cut split in two.
		for i := 0; i < utf8.UTFMax-1 && len(b) > 0 && !utf8.FullRune(b[lastRuneStart(b):]); i++ {
			b = b[:lastRuneStart(b)]
		}
		cut = true
	}
	s := string(b)
	if !utf8.ValidString(s) {
		s = strings.ToValidUTF8(s, "\uFFFD")
	}
	if cut {
		s += " …[line cut]"
	}
	return s
}

func lastRuneStart(b []byte) int {
	for i := len(b) - 1; i >= 0 && i >= len(b)-utf8.UTFMax; i-- {
		if utf8.RuneStart(b[i]) {
			return i
		}
	}
	return len(b) - 1
}
