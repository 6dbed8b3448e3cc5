//go:build k8scluster

package cluster_test

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/rest"

	"github.com/wick-agent/wick/deploy/k8s/internal/cluster"
	sandboxv1 "github.com/wick-agent/wick/gen/wick/sandbox/v1"
	"github.com/wick-agent/wick/platform/backend"
	"github.com/wick-agent/wick/platform/identity"
	"github.com/wick-agent/wick/platform/testenv"
	"github.com/wick-agent/wick/services/sandbox"
	"github.com/wick-agent/wick/services/sandbox/kubebox"
	"github.com/wick-agent/wick/services/sandbox/sandboximage"
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
	if err := exec.Command("docker", "image", "inspect", runtimeImage).Run(); err != nil {
		cluster.Unavailable(t, "the runtime image %s is not on the Docker engine (make images)", runtimeImage)
	}
	daemonBin, wickfsBin, err := sandboximage.Binaries(t.Context(), testenv.RepoRoot(t), t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	c := cluster.Start(t)
	ctx := t.Context()
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
	if err := c.ImportDockerImage(runtimeImage); err != nil {
		t.Fatal(err)
	}

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
	for i := range 2 {
		dir := filepath.Join(c.Dir, fmt.Sprintf("pv-%d", i))
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.Chown(dir, 1000, 1000); err != nil {
			t.Fatal(err)
		}
		if _, err := c.Client.CoreV1().PersistentVolumes().Create(ctx, &corev1.PersistentVolume{
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
	cli := serveBridgeSandboxes(t, asService)

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

// serveBridgeSandboxes serves a sandbox service with the Kubernetes engine
// that lets specs ask for network "bridge", every call as user alice.
func serveBridgeSandboxes(t *testing.T, rc *rest.Config) sandboxv1.SandboxServiceClient {
	t.Helper()
	kc, err := kubebox.New(rc, kubebox.Config{Namespace: sandboxNS, DaemonImage: daemonImage, StorageClass: storageClass,
		RunAs: kubebox.RunAs{UID: 1000, GID: 1000}})
	if err != nil {
		t.Fatal(err)
	}
	svc, err := sandbox.New(sandbox.Config{StateDir: t.TempDir(), ManagerID: sandboxManager, DefaultType: backend.Docker,
		DefaultImage: backend.DefaultImage, DaemonStartTimeout: 2 * time.Minute, AllowBridge: true}, sandbox.WithKubernetes(kc))
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
	t.Cleanup(func() {
		conn.Close()
		srv.Stop()
		cctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if err := svc.Close(cctx); err != nil {
			t.Errorf("close the sandbox service: %v", err)
		}
	})
	return sandboxv1.NewSandboxServiceClient(conn)
}
