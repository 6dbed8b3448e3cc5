// Package initproc lets wick-daemon run as PID 1 of a container. PID 1 must
// reap every orphan that is re-parented to it, but a reaper calling
// wait4(-1) in the same process as exec.Cmd would steal the exit statuses
// exec.Cmd.Wait is waiting for. So, like tini, PID 1 re-executes itself as a
// child that is the real daemon, forwards signals to it, and reaps everything
// in a loop; the daemon's own children stay its children and are waited for
// by exec.Cmd as usual.
package initproc

import (
	"fmt"
	"os"
	"os/signal"
	"syscall"
)

// ChildEnv marks the re-executed daemon so it does not become an init again.
const ChildEnv = "WICK_DAEMON_INIT_CHILD"

// ShouldRun reports whether this process is PID 1 and not already the child.
func ShouldRun() bool { return os.Getpid() == 1 && os.Getenv(ChildEnv) == "" }

// forwarded are the signals PID 1 passes on to the daemon.
var forwarded = []os.Signal{syscall.SIGTERM, syscall.SIGINT, syscall.SIGHUP, syscall.SIGQUIT, syscall.SIGUSR1, syscall.SIGUSR2}

// Run starts the daemon as a child with the same arguments, forwards signals
// to it and reaps orphans until it exits; it returns the exit status to exit with.
func Run() int {
	exe, err := os.Executable()
	if err != nil {
		exe = os.Args[0]
	}
	sigs := make(chan os.Signal, 16)
	signal.Notify(sigs, append([]os.Signal{syscall.SIGCHLD}, forwarded...)...)
	env := append(os.Environ(), ChildEnv+"=1")
	// syscall.ForkExec rather than exec.Cmd: this process reaps with wait4(-1)
	// and must not own an exec.Cmd that would wait for the same pid.
	child, err := syscall.ForkExec(exe, os.Args, &syscall.ProcAttr{
		Env:   env,
		Files: []uintptr{0, 1, 2},
	})
	if err != nil {
		fmt.Fprintf(os.Stderr, "wick-daemon init: start daemon: %v\n", err)
		return 1
	}
	for sig := range sigs {
		if sig != syscall.SIGCHLD {
			_ = syscall.Kill(child, sig.(syscall.Signal))
			continue
		}
		if code, done := reap(child); done {
			return code
		}
	}
	return 1
}

// reap collects every exited child; it reports the daemon's exit status once
// the daemon itself has exited.
func reap(child int) (code int, done bool) {
	for {
		var ws syscall.WaitStatus
		pid, err := syscall.Wait4(-1, &ws, syscall.WNOHANG, nil)
		if err == syscall.EINTR {
			continue
		}
		if pid <= 0 || err != nil {
			return code, done
		}
		if pid == child {
			done = true
			switch {
			case ws.Exited():
				code = ws.ExitStatus()
			case ws.Signaled():
				code = 128 + int(ws.Signal())
			}
		}
	}
}
