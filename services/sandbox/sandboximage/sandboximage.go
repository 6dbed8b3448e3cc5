// Package sandboximage builds a sandbox image without a registry: FROM
// scratch, Debian's static busybox and an ordinary user (platform/imagebuild's
// BusyboxFiles, the content `make images` also tags wick-sandbox-busybox:latest).
// Tests use it for speed, and so does `make run` on a machine whose Docker
// engine lacks the runtime image; it also builds the static wick-daemon and
// wickfs binaries from this repository.
package sandboximage

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"

	"github.com/docker/docker/api/types/build"
	"github.com/docker/docker/client"

	"github.com/wick-agent/wick/platform/imagebuild"
)

// BusyboxPath is Debian's busybox-static.
const BusyboxPath = imagebuild.BusyboxPath

// UID and GID are the ordinary user the image carries ("wick").
const UID, GID = imagebuild.BusyboxUID, imagebuild.BusyboxGID

// Repository is the image's repository; the tag is a hash of its content.
const Repository = "wick-sandbox-busybox"

// Build builds the image (once per content: the tag is a hash of it), with
// labels on it, and returns its reference.
func Build(ctx context.Context, cli *client.Client, labels map[string]string) (string, error) {
	bb, err := os.ReadFile(BusyboxPath)
	if err != nil {
		return "", fmt.Errorf("static busybox: %w", err)
	}
	files := imagebuild.BusyboxFiles(bb)
	h := sha256.New()
	for _, f := range files {
		h.Write([]byte(f.Name))
		h.Write(f.Data)
	}
	tag := Repository + ":" + hex.EncodeToString(h.Sum(nil))[:12]
	if _, err := cli.ImageInspect(ctx, tag); err == nil {
		return tag, nil
	}
	if err := imagebuild.Build(ctx, cli, files, build.ImageBuildOptions{Tags: []string{tag}, Labels: labels}); err != nil {
		return "", fmt.Errorf("sandbox image: %w", err)
	}
	return tag, nil
}

// Binaries builds static wick-daemon and wickfs from the repository at root
// into dir and returns their paths.
func Binaries(ctx context.Context, root, dir string) (daemon, wickfs string, err error) {
	cmd := exec.CommandContext(ctx, "go", "build", "-trimpath", "-o", dir+string(os.PathSeparator),
		"./daemon/cmd/wick-daemon", "./wickfs/cmd/wickfs")
	cmd.Dir = root
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := cmd.CombinedOutput(); err != nil {
		return "", "", fmt.Errorf("build wick binaries: %v\n%s", err, out)
	}
	return filepath.Join(dir, "wick-daemon"), filepath.Join(dir, "wickfs"), nil
}
