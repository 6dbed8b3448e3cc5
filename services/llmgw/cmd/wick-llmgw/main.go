// Command wick-llmgw serves the LLM gateway service.
package main

import (
	"context"

	"github.com/wick-agent/wick/platform/app"
	"github.com/wick-agent/wick/services/llmgw"
)

func main() {
	app.Main("wick-llmgw", "127.0.0.1:7003", nil, func(_ context.Context, env app.Env) error {
		llmgw.New().Register(env.Server.GRPC())
		return nil
	})
}
