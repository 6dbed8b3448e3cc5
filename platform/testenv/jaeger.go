package testenv

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
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

// JaegerPin is the Jaeger pinned in tools/jaeger/go.mod.
var JaegerPin = Pinned{Name: "jaeger", Module: "tools/jaeger", Package: "github.com/jaegertracing/jaeger/cmd/jaeger"}

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
	bin, err := JaegerPin.Build(t)
	if err != nil {
		t.Fatal(err)
	}
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
