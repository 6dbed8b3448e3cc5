package server_test

import (
	"errors"
	"io"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/wick-agent/wick/daemon/server"
	daemonv1 "github.com/wick-agent/wick/gen/wick/daemon/v1"
	"github.com/wick-agent/wick/platform/testenv"
)

type term = grpc.BidiStreamingClient[daemonv1.TerminalRequest, daemonv1.TerminalResponse]

// readUntil reads terminal output until it contains every one of wants (in
// any order, since one message may carry several).
func readUntil(t *testing.T, s term, wants ...string) string {
	t.Helper()
	var out strings.Builder
	has := func() bool {
		for _, w := range wants {
			if !strings.Contains(out.String(), w) {
				return false
			}
		}
		return true
	}
	for !has() {
		msg, err := s.Recv()
		if err != nil {
			t.Fatalf("terminal ended (%v) before %q; output so far %q", err, wants, out.String())
		}
		if msg.GetExit() != nil {
			t.Fatalf("shell exited before %q; output %q", wants, out.String())
		}
		out.Write(msg.GetOutput())
	}
	return out.String()
}

func TestTerminalResize(t *testing.T) {
	t.Parallel()
	d := start(t, config{files: map[string]string{"sub/": ""}})
	s, err := d.client.Terminal(testCtx(t))
	if err != nil {
		t.Fatal(err)
	}
	send := func(r *daemonv1.TerminalRequest) {
		if err := s.Send(r); err != nil {
			t.Fatal(err)
		}
	}
	send(&daemonv1.TerminalRequest{Msg: &daemonv1.TerminalRequest_Start{Start: &daemonv1.TerminalStart{
		Size: &daemonv1.TerminalSize{Rows: 24, Cols: 80}, Workdir: "sub", Env: map[string]string{"PS1": "$ "}}}})
	send(&daemonv1.TerminalRequest{Msg: &daemonv1.TerminalRequest_Input{Input: []byte("stty size; echo TERM=$TERM; basename $(pwd)\n")}})
	readUntil(t, s, "24 80", "TERM="+server.DefaultTerm, "\nsub")
	send(&daemonv1.TerminalRequest{Msg: &daemonv1.TerminalRequest_Resize{Resize: &daemonv1.TerminalSize{Rows: 40, Cols: 132}}})
	send(&daemonv1.TerminalRequest{Msg: &daemonv1.TerminalRequest_Input{Input: []byte("stty size\n")}})
	readUntil(t, s, "40 132")
	send(&daemonv1.TerminalRequest{Msg: &daemonv1.TerminalRequest_Input{Input: []byte("exit 3\n")}})
	for {
		msg, err := s.Recv()
		if err != nil {
			t.Fatalf("stream ended without an exit status: %v", err)
		}
		if e := msg.GetExit(); e != nil {
			if e.GetExitCode() != 3 {
				t.Fatalf("exit code %d; want 3", e.GetExitCode())
			}
			break
		}
	}
	if _, err := s.Recv(); !errors.Is(err, io.EOF) {
		t.Fatalf("after exit: %v; want EOF", err)
	}
}

func TestTerminalClientClose(t *testing.T) {
	t.Parallel()
	d := start(t, config{})
	s, err := d.client.Terminal(testCtx(t))
	if err != nil {
		t.Fatal(err)
	}
	_ = s.Send(&daemonv1.TerminalRequest{Msg: &daemonv1.TerminalRequest_Start{Start: &daemonv1.TerminalStart{}}})
	_ = s.Send(&daemonv1.TerminalRequest{Msg: &daemonv1.TerminalRequest_Input{Input: []byte("echo $$; echo RE\"\"ADY\n")}})
	out := readUntil(t, s, "READY\r\n")
	m := regexp.MustCompile(`(\d+)\r\nREADY`).FindStringSubmatch(out)
	if m == nil {
		t.Fatalf("no pid in %q", out)
	}
	if err := s.CloseSend(); err != nil {
		t.Fatal(err)
	}
	for {
		if _, err := s.Recv(); err != nil {
			if !errors.Is(err, io.EOF) {
				t.Fatalf("end after CloseSend = %v; want EOF", err)
			}
			break
		}
	}
	pid, _ := strconv.Atoi(m[1])
	testenv.Eventually(t, 20*time.Second, func() bool { return !groupAlive(pid) }, "the shell's session to die")
}

func TestTerminalBadStart(t *testing.T) {
	t.Parallel()
	d := start(t, config{})
	for _, tc := range []struct {
		name string
		req  *daemonv1.TerminalRequest
	}{
		{"input first", &daemonv1.TerminalRequest{Msg: &daemonv1.TerminalRequest_Input{Input: []byte("x")}}},
		{"huge size", &daemonv1.TerminalRequest{Msg: &daemonv1.TerminalRequest_Start{Start: &daemonv1.TerminalStart{Size: &daemonv1.TerminalSize{Rows: 1 << 20}}}}},
		{"escape workdir", &daemonv1.TerminalRequest{Msg: &daemonv1.TerminalRequest_Start{Start: &daemonv1.TerminalStart{Workdir: "/etc"}}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			s, err := d.client.Terminal(testCtx(t))
			if err != nil {
				t.Fatal(err)
			}
			_ = s.Send(tc.req)
			_, err = s.Recv()
			if c := status.Code(err); c != codes.InvalidArgument && c != codes.PermissionDenied {
				t.Fatalf("Recv = %v; want a refusal", err)
			}
		})
	}
}
