package app

import (
	"context"
	"errors"
	"net"
	"os"
	"strings"
	"syscall"
	"testing"
	"time"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"

	"github.com/wick-agent/wick/platform/tlsconf"
	"github.com/wick-agent/wick/platform/tlsconf/tlstest"
)

// errStarted ends run from start, as the process would serve until a signal.
var errStarted = errors.New("started")

// TestTLSFlags checks that a half TLS configuration stops the binary before
// it starts, and a whole one reaches the service's Env.
func TestTLSFlags(t *testing.T) {
	ca := tlstest.NewCA(t, "wick test CA")
	f := tlstest.Write(t, t.TempDir(), ca.Issue(t, "127.0.0.1"), ca)
	tests := []struct {
		name       string
		args       []string
		want       error
		wantTLS    bool
		wantMutual bool
	}{
		{"no TLS", nil, errStarted, false, false},
		{"certificate and key", []string{"-tls-cert", f.CertFile, "-tls-key", f.KeyFile}, errStarted, true, false},
		{"mutual", []string{"-tls-cert", f.CertFile, "-tls-key", f.KeyFile, "-tls-ca", f.CAFile, "-health-addr", "127.0.0.1:0"}, errStarted, true, true},
		{"certificate without key", []string{"-tls-cert", f.CertFile}, tlsconf.ErrCertWithoutKey, false, false},
		{"key without certificate", []string{"-tls-key", f.KeyFile}, tlsconf.ErrKeyWithoutCert, false, false},
		{"CA without certificate", []string{"-tls-ca", f.CAFile}, tlsconf.ErrCAWithoutCert, false, false},
		{"server name without certificate", []string{"-tls-server-name", "wick"}, tlsconf.ErrNameWithoutTLS, false, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			started := false
			start := func(_ context.Context, env Env) error {
				started = true
				if (env.TLS != nil) != tc.wantTLS || (env.TLS != nil && env.TLS.Mutual() != tc.wantMutual) {
					t.Errorf("env.TLS = %v, want TLS %v, mutual %v", env.TLS, tc.wantTLS, tc.wantMutual)
				}
				return errStarted
			}
			args := append([]string{"-grpc-addr", "127.0.0.1:0", "-log-level", "error"}, tc.args...)
			err := run("wick-test", "127.0.0.1:0", args, nil, start)
			if !errors.Is(err, tc.want) {
				t.Fatalf("run = %v, want %v", err, tc.want)
			}
			if started != (tc.want == errStarted) {
				t.Fatalf("started %v with err %v", started, err)
			}
		})
	}
	t.Run("an unreadable certificate", func(t *testing.T) {
		err := run("wick-test", "127.0.0.1:0", []string{"-tls-cert", f.CertFile + ".missing", "-tls-key", f.KeyFile}, nil,
			func(context.Context, Env) error { return errStarted })
		if err == nil || errors.Is(err, errStarted) {
			t.Fatalf("run = %v, want a load error", err)
		}
	})
}

// TestOnStopRunsAfterTheServerStopped checks that what a service registers
// with OnStop runs once the server has stopped accepting calls, not when
// the signal arrives: calls in flight during the drain still have their
// stores and clients.
func TestOnStopRunsAfterTheServerStopped(t *testing.T) {
	var addr net.Addr
	var order []string
	start := func(ctx context.Context, env Env) error {
		env.OnStop(func() { order = append(order, "second registered") })
		env.OnStop(func() {
			order = append(order, "first registered")
			if c, err := net.DialTimeout("tcp", addr.String(), time.Second); err == nil {
				c.Close()
				t.Error("OnStop ran while the server still accepted connections")
			}
		})
		go func() {
			// Ask for shutdown as a supervisor would, once serving.
			conn, err := grpc.NewClient(addr.String(), grpc.WithTransportCredentials(insecure.NewCredentials()))
			if err != nil {
				t.Error(err)
				return
			}
			defer conn.Close()
			if _, err := healthpb.NewHealthClient(conn).Check(ctx, &healthpb.HealthCheckRequest{}, grpc.WaitForReady(true)); err != nil {
				t.Error(err)
			}
			_ = syscall.Kill(os.Getpid(), syscall.SIGTERM)
		}()
		return nil
	}
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr = lis.Addr()
	lis.Close()
	args := []string{"-grpc-addr", addr.String(), "-log-level", "error", "-drain-delay", "0s"}
	if err := run("wick-test", "127.0.0.1:0", args, nil, start); err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(order, ", "); got != "first registered, second registered" {
		t.Fatalf("OnStop functions ran as %q, want the last registered first", got)
	}
}

// TestGlobalMeterProviderReachesTheRegistry checks that an instrument a
// service makes on the global OpenTelemetry provider is in the registry its
// -metrics-addr serves, under the Prometheus name the docs list.
func TestGlobalMeterProviderReachesTheRegistry(t *testing.T) {
	start := func(ctx context.Context, env Env) error {
		c, err := otel.GetMeterProvider().Meter("wick-test").Int64Counter("wick.test.calls", metric.WithUnit("{call}"))
		if err != nil {
			return err
		}
		c.Add(ctx, 3, metric.WithAttributes(attribute.String("code", "OK")))
		mfs, err := env.Metrics.Gather()
		if err != nil {
			return err
		}
		for _, mf := range mfs {
			if mf.GetName() != "wick_test_calls_total" {
				continue
			}
			for _, m := range mf.GetMetric() {
				for _, l := range m.GetLabel() {
					if strings.HasPrefix(l.GetName(), "otel_scope_") {
						t.Errorf("label %s: scope labels are off", l.GetName())
					}
				}
				if got := m.GetCounter().GetValue(); got != 3 {
					t.Errorf("wick_test_calls_total = %v, want 3", got)
				}
			}
			return errStarted
		}
		t.Errorf("wick_test_calls_total not in the registry")
		return errStarted
	}
	if err := run("wick-test", "127.0.0.1:0", []string{"-grpc-addr", "127.0.0.1:0", "-log-level", "error"}, nil, start); !errors.Is(err, errStarted) {
		t.Fatal(err)
	}
}
