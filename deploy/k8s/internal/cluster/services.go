package cluster

import (
	"fmt"
	"net"
	"os"
	"path/filepath"
	"testing"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
)

// startKubeProxy runs kube-proxy in iptables mode in the node's network
// namespace: every chain and rule it makes lives there and goes with it.
//
// masqueradeAll: the pods share one bridge, and without br_netfilter (a
// host-wide setting) a reply from a Service's pod to a pod on the same bridge
// would skip the reverse translation; masqueraded, every Service connection
// is routed through the node. It also gives the connections to the API
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

// startDNS runs CoreDNS in the node's network namespace on the node's
// address, serving the cluster's names from the API server, and makes it
// the one endpoint of the Service kube-system/kube-dns at ClusterDNS (which
// holds that address in the Service range). No upstream: names outside the
// cluster do not resolve, as pods here have no network beyond the node.
func (c *Cluster) startDNS(t *testing.T, p *pki, bin string) {
	t.Helper()
	ctx := t.Context()
	const user = "wick:coredns"
	role := &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: user}, Rules: []rbacv1.PolicyRule{
		{APIGroups: []string{""}, Resources: []string{"endpoints", "services", "pods", "namespaces"}, Verbs: []string{"list", "watch"}},
		{APIGroups: []string{"discovery.k8s.io"}, Resources: []string{"endpointslices"}, Verbs: []string{"list", "watch"}},
	}}
	if _, err := c.Client.RbacV1().ClusterRoles().Create(ctx, role, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Client.RbacV1().ClusterRoleBindings().Create(ctx, &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: user},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: user},
		Subjects:   []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: rbacv1.UserKind, Name: user}},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	cert, key, err := p.issue("coredns", user, nil)
	if err != nil {
		t.Fatal(err)
	}
	kubeconfig, err := c.writeKubeconfig("coredns", c.Config.Host, p.caFile(), cert, key)
	if err != nil {
		t.Fatal(err)
	}
	node := c.NodeIP.String()
	corefile := filepath.Join(c.Dir, "Corefile")
	if err := os.WriteFile(corefile, []byte(fmt.Sprintf(`.:53 {
    bind %[1]s
    errors
    health %[1]s:8080
    ready %[1]s:8181
    kubernetes %[2]s in-addr.arpa ip6.arpa {
        kubeconfig %[3]s
        pods insecure
        fallthrough in-addr.arpa ip6.arpa
    }
    cache 5
}
`, node, ClusterDomain, kubeconfig)), 0o600); err != nil {
		t.Fatal(err)
	}
	nsBin, args := c.inNetns(bin, "-conf", corefile)
	// /ready answers 200 once the kubernetes plugin has synced its caches.
	c.proc(t, "coredns", nsBin, args, httpOK("http://"+net.JoinHostPort(node, "8181")+"/ready", nil))

	ports := []corev1.ServicePort{{Name: "dns", Port: 53, Protocol: corev1.ProtocolUDP}, {Name: "dns-tcp", Port: 53, Protocol: corev1.ProtocolTCP}}
	if _, err := c.Client.CoreV1().Services("kube-system").Create(ctx, &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: "kube-dns"},
		Spec:       corev1.ServiceSpec{ClusterIP: ClusterDNS, Ports: ports},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	var epPorts []discoveryv1.EndpointPort
	for _, sp := range ports {
		epPorts = append(epPorts, discoveryv1.EndpointPort{Name: ptr.To(sp.Name), Port: ptr.To(sp.Port), Protocol: ptr.To(sp.Protocol)})
	}
	// A Service without a selector: its endpoints are given, as for any
	// backend outside the pods.
	if _, err := c.Client.DiscoveryV1().EndpointSlices("kube-system").Create(ctx, &discoveryv1.EndpointSlice{
		ObjectMeta: metav1.ObjectMeta{Name: "kube-dns-coredns", Labels: map[string]string{
			discoveryv1.LabelServiceName: "kube-dns", discoveryv1.LabelManagedBy: "wick-test-cluster"}},
		AddressType: discoveryv1.AddressTypeIPv4,
		Endpoints:   []discoveryv1.Endpoint{{Addresses: []string{node}, Conditions: discoveryv1.EndpointConditions{Ready: ptr.To(true)}}},
		Ports:       epPorts,
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
}
