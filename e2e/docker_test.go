package e2e

import (
	"archive/tar"
	"bytes"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/docker/docker/api/types/build"
	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/api/types/filters"
	"github.com/docker/docker/api/types/volume"
	"github.com/docker/docker/client"

	"github.com/wick-agent/wick/cmd/wick/suite"
	"github.com/wick-agent/wick/platform/testenv"
	"github.com/wick-agent/wick/services/agent"
)

// busyboxPath is Debian's static busybox, the only userland of the test image.
const busyboxPath = "/bin/busybox"

// The test image: nothing can be pulled here, so it is built FROM scratch
// with the real engine from static busybox and an ordinary user.
const (
	imageDockerfile = `FROM scratch
COPY busybox /bin/busybox
RUN ["/bin/busybox", "--install", "-s", "/bin"]
COPY passwd /etc/passwd
COPY group /etc/group
RUN mkdir -p /tmp /workspace /usr/bin && chmod 1777 /tmp && chown 1000:1000 /workspace
ENV PATH=/usr/local/bin:/usr/bin:/bin
`
	imagePasswd = "root:x:0:0:root:/root:/bin/sh\nwick:x:1000:1000:wick:/workspace:/bin/sh\nnobody:x:65534:65534:nobody:/:/bin/false\n"
	imageGroup  = "root:x:0:\nwick:x:1000:\nnogroup:x:65534:\n"
	// e2eLabel marks what the end-to-end tests leave in Docker.
	e2eLabel = "wick.e2e"
	// managerLabel is the sandbox service's label naming the instance that owns a container.
	managerLabel = "wick.manager"
)

var (
	dockerOnce  sync.Once
	dockerImage string
	daemonBin   string
	wickfsBin   string
	dockerErr   error
)

// dockerSetup builds the test image and the static wick-daemon and wickfs,
// once per test binary.
func dockerSetup(t *testing.T) (*client.Client, string) {
	t.Helper()
	cli := testenv.Docker(t)
	if _, err := os.Stat(busyboxPath); err != nil {
		testenv.Missing(t, "static busybox at %s", busyboxPath)
	}
	root := testenv.RepoRoot(t)
	dockerOnce.Do(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
		defer cancel()
		dir, err := os.MkdirTemp("", "wick-e2e-bin-")
		if err != nil {
			dockerErr = err
			return
		}
		cmd := exec.CommandContext(ctx, "go", "build", "-trimpath", "-o", dir+string(os.PathSeparator), "./daemon/cmd/wick-daemon", "./wickfs/cmd/wickfs")
		cmd.Dir = root
		cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
		if out, err := cmd.CombinedOutput(); err != nil {
			dockerErr = fmt.Errorf("build wick binaries: %v\n%s", err, out)
			return
		}
		daemonBin, wickfsBin = filepath.Join(dir, "wick-daemon"), filepath.Join(dir, "wickfs")
		dockerImage, dockerErr = buildImage(ctx, cli)
	})
	if dockerErr != nil {
		t.Fatal(dockerErr)
	}
	return cli, dockerImage
}

func buildImage(ctx context.Context, cli *client.Client) (string, error) {
	bb, err := os.ReadFile(busyboxPath)
	if err != nil {
		return "", err
	}
	h := sha256.New()
	h.Write(bb)
	h.Write([]byte(imageDockerfile + imagePasswd + imageGroup))
	tag := "wick-e2e-sandbox:" + hex.EncodeToString(h.Sum(nil))[:12]
	if _, err := cli.ImageInspect(ctx, tag); err == nil {
		return tag, nil
	}
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for _, f := range []struct {
		name string
		mode int64
		data []byte
	}{
		{"Dockerfile", 0o644, []byte(imageDockerfile)},
		{"busybox", 0o755, bb},
		{"passwd", 0o644, []byte(imagePasswd)},
		{"group", 0o644, []byte(imageGroup)},
	} {
		if err := tw.WriteHeader(&tar.Header{Name: f.name, Mode: f.mode, Size: int64(len(f.data))}); err != nil {
			return "", err
		}
		if _, err := tw.Write(f.data); err != nil {
			return "", err
		}
	}
	if err := tw.Close(); err != nil {
		return "", err
	}
	resp, err := cli.ImageBuild(ctx, &buf, build.ImageBuildOptions{
		Tags: []string{tag}, Remove: true, ForceRemove: true, NetworkMode: "none",
		Labels: map[string]string{e2eLabel: "1"},
	})
	if err != nil {
		return "", fmt.Errorf("build test image: %w", err)
	}
	defer resp.Body.Close()
	dec := json.NewDecoder(resp.Body)
	var log strings.Builder
	for {
		var msg struct {
			Stream string `json:"stream"`
			Error  string `json:"error"`
		}
		if err := dec.Decode(&msg); err == io.EOF {
			break
		} else if err != nil {
			return "", fmt.Errorf("read build output: %w", err)
		}
		log.WriteString(msg.Stream)
		if msg.Error != "" {
			return "", fmt.Errorf("build test image: %s\n%s", msg.Error, log.String())
		}
	}
	return tag, nil
}

func randomHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// TestDockerConversation runs the conversation with the sandbox in a real
// container driven by wick-daemon: the trace then reaches the daemon too.
func TestDockerConversation(t *testing.T) {
	exp := installTracing()
	cli, image := dockerSetup(t)
	manager := "wick-e2e-" + randomHex(6)
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		f := filters.NewArgs(filters.Arg("label", managerLabel+"="+manager))
		cs, _ := cli.ContainerList(ctx, container.ListOptions{All: true, Filters: f})
		for _, c := range cs {
			_ = cli.ContainerRemove(ctx, c.ID, container.RemoveOptions{Force: true})
		}
		vs, _ := cli.VolumeList(ctx, volume.ListOptions{Filters: f})
		for _, v := range vs.Volumes {
			_ = cli.VolumeRemove(ctx, v.Name, true)
		}
	})
	env := startWick(t, func(c *suite.Config) {
		c.Backend = suite.BackendDocker
		c.Sandbox.ManagerID = manager
		c.Sandbox.DaemonBin, c.Sandbox.WickfsBin = daemonBin, wickfsBin
		c.Sandbox.DefaultImage = image
		c.Sandbox.Labels = map[string]string{e2eLabel: "1"}
		c.AgentOptions = append(c.AgentOptions, agent.WithDefaultImage(image))
	})
	if env.suite.Backend != suite.BackendDocker {
		t.Fatalf("backend %q, want docker", env.suite.Backend)
	}

	resp := openSSE(t, t.Context(), "POST", env.url+"/agents/default/stream", aliceToken, jsonBody(userMessage("hello", nil)))
	run := decodeRun(t, readEvents(t, resp.Body))
	checkDemoRun(t, run)

	t.Run("the file is in the container's workspace", func(t *testing.T) {
		r := call(t, "GET", env.url+"/agents/default/files/raw/workspace/notes.txt", aliceToken, nil)
		if r.code != 200 || r.String() != "wick e2e note\n" {
			t.Fatalf("download = %d %q", r.code, r)
		}
	})
	t.Run("the run is one connected trace", func(t *testing.T) {
		tr := checkTrace(t, exp, "POST /agents/{agent_id}/stream", run.runID(), []string{
			"wick.agent.v1.AgentService/Stream",
			"wick.llm.v1.LLMService/",
			"wick.sandbox.v1.SandboxService/",
		})
		// The daemon runs in the container and exports nowhere this test
		// sees; the hop shows as the sandbox's client span of a Daemon call.
		if ok, state := connected(tr, []string{"wick.daemon.v1.Daemon/"}); !ok {
			t.Fatalf("the trace does not reach wick-daemon: %s", state)
		}
	})
}
