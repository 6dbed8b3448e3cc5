package sandbox

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"path"
	"path/filepath"
	"strings"
	"sync"
	"time"
	"unicode"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/protobuf/types/known/durationpb"
	"google.golang.org/protobuf/types/known/timestamppb"

	daemonv1 "github.com/wick-agent/wick/gen/wick/daemon/v1"
	sandboxv1 "github.com/wick-agent/wick/gen/wick/sandbox/v1"
	"github.com/wick-agent/wick/services/sandbox/internal/dockerbox"
)

// Sandbox states and transports, as the API reports them.
const (
	stateCreating = "creating"
	stateRunning  = "running"
	stateStopped  = "stopped"
	stateFailed   = "failed"

	transportDaemon = "daemon"
	transportExec   = "exec"
	transportLocal  = "local"
)

// maxAgentID bounds agent ids, which end up in labels and logs.
const maxAgentID = 256

// daemonPollInterval paces the wait for a freshly injected daemon's socket;
// there is no event to wait on across the container boundary.
const daemonPollInterval = 5 * time.Millisecond

// settings is what a sandbox was built with; it is stored in the container's
// label so a restarted service can adopt the container.
type settings struct {
	Type        string           `json:"type"`
	DockerHost  string           `json:"docker_host,omitempty"`
	Params      dockerbox.Params `json:"params"`
	ExecTimeout time.Duration    `json:"exec_timeout"`
	MaxOutput   int64            `json:"max_output"`
	TTL         time.Duration    `json:"ttl,omitempty"`
	User        string           `json:"user"`
	Agent       string           `json:"agent"`
	Created     time.Time        `json:"created"`
}

// box is one sandbox. life serialises lifecycle changes (ensure, stop,
// restart, delete, daemon re-injection); mu guards the fields calls read.
type box struct {
	key         string
	user, agent string
	life        sync.Mutex

	mu          sync.Mutex
	set         settings
	state       string
	transport   string
	containerID string
	name        string
	volume      string
	hostDir     string
	cuser       dockerbox.User
	engine      dockerbox.Engine
	conn        *grpc.ClientConn
	daemon      daemonv1.DaemonClient
	version     string
	lastUsed    time.Time
	expires     time.Time
	reinjecting bool
	local       *localHost
}

// view is a consistent snapshot of a box for one call.
type view struct {
	b           *box
	set         settings
	state       string
	transport   string
	containerID string
	cuser       dockerbox.User
	engine      dockerbox.Engine
	daemon      daemonv1.DaemonClient
}

func (b *box) view() view {
	b.mu.Lock()
	defer b.mu.Unlock()
	return view{b: b, set: b.set, state: b.state, transport: b.transport, containerID: b.containerID,
		cuser: b.cuser, engine: b.engine, daemon: b.daemon}
}

func (b *box) proto() *sandboxv1.Sandbox {
	b.mu.Lock()
	defer b.mu.Unlock()
	p := &sandboxv1.Sandbox{
		AgentId: b.agent, UserId: b.user, Type: b.set.Type, State: b.state, Transport: b.transport,
		ContainerId: b.containerID, ContainerName: b.name, Image: b.set.Params.Image,
		DockerHost: b.set.DockerHost, Workdir: b.set.Params.Workdir, Network: b.set.Params.Network,
		DaemonVersion: b.version,
	}
	if b.set.Type == TypeLocal {
		p.ContainerName, p.Image, p.Network = "", "", ""
	}
	if b.state != stateRunning {
		p.Transport, p.DaemonVersion = "", ""
	}
	if !b.set.Created.IsZero() {
		p.CreatedAt = timestamppb.New(b.set.Created)
	}
	if !b.lastUsed.IsZero() {
		p.LastUsedAt = timestamppb.New(b.lastUsed)
	}
	if !b.expires.IsZero() {
		p.ExpiresAt = timestamppb.New(b.expires)
	}
	return p
}

func (b *box) disconnect() {
	b.mu.Lock()
	conn, lh := b.conn, b.local
	b.conn, b.daemon, b.local = nil, nil, nil
	b.mu.Unlock()
	if conn != nil {
		conn.Close()
	}
	if lh != nil {
		lh.close()
	}
}

// sandboxKey is deterministic in (manager, user, agent), so every service
// instance sharing a manager id names the same container for one sandbox.
func sandboxKey(manager, user, agent string) string {
	h := sha256.Sum256([]byte(manager + "\x00" + user + "\x00" + agent))
	return hex.EncodeToString(h[:])[:20]
}

func validAgent(agent string) error {
	if agent == "" {
		return fmt.Errorf("%w: agent_id is required", errInvalid)
	}
	if len(agent) > maxAgentID {
		return fmt.Errorf("%w: agent_id is longer than %d bytes", errInvalid, maxAgentID)
	}
	for _, r := range agent {
		if unicode.IsControl(r) {
			return fmt.Errorf("%w: agent_id contains control characters", errInvalid)
		}
	}
	return nil
}

// resolve validates a spec and fills in the defaults.
func (s *Service) resolve(spec *sandboxv1.SandboxSpec) (settings, error) {
	if spec == nil {
		spec = &sandboxv1.SandboxSpec{}
	}
	st := settings{Type: spec.GetType(), DockerHost: spec.GetDockerHost(), TTL: spec.GetTtl().AsDuration()}
	if st.Type == "" {
		st.Type = s.cfg.DefaultType
	}
	switch st.Type {
	case TypeDocker:
	case TypeLocal:
		if s.cfg.DisableLocal {
			return st, fmt.Errorf("%w: local sandboxes are disabled on this service", errDenied)
		}
	default:
		return st, fmt.Errorf("%w: type %q must be \"docker\" or \"local\"", errInvalid, st.Type)
	}
	if st.DockerHost != "" {
		if err := dockerbox.ValidateHost(st.DockerHost); err != nil {
			return st, fmt.Errorf("%w: %v", errInvalid, err)
		}
		if !s.hostAllowed(st.DockerHost) {
			return st, fmt.Errorf("%w: docker_host %q is not in this service's allowed engines", errDenied, st.DockerHost)
		}
	}
	p := dockerbox.Params{
		Image: spec.GetImage(), Workdir: spec.GetWorkdir(), Network: spec.GetNetwork(), User: spec.GetUser(),
		Memory: spec.GetMemoryBytes(), NanoCPUs: spec.GetNanoCpus(), Pids: spec.GetPidsLimit(),
		ReadOnly: spec.GetReadOnlyRootfs(), TmpfsMB: DefaultTmpfsMB, Env: spec.GetEnv(),
	}
	if p.Image == "" {
		p.Image = s.cfg.DefaultImage
	}
	if p.Workdir == "" {
		p.Workdir = DefaultWorkdir
	}
	if !path.IsAbs(p.Workdir) || path.Clean(p.Workdir) != p.Workdir || p.Workdir == "/" ||
		strings.HasPrefix(p.Workdir+"/", dockerbox.RunDir+"/") || strings.HasPrefix(p.Workdir+"/", "/opt/wick/") ||
		strings.ContainsAny(p.Workdir, ":,\x00") {
		return st, fmt.Errorf("%w: workdir %q must be a clean absolute path other than / and the service's own paths", errInvalid, p.Workdir)
	}
	if p.Network == "" {
		p.Network = "none"
	}
	switch p.Network {
	case "none":
	case "bridge":
		if !s.cfg.AllowBridge {
			return st, fmt.Errorf("%w: network \"bridge\" is not allowed on this service", errDenied)
		}
	default:
		return st, fmt.Errorf("%w: network %q must be \"none\" or \"bridge\"", errInvalid, p.Network)
	}
	lim := func(name string, v *int64, def, max, min int64) error {
		if *v == 0 {
			*v = def
		}
		if *v < min || *v > max {
			return fmt.Errorf("%w: %s %d must be between %d and %d", errInvalid, name, *v, min, max)
		}
		return nil
	}
	if err := lim("memory_bytes", &p.Memory, s.cfg.DefaultMemory, s.cfg.MaxMemory, 16<<20); err != nil {
		return st, err
	}
	if err := lim("nano_cpus", &p.NanoCPUs, s.cfg.DefaultNanoCPUs, s.cfg.MaxNanoCPUs, 10_000_000); err != nil {
		return st, err
	}
	if err := lim("pids_limit", &p.Pids, s.cfg.DefaultPids, s.cfg.MaxPids, 8); err != nil {
		return st, err
	}
	for k := range p.Env {
		if k == "" || strings.ContainsAny(k, "=\x00") {
			return st, fmt.Errorf("%w: env name %q is not valid", errInvalid, k)
		}
	}
	st.Params = p
	st.ExecTimeout = spec.GetExecTimeout().AsDuration()
	if st.ExecTimeout == 0 {
		st.ExecTimeout = s.cfg.DefaultExecTimeout
	}
	if st.ExecTimeout < 0 || st.ExecTimeout > s.cfg.MaxExecTimeout {
		return st, fmt.Errorf("%w: exec_timeout must be between 0 and %s", errInvalid, s.cfg.MaxExecTimeout)
	}
	st.MaxOutput = spec.GetMaxOutputBytes()
	if err := lim("max_output_bytes", &st.MaxOutput, s.cfg.DefaultMaxOutput, s.cfg.MaxOutputCap, 1); err != nil {
		return st, err
	}
	if st.TTL < 0 {
		return st, fmt.Errorf("%w: ttl must not be negative", errInvalid)
	}
	return st, nil
}

// lookup finds the caller's box; another user's box is simply not found.
func (s *Service) lookup(user, agent string) (*box, error) {
	if err := validAgent(agent); err != nil {
		return nil, err
	}
	key := sandboxKey(s.cfg.ManagerID, user, agent)
	s.mu.Lock()
	defer s.mu.Unlock()
	b, ok := s.boxes[key]
	if !ok || b.user != user || b.agent != agent {
		return nil, fmt.Errorf("%w: no sandbox for agent %q", errNotFound, agent)
	}
	return b, nil
}

func (s *Service) boxFor(user, agent string) (*box, error) {
	key := sandboxKey(s.cfg.ManagerID, user, agent)
	s.mu.Lock()
	defer s.mu.Unlock()
	if b, ok := s.boxes[key]; ok {
		return b, nil
	}
	n := 0
	for _, b := range s.boxes {
		if b.user == user {
			n++
		}
	}
	if n >= s.cfg.MaxSandboxes {
		return nil, fmt.Errorf("%w: user has %d sandboxes, the limit", errExhausted, n)
	}
	b := &box{key: key, user: user, agent: agent, state: stateCreating,
		name: "wick-" + key, volume: "wick-ws-" + key, hostDir: filepath.Join(s.cfg.StateDir, "sandboxes", key)}
	s.boxes[key] = b
	return b, nil
}

// ensure creates or starts the sandbox, or returns it when it runs.
func (s *Service) ensure(ctx context.Context, user, agent string, spec *sandboxv1.SandboxSpec) (*box, error) {
	if err := validAgent(agent); err != nil {
		return nil, err
	}
	set, err := s.resolve(spec)
	if err != nil {
		return nil, err
	}
	b, err := s.boxFor(user, agent)
	if err != nil {
		return nil, err
	}
	b.life.Lock()
	defer b.life.Unlock()
	b.mu.Lock()
	state := b.state
	if state == stateRunning {
		b.lastUsed = s.now()
		b.mu.Unlock()
		return b, nil
	}
	if state == stateStopped && spec == nil {
		set = b.set // restart as it was built
	}
	b.mu.Unlock()
	set.User, set.Agent = user, agent
	if err := s.start(ctx, b, set); err != nil {
		b.mu.Lock()
		if b.state == stateCreating {
			b.state = stateFailed
		}
		b.mu.Unlock()
		return nil, err
	}
	return b, nil
}

// start brings a box up; b.life is held.
func (s *Service) start(ctx context.Context, b *box, set settings) error {
	now := s.now()
	set.Created = now
	b.mu.Lock()
	b.set, b.state, b.lastUsed, b.expires = set, stateCreating, now, time.Time{}
	if set.TTL > 0 {
		b.expires = now.Add(set.TTL)
	}
	b.mu.Unlock()
	if set.Type == TypeDocker {
		e, err := s.pool.Get(ctx, set.DockerHost)
		if err != nil {
			if set.DockerHost == "" && s.cfg.LocalFallback && !s.cfg.DisableLocal {
				s.log.Warn("docker unavailable; serving the sandbox locally", "agent", b.agent, "err", err)
				set.Type = TypeLocal
				b.mu.Lock()
				b.set.Type = TypeLocal
				b.mu.Unlock()
				return s.startLocal(b)
			}
			if set.DockerHost == "" {
				return fmt.Errorf("%w (%v); use spec type \"local\" or start dockerd", errNoDocker, err)
			}
			return err
		}
		return s.startDocker(ctx, b, e, set)
	}
	return s.startLocal(b)
}

func (s *Service) startDocker(ctx context.Context, b *box, e dockerbox.Engine, set settings) error {
	if err := s.haveBinaries(); err != nil {
		return err
	}
	remote := set.DockerHost != ""
	if remote && set.Params.ReadOnly {
		return fmt.Errorf("%w: read_only_rootfs is not supported on a remote engine (the wick binaries are copied into the root filesystem)", errInvalid)
	}
	if _, err := e.ImageInspect(ctx, set.Params.Image); err != nil {
		if dockerbox.IsNotFound(err) {
			return fmt.Errorf("%w: image %q is not present on the engine; pull or build it there first", errPrecondition, set.Params.Image)
		}
		return fmt.Errorf("inspect image: %w", err)
	}
	cu, err := s.users.Resolve(ctx, e, set.Params.Image, set.Params.User)
	if err != nil {
		if errors.Is(err, dockerbox.ErrUnknownUser) {
			return fmt.Errorf("%w: %v", errInvalid, err)
		}
		return fmt.Errorf("resolve sandbox user: %w", err)
	}
	spec := dockerbox.Spec{Name: b.name, Volume: b.volume, Labels: s.labels(b, set), Params: set.Params, User: cu}
	if remote {
		spec.Binaries = map[string]string{
			dockerbox.DaemonBinary: filepath.Join(s.binDir, dockerbox.DaemonBinary),
			dockerbox.WickfsBinary: filepath.Join(s.binDir, dockerbox.WickfsBinary),
		}
	} else {
		if err := s.prepareHostDir(b.hostDir, cu); err != nil {
			return err
		}
		spec.HostRunDir, spec.HostBinDir = b.hostDir, s.binDir
	}
	id, newVolume, err := dockerbox.Create(ctx, e, spec)
	if errors.Is(err, dockerbox.ErrExists) {
		// Another instance (or a crashed one) holds the name: use its
		// container when it runs, replace it otherwise.
		if adopted, aerr := s.adoptExisting(ctx, b, e, set, cu); aerr == nil && adopted {
			return nil
		}
		if err := dockerbox.Remove(ctx, e, b.name); err != nil {
			return err
		}
		id, newVolume, err = dockerbox.Create(ctx, e, spec)
	}
	if err != nil {
		return err
	}
	fail := func(err error) error {
		_ = dockerbox.Remove(context.WithoutCancel(ctx), e, id)
		return err
	}
	if err := dockerbox.Start(ctx, e, id); err != nil {
		return fail(err)
	}
	if newVolume && !cu.Root() {
		if err := dockerbox.PrepareWorkspace(ctx, e, id, cu, set.Params.Workdir); err != nil {
			return fail(err)
		}
	}
	b.mu.Lock()
	b.engine, b.containerID, b.cuser = e, id, cu
	b.mu.Unlock()
	if remote {
		// The daemon's socket lives on the remote host, out of reach: every
		// call takes Docker exec.
		b.mu.Lock()
		b.state, b.transport = stateRunning, transportExec
		b.mu.Unlock()
		return nil
	}
	if err := s.injectAndConnect(ctx, b); err != nil {
		return fail(err)
	}
	return nil
}

func (s *Service) labels(b *box, set settings) map[string]string {
	raw, _ := json.Marshal(set)
	l := map[string]string{
		dockerbox.LabelManager: s.cfg.ManagerID, dockerbox.LabelUser: b.user, dockerbox.LabelAgent: b.agent,
		dockerbox.LabelKey: b.key, dockerbox.LabelSpec: string(raw),
	}
	for k, v := range s.cfg.Labels {
		if _, taken := l[k]; !taken {
			l[k] = v
		}
	}
	return l
}

// prepareHostDir makes the socket directory, owned by the sandbox user so its
// daemon can create the socket; the service never writes into it afterwards.
func (s *Service) prepareHostDir(dir string, u dockerbox.User) error {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("socket dir: %w", err)
	}
	if err := os.Lchown(dir, u.UID, u.GID); err != nil {
		return fmt.Errorf("socket dir: %w", err)
	}
	if err := os.Chmod(dir, 0o700); err != nil {
		return fmt.Errorf("socket dir: %w", err)
	}
	return nil
}

// injectAndConnect starts the daemon in the running container and waits
// until it answers Health; b.life is held (or b.reinjecting set).
func (s *Service) injectAndConnect(ctx context.Context, b *box) error {
	b.mu.Lock()
	e, id, cu, workdir := b.engine, b.containerID, b.cuser, b.set.Params.Workdir
	b.mu.Unlock()
	sock := filepath.Join(b.hostDir, dockerbox.SocketName)
	if fi, err := os.Lstat(sock); err == nil && fi.Mode()&os.ModeSocket != 0 {
		// A stale socket of a dead daemon; the new one binds a fresh file.
		_ = os.Remove(sock)
	}
	if err := dockerbox.InjectDaemon(ctx, e, id, cu, workdir); err != nil {
		return err
	}
	return s.connect(ctx, b, sock)
}

func (s *Service) connect(ctx context.Context, b *box, sock string) error {
	conn, err := dialSocket(sock)
	if err != nil {
		return err
	}
	cli := daemonv1.NewDaemonClient(conn)
	deadline := time.Now().Add(s.cfg.DaemonStartTimeout)
	var lastErr error
	for {
		if _, err := os.Lstat(sock); err == nil {
			hc, cancel := context.WithTimeout(ctx, s.cfg.HealthTimeout)
			h, err := cli.Health(hc, &daemonv1.HealthRequest{}, grpc.WaitForReady(true))
			cancel()
			if err == nil {
				b.mu.Lock()
				old := b.conn
				b.conn, b.daemon, b.version = conn, cli, h.GetVersion()
				b.state, b.transport = stateRunning, transportDaemon
				b.mu.Unlock()
				if old != nil {
					old.Close()
				}
				return nil
			}
			lastErr = err
		}
		if time.Now().After(deadline) {
			conn.Close()
			return fmt.Errorf("%w: wick-daemon did not answer within %s: %v", errUnavailable, s.cfg.DaemonStartTimeout, lastErr)
		}
		select {
		case <-ctx.Done():
			conn.Close()
			return ctx.Err()
		case <-time.After(daemonPollInterval):
		}
	}
}

var errUnavailable = errors.New("unavailable")

// dialSocket opens a lazy client of a daemon socket. The dialer refuses
// anything but a socket file, so a sandbox that replaced its socket with a
// symlink cannot point the service at a host socket.
func dialSocket(sock string) (*grpc.ClientConn, error) {
	dialer := func(ctx context.Context, _ string) (net.Conn, error) {
		fi, err := os.Lstat(sock)
		if err != nil {
			return nil, err
		}
		if fi.Mode()&os.ModeSocket == 0 {
			return nil, fmt.Errorf("%s is not a socket", sock)
		}
		var d net.Dialer
		return d.DialContext(ctx, "unix", sock)
	}
	return grpc.NewClient("passthrough:///wick-daemon",
		grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithContextDialer(dialer),
		grpc.WithDefaultCallOptions(grpc.MaxCallRecvMsgSize(32<<20), grpc.MaxCallSendMsgSize(32<<20)))
}

// fallback records that the daemon did not answer and re-injects it in the
// background, once at a time.
func (s *Service) fallback(b *box, op string) {
	if s.onFallback != nil {
		s.onFallback(op)
	}
	b.mu.Lock()
	if b.transport == transportDaemon {
		b.transport = transportExec
	}
	if b.reinjecting || b.state != stateRunning || b.set.DockerHost != "" || b.set.Type != TypeDocker {
		b.mu.Unlock()
		return
	}
	b.reinjecting = true
	b.mu.Unlock()
	s.log.Warn("wick-daemon not answering; using docker exec and re-injecting", "agent", b.agent, "op", op)
	s.bg.Add(1)
	go func() {
		defer s.bg.Done()
		defer func() {
			b.mu.Lock()
			b.reinjecting = false
			b.mu.Unlock()
		}()
		b.life.Lock()
		defer b.life.Unlock()
		b.mu.Lock()
		running := b.state == stateRunning
		b.mu.Unlock()
		if !running {
			return
		}
		ctx, cancel := context.WithTimeout(context.Background(), s.cfg.DaemonStartTimeout+5*time.Second)
		defer cancel()
		if err := s.injectAndConnect(ctx, b); err != nil {
			s.log.Error("re-inject wick-daemon", "agent", b.agent, "err", err)
		}
	}()
}

// stop removes the container (keeping the volume) or stops a local server.
func (s *Service) stop(ctx context.Context, b *box) error {
	b.disconnect()
	b.mu.Lock()
	e, id, typ := b.engine, b.containerID, b.set.Type
	b.mu.Unlock()
	if typ == TypeDocker && e != nil {
		if err := dockerbox.Remove(ctx, e, b.name); err != nil {
			return err
		}
		if id != "" && id != b.name {
			_ = dockerbox.Remove(ctx, e, id)
		}
	}
	b.mu.Lock()
	b.state, b.transport, b.containerID, b.version = stateStopped, "", "", ""
	b.mu.Unlock()
	return nil
}

// remove deletes everything of a box: container, volume, host state.
func (s *Service) remove(ctx context.Context, b *box) error {
	if err := s.stop(ctx, b); err != nil {
		return err
	}
	b.mu.Lock()
	set, e := b.set, b.engine
	b.mu.Unlock()
	if set.Type == TypeDocker {
		if e == nil {
			var err error
			if e, err = s.pool.Get(ctx, set.DockerHost); err != nil {
				return err
			}
		}
		if err := dockerbox.RemoveVolume(ctx, e, b.volume); err != nil {
			return err
		}
	}
	if err := os.RemoveAll(b.hostDir); err != nil {
		return fmt.Errorf("remove socket dir: %w", err)
	}
	if err := os.RemoveAll(filepath.Join(s.cfg.StateDir, "local", b.key)); err != nil {
		return fmt.Errorf("remove local workdir: %w", err)
	}
	s.mu.Lock()
	if s.boxes[b.key] == b {
		delete(s.boxes, b.key)
	}
	s.mu.Unlock()
	return nil
}

// adoptExisting takes over a running container of this sandbox found by
// name, when its daemon answers (re-injecting once if it does not).
func (s *Service) adoptExisting(ctx context.Context, b *box, e dockerbox.Engine, set settings, cu dockerbox.User) (bool, error) {
	in, err := e.ContainerInspect(ctx, b.name)
	if err != nil {
		return false, err
	}
	if in.Config == nil || in.Config.Labels[dockerbox.LabelKey] != b.key || in.State == nil || !in.State.Running {
		return false, nil
	}
	if raw := in.Config.Labels[dockerbox.LabelSpec]; raw != "" {
		var old settings
		if json.Unmarshal([]byte(raw), &old) == nil && old.Params.Image != "" {
			set = old
		}
	}
	b.mu.Lock()
	b.set, b.engine, b.containerID, b.cuser = set, e, in.ID, cu
	b.mu.Unlock()
	if set.DockerHost != "" {
		b.mu.Lock()
		b.state, b.transport = stateRunning, transportExec
		b.mu.Unlock()
		return true, nil
	}
	sock := filepath.Join(b.hostDir, dockerbox.SocketName)
	hc, cancel := context.WithTimeout(ctx, s.cfg.HealthTimeout)
	defer cancel()
	if s.healthy(hc, sock) {
		return true, s.connect(ctx, b, sock)
	}
	return true, s.injectAndConnect(ctx, b)
}

func (s *Service) healthy(ctx context.Context, sock string) bool {
	conn, err := dialSocket(sock)
	if err != nil {
		return false
	}
	defer conn.Close()
	_, err = daemonv1.NewDaemonClient(conn).Health(ctx, &daemonv1.HealthRequest{})
	return err == nil
}

// adopt runs at start: containers with this manager's label that the
// service does not know are adopted when their daemon answers, else removed,
// so a crash leaves no orphans.
func (s *Service) adopt(ctx context.Context) {
	e, err := s.pool.Get(ctx, "")
	if err != nil {
		s.log.Info("no local docker engine; nothing to adopt", "err", err)
		return
	}
	cs, err := dockerbox.List(ctx, e, s.cfg.ManagerID)
	if err != nil {
		s.log.Warn("list sandbox containers", "err", err)
		return
	}
	for _, c := range cs {
		l := c.Labels
		user, agent, key := l[dockerbox.LabelUser], l[dockerbox.LabelAgent], l[dockerbox.LabelKey]
		var set settings
		ok := key != "" && key == sandboxKey(s.cfg.ManagerID, user, agent) && c.State == "running" &&
			json.Unmarshal([]byte(l[dockerbox.LabelSpec]), &set) == nil && set.Params.Workdir != ""
		if ok {
			ok = s.adoptOne(ctx, e, c.ID, user, agent, set)
		}
		if !ok {
			s.log.Info("removing orphan sandbox container", "container", c.ID, "agent", agent)
			if err := dockerbox.Remove(ctx, e, c.ID); err != nil {
				s.log.Warn("remove orphan", "container", c.ID, "err", err)
			}
		}
	}
}

func (s *Service) adoptOne(ctx context.Context, e dockerbox.Engine, id, user, agent string, set settings) bool {
	b, err := s.boxFor(user, agent)
	if err != nil {
		return false
	}
	b.life.Lock()
	defer b.life.Unlock()
	sock := filepath.Join(b.hostDir, dockerbox.SocketName)
	hc, cancel := context.WithTimeout(ctx, s.cfg.HealthTimeout)
	alive := s.healthy(hc, sock)
	cancel()
	if !alive {
		s.mu.Lock()
		delete(s.boxes, b.key)
		s.mu.Unlock()
		return false
	}
	cu, err := s.users.Resolve(ctx, e, set.Params.Image, set.Params.User)
	if err != nil {
		cu = dockerbox.User{Name: set.Params.User}
	}
	now := s.now()
	b.mu.Lock()
	b.set, b.engine, b.containerID, b.cuser, b.lastUsed = set, e, id, cu, now
	if set.TTL > 0 {
		b.expires = set.Created.Add(set.TTL)
	}
	b.mu.Unlock()
	if err := s.connect(ctx, b, sock); err != nil {
		s.mu.Lock()
		delete(s.boxes, b.key)
		s.mu.Unlock()
		return false
	}
	s.log.Info("adopted sandbox container", "container", id, "agent", agent)
	return true
}

func (s *Service) reapLoop(ctx context.Context) {
	defer s.bg.Done()
	t := time.NewTicker(s.cfg.ReapInterval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			s.reapOnce(ctx)
		}
	}
}

// reapOnce stops every sandbox idle past the timeout or past its TTL.
func (s *Service) reapOnce(ctx context.Context) int {
	now := s.now()
	s.mu.Lock()
	var due []*box
	for _, b := range s.boxes {
		b.mu.Lock()
		idle := s.cfg.IdleTimeout > 0 && now.Sub(b.lastUsed) >= s.cfg.IdleTimeout
		expired := !b.expires.IsZero() && !now.Before(b.expires)
		if b.state == stateRunning && (idle || expired) {
			due = append(due, b)
		}
		b.mu.Unlock()
	}
	s.mu.Unlock()
	n := 0
	for _, b := range due {
		if !b.life.TryLock() {
			continue // busy with a lifecycle change; next round
		}
		if err := s.stop(ctx, b); err != nil {
			s.log.Warn("stop idle sandbox", "agent", b.agent, "err", err)
		} else {
			n++
			s.log.Info("stopped idle or expired sandbox", "agent", b.agent)
		}
		b.life.Unlock()
	}
	return n
}

func durationOr(d *durationpb.Duration, def time.Duration) time.Duration {
	if d == nil || d.AsDuration() <= 0 {
		return def
	}
	return d.AsDuration()
}
