// Package app is the common main of every Wick service binary: flags and
// environment, logging, telemetry, the identity key, the gRPC server, and
// shutdown on SIGTERM or SIGINT.
package app

import (
	"context"
	"flag"
	"fmt"
	"log/slog"
	"net"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/wick-agent/wick/platform/config"
	"github.com/wick-agent/wick/platform/identity"
	"github.com/wick-agent/wick/platform/logging"
	"github.com/wick-agent/wick/platform/server"
	"github.com/wick-agent/wick/platform/telemetry"
)

// Env is what a service's start function receives.
type Env struct {
	// Logger is the process logger.
	Logger *slog.Logger
	// Key signs and verifies user identities between services.
	Key *identity.Key
	// Server is the gRPC server to register services on.
	Server *server.Server
}

// Common holds the flags every service has.
type Common struct {
	Addr            string
	LogLevel        string
	LogFormat       string
	IdentityKey     string
	DrainDelay      time.Duration
	ShutdownTimeout time.Duration
}

// Register defines the common flags on fs.
func (c *Common) Register(fs *flag.FlagSet, defaultAddr string) {
	fs.StringVar(&c.Addr, "grpc-addr", defaultAddr, "gRPC listen address: host:port or unix:///path")
	fs.StringVar(&c.LogLevel, "log-level", "info", "log level: debug, info, warn, error")
	fs.StringVar(&c.LogFormat, "log-format", "json", "log format: json or text")
	fs.StringVar(&c.IdentityKey, "identity-key", "", "hex secret shared by the suite's processes to sign user identities (WICK_IDENTITY_KEY)")
	fs.DurationVar(&c.DrainDelay, "drain-delay", server.DefaultDrainDelay, "how long to report NOT_SERVING before stopping")
	fs.DurationVar(&c.ShutdownTimeout, "shutdown-timeout", server.DefaultShutdownTimeout, "bound on the graceful stop")
}

// Key returns the identity key from the flag, or a random one (with a
// warning) when none is configured: then no other process can act for a user
// on this service, which is safe but only useful for health checks.
func (c *Common) Key(logger *slog.Logger) (*identity.Key, error) {
	if c.IdentityKey == "" {
		logger.Warn("no identity key configured (WICK_IDENTITY_KEY); calls from other processes cannot assert a user")
		return identity.RandomKey(), nil
	}
	return identity.ParseKey(c.IdentityKey)
}

// Listen opens addr: "host:port" or "unix:///path" (a stale socket file is replaced).
func Listen(addr string) (net.Listener, error) {
	if path, ok := strings.CutPrefix(addr, "unix://"); ok {
		_ = os.Remove(path)
		return net.Listen("unix", path)
	}
	return net.Listen("tcp", addr)
}

// Option configures Main.
type Option func(*mainOptions)

type mainOptions struct {
	serverOptions func(ctx context.Context, env Env, addr net.Addr) ([]server.Option, error)
}

// WithServerOptions adds gRPC server options that can only be built once
// the flags are parsed and the listen address is bound: TLS credentials, a
// codec, limits. f runs before start, with env.Server still nil.
func WithServerOptions(f func(ctx context.Context, env Env, addr net.Addr) ([]server.Option, error)) Option {
	return func(o *mainOptions) { o.serverOptions = f }
}

// Main runs a service binary named name. define adds the service's own flags;
// start registers its gRPC services on env.Server and starts its background
// work, which must end when ctx does. Main exits the process.
func Main(name, defaultAddr string, define func(fs *flag.FlagSet), start func(ctx context.Context, env Env) error, opts ...Option) {
	if err := run(name, defaultAddr, os.Args[1:], define, start, opts...); err != nil {
		fmt.Fprintf(os.Stderr, "%s: %v\n", name, err)
		os.Exit(1)
	}
}

func run(name, defaultAddr string, args []string, define func(fs *flag.FlagSet), start func(ctx context.Context, env Env) error, opts ...Option) error {
	var mo mainOptions
	for _, o := range opts {
		o(&mo)
	}
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	var c Common
	c.Register(fs, defaultAddr)
	if define != nil {
		define(fs)
	}
	if err := config.Parse(fs, args); err != nil {
		return err
	}
	logger, err := logging.New(os.Stderr, c.LogLevel, c.LogFormat)
	if err != nil {
		return err
	}
	logger = logger.With("service", name)
	slog.SetDefault(logger)

	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer stop()
	shutdownTelemetry, err := telemetry.Setup(ctx, name)
	if err != nil {
		return err
	}
	defer shutdownTelemetry(context.Background())

	key, err := c.Key(logger)
	if err != nil {
		return err
	}
	lis, err := Listen(c.Addr)
	if err != nil {
		return fmt.Errorf("listen %s: %w", c.Addr, err)
	}
	defer lis.Close() // a no-op once served
	env := Env{Logger: logger, Key: key}
	sopts := []server.Option{
		server.WithIdentity(key),
		server.WithDrainDelay(c.DrainDelay),
		server.WithShutdownTimeout(c.ShutdownTimeout),
	}
	if mo.serverOptions != nil {
		more, err := mo.serverOptions(ctx, env, lis.Addr())
		if err != nil {
			return err
		}
		sopts = append(sopts, more...)
	}
	env.Server = server.New(name, logger, sopts...)
	if err := start(ctx, env); err != nil {
		return err
	}
	return env.Server.Serve(ctx, lis)
}
