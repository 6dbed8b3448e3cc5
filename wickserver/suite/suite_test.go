package suite

import (
	"context"
	"io"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/wick-agent/wick/platform/backend"
	"github.com/wick-agent/wick/services/sandbox"
)

func TestChooseModel(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		env  map[string]string
		want string
	}{
		{map[string]string{}, DemoModel},
		{map[string]string{"OPENAI_API_KEY": "sk-x"}, OpenAIModel},
		{map[string]string{"ANTHROPIC_API_KEY": "sk-ant"}, AnthropicModel},
		{map[string]string{"OPENAI_API_KEY": "sk-x", "ANTHROPIC_API_KEY": "sk-ant"}, OpenAIModel},
		{map[string]string{"OPENAI_API_KEY": ""}, DemoModel},
	} {
		lookup := func(k string) (string, bool) { v, ok := tc.env[k]; return v, ok }
		if got := ChooseModel(lookup); got != tc.want {
			t.Errorf("ChooseModel(%v) = %q, want %q", tc.env, got, tc.want)
		}
	}
}

func TestStartFailsCleanlyOnBusyPort(t *testing.T) {
	t.Parallel()
	busy, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { busy.Close() })
	_, err = Start(context.Background(), Config{
		HTTPAddr:        busy.Addr().String(),
		Backend:         backend.Local,
		Sandbox:         sandbox.Config{StateDir: t.TempDir()},
		Logger:          slog.New(slog.DiscardHandler),
		LookupEnv:       func(string) (string, bool) { return "", false },
		ShutdownTimeout: time.Second,
	})
	if err == nil || !strings.Contains(err.Error(), "listen") {
		t.Fatalf("Start on a busy port = %v, want a listen error", err)
	}
}

func TestStartAndStop(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithCancel(context.Background())
	s, err := Start(ctx, localConfig(t))
	if err != nil {
		t.Fatal(err)
	}
	if !s.Anonymous || s.Model != DemoModel || s.Backend != backend.Local || len(s.Addrs) != 4 {
		t.Fatalf("suite = %+v", s)
	}
	resp, err := http.Get(s.HTTPURL + "/health")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || !strings.Contains(string(body), `"agents":1`) {
		t.Fatalf("health = %d %s", resp.StatusCode, body)
	}
	cancel()
	if err := s.Wait(); err != nil {
		t.Fatal(err)
	}
	if _, err := http.Get(s.HTTPURL + "/health"); err == nil {
		t.Fatal("the gateway still answers after the suite stopped")
	}
}

// localConfig runs the suite on loopback with the local backend, no keys
// from the environment, and quiet logs.
func localConfig(t *testing.T) Config {
	return Config{
		HTTPAddr:        "127.0.0.1:0",
		Backend:         backend.Local,
		Sandbox:         sandbox.Config{StateDir: t.TempDir()},
		Logger:          slog.New(slog.DiscardHandler),
		LookupEnv:       func(string) (string, bool) { return "", false },
		ShutdownTimeout: time.Second,
	}
}
