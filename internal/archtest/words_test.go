package archtest

import (
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// foreignWords are references to documents a reader of Wick does not have: a
// comment says the reason itself, and the published API speaks only of Wick.
var foreignWords = regexp.MustCompile(`(?i)seed|the\s+issue`)

// allowedWords are the real uses of those words, per file (slash-separated,
// relative to the repository root), each with why it is not a reference.
var allowedWords = []struct {
	file, phrase, why string
}{
	{"platform/redisconn/redisconn.go", "through its seed nodes", "a Redis Cluster client discovers the cluster from its seed nodes"},
	{"e2e/fuzz_test.go", "a fixed seed", "the seed of the fuzz test's random generator"},
}

// foreign is one reference found: its byte offset in the text and the words
// around it.
type foreign struct {
	offset int
	near   string
}

// foreignIn returns the foreign words of text, a file's comments or published
// text, leaving out the phrases allowed in that file. used is called with the
// index in allowedWords of every allowed phrase found.
func foreignIn(file, text string, used func(int)) []foreign {
	masked := []byte(text)
	for i, a := range allowedWords {
		if a.file != file {
			continue
		}
		for _, loc := range regexp.MustCompile(`(?i)`+regexp.QuoteMeta(a.phrase)).FindAllIndex(masked, -1) {
			used(i)
			for k := loc[0]; k < loc[1]; k++ {
				masked[k] = ' '
			}
		}
	}
	var out []foreign
	for _, loc := range foreignWords.FindAllIndex(masked, -1) {
		near := text[max(loc[0]-30, 0):min(loc[1]+30, len(text))]
		out = append(out, foreign{offset: loc[0], near: strings.Join(strings.Fields(near), " ")})
	}
	return out
}

func TestForeignIn(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, file, text string
		want             int
	}{
		{"reason stated", "services/agent/x.go", "DefaultMaxTurns bounds rounds, so that a run ends.", 0},
		{"seed's constant", "services/agent/x.go", "DefaultMaxTurns is the seed's bound.", 1},
		{"capitalised", "proto/wick/agent/v1/agent.proto", "// The Seed names it.", 1},
		{"the issue", "e2e/x_test.go", "the issue's benchmark", 1},
		{"the issue across lines", "services/x.go", "as the\nissue says", 1},
		{"both", "gen/openapi/wick.openapi.json", `"description": "the seed's form, as the issue says"`, 2},
		{"allowed phrase in its file", "e2e/fuzz_test.go", "Bounds: a fixed seed, so that a failure replays.", 0},
		{"allowed phrase, another use beside it", "e2e/fuzz_test.go", "a fixed seed, the seed's count", 1},
		{"allowed phrase in another file", "e2e/bench_test.go", "a fixed seed", 1},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			if got := foreignIn(tc.file, tc.text, func(int) {}); len(got) != tc.want {
				t.Errorf("foreignIn(%q, %q) = %v, want %d finds", tc.file, tc.text, got, tc.want)
			}
		})
	}
}

// TestNoForeignReferences reads every Go comment, every proto, the OpenAPI
// document and the TypeScript SDK's sources, and fails on each of
// foreignWords outside allowedWords.
func TestNoForeignReferences(t *testing.T) {
	t.Parallel()
	root := repoRoot(t)
	used := make([]bool, len(allowedWords))
	mark := func(i int) { used[i] = true }
	// check reports each find of text, which starts at line first of rel.
	check := func(rel, text string, first int) {
		for _, f := range foreignIn(rel, text, mark) {
			line := first + strings.Count(text[:f.offset], "\n")
			t.Errorf("%s:%d: %q: say the reason itself, not where it came from", rel, line, f.near)
		}
	}
	fset := token.NewFileSet()
	counts := map[string]int{}
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, p)
		rel = filepath.ToSlash(rel)
		if d.IsDir() {
			switch d.Name() {
			case ".git", "node_modules", "third_party", "bin", "dist":
				return filepath.SkipDir
			}
			return nil
		}
		switch {
		case strings.HasSuffix(p, ".go"):
			f, err := parser.ParseFile(fset, p, nil, parser.ParseComments)
			if err != nil {
				return err
			}
			counts["go"]++
			for _, g := range f.Comments {
				check(rel, g.Text(), fset.Position(g.Pos()).Line)
			}
		case strings.HasSuffix(p, ".proto") && strings.HasPrefix(rel, "proto/"),
			rel == "gen/openapi/wick.openapi.json",
			strings.HasPrefix(rel, "sdk/typescript/src/") && strings.HasSuffix(p, ".ts"):
			b, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			counts[filepath.Ext(p)]++
			check(rel, string(b), 1)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	// A walk that missed a kind of file would pass vacuously.
	for ext, least := range map[string]int{"go": 200, ".proto": 4, ".json": 1, ".ts": 2} {
		if counts[ext] < least {
			t.Errorf("read %d %s files, want at least %d; the walk did not find them", counts[ext], ext, least)
		}
	}
	for i, a := range allowedWords {
		if !used[i] {
			t.Errorf("allowedWords: %q no longer appears in %s; drop the entry", a.phrase, a.file)
		}
	}
}
