package server_test

import (
	"bytes"
	"context"
	"io"
	"os/exec"
	"slices"
	"testing"
	"time"

	daemonv1 "github.com/wick-agent/wick/gen/wick/daemon/v1"
)

// BenchmarkExecTrue is the round trip of `true` through the daemon over a
// Unix socket with the generated client: start, run, stream, exit status.
func BenchmarkExecTrue(b *testing.B) {
	d := start(b, config{})
	ctx := context.Background()
	if _, err := d.fs.Exec(ctx, "true"); err != nil {
		b.Fatal(err)
	}
	var lat []time.Duration
	for b.Loop() {
		t0 := time.Now()
		res, err := d.fs.Exec(ctx, "true")
		lat = append(lat, time.Since(t0))
		if err != nil || res.ExitCode != 0 {
			b.Fatalf("Exec = %+v, %v", res, err)
		}
	}
	b.StopTimer()
	slices.Sort(lat)
	b.ReportMetric(float64(lat[len(lat)/2].Microseconds()), "p50-µs")
	b.ReportMetric(float64(lat[len(lat)*99/100].Microseconds()), "p99-µs")
	// The gRPC part alone: a unary round trip on the same connection.
	rtt := make([]time.Duration, 0, 200)
	for range 200 {
		t0 := time.Now()
		if _, err := d.client.Health(ctx, &daemonv1.HealthRequest{}); err != nil {
			b.Fatal(err)
		}
		rtt = append(rtt, time.Since(t0))
	}
	slices.Sort(rtt)
	b.ReportMetric(float64(rtt[len(rtt)/2].Microseconds()), "grpc-rtt-p50-µs")
	// The machine's floor: the same command started straight from Go, no
	// daemon, pipes or gRPC, measured in the same run.
	floor := make([]time.Duration, 0, 200)
	for range 200 {
		t0 := time.Now()
		if err := exec.Command("/bin/sh", "-c", "true").Run(); err != nil {
			b.Fatal(err)
		}
		floor = append(floor, time.Since(t0))
	}
	slices.Sort(floor)
	b.ReportMetric(float64(floor[len(floor)/2].Microseconds()), "spawn-p50-µs")
}

const streamSize = 64 << 20

// BenchmarkStream64MiB moves a 64 MiB file each way through the daemon.
func BenchmarkStream64MiB(b *testing.B) {
	d := start(b, config{})
	data := bytes.Repeat([]byte("0123456789abcdef"), streamSize/16)
	ctx := context.Background()
	b.Run("upload", func(b *testing.B) {
		b.SetBytes(streamSize)
		for b.Loop() {
			if _, err := d.fs.Upload(ctx, "blob", 0, bytes.NewReader(data)); err != nil {
				b.Fatal(err)
			}
		}
	})
	// The floor: the same atomic write straight to the workspace, no gRPC.
	b.Run("write-floor", func(b *testing.B) {
		b.SetBytes(streamSize)
		for b.Loop() {
			w, err := d.local.CreateAtomic("floor", 0)
			if err != nil {
				b.Fatal(err)
			}
			for off := 0; off < len(data); off += 256 << 10 {
				if _, err := w.Write(data[off : off+256<<10]); err != nil {
					b.Fatal(err)
				}
			}
			if err := w.Commit(); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("download", func(b *testing.B) {
		b.SetBytes(streamSize)
		for b.Loop() {
			n, err := d.fs.Download(ctx, "blob", io.Discard)
			if err != nil || n != streamSize {
				b.Fatalf("Download = %d, %v", n, err)
			}
		}
	})
}
