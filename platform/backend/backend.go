// Package backend is the one vocabulary for where an agent's files and
// commands live. The agent API (BackendConfig.type), the sandbox API
// (SandboxSpec.type), every binary's flags, `make run` and deploy/k8s use
// these names and this default image, and nothing else.
package backend

// The backends.
const (
	// Docker is a hardened container driven through wick-daemon.
	Docker = "docker"
	// Local is a workdir on the sandbox service's host, confined to it; for
	// development and trusted use.
	Local = "local"
	// None is an agent without a sandbox: no file or shell tools. Only the
	// agent service knows it; a sandbox is always Docker or Local.
	None = "none"
	// Auto lets the all-in-one `wick` command pick: Docker when an engine
	// answers, else Local. It is a choice made at start-up, never stored.
	Auto = "auto"
)

// DefaultImage is the sandbox image when a spec names none: the runtime
// image people work in (Debian with python3, git, Node.js, ripgrep), which
// `make images` builds from Debian packages (deploy/images/runtime.sh). It
// is not "wick-sandbox", the image of the sandbox service itself. It must be
// on the engine: no registry may be reachable, so nothing pulls it. Where it
// is missing, the all-in-one `wick` command builds the small busybox image
// under a content tag instead (services/sandbox/sandboximage) and says so.
const DefaultImage = "wick-sandbox-runtime:latest"
