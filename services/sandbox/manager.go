package sandbox

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"

	"github.com/docker/docker/api/types/container"

	"github.com/wick-agent/wick/services/sandbox/internal/dockerbox"
)

// The manager id is the value of the wick.manager label on everything the
// service makes on an engine, and part of every sandbox's key (so of its
// container and volume names). An instance lists, adopts and removes only
// what carries its own id, so two instances with different ids on one
// engine never touch each other's sandboxes.

// managerIDFile, in the state directory, keeps the generated manager id, so
// a restart on the same state directory adopts its containers again.
const managerIDFile = "manager-id"

// ManagerIDUsage describes the -manager-id flag of every binary that hosts
// the service.
const ManagerIDUsage = "value of the wick.manager label on this service's containers and volumes; it adopts and removes only those carrying it " +
	"(default: generated once and kept in the state directory's manager-id file)"

// MaxManagerID bounds a manager id: it is a label value and part of names.
const MaxManagerID = 63

// LegacyManagerID is the id every instance used before ids were generated;
// a state directory made then, without a manager-id file, keeps it, so its
// sandboxes are adopted after an upgrade.
const LegacyManagerID = "wick-sandbox"

var managerIDPattern = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9_.-]*$`)

// ValidManagerID checks an id given with -manager-id.
func ValidManagerID(id string) error {
	if len(id) > MaxManagerID || !managerIDPattern.MatchString(id) {
		return fmt.Errorf("%w: manager id (-manager-id) %q must be 1 to %d letters, digits, '.', '_' or '-', starting with a letter or digit",
			errInvalid, id, MaxManagerID)
	}
	return nil
}

// storedManagerID returns the manager id kept in the state directory dir,
// generating and storing one when there is none. legacy says the directory
// was made by a version that kept no id: it then stores LegacyManagerID.
// Instances that start at once on one fresh directory agree on one id: the
// file is linked into place, which fails when another got there first.
func storedManagerID(dir string, legacy bool) (string, error) {
	path := filepath.Join(dir, managerIDFile)
	for range 3 {
		raw, err := os.ReadFile(path)
		if err == nil {
			id := string(bytes.TrimSpace(raw))
			if err := ValidManagerID(id); err != nil {
				return "", fmt.Errorf("%s: %w", path, err)
			}
			return id, nil
		}
		if !errors.Is(err, os.ErrNotExist) {
			return "", fmt.Errorf("manager id: %w", err)
		}
		id := LegacyManagerID
		if !legacy {
			b := make([]byte, 6)
			if _, err := rand.Read(b); err != nil {
				return "", fmt.Errorf("manager id: %w", err)
			}
			id = "wick-" + hex.EncodeToString(b)
		}
		tmp, err := os.CreateTemp(dir, ".manager-id-*")
		if err != nil {
			return "", fmt.Errorf("manager id: %w", err)
		}
		_, werr := tmp.WriteString(id + "\n")
		if err := errors.Join(werr, tmp.Sync(), tmp.Close()); err != nil {
			os.Remove(tmp.Name())
			return "", fmt.Errorf("manager id: %w", err)
		}
		err = os.Link(tmp.Name(), path)
		os.Remove(tmp.Name())
		if err == nil {
			return id, nil
		}
		if !errors.Is(err, os.ErrExist) {
			return "", fmt.Errorf("manager id: %w", err)
		}
		// Another instance stored one first: read it.
	}
	return "", fmt.Errorf("manager id: %s keeps changing", path)
}

// runDir is the host directory mounted at the container's RunDir, "" when
// none is (a remote engine). For a claimed warm container it is the path
// the directory had at creation: the directory has moved since.
func runDir(in container.InspectResponse) string {
	for _, m := range in.Mounts {
		if m.Destination == dockerbox.RunDir {
			return m.Source
		}
	}
	return ""
}

// within reports whether path is dir or below it.
func within(path, dir string) bool {
	rel, err := filepath.Rel(dir, path)
	return err == nil && rel != ".." && !strings.HasPrefix(rel, ".."+string(filepath.Separator))
}

// ours reports whether a container's socket directory is in this
// instance's state directory: only such a container can be adopted, as
// only its daemon's socket is where this instance looks.
func (s *Service) ours(in container.InspectResponse) bool {
	dir := runDir(in)
	return dir != "" && within(dir, s.cfg.StateDir)
}

// answers reports whether the daemon of a container answers on any of the
// places its socket can be: the directory mounted into it, this instance's
// socket directory for the sandbox key, and, for a claimed warm container
// (whose directory moved from <state>/warm/<name> to
// <state>/sandboxes/<key>), that of the state directory it came from.
func (s *Service) answers(ctx context.Context, in container.InspectResponse, key string) bool {
	dirs := []string{}
	if d := runDir(in); d != "" {
		dirs = append(dirs, d)
		if key != "" && filepath.Base(filepath.Dir(d)) == "warm" {
			dirs = append(dirs, filepath.Join(filepath.Dir(filepath.Dir(d)), "sandboxes", key))
		}
	}
	if key != "" {
		dirs = append(dirs, s.boxDir(key))
	}
	for _, d := range dirs {
		hc, cancel := context.WithTimeout(ctx, s.cfg.HealthTimeout)
		ok := s.healthy(hc, filepath.Join(d, dockerbox.SocketName))
		cancel()
		if ok {
			return true
		}
	}
	return false
}

// removable reports whether the container ref may be removed by this
// instance: it carries this instance's manager id and its daemon does not
// answer. A live container is never removed, whoever started it and
// whatever else keeps it from being adopted; what that leaves behind is
// logged for the operator. key is the sandbox key the container is known
// by, "" for an unclaimed warm container.
func (s *Service) removable(ctx context.Context, e dockerbox.Engine, ref, key string) bool {
	in, err := e.ContainerInspect(ctx, ref)
	if dockerbox.IsNotFound(err) {
		return true
	}
	if err != nil || in.Config == nil {
		s.log.Warn("leaving a container that cannot be inspected", "container", ref, "err", err)
		return false
	}
	if m := in.Config.Labels[dockerbox.LabelManager]; m != s.cfg.ManagerID {
		s.log.Warn("leaving a container of another manager", "container", ref, "manager", m)
		return false
	}
	if in.State == nil || !in.State.Running {
		return true
	}
	if s.answers(ctx, in, key) {
		s.log.Warn("leaving a running container whose daemon answers but which this instance cannot adopt; remove it by hand if it is not another instance's",
			"container", ref, "manager", s.cfg.ManagerID, "socket_dir", runDir(in))
		return false
	}
	return true
}
