package sandbox

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	sandboxv1 "github.com/wick-agent/wick/gen/wick/sandbox/v1"
	"github.com/wick-agent/wick/services/sandbox/internal/dockerbox"
)

// The warm pool keeps, per image, a few containers ready on the local
// engine: hardened like any sandbox, wick-daemon answering, a workspace
// volume made. The first sandbox of a (user, agent) then claims one instead
// of waiting for a container to be created and started. Docker labels
// cannot change once a container exists, so a claimed container keeps its
// warm label; what makes it the sandbox's is its name (renamed to the
// sandbox's, which only one claimant can do) and the sandbox's own
// workspace volume, created at the claim with the owner's labels and the
// name of the volume that holds the workspace (LabelWorkspace). Adoption,
// restarts and deletion read ownership from there.

// MaxWarmPool bounds Config.WarmPool: each warm container holds memory.
const MaxWarmPool = 64

// Pacing of refills that fail (an image missing, an engine down).
const (
	warmRetryMin = time.Second
	warmRetryMax = time.Minute
)

// Names of warm containers, their volumes and their socket directories.
const (
	warmPrefix    = "wick-warm-"
	sandboxPrefix = "wick-"
	volumePrefix  = "wick-ws-"
)

// warmContainer is a ready container of the pool.
type warmContainer struct {
	id, name, volume, dir, image string
	cuser                        dockerbox.User
	// params are what it was created with: the service's defaults.
	params dockerbox.Params
}

// warmPool holds the ready containers; the refill loop tops it up.
type warmPool struct {
	size   int
	images []string
	kick   chan struct{} // a claim happened: refill

	mu    sync.Mutex
	ready map[string][]*warmContainer // by image

	claims *prometheus.CounterVec
}

func newWarmPool(size int, images []string) *warmPool {
	return &warmPool{size: size, images: images, kick: make(chan struct{}, 1), ready: map[string][]*warmContainer{},
		claims: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "wick_sandbox_warm_pool_claims_total",
			Help: "First starts of a sandbox that could use a warm container, by whether one was ready (hit) or the sandbox started cold (miss).",
		}, []string{"result"}),
	}
}

// collectors are the pool's metrics: claims and ready containers.
func (p *warmPool) collectors() []prometheus.Collector {
	return []prometheus.Collector{p.claims, prometheus.NewGaugeFunc(prometheus.GaugeOpts{
		Name: "wick_sandbox_warm_pool_ready",
		Help: "Warm containers ready to be claimed, over every image.",
	}, func() float64 { return float64(p.count("")) })}
}

// count is the ready containers of image, or of every image for "".
func (p *warmPool) count(image string) int {
	p.mu.Lock()
	defer p.mu.Unlock()
	if image != "" {
		return len(p.ready[image])
	}
	n := 0
	for _, ws := range p.ready {
		n += len(ws)
	}
	return n
}

func (p *warmPool) put(w *warmContainer) {
	p.mu.Lock()
	p.ready[w.image] = append(p.ready[w.image], w)
	p.mu.Unlock()
}

// take removes a ready container of image, nil when there is none, and
// asks for a refill.
func (p *warmPool) take(image string) *warmContainer {
	p.mu.Lock()
	ws := p.ready[image]
	var w *warmContainer
	if len(ws) > 0 {
		w, p.ready[image] = ws[0], ws[1:]
	}
	p.mu.Unlock()
	select {
	case p.kick <- struct{}{}:
	default:
	}
	return w
}

// drain removes every ready container.
func (p *warmPool) drain() []*warmContainer {
	p.mu.Lock()
	defer p.mu.Unlock()
	var out []*warmContainer
	for img, ws := range p.ready {
		out = append(out, ws...)
		delete(p.ready, img)
	}
	return out
}

// warmFits reports whether a sandbox built with set can be a warm
// container: one of the pool's images, on the local engine, with what a
// warm container was built with (the service's defaults). Memory, CPU and
// pids limits are set at the claim.
func (s *Service) warmFits(set settings) bool {
	p := set.Params
	return s.warm != nil && set.DockerHost == "" && slices.Contains(s.warm.images, p.Image) &&
		p.Workdir == DefaultWorkdir && p.Network == "none" && p.User == "" && len(p.Env) == 0 && !p.ReadOnly &&
		set.ExecTimeout == s.cfg.DefaultExecTimeout && set.MaxOutput == s.cfg.DefaultMaxOutput &&
		p.WorkspaceBytes == s.cfg.WorkspaceBytes
}

// claimWarm starts a new sandbox on a warm container when one fits and is
// ready; b.life is held, b has never run and its workspace volume does not
// exist. It reports whether it did: a claim that fails leaves nothing of
// itself behind, so the caller starts the sandbox cold, and the caller
// never sees the error.
func (s *Service) claimWarm(ctx context.Context, b *box, e dockerbox.Engine, set settings) bool {
	if !s.warmFits(set) {
		return false
	}
	w := s.warm.take(set.Params.Image)
	if w == nil {
		s.warm.claims.WithLabelValues("miss").Inc()
		return false
	}
	if err := s.claim(ctx, b, e, set, w); err != nil {
		s.log.Warn("claiming a warm container failed; starting the sandbox cold", "agent", b.agent, "container", w.id, "err", err)
		s.warm.claims.WithLabelValues("miss").Inc()
		return false
	}
	s.warm.claims.WithLabelValues("hit").Inc()
	return true
}

// claim makes w the sandbox b; on failure it removes w and whatever the
// claim made.
func (s *Service) claim(ctx context.Context, b *box, e dockerbox.Engine, set settings, w *warmContainer) (err error) {
	own := volumePrefix + b.key
	// A daemon that died while the container waited would hold the claim
	// for the whole daemon start timeout in connect; one health call first
	// costs about a millisecond.
	hc, cancel := context.WithTimeout(ctx, s.cfg.HealthTimeout)
	alive := s.healthy(hc, filepath.Join(w.dir, dockerbox.SocketName))
	cancel()
	// What the claim made is undone on failure, and only that: a rename
	// refused because another instance holds the name leaves that
	// instance's volume and socket directory alone.
	renamed, madeOwn := false, false
	defer func() {
		if err == nil {
			return
		}
		cctx := context.WithoutCancel(ctx)
		s.discardWarm(cctx, e, w)
		if madeOwn {
			if rerr := dockerbox.RemoveVolume(cctx, e, own); rerr != nil {
				s.log.Warn("remove workspace volume of a failed claim", "volume", own, "err", rerr)
			}
		}
		if renamed {
			_ = os.RemoveAll(b.hostDir)
		}
		b.mu.Lock()
		b.volume, b.engine, b.containerID = own, nil, ""
		b.mu.Unlock()
	}()
	if !alive {
		return fmt.Errorf("%w: the warm container's daemon does not answer", errUnavailable)
	}
	// The rename is the claim: only one instance can give a container the
	// sandbox's name.
	if err := dockerbox.Rename(ctx, e, w.id, b.name); err != nil {
		return err
	}
	renamed = true
	labels := s.labels(b, set)
	labels[dockerbox.LabelWorkspace] = w.volume
	if err := dockerbox.CreateVolume(ctx, e, own, labels); err != nil {
		return err
	}
	madeOwn = true
	// Most sandboxes ask for the defaults, which the container has; an
	// update is a cgroup write that a loaded engine can take 100 ms over.
	if p := set.Params; p.Memory != w.params.Memory || p.NanoCPUs != w.params.NanoCPUs || p.Pids != w.params.Pids {
		if err := dockerbox.SetLimits(ctx, e, w.id, p); err != nil {
			return err
		}
	}
	// The container's socket directory becomes the sandbox's; the bind
	// mount follows the directory, not its path.
	if err := os.RemoveAll(b.hostDir); err != nil {
		return fmt.Errorf("socket dir: %w", err)
	}
	if err := os.Rename(w.dir, b.hostDir); err != nil {
		return fmt.Errorf("socket dir: %w", err)
	}
	b.mu.Lock()
	b.engine, b.containerID, b.cuser, b.volume = e, w.id, w.cuser, w.volume
	b.mu.Unlock()
	return s.connect(ctx, b, filepath.Join(b.hostDir, dockerbox.SocketName))
}

// ownership returns the labels that name a container's owner and the
// volume that holds its workspace: its own labels and its sandbox's
// volume, or for a claimed warm container those its sandbox's workspace
// volume carries. ok is false for a warm container nobody claimed.
func (s *Service) ownership(ctx context.Context, e dockerbox.Engine, name string, labels map[string]string) (owner map[string]string, workspace string, ok bool) {
	if labels[dockerbox.LabelWarm] == "" {
		return labels, volumePrefix + labels[dockerbox.LabelKey], true
	}
	key, named := strings.CutPrefix(strings.TrimPrefix(name, "/"), sandboxPrefix)
	if !named || strings.HasPrefix(key, strings.TrimPrefix(warmPrefix, sandboxPrefix)) {
		return nil, "", false
	}
	v, err := e.VolumeInspect(ctx, volumePrefix+key)
	if err != nil || v.Labels[dockerbox.LabelWorkspace] == "" {
		return nil, "", false
	}
	return v.Labels, v.Labels[dockerbox.LabelWorkspace], true
}

// workspaceOf returns the volume holding b's workspace and whether the
// sandbox has one already (a returning user): its own volume, or the one a
// claimed warm container came with.
func (s *Service) workspaceOf(ctx context.Context, e dockerbox.Engine, b *box) (string, bool, error) {
	own := volumePrefix + b.key
	v, err := e.VolumeInspect(ctx, own)
	if dockerbox.IsNotFound(err) {
		return own, false, nil
	}
	if err != nil {
		return "", false, fmt.Errorf("inspect volume %s: %w", own, err)
	}
	if ws := v.Labels[dockerbox.LabelWorkspace]; ws != "" {
		return ws, true, nil
	}
	return own, true, nil
}

// refillWarm keeps the pool full until ctx ends, creating one container at
// a time; failures back off.
func (s *Service) refillWarm(ctx context.Context) {
	defer s.bg.Done()
	backoff := warmRetryMin
	for {
		err := s.fillWarm(ctx)
		if ctx.Err() != nil {
			return
		}
		if err != nil {
			s.log.Warn("warm pool refill failed", "err", err, "retry_in", backoff)
			t := time.NewTimer(backoff)
			select {
			case <-ctx.Done():
				t.Stop()
				return
			case <-t.C:
			}
			backoff = min(2*backoff, warmRetryMax)
			continue
		}
		backoff = warmRetryMin
		select {
		case <-ctx.Done():
			return
		case <-s.warm.kick:
		}
	}
}

// fillWarm creates containers until every image has the pool's size ready.
func (s *Service) fillWarm(ctx context.Context) error {
	for _, img := range s.warm.images {
		for s.warm.count(img) < s.warm.size {
			if s.kube != nil {
				w, err := s.makeWarmPod(ctx, img)
				if err != nil {
					return fmt.Errorf("warm pod of %s: %w", img, err)
				}
				s.warm.put(w)
				continue
			}
			e, err := s.pool.Get(ctx, "")
			if err != nil {
				return err
			}
			w, err := s.makeWarm(ctx, e, img)
			if err != nil {
				return fmt.Errorf("warm container of %s: %w", img, err)
			}
			s.warm.put(w)
		}
	}
	return nil
}

// makeWarm creates and starts a warm container of img and waits until its
// daemon answers. The engine calls do not end with ctx (Close): a create
// cancelled in flight can still make its container after the removal
// meant for it, which would leave it behind; ctx is checked between them.
func (s *Service) makeWarm(ctx context.Context, e dockerbox.Engine, img string) (w *warmContainer, err error) {
	if err := s.haveBinaries(); err != nil {
		return nil, err
	}
	set, err := s.resolve(&sandboxv1.SandboxSpec{Image: img})
	if err != nil {
		return nil, err
	}
	cu, err := s.users.Resolve(ctx, e, img, "")
	if err != nil {
		return nil, fmt.Errorf("resolve sandbox user: %w", err)
	}
	id := make([]byte, 8)
	_, _ = rand.Read(id)
	name := warmPrefix + hex.EncodeToString(id)
	w = &warmContainer{name: name, volume: name, dir: filepath.Join(s.cfg.StateDir, "warm", name), image: img, cuser: cu, params: set.Params}
	defer func() {
		if err != nil {
			s.discardWarm(context.WithoutCancel(ctx), e, w)
		}
	}()
	opCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 2*s.cfg.DaemonStartTimeout)
	defer cancel()
	if err := s.prepareHostDir(w.dir, cu); err != nil {
		return w, err
	}
	labels := map[string]string{dockerbox.LabelManager: s.cfg.ManagerID, dockerbox.LabelWarm: "1"}
	for k, v := range s.cfg.Labels {
		if _, taken := labels[k]; !taken {
			labels[k] = v
		}
	}
	// The mount stays for the container's starts, as a sandbox's does.
	device, err := s.boundVolume(opCtx, e, w.volume, false, set.Params.WorkspaceBytes, cu)
	if err != nil {
		return w, err
	}
	w.id, _, err = dockerbox.Create(opCtx, e, dockerbox.Spec{Name: w.name, Volume: w.volume, VolumeDevice: device, Labels: labels, Params: set.Params,
		User: cu, HostRunDir: w.dir, HostBinDir: s.binDir, HostSkillsDir: s.skillsDir, Daemon: s.daemonCommand(set)})
	if err != nil {
		return w, err
	}
	if err := ctx.Err(); err != nil {
		return w, err
	}
	if err := dockerbox.Start(opCtx, e, w.id); err != nil {
		return w, err
	}
	if err := dockerbox.PrepareWorkspace(opCtx, e, w.volume, cu); err != nil {
		return w, err
	}
	sock := filepath.Join(w.dir, dockerbox.SocketName)
	deadline := time.Now().Add(s.cfg.DaemonStartTimeout)
	for {
		hc, cancel := context.WithTimeout(ctx, s.cfg.HealthTimeout)
		ok := s.healthy(hc, sock)
		cancel()
		if ok {
			break
		}
		if time.Now().After(deadline) {
			return w, fmt.Errorf("%w: wick-daemon did not answer within %s", errUnavailable, s.cfg.DaemonStartTimeout)
		}
		select {
		case <-ctx.Done():
			return w, ctx.Err()
		case <-time.After(daemonPollInterval):
		}
	}
	return w, s.lockDir(w.dir, cu)
}

// discardWarm removes a warm container, its volume and its socket
// directory.
func (s *Service) discardWarm(ctx context.Context, e dockerbox.Engine, w *warmContainer) {
	ref := w.id
	if ref == "" {
		ref = w.name
	}
	if err := dockerbox.Remove(ctx, e, ref); err != nil {
		s.log.Warn("remove warm container", "container", ref, "err", err)
	}
	if err := dockerbox.RemoveVolume(ctx, e, w.volume); err != nil {
		s.log.Warn("remove warm volume", "volume", w.volume, "err", err)
	} else if err := s.dropVolumeImage(w.volume); err != nil {
		s.log.Warn("remove warm volume's image", "volume", w.volume, "err", err)
	}
	_ = os.RemoveAll(w.dir)
}

// reapWarm removes the ready containers at Close.
func (s *Service) reapWarm(ctx context.Context) {
	if s.warm == nil {
		return
	}
	ws := s.warm.drain()
	if len(ws) == 0 {
		return
	}
	if s.kube != nil {
		for _, w := range ws {
			if err := s.kube.Remove(ctx, w.name); err != nil {
				s.log.Warn("remove a warm pod", "pod", w.name, "err", err)
			}
		}
		return
	}
	e, err := s.pool.Get(ctx, "")
	if err != nil {
		s.log.Warn("warm containers left behind: no engine", "count", len(ws), "err", err)
		return
	}
	for _, w := range ws {
		s.discardWarm(ctx, e, w)
	}
}
