// Package sandbox is the sandbox service. It is a library with a thin main, so one
// process can host it beside the other services.
package sandbox

import (
	"google.golang.org/grpc"

	sandboxv1 "github.com/wick-agent/wick/gen/wick/sandbox/v1"
)

// Service implements sandboxv1.SandboxServiceServer.
type Service struct {
	sandboxv1.UnimplementedSandboxServiceServer
}

// New returns the service.
func New() *Service { return &Service{} }

// Register registers the service on r.
func (s *Service) Register(r grpc.ServiceRegistrar) { sandboxv1.RegisterSandboxServiceServer(r, s) }
