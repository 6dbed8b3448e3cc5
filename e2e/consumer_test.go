package e2e

import (
	"bytes"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/mod/modfile"
	"golang.org/x/mod/module"
	modzip "golang.org/x/mod/zip"

	"github.com/wick-agent/wick/platform/testenv"
)

// consumerVersion is the version examples/embed requires until a release is
// tagged. The test publishes the working tree under a pseudo-version of it,
// new for every run, so that a module cache never holds two different trees
// under one version.
const consumerVersion = "v0.0.0"

// The modules of this repository that a program outside it requires.
const (
	rootModule = "github.com/wick-agent/wick"
	sdkModule  = "github.com/wick-agent/wick/sdk/go"
)

// TestConsumer builds Wick the way a program outside this repository does:
// the working tree's modules are published to a module proxy directory,
// and examples/embed, the documents' Go programs and a Go SDK program are
// built from copies outside the repository, with no go.work and no replace
// — only the proxy and the module cache's downloads, offline. A module that
// needs a replace to build, or a documented program that does not compile,
// fails here.
func TestConsumer(t *testing.T) {
	root := testenv.RepoRoot(t)
	version, goEnv := consumerEnv(t, root)
	// useRelease points a consumer's go.mod at the published tree.
	useRelease := func(t *testing.T, dir string) {
		goCmd(t, dir, goEnv, "mod", "edit", "-require="+rootModule+"@"+version)
	}

	t.Run("embed example", func(t *testing.T) {
		dir := t.TempDir()
		copyDir(t, filepath.Join(root, "examples", "embed"), dir)
		checkConsumerGoMod(t, filepath.Join(dir, "go.mod"), rootModule, consumerVersion)
		useRelease(t, dir)
		bin := filepath.Join(t.TempDir(), "embed")
		goCmd(t, dir, goEnv, "build", "-o", bin, ".")
		runEmbedExample(t, bin)
	})

	// The Go programs of the READMEs and the embedding guide compile as
	// they are, in a module that requires what their imports need.
	for _, doc := range []struct {
		file             string
		minEmbed, minSDK int
	}{
		{"README.md", 1, 1},
		{"sdk/go/README.md", 0, 1},
		{"docs/embedding.md", 1, 0},
	} {
		t.Run(doc.file, func(t *testing.T) {
			text, err := os.ReadFile(filepath.Join(root, filepath.FromSlash(doc.file)))
			if err != nil {
				t.Fatal(err)
			}
			var embedded, sdk int
			for i, src := range goPrograms(string(text)) {
				dir := t.TempDir()
				if strings.Contains(src, `"github.com/wick-agent/wick/sdk/go"`) {
					sdk++
					writeSDKConsumer(t, dir, version)
				} else {
					embedded++
					// The embedding example's module: examples/embed's go.mod.
					for _, f := range []string{"go.mod", "go.sum"} {
						copyFile(t, filepath.Join(root, "examples", "embed", f), filepath.Join(dir, f))
					}
					useRelease(t, dir)
				}
				if err := os.WriteFile(filepath.Join(dir, "main.go"), []byte(src), 0o644); err != nil {
					t.Fatal(err)
				}
				t.Logf("program %d", i)
				goCmd(t, dir, goEnv, "mod", "tidy")
				goCmd(t, dir, goEnv, "build", "-o", filepath.Join(t.TempDir(), "prog"), ".")
			}
			if embedded < doc.minEmbed || sdk < doc.minSDK {
				t.Fatalf("%s has %d complete embedding programs and %d SDK programs (package main); want at least %d and %d", doc.file, embedded, sdk, doc.minEmbed, doc.minSDK)
			}
		})
	}

	t.Run("Go SDK", func(t *testing.T) {
		// A program that imports only the SDK: its module requires the SDK,
		// which brings the root module (the generated API) along.
		dir := t.TempDir()
		writeSDKConsumer(t, dir, version)
		src := `package main

import (
	"fmt"

	wick "github.com/wick-agent/wick/sdk/go"
)

func main() { fmt.Println(wick.APIVersion) }
`
		if err := os.WriteFile(filepath.Join(dir, "main.go"), []byte(src), 0o644); err != nil {
			t.Fatal(err)
		}
		goCmd(t, dir, goEnv, "mod", "tidy")
		checkConsumerGoMod(t, filepath.Join(dir, "go.mod"), sdkModule, version)
		goCmd(t, dir, goEnv, "build", "-o", filepath.Join(t.TempDir(), "sdkprog"), ".")
	})
}

// consumerEnv publishes the repository's modules to a proxy directory under
// a new pseudo-version of consumerVersion, and returns that version and the
// environment of a go command that sees nothing else: no workspace, no
// checksum database, the proxy first and then the module cache's downloads
// (the suite's dependencies, there from building this module). The
// published modules are removed from the module cache when the test ends.
func consumerEnv(t *testing.T, root string) (version string, env []string) {
	t.Helper()
	out, err := exec.Command("go", "env", "GOMODCACHE").Output()
	if err != nil {
		t.Fatalf("go env GOMODCACHE: %v", err)
	}
	modCache := strings.TrimSpace(string(out))
	var rev [6]byte
	if _, err := rand.Read(rev[:]); err != nil {
		t.Fatal(err)
	}
	published := time.Now().UTC().Truncate(time.Second)
	version = module.PseudoVersion("v0", "", published, hex.EncodeToString(rev[:]))
	proxy := t.TempDir()
	for _, m := range []struct {
		path, dir string
		// gomod edits the module's go.mod as its release would: the SDK
		// requires the root module at the version published beside it.
		gomod func(*modfile.File) error
	}{
		{rootModule, ".", nil},
		{sdkModule, "sdk/go", func(f *modfile.File) error { return f.AddRequire(rootModule, version) }},
	} {
		t.Cleanup(func() { forgetModule(t, modCache, module.Version{Path: m.path, Version: version}) })
		if err := publishModule(proxy, filepath.Join(root, m.dir), module.Version{Path: m.path, Version: version}, published, m.gomod); err != nil {
			t.Fatalf("publish %s: %v", m.path, err)
		}
	}
	for _, kv := range os.Environ() {
		name, _, _ := strings.Cut(kv, "=")
		if !strings.HasPrefix(name, "GO") || name == "GOROOT" || name == "GOPATH" || name == "GOCACHE" || name == "GOMODCACHE" {
			env = append(env, kv)
		}
	}
	downloads := filepath.Join(modCache, "cache", "download")
	return version, append(env,
		"GOWORK=off",
		// -modcacherw lets the cleanup remove the published modules.
		"GOFLAGS=-mod=mod -modcacherw",
		"GOPROXY=file://"+filepath.ToSlash(proxy)+",file://"+filepath.ToSlash(downloads),
		"GOSUMDB=off",
		"GOTOOLCHAIN=local",
	)
}

// forgetModule removes m from the module cache: its files and its download.
func forgetModule(t *testing.T, modCache string, m module.Version) {
	escaped, err := module.EscapePath(m.Path)
	if err != nil {
		t.Error(err)
		return
	}
	if err := os.RemoveAll(filepath.Join(modCache, filepath.FromSlash(escaped)+"@"+m.Version)); err != nil {
		t.Error(err)
	}
	downloads, _ := filepath.Glob(filepath.Join(modCache, "cache", "download", filepath.FromSlash(escaped), "@v", m.Version+".*"))
	for _, f := range downloads {
		if err := os.Remove(f); err != nil {
			t.Error(err)
		}
	}
}

// publishModule writes module m from dir into the proxy directory as a
// module proxy serves it: @v/list, .info, .mod and .zip; edit, when not
// nil, changes its go.mod.
func publishModule(proxy, dir string, m module.Version, published time.Time, edit func(*modfile.File) error) error {
	files, err := moduleFiles(dir)
	if err != nil {
		return err
	}
	gomod, err := os.ReadFile(filepath.Join(dir, "go.mod"))
	if err != nil {
		return err
	}
	if edit != nil {
		f, err := modfile.Parse("go.mod", gomod, nil)
		if err != nil {
			return err
		}
		if err := edit(f); err != nil {
			return err
		}
		if gomod, err = f.Format(); err != nil {
			return err
		}
		for i, file := range files {
			if file.Path() == "go.mod" {
				files[i] = memFile{name: "go.mod", data: gomod}
			}
		}
	}
	escaped, err := module.EscapePath(m.Path)
	if err != nil {
		return err
	}
	at := filepath.Join(proxy, filepath.FromSlash(escaped), "@v")
	if err := os.MkdirAll(at, 0o755); err != nil {
		return err
	}
	var zipped bytes.Buffer
	if err := modzip.Create(&zipped, m, files); err != nil {
		return err
	}
	info, err := json.Marshal(map[string]any{"Version": m.Version, "Time": published})
	if err != nil {
		return err
	}
	for name, data := range map[string][]byte{
		"list":              []byte(m.Version + "\n"),
		m.Version + ".info": info,
		m.Version + ".mod":  gomod,
		m.Version + ".zip":  zipped.Bytes(),
	} {
		if err := os.WriteFile(filepath.Join(at, name), data, 0o644); err != nil {
			return err
		}
	}
	return nil
}

// moduleFiles lists the files of the module rooted at dir, as a release
// would hold them: no nested modules (modzip.Create leaves out their files
// too, but walking them is slow), no VCS data, no installed Node packages,
// no build output.
func moduleFiles(dir string) ([]modzip.File, error) {
	var files []modzip.File
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		rel = filepath.ToSlash(rel)
		if d.IsDir() {
			if rel == "." {
				return nil
			}
			switch d.Name() {
			case ".git", "node_modules", "bin", "tmp":
				return filepath.SkipDir
			}
			if _, err := os.Stat(filepath.Join(p, "go.mod")); err == nil {
				return filepath.SkipDir
			}
			return nil
		}
		if d.Name() == ".git" || strings.HasSuffix(d.Name(), ".test") || strings.HasSuffix(d.Name(), ".out") {
			return nil
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		files = append(files, dirFile{rel: rel, path: p, info: info})
		return nil
	})
	return files, err
}

// dirFile is one file of a module directory for modzip.Create.
type dirFile struct {
	rel, path string
	info      fs.FileInfo
}

func (f dirFile) Path() string                 { return f.rel }
func (f dirFile) Lstat() (fs.FileInfo, error)  { return f.info, nil }
func (f dirFile) Open() (io.ReadCloser, error) { return os.Open(f.path) }

// memFile is a file of a module zip whose content the test wrote.
type memFile struct {
	name string
	data []byte
}

func (f memFile) Path() string                 { return f.name }
func (f memFile) Lstat() (fs.FileInfo, error)  { return memFileInfo(f), nil }
func (f memFile) Open() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(f.data)), nil }

type memFileInfo memFile

func (fi memFileInfo) Name() string       { return path.Base(fi.name) }
func (fi memFileInfo) Size() int64        { return int64(len(fi.data)) }
func (fi memFileInfo) Mode() fs.FileMode  { return 0o644 }
func (fi memFileInfo) ModTime() time.Time { return time.Time{} }
func (fi memFileInfo) IsDir() bool        { return false }
func (fi memFileInfo) Sys() any           { return nil }

// checkConsumerGoMod fails unless the go.mod requires mod at version and
// replaces nothing.
func checkConsumerGoMod(t *testing.T, file, mod, version string) {
	t.Helper()
	data, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	f, err := modfile.Parse(file, data, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(f.Replace) > 0 {
		t.Errorf("%s replaces %s: a consumer's go.mod needs no replace", file, f.Replace[0].Old.Path)
	}
	for _, r := range f.Require {
		if r.Mod.Path == mod {
			if r.Mod.Version != version {
				t.Errorf("%s requires %s %s, want %s", file, mod, r.Mod.Version, version)
			}
			return
		}
	}
	t.Errorf("%s does not require %s", file, mod)
}

// writeSDKConsumer writes the go.mod of a program that uses the Go SDK at
// version.
func writeSDKConsumer(t *testing.T, dir, version string) {
	t.Helper()
	gomod := "module example.com/sdkconsumer\n\ngo 1.26.0\n\nrequire " + sdkModule + " " + version + "\n"
	if err := os.WriteFile(filepath.Join(dir, "go.mod"), []byte(gomod), 0o644); err != nil {
		t.Fatal(err)
	}
}

// goPrograms returns the README's Go code blocks that are whole programs.
func goPrograms(markdown string) []string {
	var out []string
	for _, m := range regexp.MustCompile("(?ms)^```go\n(.*?)^```").FindAllStringSubmatch(markdown, -1) {
		if strings.HasPrefix(m[1], "package main\n") {
			out = append(out, m[1])
		}
	}
	return out
}

// goCmd runs the go command in dir with env and fails t with its output.
func goCmd(t *testing.T, dir string, env []string, args ...string) {
	t.Helper()
	cmd := exec.Command("go", args...)
	cmd.Dir, cmd.Env = dir, env
	// A test that times out must not leave a build running behind it.
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go %s in %s: %v\n%s", strings.Join(args, " "), dir, err, out)
	}
}

// runEmbedExample runs the built example with a scripted model whose one
// round calls the native tool and the MCP server's tool, asks the assistant
// over REST, and checks both results and the answer.
func runEmbedExample(t *testing.T, bin string) {
	t.Helper()
	const answer = "Six words, and MCP is the Model Context Protocol."
	script := `script:{"turns":[
		{"text":"Let me look.","tool_calls":[
			{"name":"word_count","arguments":{"text":"to be or not to be"}},
			{"name":"glossary__define","arguments":{"term":"MCP"}}]},
		{"text":"` + answer + `"}]}`
	addr := "127.0.0.1:" + strconv.Itoa(testenv.FreePort(t))
	url := "http://" + addr
	env := append(os.Environ(), "TMPDIR="+t.TempDir()) // the local sandboxes' state
	p := testenv.NewProc(t, "embed", bin, []string{"-addr", addr, "-model", script}, testenv.HTTPServing(url+"/health"), testenv.WithEnv(env))
	p.Start()

	client := &http.Client{Timeout: 2 * time.Minute}
	resp, err := client.Post(url+"/agents/assistant/invoke", "application/json",
		strings.NewReader(`{"messages":[{"role":"user","content":"How many words has 'to be or not to be', and what is MCP?"}]}`))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("invoke: %s\n%s", resp.Status, body)
	}
	var run struct {
		Messages []struct{ Role, Name, Content string }
		Content  string
	}
	if err := json.Unmarshal(body, &run); err != nil {
		t.Fatalf("invoke answer %s: %v", body, err)
	}
	results := map[string]string{}
	for _, m := range run.Messages {
		if m.Role == "tool" {
			results[m.Name] = m.Content
		}
	}
	want := map[string]string{
		"word_count":       "6 words",
		"glossary__define": "MCP: Model Context Protocol: how an agent gets tools from a server.",
	}
	for name, w := range want {
		if results[name] != w {
			t.Errorf("tool %s returned %q, want %q (all results: %v)", name, results[name], w, results)
		}
	}
	if run.Content != answer {
		t.Errorf("answer %q, want %q", run.Content, answer)
	}
	if t.Failed() {
		t.Logf("invoke answer: %s", fmt.Sprint(string(body)))
	}
}

// copyDir copies the regular files of the directory tree src into dst.
func copyDir(t *testing.T, src, dst string) {
	t.Helper()
	err := filepath.WalkDir(src, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(src, p)
		if d.IsDir() {
			return os.MkdirAll(filepath.Join(dst, rel), 0o755)
		}
		copyFile(t, p, filepath.Join(dst, rel))
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

func copyFile(t *testing.T, src, dst string) {
	t.Helper()
	data, err := os.ReadFile(src)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(dst, data, 0o644); err != nil {
		t.Fatal(err)
	}
}
