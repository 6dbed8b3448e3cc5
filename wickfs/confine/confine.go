// Package confine starts commands under a Landlock policy with
// no_new_privs: they may write only where the policy says, read only the
// system directories and files it names, reach no TCP port unless it allows
// the network, and signal or connect to (abstract Unix sockets of) nothing
// outside their own domain; and it keeps them, and everything they start,
// in a cgroup (Cgroup) where the host has one to give.
//
// Go cannot run code between fork and exec, and Landlock must restrict the
// child, never the server that starts it. So Wrap rewrites a command to start
// as /proc/self/exe — the very binary the server runs — with a marker in
// argv[0] and the policy in argv[1]; this package's init function recognises
// the marker, joins the cgroup, restricts its own thread and execs the real
// program, which inherits both. Every binary that imports this package (directly
// or through wickfs) can therefore confine, test binaries included, and the
// launcher can never be a different build from the server that chose the
// policy.
package confine

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"syscall"
)

// MinABI is the oldest Landlock ABI confinement accepts: ABI 3 (Linux 6.2)
// is the first that controls truncate(2), without which a command could empty
// any file its user can write. ABI 4 adds TCP control and ABI 6 scopes signals
// and abstract Unix sockets; they are used where the kernel has them.
const MinABI = 3

// marker is argv[0] of a launcher: a process started with it confines itself
// and execs the program named in argv[2].
const marker = "wick-confine"

// Policy is what a confined command may reach. Paths that do not exist are
// skipped; symlinks are followed, so a rule on /bin covers /usr/bin where /bin
// links there.
type Policy struct {
	// ReadWrite are directories the command may read, write, create and
	// remove in, and execute from.
	ReadWrite []string `json:"rw,omitempty"`
	// ReadOnly are directories or files the command may read and execute.
	ReadOnly []string `json:"ro,omitempty"`
	// Devices are device files the command may read, write and use ioctl on.
	Devices []string `json:"dev,omitempty"`
	// Network allows TCP (and, where the kernel controls it, UDP); false
	// denies binding and connecting where the kernel can (ABI 4 and later).
	Network bool `json:"net,omitempty"`
	// ConnectTCP are TCP ports the command may connect to when Network is
	// false: the sandbox service's own endpoints on loopback. Landlock
	// matches the port, not the address.
	ConnectTCP []uint16 `json:"tcp,omitempty"`
}

// SystemReadOnly are the host paths a confined command may read (and execute)
// to run ordinary programs: the system's binaries and libraries and the few
// files of /etc that programs need to start, look up users and names and
// verify certificates. All of /etc is not readable: a server running as root
// could otherwise read /etc/shadow, TLS keys and whatever an operator keeps
// there. /proc, /sys, /tmp, /home, /root and /var are not readable either.
var SystemReadOnly = []string{
	"/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32",
	"/etc/ld.so.cache", "/etc/ld.so.conf", "/etc/ld.so.conf.d", "/etc/ld.so.preload",
	"/etc/passwd", "/etc/group", "/etc/nsswitch.conf", "/etc/hosts", "/etc/host.conf",
	"/etc/resolv.conf", "/etc/gai.conf", "/etc/services", "/etc/protocols", "/etc/networks",
	"/etc/localtime", "/etc/timezone", "/etc/ssl/certs", "/etc/ssl/openssl.cnf",
	"/etc/ca-certificates", "/etc/ca-certificates.conf", "/etc/pki/tls/certs", "/etc/pki/ca-trust",
	"/etc/crypto-policies", "/etc/alternatives", "/etc/os-release", "/etc/debian_version",
	"/etc/alpine-release", "/etc/shells", "/etc/profile", "/etc/profile.d", "/etc/bash.bashrc",
	"/etc/bashrc", "/etc/inputrc", "/etc/terminfo", "/etc/locale.alias", "/etc/locale.conf",
	"/etc/mime.types", "/etc/magic", "/etc/magic.mime", "/etc/gitconfig", "/etc/vim",
}

// SystemDevices are the device files a confined command may use. /dev/tty is
// the command's own controlling terminal, if any; /dev/pts and /dev/shm are
// not included, as other sessions' terminals and shared memory live there.
var SystemDevices = []string{"/dev/null", "/dev/zero", "/dev/full", "/dev/random", "/dev/urandom", "/dev/tty"}

// ErrUnavailable is returned when the kernel cannot enforce a policy.
var ErrUnavailable = errors.New("landlock is unavailable")

// Launch is what the launcher does before it execs the program: join a
// cgroup, then confine itself.
type Launch struct {
	// Cgroup, when set, is a cgroup directory (Cgroup.Dir) the launcher
	// moves itself into first, so the program and everything it starts are
	// in it from the program's first instruction.
	Cgroup string `json:"cg,omitempty"`
	// Policy, when set, confines the program; nil runs it unconfined.
	Policy *Policy `json:"p,omitempty"`
}

// Wrap rewrites cmd, created by exec.Command with an absolute program path
// and not yet started, to start through the launcher under p. Its Dir, Env,
// files and SysProcAttr stay as they are; the launcher passes Env on to the
// program unchanged, so the caller decides the whole environment.
func Wrap(cmd *exec.Cmd, p Policy) error { return WrapLaunch(cmd, Launch{Policy: &p}) }

// WrapLaunch rewrites cmd as Wrap does, to start through the launcher doing l.
func WrapLaunch(cmd *exec.Cmd, l Launch) error {
	if cmd.Err != nil {
		return cmd.Err
	}
	if cmd.Process != nil {
		return errors.New("confine: command already started")
	}
	if !filepath.IsAbs(cmd.Path) {
		return fmt.Errorf("confine: program %q must be an absolute path", cmd.Path)
	}
	raw, err := json.Marshal(l)
	if err != nil {
		return fmt.Errorf("confine: %w", err)
	}
	args := cmd.Args
	if len(args) == 0 {
		args = []string{cmd.Path}
	}
	cmd.Args = append([]string{marker, string(raw), cmd.Path}, args...)
	cmd.Path = "/proc/self/exe"
	return nil
}

func init() {
	if len(os.Args) < 4 || os.Args[0] != marker {
		return
	}
	// Landlock and no_new_privs apply to the calling thread, and execve
	// keeps the calling thread's credentials: the thread that restricts
	// itself must be the one that execs.
	runtime.LockOSThread()
	var l Launch
	if err := json.Unmarshal([]byte(os.Args[1]), &l); err != nil {
		fail(fmt.Errorf("policy: %w", err))
	}
	// First: the policy would deny writing the cgroup file system, and
	// nothing of the program may run outside the cgroup.
	if l.Cgroup != "" {
		if err := os.WriteFile(filepath.Join(l.Cgroup, "cgroup.procs"), []byte(strconv.Itoa(os.Getpid())), 0); err != nil {
			fail(fmt.Errorf("join cgroup: %w", err))
		}
	}
	if l.Policy != nil {
		if err := enforce(*l.Policy); err != nil {
			fail(err)
		}
	}
	err := syscall.Exec(os.Args[2], os.Args[3:], os.Environ())
	fail(fmt.Errorf("exec %s: %w", os.Args[2], err))
}

// fail ends a launcher that could not confine or exec: 126 is the shell's
// "cannot execute", and nothing runs unconfined.
func fail(err error) {
	fmt.Fprintf(os.Stderr, "wick: confine: %v\n", err)
	os.Exit(126)
}
