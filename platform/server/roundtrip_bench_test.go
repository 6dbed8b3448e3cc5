package server

import (
	"context"
	"io"
	"log/slog"
	"net"
	"sort"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/health"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"

	"github.com/wick-agent/wick/platform/dial"
	"github.com/wick-agent/wick/platform/identity"
	"github.com/wick-agent/wick/platform/tlsconf"
	"github.com/wick-agent/wick/platform/tlsconf/tlstest"
)

// BenchmarkRoundTrip compares a unary round trip over loopback TCP through a
// bare grpc server and client with the same call through this package's
// server and platform/dial (OTel stats handlers, identity, recovery, logging):
// the difference is what the plumbing costs every call of the suite. The
// mtls variant adds mutual TLS (ECDSA P-256 certificates, TLS 1.3) on an
// established connection: the cost of encryption on every call.
func BenchmarkRoundTrip(b *testing.B) {
	b.Run("bare", func(b *testing.B) {
		lis, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			b.Fatal(err)
		}
		s := grpc.NewServer()
		healthpb.RegisterHealthServer(s, health.NewServer())
		go s.Serve(lis)
		b.Cleanup(s.Stop)
		conn, err := grpc.NewClient(lis.Addr().String(), grpc.WithTransportCredentials(insecure.NewCredentials()))
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { conn.Close() })
		roundTrips(b, conn, context.Background())
	})
	b.Run("platform", func(b *testing.B) {
		key := identity.RandomKey()
		conn, err := dial.New(benchServer(b, key), dial.WithIdentity(key))
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { conn.Close() })
		roundTrips(b, conn, identity.WithUser(context.Background(), "bench"))
	})
	b.Run("platform-mtls", func(b *testing.B) {
		key := identity.RandomKey()
		server, client := benchTLS(b)
		conn, err := dial.New(benchServer(b, key, WithTLS(server)), dial.WithIdentity(key), dial.WithTLS(client))
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { conn.Close() })
		roundTrips(b, conn, identity.WithUser(context.Background(), "bench"))
	})
}

// BenchmarkNewConnection measures a first call on a new connection, the
// handshake included, in plaintext and with mutual TLS: what a handshake
// costs (connections are long-lived, so it is paid on a new connection or
// a new replica, not per call).
func BenchmarkNewConnection(b *testing.B) {
	server, client := benchTLS(b)
	for _, tc := range []struct {
		name   string
		server []Option
		client []dial.Option
	}{
		{"plaintext", nil, nil},
		{"mtls", []Option{WithTLS(server)}, []dial.Option{dial.WithTLS(client)}},
	} {
		b.Run(tc.name, func(b *testing.B) {
			key := identity.RandomKey()
			addr := benchServer(b, key, tc.server...)
			ctx := identity.WithUser(context.Background(), "bench")
			opts := append([]dial.Option{dial.WithIdentity(key)}, tc.client...)
			lat := make([]time.Duration, 0, b.N)
			b.ResetTimer()
			for range b.N {
				t := time.Now()
				conn, err := dial.New(addr, opts...)
				if err != nil {
					b.Fatal(err)
				}
				if _, err := healthpb.NewHealthClient(conn).Check(ctx, &healthpb.HealthCheckRequest{}); err != nil {
					b.Fatal(err)
				}
				lat = append(lat, time.Since(t))
				conn.Close()
			}
			b.StopTimer()
			reportLatency(b, lat)
		})
	}
}

// benchServer serves this package's server on loopback until the benchmark ends.
func benchServer(b *testing.B, key *identity.Key, opts ...Option) string {
	b.Helper()
	srv := New("bench", slog.New(slog.NewTextHandler(io.Discard, nil)), append([]Option{WithIdentity(key), WithDrainDelay(0)}, opts...)...)
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ctx, lis) }()
	b.Cleanup(func() { cancel(); <-done })
	return lis.Addr().String()
}

// benchTLS returns a server's and a client's TLS identity of one fresh CA.
func benchTLS(b *testing.B) (server, client *tlsconf.Source) {
	b.Helper()
	ca := tlstest.NewCA(b, "bench CA")
	return tlstest.Load(b, tlstest.Write(b, b.TempDir(), ca.Issue(b, "127.0.0.1"), ca)),
		tlstest.Load(b, tlstest.Write(b, b.TempDir(), ca.Issue(b, "bench"), ca))
}

func roundTrips(b *testing.B, conn *grpc.ClientConn, ctx context.Context) {
	hc := healthpb.NewHealthClient(conn)
	if _, err := hc.Check(ctx, &healthpb.HealthCheckRequest{}); err != nil {
		b.Fatal(err)
	}
	lat := make([]time.Duration, 0, b.N)
	b.ResetTimer()
	for range b.N {
		t := time.Now()
		if _, err := hc.Check(ctx, &healthpb.HealthCheckRequest{}); err != nil {
			b.Fatal(err)
		}
		lat = append(lat, time.Since(t))
	}
	b.StopTimer()
	reportLatency(b, lat)
}

func reportLatency(b *testing.B, lat []time.Duration) {
	sort.Slice(lat, func(i, j int) bool { return lat[i] < lat[j] })
	b.ReportMetric(float64(lat[len(lat)/2].Microseconds()), "p50-µs")
	b.ReportMetric(float64(lat[len(lat)*99/100].Microseconds()), "p99-µs")
}
