//go:build k8scluster

package cluster_test

import (
	"context"
	"fmt"
	"net"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/wick-agent/wick/deploy/k8s/internal/cluster"
	sandboxv1 "github.com/wick-agent/wick/gen/wick/sandbox/v1"
	"github.com/wick-agent/wick/platform/backend"
	"github.com/wick-agent/wick/services/sandbox"
)

// probeNS holds the policy test's target and its control probes: no
// NetworkPolicy selects its pods.
const probeNS = "wick-netpol-probe"

// targetPort is the target pod's HTTP port.
const targetPort = 8080

// probeTimeout bounds each connection and DNS attempt of a probe: a dropped
// packet is never answered, so "blocked" is the absence of an answer.
const probeTimeout = "3"

// policyBound bounds the wait for kube-router to program a new pod's
// policy: it acts on the pod's update that carries its address.
const policyBound = time.Minute

// TestSandboxNetworkPolicy proves that the NetworkPolicies the sandbox
// service's Kubernetes engine gives its pods bind, with kube-router enforcing
// them as a real cluster's policy provider would: a target pod that a pod
// without a policy reaches (the control, before and after); a network-"none"
// sandbox reaches neither it nor the cluster's DNS; a network-"bridge"
// sandbox is refused the target, whose address is private, and gets its
// names from the cluster's DNS.
func TestSandboxNetworkPolicy(t *testing.T) {
	runtimeImage := backend.DefaultImage
	c := sandboxCluster(t, runtimeImage)
	ctx := t.Context()

	// The target, and the control: a pod without a policy reaches it.
	if _, err := c.Client.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: probeNS}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	target := targetPod(t, c, runtimeImage)
	targetAddr := net.JoinHostPort(target, fmt.Sprint(targetPort))
	if out, ok := controlProbe(t, c, runtimeImage, "control-before", targetAddr); !ok {
		t.Fatalf("the control: a pod without a policy cannot reach the target %s: %s", targetAddr, out)
	}

	restrictedNamespace(t, c, sandboxNS)
	asService := sandboxServiceRole(t, c)
	workspaceVolumes(t, c, 2)
	cli, _ := startSandboxService(t, asService, sandbox.Config{StateDir: t.TempDir(), AllowBridge: true})

	cases := []struct {
		agent, network string
		// dns is whether the cluster's DNS answers from inside.
		dns bool
	}{
		{agent: "isolated", network: "none", dns: false},
		{agent: "online", network: "bridge", dns: true},
	}
	for _, tc := range cases {
		t.Run(tc.network, func(t *testing.T) {
			if _, err := cli.EnsureSandbox(ctx, &sandboxv1.EnsureSandboxRequest{AgentId: tc.agent, Spec: &sandboxv1.SandboxSpec{Network: tc.network}}); err != nil {
				t.Fatalf("EnsureSandbox with network %s: %v", tc.network, err)
			}
			// Both networks refuse the target's private address; the wait
			// ends when kube-router has programmed the pod's policy.
			var last string
			begin := time.Now()
			if err := wait.PollUntilContextTimeout(ctx, 500*time.Millisecond, policyBound, true, func(context.Context) (bool, error) {
				last = runAs(t, cli, tc.agent, connectScript(targetAddr))
				return strings.HasPrefix(last, "blocked"), nil
			}); err != nil {
				t.Fatalf("a network-%s sandbox still reaches the target %s after %s (last: %q): its NetworkPolicy does not bind\n%s",
					tc.network, targetAddr, policyBound, last, c.NetnsRules())
			}
			t.Logf("the target refused to the network-%s sandbox %s after it was running: %q", tc.network, time.Since(begin).Round(time.Millisecond), last)
			out := runAs(t, cli, tc.agent, dnsScript)
			t.Logf("the cluster's DNS from the network-%s sandbox: %q", tc.network, out)
			if answered := strings.HasPrefix(out, "answer "+kubernetesServiceIP); answered != tc.dns {
				t.Errorf("the cluster's DNS from a network-%s sandbox: %q, want answered %v", tc.network, out, tc.dns)
			}
			if _, err := cli.DeleteSandbox(ctx, &sandboxv1.DeleteSandboxRequest{AgentId: tc.agent}); err != nil {
				t.Errorf("DeleteSandbox: %v", err)
			}
		})
	}

	// The target still answers: what the sandboxes saw was their policy.
	if out, ok := controlProbe(t, c, runtimeImage, "control-after", targetAddr); !ok {
		t.Errorf("the control after the sandboxes: a pod without a policy cannot reach the target %s: %s", targetAddr, out)
	}
}

// kubernetesServiceIP is the address the cluster's DNS gives
// kubernetes.default.svc.cluster.local: the first of the Service range.
const kubernetesServiceIP = "10.96.0.1"

// connectScript connects to addr over TCP and prints "connected" or
// "blocked" with the error; it exits 0 either way.
func connectScript(addr string) string {
	host, port, _ := net.SplitHostPort(addr)
	return `python3 -c 'import socket
s = socket.socket(); s.settimeout(` + probeTimeout + `)
try:
    s.connect(("` + host + `", ` + port + `)); print("connected")
except OSError as e:
    print("blocked", e)'`
}

// dnsScript asks the cluster's DNS Service, over UDP, for the A record of
// the Service kubernetes, and prints "answer" with the address or "blocked"
// with the error.
var dnsScript = `python3 -c 'import socket, struct
name = b"".join(bytes([len(p)]) + p.encode() for p in "kubernetes.default.svc.` + cluster.ClusterDomain + `".split("."))
q = struct.pack(">6H", 0x5A5A, 0x0100, 1, 0, 0, 0) + name + b"\0" + struct.pack(">2H", 1, 1)
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM); s.settimeout(` + probeTimeout + `)
try:
    s.sendto(q, ("` + cluster.ClusterDNS + `", 53)); r = s.recv(512)
    print("answer" if struct.unpack(">H", r[6:8])[0] else "empty", socket.inet_ntoa(r[-4:]))
except OSError as e:
    print("blocked", e)'`

// targetPod runs an HTTP server in probeNS and returns its address once the
// kubelet's readiness probe reaches it.
func targetPod(t *testing.T, c *cluster.Cluster, image string) string {
	t.Helper()
	ctx := t.Context()
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "target", Labels: map[string]string{"app": "target"}},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{
			Name: "http", Image: image, ImagePullPolicy: corev1.PullNever,
			Command:        []string{"python3", "-m", "http.server", fmt.Sprint(targetPort)},
			ReadinessProbe: &corev1.Probe{PeriodSeconds: 1, ProbeHandler: corev1.ProbeHandler{TCPSocket: &corev1.TCPSocketAction{Port: intstr.FromInt32(targetPort)}}},
		}}},
	}
	if _, err := c.Client.CoreV1().Pods(probeNS).Create(ctx, pod, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	var addr string
	if err := wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, 2*time.Minute, true, func(ctx context.Context) (bool, error) {
		p, err := c.Client.CoreV1().Pods(probeNS).Get(ctx, pod.Name, metav1.GetOptions{})
		if err != nil {
			return false, nil
		}
		for _, cond := range p.Status.Conditions {
			if cond.Type == corev1.PodReady && cond.Status == corev1.ConditionTrue {
				addr = p.Status.PodIP
				return addr != "", nil
			}
		}
		return false, nil
	}); err != nil {
		t.Fatalf("the target pod is not ready: %v", err)
	}
	return addr
}

// controlProbe runs connectScript in a pod of probeNS, which no policy
// selects, and reports whether it connected, with its output.
func controlProbe(t *testing.T, c *cluster.Cluster, image, name, addr string) (string, bool) {
	t.Helper()
	ctx := t.Context()
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: corev1.PodSpec{RestartPolicy: corev1.RestartPolicyNever, Containers: []corev1.Container{{
			Name: "probe", Image: image, ImagePullPolicy: corev1.PullNever,
			Command: []string{"sh", "-c", connectScript(addr)},
		}}},
	}
	if _, err := c.Client.CoreV1().Pods(probeNS).Create(ctx, pod, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, 2*time.Minute, true, func(ctx context.Context) (bool, error) {
		p, err := c.Client.CoreV1().Pods(probeNS).Get(ctx, name, metav1.GetOptions{})
		return err == nil && (p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed), nil
	}); err != nil {
		t.Fatalf("control probe %s did not end: %v", name, err)
	}
	b, err := c.Client.CoreV1().Pods(probeNS).GetLogs(name, &corev1.PodLogOptions{}).DoRaw(ctx)
	if err != nil {
		t.Fatalf("logs of %s: %v", name, err)
	}
	return string(b), strings.HasPrefix(string(b), "connected")
}
