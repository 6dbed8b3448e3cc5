package cluster

import (
	"archive/tar"
	"bytes"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

// File is one regular file of an image's single layer.
type File struct {
	Path string // absolute, inside the image
	Mode int64
	Data []byte
}

// Image describes an image FROM scratch: one layer and an entrypoint.
type Image struct {
	// Name is the reference containerd stores it under, in full
	// (docker.io/library/redis:7.4): the kubelet asks for a pod's image by
	// its normalised name.
	Name       string
	Files      []File
	Entrypoint []string
	Env        []string // NAME=value
	WorkingDir string
}

// ProgramFiles are the files of dynamically linked programs of this
// machine, for an image FROM scratch: each program at dir/<its name>, and
// every shared library ldd lists for it, with the loader, at the path ldd
// shows (the contents behind symbolic links).
func ProgramFiles(dir string, programs ...string) ([]File, error) {
	var files []File
	seen := map[string]bool{}
	add := func(path, from string) error {
		if seen[path] {
			return nil
		}
		seen[path] = true
		b, err := os.ReadFile(from)
		if err != nil {
			return err
		}
		files = append(files, File{Path: path, Mode: 0o755, Data: b})
		return nil
	}
	for _, prog := range programs {
		if err := add(filepath.Join(dir, filepath.Base(prog)), prog); err != nil {
			return nil, err
		}
		out, err := exec.Command("ldd", prog).Output()
		if err != nil {
			return nil, fmt.Errorf("ldd %s: %w", prog, err)
		}
		for _, line := range strings.Split(string(out), "\n") {
			// "libc.so.6 => /lib/x86_64-linux-gnu/libc.so.6 (0x…)" or
			// "/lib64/ld-linux-x86-64.so.2 (0x…)"; the vDSO has no file.
			f := strings.Fields(line)
			var lib string
			switch {
			case len(f) >= 3 && f[1] == "=>":
				lib = f[2]
			case len(f) >= 1 && strings.HasPrefix(f[0], "/"):
				lib = f[0]
			}
			if strings.HasPrefix(lib, "/") {
				if err := add(lib, lib); err != nil {
					return nil, err
				}
			}
		}
	}
	return files, nil
}

// writeOCIArchive writes img as an OCI image layout packed in a tar, the
// form `ctr images import` reads. go-containerregistry computes the digests,
// the diff IDs and the media types that a hand-written layout gets wrong in
// subtle ways (a config whose rootfs does not match its layers imports, then
// fails to unpack).
func writeOCIArchive(img Image, archive string) error {
	var layerTar bytes.Buffer
	tw := tar.NewWriter(&layerTar)
	dirs := map[string]bool{}
	for _, f := range img.Files {
		for d := filepath.Dir(f.Path); d != "/" && !dirs[d]; d = filepath.Dir(d) {
			dirs[d] = true
		}
	}
	var dirList []string
	for d := range dirs {
		dirList = append(dirList, d)
	}
	// Parents before children.
	sortByDepth(dirList)
	for _, d := range dirList {
		if err := tw.WriteHeader(&tar.Header{Typeflag: tar.TypeDir, Name: strings.TrimPrefix(d, "/") + "/", Mode: 0o755}); err != nil {
			return err
		}
	}
	for _, f := range img.Files {
		if err := tw.WriteHeader(&tar.Header{Typeflag: tar.TypeReg, Name: strings.TrimPrefix(f.Path, "/"), Mode: f.Mode, Size: int64(len(f.Data))}); err != nil {
			return err
		}
		if _, err := tw.Write(f.Data); err != nil {
			return err
		}
	}
	if err := tw.Close(); err != nil {
		return err
	}
	layer, err := tarball.LayerFromOpener(func() (io.ReadCloser, error) {
		return io.NopCloser(bytes.NewReader(layerTar.Bytes())), nil
	}, tarball.WithMediaType(types.OCILayer))
	if err != nil {
		return err
	}
	base := mutate.ConfigMediaType(mutate.MediaType(empty.Image, types.OCIManifestSchema1), types.OCIConfigJSON)
	im, err := mutate.AppendLayers(base, layer)
	if err != nil {
		return err
	}
	cf, err := im.ConfigFile()
	if err != nil {
		return err
	}
	cf = cf.DeepCopy()
	cf.OS, cf.Architecture = "linux", runtime.GOARCH
	cf.Config.Entrypoint = img.Entrypoint
	cf.Config.Env = img.Env
	cf.Config.WorkingDir = img.WorkingDir
	if im, err = mutate.ConfigFile(im, cf); err != nil {
		return err
	}

	dir, err := os.MkdirTemp(filepath.Dir(archive), "oci-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	p, err := layout.Write(dir, empty.Index)
	if err != nil {
		return err
	}
	if err := p.AppendImage(im,
		layout.WithPlatform(v1.Platform{OS: "linux", Architecture: runtime.GOARCH}),
		layout.WithAnnotations(map[string]string{"io.containerd.image.name": img.Name}),
	); err != nil {
		return err
	}
	return tarDir(dir, archive)
}

func sortByDepth(dirs []string) {
	for i := 1; i < len(dirs); i++ {
		for j := i; j > 0 && strings.Count(dirs[j], "/") < strings.Count(dirs[j-1], "/"); j-- {
			dirs[j], dirs[j-1] = dirs[j-1], dirs[j]
		}
	}
}

// tarDir packs the files below dir, with paths relative to it.
func tarDir(dir, archive string) error {
	f, err := os.Create(archive)
	if err != nil {
		return err
	}
	tw := tar.NewWriter(f)
	err = filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || p == dir {
			return err
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		hdr, err := tar.FileInfoHeader(info, "")
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		hdr.Name = filepath.ToSlash(rel)
		if d.IsDir() {
			hdr.Name += "/"
		}
		if err := tw.WriteHeader(hdr); err != nil {
			return err
		}
		if d.IsDir() {
			return nil
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		_, err = tw.Write(b)
		return err
	})
	if cerr := tw.Close(); err == nil {
		err = cerr
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}

// ImportImage packs img as an OCI archive and imports it into the
// cluster's containerd, in the namespace the kubelet's images live in.
func (c *Cluster) ImportImage(img Image) error {
	archive := filepath.Join(c.Dir, "images", strings.NewReplacer("/", "_", ":", "_").Replace(img.Name)+".tar")
	if err := os.MkdirAll(filepath.Dir(archive), 0o755); err != nil {
		return err
	}
	if err := writeOCIArchive(img, archive); err != nil {
		return fmt.Errorf("OCI archive of %s: %w", img.Name, err)
	}
	return c.ctr("images", "import", archive)
}

// ctr runs containerd's own client against the cluster's containerd.
func (c *Cluster) ctr(args ...string) error {
	out, err := exec.Command("ctr", append([]string{"--address", c.containerdSock, "--namespace", "k8s.io"}, args...)...).CombinedOutput()
	if err != nil {
		return fmt.Errorf("ctr %s: %v: %s", strings.Join(args, " "), err, strings.TrimSpace(string(out)))
	}
	return nil
}

// ImportDockerImage copies ref from the local Docker engine (`make images`
// builds the suite's there) into the cluster's containerd: `docker save`
// piped into `ctr images import`.
func (c *Cluster) ImportDockerImage(ref string) error {
	save := exec.Command("docker", "save", ref)
	imp := exec.Command("ctr", "--address", c.containerdSock, "--namespace", "k8s.io", "images", "import", "-")
	pipe, err := save.StdoutPipe()
	if err != nil {
		return err
	}
	imp.Stdin = pipe
	var saveErr, impOut bytes.Buffer
	save.Stderr = &saveErr
	imp.Stdout, imp.Stderr = &impOut, &impOut
	if err := save.Start(); err != nil {
		return err
	}
	if err := imp.Run(); err != nil {
		// Nothing reads the pipe any more: docker save would block on it.
		_ = save.Process.Kill()
		_ = save.Wait()
		return fmt.Errorf("ctr images import of %s: %v: %s %s", ref, err, strings.TrimSpace(impOut.String()), strings.TrimSpace(saveErr.String()))
	}
	if err := save.Wait(); err != nil {
		return fmt.Errorf("docker save %s: %v: %s", ref, err, strings.TrimSpace(saveErr.String()))
	}
	return nil
}
