package sandbox

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/wick-agent/wick/daemon"
	"github.com/wick-agent/wick/daemon/process"
	"github.com/wick-agent/wick/wickfs"
	"github.com/wick-agent/wick/wickfs/confine"
)

// DefaultLocalPath is PATH in a local sandbox unless its spec's env sets it:
// the system's directories, not the server's PATH, which may name its
// user's own.
const DefaultLocalPath = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"

// localHostEnv are the only variables of the service's own environment a
// local sandbox's commands get: provider keys, tokens and WICK_* settings
// must never reach a model's commands.
var localHostEnv = []string{"LANG", "LC_ALL", "TZ"}

// checkConfinement probes the kernel for Landlock, once, and says at
// start-up how local sandboxes will run.
func (s *Service) checkConfinement() error {
	abi := s.landlockABI()
	s.confined = abi >= confine.MinABI
	switch {
	case !s.confined && s.cfg.MultiUser:
		s.log.Warn("local sandboxes are REFUSED: several users share this service and the kernel has no Landlock to keep their commands apart (it needs Linux 6.2 or later with landlock in the lsm= boot list); use Docker sandboxes",
			"landlock_abi", abi, "needs", confine.MinABI)
	case !s.confined:
		s.log.Warn("local sandboxes run UNCONFINED: the kernel has no Landlock, so their commands can read and write whatever this service's user can (their environment is scrubbed, nothing more); fit for one trusted user on a development machine only",
			"landlock_abi", abi, "needs", confine.MinABI)
	default:
		state, err := filepath.EvalSymlinks(s.cfg.StateDir)
		if err != nil {
			return fmt.Errorf("sandbox: state dir: %w", err)
		}
		for _, ro := range append(slices.Clone(confine.SystemReadOnly), s.cfg.LocalReadOnly...) {
			dir, err := filepath.EvalSymlinks(ro)
			if err == nil && (state == dir || strings.HasPrefix(state, dir+"/")) {
				return fmt.Errorf("sandbox: state dir %s lies in %s, which local sandboxes' commands may read: they could read each other's workspaces; choose another state dir", s.cfg.StateDir, ro)
			}
		}
		s.log.Info("local sandboxes are confined with Landlock", "landlock_abi", abi, "signals_scoped", abi >= 6, "tcp_controlled", abi >= 4)
	}
	return nil
}

// minLocalMaxProcs is the least process limit of a local sandbox that still
// runs a shell pipeline.
const minLocalMaxProcs = 8

// openCgroup takes a cgroup for local sandboxes' processes, once, and says
// at start-up how they are bounded. Its name derives from the state dir, so
// an instance restarted on the same state kills what its crashed predecessor's
// sandboxes left running, and instances on other state dirs never touch it.
func (s *Service) openCgroup() {
	h := sha256.Sum256([]byte(s.cfg.StateDir))
	cg, err := confine.OpenCgroup("wick-sandbox-" + hex.EncodeToString(h[:6]))
	if err != nil {
		s.log.Warn("local sandboxes' processes are NOT bounded: this host gives the service no cgroup, so a process that leaves its process group (setsid, a double fork) outlives its command's timeout and its sandbox, and a sandbox may start processes until the host's limits; run the service as root, or with a delegated cgroup v2 subtree, to bound them",
			"error", err)
		return
	}
	s.cgroup = cg
	if !cg.Limited() {
		s.log.Warn("local sandboxes' processes are killed with their command and sandbox, but NOT counted: the service's cgroup has no pids controller to delegate; enable it (cgroup.subtree_control) to limit them",
			"cgroup", cg.Dir(), "mode", cg.Mode())
		return
	}
	s.log.Info("local sandboxes' processes are held in cgroups", "cgroup", cg.Dir(), "mode", cg.Mode(), "max_procs", s.cfg.LocalMaxProcs)
}

// localCgroup makes a local sandbox's cgroup, bounded by LocalMaxProcs or
// the spec's lower pids_limit; nil where the service has no cgroup.
func (s *Service) localCgroup(b *box, set settings) (*confine.Cgroup, error) {
	if s.cgroup == nil {
		return nil, nil
	}
	cg, err := s.cgroup.Child(b.key)
	if err != nil {
		return nil, fmt.Errorf("local sandbox: %w", err)
	}
	if cg.Limited() {
		if err := cg.SetMaxProcs(int(min(set.Params.Pids, int64(s.cfg.LocalMaxProcs)))); err != nil {
			_ = cg.Remove()
			return nil, fmt.Errorf("local sandbox: %w", err)
		}
	}
	return cg, nil
}

// startLocal brings up a local sandbox: its workspace and private temp dir
// under the state dir, served in-process by a wickfs.LocalFS whose commands
// and terminals get a scrubbed environment and, where the kernel has
// Landlock, may write only in those two directories and read only the
// system's (confine.SystemReadOnly), all in the sandbox's cgroup where the
// host has one. b.life is held.
func (s *Service) startLocal(b *box) error {
	if s.cfg.MultiUser && !s.confined {
		return fmt.Errorf("%w: local sandboxes are refused: several users share this service and this kernel has no Landlock to confine their commands", errPrecondition)
	}
	dir := filepath.Join(s.cfg.StateDir, "local", b.key)
	ws, tmp := filepath.Join(dir, "workspace"), filepath.Join(dir, "tmp")
	b.mu.Lock()
	size := b.set.Params.WorkspaceBytes
	b.mu.Unlock()
	// The workspace and the temp dir share one bounded filesystem: both
	// are where the sandbox's commands may write.
	if _, err := s.boundLocal(context.Background(), dir, size); err != nil {
		return err
	}
	for _, d := range []string{ws, tmp} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			s.releaseLocal(b.key)
			return fmt.Errorf("local workdir: %w", err)
		}
	}
	if err := s.placeLocalSkills(dir, ws); err != nil {
		s.releaseLocal(b.key)
		return err
	}
	b.mu.Lock()
	set := b.set
	b.mu.Unlock()
	ports, err := s.serveLocalEndpoints(b, set)
	if err != nil {
		_ = b.disconnect()
		s.releaseLocal(b.key)
		return err
	}
	cg, err := s.localCgroup(b, set)
	if err != nil {
		_ = b.disconnect()
		s.releaseLocal(b.key)
		return err
	}
	fs, err := wickfs.NewLocalFS(ws, wickfs.WithPrefix(set.Params.Workdir),
		wickfs.WithExecTimeout(set.ExecTimeout), wickfs.WithMaxOutputBytes(set.MaxOutput),
		wickfs.WithConfinement(s.localConfinement(ws, tmp, set, ports)), wickfs.WithCgroup(cg))
	if err != nil {
		if cg != nil {
			_ = cg.Remove()
		}
		_ = b.disconnect()
		s.releaseLocal(b.key)
		return fmt.Errorf("local workdir: %w", err)
	}
	b.mu.Lock()
	b.cgroup = cg
	// The local backend runs the daemon's own code (wickfs) in-process, so it
	// reports the daemon version this service was built with.
	b.local, b.version = fs, daemon.Version
	b.procs = process.NewTable(fs, process.WithMaxRunning(s.cfg.MaxProcesses), process.WithBufferBytes(s.cfg.ProcessBufferBytes))
	b.state, b.transport, b.containerID = stateRunning, transportLocal, ""
	b.mu.Unlock()
	return nil
}

// localConfinement is what a local sandbox's commands start with: PATH,
// HOME (the workspace), TMPDIR (its private temp dir), the locale and time
// zone, the variables of its endpoints (on ports), then the spec's own
// variables; and the Landlock policy when the kernel has Landlock. Network
// "bridge" allows TCP, as it gives a Docker sandbox a network; "none" denies
// it where the kernel can, but for the endpoints' ports.
func (s *Service) localConfinement(ws, tmp string, set settings, ports map[string]int) wickfs.Confinement {
	env := map[string]string{"PATH": DefaultLocalPath, "HOME": ws, "TMPDIR": tmp}
	for _, k := range localHostEnv {
		if v, ok := os.LookupEnv(k); ok {
			env[k] = v
		}
	}
	maps.Copy(env, s.sandboxEnv(set, ports))
	c := wickfs.Confinement{Env: env}
	if s.confined {
		c.Policy = &confine.Policy{
			// The LocalFS adds its root, the workspace, itself.
			ReadWrite: []string{tmp},
			ReadOnly:  append(slices.Clone(confine.SystemReadOnly), s.cfg.LocalReadOnly...),
			Devices:   confine.SystemDevices,
			Network:   set.Params.Network == "bridge",
		}
		for _, p := range ports {
			c.Policy.ConnectTCP = append(c.Policy.ConnectTCP, uint16(p))
		}
	}
	return c
}
