package server_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/durationpb"

	daemonv1 "github.com/wick-agent/wick/gen/wick/daemon/v1"
	"github.com/wick-agent/wick/platform/testenv"
)

func TestExecConcurrent(t *testing.T) {
	t.Parallel()
	d := start(t, config{})
	const n = 64
	var wg sync.WaitGroup
	errs := make(chan error, n)
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			res, err := d.fs.Exec(testCtx(t), fmt.Sprintf("echo out%d; echo err%d >&2; exit %d", i, i, i%7))
			switch {
			case err != nil:
				errs <- err
			case res.Stdout != fmt.Sprintf("out%d\n", i) || res.Stderr != fmt.Sprintf("err%d\n", i) || res.ExitCode != i%7:
				errs <- fmt.Errorf("exec %d = %+v", i, res)
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}

// TestExecStreamsAndCancel reads output while the command still runs, then
// cancels the call and checks the command's whole process group is gone.
func TestExecStreamsAndCancel(t *testing.T) {
	t.Parallel()
	d := start(t, config{})
	ctx, cancel := context.WithCancel(testCtx(t))
	defer cancel()
	stream, err := d.client.Exec(ctx, &daemonv1.ExecRequest{Command: "echo $$; sleep 1000 & sleep 1000 & wait"})
	if err != nil {
		t.Fatal(err)
	}
	msg, err := stream.Recv()
	if err != nil {
		t.Fatal(err)
	}
	pgid, err := strconv.Atoi(strings.TrimSpace(string(msg.GetStdout())))
	if err != nil {
		t.Fatalf("first message %v is not the shell's pid", msg)
	}
	testenv.Eventually(t, 20*time.Second, func() bool { return groupAlive(pgid) }, "the background sleeps to start")
	cancel()
	if _, err := stream.Recv(); status.Code(err) != codes.Canceled {
		t.Fatalf("Recv after cancel = %v; want Canceled", err)
	}
	testenv.Eventually(t, 20*time.Second, func() bool { return !groupAlive(pgid) }, "the process group to die")
}

func TestExecRequest(t *testing.T) {
	t.Parallel()
	d := start(t, config{files: map[string]string{"sub/": ""}})
	for _, tc := range []struct {
		name   string
		req    *daemonv1.ExecRequest
		stdout string
		exit   *daemonv1.ExitStatus
		code   codes.Code
	}{
		{"stdin", &daemonv1.ExecRequest{Command: "cat; echo", Stdin: []byte("piped")}, "piped\n", &daemonv1.ExitStatus{}, codes.OK},
		{"workdir", &daemonv1.ExecRequest{Command: "basename $(pwd)", Workdir: "/workspace/sub"}, "sub\n", &daemonv1.ExitStatus{}, codes.OK},
		{"timeout", &daemonv1.ExecRequest{Command: "echo a; sleep 100", Timeout: durationpb.New(200 * time.Millisecond)}, "a\n", &daemonv1.ExitStatus{ExitCode: -1, TimedOut: true}, codes.OK},
		{"cap", &daemonv1.ExecRequest{Command: "head -c 10000000 /dev/zero | tr '\\0' x", MaxOutputBytes: 1000}, strings.Repeat("x", 1000), &daemonv1.ExitStatus{Truncated: true}, codes.OK},
		{"negative timeout", &daemonv1.ExecRequest{Command: "true", Timeout: durationpb.New(-time.Second)}, "", nil, codes.InvalidArgument},
		{"empty", &daemonv1.ExecRequest{}, "", nil, codes.InvalidArgument},
		{"escape workdir", &daemonv1.ExecRequest{Command: "true", Workdir: "/"}, "", nil, codes.PermissionDenied},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			stream, err := d.client.Exec(testCtx(t), tc.req)
			if err != nil {
				t.Fatal(err)
			}
			var out strings.Builder
			var exit *daemonv1.ExitStatus
			for {
				msg, err := stream.Recv()
				if errors.Is(err, io.EOF) {
					break
				}
				if err != nil {
					if status.Code(err) != tc.code {
						t.Fatalf("error %v; want %v", err, tc.code)
					}
					return
				}
				if exit != nil {
					t.Fatal("message after the exit status")
				}
				out.Write(msg.GetStdout())
				exit = msg.GetExit()
			}
			if tc.code != codes.OK {
				t.Fatalf("no error; want %v", tc.code)
			}
			if exit == nil {
				t.Fatal("stream ended without an exit status")
			}
			if out.String() != tc.stdout || exit.GetExitCode() != tc.exit.GetExitCode() || exit.GetTimedOut() != tc.exit.GetTimedOut() || exit.GetTruncated() != tc.exit.GetTruncated() {
				t.Fatalf("stdout %q exit %v; want %q %v", out.String(), exit, tc.stdout, tc.exit)
			}
		})
	}
}
