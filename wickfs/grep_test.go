package wickfs_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"reflect"
	"regexp"
	"strings"
	"testing"

	"github.com/wick-agent/wick/wickfs"
)

func TestGrep(t *testing.T) {
	t.Parallel()
	files := map[string]string{
		"a.py":                  "import os\n# TODO: one\nx = 1 # todo\n",
		"src/b.go":              "package b\n\n// TODO two\r\nfunc B() {}\n",
		"src/deep/c.txt":        "nothing\nTODO three",
		".git/config":           "TODO hidden",
		"node_modules/m/i.js":   "TODO vendored",
		"__pycache__/x.py":      "TODO cache",
		"vendor/v.go":           "TODO vendor",
		"img.png":               "TODO binary ext",
		"data.txt":              "TODO\x00binary content",
		"long.txt":              "TODO " + strings.Repeat("é", 3000) + "\n",
		"bad-utf8.txt":          "TODO \xff\xfe here\n",
		".hidden-file":          "TODO hidden file is searched",
		"src/deep/.cache/k.txt": "TODO hidden dir",
	}
	fsys, _ := newFS(t, files, wickfs.WithMaxLineBytes(64))
	ctx := context.Background()

	res, err := fsys.Grep(ctx, "TODO", "/workspace")
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, m := range res.Matches {
		got = append(got, fmt.Sprintf("%s:%d", m.File, m.Line))
	}
	want := []string{
		"/workspace/.hidden-file:1",
		"/workspace/a.py:2",
		"/workspace/bad-utf8.txt:1",
		"/workspace/long.txt:1",
		"/workspace/src/b.go:3",
		"/workspace/src/deep/c.txt:2",
	}
	if !reflect.DeepEqual(got, want) || res.Truncated {
		t.Fatalf("Grep = %v (truncated %v); want %v", got, res.Truncated, want)
	}
	for _, m := range res.Matches {
		switch m.File {
		case "/workspace/src/b.go":
			if m.Text != "// TODO two" {
				t.Errorf("CRLF line text = %q", m.Text)
			}
		case "/workspace/long.txt":
			if len(m.Text) > 64+len(" …[line cut]") || !strings.HasSuffix(m.Text, "[line cut]") || !utf8Valid(m.Text) {
				t.Errorf("long line not cut cleanly: %q", m.Text)
			}
		case "/workspace/bad-utf8.txt":
			if !utf8Valid(m.Text) {
				t.Errorf("text not valid UTF-8: %q", m.Text)
			}
		}
	}

	for _, tc := range []struct {
		name, pattern, path string
		want                []string
		err                 error
	}{
		{"case insensitive", "(?i)todo", "a.py", []string{"/workspace/a.py:2", "/workspace/a.py:3"}, nil},
		{"anchors", "^TODO", "src", []string{"/workspace/src/deep/c.txt:2"}, nil},
		{"line end", "one$", "", []string{"/workspace/a.py:2"}, nil},
		{"text anchor", `\Apackage`, "src", []string{"/workspace/src/b.go:1"}, nil},
		{"empty line", "^$", "src/b.go", []string{"/workspace/src/b.go:2"}, nil},
		{"explicit hidden start", "TODO", "src/deep/.cache", []string{"/workspace/src/deep/.cache/k.txt:1"}, nil},
		{"no match", "zzz", "", nil, nil},
		{"invalid regex", "a(b", "", nil, wickfs.ErrInvalidArgument},
		{"missing", "x", "nope", nil, wickfs.ErrNotFound},
		{"escape", "x", "/", nil, wickfs.ErrOutsideWorkspace},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			res, err := fsys.Grep(ctx, tc.pattern, tc.path)
			if !errors.Is(err, tc.err) || (tc.err == nil && err != nil) {
				t.Fatalf("error = %v; want %v", err, tc.err)
			}
			if err != nil {
				return
			}
			var got []string
			for _, m := range res.Matches {
				got = append(got, fmt.Sprintf("%s:%d", m.File, m.Line))
			}
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("Grep(%q, %q) = %v; want %v", tc.pattern, tc.path, got, tc.want)
			}
		})
	}
}

func utf8Valid(s string) bool { return strings.ToValidUTF8(s, "") == s }

func TestGrepTruncates(t *testing.T) {
	t.Parallel()
	files := map[string]string{}
	for i := range 30 {
		files[fmt.Sprintf("f%02d.txt", i)] = strings.Repeat("match\n", 10)
	}
	fsys, _ := newFS(t, files, wickfs.WithGrepWorkers(3))
	res, err := fsys.Grep(context.Background(), "match", "")
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Matches) != wickfs.MaxGrepMatches || !res.Truncated {
		t.Fatalf("got %d matches, truncated %v; want %d and truncated", len(res.Matches), res.Truncated, wickfs.MaxGrepMatches)
	}
	// Order is the sequential walk order whatever the workers did.
	if last := res.Matches[len(res.Matches)-1]; last.File != "/workspace/f19.txt" || last.Line != 10 {
		t.Errorf("last match = %+v; want f19.txt:10", last)
	}
	res, err = fsys.GrepN(context.Background(), "match", "", 300)
	if err != nil || len(res.Matches) != 300 || res.Truncated {
		t.Fatalf("GrepN(300) = %d matches, truncated %v, %v", len(res.Matches), res.Truncated, err)
	}
}

// TestGrepStopsEarly truncates a tree much larger than the walk's window of
// jobs: the walk and the workers must stop, not wait for the merge.
func TestGrepStopsEarly(t *testing.T) {
	t.Parallel()
	files := map[string]string{}
	for i := range 600 {
		files[fmt.Sprintf("d%d/f%03d.txt", i%3, i)] = "match\n"
	}
	fsys, _ := newFS(t, files, wickfs.WithGrepWorkers(1))
	res, err := fsys.GrepN(context.Background(), "match", "", 20)
	if err != nil || len(res.Matches) != 20 || !res.Truncated || res.Matches[19].File != "/workspace/d0/f057.txt" {
		t.Fatalf("GrepN = %+v, %v", res, err)
	}
}

// TestGrepMatchesLineByLine compares Grep with a naive line-by-line scan on
// files large enough to cross read-chunk boundaries.
func TestGrepMatchesLineByLine(t *testing.T) {
	t.Parallel()
	rng := rand.New(rand.NewPCG(1, 2))
	words := []string{"alpha", "beta", "gamma", "TODO", "fix", "ERROR", "x", "", "  ", "a.b", "\t"}
	files := map[string]string{}
	for f := range 2 {
		var b strings.Builder
		long := false
		for b.Len() < 300<<10 {
			for range rng.IntN(12) {
				b.WriteString(words[rng.IntN(len(words))])
				b.WriteByte(' ')
			}
			if !long && b.Len() > 100<<10 {
				long = true
				b.WriteString(strings.Repeat("q", 260<<10)) // a line longer than a read chunk
			}
			b.WriteByte('\n')
		}
		files[fmt.Sprintf("f%d.txt", f)] = b.String()
	}
	fsys, _ := newFS(t, files, wickfs.WithMaxLineBytes(1<<20))
	for _, pattern := range []string{"TODO", "^alpha", `fix\s+ERROR`, "^$", "(?i)error|gamma", `\s$`} {
		t.Run(pattern, func(t *testing.T) {
			t.Parallel()
			res, err := fsys.GrepN(context.Background(), pattern, "", 1_000_000)
			if err != nil {
				t.Fatal(err)
			}
			re := regexp.MustCompile(pattern)
			var want []string
			for f := range 2 {
				name := fmt.Sprintf("f%d.txt", f)
				lines := strings.Split(files[name], "\n")
				for i, line := range lines {
					if i == len(lines)-1 && line == "" {
						break
					}
					if re.MatchString(line) && !strings.HasPrefix(line, "qqqq") {
						want = append(want, fmt.Sprintf("/workspace/%s:%d", name, i+1))
					}
				}
			}
			var got []string
			for _, m := range res.Matches {
				if !strings.HasPrefix(m.Text, "qqqq") {
					got = append(got, fmt.Sprintf("%s:%d", m.File, m.Line))
				}
			}
			if len(got) != len(want) {
				t.Fatalf("%d matches; want %d", len(got), len(want))
			}
			if !reflect.DeepEqual(got, want) {
				t.Fatalf("matches differ from a line-by-line scan")
			}
		})
	}
}

func TestGlob(t *testing.T) {
	t.Parallel()
	fsys, _ := newFS(t, map[string]string{
		"main.go":             "",
		"README.md":           "",
		"src/a.go":            "",
		"src/b_test.go":       "",
		"src/deep/c.go":       "",
		"src/deep/d.py":       "",
		"src/pkg.go/":         "",
		".git/x.go":           "",
		"node_modules/y.go":   "",
		"vendor/z.go":         "",
		"docs/guide/intro.md": "",
	})
	ctx := context.Background()
	for _, tc := range []struct {
		name, pattern, path string
		want                []string
		err                 error
	}{
		{"by name", "*.go", "", []string{"/workspace/main.go", "/workspace/src/a.go", "/workspace/src/b_test.go", "/workspace/src/deep/c.go"}, nil},
		{"by name under", "*_test.go", "/workspace/src", []string{"/workspace/src/b_test.go"}, nil},
		{"double star", "**/*.md", "", []string{"/workspace/README.md", "/workspace/docs/guide/intro.md"}, nil},
		{"path", "src/*.go", "", []string{"/workspace/src/a.go", "/workspace/src/b_test.go"}, nil},
		{"star middle", "src/**/c.go", "", []string{"/workspace/src/deep/c.go"}, nil},
		{"absolute", "/workspace/src/deep/*", "/workspace/src", []string{"/workspace/src/deep/c.go", "/workspace/src/deep/d.py"}, nil},
		{"no match", "*.rs", "", []string{}, nil},
		{"bad pattern", "[", "", nil, wickfs.ErrInvalidArgument},
		{"bad path pattern", "src/[/*.go", "", nil, wickfs.ErrInvalidArgument},
		{"empty", "", "", nil, wickfs.ErrInvalidArgument},
		{"absolute elsewhere", "/etc/*", "", nil, wickfs.ErrInvalidArgument},
		{"not a dir", "*", "main.go", nil, wickfs.ErrInvalidArgument},
		{"missing", "*", "nope", nil, wickfs.ErrNotFound},
		{"escape", "*", "/usr", nil, wickfs.ErrOutsideWorkspace},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			res, err := fsys.Glob(ctx, tc.pattern, tc.path)
			if !errors.Is(err, tc.err) || (tc.err == nil && err != nil) {
				t.Fatalf("error = %v; want %v", err, tc.err)
			}
			if err == nil && (!reflect.DeepEqual(res.Files, tc.want) || res.Truncated) {
				t.Errorf("Glob(%q, %q) = %v (truncated %v); want %v", tc.pattern, tc.path, res.Files, res.Truncated, tc.want)
			}
		})
	}
}

func TestGlobTruncates(t *testing.T) {
	t.Parallel()
	files := map[string]string{}
	for i := range 120 {
		files[fmt.Sprintf("f%03d.txt", i)] = ""
	}
	fsys, _ := newFS(t, files)
	res, err := fsys.Glob(context.Background(), "*.txt", "")
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Files) != wickfs.MaxGlobFiles || !res.Truncated || res.Files[99] != "/workspace/f099.txt" {
		t.Fatalf("got %d files, truncated %v", len(res.Files), res.Truncated)
	}
}
