package gateway

import (
	"context"
	"encoding/json"
	"net/http"
	"sync"

	"google.golang.org/grpc"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"

	agentv1 "github.com/wick-agent/wick/gen/wick/agent/v1"
	"github.com/wick-agent/wick/platform/identity"
)

type healthTarget struct {
	name string
	conn grpc.ClientConnInterface
}

// Health is the /health answer.
type Health struct {
	// Status is "ok" when every service serves, else "degraded".
	Status string `json:"status"`
	// Services maps each service to "SERVING" or "NOT_SERVING". Why a
	// service does not serve (a dial error naming internal addresses, its
	// own health status) goes to the log, never to the caller, who may be
	// anyone.
	Services map[string]string `json:"services"`
	// Agents is the number of agents the caller can use; present only for
	// an authenticated caller, so that an anonymous probe learns nothing.
	Agents *int `json:"agents,omitempty"`
}

// serveHealth asks every service's grpc.health.v1 and answers 200 when all
// serve, 503 otherwise. It needs no token; the agent count, which is the
// caller's own, is added only when the request authenticates.
func (g *Gateway) serveHealth(w http.ResponseWriter, r *http.Request) {
	ctx, cancel := context.WithTimeout(r.Context(), g.cfg.HealthTimeout)
	defer cancel()
	h := Health{Status: "ok", Services: map[string]string{"gateway": healthpb.HealthCheckResponse_SERVING.String()}}
	var mu sync.Mutex
	var wg sync.WaitGroup
	for _, t := range g.health {
		wg.Go(func() {
			resp, err := healthpb.NewHealthClient(t.conn).Check(ctx, &healthpb.HealthCheckRequest{})
			state := healthpb.HealthCheckResponse_SERVING
			switch {
			case err != nil:
				state = healthpb.HealthCheckResponse_NOT_SERVING
				g.log.WarnContext(ctx, "health check failed", "service", t.name, "error", err)
			case resp.GetStatus() != healthpb.HealthCheckResponse_SERVING:
				state = healthpb.HealthCheckResponse_NOT_SERVING
				g.log.WarnContext(ctx, "service not serving", "service", t.name, "health", resp.GetStatus().String())
			}
			mu.Lock()
			defer mu.Unlock()
			h.Services[t.name] = state.String()
			if state != healthpb.HealthCheckResponse_SERVING {
				h.Status = "degraded"
			}
		})
	}
	if user, err := g.userOf(r); err == nil {
		wg.Go(func() {
			resp, err := g.agent.ListAgents(identity.WithUser(ctx, user), &agentv1.ListAgentsRequest{})
			if err == nil {
				n := len(resp.GetAgents())
				mu.Lock()
				h.Agents = &n
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	code := http.StatusOK
	if h.Status != "ok" {
		code = http.StatusServiceUnavailable
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(code)
	_ = json.NewEncoder(w).Encode(h)
}
