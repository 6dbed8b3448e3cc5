package sandbox

import (
	"fmt"
	"maps"
	"net/http"
	"net/url"
	"path"
	"path/filepath"
	"strconv"

	"github.com/wick-agent/wick/platform/backend"
	"github.com/wick-agent/wick/platform/netguard"
	"github.com/wick-agent/wick/platform/usage"
	"github.com/wick-agent/wick/services/sandbox/internal/dockerbox"
	"github.com/wick-agent/wick/services/sandbox/internal/egress"
	"github.com/wick-agent/wick/services/sandbox/internal/endpoint"
	"github.com/wick-agent/wick/services/sandbox/internal/modelproxy"
	"github.com/wick-agent/wick/services/sandbox/internal/tracerelay"
)

// ModelEndpointPort is the model endpoint's port on a Docker sandbox's own
// loopback (each container has its own network namespace, so every
// sandbox uses the same one). A local sandbox gets a free host port.
const ModelEndpointPort = 47100

// EgressProxyPort is the egress proxy's port on a Docker sandbox's own
// loopback; like the model endpoint's, a local sandbox gets a free host port.
const EgressProxyPort = 47101

// sandboxEndpoint is an HTTP service of the sandbox service offered inside
// the sandboxes that want it, at 127.0.0.1:port: in a Docker sandbox the
// service listens on <socket dir>/<name>.sock and wick-daemon forwards the
// port to it; for a local sandbox the service listens on a host loopback
// port its Landlock policy opens.
type sandboxEndpoint struct {
	name string
	// port is the port inside a Docker sandbox.
	port int
	// wanted says whether a sandbox built with set offers it.
	wanted func(set settings) bool
	// handler serves the requests of the sandbox key.
	handler func(key, user, agent string, set settings) http.Handler
	// env is what the sandbox's processes get to find it at port.
	env func(port int, set settings) map[string]string
}

// WithModelEndpoint gives sandboxes whose spec sets model_endpoint the LLM
// gateway's HTTP API (upstream) inside them; sign puts the sandbox user's
// signed identity into each forwarded request's headers
// (identity.Key.SetHTTP). Without it such specs are refused.
func WithModelEndpoint(upstream http.Handler, sign func(h http.Header, user string)) Option {
	return func(s *Service) {
		s.endpoints = append(s.endpoints, sandboxEndpoint{
			name: "model", port: ModelEndpointPort,
			wanted: func(set settings) bool { return set.ModelEndpoint },
			handler: func(_, user, agent string, set settings) http.Handler {
				// The agent is not signed: it only says which of the signed
				// user's agents the gateway counts the call's usage on.
				signAgent := func(h http.Header, user string) {
					sign(h, user)
					h.Set(usage.AgentHeader, agent)
				}
				return modelproxy.Handler(upstream, signAgent, user, set.EndpointToken)
			},
			env: func(port int, set settings) map[string]string { return modelproxy.Env(port, set.EndpointToken) },
		})
	}
}

// traceSocket is the name, in a Docker sandbox's socket directory, of the
// socket wick-daemon exports its spans to (WithTraceRelay).
const traceSocket = "otlp.sock"

// WithTraceRelay has the wick-daemon of every Docker sandbox on the local
// engine record spans and export them over OTLP/HTTP to a Unix socket in
// its run directory, which the service serves and forwards through c (the
// service's own exporter settings, telemetry.NewTraceClient). The container
// keeps no network, and the collector's address and credentials stay out of
// it. Every relayed span is named service wick-daemon.
func WithTraceRelay(c tracerelay.Uploader) Option { return func(s *Service) { s.traceRelay = c } }

// relaysTraces reports whether the daemon of a sandbox built with set
// exports spans: the relay's socket is served only on the local engine.
func (s *Service) relaysTraces(set settings) bool {
	return s.traceRelay != nil && set.Type == backend.Docker && set.DockerHost == ""
}

// traceArgs are wick-daemon's flags for its spans.
func (s *Service) traceArgs(set settings) []string {
	if !s.relaysTraces(set) {
		return nil
	}
	return []string{"-otlp-socket", path.Join(dockerbox.RunDir, traceSocket)}
}

// WithEgressGuard makes the egress proxies dial through g instead of a
// guard that refuses every non-public address: an embedder that must let
// sandboxes reach a private range names it in g (netguard.New), and tests
// allow loopback with it. It is no flag of wick-sandbox, since a sandbox
// reaching the service's own network is what the guard exists to prevent.
func WithEgressGuard(g *netguard.Guard) Option { return func(s *Service) { s.egressGuard = g } }

// egressEndpoint is the egress proxy, offered in every sandbox whose spec
// allows some egress: a forward proxy (CONNECT, or plain HTTP with an
// absolute URL) to exactly the sandbox's allowed destinations, announced in
// the usual proxy variables. The model endpoint and anything else on the
// sandbox's own loopback stay direct.
func (s *Service) egressEndpoint() sandboxEndpoint {
	return sandboxEndpoint{
		name: "egress", port: EgressProxyPort,
		wanted: func(set settings) bool { return len(set.Egress) > 0 },
		handler: func(key, user, _ string, set settings) http.Handler {
			log := s.log.With("user", user, "agent", set.Agent)
			policy, err := s.egressPolicy(set.Egress)
			if err != nil {
				// The operator narrowed -egress-allow since the sandbox was
				// made: it keeps no more than the new bound allows.
				log.Warn("egress refused: the sandbox's allowlist is outside the bound", "sandbox", key, "err", err)
				msg := "egress is not allowed for this sandbox: " + err.Error()
				return http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
					http.Error(w, msg, http.StatusForbidden)
				})
			}
			opts := []egress.Option{egress.WithLogger(log)}
			if s.egressGuard != nil {
				opts = append(opts, egress.WithGuard(s.egressGuard))
			}
			return egress.New(key, policy, opts...)
		},
		env: func(port int, _ settings) map[string]string {
			proxy := "http://127.0.0.1:" + strconv.Itoa(port)
			noProxy := "127.0.0.1,localhost"
			return map[string]string{
				"HTTP_PROXY": proxy, "HTTPS_PROXY": proxy, "http_proxy": proxy, "https_proxy": proxy,
				"NO_PROXY": noProxy, "no_proxy": noProxy,
			}
		},
	}
}

// egressPolicy is the policy of a sandbox's stored patterns under the
// operator's current bound.
func (s *Service) egressPolicy(patterns []string) (egress.Policy, error) {
	ps, err := egress.ParsePatterns(patterns)
	if err != nil {
		return egress.Policy{}, err
	}
	return egress.NewPolicy(ps, s.egressBound)
}

// RemoteLLM is the LLM gateway's HTTP API at baseURL (e.g.
// http://llmgw:8080), reached with token when it requires one: the
// upstream of WithModelEndpoint when the gateway runs in another process.
func RemoteLLM(baseURL, token string) (http.Handler, error) {
	u, err := url.Parse(baseURL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("sandbox: LLM gateway URL %q is not an http(s) URL", baseURL)
	}
	return modelproxy.Remote(u, token), nil
}

func (s *Service) endpointFor(name string) (sandboxEndpoint, bool) {
	for _, ep := range s.endpoints {
		if ep.name == name {
			return ep, true
		}
	}
	return sandboxEndpoint{}, false
}

// wantsEndpoints reports whether a sandbox built with set offers any endpoint.
func (s *Service) wantsEndpoints(set settings) bool {
	for _, ep := range s.endpoints {
		if ep.wanted(set) {
			return true
		}
	}
	return false
}

// forwardArgs are wick-daemon's -forward flags for a Docker sandbox.
func (s *Service) forwardArgs(set settings) []string {
	var args []string
	for _, ep := range s.endpoints {
		if ep.wanted(set) {
			args = append(args, "-forward", strconv.Itoa(ep.port)+"="+path.Join(dockerbox.RunDir, ep.name+".sock"))
		}
	}
	return args
}

// sandboxEnv is the environment of a sandbox's processes: the endpoints'
// variables (ports maps an endpoint to its port where it is not the Docker
// one), then the spec's own env, which wins.
func (s *Service) sandboxEnv(set settings, ports map[string]int) map[string]string {
	env := map[string]string{}
	for _, ep := range s.endpoints {
		if !ep.wanted(set) {
			continue
		}
		port := ep.port
		if p, ok := ports[ep.name]; ok {
			port = p
		}
		maps.Copy(env, ep.env(port, set))
	}
	maps.Copy(env, set.Params.Env)
	if len(env) == 0 {
		return nil
	}
	return env
}

// serveEndpoints makes sure the service listens on a Docker sandbox's
// endpoint sockets. Runs after the daemon answered and the socket directory
// was taken back from the sandbox (lockHostDir), so nothing in the sandbox
// can replace them afterwards; one removed or replaced while the directory
// was the sandbox's (a re-injection hands it over for a moment) is bound
// anew. A replaced socket could only ever make the daemon talk to something
// the sandbox made itself. b.life is held.
func (s *Service) serveEndpoints(b *box) error {
	b.mu.Lock()
	set, user := b.set, b.user
	b.mu.Unlock()
	if set.Type != backend.Docker || set.DockerHost != "" {
		return nil
	}
	for _, ep := range s.endpoints {
		if !ep.wanted(set) {
			continue
		}
		cur := b.servedEndpoint(ep.name)
		if cur != nil && cur.token == set.EndpointToken && cur.srv.Intact() {
			continue
		}
		if cur != nil {
			_ = cur.srv.Close()
		}
		srv, err := endpoint.ListenUnix(filepath.Join(b.hostDir, ep.name+".sock"), ep.handler(b.key, user, b.agent, set))
		if err != nil {
			return fmt.Errorf("%s endpoint: %w", ep.name, err)
		}
		b.setEndpoint(ep.name, &boxEndpoint{srv: srv, token: set.EndpointToken})
	}
	return s.serveTraceRelay(b, set)
}

// serveTraceRelay makes sure the service listens on a Docker sandbox's trace
// socket, under the same conditions as serveEndpoints. b.life is held.
func (s *Service) serveTraceRelay(b *box, set settings) error {
	if !s.relaysTraces(set) {
		return nil
	}
	cur := b.servedEndpoint(traceSocket)
	if cur != nil && cur.srv.Intact() {
		return nil
	}
	if cur != nil {
		_ = cur.srv.Close()
	}
	srv, err := endpoint.ListenUnix(filepath.Join(b.hostDir, traceSocket), tracerelay.Handler(s.traceRelay))
	if err != nil {
		return fmt.Errorf("trace relay: %w", err)
	}
	b.setEndpoint(traceSocket, &boxEndpoint{srv: srv})
	return nil
}

// serveLocalEndpoints listens on a host loopback port for each endpoint of a
// local sandbox and returns the ports by endpoint name. b.life is held.
func (s *Service) serveLocalEndpoints(b *box, set settings) (map[string]int, error) {
	ports := map[string]int{}
	for _, ep := range s.endpoints {
		if !ep.wanted(set) {
			continue
		}
		srv, err := endpoint.ListenLoopback(ep.handler(b.key, b.user, b.agent, set))
		if err != nil {
			return nil, fmt.Errorf("%s endpoint: %w", ep.name, err)
		}
		b.setEndpoint(ep.name, &boxEndpoint{srv: srv, token: set.EndpointToken})
		ports[ep.name] = srv.Port()
	}
	return ports, nil
}

// boxEndpoint is one endpoint a sandbox is served, and the token it was
// built with.
type boxEndpoint struct {
	srv   *endpoint.Server
	token string
}

// servedEndpoint is the endpoint the box is served under name, nil for none.
func (b *box) servedEndpoint(name string) *boxEndpoint {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.endpoints[name]
}

// setEndpoint records the endpoint the box is served under name.
func (b *box) setEndpoint(name string, e *boxEndpoint) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.endpoints == nil {
		b.endpoints = map[string]*boxEndpoint{}
	}
	b.endpoints[name] = e
}
