// Package app is the common main of every Wick service binary: flags and
// environment, logging, telemetry, the identity key, TLS between services,
// the gRPC server, and shutdown on SIGTERM or SIGINT.
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

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"go.opentelemetry.io/otel"
	"google.golang.org/grpc"

	"github.com/wick-agent/wick/platform/config"
	"github.com/wick-agent/wick/platform/diag"
	"github.com/wick-agent/wick/platform/dial"
	"github.com/wick-agent/wick/platform/identity"
	"github.com/wick-agent/wick/platform/logging"
	"github.com/wick-agent/wick/platform/server"
	"github.com/wick-agent/wick/platform/telemetry"
	"github.com/wick-agent/wick/platform/tlsconf"
)

// Env is what a service's start function receives.
type Env struct {
	// Logger is the process logger.
	Logger *slog.Logger
	// Key signs and verifies user identities between services.
	Key *identity.Key
	// Server is the gRPC server to register services on.
	Server *server.Server

	stops *[]func()
	// TLS is the service's TLS identity (-tls-cert…); nil in plaintext.
	TLS *tlsconf.Source
	// Metrics is the registry of the service's Prometheus metrics, served
	// at -metrics-addr. The process's OpenTelemetry meter provider, installed
	// as the global one, exports every instrument here too.
	Metrics *prometheus.Registry
}

// Dial connects to another service of the suite as this one does: signing
// the context's user with Key, over TLS when the service has a certificate.
func (e Env) Dial(target string) (*grpc.ClientConn, error) {
	return dial.New(target, dial.WithIdentity(e.Key), dial.WithTLS(e.TLS))
}

// OnStop runs f once the server has stopped: after the drain delay and the
// graceful stop, so that what the service's calls use (its stores, its
// clients, its runs) is closed only after the last call ended, not while
// draining. Functions run in reverse order of registration.
func (e Env) OnStop(f func()) { *e.stops = append(*e.stops, f) }

// Common holds the flags every service has.
type Common struct {
	Addr            string
	LogLevel        string
	LogFormat       string
	IdentityKey     string
	DrainDelay      time.Duration
	ShutdownTimeout time.Duration
	// TLS names the certificate files for TLS between services.
	TLS tlsconf.Files
	// HealthAddr, when set, serves grpc.health.v1 alone in plaintext.
	HealthAddr string
	// Diag are the operator's listeners: -pprof-addr and -metrics-addr.
	Diag diag.Flags
}

// Register defines the common flags on fs.
func (c *Common) Register(fs *flag.FlagSet, defaultAddr string) {
	fs.StringVar(&c.Addr, "grpc-addr", defaultAddr, "gRPC listen address: host:port or unix:///path")
	fs.StringVar(&c.LogLevel, "log-level", "info", "log level: debug, info, warn, error")
	fs.StringVar(&c.LogFormat, "log-format", "json", "log format: json or text")
	fs.StringVar(&c.IdentityKey, "identity-key", "", "hex secret shared by the suite's processes to sign user identities (WICK_IDENTITY_KEY)")
	fs.DurationVar(&c.DrainDelay, "drain-delay", server.DefaultDrainDelay, "how long to report NOT_SERVING before stopping")
	fs.DurationVar(&c.ShutdownTimeout, "shutdown-timeout", server.DefaultShutdownTimeout, "bound on the graceful stop")
	fs.StringVar(&c.TLS.CertFile, "tls-cert", "", "PEM certificate this service presents to the suite's other services, as server and as client; with -tls-key its gRPC server speaks only TLS (reloaded when the file changes)")
	fs.StringVar(&c.TLS.KeyFile, "tls-key", "", "PEM key of -tls-cert")
	fs.StringVar(&c.TLS.CAFile, "tls-ca", "", "PEM CA bundle: the server then requires client certificates it signed (mutual TLS) and clients verify servers against it; empty: no client certificates, servers verified against the system roots")
	fs.StringVar(&c.TLS.ServerName, "tls-server-name", "", "name verified in the certificates of the services this one calls, instead of each target's host (for IP targets)")
	c.Diag.Register(fs)
	fs.StringVar(&c.HealthAddr, "health-addr", "", "extra plaintext listener serving only grpc.health.v1, for probes that cannot present a client certificate (kubelet's grpc probe); empty: none")
}

// TLSSource loads the TLS identity the flags name; nil when none is named.
// A half configuration is refused.
func (c *Common) TLSSource(logger *slog.Logger) (*tlsconf.Source, error) {
	if !c.TLS.Enabled() {
		return nil, nil
	}
	return tlsconf.Load(c.TLS, tlsconf.WithLogger(logger))
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
	edge          bool
}

// WithEdgeServer says the service's gRPC server is an edge for clients
// outside the suite, with its own credentials (the gateway's public API):
// the -tls-* flags then configure only the connections the service makes.
func WithEdgeServer() Option { return func(o *mainOptions) { o.edge = true } }

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
	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	mp, err := telemetry.NewMeterProvider(ctx, name, reg)
	if err != nil {
		return err
	}
	// Installed before the service starts, so that every instrument made on
	// the global provider lands here; shut down after the service's stops
	// (deferred earlier, so run later), which pushes the last OTLP figures.
	otel.SetMeterProvider(mp)
	defer func() {
		if err := mp.Shutdown(context.Background()); err != nil {
			logger.Warn("metrics shutdown", "error", err)
		}
	}()

	key, err := c.Key(logger)
	if err != nil {
		return err
	}
	src, err := c.TLSSource(logger)
	if err != nil {
		return err
	}
	lis, err := Listen(c.Addr)
	if err != nil {
		return fmt.Errorf("listen %s: %w", c.Addr, err)
	}
	defer lis.Close() // a no-op once served
	var stops []func()
	defer func() {
		for i := len(stops) - 1; i >= 0; i-- {
			stops[i]()
		}
	}()
	env := Env{Logger: logger, Key: key, TLS: src, stops: &stops, Metrics: reg}
	dl, err := diag.Start(c.Diag, env.Metrics, logger)
	if err != nil {
		return err
	}
	defer dl.Close(context.Background())
	sopts := []server.Option{
		server.WithIdentity(key),
		server.WithDrainDelay(c.DrainDelay),
		server.WithShutdownTimeout(c.ShutdownTimeout),
	}
	switch {
	case src != nil && !mo.edge:
		sopts = append(sopts, server.WithTLS(src))
		logger.Info("TLS between services", "mutual", src.Mutual())
	case src == nil:
		logger.Info("no TLS between services (-tls-cert, -tls-key, -tls-ca): gRPC calls to and from this service are plaintext, for a private network or a mesh that carries mTLS")
	}
	if c.HealthAddr != "" {
		hl, err := Listen(c.HealthAddr)
		if err != nil {
			return fmt.Errorf("listen %s: %w", c.HealthAddr, err)
		}
		defer hl.Close()
		sopts = append(sopts, server.WithHealthListener(hl))
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
