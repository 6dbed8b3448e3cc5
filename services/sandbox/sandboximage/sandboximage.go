// Package sandboximage builds a sandbox image without a registry: FROM
// scratch, Debian's static busybox and an ordinary user. Tests use it, and so
// does `make run` on a machine whose Docker engine has no other image; it also
// builds the static wick-daemon and wickfs binaries from this repository.
package sandboximage

import (
	"archive/tar"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	"github.com/docker/docker/api/types/build"
	"github.com/docker/docker/client"
)

// BusyboxPath is Debian's busybox-static.
const BusyboxPath = "/bin/busybox"

// UID and GID are the ordinary user the image carries ("wick").
const UID, GID = 1000, 1000

const dockerfile = `FROM scratch
COPY busybox /bin/busybox
RUN ["/bin/busybox", "--install", "-s", "/bin"]
COPY passwd /etc/passwd
COPY group /etc/group
RUN mkdir -p /tmp /workspace /usr/bin && chmod 1777 /tmp && chown 1000:1000 /workspace
ENV PATH=/usr/local/bin:/usr/bin:/bin
`

const passwd = "root:x:0:0:root:/root:/bin/sh\nwick:x:1000:1000:wick:/workspace:/bin/sh\nnobody:x:65534:65534:nobody:/:/bin/false\n"
const group = "root:x:0:\nwick:x:1000:\nnogroup:x:65534:\n"

// Repository is the image's repository; the tag is a hash of its content.
const Repository = "wick-sandbox-busybox"

// Build builds the image (once per content: the tag is a hash of it), with
// labels on it, and returns its reference.
func Build(ctx context.Context, cli *client.Client, labels map[string]string) (string, error) {
	bb, err := os.ReadFile(BusyboxPath)
	if err != nil {
		return "", fmt.Errorf("static busybox: %w", err)
	}
	h := sha256.New()
	h.Write(bb)
	h.Write([]byte(dockerfile + passwd + group))
	tag := Repository + ":" + hex.EncodeToString(h.Sum(nil))[:12]
	if _, err := cli.ImageInspect(ctx, tag); err == nil {
		return tag, nil
	}
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for _, f := range []struct {
		name string
		mode int64
		data []byte
	}{
		{"Dockerfile", 0o644, []byte(dockerfile)},
		{"busybox", 0o755, bb},
		{"passwd", 0o644, []byte(passwd)},
		{"group", 0o644, []byte(group)},
	} {
		if err := tw.WriteHeader(&tar.Header{Name: f.name, Mode: f.mode, Size: int64(len(f.data))}); err != nil {
			return "", err
		}
		if _, err := tw.Write(f.data); err != nil {
			return "", err
		}
	}
	if err := tw.Close(); err != nil {
		return "", err
	}
	resp, err := cli.ImageBuild(ctx, &buf, build.ImageBuildOptions{
		Tags: []string{tag}, Remove: true, ForceRemove: true, NetworkMode: "none",
		Labels: labels,
	})
	if err != nil {
		return "", fmt.Errorf("build sandbox image: %w", err)
	}
	defer resp.Body.Close()
	// The build reports failures inside its JSON stream, not as an HTTP error.
	dec := json.NewDecoder(resp.Body)
	var log strings.Builder
	for {
		var msg struct {
			Stream string `json:"stream"`
			Error  string `json:"error"`
		}
		if err := dec.Decode(&msg); err == io.EOF {
			break
		} else if err != nil {
			return "", fmt.Errorf("read build output: %w", err)
		}
		log.WriteString(msg.Stream)
		if msg.Error != "" {
			return "", fmt.Errorf("build sandbox image: %s\n%s", msg.Error, log.String())
		}
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
