// Command wick-images builds the Docker image of every Wick binary, and the
// busybox sandbox image, with the local engine (`make images`, which then
// builds the Debian runtime images with deploy/images/runtime.sh and
// acp-agents.sh); see docs/deploy.md.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"strings"
	"syscall"
	"text/tabwriter"

	"github.com/docker/docker/client"

	"github.com/wick-agent/wick/deploy/images"
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "wick-images:", err)
		os.Exit(1)
	}
}

func run() error {
	var cfg images.Config
	var version, only string
	var latest bool
	flag.StringVar(&cfg.Root, "root", ".", "repository root")
	flag.StringVar(&version, "version", "", "image tag (default: git describe --always --dirty)")
	flag.BoolVar(&latest, "latest", true, "also tag every image :latest")
	flag.StringVar(&cfg.Revision, "revision", "", "commit for the OCI revision label (default: git rev-parse HEAD)")
	flag.StringVar(&cfg.UIDir, "ui-dir", "", "UI build copied into the gateway and wick images (ui/dist); empty: no UI")
	flag.StringVar(&cfg.BinDir, "bin-dir", "", "directory the static binaries are built into (default: a temporary one)")
	flag.StringVar(&cfg.CACerts, "ca-certs", images.CACerts, "CA certificate bundle copied into the images")
	flag.StringVar(&cfg.Busybox, "busybox", "", "static busybox of "+images.BusyboxName+" (default /bin/busybox)")
	flag.StringVar(&only, "only", "", "comma-separated images to build (default: all)")
	flag.Parse()

	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	var err error
	if version == "" {
		if version, err = git(ctx, cfg.Root, "describe", "--always", "--dirty"); err != nil {
			return err
		}
	}
	if cfg.Revision == "" {
		if cfg.Revision, err = git(ctx, cfg.Root, "rev-parse", "HEAD"); err != nil {
			return err
		}
	}
	cfg.Tags = []string{version}
	if latest && version != "latest" {
		cfg.Tags = append(cfg.Tags, "latest")
	}
	if only != "" {
		cfg.Only = strings.Split(only, ",")
	}
	cli, err := client.NewClientWithOpts(client.FromEnv, client.WithAPIVersionNegotiation())
	if err != nil {
		return err
	}
	defer cli.Close()
	built, err := images.Build(ctx, cli, cfg)
	if err != nil {
		return err
	}
	w := tabwriter.NewWriter(os.Stdout, 0, 0, 2, ' ', 0)
	fmt.Fprintln(w, "IMAGE\tSIZE")
	for _, b := range built {
		ii, err := cli.ImageInspect(ctx, b.Refs[0])
		if err != nil {
			return err
		}
		fmt.Fprintf(w, "%s\t%.1f MB\n", strings.Join(b.Refs, " "), float64(ii.Size)/1e6)
	}
	return w.Flush()
}

func git(ctx context.Context, dir string, args ...string) (string, error) {
	cmd := exec.CommandContext(ctx, "git", args...)
	cmd.Dir = dir
	out, err := cmd.Output()
	if err != nil {
		return "", fmt.Errorf("git %s: %w", strings.Join(args, " "), err)
	}
	return strings.TrimSpace(string(out)), nil
}
