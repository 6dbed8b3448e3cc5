package images_test

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/api/types/image"
	"github.com/docker/docker/client"
	"github.com/docker/docker/pkg/stdcopy"

	"github.com/wick-agent/wick/deploy/images"
	"github.com/wick-agent/wick/platform/imagebuild"
	"github.com/wick-agent/wick/platform/testenv"
)

// TestImages builds every image as `make images` does, under a tag of its
// own (removed afterwards, so a developer's :latest is never touched), and
// checks what each carries and that it runs.
func TestImages(t *testing.T) {
	cli := testenv.Docker(t)
	if _, err := os.Stat(imagebuild.BusyboxPath); err != nil {
		testenv.Missing(t, "static busybox at %s", imagebuild.BusyboxPath)
	}
	// The subtests run in parallel after this function returns.
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	t.Cleanup(cancel)
	ui := t.TempDir()
	if err := os.MkdirAll(filepath.Join(ui, "assets"), 0o755); err != nil {
		t.Fatal(err)
	}
	for name, data := range map[string]string{"index.html": "<!doctype html><title>wick</title>", "assets/app.js": "void 0"} {
		if err := os.WriteFile(filepath.Join(ui, name), []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	tag := fmt.Sprintf("test-%d", time.Now().UnixNano())
	built, err := images.Build(ctx, cli, images.Config{
		Root: testenv.RepoRoot(t), Tags: []string{tag}, Revision: "0123abc", UIDir: ui, BinDir: t.TempDir(),
	})
	for _, b := range built {
		t.Cleanup(func() {
			_, _ = cli.ImageRemove(context.Background(), b.Refs[0], image.RemoveOptions{PruneChildren: true})
		})
	}
	if err != nil {
		t.Fatal(err)
	}
	if len(built) != len(images.All) {
		t.Fatalf("built %d images, want %d", len(built), len(images.All))
	}
	for _, b := range built {
		ref := b.Refs[0]
		t.Run(b.Name, func(t *testing.T) {
			t.Parallel()
			ii, err := cli.ImageInspect(ctx, ref)
			if err != nil {
				t.Fatal(err)
			}
			wantUser := fmt.Sprintf("%d:%d", images.UID, images.GID)
			if b.Name == images.BusyboxName {
				wantUser = fmt.Sprintf("%d:%d", imagebuild.BusyboxUID, imagebuild.BusyboxGID)
			}
			if ii.Config.User != wantUser {
				t.Errorf("USER = %q, want %q (non-root)", ii.Config.User, wantUser)
			}
			for k, want := range map[string]string{
				"org.opencontainers.image.source":   images.Source,
				"org.opencontainers.image.revision": "0123abc",
			} {
				if got := ii.Config.Labels[k]; got != want {
					t.Errorf("label %s = %q, want %q", k, got, want)
				}
			}
			if b.Name == images.BusyboxName {
				// The agent's commands run in busybox's shell as the user.
				out, code := run(ctx, t, cli, ref, nil, "sh", "-c", "id -u; test -w /tmp && test -w /workspace && echo writable")
				if code != 0 || out != fmt.Sprintf("%d\nwritable\n", imagebuild.BusyboxUID) {
					t.Errorf("sh in the busybox image: exit %d, output %q", code, out)
				}
				return
			}
			present := []string{images.CACerts, images.BinDir + "/" + b.Name}
			for _, x := range b.Extra {
				present = append(present, images.BinDir+"/"+x)
			}
			if b.UI {
				present = append(present, images.UIDir+"/index.html", images.UIDir+"/assets/app.js")
			}
			paths(ctx, t, cli, ref, present, []string{"/bin/sh", "/bin/busybox", "/usr/bin/env"})
			// The binary starts: -h prints its flags (exit status 0 or the
			// flag package's 2 after usage; both mean it ran).
			out, code := run(ctx, t, cli, ref, nil, "-h")
			if !strings.Contains(out, "Usage of "+b.Name) || (code != 0 && code != 2 && code != 1) {
				t.Errorf("%s -h: exit %d, output %q", b.Name, code, out)
			}
		})
	}
}

// paths checks, in a created but never started container, which files ref
// has and which it must not have.
func paths(ctx context.Context, t *testing.T, cli *client.Client, ref string, present, absent []string) {
	t.Helper()
	c, err := cli.ContainerCreate(ctx, &container.Config{Image: ref}, &container.HostConfig{NetworkMode: "none"}, nil, nil, "")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cli.ContainerRemove(context.Background(), c.ID, container.RemoveOptions{Force: true}) })
	for _, p := range present {
		if _, err := cli.ContainerStatPath(ctx, c.ID, p); err != nil {
			t.Errorf("%s lacks %s: %v", ref, p, err)
		}
	}
	for _, p := range absent {
		if _, err := cli.ContainerStatPath(ctx, c.ID, p); err == nil {
			t.Errorf("%s has %s; it needs no shell", ref, p)
		}
	}
}

// run runs ref with no network and returns its output and exit status.
func run(ctx context.Context, t *testing.T, cli *client.Client, ref string, entrypoint []string, args ...string) (string, int) {
	t.Helper()
	c, err := cli.ContainerCreate(ctx, &container.Config{Image: ref, Entrypoint: entrypoint, Cmd: args}, &container.HostConfig{NetworkMode: "none"}, nil, nil, "")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cli.ContainerRemove(context.Background(), c.ID, container.RemoveOptions{Force: true}) })
	waitC, errC := cli.ContainerWait(ctx, c.ID, container.WaitConditionNextExit)
	if err := cli.ContainerStart(ctx, c.ID, container.StartOptions{}); err != nil {
		t.Fatal(err)
	}
	var code int
	select {
	case w := <-waitC:
		code = int(w.StatusCode)
	case err := <-errC:
		t.Fatal(err)
	}
	logs, err := cli.ContainerLogs(ctx, c.ID, container.LogsOptions{ShowStdout: true, ShowStderr: true})
	if err != nil {
		t.Fatal(err)
	}
	defer logs.Close()
	var out bytes.Buffer
	if _, err := stdcopy.StdCopy(&out, &out, logs); err != nil {
		t.Fatal(err)
	}
	return out.String(), code
}
