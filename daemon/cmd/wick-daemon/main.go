// Command wick-daemon serves wick.daemon.v1 from inside a sandbox container:
// on a Unix socket always and, with a token, on TCP. It is built static
// (CGO_ENABLED=0) and can be the container's PID 1.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io/fs"
	"log/slog"
	"net"
	"os"
	"os/signal"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"google.golang.org/grpc"

	"github.com/wick-agent/wick/daemon"
	"github.com/wick-agent/wick/daemon/internal/forward"
	"github.com/wick-agent/wick/daemon/internal/initproc"
	"github.com/wick-agent/wick/daemon/process"
	"github.com/wick-agent/wick/daemon/server"
	"github.com/wick-agent/wick/platform/config"
	"github.com/wick-agent/wick/platform/logging"
	platformserver "github.com/wick-agent/wick/platform/server"
	"github.com/wick-agent/wick/platform/telemetry"
	"github.com/wick-agent/wick/wickfs"
)

// Defaults of the daemon's flags.
const (
	DefaultSocket     = "/run/wick/daemon.sock"
	DefaultSocketMode = "0666"
	DefaultRoot       = "/workspace"
	// TokenEnv is read when -token is not given; an environment variable
	// keeps the token out of the process list.
	TokenEnv = "WICK_DAEMON_TOKEN"
	// defaultShutdownTimeout is short: a container stop gives about ten seconds.
	defaultShutdownTimeout = 5 * time.Second
)

func main() {
	if initproc.ShouldRun() {
		os.Exit(initproc.Run())
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	err := run(ctx, os.Args[1:])
	stop()
	if err != nil {
		fmt.Fprintf(os.Stderr, "wick-daemon: %v\n", err)
		os.Exit(1)
	}
}

type flags struct {
	socket, socketMode, tcpAddr, token string
	root, prefix                       string
	execTimeout                        time.Duration
	maxOutput, maxWrite                int64
	maxProcesses                       int
	processBuffer                      int64
	logLevel, logFormat                string
	shutdownTimeout                    time.Duration
	otlpSocket                         string
	version                            bool
	install                            string
	forwards                           forwardList
	tunnels                            tunnelList
}

// tunnelRule is one -tunnel listener: a loopback port or a Unix socket
// whose connections the daemon's Tunnel calls take.
type tunnelRule struct{ name, addr string }

// tunnelList is the repeatable -tunnel flag.
type tunnelList []tunnelRule

func (l *tunnelList) String() string {
	var s []string
	for _, r := range *l {
		s = append(s, r.name+"="+r.addr)
	}
	return strings.Join(s, ",")
}

// Set takes name=port or name=/unix/socket, or several separated by commas.
func (l *tunnelList) Set(v string) error {
	for _, one := range strings.Split(v, ",") {
		name, addr, ok := strings.Cut(one, "=")
		port, perr := strconv.Atoi(addr)
		switch {
		case !ok || name == "" || strings.Trim(name, "abcdefghijklmnopqrstuvwxyz0123456789-") != "":
			return fmt.Errorf("tunnel %q: want name=port or name=/absolute/socket/path, the name in [a-z0-9-]", one)
		case slices.ContainsFunc(*l, func(r tunnelRule) bool { return r.name == name }):
			return fmt.Errorf("tunnel %q: the name %s is taken", one, name)
		case strings.HasPrefix(addr, "/"):
		case perr != nil || port < 1 || port > 65535:
			return fmt.Errorf("tunnel %q: want name=port or name=/absolute/socket/path", one)
		default:
			addr = net.JoinHostPort("127.0.0.1", addr)
		}
		*l = append(*l, tunnelRule{name, addr})
	}
	return nil
}

// listenTunnels opens the -tunnel listeners.
func listenTunnels(rules tunnelList) (map[string]*server.Tunnel, error) {
	out := map[string]*server.Tunnel{}
	for _, r := range rules {
		var (
			lis net.Listener
			err error
		)
		if strings.HasPrefix(r.addr, "/") {
			lis, err = listenUnix(r.addr, 0o600)
		} else {
			lis, err = net.Listen("tcp", r.addr)
		}
		if err != nil {
			for _, t := range out {
				t.Close()
			}
			return nil, fmt.Errorf("tunnel %s: %w", r.name, err)
		}
		out[r.name] = server.NewTunnel(lis)
	}
	return out, nil
}

// forwardList is the repeatable -forward flag.
type forwardList []forward.Rule

func (l *forwardList) String() string {
	var s []string
	for _, r := range *l {
		s = append(s, strconv.Itoa(r.Port)+"="+r.Socket)
	}
	return strings.Join(s, ",")
}

// Set takes one rule, or several separated by commas (the environment form).
func (l *forwardList) Set(v string) error {
	for _, one := range strings.Split(v, ",") {
		r, err := forward.ParseRule(one)
		if err != nil {
			return err
		}
		*l = append(*l, r)
	}
	return nil
}

func parse(args []string) (*flags, error) {
	var f flags
	fs := flag.NewFlagSet("wick-daemon", flag.ContinueOnError)
	fs.StringVar(&f.socket, "socket", DefaultSocket, "Unix socket to serve on; its directory is created")
	fs.StringVar(&f.socketMode, "socket-mode", DefaultSocketMode, "permission bits of the socket (octal); the directory's mode is the access control")
	fs.StringVar(&f.tcpAddr, "tcp-addr", "", "also serve on this TCP address (needs a token)")
	fs.StringVar(&f.token, "token", "", "token every TCP call must present as 'authorization: Bearer <token>' (or "+TokenEnv+")")
	fs.StringVar(&f.root, "root", DefaultRoot, "workspace directory")
	fs.StringVar(&f.prefix, "prefix", wickfs.DefaultPrefix, "agent-facing path of the workspace")
	fs.DurationVar(&f.execTimeout, "exec-timeout", wickfs.DefaultExecTimeout, "default command timeout")
	fs.Int64Var(&f.maxOutput, "max-output-bytes", wickfs.DefaultMaxOutputBytes, "default cap on a command's stdout plus stderr")
	fs.Int64Var(&f.maxWrite, "max-write-bytes", server.DefaultMaxWriteBytes, "largest file upload")
	fs.IntVar(&f.maxProcesses, "max-processes", process.DefaultMaxRunning, "running processes StartProcess allows at once")
	fs.Int64Var(&f.processBuffer, "process-buffer-bytes", process.DefaultBufferBytes, "output kept per process: how far a process may run ahead of an attached caller, and the tail kept while nobody is attached")
	fs.StringVar(&f.logLevel, "log-level", "info", "log level: debug, info, warn, error")
	fs.StringVar(&f.logFormat, "log-format", "json", "log format: json or text")
	fs.DurationVar(&f.shutdownTimeout, "shutdown-timeout", defaultShutdownTimeout, "bound on the graceful stop")
	fs.StringVar(&f.otlpSocket, "otlp-socket", "", "export spans as OTLP/HTTP to this Unix socket (the sandbox service relays them to its collector); empty: no spans")
	fs.BoolVar(&f.version, "version", false, "print the version and exit")
	fs.StringVar(&f.install, "install", "", "copy wick-daemon and the wickfs beside it into this directory (mode 0555) and exit: how an init container places them into a pod's shared volume from an image with no shell")
	fs.Var(&f.tunnels, "tunnel", "name=port or name=/unix/socket: listen on 127.0.0.1:port (or the socket) and hand each connection to the next Tunnel call naming it (repeatable); how the sandbox service offers its endpoints inside a sandbox it reaches only through the daemon")
	fs.Var(&f.forwards, "forward", "port=/unix/socket: listen on 127.0.0.1:port and copy each connection to the socket (repeatable); how the sandbox service offers its endpoints inside a sandbox without a network")
	if err := config.Parse(fs, args); err != nil {
		return nil, err
	}
	if f.token == "" {
		f.token = os.Getenv(TokenEnv)
	}
	if f.tcpAddr != "" && f.token == "" {
		return nil, fmt.Errorf("-tcp-addr needs -token or %s: refusing to serve commands on TCP without one", TokenEnv)
	}
	return &f, nil
}

func run(ctx context.Context, args []string) error {
	f, err := parse(args)
	if err != nil {
		return err
	}
	if f.version {
		fmt.Println(daemon.Version)
		return nil
	}
	if f.install != "" {
		return install(f.install)
	}
	mode, err := strconv.ParseUint(f.socketMode, 8, 32)
	if err != nil || mode > 0o777 {
		return fmt.Errorf("-socket-mode %q: want octal permission bits", f.socketMode)
	}
	logger, err := logging.New(os.Stderr, f.logLevel, f.logFormat)
	if err != nil {
		return err
	}
	logger = logger.With("service", "wick-daemon", "version", daemon.Version)
	// The RPC edge logs an error it does not send (rpcstatus.FromError)
	// through the default logger.
	slog.SetDefault(logger)
	if f.otlpSocket != "" {
		stopTracing, err := setupTracing(ctx, f.otlpSocket)
		if err != nil {
			return err
		}
		defer func() {
			sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), f.shutdownTimeout)
			defer cancel()
			_ = stopTracing(sctx)
		}()
	}

	wfs, err := wickfs.NewLocalFS(f.root, wickfs.WithPrefix(f.prefix),
		wickfs.WithExecTimeout(f.execTimeout), wickfs.WithMaxOutputBytes(f.maxOutput))
	if err != nil {
		return err
	}
	defer wfs.Close()
	if f.maxProcesses < 1 || f.processBuffer < 1 {
		return fmt.Errorf("-max-processes and -process-buffer-bytes must be positive")
	}
	tunnels, err := listenTunnels(f.tunnels)
	if err != nil {
		return err
	}
	defer func() {
		for _, t := range tunnels {
			t.Close()
		}
	}()
	svc := server.New(wfs, server.WithMaxWriteBytes(f.maxWrite), server.WithTunnels(tunnels), server.WithProcessOptions(
		process.WithMaxRunning(f.maxProcesses), process.WithBufferBytes(f.processBuffer)))
	// The processes die with the daemon rather than linger unreachable.
	defer svc.Close()

	newServer := func(opts ...platformserver.Option) *platformserver.Server {
		opts = append([]platformserver.Option{
			// Nothing load-balances a daemon; there is nobody to drain for.
			platformserver.WithDrainDelay(0),
			platformserver.WithShutdownTimeout(f.shutdownTimeout),
		}, opts...)
		for _, o := range server.GRPCOptions() {
			opts = append(opts, platformserver.WithGRPCOption(o))
		}
		s := platformserver.New("wick-daemon", logger, opts...)
		svc.Register(s.GRPC())
		return s
	}
	lis, err := listenUnix(f.socket, fs.FileMode(mode))
	if err != nil {
		return err
	}
	type served struct {
		name string
		err  error
	}
	errc := make(chan served, 2)
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	n := 1
	go func() { errc <- served{"unix", newServer().Serve(ctx, lis)} }()
	if f.tcpAddr != "" {
		tlis, err := net.Listen("tcp", f.tcpAddr)
		if err != nil {
			cancel()
			<-errc
			return fmt.Errorf("listen %s: %w", f.tcpAddr, err)
		}
		unary, stream := server.TokenAuth(f.token)
		tsrv := newServer(platformserver.WithUnaryInterceptor(unary), platformserver.WithStreamInterceptor(stream))
		n++
		go func() { errc <- served{"tcp", tsrv.Serve(ctx, tlis)} }()
	}
	for _, r := range f.forwards {
		// A port that cannot be bound (a previous daemon still holding it)
		// costs that endpoint, not the daemon's file and command calls.
		go func() {
			if err := forward.Serve(ctx, r, logger); err != nil {
				logger.Error("forward", "port", r.Port, "socket", r.Socket, "err", err)
			}
		}()
	}
	logger.Info("wick-daemon started", "socket", f.socket, "tcp", f.tcpAddr, "root", wfs.Dir(), "pid", os.Getpid())
	var first error
	for range n {
		s := <-errc
		cancel() // one listener failing stops the other
		if s.err != nil && !errors.Is(s.err, grpc.ErrServerStopped) && first == nil {
			first = fmt.Errorf("%s: %w", s.name, s.err)
		}
	}
	_ = os.Remove(f.socket)
	return first
}

// setupTracing installs the global tracer provider, which the gRPC servers'
// stats handlers record on, exporting to the relay socket at path.
func setupTracing(ctx context.Context, path string) (func(context.Context) error, error) {
	exp, err := telemetry.NewUnixTraceExporter(ctx, path)
	if err != nil {
		return nil, err
	}
	return telemetry.Setup(ctx, "wick-daemon", sdktrace.WithBatcher(exp))
}

// listenUnix creates the socket's directory, replaces a stale socket and
// opens the socket with the given mode.
func listenUnix(path string, mode fs.FileMode) (net.Listener, error) {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return nil, fmt.Errorf("socket directory: %w", err)
	}
	if st, err := os.Lstat(path); err == nil {
		if st.Mode()&fs.ModeSocket == 0 {
			return nil, fmt.Errorf("%s exists and is not a socket; refusing to replace it", path)
		}
		_ = os.Remove(path)
	}
	lis, err := net.Listen("unix", path)
	if err != nil {
		return nil, fmt.Errorf("listen %s: %w", path, err)
	}
	if err := os.Chmod(path, mode); err != nil {
		lis.Close()
		return nil, fmt.Errorf("chmod %s: %w", path, err)
	}
	return lis, nil
}
