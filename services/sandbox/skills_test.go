package sandbox

import (
	"bytes"
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	sandboxv1 "github.com/wick-agent/wick/gen/wick/sandbox/v1"
	"github.com/wick-agent/wick/platform/backend"
	"github.com/wick-agent/wick/skills"
)

const opsSkill = "---\nname: ops-check\ndescription: An operator's skill.\n---\nRun run.sh.\n"

// operatorSkills is an operator's folder with one skill, ops-check.
func operatorSkills(t *testing.T) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "ops")
	if err := os.MkdirAll(filepath.Join(dir, "ops-check"), 0o755); err != nil {
		t.Fatal(err)
	}
	for name, content := range map[string]string{"SKILL.md": opsSkill, "run.sh": "#!/bin/sh\necho ops-ok\n"} {
		if err := os.WriteFile(filepath.Join(dir, "ops-check", name), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// checkSkillsReadOnly: the library is at /workspace/skills, readable and
// runnable, and neither a command nor the file API can change it; the
// workspace around it stays writable.
func checkSkillsReadOnly(ctx context.Context, t *testing.T, cli sandboxv1.SandboxServiceClient, agent string, wantErr string) {
	t.Helper()
	var got bytes.Buffer
	if err := readFile(ctx, cli, agent, "/workspace/skills/ops-check/SKILL.md", &got); err != nil || got.String() != opsSkill {
		t.Fatalf("read SKILL.md: %q %v", got.String(), err)
	}
	r, err := execOn(ctx, cli, &sandboxv1.ExecRequest{AgentId: agent, Command: "ls skills; sh skills/ops-check/run.sh"})
	if err != nil || r.exit.GetExitCode() != 0 || !strings.Contains(r.stdout, "ops-check\n") || !strings.HasSuffix(r.stdout, "ops-ok\n") {
		t.Fatalf("ls and run: %+v %v", r, err)
	}
	builtin, err := skills.Names(skills.Library())
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range builtin {
		if !strings.Contains(r.stdout, n+"\n") {
			t.Errorf("built-in skill %s missing from %q", n, r.stdout)
		}
	}
	for _, cmd := range []string{"echo x > skills/ops-check/SKILL.md", "touch skills/new", "rm skills/ops-check/run.sh", "mkdir skills/d"} {
		r, err := execOn(ctx, cli, &sandboxv1.ExecRequest{AgentId: agent, Command: cmd})
		if err != nil {
			t.Fatal(err)
		}
		if r.exit.GetExitCode() == 0 || !strings.Contains(r.stderr, wantErr) {
			t.Errorf("%q: exit %d, stderr %q; want a failure with %q", cmd, r.exit.GetExitCode(), r.stderr, wantErr)
		}
	}
	for _, p := range []string{"/workspace/skills/ops-check/SKILL.md", "/workspace/skills/new.md"} {
		if _, err := writeFile(ctx, cli, agent, p, []byte("changed")); err == nil {
			t.Errorf("file API wrote %s", p)
		}
	}
	got.Reset()
	if err := readFile(ctx, cli, agent, "/workspace/skills/ops-check/SKILL.md", &got); err != nil || got.String() != opsSkill {
		t.Fatalf("SKILL.md after the writes: %q %v", got.String(), err)
	}
	if _, err := writeFile(ctx, cli, agent, "/workspace/own.txt", []byte("mine")); err != nil {
		t.Fatalf("the workspace beside the library: %v", err)
	}
}

// TestSkillsDocker: every Docker sandbox sees the library read-only,
// whichever way its container was made: created with a bind mount, claimed
// from the warm pool, or, on a remote engine, with a root-owned copy.
func TestSkillsDocker(t *testing.T) {
	t.Parallel()
	const remote = "unix:///var/run/docker.sock"
	tests := []struct {
		name    string
		cfg     func(*Config)
		spec    *sandboxv1.SandboxSpec
		wantErr string
	}{
		{"bind mount", func(*Config) {}, nil, "Read-only file system"},
		{"warm pool", func(c *Config) { c.WarmPool = 1 }, nil, "Read-only file system"},
		// The local engine named by address stands in for a remote one.
		{"remote copy", func(c *Config) { c.AllowedDockerHosts = []string{remote} }, &sandboxv1.SandboxSpec{DockerHost: remote}, "Permission denied"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			ops := operatorSkills(t)
			h := newHarness(t, func(c *Config) {
				c.BuiltinSkills, c.SkillsDirs = true, []string{ops}
				tc.cfg(c)
			})
			ctx, cancel := context.WithTimeout(as("alice"), 3*time.Minute)
			defer cancel()
			var warmID string
			if h.cfg.WarmPool > 0 {
				warmID = h.waitWarm(1).id
			}
			sb := h.ensure(ctx, "sk", tc.spec)
			if warmID != "" && sb.GetContainerId() != warmID {
				t.Fatalf("sandbox %s did not take warm container %s", sb.GetContainerId(), warmID)
			}
			checkSkillsReadOnly(ctx, t, h.cli, "sk", tc.wantErr)
			// The library's mount point is no file of the workspace's
			// owner: the sandbox cannot remove it either.
			if r, err := h.exec(ctx, "sk", "rmdir skills || rm -rf skills"); err != nil || r.exit.GetExitCode() == 0 {
				t.Errorf("removing skills: %+v %v", r, err)
			}
			if out := h.mustExec(ctx, "sk", "cat own.txt; ls skills/ops-check"); out != "mineSKILL.md\nrun.sh\n" {
				t.Errorf("workspace and library: %q", out)
			}
		})
	}
}

// TestSkillsLocal: a local sandbox sees the library read-only at
// /workspace/skills, bind-mounted where the service can mount and copied
// with read-only modes where it cannot; the copy is made anew at each
// start, and a skills folder of the sandbox's own is never overwritten.
func TestSkillsLocal(t *testing.T) {
	t.Parallel()
	noMount := withSkillsProbe(func(string, string) error { return errors.New("no mounts here") })
	t.Run("bind mount", func(t *testing.T) {
		t.Parallel()
		if err := probeBind("/", t.TempDir()); err != nil {
			t.Skipf("this host cannot bind-mount: %v", err)
		}
		svc, cli := newLocal(t, Config{AllowLocal: true, BuiltinSkills: true, SkillsDirs: []string{operatorSkills(t)}})
		if !svc.skillsBind {
			t.Fatal("the service copies although it can bind-mount")
		}
		ctx, cancel := context.WithTimeout(as("alice"), time.Minute)
		defer cancel()
		if _, err := cli.EnsureSandbox(ctx, &sandboxv1.EnsureSandboxRequest{AgentId: "sk", Spec: &sandboxv1.SandboxSpec{Type: backend.Local}}); err != nil {
			t.Fatal(err)
		}
		checkSkillsReadOnly(ctx, t, cli, "sk", "Read-only file system")
		dir := filepath.Join(svc.cfg.StateDir, "local", sandboxKey(svc.cfg.ManagerID, "alice", "sk"))
		if _, err := cli.StopSandbox(ctx, &sandboxv1.StopSandboxRequest{AgentId: "sk"}); err != nil {
			t.Fatal(err)
		}
		// Stopped, the sandbox holds no mount: what lies under the mount
		// point is the workspace's own, and empty.
		if entries, err := os.ReadDir(filepath.Join(dir, "workspace", "skills")); err == nil && len(entries) != 0 {
			t.Fatalf("skills folder of a stopped sandbox: %v", entries)
		}
		if _, err := cli.DeleteSandbox(ctx, &sandboxv1.DeleteSandboxRequest{AgentId: "sk"}); err != nil {
			t.Fatal(err)
		}
		if _, err := os.Stat(svc.skillsDir); err != nil {
			t.Fatalf("the snapshot after a delete: %v", err)
		}
	})
	t.Run("copy", func(t *testing.T) {
		t.Parallel()
		svc, cli := newLocal(t, Config{AllowLocal: true, BuiltinSkills: true, SkillsDirs: []string{operatorSkills(t)}}, noMount)
		if svc.skillsBind {
			t.Fatal("the service bind-mounts although its probe failed")
		}
		ctx, cancel := context.WithTimeout(as("alice"), time.Minute)
		defer cancel()
		if _, err := cli.EnsureSandbox(ctx, &sandboxv1.EnsureSandboxRequest{AgentId: "sk", Spec: &sandboxv1.SandboxSpec{Type: backend.Local}}); err != nil {
			t.Fatal(err)
		}
		dir := filepath.Join(svc.cfg.StateDir, "local", sandboxKey(svc.cfg.ManagerID, "alice", "sk"))
		lib := filepath.Join(dir, "workspace", "skills")
		err := filepath.WalkDir(lib, func(p string, d fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			fi, err := d.Info()
			if err == nil && fi.Mode().Perm()&0o222 != 0 {
				t.Errorf("%s is writable: %v", p, fi.Mode())
			}
			return err
		})
		if err != nil {
			t.Fatal(err)
		}
		// Modes stop no root (this test may run as root): the copy's owner
		// changes it, and the next start puts the library back.
		file := filepath.Join(lib, "ops-check", "SKILL.md")
		if err := os.Chmod(file, 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(file, []byte("tampered"), 0o644); err != nil {
			t.Fatal(err)
		}
		if _, err := cli.RestartSandbox(ctx, &sandboxv1.RestartSandboxRequest{AgentId: "sk"}); err != nil {
			t.Fatal(err)
		}
		var got bytes.Buffer
		if err := readFile(ctx, cli, "sk", "/workspace/skills/ops-check/SKILL.md", &got); err != nil || got.String() != opsSkill {
			t.Fatalf("SKILL.md after a restart: %q %v", got.String(), err)
		}
		if _, err := cli.DeleteSandbox(ctx, &sandboxv1.DeleteSandboxRequest{AgentId: "sk"}); err != nil {
			t.Fatal(err)
		}
		if _, err := os.Stat(dir); !errors.Is(err, fs.ErrNotExist) {
			t.Fatalf("workdir after delete: %v", err)
		}
	})
	t.Run("own skills folder kept", func(t *testing.T) {
		t.Parallel()
		svc, cli := newLocal(t, Config{AllowLocal: true, SkillsDirs: []string{operatorSkills(t)}}, noMount)
		ctx, cancel := context.WithTimeout(as("alice"), time.Minute)
		defer cancel()
		// The sandbox's workspace exists, with a skills folder of its own,
		// before the service places the library.
		ws := filepath.Join(svc.cfg.StateDir, "local", sandboxKey(svc.cfg.ManagerID, "alice", "sk"), "workspace")
		if err := os.MkdirAll(filepath.Join(ws, "skills"), 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(ws, "skills", "mine.txt"), []byte("mine"), 0o600); err != nil {
			t.Fatal(err)
		}
		if _, err := cli.EnsureSandbox(ctx, &sandboxv1.EnsureSandboxRequest{AgentId: "sk", Spec: &sandboxv1.SandboxSpec{Type: backend.Local}}); err != nil {
			t.Fatal(err)
		}
		for range 2 {
			if got, err := os.ReadFile(filepath.Join(ws, "skills", "mine.txt")); err != nil || string(got) != "mine" {
				t.Fatalf("the sandbox's own skills folder: %q %v", got, err)
			}
			if _, err := cli.RestartSandbox(ctx, &sandboxv1.RestartSandboxRequest{AgentId: "sk"}); err != nil {
				t.Fatal(err)
			}
		}
	})
	t.Run("no library", func(t *testing.T) {
		t.Parallel()
		svc, cli := newLocal(t, Config{AllowLocal: true})
		ctx, cancel := context.WithTimeout(as("alice"), time.Minute)
		defer cancel()
		if _, err := cli.EnsureSandbox(ctx, &sandboxv1.EnsureSandboxRequest{AgentId: "sk", Spec: &sandboxv1.SandboxSpec{Type: backend.Local}}); err != nil {
			t.Fatal(err)
		}
		if svc.skillsDir != "" {
			t.Fatalf("snapshot %s without a library", svc.skillsDir)
		}
		if _, err := os.Stat(filepath.Join(svc.cfg.StateDir, "local", sandboxKey(svc.cfg.ManagerID, "alice", "sk"), "workspace", "skills")); !errors.Is(err, fs.ErrNotExist) {
			t.Fatalf("skills folder without a library: %v", err)
		}
	})
}

// TestSkillsBadOperatorFolder: a bad operator folder stops the service at
// start, with the reason.
func TestSkillsBadOperatorFolder(t *testing.T) {
	t.Parallel()
	ops := operatorSkills(t)
	if err := os.Mkdir(filepath.Join(ops, "bad name"), 0o755); err != nil {
		t.Fatal(err)
	}
	_, err := New(Config{StateDir: filepath.Join(shortTemp(t), "s"), ManagerID: "wick-test-" + randomID(), SkillsDirs: []string{ops}}, WithEngineDialer(noDocker))
	if !errors.Is(err, skills.ErrBadSkill) || !strings.Contains(err.Error(), "bad name") {
		t.Fatalf("New = %v, want ErrBadSkill naming the folder", err)
	}
}
