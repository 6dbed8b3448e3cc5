// Command wick-agent serves the agent service.
package main

import (
	"context"

	"github.com/wick-agent/wick/platform/app"
	"github.com/wick-agent/wick/services/agent"
)

func main() {
	app.Main("wick-agent", "127.0.0.1:7001", nil, func(_ context.Context, env app.Env) error {
		agent.New().Register(env.Server.GRPC())
		return nil
	})
}
