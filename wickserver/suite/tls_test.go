package suite

import (
	"context"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/status"

	"github.com/wick-agent/wick/platform/dial"
	"github.com/wick-agent/wick/platform/tlsconf/tlstest"
)

// TestMutualTLSBetweenServices runs the suite with mutual TLS: the gateway
// reaches the agent service, which reaches the LLM gateway, over it, and a
// plaintext client is refused by the services but not by the public edge,
// which keeps its own configuration.
func TestMutualTLSBetweenServices(t *testing.T) {
	t.Parallel()
	ca := tlstest.NewCA(t, "wick test CA")
	cfg := localConfig(t)
	cfg.TLS = tlstest.Write(t, t.TempDir(), ca.Issue(t, "127.0.0.1"), ca)
	ctx, cancel := context.WithCancel(context.Background())
	s, err := Start(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cancel(); s.Wait() })

	get := func(method, path, body string) (int, string) {
		t.Helper()
		req, err := http.NewRequestWithContext(t.Context(), method, s.HTTPURL+path, strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	// /health asks every service over its connection and lists the agents.
	if code, body := get("GET", "/health", ""); code != 200 || !strings.Contains(body, `"status":"ok"`) || !strings.Contains(body, `"agents":1`) {
		t.Fatalf("health = %d %s", code, body)
	}
	// A run goes gateway → agent → LLM gateway.
	if code, body := get("POST", "/agents/default/invoke", `{"messages":[{"role":"user","content":"hello"}]}`); code != 200 {
		t.Fatalf("invoke = %d %s", code, body)
	}

	for _, tc := range []struct {
		service string
		want    codes.Code
	}{
		{"agent", codes.Unavailable},
		{"sandbox", codes.Unavailable},
		{"llmgw", codes.Unavailable},
		{"gateway", codes.OK},
	} {
		t.Run("plaintext to "+tc.service, func(t *testing.T) {
			conn, err := dial.New(s.Addrs[tc.service])
			if err != nil {
				t.Fatal(err)
			}
			defer conn.Close()
			cctx, ccancel := context.WithTimeout(t.Context(), 10*time.Second)
			defer ccancel()
			_, err = healthpb.NewHealthClient(conn).Check(cctx, &healthpb.HealthCheckRequest{})
			if status.Code(err) != tc.want {
				t.Fatalf("health = %v, want %v", err, tc.want)
			}
		})
	}
}
