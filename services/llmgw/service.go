// Package llmgw is the LLM gateway service. It is a library with a thin main, so one
// process can host it beside the other services.
package llmgw

import (
	"google.golang.org/grpc"

	llmv1 "github.com/wick-agent/wick/gen/wick/llm/v1"
)

// Service implements llmv1.LLMServiceServer.
type Service struct {
	llmv1.UnimplementedLLMServiceServer
}

// New returns the service.
func New() *Service { return &Service{} }

// Register registers the service on r.
func (s *Service) Register(r grpc.ServiceRegistrar) { llmv1.RegisterLLMServiceServer(r, s) }
