package sandbox

import (
	"fmt"
	"os"
	"path/filepath"

	"github.com/wick-agent/wick/daemon"
	"github.com/wick-agent/wick/wickfs"
)

// startLocal brings up a local sandbox: its workdir under the state dir,
// served in-process by a wickfs.LocalFS confined to it. b.life is held.
func (s *Service) startLocal(b *box) error {
	ws := filepath.Join(s.cfg.StateDir, "local", b.key, "workspace")
	if err := os.MkdirAll(ws, 0o700); err != nil {
		return fmt.Errorf("local workdir: %w", err)
	}
	b.mu.Lock()
	set := b.set
	b.mu.Unlock()
	fs, err := wickfs.NewLocalFS(ws, wickfs.WithPrefix(set.Params.Workdir),
		wickfs.WithExecTimeout(set.ExecTimeout), wickfs.WithMaxOutputBytes(set.MaxOutput))
	if err != nil {
		return fmt.Errorf("local workdir: %w", err)
	}
	b.mu.Lock()
	// The local backend runs the daemon's own code (wickfs) in-process, so it
	// reports the daemon version this service was built with.
	b.local, b.version = fs, daemon.Version
	b.state, b.transport, b.containerID = stateRunning, transportLocal, ""
	b.mu.Unlock()
	return nil
}
