package cluster

import (
	"bufio"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// Prefix names everything a cluster makes on the host: its directory under
// the temporary directory, its network namespace and its cgroups, each
// Prefix and six hex digits (runName). A run that was killed is found by it
// and removed before the next one starts. (Not "wick-k8s-": deploy/k8s's
// tests keep their binaries in /tmp/wick-k8s-bin-*.)
const Prefix = "wick-kcluster-"

// runName matches the names of a run's directory, network namespace and
// cgroups, and nothing else.
var runName = regexp.MustCompile("^" + regexp.QuoteMeta(Prefix) + "[0-9a-f]{6}$")

// bridgeNFCall makes bridged IPv4 traffic pass iptables, where kube-router
// enforces NetworkPolicy between pods on the node's bridge. The cluster sets
// it in the node's network namespace; kernels before 5.3 have one value for
// the whole host, which is why it is restored with the kubelet's.
const bridgeNFCall = "net/bridge/bridge-nf-call-iptables"

// kubeletSysctls are the kernel settings the kubelet sets when it starts
// (protectKernelDefaults off), and bridgeNFCall; they are global, so the
// cluster restores them.
var kubeletSysctls = []string{"vm/overcommit_memory", "kernel/panic", "kernel/panic_on_oops", bridgeNFCall}

// cgroupRoot is where the cgroup v1 hierarchies are mounted.
const cgroupRoot = "/sys/fs/cgroup"

// ReadSysctls returns the kubelet's sysctls as they are now.
func ReadSysctls() (map[string]string, error) {
	out := map[string]string{}
	for _, k := range kubeletSysctls {
		b, err := os.ReadFile("/proc/sys/" + k)
		if err != nil {
			return nil, err
		}
		out[k] = strings.TrimSpace(string(b))
	}
	return out, nil
}

func writeSysctls(vals map[string]string) error {
	var errs []error
	for k, v := range vals {
		if err := os.WriteFile("/proc/sys/"+k, []byte(v), 0o644); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// saveSysctls records the values in dir, so that the sweep after a killed
// run restores them too.
func saveSysctls(dir string, vals map[string]string) error {
	var b strings.Builder
	for _, k := range kubeletSysctls {
		fmt.Fprintf(&b, "%s=%s\n", k, vals[k])
	}
	return os.WriteFile(filepath.Join(dir, "sysctls"), []byte(b.String()), 0o600)
}

func loadSysctls(dir string) (map[string]string, error) {
	b, err := os.ReadFile(filepath.Join(dir, "sysctls"))
	if err != nil {
		return nil, err
	}
	out := map[string]string{}
	for _, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		if k, v, ok := strings.Cut(line, "="); ok {
			out[k] = v
		}
	}
	return out, nil
}

// MountsUnder lists the mount points at or below dir, deepest first.
func MountsUnder(dir string) ([]string, error) {
	f, err := os.Open("/proc/self/mountinfo")
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var out []string
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) < 5 {
			continue
		}
		// Spaces and the like are octal-escaped in mountinfo.
		mp := unescapeMount(fields[4])
		if mp == dir || strings.HasPrefix(mp, dir+"/") {
			out = append(out, mp)
		}
	}
	sort.Slice(out, func(i, j int) bool { return len(out[i]) > len(out[j]) })
	return out, sc.Err()
}

func unescapeMount(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+3 < len(s) {
			if n, err := strconv.ParseUint(s[i+1:i+4], 8, 8); err == nil {
				b.WriteByte(byte(n))
				i += 3
				continue
			}
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

// unmountUnder detaches every mount at or below dir, deepest first.
func unmountUnder(dir string) error {
	mounts, err := MountsUnder(dir)
	if err != nil {
		return err
	}
	var errs []error
	for _, m := range mounts {
		if err := syscall.Unmount(m, syscall.MNT_DETACH); err != nil && !errors.Is(err, syscall.EINVAL) && !errors.Is(err, syscall.ENOENT) {
			errs = append(errs, fmt.Errorf("unmount %s: %w", m, err))
		}
	}
	return errors.Join(errs...)
}

// killMarked kills every process whose command line names dir (containerd,
// its shims, the kubelet, the control plane) or that lives in one of the
// run's cgroups (the pods' processes), and waits until they are gone.
func killMarked(dir, cgroup string) error {
	deadline := time.Now().Add(30 * time.Second)
	for {
		pids := markedPids(dir, cgroup)
		if len(pids) == 0 {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("processes of %s still alive: %v", dir, pids)
		}
		for _, pid := range pids {
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func markedPids(dir, cgroup string) []int {
	entries, _ := os.ReadDir("/proc")
	self := os.Getpid()
	var out []int
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid == self {
			continue
		}
		cmdline, _ := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		cg, _ := os.ReadFile(filepath.Join("/proc", e.Name(), "cgroup"))
		stat, _ := os.ReadFile(filepath.Join("/proc", e.Name(), "stat"))
		if zombie(stat) {
			continue
		}
		if strings.Contains(string(cmdline), dir) || strings.Contains(string(cg), ":/"+cgroup+"/") || strings.HasSuffix(strings.TrimSpace(string(cg)), ":/"+cgroup) {
			out = append(out, pid)
		}
	}
	return out
}

// zombie reports a process that is dead and only waits for its parent.
func zombie(stat []byte) bool {
	s := string(stat)
	i := strings.LastIndexByte(s, ')')
	return i >= 0 && i+2 < len(s) && s[i+2] == 'Z'
}

// makeCgroups creates the run's cgroup in every v1 hierarchy, the parent of
// every pod's cgroup (the kubelet's cgroupRoot), with cpuset's CPUs and
// memory nodes copied from the root so that tasks can join it.
func makeCgroups(name string) error {
	hier, err := os.ReadDir(cgroupRoot)
	if err != nil {
		return err
	}
	for _, h := range hier {
		if !h.IsDir() {
			continue
		}
		d := filepath.Join(cgroupRoot, h.Name(), name)
		if err := os.Mkdir(d, 0o755); err != nil && !errors.Is(err, fs.ErrExist) {
			return err
		}
		if h.Name() == "cpuset" {
			for _, f := range []string{"cpuset.cpus", "cpuset.mems"} {
				b, err := os.ReadFile(filepath.Join(cgroupRoot, "cpuset", f))
				if err != nil {
					return err
				}
				if err := os.WriteFile(filepath.Join(d, f), b, 0o644); err != nil {
					return err
				}
			}
		}
	}
	return nil
}

// removeCgroups removes the cgroup name and everything below it in every
// hierarchy, deepest first; cgroups empty only once their last task is
// reaped, so it retries for a while.
func removeCgroups(name string) error {
	hier, err := os.ReadDir(cgroupRoot)
	if err != nil {
		return err
	}
	var errs []error
	for _, h := range hier {
		top := filepath.Join(cgroupRoot, h.Name(), name)
		if _, err := os.Stat(top); err != nil {
			continue
		}
		var dirs []string
		_ = filepath.WalkDir(top, func(p string, d fs.DirEntry, err error) error {
			if err == nil && d.IsDir() {
				dirs = append(dirs, p)
			}
			return nil
		})
		sort.Slice(dirs, func(i, j int) bool { return len(dirs[i]) > len(dirs[j]) })
		for _, d := range dirs {
			var err error
			for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(50 * time.Millisecond) {
				if err = syscall.Rmdir(d); err == nil || errors.Is(err, syscall.ENOENT) || time.Now().After(deadline) {
					break
				}
			}
			if err != nil && !errors.Is(err, syscall.ENOENT) {
				errs = append(errs, fmt.Errorf("rmdir %s: %w", d, err))
			}
		}
	}
	return errors.Join(errs...)
}

// CgroupsLeft lists the cgroups named name that still exist.
func CgroupsLeft(name string) []string {
	m, _ := filepath.Glob(filepath.Join(cgroupRoot, "*", name))
	return m
}

// netnsDir is where ip(8) keeps named network namespaces.
const netnsDir = "/run/netns"

// NetnsExists reports whether the named network namespace exists.
func NetnsExists(name string) bool {
	_, err := os.Stat(filepath.Join(netnsDir, name))
	return err == nil
}

func ip(args ...string) error {
	out, err := exec.Command("ip", args...).CombinedOutput()
	if err != nil {
		return fmt.Errorf("ip %s: %v: %s", strings.Join(args, " "), err, strings.TrimSpace(string(out)))
	}
	return nil
}

// removeNetns deletes a named network namespace, and with it every link,
// address, route and iptables rule inside it; the veth's host end goes
// with its peer.
func removeNetns(name string) error {
	if !NetnsExists(name) {
		return nil
	}
	return ip("netns", "del", name)
}

// teardown removes everything of the run named name (its directory is
// dir): processes, mounts (the pods' network namespaces among them),
// cgroups, the node's network namespace, the kubelet's sysctls as they were
// saved, and the directory.
func teardown(name, dir string) error {
	var errs []error
	add := func(err error) {
		if err != nil {
			errs = append(errs, err)
		}
	}
	add(killMarked(dir, name))
	add(unmountUnder(dir))
	add(removeCgroups(name))
	add(removeNetns(name))
	if vals, err := loadSysctls(dir); err == nil {
		add(writeSysctls(vals))
	} else if !errors.Is(err, fs.ErrNotExist) {
		add(err)
	}
	add(os.RemoveAll(dir))
	return errors.Join(errs...)
}

// Sweep removes what runs that were killed before their cleanup left
// behind: every directory, network namespace and cgroup named with Prefix,
// and every process and mount that names such a directory.
func Sweep() error {
	names := map[string]bool{}
	dirs, _ := filepath.Glob(filepath.Join(os.TempDir(), Prefix+"*"))
	for _, d := range dirs {
		names[filepath.Base(d)] = true
	}
	nss, _ := filepath.Glob(filepath.Join(netnsDir, Prefix+"*"))
	for _, n := range nss {
		names[filepath.Base(n)] = true
	}
	cgs, _ := filepath.Glob(filepath.Join(cgroupRoot, "*", Prefix+"*"))
	for _, c := range cgs {
		names[filepath.Base(c)] = true
	}
	var errs []error
	for n := range names {
		if !runName.MatchString(n) {
			continue
		}
		if err := teardown(n, filepath.Join(os.TempDir(), n)); err != nil {
			errs = append(errs, fmt.Errorf("leftovers of %s: %w", n, err))
		}
	}
	return errors.Join(errs...)
}

// podNetnsNames lists the network namespaces named as containerd names a
// pod's when it mounts them under /run/netns.
func podNetnsNames() map[string]bool {
	m, _ := filepath.Glob(filepath.Join(netnsDir, "cni-*"))
	out := map[string]bool{}
	for _, p := range m {
		out[filepath.Base(p)] = true
	}
	return out
}

// kubeRules are the host's iptables rules and chains that the kubelet or a
// CNI plugin would make (KUBE-*, CNI-*): the node's live in its own network
// namespace, so these must not change.
func kubeRules() (string, error) {
	out, err := exec.Command("iptables-save").Output()
	if err != nil {
		return "", fmt.Errorf("iptables-save: %w", err)
	}
	var b strings.Builder
	for _, line := range strings.Split(string(out), "\n") {
		if strings.Contains(line, "KUBE-") || strings.Contains(line, "CNI-") {
			b.WriteString(line + "\n")
		}
	}
	return b.String(), nil
}
