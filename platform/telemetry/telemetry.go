// Package telemetry sets up OpenTelemetry for a process: W3C trace-context
// propagation, a tracer provider that exports over OTLP when
// OTEL_EXPORTER_OTLP_ENDPOINT is set (and still mints trace ids for log
// correlation when it is not), and a meter provider that exports to the
// process's Prometheus registry and, when configured, over OTLP.
package telemetry

import (
	"context"
	"errors"
	"fmt"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracegrpc"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	semconv "go.opentelemetry.io/otel/semconv/v1.26.0"
)

// Setup installs the global tracer provider and propagator for a process named
// serviceName. The returned function flushes and stops the provider.
func Setup(ctx context.Context, serviceName string, extra ...sdktrace.TracerProviderOption) (func(context.Context) error, error) {
	otel.SetTextMapPropagator(propagation.NewCompositeTextMapPropagator(propagation.TraceContext{}, propagation.Baggage{}))
	res, err := newResource(serviceName)
	if err != nil {
		return nil, err
	}
	opts := []sdktrace.TracerProviderOption{sdktrace.WithResource(res)}
	if otlpConfigured("TRACES") {
		var (
			exp *otlptrace.Exporter
			err error
		)
		if otlpProtocol("TRACES") == "http/protobuf" {
			exp, err = otlptracehttp.New(ctx)
		} else {
			exp, err = otlptracegrpc.New(ctx)
		}
		if err != nil {
			return nil, fmt.Errorf("otlp exporter: %w", err)
		}
		opts = append(opts, sdktrace.WithBatcher(exp))
	}
	tp := sdktrace.NewTracerProvider(append(opts, extra...)...)
	otel.SetTracerProvider(tp)
	return tp.Shutdown, nil
}

// newResource describes the process to both signals' backends.
func newResource(serviceName string) (*resource.Resource, error) {
	res, err := resource.Merge(resource.Default(), resource.NewSchemaless(semconv.ServiceName(serviceName)))
	if err != nil && !errors.Is(err, resource.ErrSchemaURLConflict) {
		return nil, fmt.Errorf("telemetry resource: %w", err)
	}
	return res, nil
}
