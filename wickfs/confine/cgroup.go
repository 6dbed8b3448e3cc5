package confine

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/moby/sys/mountinfo"
)

// ErrNoCgroup is returned when this host gives the process no cgroup it may
// create children in.
var ErrNoCgroup = errors.New("no writable cgroup")

// cgroupKillTimeout bounds how long Kill waits for the processes it killed to
// be gone; only a process stuck in the kernel (uninterruptible I/O) takes long.
const cgroupKillTimeout = 10 * time.Second

// Cgroup is a control group this process made to hold processes: a sandbox's,
// or one command's among them. Processes enter it through the launcher
// (Launch.Cgroup) before the program's first instruction, and whatever they
// start stays in it however it detaches — setsid, a double fork and nohup
// leave a process group and a session, never a cgroup, which only a writer of
// the cgroup file system can change. So the cgroup, not the process tree or
// group, is what Kill reaches, and what a process limit counts.
type Cgroup struct {
	dir string
	// v2 is the unified hierarchy: cgroup.kill may exist there.
	v2 bool
	// limited says pids.max of the cgroups beneath the root bounds their
	// processes (the pids controller is there).
	limited bool
}

// cgroupMount is a cgroup hierarchy's mount point and the path within the
// hierarchy its root shows.
type cgroupMount struct{ dir, root string }

// OpenCgroup makes the cgroup name beneath this process's own, in the first
// hierarchy of these that it may write: cgroup v2 with the pids controller
// delegated, cgroup v1's pids hierarchy, cgroup v2 without the pids
// controller (processes are tracked and killed, but not counted). A cgroup of
// that name left by an earlier process (one that crashed) is emptied and made
// afresh, so what that process's commands left running dies now.
func OpenCgroup(name string) (*Cgroup, error) {
	if name == "" || strings.ContainsAny(name, "/\x00") || name == "." || name == ".." {
		return nil, fmt.Errorf("confine: cgroup name %q", name)
	}
	bases, err := cgroupBases()
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrNoCgroup, err)
	}
	if len(bases) == 0 {
		return nil, fmt.Errorf("%w: neither a cgroup v2 nor a cgroup v1 pids hierarchy is mounted", ErrNoCgroup)
	}
	var tried []string
	for _, base := range bases {
		cg, err := base.open(name)
		if err == nil {
			return cg, nil
		}
		tried = append(tried, err.Error())
	}
	return nil, fmt.Errorf("%w: %s", ErrNoCgroup, strings.Join(tried, "; "))
}

// cgroupBase is this process's own cgroup in one hierarchy, and what a
// cgroup made beneath it can do.
type cgroupBase struct {
	dir         string
	v2, limited bool
}

// cgroupBases are the places OpenCgroup tries, best first.
func cgroupBases() ([]cgroupBase, error) {
	v1, v2, err := cgroupMounts()
	if err != nil {
		return nil, err
	}
	own, err := os.ReadFile("/proc/self/cgroup")
	if err != nil {
		return nil, err
	}
	v1Path, v2Path, ok1, ok2 := ownCgroups(own)
	var bases []cgroupBase
	if v2 != nil && ok2 {
		dir := filepath.Join(v2.dir, strings.TrimPrefix(v2Path, v2.root))
		if slices.Contains(strings.Fields(readString(filepath.Join(dir, "cgroup.controllers"))), "pids") {
			bases = append(bases, cgroupBase{dir: dir, v2: true, limited: true})
		}
	}
	if v1 != nil && ok1 {
		bases = append(bases, cgroupBase{dir: filepath.Join(v1.dir, strings.TrimPrefix(v1Path, v1.root)), limited: true})
	}
	if v2 != nil && ok2 {
		bases = append(bases, cgroupBase{dir: filepath.Join(v2.dir, strings.TrimPrefix(v2Path, v2.root)), v2: true})
	}
	return bases, nil
}

// open makes the cgroup name beneath the base and proves a process can
// enter it.
func (b cgroupBase) open(name string) (*Cgroup, error) {
	if b.limited && b.v2 {
		// A child's pids.max needs the controller enabled in its parent;
		// the kernel refuses where the parent holds processes itself
		// (other than at the hierarchy's root).
		if err := enableController(b.dir, "pids"); err != nil {
			return nil, err
		}
	}
	cg := &Cgroup{dir: filepath.Join(b.dir, name), v2: b.v2, limited: b.limited}
	if err := cg.create(); err != nil {
		return nil, err
	}
	if err := cg.probe(); err != nil {
		_ = cg.Remove()
		return nil, err
	}
	return cg, nil
}

// cgroupMounts finds the v1 pids hierarchy and the v2 one in mountinfo.
func cgroupMounts() (v1, v2 *cgroupMount, err error) {
	mounts, err := mountinfo.GetMounts(mountinfo.FSTypeFilter("cgroup", "cgroup2"))
	if err != nil {
		return nil, nil, err
	}
	for _, mi := range mounts {
		m := &cgroupMount{dir: mi.Mountpoint, root: mi.Root}
		switch {
		case mi.FSType == "cgroup2" && v2 == nil:
			v2 = m
		case mi.FSType == "cgroup" && v1 == nil && slices.Contains(strings.Split(mi.VFSOptions, ","), "pids"):
			v1 = m
		}
	}
	return v1, v2, nil
}

// ownCgroups reads this process's cgroup in the v1 pids and the v2 hierarchy
// from /proc/self/cgroup.
func ownCgroups(b []byte) (v1, v2 string, ok1, ok2 bool) {
	for line := range strings.SplitSeq(string(b), "\n") {
		parts := strings.SplitN(line, ":", 3)
		if len(parts) != 3 {
			continue
		}
		switch {
		case parts[0] == "0" && parts[1] == "":
			v2, ok2 = parts[2], true
		case slices.Contains(strings.Split(parts[1], ","), "pids"):
			v1, ok1 = parts[2], true
		}
	}
	return v1, v2, ok1, ok2
}

func readString(path string) string {
	b, _ := os.ReadFile(path)
	return string(b)
}

// enableController enables a v2 controller for dir's children.
func enableController(dir, c string) error {
	if slices.Contains(strings.Fields(readString(filepath.Join(dir, "cgroup.subtree_control"))), c) {
		return nil
	}
	if err := os.WriteFile(filepath.Join(dir, "cgroup.subtree_control"), []byte("+"+c), 0); err != nil {
		return fmt.Errorf("enable %s in %s: %w", c, dir, err)
	}
	return nil
}

// create makes the cgroup, emptying and removing one left at its place.
func (c *Cgroup) create() error {
	if _, err := os.Stat(c.dir); err == nil {
		if err := c.Remove(); err != nil {
			return fmt.Errorf("remove stale cgroup: %w", err)
		}
	}
	if err := os.Mkdir(c.dir, 0o755); err != nil {
		return fmt.Errorf("create cgroup: %w", err)
	}
	if c.v2 && c.limited {
		// Sandboxes beneath get their own pids.max.
		if err := enableController(c.dir, "pids"); err != nil {
			return err
		}
	}
	return nil
}

// probe starts a process through the launcher into a child cgroup: making a
// cgroup does not prove that a process may move into it (cgroup v2 asks for
// write access to the common ancestor of where it comes from and goes to).
func (c *Cgroup) probe() error {
	child, err := c.Child("probe")
	if err != nil {
		return err
	}
	defer child.Remove()
	var out bytes.Buffer
	cmd := exec.Command("/bin/sh", "-c", ":")
	cmd.Stderr = &out
	if err := WrapLaunch(cmd, Launch{Cgroup: child.Dir()}); err != nil {
		return err
	}
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("start a process in %s: %v: %s", child.Dir(), err, strings.TrimSpace(out.String()))
	}
	return nil
}

// Dir is the cgroup's directory in the cgroup file system.
func (c *Cgroup) Dir() string { return c.dir }

// Limited reports whether SetMaxProcs can bound the cgroups beneath this one.
func (c *Cgroup) Limited() bool { return c.limited }

// Mode names the hierarchy, for the logs.
func (c *Cgroup) Mode() string {
	switch {
	case c.v2 && c.limited:
		return "cgroup v2 (pids controller)"
	case c.v2:
		return "cgroup v2 without the pids controller"
	}
	return "cgroup v1 (pids hierarchy)"
}

// Child makes (or takes) the cgroup name beneath this one.
func (c *Cgroup) Child(name string) (*Cgroup, error) {
	if name == "" || strings.ContainsAny(name, "/\x00") || name == "." || name == ".." {
		return nil, fmt.Errorf("confine: cgroup name %q", name)
	}
	child := &Cgroup{dir: filepath.Join(c.dir, name), v2: c.v2, limited: c.limited}
	if err := os.Mkdir(child.dir, 0o755); err != nil && !errors.Is(err, fs.ErrExist) {
		return nil, fmt.Errorf("create cgroup: %w", err)
	}
	return child, nil
}

// SetMaxProcs bounds the processes (threads included) in the cgroup and
// beneath it: fork fails with EAGAIN past n. Moving a process in is not
// bounded, so a launcher still joins a full cgroup, where its program then
// cannot fork.
func (c *Cgroup) SetMaxProcs(n int) error {
	if !c.limited {
		return errors.New("confine: this cgroup hierarchy has no pids controller")
	}
	if err := os.WriteFile(filepath.Join(c.dir, "pids.max"), []byte(strconv.Itoa(n)), 0); err != nil {
		return fmt.Errorf("confine: set pids.max: %w", err)
	}
	return nil
}

// Procs counts the processes in the cgroup and beneath it.
func (c *Cgroup) Procs() (int, error) {
	pids, err := c.pids()
	return len(pids), err
}

// pids lists the processes in the cgroup and every cgroup beneath it.
func (c *Cgroup) pids() ([]int, error) {
	var pids []int
	err := filepath.WalkDir(c.dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) {
				return nil
			}
			return err
		}
		if !d.IsDir() {
			return nil
		}
		b, err := os.ReadFile(filepath.Join(p, "cgroup.procs"))
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) {
				return nil
			}
			return err
		}
		for f := range strings.FieldsSeq(string(b)) {
			if pid, err := strconv.Atoi(f); err == nil {
				pids = append(pids, pid)
			}
		}
		return nil
	})
	return pids, err
}

// Kill ends every process in the cgroup and beneath it and returns once they
// are gone. Where the kernel has cgroup.kill (v2, Linux 5.14) it kills the
// whole subtree at once. Elsewhere it signals each process listed and lists
// again until none is left: a process being killed can no longer fork, so
// only a fork already under way adds one, and the next round finds it. A pid
// read from cgroup.procs could in principle be freed and reused between the
// read and the signal; that needs the whole pid space to wrap in those
// microseconds.
func (c *Cgroup) Kill() error {
	if c.v2 {
		err := os.WriteFile(filepath.Join(c.dir, "cgroup.kill"), []byte("1"), 0)
		switch {
		case errors.Is(err, fs.ErrNotExist) && !exists(c.dir):
			return nil
		case err != nil && !errors.Is(err, fs.ErrNotExist):
			return fmt.Errorf("confine: cgroup.kill: %w", err)
		}
	}
	deadline := time.Now().Add(cgroupKillTimeout)
	pause := 100 * time.Microsecond
	for {
		pids, err := c.pids()
		if err != nil {
			return fmt.Errorf("confine: list processes: %w", err)
		}
		if len(pids) == 0 {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("confine: %d processes of %s still run %s after SIGKILL", len(pids), c.dir, cgroupKillTimeout)
		}
		for _, pid := range pids {
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
		// The processes signalled need a moment to exit.
		time.Sleep(pause)
		pause = min(2*pause, 20*time.Millisecond)
	}
}

// Remove kills what runs in the cgroup and beneath it and removes them all.
// A process that a launcher moves in after the killing (a command started
// as the sandbox stops) makes a removal fail with EBUSY; then it kills again.
func (c *Cgroup) Remove() error {
	deadline := time.Now().Add(cgroupKillTimeout)
	for {
		if err := c.Kill(); err != nil {
			return err
		}
		err := c.removeDirs()
		if err == nil || !errors.Is(err, syscall.EBUSY) || time.Now().After(deadline) {
			return err
		}
	}
}

// removeDirs removes the cgroup and those beneath it, deepest first: a
// cgroup with children cannot be removed.
func (c *Cgroup) removeDirs() error {
	var dirs []string
	_ = filepath.WalkDir(c.dir, func(p string, d fs.DirEntry, err error) error {
		if err == nil && d.IsDir() {
			dirs = append(dirs, p)
		}
		return nil
	})
	slices.Reverse(dirs)
	for _, d := range dirs {
		if err := os.Remove(d); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("confine: remove cgroup: %w", err)
		}
	}
	return nil
}

// RemoveIfEmpty removes the cgroup if no process is left in it and reports
// whether it is gone.
func (c *Cgroup) RemoveIfEmpty() bool {
	err := os.Remove(c.dir)
	return err == nil || errors.Is(err, fs.ErrNotExist)
}

func exists(p string) bool {
	_, err := os.Stat(p)
	return err == nil
}
