package sandbox

import (
	"bytes"
	"context"
	"fmt"
	"image"
	"image/color"
	"image/png"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/client"

	"github.com/wick-agent/wick/platform/backend"
	"github.com/wick-agent/wick/platform/testenv"
	"github.com/wick-agent/wick/services/sandbox/internal/dockerbox"
)

// skillsFixtures holds the inputs the skill scripts run on.
const skillsFixtures = "testdata/skills"

// scriptBox is a runtime-image container shaped like a sandbox (no
// network, no capabilities, the image's non-root user) with the skills
// library of the repository mounted read-only at /workspace/skills and a
// host directory as the workspace, so the test reads what a script wrote.
type scriptBox struct {
	cli *client.Client
	id  string
	ws  string // the workspace on the host
}

func newScriptBox(t *testing.T, img string) *scriptBox {
	t.Helper()
	cli := testenv.Docker(t)
	library := filepath.Join(testenv.RepoRoot(t), "skills")
	ws := t.TempDir()
	// The container's user is not the test's: the workspace must be
	// writable for any uid, as a sandbox's volume is for its user.
	if err := os.Chmod(ws, 0o777); err != nil {
		t.Fatal(err)
	}
	entries, err := os.ReadDir(skillsFixtures)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		b, err := os.ReadFile(filepath.Join(skillsFixtures, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(ws, e.Name()), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	c, err := cli.ContainerCreate(ctx, &container.Config{
		Image: img, User: "1000:1000", WorkingDir: "/workspace", Cmd: []string{"sleep", "infinity"},
		Labels: map[string]string{testLabel: "1"},
	}, &container.HostConfig{
		NetworkMode: "none", CapDrop: []string{"ALL"}, SecurityOpt: []string{"no-new-privileges"},
		Binds: []string{ws + ":/workspace", library + ":/workspace/skills:ro"},
	}, nil, nil, "")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cli.ContainerRemove(context.Background(), c.ID, container.RemoveOptions{Force: true})
	})
	if err := cli.ContainerStart(ctx, c.ID, container.StartOptions{}); err != nil {
		t.Fatal(err)
	}
	return &scriptBox{cli: cli, id: c.ID, ws: ws}
}

// run runs a shell command in the workspace as the sandbox user. The
// umask lets the test's own user remove what the command wrote.
func (b *scriptBox) run(ctx context.Context, t *testing.T, cmd string) dockerbox.RunResult {
	t.Helper()
	r, err := dockerbox.Run(ctx, b.cli, b.id, dockerbox.RunOptions{
		User: "1000:1000", WorkingDir: "/workspace", Cmd: []string{"sh", "-c", "umask 0000 && " + cmd},
	})
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// TestSkillScripts runs each shipped skill's script in the runtime image as
// its SKILL.md tells an agent to, on fixture inputs, and checks what the
// SKILL.md promises: the files, their content, the exit status and the
// one-line error on bad input.
func TestSkillScripts(t *testing.T) {
	t.Parallel()
	img := requireImage(t, backend.DefaultImage, "make image-runtime")
	box := newScriptBox(t, img)
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	t.Cleanup(cancel)
	if err := os.WriteFile(filepath.Join(box.ws, "long.txt"), []byte(longText(40, 25)), 0o644); err != nil {
		t.Fatal(err)
	}

	tests := []struct {
		name       string
		cmd        string
		exit       int
		stdout     []string // substrings
		stderr     []string // substrings of its lines, one each, in order
		files      map[string][]string
		charts     []string // PNG files that must be real charts
		absent     []string // files that must not exist
		checkFiles func(t *testing.T, ws string)
	}{
		{
			name: "csv-analyzer summary and chart",
			cmd:  "python3 skills/csv-analyzer/analyze.py sales.csv --out reports/",
			stdout: []string{"summary: reports/sales-summary.md", "chart: reports/sales-chart.png",
				"rows: 12, columns: 5", "columns: date, region, product, units, revenue"},
			files: map[string][]string{"reports/sales-summary.md": {
				"# Summary of sales.csv", "- Rows: 12", "- Columns: 5",
				"| date | datetime64", "| region | object", "| units | int64", "| revenue | float64 | 11 | 1 |",
				"## Numeric columns", "| units | 12 | 8.667 |", "**region**: 4 distinct", "![line chart](sales-chart.png)",
			}},
			charts: []string{"reports/sales-chart.png"},
		},
		{
			name:   "csv-analyzer semicolons and flags",
			cmd:    "python3 skills/csv-analyzer/analyze.py cities-semicolon.csv --x city --y area_km2 --kind bar --out cities",
			stdout: []string{"chart: cities/cities-semicolon-chart.png (bar: area_km2 by city)"},
			files: map[string][]string{"cities/cities-semicolon-summary.md": {
				"- Delimiter: semicolon; header row: yes", "| population | int64", "| area_km2 | float64",
			}},
			charts: []string{"cities/cities-semicolon-chart.png"},
		},
		{
			name:   "csv-analyzer without a numeric column keeps the summary",
			cmd:    "python3 skills/csv-analyzer/analyze.py people.csv --out people",
			exit:   3,
			stdout: []string{"summary: people/people-summary.md"},
			stderr: []string{"analyze.py: no numeric column to chart in people.csv; the summary was written to people/people-summary.md"},
			files:  map[string][]string{"people/people-summary.md": {"- Rows: 3", "| name | object", "**team**: 2 distinct"}},
			absent: []string{"people/people-chart.png"},
		},
		{
			name:   "csv-analyzer refuses binary junk",
			cmd:    "python3 skills/csv-analyzer/analyze.py junk.bin --out junk",
			exit:   1,
			stderr: []string{"analyze.py: junk.bin is not a CSV file (it holds binary data)"},
			absent: []string{"junk/junk-summary.md", "junk/junk-chart.png"},
		},
		{
			name:   "csv-analyzer refuses an empty file",
			cmd:    "python3 skills/csv-analyzer/analyze.py empty.csv --out empty",
			exit:   1,
			stderr: []string{"analyze.py: empty.csv is empty"},
			absent: []string{"empty/empty-summary.md"},
		},
		{
			name:   "csv-analyzer names an unknown column",
			cmd:    "python3 skills/csv-analyzer/analyze.py sales.csv --y price --out price",
			exit:   1,
			stderr: []string{"analyze.py: no column 'price'; columns are: date, region, product, units, revenue"},
		},
		{
			// -S leaves Debian's dist-packages off the path: an image without pandas.
			name:   "csv-analyzer says which image it needs",
			cmd:    "python3 -S skills/csv-analyzer/analyze.py sales.csv --out nopandas",
			exit:   4,
			stderr: []string{"needs the wick-sandbox-runtime image (python3, pandas, matplotlib)"},
			absent: []string{"nopandas"},
		},
		{
			name:   "slides deck with its chart",
			cmd:    "python3 skills/csv-analyzer/analyze.py sales.csv --out deck >/dev/null && cp sales.slides.md deck/ && python3 skills/slides/check_deck.py deck/sales.slides.md",
			stdout: []string{"3 slides\n"},
		},
		{
			name:   "slides deck without slides",
			cmd:    "python3 skills/slides/check_deck.py empty.slides.md",
			exit:   1,
			stdout: []string{"0 slides\n"},
			stderr: []string{"empty.slides.md:4: the deck has no slides"},
		},
		{
			name:   "slides deck with problems",
			cmd:    "python3 skills/slides/check_deck.py broken.slides.md",
			exit:   1,
			stdout: []string{"2 slides\n"},
			stderr: []string{"broken.slides.md:1: the front matter lacks \"marp: true\"", "broken.slides.md:7: empty slide", "broken.slides.md:9: image missing.png not found"},
		},
		{
			name:   "data-analysis profile",
			cmd:    "python3 skills/data-analysis/profile.py sales.csv --out profile",
			stdout: []string{"profile: profile/sales-profile.md", "grouped by: region", "correlation units ~ revenue: 0.577"},
			files: map[string][]string{"profile/sales-profile.md": {
				"| units | 1 | 0.5775 |", "per value of **region**", "| South | 3 | 10.67 | 32 | 3 | 388.5 | 1166 |",
				"- revenue: 1 outside", "- revenue: 1 (8.3 %)",
			}},
		},
		{
			name:   "data-analysis refuses binary junk",
			cmd:    "python3 skills/data-analysis/profile.py junk.bin",
			exit:   1,
			stderr: []string{"profile.py: junk.bin is not a CSV file (it holds binary data)"},
		},
		{
			name: "code-review change statistics",
			cmd: `git init -q repo && cd repo && printf 'a\nb\n' > main.go && git add -A &&
git -c user.email=r@example.com -c user.name=r commit -qm init &&
printf 'a\nc\nd\n' > main.go && printf 'test\n' > main_test.go && mkdir docs && printf 'x\n' > docs/notes.md && git add -A &&
python3 ../skills/code-review/stats.py HEAD`,
			stdout: []string{"| main.go | 2 | 1 | code |", "| docs/notes.md | 1 | 0 | docs |", "| main_test.go | 1 | 0 | test |",
				"3 files, +4 -1; by kind: code 1 files +2 -1, docs 1 files +1 -0, test 1 files +1 -0"},
		},
		{
			name:   "code-review outside a repository",
			cmd:    "mkdir -p norepo && cd norepo && python3 ../skills/code-review/stats.py",
			exit:   1,
			stderr: []string{"stats.py: git diff --numstat -M HEAD: "},
		},
		{
			name:       "summarization chunks",
			cmd:        "python3 skills/summarization/chunk.py long.txt --words 200 --overlap 20 --out chunks",
			stdout:     []string{"chunks/long-chunk-001.txt\twords 1-", " chunks of up to 200 words (1000 words, overlap 20)"},
			checkFiles: checkChunks(1000, 200, 20),
		},
		{
			name:   "summarization refuses binary files",
			cmd:    "python3 skills/summarization/chunk.py junk.bin",
			exit:   1,
			stderr: []string{"chunk.py: junk.bin is binary"},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			r := box.run(ctx, t, tc.cmd)
			stdout, stderr := string(r.Stdout), string(r.Stderr)
			if r.ExitCode != tc.exit {
				t.Fatalf("%s: exit %d, want %d\nstdout: %s\nstderr: %s", tc.cmd, r.ExitCode, tc.exit, stdout, stderr)
			}
			for _, s := range tc.stdout {
				if !strings.Contains(stdout, s) {
					t.Errorf("stdout lacks %q:\n%s", s, stdout)
				}
			}
			lines := strings.Split(strings.TrimSuffix(stderr, "\n"), "\n")
			if stderr == "" {
				lines = nil
			}
			if len(lines) != len(tc.stderr) {
				t.Fatalf("stderr %q, want %d lines containing %q", stderr, len(tc.stderr), tc.stderr)
			}
			for i, s := range tc.stderr {
				if !strings.Contains(lines[i], s) {
					t.Errorf("stderr line %d %q, want it to contain %q", i+1, lines[i], s)
				}
			}
			for file, want := range tc.files {
				b, err := os.ReadFile(filepath.Join(box.ws, file))
				if err != nil {
					t.Fatal(err)
				}
				for _, s := range want {
					if !strings.Contains(string(b), s) {
						t.Errorf("%s lacks %q:\n%s", file, s, b)
					}
				}
			}
			for _, file := range tc.charts {
				checkChart(t, filepath.Join(box.ws, file))
			}
			for _, file := range tc.absent {
				if _, err := os.Stat(filepath.Join(box.ws, file)); err == nil {
					t.Errorf("%s exists", file)
				}
			}
			if tc.checkFiles != nil {
				tc.checkFiles(t, box.ws)
			}
		})
	}
}

// checkChart fails unless file is a PNG of a chart: a decodable image of a
// useful size that is not one blank colour.
func checkChart(t *testing.T, file string) {
	t.Helper()
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	img, err := png.Decode(bytes.NewReader(b))
	if err != nil {
		t.Fatalf("%s is not a PNG: %v", file, err)
	}
	bounds := img.Bounds()
	if bounds.Dx() < 400 || bounds.Dy() < 250 || len(b) < 10_000 {
		t.Fatalf("%s is %dx%d px, %d bytes: too small for a chart", file, bounds.Dx(), bounds.Dy(), len(b))
	}
	if ink := inked(img); ink < 0.01 {
		t.Fatalf("%s is %.2f%% ink: blank", file, 100*ink)
	}
}

// inked is the share of pixels that are not white.
func inked(img image.Image) float64 {
	b := img.Bounds()
	n := 0
	for y := b.Min.Y; y < b.Max.Y; y++ {
		for x := b.Min.X; x < b.Max.X; x++ {
			if c := color.GrayModel.Convert(img.At(x, y)).(color.Gray); c.Y < 0xf0 {
				n++
			}
		}
	}
	return float64(n) / float64(b.Dx()*b.Dy())
}

// longText is paragraphs of sentences of numbered words ("w1 w2 …"), so
// chunks can be checked against word positions.
func longText(paragraphs, wordsEach int) string {
	var b strings.Builder
	n := 0
	for p := range paragraphs {
		if p > 0 {
			b.WriteString("\n\n")
		}
		for i := range wordsEach {
			n++
			if i > 0 {
				b.WriteByte(' ')
			}
			fmt.Fprintf(&b, "w%d", n)
			if i%8 == 7 || i == wordsEach-1 {
				b.WriteByte('.')
			}
		}
	}
	return b.String()
}

var chunkWord = regexp.MustCompile(`w(\d+)`)

// checkChunks checks the chunks of longText: numbered in order, each at
// most size words, starting where the previous ended minus at most the
// overlap, the first at word 1 and the last at the final word.
func checkChunks(total, size, overlap int) func(t *testing.T, ws string) {
	return func(t *testing.T, ws string) {
		files, err := filepath.Glob(filepath.Join(ws, "chunks", "long-chunk-*.txt"))
		if err != nil || len(files) < total/size {
			t.Fatalf("chunks %v (%v), want at least %d", files, err, total/size)
		}
		prevEnd := 0
		for i, f := range files {
			if want := fmt.Sprintf("long-chunk-%03d.txt", i+1); filepath.Base(f) != want {
				t.Fatalf("chunk %d is %s, want %s", i+1, filepath.Base(f), want)
			}
			b, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			words := chunkWord.FindAllStringSubmatch(string(b), -1)
			if len(words) == 0 || len(words) > size || len(strings.Fields(string(b))) != len(words) {
				t.Fatalf("%s has %d words, want 1 to %d", f, len(words), size)
			}
			var first, last int
			fmt.Sscan(words[0][1], &first)
			fmt.Sscan(words[len(words)-1][1], &last)
			if (i == 0 && first != 1) || (i > 0 && (first > prevEnd+1 || first < prevEnd+1-overlap)) || last-first+1 != len(words) {
				t.Fatalf("%s holds words %d-%d after a chunk that ended at %d", f, first, last, prevEnd)
			}
			prevEnd = last
		}
		if prevEnd != total {
			t.Fatalf("the chunks end at word %d of %d", prevEnd, total)
		}
	}
}
