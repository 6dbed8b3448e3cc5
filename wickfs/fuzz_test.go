package wickfs_test

import (
	"context"
	"encoding/json"
	"os"
	"path"
	"path/filepath"
	"strings"
	"testing"

	"github.com/wick-agent/wick/wickfs"
)

// FuzzResolve checks that every path either is refused or maps to a clean
// path inside the root.
func FuzzResolve(f *testing.F) {
	for _, s := range []string{"", "/", "/workspace", "/workspace/../x", "../../etc/passwd", "a/./b//c/..", "/workspace/\xff", "\x00", "..", "/workspace/..", "/workspace/...", "....//", "/workspace\\..\\x"} {
		f.Add(s)
	}
	fsys, err := wickfs.NewLocalFS(f.TempDir())
	if err != nil {
		f.Fatal(err)
	}
	f.Cleanup(func() { fsys.Close() })
	f.Fuzz(func(t *testing.T, p string) {
		rel, agent, err := fsys.Resolve(p)
		if err != nil {
			return
		}
		if rel != "." && (path.IsAbs(rel) || rel != path.Clean(rel) || rel == ".." || strings.HasPrefix(rel, "../")) {
			t.Fatalf("Resolve(%q) = %q: not a clean path inside the root", p, rel)
		}
		if agent != "/workspace" && !strings.HasPrefix(agent, "/workspace/") {
			t.Fatalf("Resolve(%q) agent path %q is outside the prefix", p, agent)
		}
	})
}

// FuzzConfinement reads and writes arbitrary paths in a workspace that has
// symlinks leading out of it, and checks nothing outside is ever read or
// created.
func FuzzConfinement(f *testing.F) {
	for _, s := range []string{"out/secret", "out", "up/secret", "../secret", "/workspace/out/../out/secret", "in/../out/secret", "loop/x", "ok"} {
		f.Add(s)
	}
	base := f.TempDir()
	outside := filepath.Join(base, "outside")
	ws := filepath.Join(base, "ws")
	for _, d := range []string{outside, ws, filepath.Join(ws, "in")} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			f.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(outside, "secret"), []byte("SECRET"), 0o644); err != nil {
		f.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(ws, "ok"), []byte("fine"), 0o644); err != nil {
		f.Fatal(err)
	}
	for name, target := range map[string]string{"out": outside, "up": "..", "loop": "loop", "in/abs": "/"} {
		if err := os.Symlink(target, filepath.Join(ws, name)); err != nil {
			f.Fatal(err)
		}
	}
	fsys, err := wickfs.NewLocalFS(ws)
	if err != nil {
		f.Fatal(err)
	}
	f.Cleanup(func() { fsys.Close() })
	ctx := context.Background()
	f.Fuzz(func(t *testing.T, p string) {
		if got, err := fsys.ReadFile(ctx, p); err == nil && strings.Contains(got, "SECRET") {
			t.Fatalf("ReadFile(%q) read a file outside the workspace", p)
		}
		if res, err := fsys.Grep(ctx, "SECRET", p); err == nil && len(res.Matches) > 0 {
			t.Fatalf("Grep(%q) searched outside the workspace", p)
		}
		_, _ = fsys.WriteFile(ctx, p+"/fuzz-new", "x")
		entries, err := os.ReadDir(outside)
		if err != nil {
			t.Fatal(err)
		}
		if len(entries) != 1 {
			t.Fatalf("a write through %q created a file outside the workspace", p)
		}
	})
}

// FuzzParseResponse checks the envelope parser never panics, and finds an
// envelope whatever noise surrounds it on other lines.
func FuzzParseResponse(f *testing.F) {
	for _, s := range []string{
		`{"ok":true,"data":"x"}`,
		`{"ok":false,"error":"boom","kind":"not_found"}`,
		"noise\n{\"ok\":true,\"data\":[1,2]}\nmore noise",
		"{not json\n{\"ok\":true}",
		`{"data":1}`,
		"",
		"\x00{",
	} {
		f.Add(s, "prefix noise", "suffix noise")
	}
	f.Fuzz(func(t *testing.T, out, before, after string) {
		_, _ = wickfs.ParseResponse(out)
		want := wickfs.Response{OK: true, Data: json.RawMessage(`{"v":"` + strings.Repeat("x", len(out)%7) + `"}`)}
		env, _ := json.Marshal(want)
		before = strings.ReplaceAll(before, "\n", " ")
		after = strings.ReplaceAll(after, "\n", " ")
		if strings.HasPrefix(strings.TrimSpace(before), "{") {
			before = "#" + before
		}
		got, err := wickfs.ParseResponse(before + "\n" + string(env) + "\n" + after)
		if err != nil {
			t.Fatalf("no envelope found between %q and %q: %v", before, after, err)
		}
		if !got.OK || string(got.Data) != string(want.Data) {
			t.Fatalf("parsed %+v; want %+v", got, want)
		}
	})
}
