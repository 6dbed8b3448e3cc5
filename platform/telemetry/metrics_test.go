package telemetry

import (
	"context"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"
	collectorpb "go.opentelemetry.io/proto/otlp/collector/metrics/v1"
	"google.golang.org/grpc"
	"google.golang.org/protobuf/proto"
)

// collector is a fake of an OpenTelemetry collector's metrics endpoint: it
// keeps the names of the metrics it receives, with their service.name.
type collector struct {
	collectorpb.UnimplementedMetricsServiceServer
	mu       sync.Mutex
	received map[string]string // metric name → service.name
}

func (c *collector) Export(_ context.Context, req *collectorpb.ExportMetricsServiceRequest) (*collectorpb.ExportMetricsServiceResponse, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, rm := range req.GetResourceMetrics() {
		service := ""
		for _, a := range rm.GetResource().GetAttributes() {
			if a.GetKey() == "service.name" {
				service = a.GetValue().GetStringValue()
			}
		}
		for _, sm := range rm.GetScopeMetrics() {
			for _, m := range sm.GetMetrics() {
				c.received[m.GetName()] = service
			}
		}
	}
	return &collectorpb.ExportMetricsServiceResponse{}, nil
}

// serveGRPC serves c over OTLP/gRPC on loopback and returns its endpoint.
func (c *collector) serveGRPC(t *testing.T) string {
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := grpc.NewServer()
	collectorpb.RegisterMetricsServiceServer(srv, c)
	go func() { _ = srv.Serve(lis) }()
	t.Cleanup(srv.Stop)
	return "http://" + lis.Addr().String()
}

// serveHTTP serves c over OTLP/HTTP (protobuf) on loopback and returns its
// endpoint.
func (c *collector) serveHTTP(t *testing.T) string {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, err := io.ReadAll(r.Body)
		var req collectorpb.ExportMetricsServiceRequest
		if err == nil {
			err = proto.Unmarshal(body, &req)
		}
		if r.URL.Path != "/v1/metrics" || err != nil {
			http.Error(w, "bad export", http.StatusBadRequest)
			return
		}
		resp, _ := c.Export(r.Context(), &req)
		out, _ := proto.Marshal(resp)
		w.Header().Set("Content-Type", "application/x-protobuf")
		_, _ = w.Write(out)
	}))
	t.Cleanup(srv.Close)
	return srv.URL
}

// TestMeterProviderExports checks both exports of the meter provider: the
// Prometheus registry at once, and OTLP (by the protocol the environment
// names) by the time the provider has shut down.
func TestMeterProviderExports(t *testing.T) {
	tests := []struct {
		name     string
		protocol string // OTEL_EXPORTER_OTLP_PROTOCOL
		endpoint string // which variable names the endpoint
	}{
		{"no OTLP", "", ""},
		{"OTLP over gRPC", "", "OTEL_EXPORTER_OTLP_ENDPOINT"},
		{"OTLP over HTTP", "http/protobuf", "OTEL_EXPORTER_OTLP_ENDPOINT"},
		{"OTLP for metrics only, over gRPC", "grpc", "OTEL_EXPORTER_OTLP_METRICS_ENDPOINT"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c := &collector{received: map[string]string{}}
			t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", "")
			t.Setenv("OTEL_EXPORTER_OTLP_METRICS_ENDPOINT", "")
			t.Setenv("OTEL_EXPORTER_OTLP_PROTOCOL", tc.protocol)
			if tc.endpoint != "" {
				url := c.serveGRPC(t)
				if tc.protocol == "http/protobuf" {
					url = c.serveHTTP(t)
				}
				if tc.endpoint == "OTEL_EXPORTER_OTLP_METRICS_ENDPOINT" {
					url += "/v1/metrics" // a signal's own endpoint is the whole URL
				}
				t.Setenv(tc.endpoint, url)
				t.Setenv("OTEL_EXPORTER_OTLP_INSECURE", "true")
			}
			reg := prometheus.NewRegistry()
			mp, err := NewMeterProvider(context.Background(), "wick-test", reg)
			if err != nil {
				t.Fatal(err)
			}
			ctr, err := mp.Meter("test").Int64Counter("wick.test.calls", metric.WithUnit("{call}"))
			if err != nil {
				t.Fatal(err)
			}
			ctr.Add(context.Background(), 2)
			mfs, err := reg.Gather()
			if err != nil {
				t.Fatal(err)
			}
			found := false
			for _, mf := range mfs {
				found = found || (mf.GetName() == "wick_test_calls_total" && mf.GetMetric()[0].GetCounter().GetValue() == 2)
			}
			if !found {
				t.Errorf("wick_test_calls_total 2 not in the Prometheus registry")
			}
			if err := mp.Shutdown(context.Background()); err != nil {
				t.Fatal(err)
			}
			c.mu.Lock()
			defer c.mu.Unlock()
			service, ok := c.received["wick.test.calls"]
			if ok != (tc.endpoint != "") || (ok && service != "wick-test") {
				t.Errorf("collector received %v, want wick.test.calls of wick-test: %v", c.received, tc.endpoint != "")
			}
		})
	}
}

// TestContribAttributesAreBounded checks that the attributes a client
// chooses (the Host header's address and port) never become labels of the
// HTTP and gRPC instrumentation's series.
func TestContribAttributesAreBounded(t *testing.T) {
	tests := []struct {
		scope, name string
		attrs       []attribute.KeyValue
		want, never []string
	}{
		{otelhttpScope, "http.server.request.duration", []attribute.KeyValue{
			attribute.String("http.request.method", "GET"), attribute.Int("http.response.status_code", 200),
			attribute.String("server.address", "attacker.example"), attribute.Int("server.port", 1234), attribute.String("url.scheme", "http"),
		}, []string{"http_request_method", "http_response_status_code"}, []string{"server_address", "server_port", "url_scheme"}},
		{otelgrpcScope, "rpc.server.call.duration", []attribute.KeyValue{
			attribute.String("rpc.method", "wick.agent.v1.AgentService/Invoke"), attribute.String("server.address", "127.0.0.1"), attribute.Int("server.port", 40001),
		}, []string{"rpc_method"}, []string{"server_address", "server_port"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			reg := prometheus.NewRegistry()
			mp, err := NewMeterProvider(context.Background(), "wick-test", reg)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = mp.Shutdown(context.Background()) })
			h, err := mp.Meter(tc.scope).Float64Histogram(tc.name, metric.WithUnit("s"))
			if err != nil {
				t.Fatal(err)
			}
			h.Record(context.Background(), 0.1, metric.WithAttributes(tc.attrs...))
			mfs, err := reg.Gather()
			if err != nil {
				t.Fatal(err)
			}
			labels := map[string]bool{}
			for _, mf := range mfs {
				if mf.GetName() != strings.ReplaceAll(tc.name, ".", "_")+"_seconds" {
					continue
				}
				for _, l := range mf.GetMetric()[0].GetLabel() {
					labels[l.GetName()] = true
				}
			}
			for _, l := range tc.want {
				if !labels[l] {
					t.Errorf("label %s missing: %v", l, labels)
				}
			}
			for _, l := range tc.never {
				if labels[l] {
					t.Errorf("label %s present: %v", l, labels)
				}
			}
		})
	}
}
