package cluster

import (
	"fmt"
	"net"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// kubeRouterHealthPort is where kube-router answers /healthz on the node's
// address.
const kubeRouterHealthPort = "20244"

// startNetworkPolicy runs kube-router in the node's network namespace with
// only its firewall: it enforces the cluster's NetworkPolicies with iptables
// rules and ipsets there, which go with the namespace, while routing stays
// the bridge's and Services kube-proxy's. Bridged traffic between the pods
// passes those rules through br_netfilter, switched on for the namespace.
func (c *Cluster) startNetworkPolicy(t *testing.T, p *pki, bin string) {
	t.Helper()
	ctx := t.Context()
	// The firewall reads these to know which pods a policy selects; it
	// changes nothing in the API.
	const user = "wick:kube-router"
	role := &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: user}, Rules: []rbacv1.PolicyRule{
		{APIGroups: []string{""}, Resources: []string{"pods", "namespaces", "nodes", "services", "endpoints"}, Verbs: []string{"get", "list", "watch"}},
		{APIGroups: []string{"discovery.k8s.io"}, Resources: []string{"endpointslices"}, Verbs: []string{"get", "list", "watch"}},
		{APIGroups: []string{"networking.k8s.io"}, Resources: []string{"networkpolicies"}, Verbs: []string{"get", "list", "watch"}},
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
	cert, key, err := p.issue("kube-router", user, nil)
	if err != nil {
		t.Fatal(err)
	}
	kubeconfig, err := c.writeKubeconfig("kube-router", c.Config.Host, p.caFile(), cert, key)
	if err != nil {
		t.Fatal(err)
	}
	nsBin, args := c.inNetns("sysctl", "-w", strings.ReplaceAll(bridgeNFCall, "/", ".")+"=1")
	if out, err := exec.Command(nsBin, args...).CombinedOutput(); err != nil {
		t.Fatalf("br_netfilter in the node's network namespace: %v: %s", err, out)
	}
	nsBin, args = c.inNetns(bin,
		"--kubeconfig="+kubeconfig,
		"--run-firewall=true",
		"--run-router=false",
		"--run-service-proxy=false",
		"--hostname-override="+c.NodeName,
		"--service-cluster-ip-range="+serviceCIDR,
		"--health-port="+kubeRouterHealthPort,
		"--metrics-port=0",
	)
	c.proc(t, "kube-router", nsBin, args, httpOK(fmt.Sprintf("http://%s/healthz", net.JoinHostPort(c.NodeIP.String(), kubeRouterHealthPort)), nil))
}

// NetnsRules lists the iptables rules in the node's network namespace, for
// a test's failure message.
func (c *Cluster) NetnsRules() string {
	bin, args := c.inNetns("iptables-save")
	out, err := exec.Command(bin, args...).CombinedOutput()
	if err != nil {
		return fmt.Sprintf("iptables-save in %s: %v: %s", filepath.Join(netnsDir, c.Name), err, out)
	}
	return string(out)
}
