package sandbox

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"path"
	"slices"
	"strconv"
	"strings"
	"time"

	"go.opentelemetry.io/contrib/instrumentation/google.golang.org/grpc/otelgrpc"
	"google.golang.org/grpc"

	"github.com/wick-agent/wick/daemon/daemonfs"
	daemonv1 "github.com/wick-agent/wick/gen/wick/daemon/v1"
	sandboxv1 "github.com/wick-agent/wick/gen/wick/sandbox/v1"
	"github.com/wick-agent/wick/platform/backend"
	"github.com/wick-agent/wick/services/sandbox/internal/endpoint"
	"github.com/wick-agent/wick/services/sandbox/internal/tracerelay"
	"github.com/wick-agent/wick/services/sandbox/internal/tunnel"
	"github.com/wick-agent/wick/services/sandbox/kubebox"
)

// engineKubernetes marks, in a sandbox's settings, a container sandbox run
// as a Kubernetes pod rather than a Docker container.
const engineKubernetes = "kubernetes"

// WithKubernetes runs container ("docker" type) sandboxes as pods through
// c instead of on a Docker engine. Remote engines are not offered on it.
func WithKubernetes(c *kubebox.Client) Option { return func(s *Service) { s.kube = c } }

// onKube reports whether the settings describe a sandbox pod.
func (st settings) onKube() bool { return st.Type == backend.Docker && st.Engine == engineKubernetes }

// kubeSettings checks what a spec asks of a sandbox pod.
func (s *Service) kubeSettings(st *settings) error {
	st.Engine = engineKubernetes
	// The operator picks the user (Pod Security needs a numeric non-root
	// one known before the image is pulled); a spec may only name it.
	if u := st.Params.User; u != "" {
		ra := s.kube.RunAs()
		uid := strconv.FormatInt(ra.UID, 10)
		if u != uid && u != uid+":"+strconv.FormatInt(ra.GID, 10) {
			return fmt.Errorf("%w: user %q: sandbox pods run as %s:%d, which the operator sets (-kube-run-as)", errInvalid, u, uid, ra.GID)
		}
	}
	return nil
}

// kubeSpec is the pod of the sandbox b built with set.
func (s *Service) kubeSpec(b *box, set settings) kubebox.Spec {
	// The endpoints' token goes into the sandbox's Secret, not into the
	// annotation that records the settings.
	rec := set
	rec.EndpointToken = ""
	raw, _ := json.Marshal(rec)
	p := set.Params
	args := []string{"-socket", path.Join(kubebox.RunDir, "daemon.sock"), "-tcp-addr", kubebox.DaemonAddr(),
		"-root", p.Workdir, "-prefix", p.Workdir, "-log-level", "warn",
		"-exec-timeout", set.ExecTimeout.String(), "-max-output-bytes", strconv.FormatInt(set.MaxOutput, 10),
		"-max-processes", strconv.Itoa(s.cfg.MaxProcesses),
		"-process-buffer-bytes", strconv.FormatInt(s.cfg.ProcessBufferBytes, 10)}
	// The endpoints are reached the other way round: the daemon listens on
	// the pod's loopback and hands each connection to the service's Tunnel
	// call (serveKubeEndpoints), so the pod needs no network for them.
	for _, ep := range s.endpoints {
		if ep.wanted(set) {
			args = append(args, "-tunnel", ep.name+"="+strconv.Itoa(ep.port))
		}
	}
	if s.relaysTraces(set) {
		sock := path.Join(kubebox.RunDir, traceSocket)
		args = append(args, "-tunnel", traceTunnel+"="+sock, "-otlp-socket", sock)
	}
	env := s.sandboxEnv(set, nil)
	var secretEnv []string
	for k, v := range env {
		if set.EndpointToken != "" && v == set.EndpointToken {
			secretEnv = append(secretEnv, k)
		}
	}
	slices.Sort(secretEnv)
	return kubebox.Spec{Name: b.name, Key: b.key, User: b.user, Agent: b.agent, Settings: string(raw),
		Image: p.Image, Workdir: p.Workdir, Network: p.Network, Memory: p.Memory, NanoCPUs: p.NanoCPUs,
		ReadOnly: p.ReadOnly, TmpfsMB: p.TmpfsMB, WorkspaceBytes: p.WorkspaceBytes, Env: env,
		EndpointToken: set.EndpointToken, SecretEnv: secretEnv, DaemonArgs: args}
}

// startKube runs the sandbox's pod (its workspace claim kept from earlier
// starts) and connects to its daemon; b.life is held. A start that fails
// leaves no pod behind, and one that made the workspace nothing at all.
func (s *Service) startKube(ctx context.Context, b *box, set settings, fresh bool) error {
	spec := s.kubeSpec(b, set)
	if s.skillsDir != "" {
		sk, err := s.kubeSkills(ctx)
		if err != nil {
			return err
		}
		spec.Skills = sk
	}
	if fresh && s.warm != nil && s.claimKube(ctx, b, set) {
		b.mu.Lock()
		b.warm = true
		b.mu.Unlock()
		return nil
	}
	st, err := s.kube.Start(ctx, spec)
	if err == nil {
		b.mu.Lock()
		b.containerID, b.volume = st.UID, kubebox.ClaimName(b.name)
		// A pod that already ran (a start a restart of the service
		// interrupted) knows the stored token, not the one just made.
		b.set.EndpointToken = st.EndpointToken
		b.mu.Unlock()
		err = s.connectKube(ctx, b, st.Token)
	}
	if err != nil {
		cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), time.Minute)
		defer cancel()
		clean := s.kube.DeletePod
		if fresh && st.NewWorkspace {
			clean = s.kube.Remove
		}
		if cerr := clean(cctx, b.name); cerr != nil {
			s.log.Warn("clean up after a failed start of a sandbox pod", "agent", b.agent, "err", cerr)
		}
		return s.kubeErr(err)
	}
	return nil
}

// kubeSkills is the skills library's ConfigMap, made once per service.
func (s *Service) kubeSkills(ctx context.Context) (*kubebox.Skills, error) {
	s.kubeSkillsMu.Lock()
	defer s.kubeSkillsMu.Unlock()
	if s.kubeSkillsVol == nil {
		sk, err := s.kube.EnsureSkills(ctx, s.skillsDir)
		if err != nil {
			return nil, err
		}
		s.kubeSkillsVol = sk
	}
	return s.kubeSkillsVol, nil
}

// kubeErr gives a pod that cannot run as specified its status code.
func (s *Service) kubeErr(err error) error {
	if errors.Is(err, kubebox.ErrPodFailed) {
		return fmt.Errorf("%w: %v", errPrecondition, err)
	}
	return err
}

// connectKube dials the pod's daemon through port-forward and waits until
// it answers Health.
func (s *Service) connectKube(ctx context.Context, b *box, token string) error {
	name := b.name
	conn, err := daemonfs.Dial(ctx, "wick-daemon", token, append([]grpc.DialOption{
		grpc.WithContextDialer(func(ctx context.Context, _ string) (net.Conn, error) { return s.kube.Dial(ctx, name) }),
		grpc.WithStatsHandler(otelgrpc.NewClientHandler()),
		grpc.WithDefaultCallOptions(grpc.MaxCallRecvMsgSize(32<<20), grpc.MaxCallSendMsgSize(32<<20)),
	}, s.meters.dialOptions()...)...)
	if err != nil {
		return err
	}
	cli := daemonv1.NewDaemonClient(conn)
	deadline := time.Now().Add(s.cfg.DaemonStartTimeout)
	for {
		hc, cancel := context.WithTimeout(ctx, s.cfg.HealthTimeout)
		h, err := cli.Health(hc, &daemonv1.HealthRequest{})
		cancel()
		if err == nil {
			s.attachDaemon(b, conn, cli, h.GetVersion())
			s.serveKubeEndpoints(b)
			return nil
		}
		if time.Now().After(deadline) {
			conn.Close()
			return fmt.Errorf("%w: wick-daemon in pod %s did not answer within %s: %v", errUnavailable, name, s.cfg.DaemonStartTimeout, err)
		}
		select {
		case <-ctx.Done():
			conn.Close()
			return ctx.Err()
		case <-time.After(daemonPollInterval):
		}
	}
}

// aliveKube is alive for a sandbox pod: its daemon answers, or its pod
// still runs (the kubelet restarts a daemon that exited, and the
// connection dials again).
func (s *Service) aliveKube(ctx context.Context, v view) bool {
	if v.daemon != nil {
		hc, cancel := context.WithTimeout(ctx, s.cfg.HealthTimeout)
		_, err := v.daemon.Client().Health(hc, &daemonv1.HealthRequest{})
		cancel()
		if err == nil {
			return true
		}
	}
	p, err := s.kube.GetPod(ctx, v.b.name)
	if err != nil {
		return true // an API server hiccup is not a verdict
	}
	return kubebox.Running(p) && string(p.UID) == v.containerID
}

// reviveKube is called when a sandbox pod's daemon did not answer: when
// the pod the box knows has gone (deleted, evicted, its node lost), a new
// one is started on the same workspace. It returns the daemon to retry on.
func (s *Service) reviveKube(ctx context.Context, b *box, seen string) *daemonfs.FS {
	if !s.lockCurrent(b) {
		return nil
	}
	defer b.life.Unlock()
	v := b.view()
	if v.state == stateRunning && v.containerID == seen && !s.aliveKube(ctx, v) {
		s.log.Warn("sandbox pod is gone; starting a new one on its workspace", "agent", b.agent)
		if err := s.stop(ctx, b); err != nil {
			s.log.Error("stop sandbox pod", "agent", b.agent, "err", err)
			return nil
		}
		if err := s.start(ctx, b, v.set, false); err != nil {
			s.log.Error("restart sandbox pod", "agent", b.agent, "err", err)
			b.mu.Lock()
			b.state = stateFailed
			b.mu.Unlock()
			return nil
		}
	}
	return b.view().daemon
}

// adoptKube runs at start: this manager's pods that run are adopted, and
// workspaces whose pod has gone are listed as stopped sandboxes.
func (s *Service) adoptKube(ctx context.Context) {
	// A previous life's warm pods: the pool is made anew.
	if err := s.kube.RemoveWarm(ctx); err != nil {
		s.log.Warn("remove warm sandbox pods left behind", "err", err)
	}
	s.pruneKubeSkills(ctx)
	pods, err := s.kube.Pods(ctx)
	if err != nil {
		s.log.Warn("list sandbox pods", "err", err)
		return
	}
	for _, p := range pods {
		user, agent, key := p.Annotations[kubebox.AnnotationUser], p.Annotations[kubebox.AnnotationAgent], p.Labels[kubebox.LabelKey]
		var set settings
		if key == "" || key != sandboxKey(s.cfg.ManagerID, user, agent) ||
			json.Unmarshal([]byte(p.Annotations[kubebox.AnnotationSpec]), &set) != nil || !set.onKube() {
			continue
		}
		if !kubebox.Running(&p) {
			continue // listed as stopped below; the next call starts it
		}
		b, err := s.boxFor(user, agent)
		if err != nil {
			continue
		}
		b.life.Lock()
		tokens, err := s.kube.Tokens(ctx, p.Name)
		if err == nil {
			b.mu.Lock()
			// A sandbox that claimed a warm pod keeps that pod's name.
			b.name = p.Name
			set.EndpointToken = tokens.EndpointToken
			b.set, b.containerID, b.volume, b.lastUsed = set, string(p.UID), kubebox.ClaimName(p.Name), s.now()
			if set.TTL > 0 {
				b.expires = p.CreationTimestamp.Add(set.TTL)
			}
			b.mu.Unlock()
			err = s.connectKube(ctx, b, tokens.Token)
		}
		if err != nil {
			s.log.Warn("adopt sandbox pod", "pod", p.Name, "err", err)
			s.mu.Lock()
			delete(s.boxes, b.key)
			s.mu.Unlock()
		} else {
			s.log.Info("adopted sandbox pod", "pod", p.Name, "agent", agent)
		}
		b.life.Unlock()
	}
	claims, err := s.kube.Claims(ctx)
	if err != nil {
		s.log.Warn("list workspace claims", "err", err)
		return
	}
	for _, c := range claims {
		user, agent, key := c.Annotations[kubebox.AnnotationUser], c.Annotations[kubebox.AnnotationAgent], c.Labels[kubebox.LabelKey]
		var set settings
		if key == "" || key != sandboxKey(s.cfg.ManagerID, user, agent) ||
			json.Unmarshal([]byte(c.Annotations[kubebox.AnnotationSpec]), &set) != nil || !set.onKube() {
			continue
		}
		s.mu.Lock()
		if _, known := s.boxes[key]; !known {
			s.boxes[key] = &box{key: key, user: user, agent: agent, state: stateStopped, set: set,
				name: strings.TrimPrefix(c.Name, "ws-"), volume: c.Name, hostDir: s.boxDir(key)}
		}
		s.mu.Unlock()
	}
}

// warmFitsKube adds what a pod cannot change once made to warmFits: its
// memory and CPU limits (a Docker container's are updated at the claim) and
// the endpoints, whose tunnels and variables its daemon and processes get
// when it is made.
func (s *Service) warmFitsKube(set settings) bool {
	return s.warmFits(set) && !s.wantsEndpoints(set) && set.Params.Memory == s.cfg.DefaultMemory && set.Params.NanoCPUs == s.cfg.DefaultNanoCPUs &&
		set.Params.TmpfsMB == DefaultTmpfsMB
}

// claimKube starts a new sandbox on a warm pod when one fits and is ready;
// b.life is held and b has never run. The pod and its objects keep their
// names, which become the box's. A claim that fails removes the warm pod
// and reports false, so the caller starts the sandbox cold.
func (s *Service) claimKube(ctx context.Context, b *box, set settings) bool {
	if !s.warmFitsKube(set) {
		return false
	}
	if has, err := s.kube.HasWorkspace(ctx, b.key); err != nil || has {
		return false // a returning user's workspace is never swapped
	}
	w := s.warm.take(set.Params.Image)
	if w == nil {
		s.warm.claims.WithLabelValues("miss").Inc()
		return false
	}
	own := b.name
	spec := s.kubeSpec(b, set)
	spec.Name = w.name
	err := s.kube.ClaimWarm(ctx, w.name, spec)
	var tokens kubebox.Tokens
	if err == nil {
		tokens, err = s.kube.Tokens(ctx, w.name)
	}
	if err == nil {
		b.mu.Lock()
		b.name, b.containerID, b.volume = w.name, w.id, kubebox.ClaimName(w.name)
		b.mu.Unlock()
		err = s.connectKube(ctx, b, tokens.Token)
	}
	if err != nil {
		s.log.Warn("claiming a warm pod failed; starting the sandbox cold", "agent", b.agent, "pod", w.name, "err", err)
		cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), time.Minute)
		defer cancel()
		if rerr := s.kube.Remove(cctx, w.name); rerr != nil {
			s.log.Warn("remove a warm pod whose claim failed", "pod", w.name, "err", rerr)
		}
		b.mu.Lock()
		b.name, b.containerID, b.volume = own, "", ""
		b.mu.Unlock()
		s.warm.claims.WithLabelValues("miss").Inc()
		return false
	}
	s.warm.claims.WithLabelValues("hit").Inc()
	return true
}

// makeWarmPod starts a warm pod of img, with the service's defaults, and
// waits until it runs. Its daemon is dialled at the claim.
func (s *Service) makeWarmPod(ctx context.Context, img string) (*warmContainer, error) {
	set, err := s.resolve(&sandboxv1.SandboxSpec{Image: img})
	if err != nil {
		return nil, err
	}
	id := kubebox.NewToken()[:10]
	w := &warmContainer{name: warmPrefix + id, image: img}
	spec := s.kubeSpec(&box{name: w.name, key: "warm-" + id}, set)
	spec.Warm = true
	if s.skillsDir != "" {
		if spec.Skills, err = s.kubeSkills(ctx); err != nil {
			return nil, err
		}
	}
	st, err := s.kube.Start(ctx, spec)
	if err != nil {
		cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), time.Minute)
		defer cancel()
		if rerr := s.kube.Remove(cctx, w.name); rerr != nil {
			s.log.Warn("remove a warm pod that did not start", "pod", w.name, "err", rerr)
		}
		return nil, err
	}
	w.id = st.UID
	return w, nil
}

// traceTunnel names the daemon tunnel its spans are exported through.
const traceTunnel = "otlp"

// serveKubeEndpoints makes sure the service serves the endpoints of a
// sandbox pod (and the relay of its daemon's spans) on the daemon's
// tunnels. A listener asks the box for its daemon at every call, so it
// carries on across a daemon restarted or a pod replaced. b.life is held.
func (s *Service) serveKubeEndpoints(b *box) {
	b.mu.Lock()
	set, user := b.set, b.user
	b.mu.Unlock()
	daemon := func() daemonv1.DaemonClient {
		b.mu.Lock()
		defer b.mu.Unlock()
		if b.daemon == nil {
			return nil
		}
		return b.daemon.Client()
	}
	log := s.log.With("agent", b.agent)
	serve := func(name, token string, h http.Handler) {
		if cur := b.servedEndpoint(name); cur != nil {
			if cur.token == token {
				return
			}
			_ = cur.srv.Close()
		}
		b.setEndpoint(name, &boxEndpoint{srv: endpoint.Serve(tunnel.Listen(name, daemon, log), h), token: token})
	}
	for _, ep := range s.endpoints {
		if ep.wanted(set) {
			serve(ep.name, set.EndpointToken, ep.handler(b.key, user, b.agent, set))
		}
	}
	if s.relaysTraces(set) {
		serve(traceTunnel, "", tracerelay.Handler(s.traceRelay))
	}
}

// skillsPruneAge is how old an unused skills library's ConfigMap must be
// before a starting service deletes it: a replica that has just made one
// may not have made the pod that mounts it yet.
const skillsPruneAge = time.Hour

// pruneKubeSkills deletes the ConfigMaps of skills libraries no sandbox
// pod mounts any more, keeping this service's own version.
func (s *Service) pruneKubeSkills(ctx context.Context) {
	keep := ""
	if s.skillsDir != "" {
		sk, err := s.kubeSkills(ctx)
		if err != nil {
			s.log.Warn("skills library for sandbox pods", "err", err)
			return
		}
		keep = sk.ConfigMap
	}
	deleted, err := s.kube.PruneSkills(ctx, keep, skillsPruneAge)
	if err != nil {
		s.log.Warn("remove unused skills libraries", "err", err)
	}
	if len(deleted) > 0 {
		s.log.Info("removed unused skills libraries", "configmaps", deleted)
	}
}
