package k8s

import (
	"maps"
	"net/netip"
	"slices"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"

	"github.com/wick-agent/wick/platform/config"
)

// Engines of wick-sandbox's -container-engine.
const (
	dockerEngine = "docker"
	kubeEngine   = "kubernetes"
)

// sandboxAccount is the service account of a sandbox service on the
// Kubernetes engine: the one account of the suite whose token is mounted.
const sandboxAccount = "wick-sandbox"

// sandboxRules are what the sandbox service may do in its sandbox namespace,
// and all it may do anywhere: by "group/resource", the verbs.
var sandboxRules = map[string][]string{
	"/pods":                             {"create", "delete", "get", "list", "patch"},
	"/pods/portforward":                 {"create", "get"},
	"/persistentvolumeclaims":           {"create", "delete", "get", "list", "patch"},
	"/secrets":                          {"create", "delete", "get", "patch", "update"},
	"networking.k8s.io/networkpolicies": {"create", "delete", "get", "patch", "update"},
	"/configmaps":                       {"create", "delete", "list"},
}

// sandboxNamespaceKinds are the kinds of the manifests that live in the
// sandbox namespace; the sandbox service creates everything else there.
var sandboxNamespaceKinds = map[string]bool{"NetworkPolicy": true, "Role": true, "RoleBinding": true}

// containerSetting is the value a container gives flag, by argument or by
// plain variable, without the binary's usage (checkPod has none): ok false
// when it gives none.
func containerSetting(c corev1.Container, flag string) (string, bool) {
	for _, a := range c.Args {
		if v, ok := strings.CutPrefix(a, "-"+flag+"="); ok {
			return v, true
		}
	}
	for _, e := range c.Env {
		if e.Name == config.EnvName(flag) && e.ValueFrom == nil {
			return e.Value, true
		}
	}
	return "", false
}

// engineOf is the engine a wick-sandbox container drives ("" for another
// binary): Docker unless it says otherwise.
func engineOf(c corev1.Container) string {
	if imageName(c.Image) != "wick-sandbox" {
		return ""
	}
	if v, ok := containerSetting(c, "container-engine"); ok {
		return v
	}
	return dockerEngine
}

// onKubeEngine reports whether a pod runs a sandbox service that creates its
// sandboxes as Kubernetes pods.
func onKubeEngine(spec corev1.PodSpec) bool {
	return slices.ContainsFunc(spec.Containers, func(c corev1.Container) bool { return engineOf(c) == kubeEngine })
}

// sandboxNamespace is the namespace a Kubernetes-engine sandbox service of
// the manifests creates sandboxes in, "" when none runs that engine.
func (r *rendered) sandboxNamespace() string {
	for _, w := range r.workloads() {
		for _, c := range w.Pod.Spec.Containers {
			if engineOf(c) != kubeEngine {
				continue
			}
			if v, ok := containerSetting(c, "kube-namespace"); ok {
				return v
			}
			return flagsOf["wick-sandbox"]["kube-namespace"].Default
		}
	}
	return ""
}

// checkKubeEngine: a sandbox service on the Kubernetes engine gives its
// sandbox pods its own image's wick-daemon, creates them in a namespace of
// their own under Pod Security "restricted" that denies all traffic by
// default, never as root, and may do there exactly what sandboxRules list,
// and nothing elsewhere.
func checkKubeEngine(p *problems, where string, s service, r *rendered) {
	if img := s.value("kube-daemon-image"); img != s.C.Image {
		p.add(where, "-kube-daemon-image %q is not the service's own image %q: the sandbox pods would run another wick-daemon", img, s.C.Image)
	}
	if v := s.value("kubeconfig"); v != "" {
		p.add(where, "-kubeconfig=%s: in a cluster the service uses its pod's account (in-cluster configuration)", v)
	}
	uid, gid, ok := strings.Cut(s.value("kube-run-as"), ":")
	if u, err1 := strconv.Atoi(uid); !ok || err1 != nil || u <= 0 {
		p.add(where, "-kube-run-as=%q: want uid:gid, never root", s.value("kube-run-as"))
	} else if g, err2 := strconv.Atoi(gid); err2 != nil || g <= 0 {
		p.add(where, "-kube-run-as=%q: want uid:gid, never root", s.value("kube-run-as"))
	}
	ns := s.value("kube-namespace")
	if ns == s.W.Namespace {
		p.add(where, "-kube-namespace=%s is the suite's own: sandboxes need a namespace of their own", ns)
	}
	var nsObj *corev1.Namespace
	for _, n := range r.Namespaces {
		if n.Name == ns {
			nsObj = n
		}
	}
	if nsObj == nil {
		p.add(where, "-kube-namespace=%s: no such Namespace in the manifests", ns)
	} else {
		for _, mode := range []string{"enforce", "audit", "warn"} {
			if l := nsObj.Labels["pod-security.kubernetes.io/"+mode]; l != "restricted" {
				p.add("Namespace/"+ns, "pod-security.kubernetes.io/%s is %q, want restricted", mode, l)
			}
		}
	}
	if !r.defaultDeny(ns) {
		p.add("Namespace/"+ns, "no default-deny NetworkPolicy: a sandbox would be open until the service's own policy exists")
	}
	account := s.W.Pod.Spec.ServiceAccountName
	if !slices.ContainsFunc(r.Accounts, func(a *corev1.ServiceAccount) bool { return a.Name == account && a.Namespace == s.W.Namespace }) {
		p.add(where, "no ServiceAccount %s in namespace %s", account, s.W.Namespace)
	}
	got := map[string][]string{}
	for _, b := range r.RoleBindings {
		if !slices.ContainsFunc(b.Subjects, func(sub rbacv1.Subject) bool {
			return sub.Kind == rbacv1.ServiceAccountKind && sub.Name == account && sub.Namespace == s.W.Namespace
		}) {
			continue
		}
		if b.Namespace != ns {
			p.add("RoleBinding/"+b.Name, "binds %s in namespace %q: it may act in %s only", account, b.Namespace, ns)
			continue
		}
		if b.RoleRef.Kind != "Role" {
			p.add("RoleBinding/"+b.Name, "binds %s %s: want a Role of %s", b.RoleRef.Kind, b.RoleRef.Name, ns)
			continue
		}
		role := r.role(b.RoleRef.Name, ns)
		if role == nil {
			p.add("RoleBinding/"+b.Name, "no Role %s in %s", b.RoleRef.Name, ns)
			continue
		}
		for _, rule := range role.Rules {
			if len(rule.ResourceNames) > 0 || len(rule.NonResourceURLs) > 0 {
				p.add("Role/"+role.Name, "resourceNames or nonResourceURLs: not what the service needs")
			}
			for _, g := range rule.APIGroups {
				for _, res := range rule.Resources {
					k := g + "/" + res
					got[k] = slices.Compact(slices.Sorted(slices.Values(append(got[k], rule.Verbs...))))
				}
			}
		}
	}
	if !maps.EqualFunc(got, sandboxRules, slices.Equal) {
		p.add(where, "account %s may %v in %s, want exactly %v", account, got, ns, sandboxRules)
	}
	if s.value("default-type") != dockerEngine {
		p.add(where, "-default-type=%s, want docker (a hardened container, here a pod)", s.value("default-type"))
	}
}

func (r *rendered) role(name, namespace string) *rbacv1.Role {
	for _, ro := range r.Roles {
		if ro.Name == name && ro.Namespace == namespace {
			return ro
		}
	}
	return nil
}

// Endpoints of the Kubernetes engine's paths.
const (
	apiServer  = "apiserver"   // the control plane, after the Service kubernetes's translation
	sandboxPod = "sandbox-pod" // a sandbox of the Kubernetes engine
)

// enginePaths are the network rules that depend on the sandbox engine.
var enginePaths = map[string][]netPath{
	dockerEngine: {
		// The engine pulls images from a public registry, nothing private.
		{"sandbox", private, corev1.ProtocolTCP, 443, false},
	},
	kubeEngine: {
		{"sandbox", apiServer, corev1.ProtocolTCP, 443, true},
		{"sandbox", apiServer, corev1.ProtocolTCP, 6443, true},
		{"sandbox", apiServer, corev1.ProtocolTCP, 2379, false},
		{"agent", apiServer, corev1.ProtocolTCP, 6443, false},
		{"gateway", apiServer, corev1.ProtocolTCP, 443, false},
		// The daemon is reached through the API server's port-forward,
		// never over the pod network; a sandbox reaches nothing the
		// service's own policy for it does not open.
		{"sandbox", sandboxPod, corev1.ProtocolTCP, 7070, false},
		{"agent", sandboxPod, corev1.ProtocolTCP, 7070, false},
		{stranger, sandboxPod, corev1.ProtocolTCP, 7070, false},
		{outside, sandboxPod, corev1.ProtocolTCP, 7070, false},
		{scraper, sandboxPod, corev1.ProtocolTCP, 7070, false},
		{sandboxPod, "sandbox", corev1.ProtocolTCP, 7002, false},
		{sandboxPod, "llmgw", corev1.ProtocolTCP, 7013, false},
		{sandboxPod, apiServer, corev1.ProtocolTCP, 6443, false},
		{sandboxPod, outside, corev1.ProtocolTCP, 443, false},
		{sandboxPod, dns, corev1.ProtocolUDP, 53, false},
	},
}

// kubeEngineEnds are the endpoints of the Kubernetes engine's paths.
func kubeEngineEnds(sandboxNS string) map[string]endpoint {
	return map[string]endpoint{
		apiServer:  {IP: netip.MustParseAddr("10.0.0.10")},
		sandboxPod: {Namespace: sandboxNS, Labels: map[string]string{"app.kubernetes.io/managed-by": "wick-sandbox"}},
	}
}
