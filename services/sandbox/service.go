// Package sandbox is the sandbox service: one sandbox per (user, agent), a
// hardened Docker container driven through wick-daemon over a Unix socket,
// with Docker exec and the wickfs CLI as the fallback path, or a local
// workdir served in-process. It is a library with a thin main, so one process
// can host it beside the other services.
package sandbox

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/metric"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"

	"github.com/wick-agent/wick/daemon/process"
	sandboxv1 "github.com/wick-agent/wick/gen/wick/sandbox/v1"
	"github.com/wick-agent/wick/platform/backend"
	"github.com/wick-agent/wick/platform/errcode"
	"github.com/wick-agent/wick/platform/netguard"
	"github.com/wick-agent/wick/services/sandbox/internal/diskimage"
	"github.com/wick-agent/wick/services/sandbox/internal/dockerbox"
	"github.com/wick-agent/wick/services/sandbox/internal/egress"
	"github.com/wick-agent/wick/services/sandbox/internal/tracerelay"
	"github.com/wick-agent/wick/services/sandbox/kubebox"
	"github.com/wick-agent/wick/wickfs/confine"
)

// Defaults; every one is a Config field.
const (
	DefaultStateDir      = "/var/lib/wick/sandbox"
	DefaultWorkdir       = "/workspace"
	DefaultIdleTimeout   = 30 * time.Minute
	DefaultReapInterval  = time.Minute
	DefaultMemory        = 512 << 20
	DefaultNanoCPUs      = 1_000_000_000
	DefaultPids          = 256
	DefaultMaxMemory     = 8 << 30
	DefaultMaxNanoCPUs   = 4_000_000_000
	DefaultMaxPids       = 4096
	DefaultExecTimeout   = 120 * time.Second
	DefaultMaxExecTime   = time.Hour
	DefaultMaxOutput     = 1 << 20
	DefaultMaxOutputCap  = 64 << 20
	DefaultDaemonStart   = 15 * time.Second
	DefaultHealthTimeout = 2 * time.Second
	// DefaultFallbackMaxBytes bounds one file or one command output moved
	// through the Docker-exec fallback, which has to hold it in memory.
	DefaultFallbackMaxBytes = 64 << 20
	// DefaultMaxSandboxes bounds how many sandboxes one user may have.
	DefaultMaxSandboxes = 32
	// DefaultMaxProcesses bounds the running processes of one sandbox
	// (StartProcess); the daemon's -max-processes.
	DefaultMaxProcesses = process.DefaultMaxRunning
	// DefaultProcessBufferBytes is the output kept per process.
	DefaultProcessBufferBytes = process.DefaultBufferBytes
	// DefaultLocalMaxProcs bounds the processes (threads included) of one
	// local sandbox, where the host gives the service a pids cgroup.
	DefaultLocalMaxProcs = 256
	// DefaultWorkspaceBytes is the size of a workspace whose spec names
	// none, and DefaultMaxWorkspaceBytes the most a spec may ask for.
	DefaultWorkspaceBytes    = 1 << 30
	DefaultMaxWorkspaceBytes = 16 << 30
	// DefaultTmpfsMB is the size of /tmp on a read-only root filesystem.
	DefaultTmpfsMB = 256
	// ReadChunk is the chunk size of file streams the service produces itself.
	ReadChunk = 256 << 10
)

// Config configures the service. Zero values take the defaults above.
type Config struct {
	// ManagerID labels this service's containers and volumes and is part of
	// their names (manager.go): an instance lists, adopts and removes only
	// what carries its own. Empty: the id kept in StateDir (file
	// manager-id), generated on first use, so every state directory is its
	// own instance and a restart on it adopts its sandboxes again.
	// Instances sharing an id and a state directory share sandboxes.
	ManagerID string
	// StateDir holds per-sandbox socket directories, local workdirs, the
	// copies of the wick binaries and the generated manager id. Created 0700.
	StateDir string
	// Ephemeral says StateDir dies with this instance (cmd/wick's temporary
	// default): no later instance can adopt its sandboxes, so Close removes
	// them, containers and volumes. Meant for a generated ManagerID.
	Ephemeral bool
	// DaemonBin and WickfsBin are the static wick-daemon and wickfs binaries
	// placed in every container.
	DaemonBin, WickfsBin string
	// DefaultImage is used when a spec names none (default backend.DefaultImage).
	DefaultImage string
	// DefaultType is the sandbox type when a spec names none: "docker" or "local".
	DefaultType string
	// LocalFallback serves docker-type requests with the local backend when
	// no Docker engine is reachable, instead of failing them.
	LocalFallback bool
	// AllowLocal permits "local" sandboxes: a directory on the service's
	// host whose commands run with the service's user, a scrubbed
	// environment and, where the kernel has Landlock, confined to that
	// directory (see startLocal). DefaultType "local" and LocalFallback imply
	// it, unless MultiUser is set.
	AllowLocal bool
	// MultiUser says that several users share the service (cmd/wick sets it
	// when tokens or a verifier are configured). Local sandboxes then need
	// AllowLocal itself, and a kernel with Landlock: without it they are
	// refused, as one user's commands could read another's workspace.
	MultiUser bool
	// AllowedDockerHosts are the remote engines a spec may name; "*" allows any.
	AllowedDockerHosts []string
	// AllowBridge lets specs ask for network "bridge".
	AllowBridge bool
	// EgressAllow bounds the destinations a spec's egress_allow may name:
	// "host:port" patterns (internal/egress.Pattern); each requested pattern
	// must lie within one of these. Empty allows no egress at all.
	EgressAllow []string
	// IdleTimeout stops a sandbox unused for this long; negative disables it.
	IdleTimeout time.Duration
	// ReapInterval is how often idle and expired sandboxes are looked for.
	ReapInterval time.Duration
	// Default and maximum resources.
	DefaultMemory, DefaultNanoCPUs, DefaultPids int64
	MaxMemory, MaxNanoCPUs, MaxPids             int64
	// DefaultExecTimeout and MaxExecTimeout bound commands.
	DefaultExecTimeout, MaxExecTimeout time.Duration
	// DefaultMaxOutput and MaxOutputCap bound command output.
	DefaultMaxOutput, MaxOutputCap int64
	// DaemonStartTimeout bounds the wait for an injected daemon to answer.
	DaemonStartTimeout time.Duration
	// HealthTimeout bounds one daemon health check.
	HealthTimeout time.Duration
	// FallbackMaxBytes bounds a file or an output moved by Docker exec.
	FallbackMaxBytes int64
	// MaxSandboxes bounds the sandboxes of one user.
	MaxSandboxes int
	// MaxProcesses bounds the running processes of one sandbox.
	MaxProcesses int
	// ProcessBufferBytes is the output kept per process: how far it may run
	// ahead of an attached caller, and the tail kept while nobody is attached.
	ProcessBufferBytes int64
	// LocalMaxProcs bounds the processes of one local sandbox (its pids
	// cgroup's pids.max); a spec's pids_limit may set a lower bound.
	LocalMaxProcs int
	// LocalReadOnly are host paths the commands of local sandboxes may read
	// besides the system's (confine.SystemReadOnly): software installed
	// outside /usr that agents run, such as the ACP adapters of
	// deploy/acp-agents. Absolute; the state dir must not lie in one.
	LocalReadOnly []string
	// WorkspaceBytes is the size of a workspace whose spec names none;
	// MaxWorkspaceBytes the most a spec may ask for (disk.go).
	WorkspaceBytes, MaxWorkspaceBytes int64
	// RequireWorkspaceBound makes New fail when this host cannot bound
	// workspaces, instead of serving them unbounded with a warning.
	RequireWorkspaceBound bool
	// Labels are added to every container and volume (tests mark theirs).
	Labels map[string]string
	// WarmPool is how many ready containers the service keeps per image of
	// WarmPoolImages on the local engine (warm.go); 0 keeps none, at most
	// MaxWarmPool.
	WarmPool int
	// WarmPoolImages are the images kept warm (default: DefaultImage).
	WarmPoolImages []string
	// BuiltinSkills places Wick's skills library (package skills) read-only
	// at <workdir>/skills in every sandbox, with SkillsDirs' skills
	// (skills.go). Neither: no library, no mount.
	BuiltinSkills bool
	// SkillsDirs are host folders of skill folders added to the library;
	// a skill named like a built-in one replaces it.
	SkillsDirs []string
}

func (c *Config) defaults() {
	set := func(p *int64, v int64) {
		if *p == 0 {
			*p = v
		}
	}
	setD := func(p *time.Duration, v time.Duration) {
		if *p == 0 {
			*p = v
		}
	}
	if c.StateDir == "" {
		c.StateDir = DefaultStateDir
	}
	if c.DefaultImage == "" {
		c.DefaultImage = backend.DefaultImage
	}
	if c.DefaultType == "" {
		c.DefaultType = backend.Docker
	}
	if c.DaemonBin == "" {
		c.DaemonBin = os.Getenv("WICK_DAEMON_BIN")
	}
	if c.WickfsBin == "" {
		c.WickfsBin = os.Getenv("WICK_WICKFS_BIN")
	}
	setD(&c.IdleTimeout, DefaultIdleTimeout)
	setD(&c.ReapInterval, DefaultReapInterval)
	set(&c.DefaultMemory, DefaultMemory)
	set(&c.DefaultNanoCPUs, DefaultNanoCPUs)
	set(&c.DefaultPids, DefaultPids)
	set(&c.MaxMemory, DefaultMaxMemory)
	set(&c.MaxNanoCPUs, DefaultMaxNanoCPUs)
	set(&c.MaxPids, DefaultMaxPids)
	setD(&c.DefaultExecTimeout, DefaultExecTimeout)
	setD(&c.MaxExecTimeout, DefaultMaxExecTime)
	set(&c.DefaultMaxOutput, DefaultMaxOutput)
	set(&c.MaxOutputCap, DefaultMaxOutputCap)
	setD(&c.DaemonStartTimeout, DefaultDaemonStart)
	setD(&c.HealthTimeout, DefaultHealthTimeout)
	set(&c.FallbackMaxBytes, DefaultFallbackMaxBytes)
	if c.MaxSandboxes == 0 {
		c.MaxSandboxes = DefaultMaxSandboxes
	}
	if c.MaxProcesses == 0 {
		c.MaxProcesses = DefaultMaxProcesses
	}
	set(&c.ProcessBufferBytes, DefaultProcessBufferBytes)
	if c.LocalMaxProcs == 0 {
		c.LocalMaxProcs = DefaultLocalMaxProcs
	}
	set(&c.WorkspaceBytes, DefaultWorkspaceBytes)
	set(&c.MaxWorkspaceBytes, DefaultMaxWorkspaceBytes)
}

// Option configures a Service beyond its Config.
type Option func(*Service)

// WithLogger sets the logger.
func WithLogger(l *slog.Logger) Option { return func(s *Service) { s.log = l } }

// WithClock replaces time.Now, for idle and TTL decisions.
func WithClock(now func() time.Time) Option { return func(s *Service) { s.now = now } }

// WithEngineDialer replaces how Docker clients are opened.
func WithEngineDialer(dial func(host string) (dockerbox.Engine, error)) Option {
	return func(s *Service) { s.pool = dockerbox.NewPool(dial) }
}

// WithMetrics registers the service's Prometheus metrics (the warm pool's)
// on reg.
func WithMetrics(reg prometheus.Registerer) Option { return func(s *Service) { s.metrics = reg } }

// WithMeterProvider sets where the service records its OpenTelemetry
// instruments (docs/sandbox.md, "Metrics"); the default is the global
// provider.
func WithMeterProvider(mp metric.MeterProvider) Option {
	return func(s *Service) { s.meterProvider = mp }
}

// Service implements sandboxv1.SandboxServiceServer.
type Service struct {
	sandboxv1.UnimplementedSandboxServiceServer

	cfg  Config
	log  *slog.Logger
	now  func() time.Time
	pool *dockerbox.Pool
	// kube, when set, runs container sandboxes as pods (kube.go).
	kube *kubebox.Client
	// kubeSkillsVol is the skills library's ConfigMap once made.
	kubeSkillsMu  sync.Mutex
	kubeSkillsVol *kubebox.Skills
	users         *dockerbox.Users
	binDir        string // host copies of the wick binaries, mounted read-only
	// egressBound is EgressAllow parsed.
	egressBound []egress.Pattern
	// egressGuard, when set, is what the egress proxies dial through.
	egressGuard *netguard.Guard

	mu     sync.Mutex
	boxes  map[string]*box // by key hash
	closed bool

	// bgCtx ends background work (reaper, re-injection) at Close.
	bgCtx      context.Context
	stopReaper context.CancelFunc
	bg         sync.WaitGroup

	// warm is the warm pool, nil without one; metrics, when set, gets
	// its metrics.
	warm    *warmPool
	metrics prometheus.Registerer

	// onFallback, when set, is told each time a call takes the Docker-exec path.
	onFallback func(op string)

	// meters are the OpenTelemetry instruments, on meterProvider;
	// sandboxGauge is the table's gauge callback, unregistered by Close.
	meterProvider metric.MeterProvider
	meters        *metrics
	sandboxGauge  metric.Registration

	// landlockABI probes the kernel (confine.ABI; tests inject others), once
	// in New; confined records whether local sandboxes run under Landlock.
	landlockABI func() int
	confined    bool
	// cgroup holds every local sandbox's cgroup (local.go); nil where the
	// host gives the service none.
	cgroup *confine.Cgroup

	// diskProbe says whether workspace images can be mounted
	// (diskimage.Probe; tests inject a failure); bounded records it.
	diskProbe func(ctx context.Context, dir string) error
	bounded   bool

	// endpoints are the HTTP services offered inside sandboxes that want
	// them (endpoints.go).
	endpoints []sandboxEndpoint
	// traceRelay forwards the spans of Docker sandboxes' daemons
	// (WithTraceRelay); nil: daemons record none.
	traceRelay tracerelay.Uploader

	// skillsDir is the snapshot of the skills library, "" without one;
	// skillsBind says local sandboxes get it by a bind mount, not a copy
	// (skills.go).
	skillsDir  string
	skillsBind bool
	// skillsProbe tries a read-only bind mount (tests inject a failure).
	skillsProbe func(src, dir string) error
}

// withLandlockProbe replaces the kernel's Landlock probe, so tests can take
// the path of a kernel without it.
func withLandlockProbe(abi func() int) Option { return func(s *Service) { s.landlockABI = abi } }

// withDiskProbe replaces the probe for workspace images, so tests can take
// the path of a host that cannot mount them.
func withDiskProbe(probe func(ctx context.Context, dir string) error) Option {
	return func(s *Service) { s.diskProbe = probe }
}

// withSkillsProbe replaces the probe for bind mounts, so tests can take
// the path of a host where local sandboxes get a copy of the skills library.
func withSkillsProbe(probe func(src, dir string) error) Option {
	return func(s *Service) { s.skillsProbe = probe }
}

// New builds the service, adopts or removes the containers a previous
// instance left behind, and starts the idle reaper. Docker need not be
// reachable: then docker-type requests fail with FailedPrecondition (or go
// to the local backend with Config.LocalFallback).
func New(cfg Config, opts ...Option) (*Service, error) {
	cfg.defaults()
	switch cfg.DefaultType {
	case backend.Docker, backend.Local:
	default:
		return nil, fmt.Errorf("sandbox: default type %q must be %q or %q", cfg.DefaultType, backend.Docker, backend.Local)
	}
	if cfg.MaxProcesses < 1 || cfg.ProcessBufferBytes < 1 {
		return nil, fmt.Errorf("sandbox: the process limit (%d) and the process buffer (%d bytes) must be positive", cfg.MaxProcesses, cfg.ProcessBufferBytes)
	}
	for _, p := range cfg.LocalReadOnly {
		if !filepath.IsAbs(p) {
			return nil, fmt.Errorf("sandbox: local read-only path %q is not absolute", p)
		}
	}
	if cfg.LocalMaxProcs < minLocalMaxProcs {
		return nil, fmt.Errorf("sandbox: the local process limit (%d) must be at least %d", cfg.LocalMaxProcs, minLocalMaxProcs)
	}
	if cfg.WorkspaceBytes < diskimage.MinBytes || cfg.WorkspaceBytes > cfg.MaxWorkspaceBytes {
		return nil, fmt.Errorf("sandbox: the workspace size (%d bytes) must be between %d and the maximum, %d", cfg.WorkspaceBytes, diskimage.MinBytes, cfg.MaxWorkspaceBytes)
	}
	if cfg.WarmPool < 0 || cfg.WarmPool > MaxWarmPool {
		return nil, fmt.Errorf("sandbox: warm pool of %d containers per image must be between 0 and %d", cfg.WarmPool, MaxWarmPool)
	}
	if cfg.MultiUser && !cfg.AllowLocal && (cfg.DefaultType == backend.Local || cfg.LocalFallback) {
		return nil, fmt.Errorf("sandbox: several users share this service and its sandboxes would run locally, on this host: that needs AllowLocal (-allow-local) set explicitly, or a Docker engine")
	}
	bound, err := egress.ParsePatterns(cfg.EgressAllow)
	if err != nil {
		return nil, fmt.Errorf("sandbox: egress bound (-egress-allow): %w", err)
	}
	s := &Service{cfg: cfg, log: slog.Default(), now: time.Now, users: dockerbox.NewUsers(), boxes: map[string]*box{},
		landlockABI: confine.ABI, diskProbe: diskimage.Probe, skillsProbe: probeBind, egressBound: bound}
	for _, o := range opts {
		o(s)
	}
	s.meters = newMetrics(s.meterProvider)
	s.endpoints = append(s.endpoints, s.egressEndpoint())
	if s.pool == nil {
		s.pool = dockerbox.NewPool(nil)
	}
	if cfg.WarmPool > 0 {
		images := cfg.WarmPoolImages
		if len(images) == 0 {
			images = []string{cfg.DefaultImage}
		}
		s.warm = newWarmPool(cfg.WarmPool, images)
		if s.metrics != nil {
			for _, c := range s.warm.collectors() {
				if err := s.metrics.Register(c); err != nil {
					return nil, fmt.Errorf("sandbox: metrics: %w", err)
				}
			}
		}
	}
	if cfg.ManagerID != "" {
		if err := ValidManagerID(cfg.ManagerID); err != nil {
			return nil, err
		}
	}
	abs, err := filepath.Abs(cfg.StateDir)
	if err != nil {
		return nil, err
	}
	s.cfg.StateDir = abs
	// Every version made this directory; one that kept no id used the
	// legacy one.
	_, statErr := os.Stat(filepath.Join(abs, "sandboxes"))
	legacy := statErr == nil
	for _, d := range []string{abs, filepath.Join(abs, "sandboxes"), filepath.Join(abs, "local"), filepath.Join(abs, "bin"), filepath.Join(abs, "warm"), filepath.Join(abs, "workspaces")} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			return nil, fmt.Errorf("sandbox: state dir: %w", err)
		}
		if err := os.Chmod(d, 0o700); err != nil {
			return nil, fmt.Errorf("sandbox: state dir: %w", err)
		}
	}
	// Containers must traverse to the binaries: bin is world-searchable, not listable
	// through its parent (0711).
	if err := os.Chmod(abs, 0o711); err != nil {
		return nil, err
	}
	if s.cfg.ManagerID == "" {
		if s.cfg.ManagerID, err = storedManagerID(abs, legacy); err != nil {
			return nil, fmt.Errorf("sandbox: %w", err)
		}
	}
	if s.kube != nil {
		s.kube.SetManager(s.cfg.ManagerID)
	}
	s.binDir = filepath.Join(abs, "bin")
	if err := os.Chmod(s.binDir, 0o755); err != nil {
		return nil, err
	}
	if s.localAllowed() {
		if err := s.checkConfinement(); err != nil {
			return nil, err
		}
		s.openCgroup()
	}
	if err := s.checkWorkspaceBounds(); err != nil {
		return nil, err
	}
	if err := s.installBinaries(); err != nil {
		return nil, err
	}
	if err := s.prepareSkills(); err != nil {
		return nil, err
	}

	s.log.Info("sandbox manager", "manager_id", s.cfg.ManagerID, "state_dir", abs)
	ctx, cancel := context.WithCancel(context.Background())
	s.bgCtx, s.stopReaper = ctx, cancel
	s.adopt(ctx)
	// The reaper also enforces TTLs, so it runs even without an idle timeout.
	s.bg.Add(1)
	go s.reapLoop(ctx)
	if s.warm != nil {
		s.bg.Add(1)
		go s.refillWarm(ctx)
	}
	if s.sandboxGauge, err = s.meters.meter.RegisterCallback(s.observeSandboxes, s.meters.gauge); err != nil {
		otel.Handle(err) // the gauge is missing, the service works
	}
	return s, nil
}

// installBinaries copies the wick binaries into the state dir, so a rebuild
// of the originals never changes what running sandboxes execute.
func (s *Service) installBinaries() error {
	for name, src := range map[string]string{dockerbox.DaemonBinary: s.cfg.DaemonBin, dockerbox.WickfsBinary: s.cfg.WickfsBin} {
		if src == "" {
			s.log.Warn("wick binary not configured; docker sandboxes are unavailable", "binary", name)
			continue
		}
		if err := copyFile(src, filepath.Join(s.binDir, name), 0o755); err != nil {
			return fmt.Errorf("sandbox: install %s: %w", name, err)
		}
	}
	return nil
}

func copyFile(src, dst string, mode os.FileMode) error {
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	tmp, err := os.CreateTemp(filepath.Dir(dst), ".tmp-*")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	if _, err := io.Copy(tmp, in); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Chmod(mode); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	return os.Rename(tmp.Name(), dst)
}

func (s *Service) haveBinaries() error {
	for _, n := range []string{dockerbox.DaemonBinary, dockerbox.WickfsBinary} {
		if _, err := os.Stat(filepath.Join(s.binDir, n)); err != nil {
			return fmt.Errorf("%w: the %s binary is not configured (-daemon-bin/-wickfs-bin or WICK_DAEMON_BIN/WICK_WICKFS_BIN)", errPrecondition, n)
		}
	}
	return nil
}

// Register registers the service on r.
func (s *Service) Register(r grpc.ServiceRegistrar) { sandboxv1.RegisterSandboxServiceServer(r, s) }

// Close stops the reaper and background work, removes the warm pool's
// ready containers and releases connections. Sandbox containers keep
// running: the next instance adopts them. Local sandboxes' processes are
// killed.
func (s *Service) Close(ctx context.Context) error {
	s.mu.Lock()
	s.closed = true
	s.mu.Unlock()
	if s.sandboxGauge != nil {
		_ = s.sandboxGauge.Unregister()
	}
	s.stopReaper()
	done := make(chan struct{})
	go func() { s.bg.Wait(); close(done) }()
	select {
	case <-done:
	case <-ctx.Done():
		return ctx.Err()
	}
	s.reapWarm(ctx)
	s.mu.Lock()
	boxes := make([]*box, 0, len(s.boxes))
	for _, b := range s.boxes {
		boxes = append(boxes, b)
	}
	s.mu.Unlock()
	var errs []error
	for _, b := range boxes {
		b.life.Lock()
		if s.cfg.Ephemeral {
			errs = append(errs, s.remove(ctx, b))
		}
		errs = append(errs, b.disconnect())
		s.releaseLocal(b.key) // local sandboxes end with the service
		b.life.Unlock()
	}
	if s.cfg.Ephemeral {
		errs = append(errs, s.sweep(ctx))
	}
	// Local sandboxes do not outlive the service: nothing adopts them.
	if s.cgroup != nil {
		errs = append(errs, s.cgroup.Remove())
	}
	s.pool.Close()
	return errors.Join(errs...)
}

// sweep removes every container and volume of this manager on the local
// engine: what an ephemeral instance made and no record of it names.
func (s *Service) sweep(ctx context.Context) error {
	e, err := s.pool.Get(ctx, "")
	if err != nil {
		return nil // no engine: nothing was made on it
	}
	cs, err := dockerbox.List(ctx, e, s.cfg.ManagerID)
	if err != nil {
		return err
	}
	var errs []error
	for _, c := range cs {
		errs = append(errs, dockerbox.Remove(ctx, e, c.ID))
	}
	vs, err := dockerbox.Volumes(ctx, e, s.cfg.ManagerID)
	if err != nil {
		return errors.Join(append(errs, err)...)
	}
	for _, v := range vs {
		errs = append(errs, dockerbox.RemoveVolume(ctx, e, v.Name))
	}
	return errors.Join(errs...)
}

// ManagerID is the manager id in use: the configured one or the one kept
// in the state directory.
func (s *Service) ManagerID() string { return s.cfg.ManagerID }

func (s *Service) localAllowed() bool {
	if s.cfg.MultiUser {
		return s.cfg.AllowLocal
	}
	return s.cfg.AllowLocal || s.cfg.DefaultType == backend.Local || s.cfg.LocalFallback
}

func (s *Service) hostAllowed(host string) bool {
	return slices.Contains(s.cfg.AllowedDockerHosts, "*") || slices.Contains(s.cfg.AllowedDockerHosts, host)
}

// Classes of the service's own errors, each with the status code a client
// sees for it; a message wraps one with %w.
var (
	errNotFound     = errcode.New(codes.NotFound, "not found")
	errInvalid      = errcode.New(codes.InvalidArgument, "invalid argument")
	errPrecondition = errcode.New(codes.FailedPrecondition, "failed precondition")
	errDenied       = errcode.New(codes.PermissionDenied, "permission denied")
	errExhausted    = errcode.New(codes.ResourceExhausted, "resource exhausted")
	errUnavailable  = errcode.New(codes.Unavailable, "unavailable")
	errNoDocker     = errcode.New(codes.FailedPrecondition, "no engine reachable: Docker is unavailable on this sandbox service")
)
