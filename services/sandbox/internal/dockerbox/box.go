package dockerbox

import (
	"archive/tar"
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/containerd/errdefs"
	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/api/types/filters"
	"github.com/docker/docker/api/types/mount"
	"github.com/docker/docker/api/types/volume"
)

// Labels every sandbox container and volume carries.
const (
	LabelManager = "wick.manager"
	LabelUser    = "wick.user"
	LabelAgent   = "wick.agent"
	LabelKey     = "wick.key"
	LabelSpec    = "wick.spec"
	// LabelWarm marks a container of the warm pool and its volume. Labels
	// cannot change once a container exists, so a claimed warm container
	// keeps it; its owner is then known from its name and the sandbox's
	// own workspace volume (LabelWorkspace).
	LabelWarm = "wick.warm"
	// LabelWorkspace, on a sandbox's own workspace volume, names the volume
	// that really holds its workspace: the warm container it claimed came
	// with one.
	LabelWorkspace = "wick.workspace"
)

// Paths inside the container.
const (
	// BinDir holds wick-daemon and wickfs; read-only for the sandbox.
	BinDir = "/opt/wick/bin"
	// RunDir is the per-sandbox host directory that holds the daemon's socket.
	RunDir = "/run/wick"
	// SocketName is the daemon's socket file in RunDir.
	SocketName = "daemon.sock"
	// SkillsDir is where the skills library appears in the workspace.
	SkillsDir = "skills"
	// DaemonBinary and WickfsBinary are the binaries' names in BinDir.
	DaemonBinary = "wick-daemon"
	WickfsBinary = "wickfs"
)

// keepAlive is PID 1's child under docker-init: it keeps the container alive
// whether or not the daemon runs, so a dead daemon leaves Docker exec usable.
const keepAlive = "trap 'exit 0' TERM INT; while :; do sleep 3600 & wait $!; done"

// withDaemon starts the daemon given as arguments in the background first,
// which saves a docker exec on every container start.
const withDaemon = `"$@" </dev/null >/dev/null 2>&1 & ` + keepAlive

// DaemonCommand is the wick-daemon command line for a workspace.
func DaemonCommand(workdir string, extra ...string) []string {
	return append([]string{path.Join(BinDir, DaemonBinary), "-socket", path.Join(RunDir, SocketName),
		"-root", workdir, "-prefix", workdir, "-log-level", "warn"}, extra...)
}

// ErrExists is returned by Create when the container name is taken, which
// is how two service instances racing on one sandbox settle on one container.
var ErrExists = errors.New("container exists")

// Params is a validated sandbox spec.
type Params struct {
	Image    string `json:"image"`
	Workdir  string `json:"workdir"`
	Network  string `json:"network"`
	User     string `json:"user,omitempty"`
	Memory   int64  `json:"memory"`
	NanoCPUs int64  `json:"nano_cpus"`
	Pids     int64  `json:"pids"`
	ReadOnly bool   `json:"read_only,omitempty"`
	TmpfsMB  int64  `json:"tmpfs_mb,omitempty"`
	// WorkspaceBytes is the size of the workspace's filesystem when the
	// service makes one (the service binds it; Create knows nothing of it).
	WorkspaceBytes int64             `json:"workspace_bytes,omitempty"`
	Env            map[string]string `json:"env,omitempty"`
}

// Spec is one container to create.
type Spec struct {
	Name   string
	Volume string
	// VolumeDevice, when set, is the host directory a new workspace volume
	// binds: the mounted filesystem that bounds the workspace's size.
	VolumeDevice string
	// HostRunDir is the host directory mounted at RunDir; empty for remote
	// engines, whose filesystem the service cannot reach.
	HostRunDir string
	// HostBinDir is the host directory mounted read-only at BinDir; empty
	// means the binaries are copied in before start.
	HostBinDir string
	// Binaries are the host paths of wick-daemon and wickfs, copied in when
	// HostBinDir is empty.
	Binaries map[string]string
	// HostSkillsDir, when set, is the host directory of the skills library,
	// mounted read-only at SkillsDir in the workspace.
	HostSkillsDir string
	// CopySkillsDir, when set, is the host directory of the skills library,
	// copied to SkillsDir in the workspace before start, for engines whose
	// host filesystem the service cannot bind-mount from.
	CopySkillsDir string
	Labels        map[string]string
	Params        Params
	// User is the resolved user the sandbox runs as.
	User User
	// Daemon, when set, is the wick-daemon command the container starts with.
	Daemon []string
}

// User is a container user and its numeric ids.
type User struct {
	Name     string
	UID, GID int
}

// Create creates the volume and the container (not started). It reports
// whether the volume was new.
func Create(ctx context.Context, e Engine, s Spec) (id string, newVolume bool, err error) {
	newVolume, err = ensureVolume(ctx, e, s.Volume, s.VolumeDevice, s.Labels)
	if err != nil {
		return "", false, err
	}
	p := s.Params
	env := make([]string, 0, len(p.Env))
	for k, v := range p.Env {
		env = append(env, k+"="+v)
	}
	sort.Strings(env)
	cfg := &container.Config{
		Image:      p.Image,
		User:       s.User.Name,
		Cmd:        []string{"sh", "-c", keepAlive},
		Entrypoint: []string{},
		Env:        env,
		WorkingDir: p.Workdir,
		Labels:     s.Labels,
		Hostname:   "sandbox",
	}
	if len(s.Daemon) > 0 {
		cfg.Cmd = append([]string{"sh", "-c", withDaemon, "sh"}, s.Daemon...)
	}
	pids := p.Pids
	init := true
	hc := &container.HostConfig{
		Init:           &init,
		NetworkMode:    container.NetworkMode(p.Network),
		CapDrop:        []string{"ALL"},
		SecurityOpt:    []string{"no-new-privileges"},
		ReadonlyRootfs: p.ReadOnly,
		Resources: container.Resources{
			Memory:     p.Memory,
			MemorySwap: p.Memory, // no swap beyond the memory limit
			NanoCPUs:   p.NanoCPUs,
			PidsLimit:  &pids,
		},
		Mounts: []mount.Mount{{Type: mount.TypeVolume, Source: s.Volume, Target: p.Workdir}},
	}
	if p.ReadOnly {
		size := p.TmpfsMB
		if size <= 0 {
			size = 64
		}
		hc.Tmpfs = map[string]string{"/tmp": fmt.Sprintf("rw,nosuid,nodev,size=%dm", size)}
	}
	if s.HostRunDir != "" {
		hc.Mounts = append(hc.Mounts, mount.Mount{Type: mount.TypeBind, Source: s.HostRunDir, Target: RunDir})
	}
	if s.HostBinDir != "" {
		hc.Mounts = append(hc.Mounts, mount.Mount{Type: mount.TypeBind, Source: s.HostBinDir, Target: BinDir, ReadOnly: true})
	}
	if s.HostSkillsDir != "" {
		// The engine makes the mount point in the workspace, owned by root,
		// so the sandbox cannot remove it; the sandbox's own files are
		// never touched.
		hc.Mounts = append(hc.Mounts, mount.Mount{Type: mount.TypeBind, Source: s.HostSkillsDir, Target: path.Join(p.Workdir, SkillsDir), ReadOnly: true})
	}
	resp, err := e.ContainerCreate(ctx, cfg, hc, nil, nil, s.Name)
	if err != nil {
		if errdefs.IsConflict(err) {
			return "", newVolume, ErrExists
		}
		return "", newVolume, fmt.Errorf("create container %s: %w", s.Name, err)
	}
	if s.HostBinDir == "" {
		if err := copyBinaries(ctx, e, resp.ID, s.Binaries); err != nil {
			_ = e.ContainerRemove(context.WithoutCancel(ctx), resp.ID, container.RemoveOptions{Force: true})
			return "", newVolume, err
		}
	}
	if s.CopySkillsDir != "" {
		if err := copySkills(ctx, e, resp.ID, s.CopySkillsDir, path.Join(p.Workdir, SkillsDir)); err != nil {
			_ = e.ContainerRemove(context.WithoutCancel(ctx), resp.ID, container.RemoveOptions{Force: true})
			return "", newVolume, err
		}
	}
	return resp.ID, newVolume, nil
}

// copySkills copies the skills library at the host directory src to dst in
// a created container, owned by root with the library's read-only modes:
// the sandbox's user, without capabilities, can read it and change nothing.
// It lands on the workspace volume, so a skill removed from the library
// stays in the volume of a sandbox made before.
func copySkills(ctx context.Context, e Engine, id, src, dst string) error {
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	base := strings.TrimPrefix(dst, "/")
	err := filepath.WalkDir(src, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(src, p)
		if err != nil {
			return err
		}
		fi, err := d.Info()
		if err != nil {
			return err
		}
		name := path.Join(base, filepath.ToSlash(rel))
		if d.IsDir() {
			return tw.WriteHeader(&tar.Header{Name: name + "/", Typeflag: tar.TypeDir, Mode: int64(fi.Mode().Perm())})
		}
		if !fi.Mode().IsRegular() {
			return fmt.Errorf("skills library: %s is not a regular file", p)
		}
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		if err := tw.WriteHeader(&tar.Header{Name: name, Typeflag: tar.TypeReg, Mode: int64(fi.Mode().Perm()), Size: int64(len(data))}); err != nil {
			return err
		}
		_, err = tw.Write(data)
		return err
	})
	if err == nil {
		err = tw.Close()
	}
	if err != nil {
		return fmt.Errorf("skills library: %w", err)
	}
	if err := e.CopyToContainer(ctx, id, "/", &buf, container.CopyToContainerOptions{}); err != nil {
		return fmt.Errorf("copy the skills library into %s: %w", id, err)
	}
	return nil
}

func ensureVolume(ctx context.Context, e Engine, name, device string, labels map[string]string) (bool, error) {
	if _, err := e.VolumeInspect(ctx, name); err == nil {
		return false, nil
	} else if !IsNotFound(err) {
		return false, fmt.Errorf("inspect volume %s: %w", name, err)
	}
	var opts map[string]string
	if device != "" {
		opts = BindOptions(device)
	}
	if _, err := e.VolumeCreate(ctx, volume.CreateOptions{Name: name, Labels: labels, DriverOpts: opts}); err != nil {
		return false, fmt.Errorf("create volume %s: %w", name, err)
	}
	return true, nil
}

// copyBinaries puts the wick binaries into a created container, for engines
// whose host filesystem the service cannot bind-mount from.
func copyBinaries(ctx context.Context, e Engine, id string, bins map[string]string) error {
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	dir := strings.TrimPrefix(BinDir, "/")
	for _, d := range []string{"opt", "opt/wick", dir} {
		if err := tw.WriteHeader(&tar.Header{Name: d + "/", Typeflag: tar.TypeDir, Mode: 0o755}); err != nil {
			return err
		}
	}
	names := make([]string, 0, len(bins))
	for n := range bins {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		data, err := os.ReadFile(bins[n])
		if err != nil {
			return fmt.Errorf("read %s binary: %w", n, err)
		}
		if err := tw.WriteHeader(&tar.Header{Name: dir + "/" + n, Mode: 0o755, Size: int64(len(data)), Typeflag: tar.TypeReg}); err != nil {
			return err
		}
		if _, err := tw.Write(data); err != nil {
			return err
		}
	}
	if err := tw.Close(); err != nil {
		return err
	}
	if err := e.CopyToContainer(ctx, id, "/", &buf, container.CopyToContainerOptions{}); err != nil {
		return fmt.Errorf("copy wick binaries into %s: %w", id, err)
	}
	return nil
}

// Rename renames a container; ErrExists when the name is taken, which makes
// claiming a warm container under a sandbox's name atomic across service
// instances, as creating it under that name is.
func Rename(ctx context.Context, e Engine, id, name string) error {
	if err := e.ContainerRename(ctx, id, name); err != nil {
		if errdefs.IsConflict(err) {
			return ErrExists
		}
		return fmt.Errorf("rename container %s: %w", id, err)
	}
	return nil
}

// SetLimits sets a running container's memory (with no swap beyond it),
// CPU and pids limits to p's, as Create would have.
func SetLimits(ctx context.Context, e Engine, id string, p Params) error {
	pids := p.Pids
	_, err := e.ContainerUpdate(ctx, id, container.UpdateConfig{Resources: container.Resources{
		Memory: p.Memory, MemorySwap: p.Memory, NanoCPUs: p.NanoCPUs, PidsLimit: &pids,
	}})
	if err != nil {
		return fmt.Errorf("set limits of container %s: %w", id, err)
	}
	return nil
}

// BindOptions are the local volume driver's options for a volume that is
// the host directory dir: the engine bind-mounts dir when a container
// using the volume starts, and the bind keeps what is mounted on dir.
func BindOptions(dir string) map[string]string {
	return map[string]string{"type": "none", "o": "bind", "device": dir}
}

// CreateVolume creates a volume with labels. Docker answers the creation of
// an existing name with that volume, so it is no claim: callers that need
// one rename a container first.
func CreateVolume(ctx context.Context, e Engine, name string, labels map[string]string) error {
	if _, err := e.VolumeCreate(ctx, volume.CreateOptions{Name: name, Labels: labels}); err != nil {
		return fmt.Errorf("create volume %s: %w", name, err)
	}
	return nil
}

// Start starts a created container.
func Start(ctx context.Context, e Engine, id string) error {
	if err := e.ContainerStart(ctx, id, container.StartOptions{}); err != nil {
		return fmt.Errorf("start container: %w", err)
	}
	return nil
}

// Remove force-removes a container; a missing one is not an error.
func Remove(ctx context.Context, e Engine, id string) error {
	err := e.ContainerRemove(ctx, id, container.RemoveOptions{Force: true})
	if err != nil && !IsNotFound(err) && !strings.Contains(err.Error(), "already in progress") {
		return fmt.Errorf("remove container %s: %w", id, err)
	}
	return nil
}

// RemoveVolume removes a volume; a missing one is not an error.
func RemoveVolume(ctx context.Context, e Engine, name string) error {
	if err := e.VolumeRemove(ctx, name, true); err != nil && !IsNotFound(err) {
		return fmt.Errorf("remove volume %s: %w", name, err)
	}
	return nil
}

// List returns every container carrying the manager label.
func List(ctx context.Context, e Engine, manager string) ([]container.Summary, error) {
	f := filters.NewArgs(filters.Arg("label", LabelManager+"="+manager))
	cs, err := e.ContainerList(ctx, container.ListOptions{All: true, Filters: f})
	if err != nil {
		return nil, fmt.Errorf("list containers: %w", err)
	}
	return cs, nil
}

// LabelProbe marks the never-started containers that read an image's
// /etc/passwd.
const LabelProbe = "wick.probe"

// RemoveStaleProbes removes probe containers created more than age ago. A
// probe lives for one file copy; an older one was left by a process that
// stopped (or closed its engine client) before it could remove it, and no
// one else will.
func RemoveStaleProbes(ctx context.Context, e Engine, age time.Duration) error {
	f := filters.NewArgs(filters.Arg("label", LabelProbe+"=1"), filters.Arg("status", "created"))
	cs, err := e.ContainerList(ctx, container.ListOptions{All: true, Filters: f})
	if err != nil {
		return fmt.Errorf("list probe containers: %w", err)
	}
	var errs []error
	for _, c := range cs {
		if time.Since(time.Unix(c.Created, 0)) < age {
			continue
		}
		if err := e.ContainerRemove(ctx, c.ID, container.RemoveOptions{Force: true}); err != nil && !IsNotFound(err) && !errdefs.IsConflict(err) {
			// A conflict is another process removing the same probe.
			errs = append(errs, fmt.Errorf("remove probe container %s: %w", c.ID, err))
		}
	}
	return errors.Join(errs...)
}

// Volumes returns every workspace volume carrying the manager label.
func Volumes(ctx context.Context, e Engine, manager string) ([]*volume.Volume, error) {
	f := filters.NewArgs(filters.Arg("label", LabelManager+"="+manager))
	r, err := e.VolumeList(ctx, volume.ListOptions{Filters: f})
	if err != nil {
		return nil, fmt.Errorf("list volumes: %w", err)
	}
	return r.Volumes, nil
}

// PrepareWorkspace gives a workspace volume to the sandbox user. The
// container has no CAP_CHOWN and no-new-privileges forbids a privileged
// exec, so the service changes the owner of the volume's directory on the
// engine's host, which it shares with a local engine.
func PrepareWorkspace(ctx context.Context, e Engine, volumeName string, u User) error {
	v, err := e.VolumeInspect(ctx, volumeName)
	if err != nil {
		return fmt.Errorf("inspect volume: %w", err)
	}
	fi, err := os.Stat(v.Mountpoint)
	if err != nil {
		return fmt.Errorf("workspace volume on the host: %w", err)
	}
	if st, ok := fi.Sys().(*syscall.Stat_t); ok && int(st.Uid) == u.UID {
		return nil
	}
	if err := os.Chown(v.Mountpoint, u.UID, u.GID); err != nil {
		return fmt.Errorf("give the workspace to the sandbox user: %w", err)
	}
	return nil
}

// InjectDaemon starts the daemon command cmd in a running container,
// detached, as the sandbox user.
func InjectDaemon(ctx context.Context, e Engine, id string, u User, workdir string, cmd []string) error {
	ex, err := e.ContainerExecCreate(ctx, id, container.ExecOptions{User: u.Name, Cmd: cmd, WorkingDir: workdir})
	if err != nil {
		return fmt.Errorf("create daemon exec: %w", err)
	}
	if err := e.ContainerExecStart(ctx, ex.ID, container.ExecStartOptions{Detach: true}); err != nil {
		return fmt.Errorf("start daemon: %w", err)
	}
	return nil
}

// ParseUser parses the numeric "uid:gid" the service gives containers.
func ParseUser(s string) (User, error) {
	u, g, ok := strings.Cut(s, ":")
	uid, err1 := strconv.Atoi(u)
	gid, err2 := strconv.Atoi(g)
	if !ok || err1 != nil || err2 != nil || uid < 0 || gid < 0 {
		return User{}, fmt.Errorf("container user %q is not uid:gid", s)
	}
	return User{Name: s, UID: uid, GID: gid}, nil
}

// Users resolves and caches, per image, which user a sandbox runs as.
type Users struct {
	mu    sync.Mutex
	cache map[string][]passwdEntry // image id → /etc/passwd entries
}

// NewUsers returns an empty cache.
func NewUsers() *Users { return &Users{cache: map[string][]passwdEntry{}} }

type passwdEntry struct {
	name     string
	uid, gid int
}

// ErrUnknownUser is returned when a requested user is not in the image.
var ErrUnknownUser = errors.New("user not found in the image's /etc/passwd")

// Resolve picks the user: want when given ("name", "uid" or "uid:gid"), else
// the image's USER, else the first ordinary user (uid 1000–60000) of the
// image's /etc/passwd, else root (with every capability dropped).
func (us *Users) Resolve(ctx context.Context, e Engine, img, want string) (User, error) {
	ii, err := e.ImageInspect(ctx, img)
	if err != nil {
		return User{}, err
	}
	if want == "" && ii.Config != nil {
		want = ii.Config.User
	}
	entries, err := us.passwd(ctx, e, ii.ID, img)
	if err != nil {
		return User{}, err
	}
	if want == "" {
		for _, p := range entries {
			if p.uid >= 1000 && p.uid <= 60000 {
				return User{Name: strconv.Itoa(p.uid) + ":" + strconv.Itoa(p.gid), UID: p.uid, GID: p.gid}, nil
			}
		}
		return User{Name: "0:0"}, nil
	}
	name, group, hasGroup := strings.Cut(want, ":")
	var u User
	if n, err := strconv.Atoi(name); err == nil && n >= 0 {
		u = User{UID: n, GID: n}
		for _, p := range entries {
			if p.uid == n {
				u.GID = p.gid
				break
			}
		}
	} else {
		found := false
		for _, p := range entries {
			if p.name == name {
				u, found = User{UID: p.uid, GID: p.gid}, true
				break
			}
		}
		if !found {
			return User{}, fmt.Errorf("%w: %q", ErrUnknownUser, name)
		}
	}
	if hasGroup {
		g, err := strconv.Atoi(group)
		if err != nil || g < 0 {
			return User{}, fmt.Errorf("%w: group %q must be numeric", ErrUnknownUser, group)
		}
		u.GID = g
	}
	u.Name = strconv.Itoa(u.UID) + ":" + strconv.Itoa(u.GID)
	return u, nil
}

func (us *Users) passwd(ctx context.Context, e Engine, imageID, img string) ([]passwdEntry, error) {
	us.mu.Lock()
	entries, ok := us.cache[imageID]
	us.mu.Unlock()
	if ok {
		return entries, nil
	}
	// The image's files are only reachable through a container; a created,
	// never-started one costs no process.
	resp, err := e.ContainerCreate(ctx, &container.Config{Image: img, Cmd: []string{"/nonexistent"}, Entrypoint: []string{}, Labels: map[string]string{LabelProbe: "1"}}, &container.HostConfig{NetworkMode: "none"}, nil, nil, "")
	if err != nil {
		return nil, fmt.Errorf("probe image %s: %w", img, err)
	}
	defer e.ContainerRemove(context.WithoutCancel(ctx), resp.ID, container.RemoveOptions{Force: true})
	rc, _, err := e.CopyFromContainer(ctx, resp.ID, "/etc/passwd")
	if err == nil {
		entries, err = parsePasswdTar(rc)
		rc.Close()
		if err != nil {
			return nil, err
		}
	} else if !IsNotFound(err) {
		return nil, fmt.Errorf("read /etc/passwd of %s: %w", img, err)
	}
	us.mu.Lock()
	us.cache[imageID] = entries
	us.mu.Unlock()
	return entries, nil
}

func parsePasswdTar(r io.Reader) ([]passwdEntry, error) {
	tr := tar.NewReader(r)
	if _, err := tr.Next(); err != nil {
		return nil, fmt.Errorf("read /etc/passwd: %w", err)
	}
	var out []passwdEntry
	sc := bufio.NewScanner(io.LimitReader(tr, 1<<20))
	for sc.Scan() {
		f := strings.Split(sc.Text(), ":")
		if len(f) < 4 {
			continue
		}
		uid, err1 := strconv.Atoi(f[2])
		gid, err2 := strconv.Atoi(f[3])
		if err1 != nil || err2 != nil {
			continue
		}
		out = append(out, passwdEntry{name: f[0], uid: uid, gid: gid})
	}
	return out, sc.Err()
}
