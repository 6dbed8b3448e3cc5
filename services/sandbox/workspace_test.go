package sandbox

import (
	"bytes"
	"context"
	"errors"
	"io"
	"io/fs"
	"strings"
	"testing"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/wick-agent/wick/wickfs"
)

// scriptedFS is a workspaceFS whose answers a test sets: every call is
// counted, answers err when set, and the streams first move what the test
// says (output written, bytes of the upload read) before failing.
type scriptedFS struct {
	workspaceFS // calls a test does not script panic on the nil interface
	name        string
	err         error
	output      string // ExecStream writes this to stdout before answering
	readN       int    // Upload reads this many bytes before answering
	calls       int
}

func (f *scriptedFS) Ls(context.Context, string) ([]wickfs.DirEntry, error) {
	f.calls++
	if f.err != nil {
		return nil, f.err
	}
	return []wickfs.DirEntry{{Name: f.name}}, nil
}

func (f *scriptedFS) OpenFile(context.Context, string) (*wickfs.FileReader, error) {
	f.calls++
	if f.err != nil {
		return nil, f.err
	}
	return &wickfs.FileReader{ReadCloser: io.NopCloser(strings.NewReader(f.name)), Size: int64(len(f.name))}, nil
}

func (f *scriptedFS) Upload(_ context.Context, path string, _ fs.FileMode, r io.Reader) (*wickfs.WriteResult, error) {
	f.calls++
	if f.readN > 0 {
		if _, err := io.ReadFull(r, make([]byte, f.readN)); err != nil {
			return nil, err
		}
	}
	if f.err != nil {
		return nil, f.err
	}
	data, err := io.ReadAll(r)
	if err != nil {
		return nil, err
	}
	return &wickfs.WriteResult{Path: f.name + ":" + path, BytesWritten: len(data)}, nil
}

func (f *scriptedFS) ExecStream(_ context.Context, _ string, stdout, _ io.Writer, _ ...wickfs.ExecOption) (*wickfs.ExitStatus, error) {
	f.calls++
	if f.output != "" {
		if _, err := io.WriteString(stdout, f.output); err != nil {
			return nil, err
		}
	}
	if f.err != nil {
		return nil, f.err
	}
	return &wickfs.ExitStatus{}, nil
}

func (f *scriptedFS) Terminal(context.Context, wickfs.TerminalOptions, func() (wickfs.TerminalInput, error), func([]byte) error) (*wickfs.ExitStatus, error) {
	f.calls++
	if f.err != nil {
		return nil, f.err
	}
	return &wickfs.ExitStatus{ExitCode: len(f.name)}, nil
}

var errDaemonDown = status.Error(codes.Unavailable, "connection refused")

// newTestWorkspace wires a daemon and a fallback the way Service.workspace
// does and records the ops that took the fallback.
func newTestWorkspace(daemonErr error) (*workspace, *scriptedFS, *scriptedFS, *[]string) {
	daemon := &scriptedFS{name: "daemon", err: daemonErr}
	exec := &scriptedFS{name: "exec"}
	var downs []string
	w := &workspace{
		primary:  daemon,
		fallback: func() workspaceFS { return exec },
		down:     func(op string) { downs = append(downs, op) },
	}
	return w, daemon, exec, &downs
}

func TestWorkspaceFallsBackWhenTheDaemonDoesNotAnswer(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	calls := []struct {
		op   string
		call func(w *workspace) (string, error)
	}{
		{"ls", func(w *workspace) (string, error) {
			e, err := w.Ls(ctx, "/workspace")
			if err != nil {
				return "", err
			}
			return e[0].Name, nil
		}},
		{"read", func(w *workspace) (string, error) {
			f, err := w.OpenFile(ctx, "/workspace/f")
			if err != nil {
				return "", err
			}
			defer f.Close()
			b, err := io.ReadAll(f)
			return string(b), err
		}},
		{"write", func(w *workspace) (string, error) {
			r, err := w.Upload(ctx, "f", 0, strings.NewReader("data"))
			if err != nil {
				return "", err
			}
			if r.BytesWritten != 4 {
				return "", errors.New("the fallback did not get the whole upload")
			}
			return strings.TrimSuffix(r.Path, ":f"), nil
		}},
		{"exec", func(w *workspace) (string, error) {
			_, err := w.ExecStream(ctx, "true", io.Discard, io.Discard)
			if err != nil {
				return "", err
			}
			return "exec", nil
		}},
	}
	for _, tc := range calls {
		t.Run(tc.op, func(t *testing.T) {
			t.Parallel()
			w, daemon, exec, downs := newTestWorkspace(errDaemonDown)
			got, err := tc.call(w)
			if err != nil {
				t.Fatalf("%s: %v", tc.op, err)
			}
			if got != "exec" || daemon.calls != 1 || exec.calls != 1 {
				t.Fatalf("%s answered by %q (daemon %d calls, exec %d); want the fallback after one daemon call", tc.op, got, daemon.calls, exec.calls)
			}
			if len(*downs) != 1 || (*downs)[0] != tc.op {
				t.Fatalf("fallbacks recorded %v; want [%s]", *downs, tc.op)
			}
		})
	}
}

func TestWorkspacePassesOtherErrorsThrough(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	for _, daemonErr := range []error{
		wickfs.NewError(wickfs.ErrNotFound, "ls /workspace/x: not found"),
		status.Error(codes.PermissionDenied, "outside the workspace"),
		status.Error(codes.Internal, "boom"),
		context.Canceled,
	} {
		w, _, exec, downs := newTestWorkspace(daemonErr)
		if _, err := w.Ls(ctx, "/workspace/x"); !errors.Is(err, daemonErr) {
			t.Errorf("Ls with daemon error %v = %v; want it unchanged", daemonErr, err)
		}
		if _, err := w.Upload(ctx, "f", 0, strings.NewReader("x")); !errors.Is(err, daemonErr) {
			t.Errorf("Upload with daemon error %v = %v; want it unchanged", daemonErr, err)
		}
		if exec.calls != 0 || len(*downs) != 0 {
			t.Errorf("daemon error %v took the fallback", daemonErr)
		}
	}
}

func TestWorkspaceDoesNotSwitchMidStream(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	t.Run("exec with output", func(t *testing.T) {
		t.Parallel()
		w, daemon, exec, downs := newTestWorkspace(errDaemonDown)
		daemon.output = "half of it"
		var out bytes.Buffer
		_, err := w.ExecStream(ctx, "make", &out, io.Discard)
		if status.Code(err) != codes.Unavailable {
			t.Fatalf("err = %v; want the daemon's Unavailable", err)
		}
		if exec.calls != 0 || len(*downs) != 0 || out.String() != "half of it" {
			t.Fatalf("a command whose output went out ran again (exec calls %d, output %q)", exec.calls, out.String())
		}
	})
	t.Run("upload past the replay window", func(t *testing.T) {
		t.Parallel()
		w, daemon, exec, downs := newTestWorkspace(errDaemonDown)
		daemon.readN = uploadReplayBytes + 1
		_, err := w.Upload(ctx, "f", 0, bytes.NewReader(make([]byte, uploadReplayBytes+10)))
		if status.Code(err) != codes.Unavailable {
			t.Fatalf("err = %v; want the daemon's Unavailable", err)
		}
		if exec.calls != 0 || len(*downs) != 0 {
			t.Fatal("an upload that can no longer be replayed went to the fallback")
		}
	})
	t.Run("upload within the replay window", func(t *testing.T) {
		t.Parallel()
		w, daemon, exec, downs := newTestWorkspace(errDaemonDown)
		daemon.readN = 2
		r, err := w.Upload(ctx, "f", 0, strings.NewReader("data"))
		if err != nil || r.BytesWritten != 4 || exec.calls != 1 || len(*downs) != 1 {
			t.Fatalf("Upload = %+v, %v; want the whole upload replayed on the fallback", r, err)
		}
	})
}

func TestWorkspaceWithoutFallback(t *testing.T) {
	t.Parallel()
	local := &scriptedFS{name: "local", err: errDaemonDown}
	w := &workspace{primary: local}
	if _, err := w.Ls(context.Background(), "/"); status.Code(err) != codes.Unavailable || local.calls != 1 {
		t.Fatalf("Ls = %v after %d calls; want the error of the only file system", err, local.calls)
	}
}

func TestWorkspaceTerminalProbesFirst(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	for _, tc := range []struct {
		name     string
		probeErr error
		want     int // ExitCode is the length of the answering file system's name
		downs    int
	}{
		{"daemon answers", nil, len("daemon"), 0},
		{"daemon silent", errDaemonDown, len("exec"), 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			w, _, _, downs := newTestWorkspace(nil)
			w.probe = func(context.Context) error { return tc.probeErr }
			exit, err := w.Terminal(ctx, wickfs.TerminalOptions{}, nil, nil)
			if err != nil || exit.ExitCode != tc.want || len(*downs) != tc.downs {
				t.Fatalf("Terminal = %+v, %v, fallbacks %v", exit, err, *downs)
			}
		})
	}
}
