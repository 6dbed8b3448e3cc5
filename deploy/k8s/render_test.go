package k8s

import (
	"bytes"
	"encoding/json"
	"fmt"
	"path"
	"slices"
	"strings"
	"sync"

	appsv1 "k8s.io/api/apps/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	policyv1 "k8s.io/api/policy/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/kustomize/api/krusty"
	"sigs.k8s.io/kustomize/kyaml/filesys"
)

// rendered is one overlay built by kustomize, every object decoded into its
// Kubernetes API type.
type rendered struct {
	Namespaces   []*corev1.Namespace
	ConfigMaps   []*corev1.ConfigMap
	Secrets      []*corev1.Secret
	Services     []*corev1.Service
	Deployments  []*appsv1.Deployment
	StatefulSets []*appsv1.StatefulSet
	DaemonSets   []*appsv1.DaemonSet
	PDBs         []*policyv1.PodDisruptionBudget
	HPAs         []*autoscalingv2.HorizontalPodAutoscaler
	Policies     []*networkingv1.NetworkPolicy
	Accounts     []*corev1.ServiceAccount
	Roles        []*rbacv1.Role
	RoleBindings []*rbacv1.RoleBinding
}

// workload is the pod template of a Deployment, StatefulSet or DaemonSet.
type workload struct {
	Kind, Name, Namespace string
	Pod                   *corev1.PodTemplateSpec
}

func (w workload) String() string { return w.Kind + "/" + w.Name }

func (r *rendered) workloads() []workload {
	var ws []workload
	for _, d := range r.Deployments {
		ws = append(ws, workload{"Deployment", d.Name, d.Namespace, &d.Spec.Template})
	}
	for _, s := range r.StatefulSets {
		ws = append(ws, workload{"StatefulSet", s.Name, s.Namespace, &s.Spec.Template})
	}
	for _, d := range r.DaemonSets {
		ws = append(ws, workload{"DaemonSet", d.Name, d.Namespace, &d.Spec.Template})
	}
	return ws
}

// objectMeta names a namespaced object, for messages.
type objectMeta struct{ Kind, Name, Namespace string }

// objectMetas lists every namespaced object.
func (r *rendered) objectMetas() []objectMeta {
	out := slices.Concat(metasOf("ConfigMap", r.ConfigMaps), metasOf("Secret", r.Secrets),
		metasOf("Service", r.Services), metasOf("PodDisruptionBudget", r.PDBs),
		metasOf("HorizontalPodAutoscaler", r.HPAs), metasOf("NetworkPolicy", r.Policies),
		metasOf("ServiceAccount", r.Accounts), metasOf("Role", r.Roles), metasOf("RoleBinding", r.RoleBindings))
	for _, w := range r.workloads() {
		out = append(out, objectMeta{w.Kind, w.Name, w.Namespace})
	}
	return out
}

func metasOf[O metav1.Object](kind string, list []O) []objectMeta {
	var out []objectMeta
	for _, o := range list {
		out = append(out, objectMeta{kind, o.GetName(), o.GetNamespace()})
	}
	return out
}

// kustomizeMu serialises builds: kyaml loads its OpenAPI schema into
// package state on first use without a lock, which the race detector
// reports when two overlays build in parallel.
var kustomizeMu sync.Mutex

// render builds the kustomization in dir.
func render(dir string) (*rendered, error) {
	k := krusty.MakeKustomizer(krusty.MakeDefaultOptions())
	kustomizeMu.Lock()
	m, err := k.Run(filesys.MakeFsOnDisk(), dir)
	kustomizeMu.Unlock()
	if err != nil {
		return nil, fmt.Errorf("kustomize build %s: %w", dir, err)
	}
	r := &rendered{}
	for _, res := range m.Resources() {
		b, err := res.MarshalJSON()
		if err != nil {
			return nil, fmt.Errorf("%s: %w", res.CurId(), err)
		}
		if err := r.add(res.GetApiVersion(), res.GetKind(), b); err != nil {
			return nil, fmt.Errorf("%s %s: %w", res.GetKind(), res.GetName(), err)
		}
	}
	return r, nil
}

// add decodes one object strictly: a field its API type does not have (a
// typo, a field at the wrong level, one of another API version) is an error,
// as the API server would refuse it or, worse, drop it.
func (r *rendered) add(apiVersion, kind string, b []byte) error {
	var obj any
	switch apiVersion + " " + kind {
	case "v1 Namespace":
		obj = appendNew(&r.Namespaces)
	case "v1 ConfigMap":
		obj = appendNew(&r.ConfigMaps)
	case "v1 Secret":
		obj = appendNew(&r.Secrets)
	case "v1 Service":
		obj = appendNew(&r.Services)
	case "apps/v1 Deployment":
		obj = appendNew(&r.Deployments)
	case "apps/v1 StatefulSet":
		obj = appendNew(&r.StatefulSets)
	case "apps/v1 DaemonSet":
		obj = appendNew(&r.DaemonSets)
	case "policy/v1 PodDisruptionBudget":
		obj = appendNew(&r.PDBs)
	case "autoscaling/v2 HorizontalPodAutoscaler":
		obj = appendNew(&r.HPAs)
	case "networking.k8s.io/v1 NetworkPolicy":
		obj = appendNew(&r.Policies)
	case "v1 ServiceAccount":
		obj = appendNew(&r.Accounts)
	case "rbac.authorization.k8s.io/v1 Role":
		obj = appendNew(&r.Roles)
	case "rbac.authorization.k8s.io/v1 RoleBinding":
		obj = appendNew(&r.RoleBindings)
	default:
		return fmt.Errorf("no check knows %s %s: add it to rendered", apiVersion, kind)
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(obj); err != nil {
		return fmt.Errorf("strict decode: %w", err)
	}
	return nil
}

// appendNew appends a new zero object to list and returns it.
func appendNew[T any](list *[]*T) *T {
	o := new(T)
	*list = append(*list, o)
	return o
}

// imageName is an image reference without registry, tag or digest:
// "registry.example.com/wick/wick-agent:v1" → "wick-agent".
func imageName(ref string) string {
	ref, _, _ = strings.Cut(ref, "@")
	name := path.Base(ref)
	name, _, _ = strings.Cut(name, ":")
	return name
}
