package sandbox

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"time"

	"google.golang.org/protobuf/proto"

	daemonv1 "github.com/wick-agent/wick/gen/wick/daemon/v1"
	sandboxv1 "github.com/wick-agent/wick/gen/wick/sandbox/v1"
	"github.com/wick-agent/wick/platform/backend"
	"github.com/wick-agent/wick/services/sandbox/internal/dockerbox"
	"github.com/wick-agent/wick/services/sandbox/internal/modelproxy"
)

// ensure creates or starts the sandbox, or returns it when it runs.
func (s *Service) ensure(ctx context.Context, user, agent string, spec *sandboxv1.SandboxSpec) (*box, error) {
	if err := validAgent(agent); err != nil {
		return nil, err
	}
	set, err := s.resolve(spec)
	if err != nil {
		return nil, err
	}
	b, err := s.lockedBox(user, agent)
	if err != nil {
		return nil, err
	}
	defer b.life.Unlock()
	b.mu.Lock()
	state := b.state
	if state == stateRunning {
		b.lastUsed = s.now()
		b.mu.Unlock()
		if s.alive(ctx, b) {
			return b, nil
		}
		// The container went away behind the service's back: start afresh
		// on the same workspace.
		if err := s.stop(ctx, b); err != nil {
			return nil, err
		}
		state = stateStopped
		b.mu.Lock()
	}
	if state == stateStopped && proto.Size(spec) == 0 {
		set = b.set // restart as it was built
	}
	b.mu.Unlock()
	set.User, set.Agent = user, agent
	if err := s.start(ctx, b, set, state != stateStopped); err != nil {
		b.mu.Lock()
		b.state = stateFailed
		b.mu.Unlock()
		if state != stateStopped {
			// A sandbox that never ran leaves no record behind.
			s.mu.Lock()
			if s.boxes[b.key] == b {
				delete(s.boxes, b.key)
			}
			s.mu.Unlock()
		}
		return nil, err
	}
	return b, nil
}

// lockedBox returns the caller's box with its life lock held. A box can
// leave the map while a caller waits for its lock (a first start that
// failed, a destroy); starting that one would run a sandbox no later
// request finds, so the caller waits on the box that replaced it.
func (s *Service) lockedBox(user, agent string) (*box, error) {
	for {
		b, err := s.boxFor(user, agent)
		if err != nil {
			return nil, err
		}
		if s.lockCurrent(b) {
			return b, nil
		}
	}
}

// lockCurrent takes b's life lock and keeps it if b is still the box of
// its key; otherwise it lets go and reports false.
func (s *Service) lockCurrent(b *box) bool {
	b.life.Lock()
	s.mu.Lock()
	current := s.boxes[b.key] == b
	s.mu.Unlock()
	if !current {
		b.life.Unlock()
	}
	return current
}

// start brings a box up; b.life is held. fresh says the sandbox never ran.
// Its time is recorded by type, result and whether a warm container was
// claimed.
func (s *Service) start(ctx context.Context, b *box, set settings, fresh bool) error {
	begin := time.Now()
	err := s.bringUp(ctx, b, set, fresh)
	b.mu.Lock()
	typ, warm := b.set.Type, b.warm
	b.mu.Unlock()
	if typ == "" {
		typ = s.cfg.DefaultType
	}
	s.meters.created(ctx, typ, err, warm, time.Since(begin))
	return err
}

// bringUp is start without its measurement.
func (s *Service) bringUp(ctx context.Context, b *box, set settings, fresh bool) error {
	now := s.now()
	b.mu.Lock()
	set.Created = b.set.Created // when the sandbox, not this container, was created
	if set.Created.IsZero() {
		set.Created = now
	}
	// A new container gets a new token: one a previous container's
	// processes knew is worth nothing now.
	set.EndpointToken = ""
	if s.wantsEndpoints(set) {
		set.EndpointToken = modelproxy.NewToken()
	}
	b.set, b.state, b.lastUsed, b.expires, b.held, b.warm = set, stateCreating, now, time.Time{}, false, false
	if set.TTL > 0 {
		b.expires = now.Add(set.TTL)
	}
	b.mu.Unlock()
	if set.onKube() {
		return s.startKube(ctx, b, set, fresh)
	}
	if set.Type == backend.Docker {
		e, err := s.pool.Get(ctx, set.DockerHost)
		if err != nil {
			if set.DockerHost == "" && s.cfg.LocalFallback {
				s.log.Warn("docker unavailable; serving the sandbox locally", "agent", b.agent, "err", err)
				set.Type = backend.Local
				b.mu.Lock()
				b.set.Type = backend.Local
				b.mu.Unlock()
				return s.startLocal(b)
			}
			if set.DockerHost == "" {
				return fmt.Errorf("%w (%v); use spec type \"local\" or start dockerd", errNoDocker, err)
			}
			return err
		}
		return s.startDocker(ctx, b, e, set, fresh)
	}
	return s.startLocal(b)
}

func (s *Service) startDocker(ctx context.Context, b *box, e dockerbox.Engine, set settings, fresh bool) error {
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
	exists := false
	if !remote {
		// A returning user's workspace is never swapped for a fresh one:
		// only a sandbox that never ran and has no workspace yet may
		// claim a warm container.
		var ws string
		ws, exists, err = s.workspaceOf(ctx, e, b)
		if err != nil {
			return err
		}
		b.mu.Lock()
		b.volume = ws
		b.mu.Unlock()
		// A warm container was made without endpoints (its command and
		// environment are fixed), so a sandbox that wants them starts cold.
		if fresh && !exists && !s.wantsEndpoints(set) && s.claimWarm(ctx, b, e, set) {
			b.mu.Lock()
			b.warm = true
			b.mu.Unlock()
			return nil
		}
	}
	spec := dockerbox.Spec{Name: b.name, Volume: b.volume, Labels: s.labels(b, set), Params: set.Params, User: cu}
	spec.Params.Env = s.sandboxEnv(set, nil)
	if !remote {
		// The engine binds the mounted directory at every start of the
		// container, its own restarts included, so the mount stays until
		// the service removes the container (stop).
		device, err := s.boundVolume(ctx, e, b.volume, exists, set.Params.WorkspaceBytes, cu)
		if err != nil {
			return err
		}
		spec.VolumeDevice = device
	}
	if remote {
		spec.Binaries = map[string]string{
			dockerbox.DaemonBinary: filepath.Join(s.binDir, dockerbox.DaemonBinary),
			dockerbox.WickfsBinary: filepath.Join(s.binDir, dockerbox.WickfsBinary),
		}
		spec.CopySkillsDir = s.skillsDir
	} else {
		spec.HostSkillsDir = s.skillsDir
		if err := s.prepareHostDir(b.hostDir, cu); err != nil {
			return err
		}
		spec.HostRunDir, spec.HostBinDir, spec.Daemon = b.hostDir, s.binDir, s.daemonCommand(set)
	}
	id, newVolume, err := dockerbox.Create(ctx, e, spec)
	if errors.Is(err, dockerbox.ErrExists) {
		// Another instance (or a crashed one) holds the name: use its
		// container when it runs, replace it otherwise.
		adopted, aerr := s.adoptExisting(ctx, b, e, set, cu)
		if aerr == nil && adopted {
			return nil
		}
		if aerr != nil {
			return aerr
		}
		if !s.removable(ctx, e, b.name, b.key) {
			return fmt.Errorf("%w: container %s holds this sandbox's name and is alive, but this instance cannot use it (another instance's, sharing manager id %q from another state directory)",
				errPrecondition, b.name, s.cfg.ManagerID)
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
	if newVolume && !remote {
		if err := dockerbox.PrepareWorkspace(ctx, e, b.volume, cu); err != nil {
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
	// The container's command started the daemon; inject it only if it
	// does not come up.
	if err := s.connect(ctx, b, filepath.Join(b.hostDir, dockerbox.SocketName)); err != nil {
		s.log.Warn("wick-daemon did not start with the container; injecting it", "agent", b.agent, "err", err)
		if err := s.injectAndConnect(ctx, b); err != nil {
			return fail(err)
		}
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
// daemon can bind the socket; lockHostDir takes it back once the daemon
// answers. Apart from that and removing a stale socket, the service never
// writes into it.
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
	// A previous container's socket would answer "refused" until replaced.
	if fi, err := os.Lstat(filepath.Join(dir, dockerbox.SocketName)); err == nil && fi.Mode()&os.ModeSocket != 0 {
		_ = os.Remove(filepath.Join(dir, dockerbox.SocketName))
	}
	return nil
}

// lockHostDir makes the socket directory read-only for the sandbox once its
// daemon's socket is bound, so nothing in the container can store files on
// the host through it. The owner is one the sandbox user is not, as an owner
// could change the mode back.
func (s *Service) lockHostDir(b *box) error {
	b.mu.Lock()
	cu := b.cuser
	b.mu.Unlock()
	return s.lockDir(b.hostDir, cu)
}

// lockDir is lockHostDir of the socket directory dir of a container
// running as cu.
func (s *Service) lockDir(dir string, cu dockerbox.User) error {
	owner := 0
	if cu.UID == 0 {
		owner = 65534
	}
	if err := os.Lchown(dir, owner, owner); err != nil {
		return fmt.Errorf("lock socket dir: %w", err)
	}
	if err := os.Chmod(dir, 0o755); err != nil {
		return fmt.Errorf("lock socket dir: %w", err)
	}
	return nil
}

// alive reports whether a running sandbox can serve calls: its daemon
// answers, or at least its container runs (then the daemon is re-injected).
func (s *Service) alive(ctx context.Context, b *box) bool {
	v := b.view()
	if v.set.Type == backend.Local {
		return true
	}
	if v.set.onKube() {
		return s.aliveKube(ctx, v)
	}
	if v.daemon != nil && v.transport == transportDaemon {
		hc, cancel := context.WithTimeout(ctx, s.cfg.HealthTimeout)
		_, err := v.daemon.Client().Health(hc, &daemonv1.HealthRequest{})
		cancel()
		if err == nil {
			return true
		}
	}
	in, err := v.engine.ContainerInspect(ctx, v.containerID)
	if err != nil || in.State == nil || !in.State.Running {
		return !dockerbox.IsNotFound(err) && err != nil // an engine hiccup is not a verdict
	}
	if v.set.DockerHost == "" {
		s.fallback(b, "ensure")
	}
	return true
}

// stop removes the container (keeping the volume) or stops a local server.
func (s *Service) stop(ctx context.Context, b *box) error {
	if err := b.disconnect(); err != nil {
		return err
	}
	b.mu.Lock()
	e, id, typ, volume, remote, kube := b.engine, b.containerID, b.set.Type, b.volume, b.set.DockerHost != "", b.set.onKube()
	b.mu.Unlock()
	if kube {
		if err := s.kube.DeletePod(ctx, b.name); err != nil {
			return err
		}
	}
	if typ == backend.Docker && e != nil {
		if err := dockerbox.Remove(ctx, e, b.name); err != nil {
			return err
		}
		if id != "" && id != b.name {
			_ = dockerbox.Remove(ctx, e, id)
		}
		if !remote {
			s.releaseVolume(volume)
		}
	}
	if typ == backend.Local {
		s.releaseLocal(b.key)
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
	if set.onKube() {
		if err := s.kube.Remove(ctx, b.name); err != nil {
			return err
		}
	} else if set.Type == backend.Docker {
		if e == nil {
			var err error
			if e, err = s.pool.Get(ctx, set.DockerHost); err != nil {
				return err
			}
		}
		// A sandbox that claimed a warm container has its workspace on
		// that container's volume and its own as the record of it.
		ws, _, err := s.workspaceOf(ctx, e, b)
		if err != nil {
			return err
		}
		for _, v := range slices.Compact([]string{ws, volumePrefix + b.key}) {
			if err := dockerbox.RemoveVolume(ctx, e, v); err != nil {
				return err
			}
			if err := s.dropVolumeImage(v); err != nil {
				return err
			}
		}
	}
	if err := os.RemoveAll(b.hostDir); err != nil {
		return fmt.Errorf("remove socket dir: %w", err)
	}
	if err := os.Remove(filepath.Join(s.cfg.StateDir, "local", b.key+".img")); err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("remove local workspace image: %w", err)
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
