package suite

import (
	"context"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/wick-agent/wick/platform/backend"
	"github.com/wick-agent/wick/services/gateway"
	"github.com/wick-agent/wick/services/sandbox"
)

// TestSeveralUsersNeedAllowLocal: with tokens, several users share the
// sandboxes, so a local backend starts only with -allow-local.
func TestSeveralUsersNeedAllowLocal(t *testing.T) {
	t.Parallel()
	cfg := Config{
		HTTPAddr:        "127.0.0.1:0",
		Backend:         backend.Local,
		Sandbox:         sandbox.Config{StateDir: t.TempDir()},
		Gateway:         gateway.Config{Tokens: map[string]string{"tok-alice-0123456789": "alice", "tok-bob-0123456789": "bob"}},
		Logger:          slog.New(slog.DiscardHandler),
		LookupEnv:       func(string) (string, bool) { return "", false },
		ShutdownTimeout: time.Second,
	}
	if _, err := Start(context.Background(), cfg); err == nil || !strings.Contains(err.Error(), "-allow-local") {
		t.Fatalf("Start with tokens and local sandboxes = %v, want a refusal naming -allow-local", err)
	}
	cfg.Sandbox.AllowLocal = true
	ctx, cancel := context.WithCancel(context.Background())
	s, err := Start(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	cancel()
	if err := s.Wait(); err != nil {
		t.Fatal(err)
	}
}
