// Package agent is the agent service. It is a library with a thin main, so one
// process can host it beside the other services.
package agent

import (
	"google.golang.org/grpc"

	agentv1 "github.com/wick-agent/wick/gen/wick/agent/v1"
)

// Service implements agentv1.AgentServiceServer.
type Service struct {
	agentv1.UnimplementedAgentServiceServer
}

// New returns the service.
func New() *Service { return &Service{} }

// Register registers the service on r.
func (s *Service) Register(r grpc.ServiceRegistrar) { agentv1.RegisterAgentServiceServer(r, s) }
