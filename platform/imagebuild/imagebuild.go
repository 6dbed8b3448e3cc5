// Package imagebuild builds Docker images from files held in memory with the
// engine's builder and no network. No registry may be reachable, so nothing
// is pulled: every image starts FROM scratch and carries only what the
// context gives it. The sandbox service's busybox image and `make images`
// (deploy/images) both build this way.
package imagebuild

import (
	"archive/tar"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strings"

	"github.com/docker/docker/api/types/build"
)

// File is one entry of a tar archive.
type File struct {
	// Name is the slash-separated path inside the archive, without a
	// leading slash.
	Name string
	// Mode holds the permission bits, sticky bit included.
	Mode int64
	// Data is a regular file's content; empty for a directory.
	Data []byte
	// Dir makes the entry a directory.
	Dir bool
	// UID and GID own the entry once an image's ADD unpacks the archive.
	UID, GID int
}

// Tar returns the archive of files, in the order given.
func Tar(files []File) ([]byte, error) {
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for _, f := range files {
		h := &tar.Header{Name: f.Name, Mode: f.Mode, Size: int64(len(f.Data)), Uid: f.UID, Gid: f.GID, Typeflag: tar.TypeReg}
		if f.Dir {
			h.Typeflag, h.Size = tar.TypeDir, 0
			if !strings.HasSuffix(h.Name, "/") {
				h.Name += "/"
			}
		}
		if err := tw.WriteHeader(h); err != nil {
			return nil, fmt.Errorf("tar %s: %w", f.Name, err)
		}
		if !f.Dir {
			if _, err := tw.Write(f.Data); err != nil {
				return nil, fmt.Errorf("tar %s: %w", f.Name, err)
			}
		}
	}
	if err := tw.Close(); err != nil {
		return nil, fmt.Errorf("tar: %w", err)
	}
	return buf.Bytes(), nil
}

// Builder is the slice of the Docker client a build needs.
type Builder interface {
	ImageBuild(ctx context.Context, buildContext io.Reader, options build.ImageBuildOptions) (build.ImageBuildResponse, error)
}

// Build builds the image whose context is files (a Dockerfile among them).
// The build runs with no network, whatever opts says, and removes its
// intermediate containers. The engine reports a failed step inside its JSON
// stream rather than as an HTTP error, so the stream is read to the end and
// its log returned with the failure.
func Build(ctx context.Context, b Builder, files []File, opts build.ImageBuildOptions) error {
	tarball, err := Tar(files)
	if err != nil {
		return err
	}
	opts.NetworkMode = "none"
	opts.Remove, opts.ForceRemove = true, true
	resp, err := b.ImageBuild(ctx, bytes.NewReader(tarball), opts)
	if err != nil {
		return fmt.Errorf("build %v: %w", opts.Tags, err)
	}
	defer resp.Body.Close()
	dec := json.NewDecoder(resp.Body)
	var log strings.Builder
	for {
		var msg struct {
			Stream string `json:"stream"`
			Error  string `json:"error"`
		}
		if err := dec.Decode(&msg); err == io.EOF {
			return nil
		} else if err != nil {
			return fmt.Errorf("build %v: read build output: %w", opts.Tags, err)
		}
		log.WriteString(msg.Stream)
		if msg.Error != "" {
			return fmt.Errorf("build %v: %s\n%s", opts.Tags, msg.Error, log.String())
		}
	}
}

// BusyboxPath is where Debian's busybox-static installs its binary.
const BusyboxPath = "/bin/busybox"

// BusyboxUID and BusyboxGID are the ordinary user ("wick") of the busybox
// image, its USER.
const BusyboxUID, BusyboxGID = 1000, 1000

// busyboxDockerfile installs busybox's applets as symlinks (the one RUN a
// scratch image can do, busybox being its shell) and gives commands a
// writable /tmp and the user a /workspace.
const busyboxDockerfile = `FROM scratch
COPY busybox /bin/busybox
RUN ["/bin/busybox", "--install", "-s", "/bin"]
COPY passwd /etc/passwd
COPY group /etc/group
RUN mkdir -p /tmp /workspace /usr/bin && chmod 1777 /tmp && chown 1000:1000 /workspace
ENV PATH=/usr/local/bin:/usr/bin:/bin
USER 1000:1000
`

const busyboxPasswd = "root:x:0:0:root:/root:/bin/sh\nwick:x:1000:1000:wick:/workspace:/bin/sh\nnobody:x:65534:65534:nobody:/:/bin/false\n"
const busyboxGroup = "root:x:0:\nwick:x:1000:\nnogroup:x:65534:\n"

// BusyboxFiles is the context of the sandbox image: FROM scratch, the static
// busybox binary bb with its applets, and the ordinary user wick
// (BusyboxUID) as USER. The sandbox service places wick-daemon and wickfs
// into each container itself, so the image needs neither.
func BusyboxFiles(bb []byte) []File {
	return []File{
		{Name: "Dockerfile", Mode: 0o644, Data: []byte(busyboxDockerfile)},
		{Name: "busybox", Mode: 0o755, Data: bb},
		{Name: "passwd", Mode: 0o644, Data: []byte(busyboxPasswd)},
		{Name: "group", Mode: 0o644, Data: []byte(busyboxGroup)},
	}
}
