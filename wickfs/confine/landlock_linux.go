package confine

import (
	"errors"
	"fmt"
	"unsafe"

	"golang.org/x/sys/unix"
)

// The raw system calls are made here rather than through go-landlock: its
// Restrict applies to every thread of the process through libcap's psx,
// which a launcher that execs from one locked thread does not need and which
// cgo builds (the race detector) would have to link specially.

// ABI returns the kernel's Landlock ABI version, or 0 when the kernel has no
// Landlock or it is disabled.
func ABI() int {
	v, _, errno := unix.Syscall(unix.SYS_LANDLOCK_CREATE_RULESET, 0, 0, unix.LANDLOCK_CREATE_RULESET_VERSION)
	if errno != 0 {
		return 0
	}
	return int(v)
}

// handledFS is every file system right the kernel of an ABI version knows.
func handledFS(abi int) uint64 {
	switch {
	case abi >= 9:
		return 1<<17 - 1 // + connecting to Unix sockets by path
	case abi >= 5:
		return 1<<16 - 1 // + ioctl on devices
	case abi >= 3:
		return 1<<15 - 1 // + truncate
	case abi >= 2:
		return 1<<14 - 1 // + refer (rename and link across directories)
	case abi >= 1:
		return 1<<13 - 1
	}
	return 0
}

const (
	readRights = unix.LANDLOCK_ACCESS_FS_READ_FILE | unix.LANDLOCK_ACCESS_FS_READ_DIR | unix.LANDLOCK_ACCESS_FS_EXECUTE
	// fileRights are the only rights a rule on a file (not a directory) may carry.
	fileRights = unix.LANDLOCK_ACCESS_FS_EXECUTE | unix.LANDLOCK_ACCESS_FS_WRITE_FILE | unix.LANDLOCK_ACCESS_FS_READ_FILE |
		unix.LANDLOCK_ACCESS_FS_TRUNCATE | unix.LANDLOCK_ACCESS_FS_IOCTL_DEV
	deviceRights = unix.LANDLOCK_ACCESS_FS_READ_FILE | unix.LANDLOCK_ACCESS_FS_WRITE_FILE |
		unix.LANDLOCK_ACCESS_FS_TRUNCATE | unix.LANDLOCK_ACCESS_FS_IOCTL_DEV
	// noDevices are withheld even where writing is allowed: a command running
	// as root could otherwise create a block device node for the host's disk
	// in its workspace and read it raw.
	noDevices = unix.LANDLOCK_ACCESS_FS_MAKE_CHAR | unix.LANDLOCK_ACCESS_FS_MAKE_BLOCK | unix.LANDLOCK_ACCESS_FS_IOCTL_DEV
)

// enforce confines the calling thread: capabilities dropped, no_new_privs
// set, the Landlock ruleset of p applied. The caller execs right after.
func enforce(p Policy) error {
	abi := ABI()
	if abi < MinABI {
		return fmt.Errorf("%w: the kernel's Landlock ABI is %d, confinement needs %d or later", ErrUnavailable, abi, MinABI)
	}
	handled := handledFS(abi)
	attr := unix.LandlockRulesetAttr{Handled_access_fs: handled}
	if !p.Network && abi >= 4 {
		attr.Handled_access_net = unix.LANDLOCK_ACCESS_NET_BIND_TCP | unix.LANDLOCK_ACCESS_NET_CONNECT_TCP
		if abi >= 10 {
			attr.Handled_access_net |= unix.LANDLOCK_ACCESS_NET_BIND_UDP | unix.LANDLOCK_ACCESS_NET_CONNECT_SEND_UDP
		}
	}
	if abi >= 6 {
		attr.Scoped = unix.LANDLOCK_SCOPE_ABSTRACT_UNIX_SOCKET | unix.LANDLOCK_SCOPE_SIGNAL
	}
	fd, _, errno := unix.Syscall(unix.SYS_LANDLOCK_CREATE_RULESET, uintptr(unsafe.Pointer(&attr)), unsafe.Sizeof(attr), 0)
	if errno != 0 {
		return fmt.Errorf("landlock_create_ruleset: %w", errno)
	}
	ruleset := int(fd)
	defer unix.Close(ruleset)

	for _, d := range p.ReadWrite {
		if err := addRule(ruleset, d, handled&^noDevices, true); err != nil {
			return err
		}
	}
	for _, d := range p.ReadOnly {
		if err := addRule(ruleset, d, handled&readRights, false); err != nil {
			return err
		}
	}
	for _, d := range p.Devices {
		if err := addRule(ruleset, d, handled&deviceRights, false); err != nil {
			return err
		}
	}
	if attr.Handled_access_net != 0 {
		for _, port := range p.ConnectTCP {
			if err := addPortRule(ruleset, port); err != nil {
				return err
			}
		}
	}
	// Capabilities go only now: opening the paths above may need them.
	if err := dropCapabilities(); err != nil {
		return err
	}
	if err := unix.Prctl(unix.PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0); err != nil {
		return fmt.Errorf("prctl(PR_SET_NO_NEW_PRIVS): %w", err)
	}
	if _, _, errno := unix.Syscall(unix.SYS_LANDLOCK_RESTRICT_SELF, uintptr(ruleset), 0, 0); errno != 0 {
		return fmt.Errorf("landlock_restrict_self: %w", errno)
	}
	return nil
}

// addRule allows access beneath path. A path that does not exist is skipped
// unless required; a rule on a file keeps only the rights files can have.
func addRule(ruleset int, path string, access uint64, required bool) error {
	fd, err := unix.Open(path, unix.O_PATH|unix.O_CLOEXEC, 0)
	if err != nil {
		if !required && (errors.Is(err, unix.ENOENT) || errors.Is(err, unix.ENOTDIR)) {
			return nil
		}
		return fmt.Errorf("open %s: %w", path, err)
	}
	defer unix.Close(fd)
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return fmt.Errorf("stat %s: %w", path, err)
	}
	if st.Mode&unix.S_IFMT != unix.S_IFDIR {
		access &= fileRights
	}
	rule := unix.LandlockPathBeneathAttr{Allowed_access: access, Parent_fd: int32(fd)}
	if _, _, errno := unix.Syscall6(unix.SYS_LANDLOCK_ADD_RULE, uintptr(ruleset), unix.LANDLOCK_RULE_PATH_BENEATH,
		uintptr(unsafe.Pointer(&rule)), 0, 0, 0); errno != 0 {
		return fmt.Errorf("landlock_add_rule %s: %w", path, errno)
	}
	return nil
}

// landlockRuleNetPort and netPortAttr are the kernel's
// LANDLOCK_RULE_NET_PORT and struct landlock_net_port_attr (ABI 4), which
// golang.org/x/sys does not define.
const landlockRuleNetPort = 2

type netPortAttr struct {
	allowedAccess uint64
	port          uint64
}

// addPortRule allows connecting to TCP port.
func addPortRule(ruleset int, port uint16) error {
	rule := netPortAttr{allowedAccess: unix.LANDLOCK_ACCESS_NET_CONNECT_TCP, port: uint64(port)}
	if _, _, errno := unix.Syscall6(unix.SYS_LANDLOCK_ADD_RULE, uintptr(ruleset), landlockRuleNetPort,
		uintptr(unsafe.Pointer(&rule)), 0, 0, 0); errno != 0 {
		return fmt.Errorf("landlock_add_rule tcp port %d: %w", port, errno)
	}
	return nil
}

// dropCapabilities leaves the command no capabilities. A server running as
// root would otherwise hand them on, and with them ways around Landlock
// (loading a kernel module, raw I/O). Once permitted is empty, exec cannot
// bring them back: under no_new_privs the kernel caps what an exec grants —
// root's implicit full set and file capabilities alike — at what the process
// already had. Ambient capabilities are cleared too, as they survive exec.
func dropCapabilities() error {
	if err := unix.Prctl(unix.PR_CAP_AMBIENT, unix.PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0); err != nil && !errors.Is(err, unix.EINVAL) {
		return fmt.Errorf("clear ambient capabilities: %w", err)
	}
	hdr := unix.CapUserHeader{Version: unix.LINUX_CAPABILITY_VERSION_3}
	var none [2]unix.CapUserData
	if err := unix.Capset(&hdr, &none[0]); err != nil {
		return fmt.Errorf("capset: %w", err)
	}
	return nil
}
