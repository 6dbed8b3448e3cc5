// Command wick-daemon serves the wick-daemon service.
package main

import (
	"context"

	"github.com/wick-agent/wick/platform/app"
	"github.com/wick-agent/wick/daemon"
)

func main() {
	app.Main("wick-daemon", "unix:///tmp/wick-daemon.sock", nil, func(_ context.Context, env app.Env) error {
		daemon.New().Register(env.Server.GRPC())
		return nil
	})
}
