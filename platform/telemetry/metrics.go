package telemetry

import (
	"context"
	"fmt"
	"os"
	"strings"

	"github.com/prometheus/client_golang/prometheus"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/exporters/otlp/otlpmetric/otlpmetricgrpc"
	"go.opentelemetry.io/otel/exporters/otlp/otlpmetric/otlpmetrichttp"
	otelprom "go.opentelemetry.io/otel/exporters/prometheus"
	"go.opentelemetry.io/otel/sdk/instrumentation"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
)

// NewMeterProvider returns the meter provider of a process (or of a suite
// hosted in one) named serviceName. Every instrument it makes is exported on
// reg, the registry the process serves at /metrics, under the Prometheus
// name of its OpenTelemetry name (wick.llm.tokens.input becomes
// wick_llm_tokens_input_total; unit "s" adds _seconds). With
// OTEL_EXPORTER_OTLP_ENDPOINT or OTEL_EXPORTER_OTLP_METRICS_ENDPOINT set, it
// also pushes them over OTLP (gRPC, or HTTP when
// OTEL_EXPORTER_OTLP_[METRICS_]PROTOCOL is http/protobuf) every
// OTEL_METRIC_EXPORT_INTERVAL (60 s by default). The caller installs it
// (otel.SetMeterProvider) if it wants it global, and shuts it down at exit,
// which pushes the last figures.
func NewMeterProvider(ctx context.Context, serviceName string, reg prometheus.Registerer) (*sdkmetric.MeterProvider, error) {
	res, err := newResource(serviceName)
	if err != nil {
		return nil, err
	}
	// Without scope info every series would carry otel_scope_name and
	// otel_scope_version labels, one more set per instrumenting package, for
	// nothing an operator queries by.
	prom, err := otelprom.New(otelprom.WithRegisterer(reg), otelprom.WithoutScopeInfo())
	if err != nil {
		return nil, fmt.Errorf("prometheus exporter: %w", err)
	}
	opts := []sdkmetric.Option{sdkmetric.WithResource(res), sdkmetric.WithReader(prom), boundedHTTP, boundedGRPC}
	if otlpConfigured("METRICS") {
		exp, err := newOTLPMetricExporter(ctx)
		if err != nil {
			return nil, err
		}
		opts = append(opts, sdkmetric.WithReader(sdkmetric.NewPeriodicReader(exp)))
	}
	return sdkmetric.NewMeterProvider(opts...), nil
}

// otlpConfigured reports whether an OTLP endpoint is set for signal
// (TRACES, METRICS) or for every signal.
func otlpConfigured(signal string) bool {
	return os.Getenv("OTEL_EXPORTER_OTLP_ENDPOINT") != "" || os.Getenv("OTEL_EXPORTER_OTLP_"+signal+"_ENDPOINT") != ""
}

// otlpProtocol is the OTLP protocol configured for signal: "grpc" unless the
// environment names http/protobuf.
func otlpProtocol(signal string) string {
	p := os.Getenv("OTEL_EXPORTER_OTLP_" + signal + "_PROTOCOL")
	if p == "" {
		p = os.Getenv("OTEL_EXPORTER_OTLP_PROTOCOL")
	}
	if strings.HasPrefix(p, "http") {
		return "http/protobuf"
	}
	return "grpc"
}

func newOTLPMetricExporter(ctx context.Context) (sdkmetric.Exporter, error) {
	var (
		exp sdkmetric.Exporter
		err error
	)
	if otlpProtocol("METRICS") == "http/protobuf" {
		exp, err = otlpmetrichttp.New(ctx)
	} else {
		exp, err = otlpmetricgrpc.New(ctx)
	}
	if err != nil {
		return nil, fmt.Errorf("otlp metric exporter: %w", err)
	}
	return exp, nil
}

// Scopes of the contrib instrumentation the suite's HTTP handlers and gRPC
// servers and clients use; they record on the global provider.
const (
	otelhttpScope = "go.opentelemetry.io/contrib/instrumentation/net/http/otelhttp"
	otelgrpcScope = "go.opentelemetry.io/contrib/instrumentation/google.golang.org/grpc/otelgrpc"
)

// boundedHTTP keeps only the bounded attributes of otelhttp's instruments:
// server.address and server.port come from the request's Host header, so
// any client could add series, and a client's server.address is the host
// a request may choose.
var boundedHTTP = sdkmetric.WithView(sdkmetric.NewView(
	sdkmetric.Instrument{Scope: instrumentation.Scope{Name: otelhttpScope}},
	sdkmetric.Stream{AttributeFilter: attribute.NewAllowKeysFilter(
		"http.request.method", "http.response.status_code", "error.type", "network.protocol.version")},
))

// boundedGRPC drops the peer's address and port from otelgrpc's
// instruments: loopback ports change with every start and say nothing the
// method does not.
var boundedGRPC = sdkmetric.WithView(sdkmetric.NewView(
	sdkmetric.Instrument{Scope: instrumentation.Scope{Name: otelgrpcScope}},
	sdkmetric.Stream{AttributeFilter: attribute.NewDenyKeysFilter("server.address", "server.port")},
))
