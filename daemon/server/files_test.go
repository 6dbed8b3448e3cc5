package server_test

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/wick-agent/wick/daemon/daemonfs"
	"github.com/wick-agent/wick/daemon/server"
	daemonv1 "github.com/wick-agent/wick/gen/wick/daemon/v1"
	"github.com/wick-agent/wick/platform/testenv"
	"github.com/wick-agent/wick/wickfs"
)

// TestStreamLargeFile uploads and downloads a file in chunks and checks no
// message carries more than one chunk.
func TestStreamLargeFile(t *testing.T) {
	t.Parallel()
	const size = 24<<20 + 12345
	const chunk = 128 << 10
	d := start(t, config{server: []server.Option{server.WithChunkSize(chunk)}})
	data := make([]byte, size)
	if _, err := rand.Read(data); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	res, err := d.fs.Upload(ctx, "/workspace/big/blob.bin", 0o600, bytes.NewReader(data))
	if err != nil {
		t.Fatal(err)
	}
	if res.BytesWritten != size || res.Path != "/workspace/big/blob.bin" {
		t.Fatalf("upload = %v", res)
	}
	st, err := os.Stat(filepath.Join(d.dir, "big/blob.bin"))
	if err != nil || st.Mode().Perm() != 0o600 || st.Size() != size {
		t.Fatalf("stat = %v, %v", st, err)
	}
	stream, err := d.client.ReadFile(ctx, &daemonv1.ReadFileRequest{Path: "big/blob.bin"})
	if err != nil {
		t.Fatal(err)
	}
	h := sha256.New()
	first := true
	for {
		msg, err := stream.Recv()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		if first && (msg.GetSize() != size || msg.GetMode() != 0o600) {
			t.Fatalf("first message size %d mode %o", msg.GetSize(), msg.GetMode())
		}
		first = false
		if len(msg.GetData()) > chunk {
			t.Fatalf("a message carries %d bytes, more than a chunk", len(msg.GetData()))
		}
		h.Write(msg.GetData())
	}
	if want := sha256.Sum256(data); !bytes.Equal(h.Sum(nil), want[:]) {
		t.Fatal("downloaded bytes differ")
	}
	// ReadFile through the FileSystem refuses what would not fit its limit.
	if _, err := daemonfs.New(d.client, daemonfs.WithMaxReadBytes(1<<20)).ReadFile(ctx, "big/blob.bin"); !errors.Is(err, wickfs.ErrTooLarge) {
		t.Fatalf("ReadFile of %d bytes = %v; want ErrTooLarge", size, err)
	}
}

func TestWriteFileRefusals(t *testing.T) {
	t.Parallel()
	d := start(t, config{files: map[string]string{"f.txt": "original"}, server: []server.Option{server.WithMaxWriteBytes(1000)}})
	ctx := context.Background()
	header := func(p string, mode uint32) *daemonv1.WriteFileRequest {
		return &daemonv1.WriteFileRequest{Msg: &daemonv1.WriteFileRequest_Header{Header: &daemonv1.WriteFileHeader{Path: p, Mode: mode}}}
	}
	data := func(b []byte) *daemonv1.WriteFileRequest {
		return &daemonv1.WriteFileRequest{Msg: &daemonv1.WriteFileRequest_Data{Data: b}}
	}
	for _, tc := range []struct {
		name string
		msgs []*daemonv1.WriteFileRequest
		code codes.Code
	}{
		{"no header", []*daemonv1.WriteFileRequest{data([]byte("x"))}, codes.InvalidArgument},
		{"nothing", nil, codes.InvalidArgument},
		{"two headers", []*daemonv1.WriteFileRequest{header("f.txt", 0), data([]byte("x")), header("g", 0)}, codes.InvalidArgument},
		{"bad mode", []*daemonv1.WriteFileRequest{header("f.txt", 0o4777)}, codes.InvalidArgument},
		{"oversized", []*daemonv1.WriteFileRequest{header("f.txt", 0), data(make([]byte, 600)), data(make([]byte, 600))}, codes.ResourceExhausted},
		{"escape", []*daemonv1.WriteFileRequest{header("../f.txt", 0)}, codes.PermissionDenied},
	} {
		t.Run(tc.name, func(t *testing.T) {
			stream, err := d.client.WriteFile(ctx)
			if err != nil {
				t.Fatal(err)
			}
			for _, m := range tc.msgs {
				if err := stream.Send(m); err != nil {
					break // the daemon ended the call; CloseAndRecv has its status
				}
			}
			_, err = stream.CloseAndRecv()
			if status.Code(err) != tc.code {
				t.Fatalf("WriteFile = %v; want %v", err, tc.code)
			}
			if got, _ := os.ReadFile(filepath.Join(d.dir, "f.txt")); string(got) != "original" {
				t.Fatalf("f.txt = %q after a refused write", got)
			}
			if !noTempFiles(d.dir) {
				t.Fatal("temporary file left behind")
			}
		})
	}
}

// TestWriteFileCancelled cancels an upload half-way: the old file stays and
// the temporary file goes.
func TestWriteFileCancelled(t *testing.T) {
	t.Parallel()
	d := start(t, config{files: map[string]string{"f.txt": "original"}})
	ctx, cancel := context.WithCancel(context.Background())
	stream, err := d.client.WriteFile(ctx)
	if err != nil {
		t.Fatal(err)
	}
	_ = stream.Send(&daemonv1.WriteFileRequest{Msg: &daemonv1.WriteFileRequest_Header{Header: &daemonv1.WriteFileHeader{Path: "f.txt"}}})
	_ = stream.Send(&daemonv1.WriteFileRequest{Msg: &daemonv1.WriteFileRequest_Data{Data: []byte(strings.Repeat("new", 1000))}})
	testenv.Eventually(t, 20*time.Second, func() bool { return !noTempFiles(d.dir) }, "the upload to start")
	cancel()
	testenv.Eventually(t, 20*time.Second, func() bool { return noTempFiles(d.dir) }, "the temporary file to go")
	if got, _ := os.ReadFile(filepath.Join(d.dir, "f.txt")); string(got) != "original" {
		t.Fatalf("f.txt = %q after a cancelled upload", got)
	}
}
