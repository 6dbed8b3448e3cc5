// Package daemon is the wick-daemon service. It is a library with a thin main, so one
// process can host it beside the other services.
package daemon

import (
	"google.golang.org/grpc"

	daemonv1 "github.com/wick-agent/wick/gen/wick/daemon/v1"
)

// Service implements daemonv1.DaemonServer.
type Service struct {
	daemonv1.UnimplementedDaemonServer
}

// New returns the service.
func New() *Service { return &Service{} }

// Register registers the service on r.
func (s *Service) Register(r grpc.ServiceRegistrar) { daemonv1.RegisterDaemonServer(r, s) }
