package k8s

import (
	"maps"
	"net/netip"
	"slices"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// agentReplicas is how many agents prod runs at least.
const agentReplicas = 3

// engineNodeLabel marks the node pool the privileged sandbox engines run on.
const engineNodeLabel = "wick.dev/sandbox-engine"

// checkRollout: a Deployment starts a new pod before stopping an old one, so
// that an upgrade never lowers the capacity that open streams re-join.
func checkRollout(p *problems, r *rendered) {
	for _, d := range r.Deployments {
		ru := d.Spec.Strategy.RollingUpdate
		if d.Spec.Strategy.Type == appsv1.RecreateDeploymentStrategyType || ru == nil || ru.MaxUnavailable == nil || ru.MaxUnavailable.IntValue() != 0 {
			p.add("Deployment/"+d.Name, "rolling update must have maxUnavailable: 0")
		}
	}
}

// checkDev: the dev overlay's Redis is in the cluster.
func checkDev(p *problems, r *rendered) {
	if r.statefulSet("redis") == nil {
		p.add("dev", "no in-cluster Redis StatefulSet")
	}
	agent := r.deployment("agent")
	if agent == nil {
		p.add("dev", "no agent Deployment")
		return
	}
	if v, ok := envValue(agent.Spec.Template.Spec.Containers[0], "WICK_REDIS_ADDR", r); !ok || v == "" {
		p.add("dev", "the agent has no WICK_REDIS_ADDR: replicas would not share threads")
	}
	for _, w := range r.workloads() {
		if n := replicas(r, w); n != 1 {
			p.add("dev "+w.String(), "replicas %d, want 1", n)
		}
	}
}

// checkProd: scale, disruption budget, autoscaler, Redis by Secret, the
// engines on their node pool, and the network paths.
func checkProd(p *problems, r *rendered) {
	agent := r.deployment("agent")
	if agent == nil {
		p.add("prod", "no agent Deployment")
		return
	}
	if n := replicas(r, workload{Kind: "Deployment", Name: "agent"}); n != agentReplicas {
		p.add("prod Deployment/agent", "replicas %d, want %d", n, agentReplicas)
	}
	pdb := false
	for _, b := range r.PDBs {
		if !selects(b.Spec.Selector, agent.Spec.Template.Labels) {
			continue
		}
		pdb = true
		if mu := b.Spec.MaxUnavailable; mu == nil || mu.Type != intstr.Int || mu.IntValue() < 1 || mu.IntValue() >= agentReplicas {
			p.add("PodDisruptionBudget/"+b.Name, "maxUnavailable must be a number of pods from 1 to %d", agentReplicas-1)
		}
	}
	if !pdb {
		p.add("prod", "no PodDisruptionBudget selects the agent pods")
	}
	hpa := false
	for _, h := range r.HPAs {
		ref := h.Spec.ScaleTargetRef
		if ref.Kind != "Deployment" || ref.Name != "agent" {
			continue
		}
		hpa = true
		if h.Spec.MinReplicas == nil || *h.Spec.MinReplicas != agentReplicas || h.Spec.MaxReplicas <= agentReplicas {
			p.add("HorizontalPodAutoscaler/"+h.Name, "minReplicas must be %d and maxReplicas more", agentReplicas)
		}
	}
	if !hpa {
		p.add("prod", "no HorizontalPodAutoscaler scales Deployment/agent")
	}
	redis := false
	for _, e := range agent.Spec.Template.Spec.Containers[0].Env {
		if e.Name == "WICK_REDIS_ADDR" && e.ValueFrom != nil && e.ValueFrom.SecretKeyRef != nil {
			redis = true
		}
	}
	if !redis {
		p.add("prod Deployment/agent", "WICK_REDIS_ADDR must come from a Secret")
	}
	for _, w := range r.workloads() {
		for _, c := range append(w.Pod.Spec.InitContainers, w.Pod.Spec.Containers...) {
			if c.SecurityContext != nil && c.SecurityContext.Privileged != nil && *c.SecurityContext.Privileged && !onEnginePool(w.Pod.Spec) {
				p.add("prod "+w.String(), "a privileged container outside the %s node pool (nodeSelector and toleration)", engineNodeLabel)
			}
		}
	}
	checkNetwork(p, r)
}

func onEnginePool(spec corev1.PodSpec) bool {
	if spec.NodeSelector[engineNodeLabel] != "true" {
		return false
	}
	for _, t := range spec.Tolerations {
		if t.Key == engineNodeLabel && t.Effect == corev1.TaintEffectNoSchedule {
			return true
		}
	}
	return false
}

// netPath is a connection NetworkPolicies must allow or refuse.
type netPath struct {
	from, to string
	proto    corev1.Protocol
	port     int32
	allow    bool
}

// Endpoints of the paths besides the suite's own pods.
const (
	outside  = "outside"     // a client or server on the internet
	private  = "private"     // an address on a private network
	stranger = "stranger"    // another pod of the namespace
	dns      = "kube-dns"    // the cluster's DNS
	otel     = "otel"        // the OTLP collector
	scraper  = "prometheus"  // Prometheus, in the collector's namespace
	redisPod = "redis"       // an in-cluster Redis
	publicIP = "203.0.113.7" // TEST-NET-3
)

// paths are prod's network rules, one connection each.
var paths = []netPath{
	{outside, "gateway", corev1.ProtocolTCP, 8000, true},
	{outside, "gateway", corev1.ProtocolTCP, 7000, true},
	{outside, "agent", corev1.ProtocolTCP, 7001, false},
	{outside, "llmgw", corev1.ProtocolTCP, 7013, false},
	{outside, "llmgw", corev1.ProtocolTCP, 7003, false},
	{outside, "sandbox", corev1.ProtocolTCP, 7002, false},
	{outside, redisPod, corev1.ProtocolTCP, 6379, false},
	{"gateway", "agent", corev1.ProtocolTCP, 7001, true},
	{"gateway", "llmgw", corev1.ProtocolTCP, 7013, true},
	{"gateway", "llmgw", corev1.ProtocolTCP, 7003, true},
	{"gateway", "sandbox", corev1.ProtocolTCP, 7002, false},
	{"gateway", redisPod, corev1.ProtocolTCP, 6379, false},
	{"gateway", outside, corev1.ProtocolTCP, 443, false},
	{"agent", "llmgw", corev1.ProtocolTCP, 7003, true},
	{"agent", "llmgw", corev1.ProtocolTCP, 7013, false},
	{"agent", "sandbox", corev1.ProtocolTCP, 7002, true},
	{"agent", redisPod, corev1.ProtocolTCP, 6379, true},
	{"agent", "gateway", corev1.ProtocolTCP, 8000, false},
	{"agent", outside, corev1.ProtocolTCP, 443, false},
	{"llmgw", outside, corev1.ProtocolTCP, 443, true},
	{"llmgw", outside, corev1.ProtocolTCP, 80, false},
	{"llmgw", private, corev1.ProtocolTCP, 443, false},
	{"llmgw", "agent", corev1.ProtocolTCP, 7001, false},
	{"llmgw", "sandbox", corev1.ProtocolTCP, 7002, false},
	{"sandbox", "agent", corev1.ProtocolTCP, 7001, false},
	// The sandboxes' model endpoints forward to llmgw's HTTP API, nothing else of it.
	{"sandbox", "llmgw", corev1.ProtocolTCP, 7013, true},
	{"sandbox", "llmgw", corev1.ProtocolTCP, 7003, false},
	{"sandbox", redisPod, corev1.ProtocolTCP, 6379, false},
	{stranger, "llmgw", corev1.ProtocolTCP, 7013, false},
	{stranger, "sandbox", corev1.ProtocolTCP, 7002, false},
	{stranger, "agent", corev1.ProtocolTCP, 7001, false},
	{stranger, redisPod, corev1.ProtocolTCP, 6379, false},
	{stranger, outside, corev1.ProtocolTCP, 443, false},
	{"gateway", dns, corev1.ProtocolUDP, 53, true},
	{"agent", dns, corev1.ProtocolUDP, 53, true},
	{"llmgw", dns, corev1.ProtocolTCP, 53, true},
	{"sandbox", dns, corev1.ProtocolUDP, 53, true},
	{"agent", otel, corev1.ProtocolTCP, 4317, true},
	{"llmgw", otel, corev1.ProtocolTCP, 4317, true},
	{"agent", otel, corev1.ProtocolTCP, 4318, false},
	{"agent", dns, corev1.ProtocolUDP, 54, false},
	// llmgw records its HTTP APIs' usage in the agents' Redis.
	{"llmgw", redisPod, corev1.ProtocolTCP, 6379, true},
	{"gateway", redisPod, corev1.ProtocolTCP, 6379, false},
	// Prometheus scrapes each -metrics-addr, and nothing else.
	{scraper, "gateway", corev1.ProtocolTCP, 9460, true},
	{scraper, "agent", corev1.ProtocolTCP, 9461, true},
	{scraper, "sandbox", corev1.ProtocolTCP, 9462, true},
	{scraper, "llmgw", corev1.ProtocolTCP, 9463, true},
	{scraper, "agent", corev1.ProtocolTCP, 7001, false},
	{scraper, "llmgw", corev1.ProtocolTCP, 7013, false},
	{outside, "agent", corev1.ProtocolTCP, 9461, false},
	{stranger, "llmgw", corev1.ProtocolTCP, 9463, false},
}

// defaultDeny reports whether namespace ns has a policy that selects every
// pod and lets nothing in or out.
func (r *rendered) defaultDeny(ns string) bool {
	for _, np := range r.Policies {
		s := np.Spec
		if np.Namespace == ns && len(s.PodSelector.MatchLabels) == 0 && len(s.PodSelector.MatchExpressions) == 0 &&
			len(s.Ingress) == 0 && len(s.Egress) == 0 && hasType(np, "Ingress") && hasType(np, "Egress") {
			return true
		}
	}
	return false
}

// checkNetwork: a default-deny policy, then each path of paths.
func checkNetwork(p *problems, r *rendered) {
	ns := r.namespace()
	if !r.defaultDeny(ns) {
		p.add("prod", "no default-deny NetworkPolicy (every pod, Ingress and Egress, no rule)")
	}
	ends := map[string]endpoint{
		outside:  {IP: netip.MustParseAddr(publicIP)},
		private:  {IP: netip.MustParseAddr("10.1.2.3")},
		stranger: {Namespace: ns, Labels: map[string]string{"app.kubernetes.io/name": "stranger"}},
		dns:      {Namespace: "kube-system", Labels: map[string]string{"k8s-app": "kube-dns"}},
		otel:     {Namespace: "observability", Labels: map[string]string{"app.kubernetes.io/name": "otel-collector"}},
		scraper:  {Namespace: "observability", Labels: map[string]string{"app.kubernetes.io/name": "prometheus"}},
		redisPod: {Namespace: ns, Labels: map[string]string{"app.kubernetes.io/name": "redis"}, Ports: []corev1.ContainerPort{{Name: "redis", ContainerPort: 6379}}},
	}
	for _, w := range r.workloads() {
		var ports []corev1.ContainerPort
		for _, c := range w.Pod.Spec.Containers {
			ports = append(ports, c.Ports...)
		}
		ends[w.Name] = endpoint{Namespace: w.Namespace, Labels: w.Pod.Labels, Ports: ports}
	}
	engine := dockerEngine
	if sandboxes := r.sandboxNamespace(); sandboxes != "" {
		engine = kubeEngine
		maps.Copy(ends, kubeEngineEnds(sandboxes))
	}
	for _, pt := range slices.Concat(paths, enginePaths[engine]) {
		from, ok1 := ends[pt.from]
		to, ok2 := ends[pt.to]
		if !ok1 || !ok2 {
			p.add("prod", "path %s → %s: no such workload", pt.from, pt.to)
			continue
		}
		if got := allowed(r.Policies, from, to, pt.proto, pt.port); got != pt.allow {
			verb := map[bool]string{true: "allowed", false: "refused"}
			p.add("prod NetworkPolicies", "%s → %s %s/%d is %s, want %s", pt.from, pt.to, pt.proto, pt.port, verb[got], verb[pt.allow])
		}
	}
}

// namespace is the suite's Namespace: the one of the manifests that is not
// the Kubernetes sandbox engine's.
func (r *rendered) namespace() string {
	sandboxes := r.sandboxNamespace()
	var names []string
	for _, n := range r.Namespaces {
		if n.Name != sandboxes {
			names = append(names, n.Name)
		}
	}
	if len(names) == 1 {
		return names[0]
	}
	return ""
}

func (r *rendered) deployment(name string) *appsv1.Deployment {
	for _, d := range r.Deployments {
		if d.Name == name {
			return d
		}
	}
	return nil
}

func (r *rendered) statefulSet(name string) *appsv1.StatefulSet {
	for _, s := range r.StatefulSets {
		if s.Name == name {
			return s
		}
	}
	return nil
}

// replicas is a workload's replica count (the API's default is 1).
func replicas(r *rendered, w workload) int32 {
	var n *int32
	switch w.Kind {
	case "Deployment":
		if d := r.deployment(w.Name); d != nil {
			n = d.Spec.Replicas
		}
	case "StatefulSet":
		if s := r.statefulSet(w.Name); s != nil {
			n = s.Spec.Replicas
		}
	default:
		return 1
	}
	if n == nil {
		return 1
	}
	return *n
}
