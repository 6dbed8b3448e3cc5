package wickfs

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"regexp"
	"regexp/syntax"
	"strings"
	"sync"
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

type grepFile struct{ dir, name string }

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
	var files []grepFile
	if st.IsDir() {
		err = l.walk(ctx, rel, func(dir string, d fs.DirEntry) error {
			if d.Type().IsRegular() && !BinaryExt(d.Name()) {
				files = append(files, grepFile{dir, d.Name()})
			}
			return nil
		})
		if err != nil {
			return nil, opError("grep", agent, err)
		}
	} else {
		files = []grepFile{{path.Dir(rel), path.Base(rel)}}
	}
	return l.grepFiles(ctx, m, files, max)
}

// grepFiles scans files with bounded parallelism and merges their matches in
// file order, so the result is the same as a sequential scan. Workers run at
// most window files ahead of the merge, which bounds memory.
func (l *LocalFS) grepFiles(ctx context.Context, m *lineMatcher, files []grepFile, max int) (*GrepResult, error) {
	res := &GrepResult{Matches: []GrepMatch{}}
	if len(files) == 0 {
		return res, nil
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	workers := min(l.cfg.grepWorkers, len(files))
	window := 8 * workers
	type slot struct {
		matches []GrepMatch
		done    chan struct{}
	}
	slots := make([]slot, len(files))
	for i := range slots {
		slots[i].done = make(chan struct{})
	}
	jobs := make(chan int)
	credit := make(chan struct{}, window)
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		defer close(jobs)
		for i := range files {
			select {
			case credit <- struct{}{}:
			case <-ctx.Done():
				return
			}
			select {
			case jobs <- i:
			case <-ctx.Done():
				return
			}
		}
	}()
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			s := l.newFileScanner(m, max+1)
			defer s.close()
			for i := range jobs {
				slots[i].matches = s.scan(ctx, files[i])
				close(slots[i].done)
			}
		}()
	}
	defer wg.Wait()
	for i := range slots {
		select {
		case <-slots[i].done:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
		<-credit
		for _, mt := range slots[i].matches {
			if len(res.Matches) == max {
				res.Truncated = true
				return res, nil
			}
			res.Matches = append(res.Matches, mt)
		}
	}
	return res, nil
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
	l      *LocalFS
	m      *lineMatcher
	max    int
	buf    []byte
	dir    string
	dirFS  *os.Root
	dirErr error
}

func (l *LocalFS) newFileScanner(m *lineMatcher, max int) *fileScanner {
	return &fileScanner{l: l, m: m, max: max, buf: make([]byte, grepChunk)}
}

func (s *fileScanner) close() {
	if s.dirFS != nil {
		s.dirFS.Close()
	}
}

// open opens a file relative to its directory, reusing the directory handle
// across consecutive files of the same directory.
func (s *fileScanner) open(f grepFile) (*os.File, error) {
	if s.dirFS == nil || s.dir != f.dir {
		s.close()
		s.dirFS, s.dirErr = s.l.root.OpenRoot(f.dir)
		s.dir = f.dir
		if s.dirErr != nil {
			s.dirFS = nil
		}
	}
	if s.dirErr != nil {
		return nil, s.dirErr
	}
	return s.dirFS.Open(f.name)
}

// scan returns up to s.max matches of one file; unreadable and binary files
// have none.
func (s *fileScanner) scan(ctx context.Context, gf grepFile) []GrepMatch {
	if ctx.Err() != nil {
		return nil
	}
	f, err := s.open(gf)
	if err != nil {
		return nil
	}
	defer f.Close()
	agent := s.l.agentPath(joinRel(gf.dir, gf.name))
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
