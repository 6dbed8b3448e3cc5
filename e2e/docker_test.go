package e2e

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/docker/docker/client"

	"github.com/wick-agent/wick/platform/backend"
	"github.com/wick-agent/wick/platform/testenv"
	"github.com/wick-agent/wick/services/agent"
	"github.com/wick-agent/wick/services/sandbox/sandboximage"
	"github.com/wick-agent/wick/wickserver/suite"
)

const (
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
	if _, err := os.Stat(sandboximage.BusyboxPath); err != nil {
		testenv.Missing(t, "static busybox at %s", sandboximage.BusyboxPath)
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
		if daemonBin, wickfsBin, dockerErr = sandboximage.Binaries(ctx, root, dir); dockerErr != nil {
			return
		}
		dockerImage, dockerErr = sandboximage.Build(ctx, cli, map[string]string{e2eLabel: "1"})
	})
	if dockerErr != nil {
		t.Fatal(dockerErr)
	}
	return cli, dockerImage
}

// removeManaged removes, when the test ends, the containers and volumes
// labelled with the sandbox service's manager id.
func removeManaged(t *testing.T, cli *client.Client, manager string) {
	testenv.RemoveLabelled(t, cli, managerLabel+"="+manager)
}

func randomHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// TestDockerConversation runs the conversation with the sandbox in a real
// container driven by wick-daemon: the trace then reaches the daemon too.
// withDocker runs the suite's sandboxes on Docker, from the test image,
// under the manager id whose leftovers removeManaged removes.
func withDocker(image, manager string) suiteOption {
	return func(c *suite.Config) {
		c.Backend = backend.Docker
		c.Sandbox.ManagerID = manager
		c.Sandbox.DaemonBin, c.Sandbox.WickfsBin = daemonBin, wickfsBin
		c.Sandbox.DefaultImage = image
		c.Sandbox.Labels = map[string]string{e2eLabel: "1"}
		c.AgentOptions = append(c.AgentOptions, agent.WithDefaultImage(image))
	}
}

func TestDockerConversation(t *testing.T) {
	exp := installTracing()
	cli, image := dockerSetup(t)
	manager := "wick-e2e-" + randomHex(6)
	removeManaged(t, cli, manager)
	env := startWick(t, withDocker(image, manager))
	if env.suite.Backend != backend.Docker {
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
		// Run ids repeat across the package's suites, and the local backend's
		// runs have no daemon hop: the daemon is part of what picks the trace.
		tr := checkTrace(t, exp, "POST /agents/{agent_id}/stream", run.runID(), []string{
			"wick.agent.v1.AgentService/Stream",
			"wick.llm.v1.LLMService/",
			"wick.sandbox.v1.SandboxService/",
			"wick.daemon.v1.Daemon/",
		})
		// The daemon runs in the container and exports nowhere this test
		// sees; the hop shows as the sandbox's client span of a Daemon call.
		if ok, state := connected(tr, []string{"wick.daemon.v1.Daemon/"}); !ok {
			t.Fatalf("the trace does not reach wick-daemon: %s", state)
		}
	})
}
