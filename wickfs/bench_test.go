package wickfs_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/wick-agent/wick/wickfs"
)

// genTree writes n source-like files over 100 directories, a few lines of
// which hold the needle.
func genTree(b *testing.B, n int) string {
	b.Helper()
	dir := b.TempDir()
	rng := rand.New(rand.NewPCG(7, 9))
	words := strings.Fields("func return if else for range err nil ctx the value of a to in struct type package import var const string int byte map slice")
	var line strings.Builder
	for i := range n {
		var sb strings.Builder
		lines := 40 + rng.IntN(160)
		for l := range lines {
			line.Reset()
			for range 3 + rng.IntN(10) {
				line.WriteString(words[rng.IntN(len(words))])
				line.WriteByte(' ')
			}
			if (i*7+l)%2500 == 0 {
				line.WriteString("// FIXME(wick): needle")
			}
			sb.WriteString(line.String())
			sb.WriteByte('\n')
		}
		p := filepath.Join(dir, fmt.Sprintf("pkg%02d/sub%d/file%05d.go", i%100, i%3, i))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			b.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(sb.String()), 0o644); err != nil {
			b.Fatal(err)
		}
	}
	return dir
}

// BenchmarkGrep10kFiles greps a 10,000-file tree with wickfs and with GNU
// `grep -rn` in the same run, and reports both times and their ratio.
func BenchmarkGrep10kFiles(b *testing.B) {
	grepBin, err := exec.LookPath("grep")
	if err != nil {
		b.Skip("no grep to compare with")
	}
	dir := genTree(b, 10_000)
	fsys, err := wickfs.NewLocalFS(dir)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { fsys.Close() })
	const pattern = `FIXME\(wick\)`
	ctx := context.Background()
	want := -1
	runGNU := func() time.Duration {
		t0 := time.Now()
		out, err := exec.Command(grepBin, "-rn", "-E", pattern, dir).Output()
		d := time.Since(t0)
		if err != nil {
			b.Fatal(err)
		}
		if n := strings.Count(string(out), "\n"); n != want {
			b.Fatalf("grep found %d lines, wickfs %d", n, want)
		}
		return d
	}
	var ours, gnu time.Duration
	// Warm the page cache and check both find the same lines.
	res, err := fsys.GrepN(ctx, pattern, "", 100_000)
	if err != nil {
		b.Fatal(err)
	}
	want = len(res.Matches)
	runGNU()
	b.ResetTimer()
	for b.Loop() {
		t0 := time.Now()
		if _, err := fsys.GrepN(ctx, pattern, "", 100_000); err != nil {
			b.Fatal(err)
		}
		ours += time.Since(t0)
		b.StopTimer()
		gnu += runGNU()
		b.StartTimer()
	}
	n := float64(b.N)
	b.ReportMetric(float64(ours.Microseconds())/n/1000, "wickfs-ms")
	b.ReportMetric(float64(gnu.Microseconds())/n/1000, "gnugrep-ms")
	b.ReportMetric(float64(ours)/float64(gnu), "ratio")
}
