package wick_test

import (
	"bufio"
	"bytes"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// The suite the tests and examples run against: cmd/wick, built from this
// repository and started as a process, so that this module's go.mod does
// not depend on the suite. Examples read its address and their token from
// WICK_ADDR and WICK_TOKEN, as a user's program would.
const (
	exampleToken = "sdk-gopher-token-0123456789"
	aliceToken   = "sdk-alice-token-0123456789"
	bobToken     = "sdk-bob-token-0123456789"
	// startTimeout bounds the suite's start once built.
	startTimeout = 2 * time.Minute
	// stopTimeout bounds its stop after SIGTERM.
	stopTimeout = 30 * time.Second
)

// scripts are the scripted models' replies (script:<name>).
var scripts = map[string]string{
	// sdk is the default agent's model.
	"sdk": `{"turns":[{"text":"Hello from Wick."}],"end_text":"Hello again."}`,
	// slow streams 200 words 20 ms apart: a run long enough to cut.
	"slow": `{"delay":"20ms","turns":[{"text":"` + strings.TrimSpace(strings.Repeat("word ", 200)) + `"}]}`,
	// ask asks the user a question, then thanks them.
	"ask": `{"turns":[
		{"tool_calls":[{"id":"q1","name":"ask_user","arguments":{"question":"Which colour?","choices":["red","blue"]}}]},
		{"text":"Thanks."}]}`,
	// step streams 50 words, then calls calculate: a step long enough to
	// ask to stop in; then it answers.
	"step": `{"delay":"20ms","turns":[
		{"text":"` + strings.TrimSpace(strings.Repeat("word ", 50)) + `","tool_calls":[{"name":"calculate","arguments":{"expr":"6*7"}}]},
		{"text":"Done."}]}`,
	// approve writes a file, then answers.
	"approve": `{"turns":[
		{"tool_calls":[{"name":"write_file","arguments":{"path":"/workspace/approved.txt","content":"approved\n"}}]},
		{"text":"Written."}]}`,
	// always writes a file in each of two runs on one thread.
	"always": `{"turns":[
		{"tool_calls":[{"name":"write_file","arguments":{"path":"/workspace/one.txt","content":"one\n"}}]},
		{"text":"Wrote one."},
		{"tool_calls":[{"name":"write_file","arguments":{"path":"/workspace/two.txt","content":"two\n"}}]},
		{"text":"Wrote two."}]}`,
}

// suiteAddr is the suite's gRPC API address.
var suiteAddr string

func TestMain(m *testing.M) { os.Exit(runMain(m)) }

func runMain(m *testing.M) int {
	flag.Parse()
	if f := flag.Lookup("test.run"); f != nil && f.Value.String() == "^$" {
		return m.Run() // benchmarks only (make bench): there are none here
	}
	goBin, err := exec.LookPath("go")
	if err != nil {
		if ci, _ := strconv.ParseBool(os.Getenv("CI")); ci {
			fmt.Fprintln(os.Stderr, "FAIL: the Wick Go SDK tests need the go command on PATH to build cmd/wick")
			return 1
		}
		fmt.Println("skipping the Wick Go SDK tests: the go command is not on PATH, and they build cmd/wick with it")
		return 0
	}
	stop, err := startSuite(goBin)
	if err != nil {
		fmt.Fprintf(os.Stderr, "FAIL: start the suite: %v\n", err)
		return 1
	}
	defer stop()
	os.Setenv("WICK_ADDR", suiteAddr)
	os.Setenv("WICK_TOKEN", exampleToken)
	return m.Run()
}

// repoRoot is the repository this module sits in: the nearest parent of
// the test's directory with a go.work.
func repoRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.work")); err == nil {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errors.New("no go.work above the test directory")
		}
		dir = parent
	}
}

var grpcAPILine = regexp.MustCompile(`^\s*gRPC API\s+(\S+)`)

// startSuite builds cmd/wick, starts it on loopback ports with the
// scripted models and three users, and returns how to stop it.
func startSuite(goBin string) (stop func(), err error) {
	root, err := repoRoot()
	if err != nil {
		return nil, err
	}
	dir, err := os.MkdirTemp("", "wsdk") // short: sandbox sockets live here
	if err != nil {
		return nil, err
	}
	cleanup := []func(){func() { os.RemoveAll(dir) }}
	stop = func() {
		for i := len(cleanup) - 1; i >= 0; i-- {
			cleanup[i]()
		}
	}
	defer func() {
		if err != nil {
			stop()
		}
	}()
	bin := filepath.Join(dir, "wick")
	build := exec.Command(goBin, "build", "-o", bin, "./cmd/wick")
	build.Dir = root
	if out, err := build.CombinedOutput(); err != nil {
		return nil, fmt.Errorf("go build ./cmd/wick: %v\n%s", err, out)
	}
	scriptDir := filepath.Join(dir, "scripts")
	if err := os.Mkdir(scriptDir, 0o755); err != nil {
		return nil, err
	}
	for name, body := range scripts {
		if err := os.WriteFile(filepath.Join(scriptDir, name), []byte(body), 0o644); err != nil {
			return nil, err
		}
	}
	stateDir := filepath.Join(dir, "st")
	cmd := exec.Command(bin,
		"-http-addr", "127.0.0.1:0",
		"-gateway-grpc-addr", "127.0.0.1:0",
		"-agent-addr", "127.0.0.1:0",
		"-sandbox-addr", "127.0.0.1:0",
		"-llm-addr", "127.0.0.1:0",
		"-sandbox", "local", "-allow-local",
		"-sandbox-state-dir", stateDir,
		"-tokens", exampleToken+":gopher,"+aliceToken+":alice,"+bobToken+":bob",
		"-script-dir", scriptDir,
		"-knowledge-orgs", "alice=acme,bob=acme",
		"-model", "script:sdk",
		"-log-level", "warn",
	)
	// Nothing from this environment configures the suite: no WICK_*
	// settings, no provider keys.
	for _, kv := range os.Environ() {
		if k, _, _ := strings.Cut(kv, "="); !strings.HasPrefix(k, "WICK_") && !strings.HasSuffix(k, "_API_KEY") {
			cmd.Env = append(cmd.Env, kv)
		}
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	var stderr lockedBuffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	exited := make(chan struct{})
	go func() { _ = cmd.Wait(); close(exited) }()
	cleanup = append(cleanup, func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-exited:
		case <-time.After(stopTimeout):
			_ = cmd.Process.Kill()
			<-exited
		}
	})
	found := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			if m := grpcAPILine.FindStringSubmatch(sc.Text()); m != nil {
				found <- m[1]
			}
		}
		_, _ = io.Copy(io.Discard, stdout)
	}()
	select {
	case suiteAddr = <-found:
		return stop, nil
	case <-exited:
		return nil, fmt.Errorf("wick exited before printing its gRPC API address:\n%s", stderr.String())
	case <-time.After(startTimeout):
		return nil, fmt.Errorf("wick printed no gRPC API address within %s:\n%s", startTimeout, stderr.String())
	}
}

// lockedBuffer is the suite's stderr, written by exec's copier and read
// by the test.
type lockedBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *lockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}
