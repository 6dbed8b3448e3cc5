// Package dockerbox runs sandbox containers through the Docker Engine API:
// hardened creation, labels, volumes, daemon injection, and docker exec (the
// fallback transport and the terminal of last resort).
package dockerbox

import (
	"context"
	"fmt"
	"io"
	"net/url"
	"strings"
	"sync"
	"time"

	cerrdefs "github.com/containerd/errdefs"
	"github.com/docker/docker/api/types"
	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/api/types/image"
	"github.com/docker/docker/api/types/network"
	"github.com/docker/docker/api/types/volume"
	"github.com/docker/docker/client"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
	"google.golang.org/grpc/codes"

	"github.com/wick-agent/wick/platform/errcode"
)

// Engine is the slice of the Docker client the sandbox service uses.
type Engine interface {
	Ping(ctx context.Context) (types.Ping, error)
	ImageInspect(ctx context.Context, imageID string, opts ...client.ImageInspectOption) (image.InspectResponse, error)
	ContainerCreate(ctx context.Context, config *container.Config, hostConfig *container.HostConfig, networkingConfig *network.NetworkingConfig, platform *ocispec.Platform, containerName string) (container.CreateResponse, error)
	ContainerStart(ctx context.Context, containerID string, options container.StartOptions) error
	ContainerInspect(ctx context.Context, containerID string) (container.InspectResponse, error)
	ContainerRemove(ctx context.Context, containerID string, options container.RemoveOptions) error
	ContainerRename(ctx context.Context, containerID, newContainerName string) error
	ContainerUpdate(ctx context.Context, containerID string, updateConfig container.UpdateConfig) (container.UpdateResponse, error)
	ContainerList(ctx context.Context, options container.ListOptions) ([]container.Summary, error)
	ContainerExecCreate(ctx context.Context, containerID string, options container.ExecOptions) (container.ExecCreateResponse, error)
	ContainerExecStart(ctx context.Context, execID string, config container.ExecStartOptions) error
	ContainerExecAttach(ctx context.Context, execID string, config container.ExecAttachOptions) (types.HijackedResponse, error)
	ContainerExecInspect(ctx context.Context, execID string) (container.ExecInspect, error)
	ContainerExecResize(ctx context.Context, execID string, options container.ResizeOptions) error
	CopyToContainer(ctx context.Context, containerID, dstPath string, content io.Reader, options container.CopyToContainerOptions) error
	CopyFromContainer(ctx context.Context, containerID, srcPath string) (io.ReadCloser, container.PathStat, error)
	VolumeCreate(ctx context.Context, options volume.CreateOptions) (volume.Volume, error)
	VolumeInspect(ctx context.Context, volumeID string) (volume.Volume, error)
	VolumeList(ctx context.Context, options volume.ListOptions) (volume.ListResponse, error)
	VolumeRemove(ctx context.Context, volumeID string, force bool) error
	Close() error
}

// ErrUnavailable wraps every failure to reach an engine.
var ErrUnavailable = errcode.New(codes.Unavailable, "docker engine unavailable")

// PingTimeout bounds the check that an engine answers.
const PingTimeout = 3 * time.Second

// Pool caches one client per engine host. The empty host is the local engine
// (DOCKER_HOST or the default socket).
type Pool struct {
	mu      sync.Mutex
	clients map[string]Engine
	dial    func(host string) (Engine, error)
}

// NewPool returns a pool that opens clients with dial; nil dial uses the
// Docker client with API version negotiation.
func NewPool(dial func(host string) (Engine, error)) *Pool {
	if dial == nil {
		dial = DialEngine
	}
	return &Pool{clients: map[string]Engine{}, dial: dial}
}

// DialEngine opens a client of host ("" for the environment's engine).
func DialEngine(host string) (Engine, error) {
	opts := []client.Opt{client.FromEnv, client.WithAPIVersionNegotiation()}
	if host != "" {
		opts = append(opts, client.WithHost(host))
	}
	return client.NewClientWithOpts(opts...)
}

// ValidateHost checks a remote engine address.
func ValidateHost(host string) error {
	u, err := url.Parse(host)
	if err != nil || u.Host == "" && u.Path == "" {
		return fmt.Errorf("docker_host %q is not a URL like tcp://host:2376", host)
	}
	switch u.Scheme {
	case "tcp", "unix":
		return nil
	}
	return fmt.Errorf("docker_host %q: scheme must be tcp:// or unix://", host)
}

// Get returns the engine of host, checking that it answers. A client whose
// engine does not answer is not cached, so a later call tries again.
func (p *Pool) Get(ctx context.Context, host string) (Engine, error) {
	p.mu.Lock()
	e, ok := p.clients[host]
	p.mu.Unlock()
	if ok {
		return e, nil
	}
	e, err := p.dial(host)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrUnavailable, err)
	}
	pctx, cancel := context.WithTimeout(ctx, PingTimeout)
	defer cancel()
	if _, err := e.Ping(pctx); err != nil {
		e.Close()
		return nil, fmt.Errorf("%w: %s: %v", ErrUnavailable, hostName(host), err)
	}
	if c, ok := e.(*client.Client); ok {
		c.NegotiateAPIVersion(pctx)
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if old, ok := p.clients[host]; ok { // another caller won the race
		e.Close()
		return old, nil
	}
	p.clients[host] = e
	return e, nil
}

// Close closes every cached client.
func (p *Pool) Close() {
	p.mu.Lock()
	defer p.mu.Unlock()
	for h, e := range p.clients {
		e.Close()
		delete(p.clients, h)
	}
}

func hostName(host string) string {
	if host == "" {
		return "local engine"
	}
	return host
}

// IsNotFound reports whether err is Docker's not-found.
func IsNotFound(err error) bool {
	return err != nil && (cerrdefs.IsNotFound(err) || strings.Contains(err.Error(), "No such"))
}
