package confine

import (
	"bytes"
	"crypto/rand"
	"encoding/hex"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

func TestOwnCgroups(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name     string
		in       string
		v1, v2   string
		ok1, ok2 bool
	}{
		{"v1 and v2", "9:name=systemd:/\n8:pids:/a/b\n4:memory:/m\n0::/u\n", "/a/b", "/u", true, true},
		{"v1 with merged controllers", "3:cpu,pids:/x\n", "/x", "", true, false},
		{"v2 only", "0::/user.slice/s.scope\n", "", "/user.slice/s.scope", false, true},
		{"neither", "4:memory:/m\n", "", "", false, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			v1, v2, ok1, ok2 := ownCgroups([]byte(tc.in))
			if v1 != tc.v1 || v2 != tc.v2 || ok1 != tc.ok1 || ok2 != tc.ok2 {
				t.Fatalf("got %q %q %v %v", v1, v2, ok1, ok2)
			}
		})
	}
}

// TestCgroupHoldsDetachedProcesses runs, in every cgroup hierarchy this host
// lets the test create a cgroup in, a shell that leaves behind a process in a
// session of its own, and a fork loop where processes are counted: Kill ends
// the detached process, and the loop stops at pids.max.
func TestCgroupHoldsDetachedProcesses(t *testing.T) {
	bases, err := cgroupBases()
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("no cgroup hierarchy: %v", err)
		}
		t.Skipf("skipping: %v", err)
	}
	ran := 0
	for _, base := range bases {
		name := "v1 pids"
		if base.v2 {
			name = "v2, pids " + strconv.FormatBool(base.limited)
		}
		t.Run(name, func(t *testing.T) {
			raw := make([]byte, 6)
			_, _ = rand.Read(raw)
			root, err := base.open("wick-confine-test-" + hex.EncodeToString(raw))
			if err != nil {
				t.Skipf("skipping: %v", err)
			}
			ran++
			t.Cleanup(func() {
				if err := root.Remove(); err != nil {
					t.Error(err)
				}
			})
			cg, err := root.Child("box")
			if err != nil {
				t.Fatal(err)
			}
			dir := t.TempDir()
			cmd := exec.Command("/bin/sh", "-c", "(setsid sh -c 'echo $$ > pid; exec sleep 60' </dev/null >/dev/null 2>&1 &); while [ ! -s pid ]; do sleep 0.01; done")
			cmd.Dir = dir
			if err := WrapLaunch(cmd, Launch{Cgroup: cg.Dir()}); err != nil {
				t.Fatal(err)
			}
			if out, err := cmd.CombinedOutput(); err != nil {
				t.Fatalf("%v: %s", err, out)
			}
			b, _ := os.ReadFile(filepath.Join(dir, "pid"))
			pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
			if err != nil {
				t.Fatal(err)
			}
			if n, err := cg.Procs(); err != nil || n != 1 {
				t.Fatalf("the cgroup holds %d processes (%v), want the detached one", n, err)
			}
			if err := cg.Kill(); err != nil {
				t.Fatal(err)
			}
			if n, err := cg.Procs(); err != nil || n != 0 {
				t.Fatalf("after Kill the cgroup holds %d processes (%v)", n, err)
			}
			deadline := time.Now().Add(10 * time.Second)
			for !gone(pid) {
				if time.Now().After(deadline) {
					t.Fatalf("detached process %d outlived Kill", pid)
				}
				time.Sleep(10 * time.Millisecond)
			}
			if !base.limited {
				return
			}
			if err := cg.SetMaxProcs(8); err != nil {
				t.Fatal(err)
			}
			cmd = exec.Command("/bin/sh", "-c", "i=0; while [ $i -lt 100 ]; do sleep 30 >/dev/null 2>&1 & i=$((i+1)); done")
			var stderr bytes.Buffer
			cmd.Stderr = &stderr
			if err := WrapLaunch(cmd, Launch{Cgroup: cg.Dir()}); err != nil {
				t.Fatal(err)
			}
			if err := cmd.Run(); err == nil || !strings.Contains(strings.ToLower(stderr.String()), "fork") {
				t.Fatalf("fork loop past pids.max: %v %q", err, stderr.String())
			}
			if n, err := cg.Procs(); err != nil || n > 8 {
				t.Fatalf("the cgroup holds %d processes (%v), limit 8", n, err)
			}
			if err := cg.Remove(); err != nil {
				t.Fatal(err)
			}
		})
	}
	if ran == 0 && os.Getenv("CI") == "true" {
		t.Fatal("no cgroup hierarchy lets the test create a cgroup")
	}
}

// gone reports whether pid is gone or a zombie.
func gone(pid int) bool {
	stat, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	return err != nil || strings.Contains(string(stat), ") Z ")
}
