//go:build k8scluster

package cluster_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/rest"

	"github.com/wick-agent/wick/deploy/k8s/internal/cluster"
	sandboxv1 "github.com/wick-agent/wick/gen/wick/sandbox/v1"
	"github.com/wick-agent/wick/platform/backend"
	"github.com/wick-agent/wick/platform/identity"
	"github.com/wick-agent/wick/platform/netguard"
	"github.com/wick-agent/wick/platform/testenv"
	"github.com/wick-agent/wick/platform/usage"
	"github.com/wick-agent/wick/services/sandbox"
	"github.com/wick-agent/wick/services/sandbox/kubebox"
	"github.com/wick-agent/wick/services/sandbox/sandboximage"
)

// Names of the sandbox test's objects.
const (
	sandboxNS      = "wick-sandboxes"
	storageClass   = "wick-test"
	daemonImage    = "wick.local/wick-sandbox:test"
	sandboxManager = "k8s-sandbox-test"
	sandboxAgent   = "coder"
)

// TestSandboxPods runs the sandbox service with its Kubernetes engine against
// a real single-node cluster: each sandbox is a pod in a namespace that
// enforces Pod Security "restricted", built from the runtime image `make
// images` builds, its daemon placed by an init container from a FROM-scratch
// image of wick-daemon and wickfs, reached through the API server's
// port-forward; the service acts with exactly the rights overlays/prod's Role
// gives its account (impersonated). It checks the hardening from the pod spec and from inside the
// pod, files and commands, the process API, a pod deleted behind the
// service's back (the next call runs on a new pod with the workspace kept),
// stop and start, adoption by a restarted service, a claim from the warm
// pool, and that delete removes every object. It logs the sandbox's ready time cold and warm and the time
// of `true` through the daemon.
func TestSandboxPods(t *testing.T) {
	runtimeImage := backend.DefaultImage
	c := sandboxCluster(t, runtimeImage)
	ctx := t.Context()

	restrictedNamespace(t, c, sandboxNS)
	// The service acts with the rights overlays/prod gives it, no more.
	asService := sandboxServiceRole(t, c)
	workspaceVolumes(t, c, 5)

	// The model endpoint's upstream (the LLM gateway's HTTP API) and two
	// destinations of the egress proxy, all in this process: the sandbox
	// pods reach them only through their daemon's tunnels.
	llm, daemonSpans := &recordingLLM{}, &recordingSpans{}
	allowed, denied := egressDestination(t, "hello from the allowed server"), egressDestination(t, "the denied server answered")
	bound := []string{allowed, denied} // the sandbox asks for allowed only
	withEndpoints := []sandbox.Option{
		sandbox.WithModelEndpoint(llm, func(h http.Header, user string) { h.Set("X-Test-User", user) }),
		sandbox.WithEgressGuard(netguard.New(netip.MustParsePrefix("127.0.0.0/8"))),
		sandbox.WithTraceRelay(daemonSpans),
	}

	stateDir := t.TempDir()
	withBound := sandbox.Config{StateDir: stateDir, BuiltinSkills: true, EgressAllow: bound}
	cli, stop := startSandboxService(t, asService, withBound, withEndpoints...)
	uctx := context.Background()

	begin := time.Now()
	sb, err := cli.EnsureSandbox(uctx, &sandboxv1.EnsureSandboxRequest{AgentId: sandboxAgent})
	if err != nil {
		t.Fatalf("EnsureSandbox: %v", err)
	}
	t.Logf("sandbox pod ready (cold: image cached, claim bound, pod made, daemon answering) in %s", time.Since(begin).Round(time.Millisecond))
	box := sb.GetSandbox()
	if box.GetState() != "running" || box.GetTransport() != "daemon" {
		t.Fatalf("sandbox %+v, want running on the daemon", box)
	}
	pod := sandboxPod(t, c)
	if string(pod.UID) != box.GetContainerId() {
		t.Errorf("sandbox reports container %q, its pod's uid is %s", box.GetContainerId(), pod.UID)
	}

	// The hardening as the API server stored it.
	sc := pod.Spec.Containers[0].SecurityContext
	if *pod.Spec.AutomountServiceAccountToken || *sc.AllowPrivilegeEscalation || !*sc.RunAsNonRoot ||
		!slices.Equal(sc.Capabilities.Drop, []corev1.Capability{"ALL"}) || sc.SeccompProfile.Type != corev1.SeccompProfileTypeRuntimeDefault {
		t.Errorf("sandbox pod hardening: token %v, security context %+v", *pod.Spec.AutomountServiceAccountToken, sc)
	}
	if pod.Spec.Containers[0].Resources.Limits.Memory().Value() != sandbox.DefaultMemory {
		t.Errorf("memory limit %s, want %d", pod.Spec.Containers[0].Resources.Limits.Memory(), sandbox.DefaultMemory)
	}
	np, err := c.Client.NetworkingV1().NetworkPolicies(sandboxNS).Get(ctx, pod.Name, metav1.GetOptions{})
	if err != nil || len(np.Spec.Ingress) != 0 || len(np.Spec.Egress) != 0 || len(np.Spec.PolicyTypes) != 2 {
		t.Errorf("network policy of a network-none sandbox: %+v, %v", np, err)
	}

	// The hardening from inside.
	out := run(t, cli, "id -u; id -g; grep -E '^Cap(Prm|Eff|Bnd)' /proc/self/status; grep NoNewPrivs /proc/self/status; "+
		"ls /var/run/secrets/kubernetes.io 2>&1 || true; python3 -c 'print(6*7)'")
	for _, want := range []string{"1000\n1000\n", "CapPrm:\t0000000000000000", "CapEff:\t0000000000000000", "CapBnd:\t0000000000000000",
		"NoNewPrivs:\t1", "No such file or directory", "\n42\n"} {
		if !strings.Contains(out, want) {
			t.Errorf("inside the pod: no %q in\n%s", want, out)
		}
	}

	// The skills library, read-only whatever the sandbox's user does.
	if out := run(t, cli, "ls skills; touch skills/mine 2>&1 || echo refused"); !strings.Contains(out, "refused") || len(strings.Fields(out)) < 3 {
		t.Errorf("skills library in the pod: %q", out)
	}

	// Files, and the workspace's own filesystem.
	writeFile(t, cli, "notes/plan.md", "keep me\n")
	if got := run(t, cli, "cat notes/plan.md && pwd"); got != "keep me\n/workspace\n" {
		t.Errorf("read back: %q", got)
	}

	// The process API.
	sp, err := cli.StartProcess(uctx, &sandboxv1.StartProcessRequest{AgentId: sandboxAgent, Argv: []string{"sleep", "300"}, Tag: "sleeper"})
	if err != nil {
		t.Fatalf("StartProcess: %v", err)
	}
	procs, err := cli.ListProcesses(uctx, &sandboxv1.ListProcessesRequest{AgentId: sandboxAgent})
	if err != nil || len(procs.GetProcesses()) != 1 || procs.GetProcesses()[0].GetTag() != "sleeper" || !procs.GetProcesses()[0].GetRunning() {
		t.Fatalf("ListProcesses: %v %v", procs, err)
	}
	if _, err := cli.SignalProcess(uctx, &sandboxv1.SignalProcessRequest{AgentId: sandboxAgent, Id: sp.GetProcess().GetId(),
		Signal: sandboxv1.ProcessSignal_PROCESS_SIGNAL_SIGKILL}); err != nil {
		t.Fatalf("SignalProcess: %v", err)
	}

	// `true` through the daemon, as an agent's tool call makes it.
	var times []time.Duration
	for range 20 {
		begin := time.Now()
		run(t, cli, "true")
		times = append(times, time.Since(begin))
	}
	sort.Slice(times, func(i, j int) bool { return times[i] < times[j] })
	t.Logf("exec true through port-forward: p50 %s, p95 %s (20 runs)", times[10].Round(time.Microsecond), times[18].Round(time.Microsecond))

	// A pod deleted behind the service's back: the next call runs on a new
	// pod, with the workspace.
	if err := c.Client.CoreV1().Pods(sandboxNS).Delete(ctx, pod.Name, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	waitGone(t, c, pod.Name)
	if got := run(t, cli, "cat notes/plan.md"); got != "keep me\n" {
		t.Errorf("after the pod was deleted: %q", got)
	}
	if again := sandboxPod(t, c); again.UID == pod.UID {
		t.Error("the call after the delete did not run on a new pod")
	} else {
		pod = again
	}

	// Stop keeps the workspace; the next start makes a pod on it.
	if _, err := cli.StopSandbox(uctx, &sandboxv1.StopSandboxRequest{AgentId: sandboxAgent}); err != nil {
		t.Fatalf("StopSandbox: %v", err)
	}
	waitGone(t, c, pod.Name)
	begin = time.Now()
	if _, err := cli.EnsureSandbox(uctx, &sandboxv1.EnsureSandboxRequest{AgentId: sandboxAgent}); err != nil {
		t.Fatalf("EnsureSandbox after stop: %v", err)
	}
	t.Logf("sandbox pod ready again on its workspace (warm: claim bound, image cached) in %s", time.Since(begin).Round(time.Millisecond))
	if got := run(t, cli, "cat notes/plan.md"); got != "keep me\n" {
		t.Errorf("after stop and start: %q", got)
	}
	pod = sandboxPod(t, c)

	// A restarted service adopts the running pod.
	stop()
	cli, stop = startSandboxService(t, asService, withBound, withEndpoints...)
	got, err := cli.GetSandbox(uctx, &sandboxv1.GetSandboxRequest{AgentId: sandboxAgent})
	if err != nil || got.GetSandbox().GetState() != "running" || got.GetSandbox().GetContainerId() != string(pod.UID) {
		t.Fatalf("after a restart of the service: %v %v, want pod %s running", got, err, pod.UID)
	}
	if out := run(t, cli, "cat notes/plan.md"); out != "keep me\n" {
		t.Errorf("after a restart of the service: %q", out)
	}

	// A sandbox whose image cannot be had fails with the kubelet's reason,
	// not after a timeout.
	_, err = cli.EnsureSandbox(uctx, &sandboxv1.EnsureSandboxRequest{AgentId: "broken", Spec: &sandboxv1.SandboxSpec{Image: "wick.local/no-such-image:1"}})
	if status.Code(err) != codes.FailedPrecondition || !strings.Contains(err.Error(), "no-such-image") {
		t.Errorf("a sandbox of a missing image: %v, want FailedPrecondition naming it", err)
	}
	if _, err := cli.DeleteSandbox(uctx, &sandboxv1.DeleteSandboxRequest{AgentId: "broken"}); err != nil && status.Code(err) != codes.NotFound {
		t.Errorf("DeleteSandbox of the broken sandbox: %v", err)
	}

	// Delete removes everything of the sandbox.
	if _, err := cli.DeleteSandbox(uctx, &sandboxv1.DeleteSandboxRequest{AgentId: sandboxAgent}); err != nil {
		t.Fatalf("DeleteSandbox: %v", err)
	}
	if left := objectsLeft(t, c, kubebox.LabelManager+"="+sandboxManager); left != "" {
		t.Errorf("after DeleteSandbox: %s", left)
	}

	// A sandbox with the model endpoint and an egress allow-list: its pod
	// still has no network, and both are served through the daemon.
	checkEndpoints(t, c, cli, llm, allowed, denied)
	// The daemons' spans come back the same way.
	if err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, time.Minute, true, func(context.Context) (bool, error) {
		return daemonSpans.count() > 0, nil
	}); err != nil {
		t.Errorf("no span of a pod's wick-daemon reached the service's exporter: %v", err)
	}
	stop()
	cli, stop = startSandboxService(t, asService, withBound, withEndpoints...)
	if out := runAs(t, cli, endpointsAgent, callModel); !strings.Contains(out, `"model":"fake"`) {
		t.Errorf("the model endpoint after a restart of the service: %q", out)
	}
	if _, err := cli.DeleteSandbox(uctx, &sandboxv1.DeleteSandboxRequest{AgentId: endpointsAgent}); err != nil {
		t.Fatalf("DeleteSandbox: %v", err)
	}
	if left := objectsLeft(t, c, kubebox.LabelManager+"="+sandboxManager); left != "" {
		t.Errorf("after DeleteSandbox of the endpoints' sandbox: %s", left)
	}

	// The warm pool: a new sandbox claims a ready pod, which keeps its name
	// and gets the sandbox's key; the pool makes another.
	stop()
	reg := prometheus.NewRegistry()
	cli, stop = startSandboxService(t, asService, sandbox.Config{StateDir: stateDir, BuiltinSkills: true, WarmPool: 1}, sandbox.WithMetrics(reg))
	waitWarmReady(t, reg)
	warm := waitWarmPod(t, c, "")
	begin = time.Now()
	sb, err = cli.EnsureSandbox(uctx, &sandboxv1.EnsureSandboxRequest{AgentId: "quick"})
	if err != nil {
		t.Fatalf("EnsureSandbox on a warm pod: %v", err)
	}
	t.Logf("sandbox pod ready from the warm pool in %s", time.Since(begin).Round(time.Millisecond))
	claimed, err := c.Client.CoreV1().Pods(sandboxNS).Get(ctx, warm.Name, metav1.GetOptions{})
	if err != nil || sb.GetSandbox().GetContainerId() != string(warm.UID) || claimed.Labels[kubebox.LabelWarm] != "" ||
		claimed.Annotations[kubebox.AnnotationAgent] != "quick" {
		t.Fatalf("the sandbox %+v on warm pod %s: labels %v, annotations %v, %v", sb.GetSandbox(), warm.Name, claimed.Labels, claimed.Annotations, err)
	}
	writeFileAs(t, cli, "quick", "warm.txt", "from the pool\n")
	waitWarmPod(t, c, warm.Name)
	// Stopped and started again, it keeps the warm pod's workspace.
	if _, err := cli.StopSandbox(uctx, &sandboxv1.StopSandboxRequest{AgentId: "quick"}); err != nil {
		t.Fatal(err)
	}
	if _, err := cli.EnsureSandbox(uctx, &sandboxv1.EnsureSandboxRequest{AgentId: "quick"}); err != nil {
		t.Fatal(err)
	}
	if out := runAs(t, cli, "quick", "cat warm.txt"); out != "from the pool\n" {
		t.Errorf("a claimed warm sandbox after stop and start: %q", out)
	}
	if _, err := cli.DeleteSandbox(uctx, &sandboxv1.DeleteSandboxRequest{AgentId: "quick"}); err != nil {
		t.Fatal(err)
	}
	stop() // removes the pool's ready pod
	if left := objectsLeft(t, c, kubebox.LabelManager+"="+sandboxManager); left != "" {
		t.Errorf("after the sandbox was deleted and the service closed: %s", left)
	}
}

// endpointsAgent's sandbox has the model endpoint and an egress allow-list.
const endpointsAgent = "networked"

// callModel calls the model endpoint from inside a sandbox as an OpenAI SDK
// would, with what its environment says.
const callModel = `python3 -c 'import os, urllib.request as u
r = u.Request(os.environ["OPENAI_BASE_URL"] + "/chat/completions", data=b"{}",
    headers={"Authorization": "Bearer " + os.environ["OPENAI_API_KEY"], "Content-Type": "application/json"})
print(u.urlopen(r).read().decode())'`

// proxyGet fetches url through the egress proxy the environment names and
// prints the status and body, whatever the status.
func proxyGet(url string) string {
	return `python3 -c 'import urllib.request as u, urllib.error as e
try:
    r = u.urlopen("` + url + `"); print(r.status, r.read().decode())
except e.HTTPError as x:
    print(x.code, x.read().decode())'`
}

// checkEndpoints makes endpointsAgent's sandbox and checks that its
// endpoints work from inside the pod while the token stays in the Secret
// and the pod's policy allows no egress at all.
func checkEndpoints(t *testing.T, c *cluster.Cluster, cli sandboxv1.SandboxServiceClient, llm *recordingLLM, allowed, denied string) {
	t.Helper()
	ctx := t.Context()
	if _, err := cli.EnsureSandbox(ctx, &sandboxv1.EnsureSandboxRequest{AgentId: endpointsAgent, Spec: &sandboxv1.SandboxSpec{
		ModelEndpoint: true, EgressAllow: []string{allowed}}}); err != nil {
		t.Fatalf("EnsureSandbox with endpoints: %v", err)
	}
	pod := sandboxPod(t, c)
	for _, e := range pod.Spec.Containers[0].Env {
		if e.Name == "OPENAI_API_KEY" && (e.Value != "" || e.ValueFrom == nil || e.ValueFrom.SecretKeyRef == nil) {
			t.Errorf("OPENAI_API_KEY in the pod spec: %+v, want it from the Secret", e)
		}
	}
	sec, err := c.Client.CoreV1().Secrets(sandboxNS).Get(ctx, pod.Name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	token := string(sec.Data[kubebox.EndpointTokenKey])
	if len(token) < 32 || strings.Contains(pod.Annotations[kubebox.AnnotationSpec], token) {
		t.Errorf("endpoint token %q in the Secret; the settings annotation %s", token, pod.Annotations[kubebox.AnnotationSpec])
	}
	np, err := c.Client.NetworkingV1().NetworkPolicies(sandboxNS).Get(ctx, pod.Name, metav1.GetOptions{})
	if err != nil || len(np.Spec.Egress) != 0 || !slices.Contains(np.Spec.PolicyTypes, "Egress") {
		t.Errorf("network policy of a sandbox with endpoints: %+v, %v; want no egress", np, err)
	}

	out := runAs(t, cli, endpointsAgent, callModel)
	if !strings.Contains(out, `"model":"fake"`) {
		t.Errorf("the model endpoint from inside the pod: %q", out)
	}
	if got := llm.last(); got.path != "/v1/chat/completions" || got.user != "alice" || got.agent != endpointsAgent || got.auth != "" {
		t.Errorf("the upstream saw %+v, want the call signed as alice for %s without the sandbox's token", got, endpointsAgent)
	}
	if out := runAs(t, cli, endpointsAgent, `python3 -c 'import os, urllib.request as u, urllib.error as e
try:
    u.urlopen(u.Request(os.environ["OPENAI_BASE_URL"] + "/models", headers={"Authorization": "Bearer wrong"}))
except e.HTTPError as x:
    print(x.code)'`); out != "401\n" {
		t.Errorf("the model endpoint with a wrong token: %q, want 401", out)
	}
	if out := runAs(t, cli, endpointsAgent, proxyGet("http://"+allowed+"/")); out != "200 hello from the allowed server\n" {
		t.Errorf("the allowed destination through the egress proxy: %q", out)
	}
	if out := runAs(t, cli, endpointsAgent, proxyGet("http://"+denied+"/")); !strings.HasPrefix(out, "403 ") || strings.Contains(out, "denied server answered") {
		t.Errorf("a destination outside the allow-list: %q, want 403 from the proxy", out)
	}
}

// recordingLLM stands for the LLM gateway's HTTP API: it answers every
// call and remembers the last one.
type recordingLLM struct {
	mu  sync.Mutex
	got llmCall
}

type llmCall struct{ path, user, agent, auth string }

func (l *recordingLLM) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	l.mu.Lock()
	l.got = llmCall{path: r.URL.Path, user: r.Header.Get("X-Test-User"), agent: r.Header.Get(usage.AgentHeader),
		auth: r.Header.Get("Authorization") + r.Header.Get("x-api-key")}
	l.mu.Unlock()
	w.Header().Set("Content-Type", "application/json")
	_, _ = io.WriteString(w, `{"model":"fake","choices":[]}`)
}

func (l *recordingLLM) last() llmCall {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.got
}

// recordingSpans stands for the service's trace exporter: it counts the
// spans relayed from the sandboxes' daemons.
type recordingSpans struct {
	mu sync.Mutex
	n  int
}

func (r *recordingSpans) UploadTraces(_ context.Context, spans []*tracepb.ResourceSpans) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, rs := range spans {
		for _, a := range rs.GetResource().GetAttributes() {
			if a.GetKey() == "service.name" && a.GetValue().GetStringValue() == "wick-daemon" {
				for _, ss := range rs.GetScopeSpans() {
					r.n += len(ss.GetSpans())
				}
			}
		}
	}
	return nil
}

func (r *recordingSpans) count() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.n
}

// egressDestination is an HTTP server on 127.0.0.2, which no sandbox's
// NO_PROXY names; it returns host:port.
func egressDestination(t *testing.T, body string) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.2:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { _, _ = io.WriteString(w, body) })}
	go func() { _ = srv.Serve(ln) }()
	t.Cleanup(func() { srv.Close() })
	return ln.Addr().String()
}

// objectsLeft describes the sandbox objects sel selects, "" for none.
func objectsLeft(t *testing.T, c *cluster.Cluster, sel string) string {
	t.Helper()
	ctx, opts := t.Context(), metav1.ListOptions{LabelSelector: sel}
	pods, err1 := c.Client.CoreV1().Pods(sandboxNS).List(ctx, opts)
	pvcs, err2 := c.Client.CoreV1().PersistentVolumeClaims(sandboxNS).List(ctx, opts)
	secrets, err3 := c.Client.CoreV1().Secrets(sandboxNS).List(ctx, opts)
	nps, err4 := c.Client.NetworkingV1().NetworkPolicies(sandboxNS).List(ctx, opts)
	if err := errors.Join(err1, err2, err3, err4); err != nil {
		t.Fatal(err)
	}
	if n := len(pods.Items) + len(pvcs.Items) + len(secrets.Items) + len(nps.Items); n == 0 {
		return ""
	}
	return fmt.Sprintf("%d pods, %d claims, %d secrets, %d policies left", len(pods.Items), len(pvcs.Items), len(secrets.Items), len(nps.Items))
}

// waitWarmReady waits until the service's pool holds a ready pod, as its
// metric says: the refill runs in the background and tells no one else.
func waitWarmReady(t *testing.T, reg *prometheus.Registry) {
	t.Helper()
	if err := wait.PollUntilContextTimeout(t.Context(), 200*time.Millisecond, 3*time.Minute, true, func(context.Context) (bool, error) {
		mfs, err := reg.Gather()
		if err != nil {
			return false, err
		}
		for _, mf := range mfs {
			if mf.GetName() == "wick_sandbox_warm_pool_ready" && len(mf.GetMetric()) == 1 && mf.GetMetric()[0].GetGauge().GetValue() >= 1 {
				return true, nil
			}
		}
		return false, nil
	}); err != nil {
		t.Fatalf("the warm pool holds no ready pod: %v", err)
	}
}

// waitWarmPod waits for a running warm pod other than not.
func waitWarmPod(t *testing.T, c *cluster.Cluster, not string) *corev1.Pod {
	t.Helper()
	var found *corev1.Pod
	if err := wait.PollUntilContextTimeout(t.Context(), 200*time.Millisecond, 3*time.Minute, true, func(ctx context.Context) (bool, error) {
		l, err := c.Client.CoreV1().Pods(sandboxNS).List(ctx, metav1.ListOptions{LabelSelector: kubebox.LabelWarm + "=1"})
		if err != nil {
			return false, nil
		}
		for i, p := range l.Items {
			if p.Name != not && kubebox.Running(&l.Items[i]) {
				found = &l.Items[i]
				return true, nil
			}
		}
		return false, nil
	}); err != nil {
		t.Fatalf("no running warm pod: %v", err)
	}
	return found
}

// startSandboxService serves a sandbox service with the Kubernetes engine,
// acting on the API server as rc says, configured by cfg (the test's
// manager, engine and images added), over real gRPC on loopback, every call
// as user alice; stop closes it.
func startSandboxService(t *testing.T, rc *rest.Config, cfg sandbox.Config, opts ...sandbox.Option) (sandboxv1.SandboxServiceClient, func()) {
	t.Helper()
	kc, err := kubebox.New(rc, kubebox.Config{Namespace: sandboxNS, DaemonImage: daemonImage, StorageClass: storageClass,
		RunAs: kubebox.RunAs{UID: 1000, GID: 1000}})
	if err != nil {
		t.Fatal(err)
	}
	cfg.ManagerID, cfg.DefaultType, cfg.DefaultImage, cfg.DaemonStartTimeout = sandboxManager, backend.Docker, backend.DefaultImage, 2*time.Minute
	svc, err := sandbox.New(cfg, append(opts, sandbox.WithKubernetes(kc))...)
	if err != nil {
		t.Fatal(err)
	}
	asAlice := func(ctx context.Context) context.Context { return identity.WithUser(ctx, "alice") }
	srv := grpc.NewServer(
		grpc.UnaryInterceptor(func(ctx context.Context, req any, _ *grpc.UnaryServerInfo, h grpc.UnaryHandler) (any, error) {
			return h(asAlice(ctx), req)
		}),
		grpc.StreamInterceptor(func(srv any, ss grpc.ServerStream, _ *grpc.StreamServerInfo, h grpc.StreamHandler) error {
			return h(srv, &userStream{ServerStream: ss, ctx: asAlice(ss.Context())})
		}))
	svc.Register(srv)
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go func() { _ = srv.Serve(lis) }()
	conn, err := grpc.NewClient(lis.Addr().String(), grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	stopped := false
	stop := func() {
		if stopped {
			return
		}
		stopped = true
		conn.Close()
		srv.Stop()
		cctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if err := svc.Close(cctx); err != nil {
			t.Errorf("close the sandbox service: %v", err)
		}
	}
	t.Cleanup(stop)
	return sandboxv1.NewSandboxServiceClient(conn), stop
}

type userStream struct {
	grpc.ServerStream
	ctx context.Context
}

func (s *userStream) Context() context.Context { return s.ctx }

// run runs command in the test agent's sandbox and returns its stdout; it
// must exit 0.
func run(t *testing.T, cli sandboxv1.SandboxServiceClient, command string) string {
	t.Helper()
	return runAs(t, cli, sandboxAgent, command)
}

func runAs(t *testing.T, cli sandboxv1.SandboxServiceClient, agent, command string) string {
	t.Helper()
	stream, err := cli.Exec(context.Background(), &sandboxv1.ExecRequest{AgentId: agent, Command: command})
	if err != nil {
		t.Fatalf("Exec %q: %v", command, err)
	}
	var out, errOut strings.Builder
	for {
		m, err := stream.Recv()
		if err == io.EOF {
			t.Fatalf("Exec %q: no exit status", command)
		}
		if err != nil {
			t.Fatalf("Exec %q: %v", command, err)
		}
		out.Write(m.GetStdout())
		errOut.Write(m.GetStderr())
		if e := m.GetExit(); e != nil {
			if e.GetExitCode() != 0 {
				t.Fatalf("Exec %q: exit %d: %s%s", command, e.GetExitCode(), out.String(), errOut.String())
			}
			return out.String()
		}
	}
}

func writeFile(t *testing.T, cli sandboxv1.SandboxServiceClient, path, content string) {
	t.Helper()
	writeFileAs(t, cli, sandboxAgent, path, content)
}

func writeFileAs(t *testing.T, cli sandboxv1.SandboxServiceClient, agent, path, content string) {
	t.Helper()
	stream, err := cli.WriteFile(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if err := stream.Send(&sandboxv1.WriteFileRequest{Msg: &sandboxv1.WriteFileRequest_Header{Header: &sandboxv1.WriteFileHeader{AgentId: agent, Path: path}}}); err != nil {
		t.Fatal(err)
	}
	if err := stream.Send(&sandboxv1.WriteFileRequest{Msg: &sandboxv1.WriteFileRequest_Data{Data: []byte(content)}}); err != nil {
		t.Fatal(err)
	}
	if _, err := stream.CloseAndRecv(); err != nil {
		t.Fatalf("WriteFile %s: %v", path, err)
	}
}

// sandboxPod is the one sandbox pod of the test's manager.
func sandboxPod(t *testing.T, c *cluster.Cluster) *corev1.Pod {
	t.Helper()
	l, err := c.Client.CoreV1().Pods(sandboxNS).List(t.Context(), metav1.ListOptions{LabelSelector: kubebox.LabelManager + "=" + sandboxManager})
	if err != nil || len(l.Items) != 1 {
		t.Fatalf("sandbox pods: %v %v, want one", l, err)
	}
	return &l.Items[0]
}

func waitGone(t *testing.T, c *cluster.Cluster, name string) {
	t.Helper()
	if err := wait.PollUntilContextTimeout(t.Context(), 200*time.Millisecond, 2*time.Minute, true, func(ctx context.Context) (bool, error) {
		_, err := c.Client.CoreV1().Pods(sandboxNS).Get(ctx, name, metav1.GetOptions{})
		return apierrors.IsNotFound(err), nil
	}); err != nil {
		t.Fatalf("pod %s still there: %v", name, err)
	}
}

// restrictedNamespace creates ns enforcing Pod Security "restricted" and
// waits for its default ServiceAccount, without which pods are refused.
func restrictedNamespace(t *testing.T, c *cluster.Cluster, ns string) {
	t.Helper()
	if _, err := c.Client.CoreV1().Namespaces().Create(t.Context(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{
		Name: ns,
		Labels: map[string]string{
			"pod-security.kubernetes.io/enforce":         "restricted",
			"pod-security.kubernetes.io/enforce-version": "latest",
		},
	}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := wait.PollUntilContextTimeout(t.Context(), 100*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		_, err := c.Client.CoreV1().ServiceAccounts(ns).Get(ctx, "default", metav1.GetOptions{})
		return err == nil, nil
	}); err != nil {
		t.Fatalf("default ServiceAccount of %s: %v", ns, err)
	}
}

// sandboxServiceRole creates the Role and RoleBinding overlays/prod gives
// the sandbox service and returns a configuration that acts as its account.
func sandboxServiceRole(t *testing.T, c *cluster.Cluster) *rest.Config {
	t.Helper()
	ctx := t.Context()
	var asService *rest.Config
	for _, o := range renderOverlay(t, "prod") {
		if o.GetNamespace() != sandboxNS || o.GetName() != "wick-sandbox" {
			continue
		}
		switch o.GetKind() {
		case "Role":
			var r rbacv1.Role
			fromUnstructured(t, o, &r)
			if _, err := c.Client.RbacV1().Roles(sandboxNS).Create(ctx, &r, metav1.CreateOptions{}); err != nil {
				t.Fatal(err)
			}
		case "RoleBinding":
			var rb rbacv1.RoleBinding
			fromUnstructured(t, o, &rb)
			if _, err := c.Client.RbacV1().RoleBindings(sandboxNS).Create(ctx, &rb, metav1.CreateOptions{}); err != nil {
				t.Fatal(err)
			}
			asService = rest.CopyConfig(c.Config)
			asService.Impersonate = rest.ImpersonationConfig{UserName: "system:serviceaccount:" + rb.Subjects[0].Namespace + ":" + rb.Subjects[0].Name}
		}
	}
	if asService == nil {
		t.Fatal("overlays/prod binds no Role wick-sandbox in " + sandboxNS)
	}
	return asService
}

// sandboxCluster starts a cluster whose containerd has the sandbox pods'
// images: the daemon's (wick-daemon and wickfs built from this tree, FROM
// scratch) and runtimeImage from the Docker engine.
func sandboxCluster(t *testing.T, runtimeImage string) *cluster.Cluster {
	t.Helper()
	if err := exec.Command("docker", "image", "inspect", runtimeImage).Run(); err != nil {
		cluster.Unavailable(t, "the runtime image %s is not on the Docker engine (make images)", runtimeImage)
	}
	c := cluster.Start(t)
	daemonBin, wickfsBin, err := sandboximage.Binaries(t.Context(), testenv.RepoRoot(t), t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	var files []cluster.File
	for _, b := range []struct{ src, name string }{{daemonBin, "wick-daemon"}, {wickfsBin, "wickfs"}} {
		data, err := os.ReadFile(b.src)
		if err != nil {
			t.Fatal(err)
		}
		files = append(files, cluster.File{Path: "/usr/local/bin/" + b.name, Mode: 0o755, Data: data})
	}
	if err := c.ImportImage(cluster.Image{Name: daemonImage, Files: files, Entrypoint: []string{"/usr/local/bin/wick-daemon"}}); err != nil {
		t.Fatal(err)
	}
	begin := time.Now()
	if err := c.ImportDockerImage(runtimeImage); err != nil {
		t.Fatal(err)
	}
	t.Logf("imported %s in %s", runtimeImage, time.Since(begin).Round(time.Millisecond))
	return c
}

// workspaceVolumes makes n volumes a provisioner would make: host
// directories owned by the sandboxes' user, bound to claims of the test's
// storage class.
func workspaceVolumes(t *testing.T, c *cluster.Cluster, n int) {
	t.Helper()
	for i := range n {
		dir := filepath.Join(c.Dir, fmt.Sprintf("pv-%d", i))
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.Chown(dir, 1000, 1000); err != nil {
			t.Fatal(err)
		}
		if _, err := c.Client.CoreV1().PersistentVolumes().Create(t.Context(), &corev1.PersistentVolume{
			ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("wick-test-pv-%d", i)},
			Spec: corev1.PersistentVolumeSpec{
				StorageClassName:              storageClass,
				Capacity:                      corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("10Gi")},
				AccessModes:                   []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
				PersistentVolumeReclaimPolicy: corev1.PersistentVolumeReclaimRetain,
				PersistentVolumeSource:        corev1.PersistentVolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: dir}},
			},
		}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
}
