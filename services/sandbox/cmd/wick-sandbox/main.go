// Command wick-sandbox serves the sandbox service.
package main

import (
	"context"

	"github.com/wick-agent/wick/platform/app"
	"github.com/wick-agent/wick/services/sandbox"
)

func main() {
	app.Main("wick-sandbox", "127.0.0.1:7002", nil, func(_ context.Context, env app.Env) error {
		sandbox.New().Register(env.Server.GRPC())
		return nil
	})
}
