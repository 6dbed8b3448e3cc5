package telemetry

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"time"

	"go.opentelemetry.io/otel/exporters/otlp/otlptrace"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracegrpc"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
)

// NewTraceClient returns a started OTLP trace client configured from the
// environment as Setup's exporter is (endpoint, protocol, headers, TLS), or
// nil when no OTLP endpoint is set. It lets a process forward spans it did
// not record itself (a sandbox's daemon) to the collector it exports to, so
// the collector's address and credentials stay with the process. The caller
// stops the client.
func NewTraceClient(ctx context.Context) (otlptrace.Client, error) {
	if !otlpConfigured("TRACES") {
		return nil, nil
	}
	var c otlptrace.Client
	if otlpProtocol("TRACES") == "http/protobuf" {
		c = otlptracehttp.NewClient()
	} else {
		c = otlptracegrpc.NewClient()
	}
	if err := c.Start(ctx); err != nil {
		return nil, fmt.Errorf("otlp trace client: %w", err)
	}
	return c, nil
}

// NewUnixTraceExporter exports spans as OTLP/HTTP to the Unix socket at
// path: how a process without a network (wick-daemon in a sandbox
// container) hands its spans to a relay outside.
func NewUnixTraceExporter(ctx context.Context, path string) (*otlptrace.Exporter, error) {
	var d net.Dialer
	hc := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{
		DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
			return d.DialContext(ctx, "unix", path)
		},
	}}
	exp, err := otlptracehttp.New(ctx, otlptracehttp.WithHTTPClient(hc),
		// The host part only names the request; the dialer picks the socket.
		otlptracehttp.WithEndpoint("otlp"), otlptracehttp.WithInsecure())
	if err != nil {
		return nil, fmt.Errorf("otlp exporter on %s: %w", path, err)
	}
	return exp, nil
}
