//go:build k8scluster

package cluster_test

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	k8sruntime "k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/httpstream"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/tools/portforward"
	"k8s.io/client-go/tools/remotecommand"
	"k8s.io/client-go/transport/spdy"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/kustomize/api/krusty"
	"sigs.k8s.io/kustomize/kyaml/filesys"

	"github.com/wick-agent/wick/deploy/k8s/internal/cluster"
	"github.com/wick-agent/wick/platform/testenv"
)

// TestSingleNodeCluster runs a pod on a real single-node cluster (make
// test-k8s): the node registers with an address of the network namespace the
// test made and gets Ready with a bridge network; a pod that passes Pod
// Security "restricted" runs its image, imported into containerd, passes its
// HTTP readiness probe (the kubelet reaches it over the pod network), and a
// command runs in it through the API server's exec stream (API server →
// kubelet → containerd) with its output read back.
func TestSingleNodeCluster(t *testing.T) {
	busybox, err := exec.LookPath("busybox")
	if err != nil {
		cluster.Unavailable(t, "busybox not found (Debian: busybox-static)")
	}
	bb, err := os.ReadFile(busybox)
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	c := cluster.Start(t)
	t.Logf("cluster up, node %s Ready at %s, in %s", c.NodeName, c.NodeIP, time.Since(start).Round(time.Millisecond))
	ctx := t.Context()

	node, err := c.Client.CoreV1().Nodes().Get(ctx, c.NodeName, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var internal string
	for _, a := range node.Status.Addresses {
		if a.Type == corev1.NodeInternalIP {
			internal = a.Address
		}
	}
	if ip := net.ParseIP(internal); ip == nil || ip.IsLoopback() || !ip.Equal(c.NodeIP) {
		t.Fatalf("node InternalIP %q, want the node's namespace address %s", internal, c.NodeIP)
	}

	const image = "wick.local/httpd:test"
	const page = "served from a pod of the wick test cluster\n"
	if err := c.ImportImage(cluster.Image{
		Name: image,
		Files: []cluster.File{
			{Path: "/bin/busybox", Mode: 0o755, Data: bb},
			{Path: "/www/index.html", Mode: 0o644, Data: []byte(page)},
		},
		Entrypoint: []string{"/bin/busybox", "httpd", "-f", "-p", "8080", "-h", "/www"},
	}); err != nil {
		t.Fatal(err)
	}

	const ns = "wick-restricted"
	restrictedNamespace(t, c, ns)

	// A pod that adds a capability is refused by Pod Security: the
	// namespace enforces "restricted".
	bad := httpdPod(image)
	bad.Name = "net-admin"
	bad.Spec.Containers[0].SecurityContext.Capabilities.Add = []corev1.Capability{"NET_ADMIN"}
	if _, err := c.Client.CoreV1().Pods(ns).Create(ctx, bad, metav1.CreateOptions{}); err == nil || !strings.Contains(err.Error(), "violates PodSecurity") {
		t.Fatalf("a pod adding NET_ADMIN in %s: %v, want refused by PodSecurity", ns, err)
	}

	podStart := time.Now()
	pod, err := c.Client.CoreV1().Pods(ns).Create(ctx, httpdPod(image), metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("restricted pod: %v", err)
	}
	var last *corev1.Pod
	if err := wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, 3*time.Minute, true, func(ctx context.Context) (bool, error) {
		p, err := c.Client.CoreV1().Pods(ns).Get(ctx, pod.Name, metav1.GetOptions{})
		if err != nil {
			return false, nil
		}
		last = p
		for _, cond := range p.Status.Conditions {
			if cond.Type == corev1.PodReady && cond.Status == corev1.ConditionTrue {
				return p.Status.Phase == corev1.PodRunning, nil
			}
		}
		return false, nil
	}); err != nil {
		t.Fatalf("pod %s/%s Running and Ready: %v; last status: %+v", ns, pod.Name, err, last.Status)
	}

	t.Logf("pod %s/%s Running and Ready at %s in %s", ns, pod.Name, last.Status.PodIP, time.Since(podStart).Round(time.Millisecond))

	// The pod's address is on the node's bridge, which exists only in the
	// node's network namespace.
	_, podNet, err := net.ParseCIDR(node.Spec.PodCIDR)
	if err != nil {
		t.Fatal(err)
	}
	if !podNet.Contains(net.ParseIP(last.Status.PodIP)) {
		t.Errorf("pod IP %s not in the node's pod CIDR %s", last.Status.PodIP, podNet)
	}
	if _, err := net.InterfaceByName("cni0"); err == nil {
		t.Errorf("the pod bridge cni0 exists on the host; it belongs in the node's network namespace %s", c.Name)
	}
	if out, err := exec.Command("ip", "-n", c.Name, "-4", "-o", "addr", "show", "cni0").CombinedOutput(); err != nil || !strings.Contains(string(out), "inet ") {
		t.Errorf("no bridge cni0 with an address in %s: %v %s", c.Name, err, out)
	}

	if got := execIn(t, c, ns, pod.Name, "/bin/busybox", "id"); got != "uid=65532 gid=65532 groups=65532" {
		t.Errorf("id in the pod: %q, want uid=65532 gid=65532 groups=65532", got)
	}
	if got := execIn(t, c, ns, pod.Name, "/bin/busybox", "wget", "-qO-", "http://127.0.0.1:8080/"); got+"\n" != page {
		t.Errorf("the pod's own server answered %q, want %q", got, page)
	}
}

// httpdPod is busybox's httpd under everything Pod Security "restricted"
// asks for, with an HTTP readiness probe.
func httpdPod(image string) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "httpd"},
		Spec: corev1.PodSpec{
			AutomountServiceAccountToken:  ptr.To(false),
			TerminationGracePeriodSeconds: ptr.To(int64(1)),
			SecurityContext: &corev1.PodSecurityContext{
				RunAsNonRoot:   ptr.To(true),
				RunAsUser:      ptr.To(int64(65532)),
				RunAsGroup:     ptr.To(int64(65532)),
				SeccompProfile: &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault},
			},
			Containers: []corev1.Container{{
				Name:            "httpd",
				Image:           image,
				ImagePullPolicy: corev1.PullNever,
				Ports:           []corev1.ContainerPort{{ContainerPort: 8080, Name: "http"}},
				SecurityContext: &corev1.SecurityContext{
					AllowPrivilegeEscalation: ptr.To(false),
					ReadOnlyRootFilesystem:   ptr.To(true),
					Capabilities:             &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}},
				},
				ReadinessProbe: &corev1.Probe{
					ProbeHandler:  corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{Path: "/", Port: intstr.FromString("http")}},
					PeriodSeconds: 1,
				},
			}},
		},
	}
}

// execIn runs a command in the pod's container through the API server, as
// kubectl exec does (WebSocket, falling back to SPDY), and returns its
// standard output without the trailing newline.
func execIn(t *testing.T, c *cluster.Cluster, ns, pod string, cmd ...string) string {
	t.Helper()
	req := c.Client.CoreV1().RESTClient().Post().Namespace(ns).Resource("pods").Name(pod).SubResource("exec").
		VersionedParams(&corev1.PodExecOptions{Command: cmd, Stdout: true, Stderr: true}, scheme.ParameterCodec)
	ws, err := remotecommand.NewWebSocketExecutor(c.Config, "GET", req.URL().String())
	if err != nil {
		t.Fatal(err)
	}
	spdy, err := remotecommand.NewSPDYExecutor(c.Config, "POST", req.URL())
	if err != nil {
		t.Fatal(err)
	}
	ex, err := remotecommand.NewFallbackExecutor(ws, spdy, func(err error) bool {
		return httpstream.IsUpgradeFailure(err) || httpstream.IsHTTPSProxyError(err)
	})
	if err != nil {
		t.Fatal(err)
	}
	var stdout, stderr bytes.Buffer
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	if err := ex.StreamWithContext(ctx, remotecommand.StreamOptions{Stdout: &stdout, Stderr: &stderr}); err != nil {
		t.Fatalf("exec %v in %s/%s: %v (stderr: %s)", cmd, ns, pod, err, stderr.String())
	}
	return strings.TrimSuffix(stdout.String(), "\n")
}

// TestGatewayOfOverlaysDev runs the gateway Deployment of overlays/dev, as
// kustomize renders it, with the wick-gateway image `make images` built:
// the Deployment and ReplicaSet controllers make its pod, Pod Security
// "restricted" admits it, the kubelet mounts its tokens Secret and passes
// its gRPC readiness probe, and its /health answers through a port-forward
// of the API server (API server → kubelet → containerd → the pod's network
// namespace: no route to the pod exists outside the node's namespace).
func TestGatewayOfOverlaysDev(t *testing.T) {
	const image = "wick-gateway:latest"
	if out, err := exec.Command("docker", "image", "inspect", "--format", "{{.Id}}", image).CombinedOutput(); err != nil {
		cluster.Unavailable(t, "no %s on the Docker engine (make images builds it): %v %s", image, err, strings.TrimSpace(string(out)))
	}
	c := cluster.Start(t)
	ctx := t.Context()
	if err := c.ImportDockerImage(image); err != nil {
		t.Fatal(err)
	}

	objs := renderDev(t)
	ns := "wick"
	restrictedNamespace(t, c, ns)
	// The Secrets the operator creates (docs/deploy.md#install).
	token := "wick-k8s-test-token"
	for name, data := range map[string]map[string]string{
		"wick-identity": {"WICK_IDENTITY_KEY": strings.Repeat("ab", 32)},
		"wick-tokens":   {"tokens": token + " alice\n"},
		"wick-llm-http": {"token": strings.Repeat("cd", 32)},
	} {
		if _, err := c.Client.CoreV1().Secrets(ns).Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: name}, StringData: data}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	var dep *appsv1.Deployment
	for _, o := range objs {
		switch {
		case o.GetKind() == "ConfigMap" && o.GetName() == "wick-telemetry":
			var cm corev1.ConfigMap
			fromUnstructured(t, o, &cm)
			if _, err := c.Client.CoreV1().ConfigMaps(ns).Create(ctx, &cm, metav1.CreateOptions{}); err != nil {
				t.Fatal(err)
			}
		case o.GetKind() == "Deployment" && o.GetName() == "gateway":
			dep = &appsv1.Deployment{}
			fromUnstructured(t, o, dep)
		}
	}
	if dep == nil {
		t.Fatal("overlays/dev has no Deployment gateway")
	}
	start := time.Now()
	if _, err := c.Client.AppsV1().Deployments(ns).Create(ctx, dep, metav1.CreateOptions{}); err != nil {
		t.Fatalf("Deployment gateway: %v", err)
	}
	var pod corev1.Pod
	var last string
	if err := wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, 3*time.Minute, true, func(ctx context.Context) (bool, error) {
		pods, err := c.Client.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: metav1.FormatLabelSelector(dep.Spec.Selector)})
		if err != nil || len(pods.Items) == 0 {
			last = fmt.Sprint(err)
			return false, nil
		}
		pod = pods.Items[0]
		last = fmt.Sprintf("%+v", pod.Status)
		for _, cond := range pod.Status.Conditions {
			if cond.Type == corev1.PodReady && cond.Status == corev1.ConditionTrue {
				return true, nil
			}
		}
		return false, nil
	}); err != nil {
		ev, _ := c.Client.CoreV1().Events(ns).List(ctx, metav1.ListOptions{})
		var msgs []string
		if ev != nil {
			for _, e := range ev.Items {
				msgs = append(msgs, e.InvolvedObject.Name+": "+e.Reason+": "+e.Message)
			}
		}
		t.Fatalf("gateway pod Ready: %v; last status: %s; events:\n%s", err, last, strings.Join(msgs, "\n"))
	}
	t.Logf("gateway pod %s Ready in %s", pod.Name, time.Since(start).Round(time.Millisecond))

	port := portForward(t, c, ns, pod.Name, 8000)
	resp, err := http.Get(fmt.Sprintf("http://127.0.0.1:%d/health", port))
	if err != nil {
		t.Fatalf("GET /health through the port-forward: %v", err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	t.Logf("GET /health: %s %s", resp.Status, strings.TrimSpace(string(body)))
	// Only the gateway runs here: it serves, and says that the agent and
	// llmgw it would call are not there.
	if !strings.Contains(string(body), `"gateway":"SERVING"`) {
		t.Errorf("GET /health through the port-forward: %s %s, want the gateway SERVING", resp.Status, body)
	}
}

// renderDev builds overlays/dev with kustomize.
func renderDev(t *testing.T) []*unstructured.Unstructured {
	t.Helper()
	return renderOverlay(t, "dev")
}

// renderOverlay renders deploy/k8s/overlays/<name> with kustomize's Go API.
func renderOverlay(t *testing.T, name string) []*unstructured.Unstructured {
	t.Helper()
	return renderKustomization(t, filepath.Join(testenv.RepoRoot(t), "deploy", "k8s", "overlays", name))
}

// renderKustomization renders the kustomization in dir.
func renderKustomization(t *testing.T, dir string) []*unstructured.Unstructured {
	t.Helper()
	m, err := krusty.MakeKustomizer(krusty.MakeDefaultOptions()).Run(filesys.MakeFsOnDisk(), dir)
	if err != nil {
		t.Fatal(err)
	}
	var out []*unstructured.Unstructured
	for _, res := range m.Resources() {
		b, err := res.MarshalJSON()
		if err != nil {
			t.Fatal(err)
		}
		o := &unstructured.Unstructured{}
		if err := o.UnmarshalJSON(b); err != nil {
			t.Fatal(err)
		}
		out = append(out, o)
	}
	return out
}

func fromUnstructured(t *testing.T, o *unstructured.Unstructured, into any) {
	t.Helper()
	if err := k8sruntime.DefaultUnstructuredConverter.FromUnstructured(o.Object, into); err != nil {
		t.Fatalf("%s %s: %v", o.GetKind(), o.GetName(), err)
	}
}

// portForward forwards a free loopback port to the pod's port through the
// API server, as kubectl port-forward does, until the test ends.
func portForward(t *testing.T, c *cluster.Cluster, ns, pod string, podPort int) int {
	t.Helper()
	req := c.Client.CoreV1().RESTClient().Post().Namespace(ns).Resource("pods").Name(pod).SubResource("portforward")
	transport, upgrader, err := spdy.RoundTripperFor(c.Config)
	if err != nil {
		t.Fatal(err)
	}
	dialer := spdy.NewDialer(upgrader, &http.Client{Transport: transport}, "POST", req.URL())
	stop, readyCh := make(chan struct{}), make(chan struct{})
	fw, err := portforward.NewOnAddresses(dialer, []string{"127.0.0.1"}, []string{fmt.Sprintf("0:%d", podPort)}, stop, readyCh, io.Discard, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	errc := make(chan error, 1)
	go func() { errc <- fw.ForwardPorts() }()
	t.Cleanup(func() { close(stop); <-errc })
	select {
	case <-readyCh:
	case err := <-errc:
		t.Fatalf("port-forward to %s/%s:%d: %v", ns, pod, podPort, err)
	}
	ports, err := fw.GetPorts()
	if err != nil {
		t.Fatal(err)
	}
	return int(ports[0].Local)
}
