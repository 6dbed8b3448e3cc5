package sandbox

import (
	"bytes"
	"context"
	"os"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	sandboxv1 "github.com/wick-agent/wick/gen/wick/sandbox/v1"
	"github.com/wick-agent/wick/services/sandbox/internal/dockerbox"
)

func TestLifecycle(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	ctx, cancel := context.WithTimeout(as("alice"), 2*time.Minute)
	defer cancel()

	sb := h.ensure(ctx, "coder", nil)
	if sb.GetState() != stateRunning || sb.GetTransport() != transportDaemon || sb.GetContainerId() == "" {
		t.Fatalf("ensure: %+v", sb)
	}
	if sb.GetDaemonVersion() == "" || sb.GetUserId() != "alice" || sb.GetAgentId() != "coder" {
		t.Fatalf("ensure: %+v", sb)
	}
	again := h.ensure(ctx, "coder", nil)
	if again.GetContainerId() != sb.GetContainerId() {
		t.Fatalf("second ensure made a new container: %s vs %s", again.GetContainerId(), sb.GetContainerId())
	}
	in, err := h.inspect(sb.GetContainerName())
	if err != nil {
		t.Fatal(err)
	}
	for k, want := range map[string]string{dockerbox.LabelManager: h.manager, dockerbox.LabelUser: "alice", dockerbox.LabelAgent: "coder"} {
		if got := in.Config.Labels[k]; got != want {
			t.Errorf("label %s = %q, want %q", k, got, want)
		}
	}

	if out := h.mustExec(ctx, "coder", "echo hello; id -u"); out != "hello\n1000\n" {
		t.Fatalf("exec output %q", out)
	}
	if r, err := h.exec(ctx, "coder", "echo oops >&2; exit 7"); err != nil || r.exit.GetExitCode() != 7 || r.stderr != "oops\n" {
		t.Fatalf("exec exit: %+v %v", r, err)
	}
	if _, err := writeFile(ctx, h.cli, "coder", "/workspace/src/app.py", []byte("print('hi')\n# TODO: more\n")); err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	if err := readFile(ctx, h.cli, "coder", "/workspace/src/app.py", &buf); err != nil || buf.String() != "print('hi')\n# TODO: more\n" {
		t.Fatalf("read: %q %v", buf.String(), err)
	}
	ls, err := h.cli.Ls(ctx, &sandboxv1.LsRequest{AgentId: "coder", Path: "/workspace/src"})
	if err != nil || len(ls.GetEntries()) != 1 || ls.GetEntries()[0].GetName() != "app.py" {
		t.Fatalf("ls: %v %v", ls, err)
	}
	ed, err := h.cli.EditFile(ctx, &sandboxv1.EditFileRequest{AgentId: "coder", Path: "/workspace/src/app.py", OldText: "hi", NewText: "bye"})
	if err != nil || ed.GetReplacements() != 1 {
		t.Fatalf("edit: %v %v", ed, err)
	}
	gr, err := h.cli.Grep(ctx, &sandboxv1.GrepRequest{AgentId: "coder", Pattern: "TODO"})
	if err != nil || len(gr.GetMatches()) != 1 || gr.GetMatches()[0].GetLine() != 2 {
		t.Fatalf("grep: %v %v", gr, err)
	}
	gl, err := h.cli.Glob(ctx, &sandboxv1.GlobRequest{AgentId: "coder", Pattern: "*.py"})
	if err != nil || len(gl.GetFiles()) != 1 || gl.GetFiles()[0] != "/workspace/src/app.py" {
		t.Fatalf("glob: %v %v", gl, err)
	}
	if _, err := h.cli.Ls(ctx, &sandboxv1.LsRequest{AgentId: "coder", Path: "/etc"}); status.Code(err) != codes.PermissionDenied {
		t.Fatalf("ls outside the workspace: %v", err)
	}
	list, err := h.cli.ListSandboxes(ctx, &sandboxv1.ListSandboxesRequest{})
	if err != nil || len(list.GetSandboxes()) != 1 {
		t.Fatalf("list: %v %v", list, err)
	}

	// Restart keeps the workspace.
	rs, err := h.cli.RestartSandbox(ctx, &sandboxv1.RestartSandboxRequest{AgentId: "coder"})
	if err != nil {
		t.Fatal(err)
	}
	if rs.GetSandbox().GetContainerId() == sb.GetContainerId() || rs.GetSandbox().GetTransport() != transportDaemon {
		t.Fatalf("restart: %+v", rs.GetSandbox())
	}
	if out := h.mustExec(ctx, "coder", "cat src/app.py"); !strings.Contains(out, "print('bye')") {
		t.Fatalf("file after restart: %q", out)
	}

	// Stop removes the container and keeps the volume.
	st, err := h.cli.StopSandbox(ctx, &sandboxv1.StopSandboxRequest{AgentId: "coder"})
	if err != nil || st.GetSandbox().GetState() != stateStopped {
		t.Fatalf("stop: %v %v", st, err)
	}
	if _, err := h.inspect(sb.GetContainerName()); !dockerbox.IsNotFound(err) {
		t.Fatalf("container after stop: %v", err)
	}
	key := sandboxKey(h.manager, "alice", "coder")
	if _, err := h.docker.VolumeInspect(ctx, "wick-ws-"+key); err != nil {
		t.Fatalf("volume after stop: %v", err)
	}
	g, err := h.cli.GetSandbox(ctx, &sandboxv1.GetSandboxRequest{AgentId: "coder"})
	if err != nil || g.GetSandbox().GetState() != stateStopped {
		t.Fatalf("get stopped: %v %v", g, err)
	}
	// Calls on a stopped sandbox fail until it is ensured again, on the same workspace.
	if _, err := h.exec(ctx, "coder", "true"); status.Code(err) != codes.FailedPrecondition {
		t.Fatalf("exec on a stopped sandbox: %v", err)
	}
	h.ensure(ctx, "coder", nil)
	if out := h.mustExec(ctx, "coder", "cat src/app.py"); !strings.Contains(out, "print('bye')") {
		t.Fatalf("file after stop and start: %q", out)
	}

	// Delete removes container, volume and host state.
	if _, err := h.cli.DeleteSandbox(ctx, &sandboxv1.DeleteSandboxRequest{AgentId: "coder"}); err != nil {
		t.Fatal(err)
	}
	if _, err := h.inspect(sb.GetContainerName()); !dockerbox.IsNotFound(err) {
		t.Fatalf("container after delete: %v", err)
	}
	if _, err := h.docker.VolumeInspect(ctx, "wick-ws-"+key); !dockerbox.IsNotFound(err) {
		t.Fatalf("volume after delete: %v", err)
	}
	if _, err := os.Stat(h.svc.boxDir(key)); !os.IsNotExist(err) {
		t.Fatalf("socket dir after delete: %v", err)
	}
	if _, err := h.cli.GetSandbox(ctx, &sandboxv1.GetSandboxRequest{AgentId: "coder"}); status.Code(err) != codes.NotFound {
		t.Fatalf("get after delete: %v", err)
	}
}
