package sandbox

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"path"
	"path/filepath"
	"strings"
	"sync"
	"time"
	"unicode"

	"google.golang.org/grpc"
	"google.golang.org/protobuf/types/known/durationpb"
	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/wick-agent/wick/daemon/daemonfs"
	"github.com/wick-agent/wick/daemon/process"
	sandboxv1 "github.com/wick-agent/wick/gen/wick/sandbox/v1"
	"github.com/wick-agent/wick/platform/backend"
	"github.com/wick-agent/wick/services/sandbox/internal/diskimage"
	"github.com/wick-agent/wick/services/sandbox/internal/dockerbox"
	"github.com/wick-agent/wick/services/sandbox/internal/egress"
	"github.com/wick-agent/wick/wickfs"
	"github.com/wick-agent/wick/wickfs/confine"
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

// settings is what a sandbox was built with; it is stored in the container's
// label so a restarted service can adopt the container.
type settings struct {
	Type string `json:"type"`
	// Engine is "kubernetes" for a container sandbox run as a pod, empty
	// for one on a Docker engine.
	Engine      string           `json:"engine,omitempty"`
	DockerHost  string           `json:"docker_host,omitempty"`
	Params      dockerbox.Params `json:"params"`
	ExecTimeout time.Duration    `json:"exec_timeout"`
	MaxOutput   int64            `json:"max_output"`
	TTL         time.Duration    `json:"ttl,omitempty"`
	// Egress are the destinations the sandbox may reach through the egress
	// proxy, as canonical patterns, already checked against the bound.
	Egress  []string  `json:"egress,omitempty"`
	User    string    `json:"user"`
	Agent   string    `json:"agent"`
	Created time.Time `json:"created"`
	// ModelEndpoint offers the model endpoint inside the sandbox.
	ModelEndpoint bool `json:"model_endpoint,omitempty"`
	// EndpointToken is what the sandbox's endpoints require: made anew at
	// every start of the sandbox, kept in the container's label so that a
	// restarted service serves the running container with the token its
	// processes have.
	EndpointToken string `json:"endpoint_token,omitempty"`
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
	// daemon is the daemon-backed file system while a daemon is connected.
	daemon      *daemonfs.FS
	version     string
	lastUsed    time.Time
	expires     time.Time
	reinjecting bool
	// held is set by an explicit StopSandbox: calls then fail until the
	// sandbox is ensured or restarted, instead of starting it themselves as
	// they do after idle reaping.
	held bool
	// warm says the running container was claimed from the warm pool.
	warm bool
	// reinjectAfter and backoff pace re-injection after failures.
	reinjectAfter time.Time
	backoff       time.Duration
	// local is the workdir of a local sandbox, procs its processes.
	local *wickfs.LocalFS
	procs *process.Table
	// cgroup holds every process of a local sandbox; nil without one.
	cgroup *confine.Cgroup
	// endpoints are the sandbox service's endpoints served to this
	// sandbox while it runs, by name (endpoints.go).
	endpoints map[string]*boxEndpoint
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
	daemon      *daemonfs.FS
	local       *wickfs.LocalFS
	procs       *process.Table
}

func (b *box) view() view {
	b.mu.Lock()
	defer b.mu.Unlock()
	return view{b: b, set: b.set, state: b.state, transport: b.transport, containerID: b.containerID,
		cuser: b.cuser, engine: b.engine, daemon: b.daemon, local: b.local, procs: b.procs}
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
	if b.set.Type == backend.Local {
		p.ContainerName, p.Image, p.Network = "", "", ""
		if b.local != nil {
			p.HostWorkdir = b.local.Dir()
		}
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

// disconnect lets go of a running sandbox; a local sandbox's processes,
// however they detached, are killed.
func (b *box) disconnect() error {
	b.mu.Lock()
	conn, local, procs, cg, eps := b.conn, b.local, b.procs, b.cgroup, b.endpoints
	b.conn, b.daemon, b.local, b.procs, b.cgroup, b.endpoints = nil, nil, nil, nil, nil, nil
	b.mu.Unlock()
	for _, ep := range eps {
		_ = ep.srv.Close()
	}
	if procs != nil {
		procs.Close() // a local sandbox's processes die with it
	}
	if conn != nil {
		conn.Close()
	}
	if local != nil {
		local.Close()
	}
	if cg != nil {
		if err := cg.Remove(); err != nil {
			// Kept, so that the next stop or delete tries again.
			b.mu.Lock()
			b.cgroup = cg
			b.mu.Unlock()
			return fmt.Errorf("stop local processes: %w", err)
		}
	}
	return nil
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
	case backend.Docker:
	case backend.Local:
		if !s.localAllowed() {
			return st, fmt.Errorf("%w: local sandboxes are not enabled on this service", errDenied)
		}
	default:
		return st, fmt.Errorf("%w: type %q must be \"docker\" or \"local\"", errInvalid, st.Type)
	}
	if st.DockerHost != "" && st.Type == backend.Docker && s.kube != nil {
		return st, fmt.Errorf("%w: docker_host: this service runs sandboxes as Kubernetes pods, not on Docker engines", errInvalid)
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
		WorkspaceBytes: spec.GetWorkspaceBytes(),
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
			return st, fmt.Errorf("%w: network \"bridge\" is not allowed on this service (its operator enables it with -allow-bridge)", errDenied)
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
	if err := lim("workspace_bytes", &p.WorkspaceBytes, s.cfg.WorkspaceBytes, s.cfg.MaxWorkspaceBytes, diskimage.MinBytes); err != nil {
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
	if st.ModelEndpoint = spec.GetModelEndpoint(); st.ModelEndpoint {
		if _, ok := s.endpointFor("model"); !ok {
			return st, fmt.Errorf("%w: model_endpoint: this sandbox service has no LLM gateway to offer (-llm-http-addr)", errPrecondition)
		}
		if st.DockerHost != "" {
			return st, fmt.Errorf("%w: model_endpoint is not available on a remote engine: the service cannot listen in its socket directory there", errInvalid)
		}
	}
	eg, err := s.egressAllow(spec.GetEgressAllow())
	if err != nil {
		return st, err
	}
	if len(eg) > 0 && st.DockerHost != "" {
		return st, fmt.Errorf("%w: egress_allow is not available on a remote engine: the service cannot listen in its socket directory there", errInvalid)
	}
	st.Egress = eg
	if st.Type == backend.Docker && s.kube != nil {
		if err := s.kubeSettings(&st); err != nil {
			return st, err
		}
	}
	return st, nil
}

// egressAllow checks a spec's egress patterns against the operator's bound
// and returns them in canonical form.
func (s *Service) egressAllow(requested []string) ([]string, error) {
	if len(requested) == 0 {
		return nil, nil
	}
	ps, err := egress.ParsePatterns(requested)
	if err != nil {
		return nil, fmt.Errorf("%w: egress_allow: %v", errInvalid, err)
	}
	if _, err := egress.NewPolicy(ps, s.egressBound); err != nil {
		return nil, fmt.Errorf("%w: %v", errDenied, err)
	}
	out := make([]string, len(ps))
	for i, p := range ps {
		out[i] = p.String()
	}
	return out, nil
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
		name: sandboxPrefix + key, volume: volumePrefix + key, hostDir: s.boxDir(key)}
	s.boxes[key] = b
	return b, nil
}

func durationOr(d *durationpb.Duration, def time.Duration) time.Duration {
	if d == nil || d.AsDuration() <= 0 {
		return def
	}
	return d.AsDuration()
}

// boxDir is a sandbox's host socket directory.
func (s *Service) boxDir(key string) string { return filepath.Join(s.cfg.StateDir, "sandboxes", key) }
