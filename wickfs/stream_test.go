package wickfs_test

import (
	"bytes"
	"context"
	"errors"
	"io"
	"strings"
	"testing"

	"github.com/wick-agent/wick/wickfs"
)

func TestUploadAndOpenFile(t *testing.T) {
	t.Parallel()
	fs, dir := newFS(t, nil, wickfs.WithMaxUploadBytes(8))
	ctx := context.Background()
	res, err := fs.Upload(ctx, "/workspace/d/f.bin", 0o600, strings.NewReader("12345678"))
	if err != nil || res.BytesWritten != 8 || res.Path != "/workspace/d/f.bin" {
		t.Fatalf("Upload = %+v, %v", res, err)
	}
	f, err := fs.OpenFile(ctx, "/workspace/d/f.bin")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if b, _ := io.ReadAll(f); string(b) != "12345678" || f.Size != 8 || f.Mode != 0o600 {
		t.Fatalf("OpenFile read %q size %d mode %v", b, f.Size, f.Mode)
	}
	// An upload past the limit leaves the old file and no temporary file.
	if _, err := fs.Upload(ctx, "/workspace/d/f.bin", 0, strings.NewReader("123456789")); !errors.Is(err, wickfs.ErrTooLarge) {
		t.Fatalf("oversized upload: %v", err)
	}
	if got := readHost(t, dir, "d/f.bin"); got != "12345678" {
		t.Fatalf("file after a refused upload: %q", got)
	}
	noTempFiles(t, dir)
}

func TestExecStream(t *testing.T) {
	t.Parallel()
	fs, _ := newFS(t, nil)
	var out, errb bytes.Buffer
	st, err := fs.ExecStream(context.Background(), "cat; echo oops >&2; exit 4", &out, &errb, wickfs.WithStdin([]byte("in\n")))
	if err != nil || out.String() != "in\n" || errb.String() != "oops\n" || st.ExitCode != 4 || st.TimedOut {
		t.Fatalf("ExecStream = %+v, %v; stdout %q stderr %q", st, err, out.String(), errb.String())
	}
	// A writer that fails ends the command, and its error is the answer.
	broken := errors.New("client went away")
	failing := writerFunc(func([]byte) (int, error) { return 0, broken })
	if _, err := fs.ExecStream(context.Background(), "yes", failing, io.Discard); !errors.Is(err, broken) {
		t.Fatalf("ExecStream with a failing writer: %v", err)
	}
}

type writerFunc func([]byte) (int, error)

func (f writerFunc) Write(b []byte) (int, error) { return f(b) }

func TestChunkReader(t *testing.T) {
	t.Parallel()
	chunks := [][]byte{[]byte("ab"), nil, []byte("cde")}
	r := wickfs.ChunkReader(func() ([]byte, error) {
		if len(chunks) == 0 {
			return nil, io.EOF
		}
		c := chunks[0]
		chunks = chunks[1:]
		return c, nil
	})
	if b, err := io.ReadAll(r); err != nil || string(b) != "abcde" {
		t.Fatalf("ReadAll = %q, %v", b, err)
	}
}
