package kubebox

import (
	"context"

	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	"k8s.io/apimachinery/pkg/types"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	"k8s.io/client-go/rest"
)

// The engine talks to two API groups through client-go's REST client with
// a scheme of those two only. client-go's generated clientset registers
// every group of the API in its scheme, which would add tens of MB to each
// binary that links the sandbox service.
var (
	scheme     = runtime.NewScheme()
	codecs     = serializer.NewCodecFactory(scheme)
	paramCodec = runtime.NewParameterCodec(scheme)
)

func init() {
	utilruntime.Must(corev1.AddToScheme(scheme))
	utilruntime.Must(networkingv1.AddToScheme(scheme))
}

// clientset is the engine's two API groups.
type clientset struct {
	core, net *rest.RESTClient
}

func newClientset(rc *rest.Config) (clientset, error) {
	var cs clientset
	var err error
	if cs.core, err = restClient(rc, corev1.SchemeGroupVersion, "/api"); err != nil {
		return cs, err
	}
	cs.net, err = restClient(rc, networkingv1.SchemeGroupVersion, "/apis")
	return cs, err
}

func restClient(rc *rest.Config, gv schema.GroupVersion, apiPath string) (*rest.RESTClient, error) {
	c := rest.CopyConfig(rc)
	c.GroupVersion, c.APIPath = &gv, apiPath
	c.NegotiatedSerializer = codecs.WithoutConversion()
	if c.UserAgent == "" {
		c.UserAgent = rest.DefaultKubernetesUserAgent()
	}
	return rest.RESTClientFor(c)
}

type coreV1 struct{ rc *rest.RESTClient }
type networkingV1 struct{ rc *rest.RESTClient }

func (c clientset) CoreV1() coreV1             { return coreV1{c.core} }
func (c clientset) NetworkingV1() networkingV1 { return networkingV1{c.net} }

func (c coreV1) Pods(ns string) objects[corev1.Pod, *corev1.Pod, corev1.PodList, *corev1.PodList] {
	return objects[corev1.Pod, *corev1.Pod, corev1.PodList, *corev1.PodList]{c.rc, ns, "pods"}
}

func (c coreV1) Secrets(ns string) objects[corev1.Secret, *corev1.Secret, corev1.SecretList, *corev1.SecretList] {
	return objects[corev1.Secret, *corev1.Secret, corev1.SecretList, *corev1.SecretList]{c.rc, ns, "secrets"}
}

func (c coreV1) ConfigMaps(ns string) objects[corev1.ConfigMap, *corev1.ConfigMap, corev1.ConfigMapList, *corev1.ConfigMapList] {
	return objects[corev1.ConfigMap, *corev1.ConfigMap, corev1.ConfigMapList, *corev1.ConfigMapList]{c.rc, ns, "configmaps"}
}

func (c coreV1) PersistentVolumeClaims(ns string) objects[corev1.PersistentVolumeClaim, *corev1.PersistentVolumeClaim, corev1.PersistentVolumeClaimList, *corev1.PersistentVolumeClaimList] {
	return objects[corev1.PersistentVolumeClaim, *corev1.PersistentVolumeClaim, corev1.PersistentVolumeClaimList, *corev1.PersistentVolumeClaimList]{c.rc, ns, "persistentvolumeclaims"}
}

func (c networkingV1) NetworkPolicies(ns string) objects[networkingv1.NetworkPolicy, *networkingv1.NetworkPolicy, networkingv1.NetworkPolicyList, *networkingv1.NetworkPolicyList] {
	return objects[networkingv1.NetworkPolicy, *networkingv1.NetworkPolicy, networkingv1.NetworkPolicyList, *networkingv1.NetworkPolicyList]{c.rc, ns, "networkpolicies"}
}

// objects is one resource of one namespace, with the calls the engine
// makes, shaped as client-go's typed clients.
type objects[T any, PT interface {
	*T
	runtime.Object
	GetName() string
}, L any, PL interface {
	*L
	runtime.Object
}] struct {
	rc      *rest.RESTClient
	ns, res string
}

func (o objects[T, PT, L, PL]) Create(ctx context.Context, obj PT, _ metav1.CreateOptions) (PT, error) {
	out := PT(new(T))
	return out, o.rc.Post().Namespace(o.ns).Resource(o.res).Body(obj).Do(ctx).Into(out)
}

func (o objects[T, PT, L, PL]) Get(ctx context.Context, name string, _ metav1.GetOptions) (PT, error) {
	out := PT(new(T))
	return out, o.rc.Get().Namespace(o.ns).Resource(o.res).Name(name).Do(ctx).Into(out)
}

func (o objects[T, PT, L, PL]) List(ctx context.Context, opts metav1.ListOptions) (PL, error) {
	out := PL(new(L))
	return out, o.rc.Get().Namespace(o.ns).Resource(o.res).VersionedParams(&opts, paramCodec).Do(ctx).Into(out)
}

func (o objects[T, PT, L, PL]) Update(ctx context.Context, obj PT, _ metav1.UpdateOptions) (PT, error) {
	out := PT(new(T))
	return out, o.rc.Put().Namespace(o.ns).Resource(o.res).Name(obj.GetName()).Body(obj).Do(ctx).Into(out)
}

func (o objects[T, PT, L, PL]) Patch(ctx context.Context, name string, pt types.PatchType, data []byte, _ metav1.PatchOptions) (PT, error) {
	out := PT(new(T))
	return out, o.rc.Patch(pt).Namespace(o.ns).Resource(o.res).Name(name).Body(data).Do(ctx).Into(out)
}

func (o objects[T, PT, L, PL]) Delete(ctx context.Context, name string, opts metav1.DeleteOptions) error {
	return o.rc.Delete().Namespace(o.ns).Resource(o.res).Name(name).Body(&opts).Do(ctx).Error()
}
