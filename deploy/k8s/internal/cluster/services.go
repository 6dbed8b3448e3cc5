package cluster

import (
	"context"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/wait"
)

// startKubeProxy runs kube-proxy in iptables mode in the node's network
// namespace: every chain and rule it makes lives there and goes with it.
//
// masqueradeAll: the pods share one bridge; masqueraded, every Service
// connection between them is routed through the node, so its reply never
// skips the reverse translation. It also gives the connections to the API
// server (the Service kubernetes) the node's address, which the host reaches
// over the veth, where a pod address has no route back. maxPerCore 0, the
// zero timeouts and oomScoreAdj 0 leave the host's conntrack table and the
// process's OOM score as they are: they are not the network namespace's.
func (c *Cluster) startKubeProxy(t *testing.T, p *pki, bin string) {
	t.Helper()
	cert, key, err := p.issue("kube-proxy", "system:kube-proxy", nil)
	if err != nil {
		t.Fatal(err)
	}
	kubeconfig, err := c.writeKubeconfig("kube-proxy", c.Config.Host, p.caFile(), cert, key)
	if err != nil {
		t.Fatal(err)
	}
	healthz := net.JoinHostPort(c.NodeIP.String(), "10256")
	config := filepath.Join(c.Dir, "kube-proxy.yaml")
	if err := os.WriteFile(config, []byte(fmt.Sprintf(`apiVersion: kubeproxy.config.k8s.io/v1alpha1
kind: KubeProxyConfiguration
clientConnection: {kubeconfig: %q}
hostnameOverride: %q
bindAddress: %q
healthzBindAddress: %q
metricsBindAddress: 127.0.0.1:10249
mode: iptables
clusterCIDR: %q
nodePortAddresses: [%q]
oomScoreAdj: 0
iptables: {masqueradeAll: true, localhostNodePorts: false}
conntrack: {maxPerCore: 0, min: 0, tcpEstablishedTimeout: 0s, tcpCloseWaitTimeout: 0s}
`, kubeconfig, c.NodeName, c.NodeIP.String(), healthz, clusterCIDR, c.NodeIP.String()+"/32")), 0o600); err != nil {
		t.Fatal(err)
	}
	nsBin, args := c.inNetns(bin, "--config="+config)
	c.proc(t, "kube-proxy", nsBin, args, httpOK("http://"+healthz+"/healthz", nil))
}

// dnsImage is CoreDNS's image: the binary tools/coredns builds, with the
// host's libraries it links.
const dnsImage = "wick.local/coredns:test"

// startDNS runs CoreDNS as a real cluster does: a pod in kube-system
// labelled k8s-app=kube-dns (what NetworkPolicies name to allow DNS, the
// sandboxes' among them), behind the Service kube-system/kube-dns at
// ClusterDNS, reading the API server with its ServiceAccount's token. It
// returns once the Service's endpoint is the ready pod. No upstream: names
// outside the cluster do not resolve, as pods here have no network beyond
// the node.
func (c *Cluster) startDNS(t *testing.T, bin string) {
	t.Helper()
	ctx := t.Context()
	files, err := ProgramFiles("/usr/local/bin", bin)
	if err != nil {
		t.Fatal(err)
	}
	entry := "/usr/local/bin/" + filepath.Base(bin)
	if err := c.ImportImage(Image{Name: dnsImage, Files: files, Entrypoint: []string{entry}}); err != nil {
		t.Fatal(err)
	}
	const ns, name, label = "kube-system", "coredns", "kube-dns"
	role := &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: "wick:coredns"}, Rules: []rbacv1.PolicyRule{
		{APIGroups: []string{""}, Resources: []string{"endpoints", "services", "pods", "namespaces"}, Verbs: []string{"list", "watch"}},
		{APIGroups: []string{"discovery.k8s.io"}, Resources: []string{"endpointslices"}, Verbs: []string{"list", "watch"}},
	}}
	if _, err := c.Client.RbacV1().ClusterRoles().Create(ctx, role, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Client.RbacV1().ClusterRoleBindings().Create(ctx, &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: role.Name},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: role.Name},
		Subjects:   []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Namespace: ns, Name: name}},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Client.CoreV1().ServiceAccounts(ns).Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Client.CoreV1().ConfigMaps(ns).Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name},
		Data: map[string]string{"Corefile": fmt.Sprintf(`.:53 {
    errors
    health :8080
    ready :8181
    kubernetes %s in-addr.arpa ip6.arpa {
        pods insecure
        fallthrough in-addr.arpa ip6.arpa
    }
    cache 5
}
`, ClusterDomain)}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	labels := map[string]string{"k8s-app": label}
	if _, err := c.Client.CoreV1().Pods(ns).Create(ctx, &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels},
		Spec: corev1.PodSpec{
			ServiceAccountName: name,
			PriorityClassName:  "system-cluster-critical",
			Containers: []corev1.Container{{
				Name: name, Image: dnsImage, ImagePullPolicy: corev1.PullNever,
				Args:         []string{"-conf", "/etc/coredns/Corefile"},
				VolumeMounts: []corev1.VolumeMount{{Name: "config", MountPath: "/etc/coredns", ReadOnly: true}},
				// /ready answers 200 once the kubernetes plugin has synced
				// its caches.
				ReadinessProbe: &corev1.Probe{PeriodSeconds: 1, ProbeHandler: corev1.ProbeHandler{
					HTTPGet: &corev1.HTTPGetAction{Path: "/ready", Port: intstr.FromInt32(8181)}}},
			}},
			Volumes: []corev1.Volume{{Name: "config", VolumeSource: corev1.VolumeSource{
				ConfigMap: &corev1.ConfigMapVolumeSource{LocalObjectReference: corev1.LocalObjectReference{Name: name}}}}},
		},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Client.CoreV1().Services(ns).Create(ctx, &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: label},
		Spec: corev1.ServiceSpec{ClusterIP: ClusterDNS, Selector: labels, Ports: []corev1.ServicePort{
			{Name: "dns", Port: 53, Protocol: corev1.ProtocolUDP}, {Name: "dns-tcp", Port: 53, Protocol: corev1.ProtocolTCP}}},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	// The endpoint slice controller lists the pod once it is ready; then
	// kube-proxy routes ClusterDNS to it.
	if _, err := c.ServiceEndpointPod(ctx, ns, label, startTimeout); err != nil {
		p, _ := c.Client.CoreV1().Pods(ns).Get(ctx, name, metav1.GetOptions{})
		t.Fatalf("CoreDNS: %v (pod status %+v)", err, p.Status)
	}
}

// ServiceEndpointPod waits until an EndpointSlice of the Service ns/svc
// lists a ready endpoint that is a pod, and returns the pod's name.
func (c *Cluster) ServiceEndpointPod(ctx context.Context, ns, svc string, timeout time.Duration) (string, error) {
	var pod, last string
	err := wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, timeout, true, func(ctx context.Context) (bool, error) {
		l, err := c.Client.DiscoveryV1().EndpointSlices(ns).List(ctx, metav1.ListOptions{LabelSelector: discoveryv1.LabelServiceName + "=" + svc})
		if err != nil {
			last = err.Error()
			return false, nil
		}
		for _, sl := range l.Items {
			for _, e := range sl.Endpoints {
				if e.TargetRef != nil && e.TargetRef.Kind == "Pod" && e.Conditions.Ready != nil && *e.Conditions.Ready {
					pod = e.TargetRef.Name
					return true, nil
				}
			}
		}
		last = fmt.Sprintf("%d slices, no ready pod endpoint", len(l.Items))
		return false, nil
	})
	if err != nil {
		return "", fmt.Errorf("a ready endpoint of the Service %s/%s: %w (last: %s)", ns, svc, err, last)
	}
	return pod, nil
}
