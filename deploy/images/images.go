// Package images builds a Docker image of every Wick binary with the local
// engine and nothing pulled: no registry may be reachable, so each image is
// FROM scratch and its context is a temporary archive holding only what the
// image carries (static binaries, CA certificates, the UI build), which keeps
// builds fast and independent of the repository's other files.
package images

import (
	"context"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	"github.com/docker/docker/api/types/build"

	"github.com/wick-agent/wick/platform/imagebuild"
)

// UID and GID run the service images: an unprivileged id that no host user
// is likely to hold (distroless's "nonroot").
const UID, GID = 65532, 65532

// Source is the repository the images are built from, their OCI source label.
const Source = "https://github.com/wick-agent/wick"

// In-image paths.
const (
	BinDir   = "/usr/local/bin"
	UIDir    = "/usr/share/wick/ui"
	CACerts  = "/etc/ssl/certs/ca-certificates.crt"
	StateDir = "/var/lib/wick"
)

// BusyboxName is the small sandbox image: Debian's static busybox FROM
// scratch, the fast image tests use and the fallback where RuntimeName is
// not on the engine.
const BusyboxName = "wick-sandbox-busybox"

// RuntimeName is the sandbox image people work in (the platform's
// backend.DefaultImage): Debian packages with python3, git, Node.js and more,
// built by runtime.sh with mmdebstrap rather than by Build, and
// ClaudeCodeName is it with the ACP adapters (acp-agents.sh); `make images`
// runs both.
const (
	RuntimeName    = "wick-sandbox-runtime"
	ClaudeCodeName = "wick-sandbox-claude-code"
)

// Image says what one image carries.
type Image struct {
	// Name is the image's repository and, except for the busybox image,
	// the binary it runs.
	Name string
	// Extra binaries carried next to the entrypoint.
	Extra []string
	// UI copies the UI build in and points -ui-dir at it.
	UI bool
	// Env is set in the image.
	Env []string
	// Ports are the image's documented listening ports.
	Ports []string
}

// All is every image, in build order.
var All = []Image{
	{Name: "wick-gateway", UI: true, Ports: []string{"7000", "8080"}},
	{Name: "wick-agent", Ports: []string{"7001"}},
	// The sandbox service places wick-daemon and wickfs into every container
	// it starts, so it carries them.
	{Name: "wick-sandbox", Extra: []string{"wick-daemon", "wickfs"}, Ports: []string{"7002"},
		Env: []string{"WICK_DAEMON_BIN=" + BinDir + "/wick-daemon", "WICK_WICKFS_BIN=" + BinDir + "/wickfs"}},
	{Name: "wick-llmgw", Ports: []string{"7003", "8003"}},
	// The all-in-one command finds wick-daemon and wickfs next to itself.
	{Name: "wick", Extra: []string{"wick-daemon", "wickfs"}, UI: true, Ports: []string{"7000", "8080"}},
	{Name: BusyboxName},
}

// packages maps each binary to its main package, relative to the repository.
var packages = map[string]string{
	"wick":         "./cmd/wick",
	"wick-gateway": "./services/gateway/cmd/wick-gateway",
	"wick-agent":   "./services/agent/cmd/wick-agent",
	"wick-sandbox": "./services/sandbox/cmd/wick-sandbox",
	"wick-llmgw":   "./services/llmgw/cmd/wick-llmgw",
	"wick-daemon":  "./daemon/cmd/wick-daemon",
	"wickfs":       "./wickfs/cmd/wickfs",
}

// Config is one run of Build.
type Config struct {
	// Root is the repository's root directory.
	Root string
	// Tags are the tags each image gets (its repository is its Name);
	// `make images` gives the git version and "latest".
	Tags []string
	// Revision is the commit, the OCI revision label.
	Revision string
	// UIDir is the UI build (ui/dist); empty builds the gateway and wick
	// images without a UI.
	UIDir string
	// BinDir receives the binaries; a temporary directory when empty. The
	// Go build cache makes a second build cheap either way.
	BinDir string
	// CACerts is the host's certificate bundle; default CACerts.
	CACerts string
	// Busybox is the static busybox of the busybox image; default
	// imagebuild.BusyboxPath.
	Busybox string
	// Only, when not empty, names the images to build.
	Only []string
}

// Built is one image that Build made.
type Built struct {
	Image
	// Refs are its references, repository:tag.
	Refs []string
}

// Build builds the static binaries, then every image of cfg, and returns
// what it built.
func Build(ctx context.Context, b imagebuild.Builder, cfg Config) ([]Built, error) {
	if len(cfg.Tags) == 0 {
		return nil, fmt.Errorf("images: no tags")
	}
	if cfg.CACerts == "" {
		cfg.CACerts = CACerts
	}
	if cfg.Busybox == "" {
		cfg.Busybox = imagebuild.BusyboxPath
	}
	want := All
	if len(cfg.Only) > 0 {
		want = nil
		for _, n := range cfg.Only {
			img, ok := find(n)
			if !ok {
				return nil, fmt.Errorf("images: no image %q", n)
			}
			want = append(want, img)
		}
	}
	if cfg.BinDir == "" {
		dir, err := os.MkdirTemp("", "wick-images-")
		if err != nil {
			return nil, err
		}
		defer os.RemoveAll(dir)
		cfg.BinDir = dir
	}
	if err := buildBinaries(ctx, cfg.Root, cfg.BinDir, want); err != nil {
		return nil, err
	}
	var done []Built
	for _, img := range want {
		files, err := contextFiles(img, cfg)
		if err != nil {
			return done, fmt.Errorf("image %s: %w", img.Name, err)
		}
		refs := make([]string, len(cfg.Tags))
		for i, t := range cfg.Tags {
			refs[i] = img.Name + ":" + t
		}
		labels := map[string]string{
			"org.opencontainers.image.title":    img.Name,
			"org.opencontainers.image.source":   Source,
			"org.opencontainers.image.revision": cfg.Revision,
			"org.opencontainers.image.version":  cfg.Tags[0],
		}
		if err := imagebuild.Build(ctx, b, files, build.ImageBuildOptions{Tags: refs, Labels: labels}); err != nil {
			return done, fmt.Errorf("image %s: %w", img.Name, err)
		}
		done = append(done, Built{Image: img, Refs: refs})
	}
	return done, nil
}

func find(name string) (Image, bool) {
	for _, img := range All {
		if img.Name == name {
			return img, true
		}
	}
	return Image{}, false
}

// buildBinaries builds, static and without local paths, every binary the
// images in want carry, in one go build.
func buildBinaries(ctx context.Context, root, dir string, want []Image) error {
	seen := map[string]bool{}
	var pkgs []string
	for _, img := range want {
		for _, bin := range img.binaries() {
			if !seen[bin] {
				seen[bin] = true
				pkgs = append(pkgs, packages[bin])
			}
		}
	}
	if len(pkgs) == 0 {
		return nil
	}
	args := append([]string{"build", "-trimpath", "-ldflags", "-s -w", "-o", dir + string(os.PathSeparator)}, pkgs...)
	cmd := exec.CommandContext(ctx, "go", args...)
	cmd.Dir = root
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("go build: %w\n%s", err, out)
	}
	return nil
}

// binaries lists the binaries img carries, its entrypoint first.
func (img Image) binaries() []string {
	if img.Name == BusyboxName {
		return nil
	}
	return append([]string{img.Name}, img.Extra...)
}

// contextFiles is img's build context: a Dockerfile, and rootfs.tar, which
// ADD unpacks with the owners and modes it holds; with no shell in the image
// no RUN could set them.
func contextFiles(img Image, cfg Config) ([]imagebuild.File, error) {
	if img.Name == BusyboxName {
		bb, err := os.ReadFile(cfg.Busybox)
		if err != nil {
			return nil, fmt.Errorf("static busybox (Debian: apt-get install busybox-static): %w", err)
		}
		return imagebuild.BusyboxFiles(bb), nil
	}
	certs, err := os.ReadFile(cfg.CACerts)
	if err != nil {
		return nil, fmt.Errorf("CA certificates (Debian: apt-get install ca-certificates): %w", err)
	}
	dir := func(name string, mode int64, uid int) imagebuild.File {
		return imagebuild.File{Name: name, Mode: mode, Dir: true, UID: uid, GID: uid}
	}
	root := []imagebuild.File{
		dir("etc", 0o755, 0), dir("etc/ssl", 0o755, 0), dir("etc/ssl/certs", 0o755, 0),
		{Name: strings.TrimPrefix(CACerts, "/"), Mode: 0o644, Data: certs},
		{Name: "etc/passwd", Mode: 0o644, Data: []byte(fmt.Sprintf("root:x:0:0:root:/:/nonexistent\nnonroot:x:%d:%d:nonroot:/home/nonroot:/nonexistent\n", UID, GID))},
		{Name: "etc/group", Mode: 0o644, Data: []byte(fmt.Sprintf("root:x:0:\nnonroot:x:%d:\n", GID))},
		dir("home", 0o755, 0), dir("home/nonroot", 0o700, UID),
		// Go's os.TempDir is /tmp; a state directory the user owns lets
		// the defaults (the sandbox service's /var/lib/wick/sandbox) work.
		dir("tmp", 0o1777, 0),
		dir("var", 0o755, 0), dir("var/lib", 0o755, 0), dir(strings.TrimPrefix(StateDir, "/"), 0o700, UID),
		dir("usr", 0o755, 0), dir("usr/local", 0o755, 0), dir("usr/local/bin", 0o755, 0),
	}
	for _, bin := range img.binaries() {
		data, err := os.ReadFile(filepath.Join(cfg.BinDir, bin))
		if err != nil {
			return nil, err
		}
		root = append(root, imagebuild.File{Name: strings.TrimPrefix(BinDir, "/") + "/" + bin, Mode: 0o755, Data: data})
	}
	env := append([]string{"HOME=/home/nonroot"}, img.Env...)
	if img.UI && cfg.UIDir != "" {
		ui, err := uiFiles(cfg.UIDir)
		if err != nil {
			return nil, err
		}
		root = append(root, dir("usr/share", 0o755, 0), dir("usr/share/wick", 0o755, 0))
		root = append(root, ui...)
		env = append(env, "WICK_UI_DIR="+UIDir)
	}
	tarball, err := imagebuild.Tar(root)
	if err != nil {
		return nil, err
	}
	var df strings.Builder
	df.WriteString("FROM scratch\nADD rootfs.tar /\n")
	for _, e := range env {
		fmt.Fprintf(&df, "ENV %s\n", e)
	}
	for _, p := range img.Ports {
		fmt.Fprintf(&df, "EXPOSE %s\n", p)
	}
	fmt.Fprintf(&df, "USER %d:%d\nWORKDIR /home/nonroot\nENTRYPOINT [%q]\n", UID, GID, BinDir+"/"+img.Name)
	return []imagebuild.File{
		{Name: "Dockerfile", Mode: 0o644, Data: []byte(df.String())},
		{Name: "rootfs.tar", Mode: 0o644, Data: tarball},
	}, nil
}

// uiFiles is the UI build under UIDir, readable by everyone, owned by root.
func uiFiles(src string) ([]imagebuild.File, error) {
	if _, err := os.Stat(filepath.Join(src, "index.html")); err != nil {
		return nil, fmt.Errorf("UI build (make ui): %w", err)
	}
	var files []imagebuild.File
	err := filepath.WalkDir(src, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(src, p)
		if err != nil {
			return err
		}
		name := strings.TrimPrefix(UIDir, "/")
		if rel != "." {
			name += "/" + filepath.ToSlash(rel)
		}
		if d.IsDir() {
			files = append(files, imagebuild.File{Name: name, Mode: 0o755, Dir: true})
			return nil
		}
		if !d.Type().IsRegular() {
			return fmt.Errorf("%s: not a regular file", p)
		}
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		files = append(files, imagebuild.File{Name: name, Mode: 0o644, Data: data})
		return nil
	})
	return files, err
}
