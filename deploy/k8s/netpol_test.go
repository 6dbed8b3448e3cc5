package k8s

import (
	"net/netip"

	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
)

// endpoint is one end of a connection: a pod (namespace and labels, and its
// container ports for named ports) or an address outside the cluster.
type endpoint struct {
	Namespace string
	Labels    map[string]string
	Ports     []corev1.ContainerPort
	// IP is set for an address outside the cluster.
	IP netip.Addr
}

func (e endpoint) isPod() bool { return !e.IP.IsValid() }

// allowed says whether NetworkPolicies let from open a TCP or UDP connection
// to port on to, as the API defines them: a pod no policy of a direction
// selects is open in that direction; one that some policy selects takes only
// what one of their rules allows; egress of the source and ingress of the
// destination must both allow. Pods match ipBlocks never (the API leaves that
// to the plugin, so the manifests must not rely on it).
func allowed(policies []*networkingv1.NetworkPolicy, from, to endpoint, proto corev1.Protocol, port int32) bool {
	if from.isPod() && !direction(policies, from, networkingv1.PolicyTypeEgress, func(p *networkingv1.NetworkPolicy) bool {
		for _, rule := range p.Spec.Egress {
			if peersMatch(rule.To, p.Namespace, to) && portsMatch(rule.Ports, to, proto, port) {
				return true
			}
		}
		return false
	}) {
		return false
	}
	if to.isPod() && !direction(policies, to, networkingv1.PolicyTypeIngress, func(p *networkingv1.NetworkPolicy) bool {
		for _, rule := range p.Spec.Ingress {
			if peersMatch(rule.From, p.Namespace, from) && portsMatch(rule.Ports, to, proto, port) {
				return true
			}
		}
		return false
	}) {
		return false
	}
	return true
}

// direction applies the policies of one direction that select pod: open when
// none does, else what one of them allows.
func direction(policies []*networkingv1.NetworkPolicy, pod endpoint, dir networkingv1.PolicyType, allows func(*networkingv1.NetworkPolicy) bool) bool {
	selected := false
	for _, p := range policies {
		if p.Namespace != pod.Namespace || !hasType(p, dir) || !selects(&p.Spec.PodSelector, pod.Labels) {
			continue
		}
		selected = true
		if allows(p) {
			return true
		}
	}
	return !selected
}

// hasType reports whether p governs dir; without policyTypes, a policy
// governs ingress, and egress when it has egress rules.
func hasType(p *networkingv1.NetworkPolicy, dir networkingv1.PolicyType) bool {
	if len(p.Spec.PolicyTypes) == 0 {
		return dir == networkingv1.PolicyTypeIngress || len(p.Spec.Egress) > 0
	}
	for _, t := range p.Spec.PolicyTypes {
		if t == dir {
			return true
		}
	}
	return false
}

// peersMatch reports whether e is one of peers (no peers: everything).
func peersMatch(peers []networkingv1.NetworkPolicyPeer, policyNS string, e endpoint) bool {
	if len(peers) == 0 {
		return true
	}
	for _, p := range peers {
		switch {
		case p.IPBlock != nil:
			if !e.isPod() && inBlock(p.IPBlock, e.IP) {
				return true
			}
		case e.isPod():
			nsOK := e.Namespace == policyNS
			if p.NamespaceSelector != nil {
				nsOK = selects(p.NamespaceSelector, map[string]string{"kubernetes.io/metadata.name": e.Namespace})
			}
			if nsOK && (p.PodSelector == nil || selects(p.PodSelector, e.Labels)) {
				return true
			}
		}
	}
	return false
}

func inBlock(b *networkingv1.IPBlock, ip netip.Addr) bool {
	cidr, err := netip.ParsePrefix(b.CIDR)
	if err != nil || !cidr.Contains(ip) {
		return false
	}
	for _, ex := range b.Except {
		if p, err := netip.ParsePrefix(ex); err == nil && p.Contains(ip) {
			return false
		}
	}
	return true
}

// portsMatch reports whether one of ports is proto/port on the destination
// (no ports: every port); a named port is looked up in to's container ports.
func portsMatch(ports []networkingv1.NetworkPolicyPort, to endpoint, proto corev1.Protocol, port int32) bool {
	if len(ports) == 0 {
		return true
	}
	for _, p := range ports {
		pp := corev1.ProtocolTCP
		if p.Protocol != nil {
			pp = *p.Protocol
		}
		if pp != proto {
			continue
		}
		if p.Port == nil {
			return true
		}
		lo := p.Port.IntVal
		if p.Port.StrVal != "" {
			lo = -1
			for _, cp := range to.Ports {
				if cp.Name == p.Port.StrVal {
					lo = cp.ContainerPort
				}
			}
		}
		hi := lo
		if p.EndPort != nil {
			hi = *p.EndPort
		}
		if port >= lo && port <= hi {
			return true
		}
	}
	return false
}

// selects reports whether a label selector matches set; one that does not
// parse matches nothing.
func selects(sel *metav1.LabelSelector, set map[string]string) bool {
	s, err := metav1.LabelSelectorAsSelector(sel)
	return err == nil && s.Matches(labels.Set(set))
}
