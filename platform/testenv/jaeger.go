package testenv

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"sync"
	"testing"
)

// Jaeger is a running Jaeger (v2: an OpenTelemetry collector with Jaeger's
// in-memory storage and query API) on loopback ports.
type Jaeger struct {
	// OTLPGRPC and OTLPHTTP are the receiver's addresses (host:port).
	OTLPGRPC, OTLPHTTP string
	// QueryURL is the query API's base URL (http://host:port).
	QueryURL string
}

var (
	jaegerOnce sync.Once
	jaegerBin  string
	jaegerErr  error
)

// JaegerBinary builds the Jaeger pinned in tools/jaeger/go.mod (a module of
// its own: its dependencies must not move the suite's or buf's) and
// returns its path. The binary is kept in the user cache directory under
// the hash of that go.sum, so a test binary builds it at most once per pin.
func JaegerBinary(t testing.TB) string {
	t.Helper()
	root := RepoRoot(t)
	jaegerOnce.Do(func() { jaegerBin, jaegerErr = buildJaeger(filepath.Join(root, "tools", "jaeger")) })
	if jaegerErr != nil {
		t.Fatal(jaegerErr)
	}
	return jaegerBin
}

func buildJaeger(dir string) (string, error) {
	sum, err := os.ReadFile(filepath.Join(dir, "go.sum"))
	if err != nil {
		return "", fmt.Errorf("jaeger pin: %w", err)
	}
	h := sha256.Sum256(sum)
	cache, err := os.UserCacheDir()
	if err != nil {
		cache = os.TempDir()
	}
	bin := filepath.Join(cache, "wick-testenv", "jaeger-"+hex.EncodeToString(h[:8]))
	if _, err := os.Stat(bin); err == nil {
		return bin, nil
	}
	// Built to a temporary name and renamed: a test binary killed
	// mid-build leaves no half-written file under the final name.
	tmp := bin + ".tmp" + strconv.Itoa(os.Getpid())
	build := exec.Command("go", "build", "-o", tmp, "github.com/jaegertracing/jaeger/cmd/jaeger")
	build.Dir = dir
	build.Env = append(os.Environ(), "GOWORK=off")
	if out, err := build.CombinedOutput(); err != nil {
		return "", fmt.Errorf("go build jaeger: %v\n%s", err, tail(out, 4000))
	}
	if err := os.Rename(tmp, bin); err != nil {
		return "", fmt.Errorf("jaeger binary: %w", err)
	}
	return bin, nil
}

// jaegerConfig is a collector with only the OTLP receiver, the in-memory
// store and the query API, every listener on loopback, and no telemetry
// of its own on a fixed port.
const jaegerConfig = `service:
  extensions: [jaeger_storage, jaeger_query]
  pipelines:
    traces:
      receivers: [otlp]
      exporters: [jaeger_storage_exporter]
  telemetry:
    metrics:
      level: none
    logs:
      level: warn
    traces:
      level: none
extensions:
  jaeger_storage:
    backends:
      mem:
        memory:
          max_traces: 10000
  jaeger_query:
    storage:
      traces: mem
    http:
      endpoint: %s
    grpc:
      endpoint: %s
receivers:
  otlp:
    protocols:
      grpc:
        endpoint: %s
      http:
        endpoint: %s
exporters:
  jaeger_storage_exporter:
    trace_storage: mem
`

// StartJaeger starts Jaeger on free loopback ports and waits until its query
// API answers. It is stopped when the test ends.
func StartJaeger(t testing.TB) *Jaeger {
	t.Helper()
	bin := JaegerBinary(t)
	addr := func() string { return "127.0.0.1:" + strconv.Itoa(FreePort(t)) }
	j := &Jaeger{OTLPGRPC: addr(), OTLPHTTP: addr()}
	query, queryGRPC := addr(), addr()
	j.QueryURL = "http://" + query
	cfg := filepath.Join(t.TempDir(), "jaeger.yaml")
	if err := os.WriteFile(cfg, fmt.Appendf(nil, jaegerConfig, query, queryGRPC, j.OTLPGRPC, j.OTLPHTTP), 0o644); err != nil {
		t.Fatal(err)
	}
	NewProc(t, "jaeger", bin, []string{"--config", cfg}, HTTPServing(j.QueryURL+"/api/services")).Start()
	return j
}
