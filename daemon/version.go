// Package daemon is wick-daemon, the gRPC server that runs inside every
// sandbox container: server is the service, daemonfs the client-side
// wickfs.FileSystem over it, cmd/wick-daemon the static binary.
package daemon

// Version is the daemon's build version, set with
// -ldflags "-X github.com/wick-agent/wick/daemon.Version=…".
var Version = "dev"
