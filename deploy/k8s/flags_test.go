package k8s

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"time"

	"github.com/wick-agent/wick/platform/config"
)

// binaries are the service binaries the manifests run, by image name (the
// images `make images` builds are named after their binary), and the package
// each is built from, relative to the repository root.
var binaries = map[string]string{
	"wick-gateway": "./services/gateway/cmd/wick-gateway",
	"wick-agent":   "./services/agent/cmd/wick-agent",
	"wick-sandbox": "./services/sandbox/cmd/wick-sandbox",
	"wick-llmgw":   "./services/llmgw/cmd/wick-llmgw",
}

// repoRoot is where the binaries' packages are, seen from this directory.
const repoRoot = "../.."

// helpTimeout bounds one binary's -h.
const helpTimeout = 30 * time.Second

// flagInfo is one flag as the binary's usage prints it.
type flagInfo struct {
	// Bool flags take no value: the usage line names no type.
	Bool bool
	// Default is the "(default …)" of the usage, "" when it prints none.
	Default string
}

// binaryFlags are the flags of one binary, by name.
type binaryFlags map[string]flagInfo

// envFlag returns the flag a WICK_* variable sets (platform/config).
func (b binaryFlags) envFlag(env string) (string, bool) {
	for name := range b {
		if config.EnvName(name) == env {
			return name, true
		}
	}
	return "", false
}

// buildBinaries builds every binary once into dir and reads its flags.
func buildBinaries(dir string) (map[string]binaryFlags, error) {
	args := []string{"build", "-o", dir + string(filepath.Separator)}
	for _, pkg := range binaries {
		args = append(args, pkg)
	}
	cmd := exec.Command("go", args...)
	cmd.Dir = repoRoot
	if out, err := cmd.CombinedOutput(); err != nil {
		return nil, fmt.Errorf("go build: %w\n%s", err, out)
	}
	all := map[string]binaryFlags{}
	for name := range binaries {
		flags, err := readFlags(filepath.Join(dir, name))
		if err != nil {
			return nil, err
		}
		all[name] = flags
	}
	return all, nil
}

// usageLine is a flag's first usage line ("  -name type"); its description
// follows on lines that start with a tab.
var (
	usageLine   = regexp.MustCompile(`^  -([A-Za-z0-9][A-Za-z0-9._-]*)(?: (\S+))?$`)
	defaultText = regexp.MustCompile(`\(default (.*)\)$`)
)

// readFlags runs bin -h and parses the flag package's usage. It refuses an
// output with no flag in it, so that a changed format cannot pass as "the
// binary knows no flags".
func readFlags(bin string) (binaryFlags, error) {
	ctx, cancel := context.WithTimeout(context.Background(), helpTimeout)
	defer cancel()
	var out bytes.Buffer
	cmd := exec.CommandContext(ctx, bin, "-h")
	cmd.Stdout, cmd.Stderr = &out, &out
	_ = cmd.Run() // -h exits 2 after printing the usage (flag.ErrHelp)
	flags := binaryFlags{}
	var last string
	sc := bufio.NewScanner(&out)
	for sc.Scan() {
		line := sc.Text()
		if m := usageLine.FindStringSubmatch(line); m != nil {
			last = m[1]
			flags[last] = flagInfo{Bool: m[2] == ""}
			continue
		}
		if last != "" && strings.HasPrefix(line, "    \t") {
			if m := defaultText.FindStringSubmatch(line); m != nil {
				f := flags[last]
				f.Default = strings.Trim(m[1], `"`)
				flags[last] = f
			}
		}
	}
	if _, ok := flags["grpc-addr"]; !ok {
		return nil, fmt.Errorf("%s -h printed no usage with -grpc-addr:\n%s", bin, out.String())
	}
	return flags, nil
}
