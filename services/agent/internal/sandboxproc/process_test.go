package sandboxproc

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"
	"unicode/utf8"

	"google.golang.org/grpc"

	sandboxv1 "github.com/wick-agent/wick/gen/wick/sandbox/v1"
	"github.com/wick-agent/wick/services/agent/internal/loop"
)

// fakeSandbox runs one fake process: it records, with the time since the
// start, what the process was sent (its stdin's end, signals), and exits
// it at the step the test chooses.
type fakeSandbox struct {
	// exitOn is what ends the process: "eof", "SIGTERM", "SIGKILL" or ""
	// (only SIGKILL, which always does).
	exitOn string
	start  time.Time

	mu     sync.Mutex
	steps  []string
	events chan *sandboxv1.AttachProcessResponse
	exited bool
}

func (f *fakeSandbox) step(what string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.steps = append(f.steps, fmt.Sprintf("%s@%s", what, time.Since(f.start)))
	if !f.exited && (what == f.exitOn || what == "SIGKILL") {
		f.exited = true
		f.events <- &sandboxv1.AttachProcessResponse{Event: &sandboxv1.AttachProcessResponse_Exit{Exit: &sandboxv1.ExitStatus{ExitCode: 0}}}
	}
}

func (f *fakeSandbox) EnsureSandbox(context.Context, *sandboxv1.EnsureSandboxRequest, ...grpc.CallOption) (*sandboxv1.EnsureSandboxResponse, error) {
	return &sandboxv1.EnsureSandboxResponse{Sandbox: &sandboxv1.Sandbox{}}, nil
}

func (f *fakeSandbox) AttachProcess(ctx context.Context, _ ...grpc.CallOption) (grpc.BidiStreamingClient[sandboxv1.AttachProcessRequest, sandboxv1.AttachProcessResponse], error) {
	f.events <- &sandboxv1.AttachProcessResponse{Event: &sandboxv1.AttachProcessResponse_Started{Started: &sandboxv1.ProcessInfo{Id: "p1"}}}
	return &fakeStream{f: f, ctx: ctx}, nil
}

func (f *fakeSandbox) SignalProcess(_ context.Context, in *sandboxv1.SignalProcessRequest, _ ...grpc.CallOption) (*sandboxv1.SignalProcessResponse, error) {
	f.step(strings.TrimPrefix(in.GetSignal().String(), "PROCESS_SIGNAL_"))
	return &sandboxv1.SignalProcessResponse{}, nil
}

// fakeStream is the process's AttachProcess stream.
type fakeStream struct {
	grpc.ClientStream
	f   *fakeSandbox
	ctx context.Context
}

func (s *fakeStream) Send(m *sandboxv1.AttachProcessRequest) error {
	if m.GetCloseStdin() {
		s.f.step("eof")
	}
	return nil
}

func (s *fakeStream) Recv() (*sandboxv1.AttachProcessResponse, error) {
	select {
	case ev := <-s.f.events:
		return ev, nil
	case <-s.ctx.Done():
		return nil, s.ctx.Err()
	}
}

func (s *fakeStream) CloseSend() error { return nil }

func start(t *testing.T, sb *fakeSandbox) *Process {
	t.Helper()
	p, err := Start(t.Context(), context.Background(), sb, "a1", &loop.BackendCfg{Type: "local"}, Command{Argv: []string{"agent"}}, 1<<20)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// TestStopOrder: Stop closes stdin, sends SIGTERM grace later if the
// process is still there, then SIGKILL grace after that; it stops at the
// first step the process exits at. A grace of 0 kills at once.
func TestStopOrder(t *testing.T) {
	t.Parallel()
	const grace = 5 * time.Second
	cases := []struct {
		name   string
		exitOn string
		grace  time.Duration
		want   []string
	}{
		{"exits at the end of stdin", "eof", grace, []string{"eof@0s"}},
		{"exits on SIGTERM", "SIGTERM", grace, []string{"eof@0s", "SIGTERM@5s"}},
		{"ignores SIGTERM", "", grace, []string{"eof@0s", "SIGTERM@5s", "SIGKILL@10s"}},
		{"no grace", "eof", 0, []string{"eof@0s", "SIGKILL@0s"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			synctest.Test(t, func(t *testing.T) {
				sb := &fakeSandbox{exitOn: tc.exitOn, events: make(chan *sandboxv1.AttachProcessResponse, 4)}
				p := start(t, sb)
				sb.start = time.Now()
				p.Stop(tc.grace)
				synctest.Wait()
				if !slices.Equal(sb.steps, tc.want) {
					t.Fatalf("steps %v, want %v", sb.steps, tc.want)
				}
				select {
				case <-p.Done():
				default:
					t.Fatal("Stop returned before the process's stream ended")
				}
				if _, err := p.Read(make([]byte, 1)); err == nil {
					t.Fatal("stdout still open after Stop")
				}
			})
		})
	}
}

// TestStderrTail: the tail is the last StderrTailBytes of standard error,
// whatever the chunks, starting at a character, and it is in the error
// that ends stdout when the process exits.
func TestStderrTail(t *testing.T) {
	t.Parallel()
	const last = "\nthe last words.\n"
	cases := []struct {
		name   string
		chunks []string
		want   string
	}{
		{"short", []string{"one\n", "two\n"}, "one\ntwo"},
		// An odd number of bytes before the cut: it falls inside an "é".
		{"cut inside a character", []string{"first line\n", strings.Repeat("é", 3000), strings.Repeat("é", 3000) + last},
			strings.Repeat("é", (StderrTailBytes-len(last))/2) + strings.TrimSuffix(last, "\n")},
		{"one big chunk", []string{"first line\n" + strings.Repeat("é", 6000) + last},
			strings.Repeat("é", (StderrTailBytes-len(last))/2) + strings.TrimSuffix(last, "\n")},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			sb := &fakeSandbox{events: make(chan *sandboxv1.AttachProcessResponse, len(tc.chunks)+2)}
			p := start(t, sb)
			t.Cleanup(func() { p.Stop(0) })
			for _, c := range tc.chunks {
				sb.events <- &sandboxv1.AttachProcessResponse{Event: &sandboxv1.AttachProcessResponse_Stderr{Stderr: []byte(c)}}
			}
			sb.events <- &sandboxv1.AttachProcessResponse{Event: &sandboxv1.AttachProcessResponse_Exit{Exit: &sandboxv1.ExitStatus{ExitCode: 3}}}
			_, err := io.ReadAll(p)
			if err == nil || errors.Is(err, io.EOF) || !strings.Contains(err.Error(), "exit code 3") || !strings.HasSuffix(err.Error(), tc.want) {
				t.Fatalf("stdout ended with %d bytes %.80q, want the exit and the tail (%d bytes)", len(err.Error()), err, len(tc.want))
			}
			got := p.StderrTail()
			if got != tc.want || len(got) > StderrTailBytes || !utf8.ValidString(got) {
				t.Fatalf("tail (%d bytes) %.80q..., want (%d bytes) %.80q...", len(got), got, len(tc.want), tc.want)
			}
		})
	}
}
