package e2e

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"syscall"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	reflectionpb "google.golang.org/grpc/reflection/grpc_reflection_v1"

	"github.com/wick-agent/wick/platform/testenv"
)

// binaryDrainDelay and binaryShutdownTimeout are the shutdown bounds given to
// every binary; a binary that takes longer to stop after SIGTERM fails.
const (
	binaryDrainDelay      = 200 * time.Millisecond
	binaryShutdownTimeout = 3 * time.Second
)

// TestBinaries builds every service binary, starts it, checks that it answers
// grpc.health.v1 with SERVING and lists its API through reflection, then sends
// SIGTERM and checks that it exits cleanly within its drain deadline.
func TestBinaries(t *testing.T) {
	root := testenv.RepoRoot(t)
	bins := t.TempDir()
	tests := []struct {
		name    string
		pkg     string
		service string
		// args returns the binary's flags and the gRPC target to dial.
		args func(t *testing.T) ([]string, string)
	}{
		{"wick-agent", "./services/agent/cmd/wick-agent", "wick.agent.v1.AgentService", tcpArgs},
		{"wick-sandbox", "./services/sandbox/cmd/wick-sandbox", "wick.sandbox.v1.SandboxService", func(t *testing.T) ([]string, string) {
			args, target := tcpArgs(t)
			return append(args, "-state-dir", t.TempDir()), target
		}},
		{"wick-llmgw", "./services/llmgw/cmd/wick-llmgw", "wick.llm.v1.LLMService", func(t *testing.T) ([]string, string) {
			args, target := tcpArgs(t)
			return append(args, "-http-addr", "127.0.0.1:"+strconv.Itoa(testenv.FreePort(t))), target
		}},
		{"wick-gateway", "./services/gateway/cmd/wick-gateway", "wick.agent.v1.AgentService", func(t *testing.T) ([]string, string) {
			args, target := tcpArgs(t)
			return append(args, "-http-addr", "127.0.0.1:"+strconv.Itoa(testenv.FreePort(t))), target
		}},
		{"wick-daemon", "./daemon/cmd/wick-daemon", "wick.daemon.v1.Daemon", func(t *testing.T) ([]string, string) {
			dir := t.TempDir()
			sock := filepath.Join(dir, "daemon.sock")
			return []string{"-socket", sock, "-root", t.TempDir()}, "unix://" + sock
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			bin := filepath.Join(bins, tt.name)
			build := exec.Command("go", "build", "-o", bin, tt.pkg)
			build.Dir = root
			if out, err := build.CombinedOutput(); err != nil {
				t.Fatalf("go build %s: %v\n%s", tt.pkg, err, out)
			}
			args, target := tt.args(t)
			cmd := exec.Command(bin, args...)
			cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			exited := make(chan error, 1)
			go func() { exited <- cmd.Wait() }()
			t.Cleanup(func() {
				if cmd.ProcessState == nil {
					_ = cmd.Process.Kill()
					<-exited
				}
			})

			testenv.GRPCServing(target)(t, exited)
			conn, err := grpc.NewClient(target, grpc.WithTransportCredentials(insecure.NewCredentials()))
			if err != nil {
				t.Fatal(err)
			}
			defer conn.Close()
			checkReflection(t, conn, tt.service)

			if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
				t.Fatal(err)
			}
			select {
			case err := <-exited:
				if err != nil {
					t.Fatalf("exit after SIGTERM: %v", err)
				}
			case <-time.After(binaryDrainDelay + binaryShutdownTimeout + 10*time.Second):
				t.Fatal("binary did not exit within its drain deadline after SIGTERM")
			}
		})
	}
}

// tcpArgs gives a service built on platform/app its listen address and the
// common shutdown bounds.
func tcpArgs(t *testing.T) ([]string, string) {
	addr := "127.0.0.1:" + strconv.Itoa(testenv.FreePort(t))
	return []string{"-grpc-addr", addr, "-log-format", "text",
		"-drain-delay", binaryDrainDelay.String(), "-shutdown-timeout", binaryShutdownTimeout.String()}, addr
}

func checkReflection(t *testing.T, conn *grpc.ClientConn, want string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	stream, err := reflectionpb.NewServerReflectionClient(conn).ServerReflectionInfo(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := stream.Send(&reflectionpb.ServerReflectionRequest{MessageRequest: &reflectionpb.ServerReflectionRequest_ListServices{}}); err != nil {
		t.Fatal(err)
	}
	resp, err := stream.Recv()
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, s := range resp.GetListServicesResponse().GetService() {
		if s.Name == want {
			return
		}
		names = append(names, s.Name)
	}
	t.Fatalf("reflection lists %v, want %s", names, want)
}
