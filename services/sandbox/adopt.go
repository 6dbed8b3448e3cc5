package sandbox

import (
	"context"
	"encoding/json"
	"path/filepath"
	"strings"
	"time"

	daemonv1 "github.com/wick-agent/wick/gen/wick/daemon/v1"
	"github.com/wick-agent/wick/services/sandbox/internal/dockerbox"
)

// adoptExisting takes over a running container of this sandbox found by
// name, when its daemon answers (re-injecting once if it does not).
func (s *Service) adoptExisting(ctx context.Context, b *box, e dockerbox.Engine, set settings, cu dockerbox.User) (bool, error) {
	in, err := e.ContainerInspect(ctx, b.name)
	// Another instance may be between creating and starting it: give it the
	// time a start takes before declaring the container dead.
	deadline := time.Now().Add(s.cfg.DaemonStartTimeout)
	// Docker reserves the name before the container can be inspected, so a
	// name conflict can briefly be followed by "no such container".
	for (dockerbox.IsNotFound(err) || err == nil && in.State != nil && in.State.Status == "created") && time.Now().Before(deadline) {
		select {
		case <-ctx.Done():
			return false, ctx.Err()
		case <-time.After(20 * time.Millisecond):
		}
		in, err = e.ContainerInspect(ctx, b.name)
	}
	if dockerbox.IsNotFound(err) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	if in.Config == nil || in.State == nil || !in.State.Running {
		return false, nil
	}
	owner, workspace, ok := s.ownership(ctx, e, in.Name, in.Config.Labels)
	// A warm container another instance is claiming has the sandbox's name
	// a moment before its owner's record exists: wait for it as for a start.
	for !ok && in.Config.Labels[dockerbox.LabelWarm] != "" && time.Now().Before(deadline) {
		select {
		case <-ctx.Done():
			return false, ctx.Err()
		case <-time.After(20 * time.Millisecond):
		}
		owner, workspace, ok = s.ownership(ctx, e, in.Name, in.Config.Labels)
	}
	if !ok || owner[dockerbox.LabelKey] != b.key || set.DockerHost == "" && !s.ours(in) {
		return false, nil
	}
	if raw := owner[dockerbox.LabelSpec]; raw != "" {
		var old settings
		if json.Unmarshal([]byte(raw), &old) == nil && old.Params.Image != "" {
			set = old
		}
	}
	b.mu.Lock()
	b.set, b.engine, b.containerID, b.cuser, b.volume = set, e, in.ID, cu, workspace
	b.mu.Unlock()
	if set.DockerHost != "" {
		b.mu.Lock()
		b.state, b.transport = stateRunning, transportExec
		b.mu.Unlock()
		return true, nil
	}
	sock := filepath.Join(b.hostDir, dockerbox.SocketName)
	if started, err := time.Parse(time.RFC3339Nano, in.State.StartedAt); err == nil && time.Since(started) < s.cfg.DaemonStartTimeout {
		// Just started, by another instance that is injecting the daemon now.
		if err := s.connect(ctx, b, sock); err == nil {
			return true, nil
		}
	}
	hc, cancel := context.WithTimeout(ctx, s.cfg.HealthTimeout)
	defer cancel()
	if s.healthy(hc, sock) {
		return true, s.connect(ctx, b, sock)
	}
	return true, s.injectAndConnect(ctx, b)
}

func (s *Service) healthy(ctx context.Context, sock string) bool {
	conn, err := dialSocket(sock, s.meters.dialOptions()...)
	if err != nil {
		return false
	}
	defer conn.Close()
	_, err = daemonv1.NewDaemonClient(conn).Health(ctx, &daemonv1.HealthRequest{})
	return err == nil
}

// adopt runs at start: containers with this manager's label that the
// service does not know are adopted when their daemon answers, else removed
// (removable), so a crash leaves no orphans; so are warm containers nobody
// claimed, with their volumes. Another manager's containers are not even
// listed.
func (s *Service) adopt(ctx context.Context) {
	if s.kube != nil {
		s.adoptKube(ctx)
		return
	}
	e, err := s.pool.Get(ctx, "")
	if err != nil {
		s.log.Info("no local docker engine; nothing to adopt", "err", err)
		return
	}
	if err := dockerbox.RemoveStaleProbes(ctx, e, time.Minute); err != nil {
		s.log.Warn("remove stale image probes", "err", err)
	}
	cs, err := dockerbox.List(ctx, e, s.cfg.ManagerID)
	if err != nil {
		s.log.Warn("list sandbox containers", "err", err)
		return
	}
	defer s.adoptStopped(ctx, e)
	for _, c := range cs {
		if c.State == "created" && time.Since(time.Unix(c.Created, 0)) < s.cfg.DaemonStartTimeout {
			continue // another instance sharing the manager id is starting it
		}
		var name string
		if len(c.Names) > 0 {
			name = c.Names[0]
		}
		l, workspace, ok := s.ownership(ctx, e, name, c.Labels)
		if !ok {
			// Ready containers made from this state directory are a
			// previous life's (or a replica's sharing it, which refills);
			// another directory's are left while their daemon answers.
			if in, err := e.ContainerInspect(ctx, c.ID); err == nil && s.ours(in) || s.removable(ctx, e, c.ID, "") {
				s.log.Info("removing an unclaimed warm container", "container", c.ID)
				s.discardWarm(ctx, e, &warmContainer{id: c.ID, name: strings.TrimPrefix(name, "/"), volume: strings.TrimPrefix(name, "/"),
					dir: filepath.Join(s.cfg.StateDir, "warm", strings.TrimPrefix(name, "/"))})
			}
			continue
		}
		user, agent, key := l[dockerbox.LabelUser], l[dockerbox.LabelAgent], l[dockerbox.LabelKey]
		var set settings
		ok = key != "" && key == sandboxKey(s.cfg.ManagerID, user, agent) && c.State == "running" &&
			json.Unmarshal([]byte(l[dockerbox.LabelSpec]), &set) == nil && set.Params.Workdir != ""
		if ok {
			ok = s.adoptOne(ctx, e, c.ID, user, agent, workspace, set)
		}
		if !ok && s.removable(ctx, e, c.ID, key) {
			s.log.Info("removing orphan sandbox container", "container", c.ID, "agent", agent)
			if err := dockerbox.Remove(ctx, e, c.ID); err != nil {
				s.log.Warn("remove orphan", "container", c.ID, "err", err)
			}
		}
	}
}

// adoptStopped registers, as stopped, the sandboxes whose workspace volume
// outlived their container, so they can be listed, started and deleted.
func (s *Service) adoptStopped(ctx context.Context, e dockerbox.Engine) {
	vs, err := dockerbox.Volumes(ctx, e, s.cfg.ManagerID)
	if err != nil {
		s.log.Warn("list sandbox volumes", "err", err)
		return
	}
	for _, v := range vs {
		l := v.Labels
		user, agent, key := l[dockerbox.LabelUser], l[dockerbox.LabelAgent], l[dockerbox.LabelKey]
		var set settings
		if key == "" || key != sandboxKey(s.cfg.ManagerID, user, agent) || json.Unmarshal([]byte(l[dockerbox.LabelSpec]), &set) != nil {
			continue
		}
		workspace := volumePrefix + key
		if ws := l[dockerbox.LabelWorkspace]; ws != "" {
			workspace = ws // it claimed a warm container
		}
		s.mu.Lock()
		if _, known := s.boxes[key]; !known {
			b := &box{key: key, user: user, agent: agent, state: stateStopped, set: set, engine: e,
				name: sandboxPrefix + key, volume: workspace, hostDir: s.boxDir(key)}
			s.boxes[key] = b
		}
		s.mu.Unlock()
	}
}

func (s *Service) adoptOne(ctx context.Context, e dockerbox.Engine, id, user, agent, workspace string, set settings) bool {
	b, err := s.boxFor(user, agent)
	if err != nil {
		return false
	}
	b.life.Lock()
	defer b.life.Unlock()
	ok := false
	defer func() {
		if !ok {
			s.mu.Lock()
			delete(s.boxes, b.key)
			s.mu.Unlock()
		}
	}()
	sock := filepath.Join(b.hostDir, dockerbox.SocketName)
	// The container records the numeric user it was created with.
	in, err := e.ContainerInspect(ctx, id)
	if err != nil || in.Config == nil || in.State == nil {
		return false
	}
	if !s.ours(in) {
		return false // its socket is in another state directory
	}
	started, _ := time.Parse(time.RFC3339Nano, in.State.StartedAt)
	// A daemon of a container started moments ago (by another instance
	// sharing the manager id) may not answer yet; connect below waits for it.
	if time.Since(started) >= s.cfg.DaemonStartTimeout {
		hc, cancel := context.WithTimeout(ctx, s.cfg.HealthTimeout)
		alive := s.healthy(hc, sock)
		cancel()
		if !alive {
			return false
		}
	}
	cu, err := dockerbox.ParseUser(in.Config.User)
	if err != nil {
		return false
	}
	b.mu.Lock()
	b.set, b.engine, b.containerID, b.cuser, b.lastUsed, b.volume = set, e, id, cu, s.now(), workspace
	if set.TTL > 0 {
		// The TTL bounds a container's life, counted from its start.
		if started.IsZero() {
			started = s.now()
		}
		b.expires = started.Add(set.TTL)
	}
	b.mu.Unlock()
	if err := s.connect(ctx, b, sock); err != nil {
		return false
	}
	ok = true
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
