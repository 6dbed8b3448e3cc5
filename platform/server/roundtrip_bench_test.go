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
)

// BenchmarkRoundTrip compares a unary round trip over loopback TCP through a
// bare grpc server and client with the same call through this package's
// server and platform/dial (OTel stats handlers, identity, recovery, logging):
// the difference is what the plumbing costs every call of the suite.
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
		srv := New("bench", slog.New(slog.NewTextHandler(io.Discard, nil)), WithIdentity(key), WithDrainDelay(0))
		lis, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			b.Fatal(err)
		}
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error, 1)
		go func() { done <- srv.Serve(ctx, lis) }()
		b.Cleanup(func() { cancel(); <-done })
		conn, err := dial.New(lis.Addr().String(), dial.WithIdentity(key))
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { conn.Close() })
		roundTrips(b, conn, identity.WithUser(context.Background(), "bench"))
	})
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
	sort.Slice(lat, func(i, j int) bool { return lat[i] < lat[j] })
	b.ReportMetric(float64(lat[len(lat)/2].Microseconds()), "p50-µs")
	b.ReportMetric(float64(lat[len(lat)*99/100].Microseconds()), "p99-µs")
}
