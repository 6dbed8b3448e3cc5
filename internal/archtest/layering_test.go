// Package archtest checks the shape of the whole tree: rules that hold by
// design rather than by habit, so that a change which breaks one fails here
// instead of in a reviewer's memory.
package archtest

import (
	"fmt"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	pathpkg "path"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// modulePath is the import path every package of this repository starts with.
const modulePath = "github.com/wick-agent/wick"

// checkImport says why a file of the package in directory dir (relative to
// the repository root, slash-separated; test says whether it is a _test.go
// file) may not import path, or returns nil.
// Imports flow one way: cmd → services → domain packages → platform, wickfs,
// llm and gen. Only the daemon itself and the sandbox service, which drives
// it, may see the daemon's packages.
func checkImport(dir string, test bool, path string) error {
	if !strings.HasPrefix(path, modulePath+"/") {
		return nil // the standard library and third-party modules
	}
	if pathpkg.Clean(path) != path {
		return fmt.Errorf("%s imports %q: not a clean package path", dir, path)
	}
	to := strings.TrimPrefix(path, modulePath+"/")
	from := area(dir)
	target := area(to)
	switch {
	case isPublicConfig(dir) && !test:
		return fmt.Errorf("%s imports %s: the public agent configuration imports nothing of Wick, so that a program can build one without the service's internals", dir, to)
	case from == target:
		return checkAgentImport(dir, to)
	case from == "examples" && isInternal(to):
		return fmt.Errorf("%s imports %s: an example is a program outside this repository and uses only public packages", dir, to)
	case target == "e2e" || target == "internal":
		return fmt.Errorf("%s imports %s: nothing imports a test package", dir, to)
	case from == "sdk" && target != "gen":
		return fmt.Errorf("%s imports %s: an SDK depends on the generated API only", dir, to)
	case target == "cmd" && from != "e2e":
		return fmt.Errorf("%s imports %s: only the end-to-end tests import a binary's packages", dir, to)
	case target == "wickserver" && from != "cmd" && from != "e2e" && from != "examples":
		return fmt.Errorf("%s imports %s: the embedding package assembles the services; only binaries, examples and the end-to-end tests import it", dir, to)
	case strings.HasPrefix(target, "services/") && from != "cmd" && from != "e2e" && from != "wickserver" && from != "examples" && (from != "deploy" || !test):
		return fmt.Errorf("%s imports %s: a service is imported only by cmd, wickserver, examples, e2e and the deployment tests, never by another service or a lower layer", dir, to)
	case isDaemon(to) && from != "daemon" && from != "services/sandbox":
		return fmt.Errorf("%s imports %s: only daemon/ and the sandbox service (its client) see the daemon's packages", dir, to)
	case strings.HasPrefix(to, "daemon/server") && from != "daemon" && !test:
		return fmt.Errorf("%s imports %s: the daemon's server runs inside a container; outside daemon/ only tests run it in-process", dir, to)
	case target == "daemon" && from != "services/sandbox":
		return fmt.Errorf("%s imports %s: the daemon is a binary of its own; only the sandbox service drives it", dir, to)
	case isBase(from) && !isBase(target):
		return fmt.Errorf("%s imports %s: platform, wickfs, llm and gen sit at the bottom and import nothing above them", dir, to)
	case from == "gen" && target != "gen":
		return fmt.Errorf("%s imports %s: generated code imports only generated code", dir, to)
	}
	return nil
}

// agentInternal is the agent service's tree of internal packages.
const agentInternal = "services/agent/internal/"

// agentLeaves import no other package of the agent service: small pieces
// every feature may use.
var agentLeaves = []string{"ids", "llmclient", "placement", "quota", "redact", "secrets"}

// checkAgentImport says why a file of the agent service's package in dir may
// not import its package to, or returns nil: inside the service, the loop is
// the core the features plug into, the run executor assembles them, and the
// registry holds configuration the features read.
func checkAgentImport(dir, to string) error {
	from, ok1 := agentPackage(dir)
	target, ok2 := agentPackage(to)
	if !ok1 || !ok2 || from == target {
		return nil
	}
	switch {
	case from == "loop":
		return fmt.Errorf("%s imports %s: the loop is the core every feature plugs into through its interfaces; it imports none of them", dir, to)
	case target == "runexec":
		return fmt.Errorf("%s imports %s: the run executor assembles every feature into a run; only the service itself imports it", dir, to)
	case from == "registry" && slices.Contains([]string{"acp", "mcp", "runs", "subagent", "tasks", "threads"}, target):
		return fmt.Errorf("%s imports %s: the registry holds agent configuration, which the features that run agents read; it never depends on them (a name they share lives in tools)", dir, to)
	case slices.Contains([]string{"mcp", "subagent", "tasks", "tools"}, from) && target == "hooks":
		return fmt.Errorf("%s imports %s: hooks wrap the calls of tools; a tool never reaches back into them (output capping is tools.Evict)", dir, to)
	case slices.Contains(agentLeaves, from):
		return fmt.Errorf("%s imports %s: %s is a leaf that imports no other package of the agent service", dir, to, from)
	}
	return nil
}

// agentPackage is the package of the agent service's internal tree that p
// (a directory relative to the root) is in or under, and whether it is one.
func agentPackage(p string) (string, bool) {
	if !strings.HasPrefix(p, agentInternal) {
		return "", false
	}
	name, _, _ := strings.Cut(strings.TrimPrefix(p, agentInternal), "/")
	return name, true
}

// area is the unit a rule speaks of: a service, or a top-level directory.
func area(dir string) string {
	parts := strings.Split(dir, "/")
	if parts[0] == "services" && len(parts) > 1 {
		return "services/" + parts[1]
	}
	return parts[0]
}

// isPublicConfig reports whether dir is the agent configuration package
// that programs outside the repository import.
func isPublicConfig(dir string) bool {
	return dir == "services/agent/agentconfig"
}

// isInternal reports whether p is under an internal/ directory, which Go
// hides from other modules.
func isInternal(p string) bool {
	return p == "internal" || strings.HasPrefix(p, "internal/") || strings.Contains(p, "/internal/") || strings.HasSuffix(p, "/internal")
}

func isDaemon(p string) bool {
	return p == "daemon" || strings.HasPrefix(p, "daemon/") || strings.HasPrefix(p, "gen/wick/daemon/")
}

func isBase(a string) bool {
	switch a {
	case "platform", "wickfs", "llm", "gen":
		return true
	}
	return false
}

func TestCheckImport(t *testing.T) {
	t.Parallel()
	ok := []struct {
		dir  string
		test bool
		path string
	}{
		{"wickserver/suite", false, modulePath + "/services/agent"},
		{"wickserver", false, modulePath + "/services/llmgw"},
		{"cmd/wick", false, modulePath + "/wickserver"},
		{"sdk/go", false, modulePath + "/gen/wick/agent/v1"},
		{"services/agent/internal/loop", false, modulePath + "/wickfs"},
		{"services/agent", false, modulePath + "/services/agent/internal/loop"},
		{"services/sandbox", false, modulePath + "/gen/wick/daemon/v1"},
		{"services/sandbox", false, modulePath + "/daemon/daemonfs"},
		{"services/sandbox", true, modulePath + "/daemon/server"},
		{"daemon/server", false, modulePath + "/gen/wick/daemon/v1"},
		{"daemon/server", false, modulePath + "/wickfs"},
		{"wickfs", false, modulePath + "/platform/testenv"},
		{"e2e", false, modulePath + "/services/gateway"},
		{"e2e", false, modulePath + "/wickserver/suite"},
		// The topology test stands the suite up as e2e does.
		{"deploy/k8s", true, modulePath + "/services/sandbox/sandboximage"},
		{"platform/server", false, "google.golang.org/grpc"},
		{"services/agent/internal/registry", false, modulePath + "/services/agent/internal/tools"},
		{"services/agent/internal/registry", false, modulePath + "/services/agent/internal/hooks"},
		{"services/agent/internal/runexec", false, modulePath + "/services/agent/internal/subagent"},
		{"services/agent/internal/mcp", false, modulePath + "/services/agent/internal/tools"},
		{"services/agent/internal/mcp/mcptest", false, modulePath + "/services/agent/internal/mcp"},
		{"services/agent", false, modulePath + "/services/agent/internal/runexec"},
		{"services/agent/internal/tools", false, modulePath + "/services/agent/internal/loop"},
		{"examples/embed", false, modulePath + "/wickserver"},
		{"examples/embed", false, modulePath + "/services/agent/agentconfig"},
		{"services/agent/internal/loop", false, modulePath + "/services/agent/agentconfig"},
		{"services/agent/agentconfig", false, "time"},
	}
	for _, tc := range ok {
		if err := checkImport(tc.dir, tc.test, tc.path); err != nil {
			t.Errorf("checkImport(%q, %v, %q) = %v, want nil", tc.dir, tc.test, tc.path, err)
		}
	}
	bad := []struct {
		dir  string
		test bool
		path string
	}{
		{"services/agent", false, modulePath + "/services/sandbox"},
		{"services/gateway", false, modulePath + "/wickserver/suite"},
		{"services/agent", false, modulePath + "/wickserver"},
		{"sdk/go", false, modulePath + "/platform/identity"},
		{"services/agent", false, modulePath + "/gen/wick/daemon/v1"},
		{"services/agent/internal/sandboxfs", false, modulePath + "/daemon/server"},
		{"services/sandbox", false, modulePath + "/services/sandbox/../agent"},
		{"services/sandbox", false, modulePath + "/daemon/server"},
		{"platform/dial", false, modulePath + "/services/llmgw"},
		{"wickfs", false, modulePath + "/daemon/daemonfs"},
		{"llm", false, modulePath + "/services/agent/internal/loop"},
		{"platform/testenv", false, modulePath + "/e2e"},
		{"gen/wick/agent/v1", false, modulePath + "/platform/identity"},
		{"cmd/wick", false, modulePath + "/gen/wick/daemon/v1"},
		{"deploy/images", false, modulePath + "/services/sandbox"},
		{"services/agent/internal/registry", false, modulePath + "/services/agent/internal/subagent"},
		{"services/agent/internal/registry", true, modulePath + "/services/agent/internal/threads"},
		{"services/agent/internal/mcp", false, modulePath + "/services/agent/internal/hooks"},
		{"services/agent/internal/tools", false, modulePath + "/services/agent/internal/hooks"},
		{"services/agent/internal/loop", false, modulePath + "/services/agent/internal/tools"},
		{"services/agent/internal/loop", true, modulePath + "/services/agent/internal/ids"},
		{"services/agent/internal/subagent", false, modulePath + "/services/agent/internal/runexec"},
		{"services/agent/internal/ids", false, modulePath + "/services/agent/internal/loop"},
		{"services/agent/agentconfig", false, modulePath + "/services/agent/internal/loop"},
		{"services/agent/agentconfig", false, modulePath + "/platform/backend"},
		{"examples/embed", false, modulePath + "/services/agent/internal/loop"},
		{"examples/embed", false, modulePath + "/platform/testenv/internal"},
	}
	for _, tc := range bad {
		if err := checkImport(tc.dir, tc.test, tc.path); err == nil {
			t.Errorf("checkImport(%q, %v, %q) = nil, want a violation", tc.dir, tc.test, tc.path)
		}
	}
}

// TestLayering reads the imports of every Go file in the repository (tests
// included) and fails on each one that runs against the layering.
func TestLayering(t *testing.T) {
	t.Parallel()
	root := repoRoot(t)
	fset := token.NewFileSet()
	files := 0
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			switch d.Name() {
			case ".git", "node_modules", "testdata", "third_party", "bin":
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(p, ".go") {
			return nil
		}
		f, err := parser.ParseFile(fset, p, nil, parser.ImportsOnly)
		if err != nil {
			return err
		}
		files++
		rel, _ := filepath.Rel(root, filepath.Dir(p))
		rel = filepath.ToSlash(rel)
		for _, imp := range f.Imports {
			path, _ := strconv.Unquote(imp.Path.Value)
			if err := checkImport(rel, strings.HasSuffix(p, "_test.go"), path); err != nil {
				t.Errorf("%s: %v", fset.Position(imp.Pos()), err)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	// A walk that found nothing would pass vacuously.
	if files < 200 {
		t.Fatalf("read %d Go files; the walk did not find the repository", files)
	}
}

func repoRoot(t *testing.T) string {
	t.Helper()
	_, file, _, ok := runtime.Caller(0)
	if !ok {
		t.Fatal("no caller information")
	}
	root := filepath.Join(filepath.Dir(file), "..", "..")
	if _, err := os.Stat(filepath.Join(root, "go.work")); err != nil {
		t.Fatalf("repository root not found from %s: %v", file, err)
	}
	return root
}
