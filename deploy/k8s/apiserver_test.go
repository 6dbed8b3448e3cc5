package k8s

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	k8sruntime "k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/restmapper"
	"sigs.k8s.io/kustomize/api/krusty"
	"sigs.k8s.io/kustomize/kyaml/filesys"

	"github.com/wick-agent/wick/deploy/k8s/internal/cluster"
	"github.com/wick-agent/wick/platform/testenv"
)

// podSecurityRefused are, by overlay, the workloads whose pods Pod Security
// "restricted" refuses, on purpose: with the Docker engine, its dockerd is
// privileged and the sandbox service runs as root with CHOWN, FOWNER and
// DAC_OVERRIDE (docs/deploy.md#the-sandbox-engine). With the Kubernetes
// engine (overlays/prod) none is. Every other pod must pass.
var podSecurityRefused = map[string]map[string]bool{
	"overlays/dev":         {"StatefulSet/sandbox": true},
	"overlays/prod":        {},
	"overlays/prod-docker": {"StatefulSet/sandbox": true},
}

// fieldManager owns every field the test applies.
const fieldManager = "wick-manifest-test"

// TestManifestsOnRealAPIServer applies both overlays to a real kube-apiserver
// (over a real etcd) with Pod Security "restricted" enforced on their
// namespace: the API server's own validation and admission, which strict
// decoding cannot do. Every object must be accepted, and every workload's pod
// template, created as a bare Pod, must pass "restricted" but the ones of
// podSecurityRefused, which must be refused by Pod Security. Where the
// sandbox service runs the Kubernetes engine, its account must be able to
// do exactly its work in the sandbox namespace, by the overlay's RBAC.
func TestManifestsOnRealAPIServer(t *testing.T) {
	etcd, err := exec.LookPath("etcd")
	if err != nil {
		testenv.Missing(t, "etcd not found in PATH (Debian: etcd-server)")
	}
	apiserver := kubeAPIServer(t)
	cfg := startControlPlane(t, etcd, apiserver)

	dyn, err := dynamic.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	dc, err := discovery.NewDiscoveryClientForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	groups, err := restmapper.GetAPIGroupResources(dc)
	if err != nil {
		t.Fatal(err)
	}
	mapper := restmapper.NewDiscoveryRESTMapper(groups)
	ctx := t.Context()

	for _, dir := range []string{"overlays/dev", "overlays/prod", "overlays/prod-docker"} {
		refused, ok := podSecurityRefused[dir]
		if !ok {
			t.Fatalf("%s: not in podSecurityRefused", dir)
		}
		objs := renderObjects(t, dir)
		r, err := render(dir)
		if err != nil {
			t.Fatal(err)
		}
		namespaces := map[string]bool{}
		for _, o := range objs {
			if o.GetNamespace() != "" {
				namespaces[o.GetNamespace()] = true
			}
		}
		for ns := range namespaces {
			restrictedNamespace(t, ctx, dyn, ns)
		}
		for _, o := range objs {
			m, err := mapper.RESTMapping(o.GroupVersionKind().GroupKind(), o.GroupVersionKind().Version)
			if err != nil {
				t.Errorf("%s: %s %s: %v", dir, o.GetKind(), o.GetName(), err)
				continue
			}
			var res dynamic.ResourceInterface = dyn.Resource(m.Resource)
			if m.Scope.Name() == meta.RESTScopeNameNamespace {
				res = dyn.Resource(m.Resource).Namespace(o.GetNamespace())
			}
			if _, err := res.Apply(ctx, o.GetName(), o, metav1.ApplyOptions{FieldManager: fieldManager, Force: true}); err != nil {
				t.Errorf("%s: server-side apply of %s %s refused: %v", dir, o.GetKind(), o.GetName(), err)
			}
		}
		for _, w := range r.workloads() {
			err := createPod(ctx, dyn, w, r)
			switch {
			case refused[w.String()]:
				if err == nil {
					t.Errorf("%s: %s's pod passes Pod Security restricted: remove it from podSecurityRefused and docs/deploy.md", dir, w)
				} else if !apierrors.IsForbidden(err) || !strings.Contains(err.Error(), "violates PodSecurity") {
					t.Errorf("%s: %s's pod refused, but not by Pod Security: %v", dir, w, err)
				} else {
					t.Logf("%s: %s refused as documented: %v", dir, w, err)
				}
			case err != nil:
				t.Errorf("%s: %s's pod refused: %v", dir, w, err)
			}
		}
		if r.sandboxNamespace() != "" {
			checkSandboxServiceRBAC(t, ctx, cfg, dir, r)
		}
		// The next overlay starts from empty namespaces, as a cluster
		// changing engine does: a StatefulSet's volume claim templates
		// cannot change in place (docs/deploy.md#sandboxes-as-kubernetes-pods).
		for _, o := range objs {
			if o.GetKind() == "Namespace" {
				continue // no namespace controller here would finish the deletion
			}
			m, err := mapper.RESTMapping(o.GroupVersionKind().GroupKind(), o.GroupVersionKind().Version)
			if err != nil {
				continue // reported above
			}
			if err := dyn.Resource(m.Resource).Namespace(o.GetNamespace()).Delete(ctx, o.GetName(), metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
				t.Errorf("%s: delete %s %s: %v", dir, o.GetKind(), o.GetName(), err)
			}
		}
	}
}

// renderObjects builds the kustomization in dir into the objects to apply.
func renderObjects(t *testing.T, dir string) []*unstructured.Unstructured {
	t.Helper()
	kustomizeMu.Lock()
	m, err := krusty.MakeKustomizer(krusty.MakeDefaultOptions()).Run(filesys.MakeFsOnDisk(), dir)
	kustomizeMu.Unlock()
	if err != nil {
		t.Fatalf("kustomize build %s: %v", dir, err)
	}
	var out []*unstructured.Unstructured
	for _, res := range m.Resources() {
		b, err := res.MarshalJSON()
		if err != nil {
			t.Fatal(err)
		}
		o := &unstructured.Unstructured{}
		if err := o.UnmarshalJSON(b); err != nil {
			t.Fatalf("%s: %v", res.CurId(), err)
		}
		out = append(out, o)
	}
	return out
}

// restrictedNamespace creates ns with Pod Security "restricted" enforced, and
// its default ServiceAccount, which no controller makes here and without
// which the ServiceAccount admission plugin refuses every pod.
func restrictedNamespace(t *testing.T, ctx context.Context, dyn dynamic.Interface, ns string) {
	t.Helper()
	nsObj := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "v1", "kind": "Namespace",
		"metadata": map[string]any{"name": ns, "labels": map[string]any{
			"pod-security.kubernetes.io/enforce":         "restricted",
			"pod-security.kubernetes.io/enforce-version": "latest",
		}},
	}}
	if _, err := dyn.Resource(corev1.SchemeGroupVersion.WithResource("namespaces")).Apply(ctx, ns, nsObj, metav1.ApplyOptions{FieldManager: fieldManager + "-namespace"}); err != nil {
		t.Fatalf("namespace %s: %v", ns, err)
	}
	sa := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "v1", "kind": "ServiceAccount",
		"metadata": map[string]any{"name": "default", "namespace": ns},
	}}
	if _, err := dyn.Resource(corev1.SchemeGroupVersion.WithResource("serviceaccounts")).Namespace(ns).Apply(ctx, "default", sa, metav1.ApplyOptions{FieldManager: fieldManager}); err != nil {
		t.Fatalf("service account %s/default: %v", ns, err)
	}
}

// createPod creates w's pod template as a bare Pod, dry-run: admission runs,
// nothing is stored. A StatefulSet's pod gets its volume claim templates as
// volumes, named as the StatefulSet controller names them for pod 0.
func createPod(ctx context.Context, dyn dynamic.Interface, w workload, r *rendered) error {
	pod := &corev1.Pod{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "Pod"},
		ObjectMeta: *w.Pod.ObjectMeta.DeepCopy(),
		Spec:       *w.Pod.Spec.DeepCopy(),
	}
	pod.Name = strings.ToLower(w.Kind) + "-" + w.Name
	pod.Namespace = w.Namespace
	if w.Kind == "StatefulSet" {
		for _, pvc := range r.statefulSet(w.Name).Spec.VolumeClaimTemplates {
			pod.Spec.Volumes = append(pod.Spec.Volumes, corev1.Volume{
				Name: pvc.Name,
				VolumeSource: corev1.VolumeSource{PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{
					ClaimName: pvc.Name + "-" + w.Name + "-0",
				}},
			})
		}
	}
	u, err := k8sruntime.DefaultUnstructuredConverter.ToUnstructured(pod)
	if err != nil {
		return err
	}
	_, err = dyn.Resource(corev1.SchemeGroupVersion.WithResource("pods")).Namespace(w.Namespace).
		Create(ctx, &unstructured.Unstructured{Object: u}, metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}, FieldManager: fieldManager})
	return err
}

// controlPlaneTimeout bounds the start of etcd and of kube-apiserver, which
// on a busy two-core machine takes longer than testenv.StartTimeout.
const controlPlaneTimeout = 2 * time.Minute

// startControlPlane starts etcd and kube-apiserver on loopback ports with
// their state in the test's temporary directory, waits until the apiserver
// is ready, and returns an admin client's configuration.
func startControlPlane(t *testing.T, etcdBin, apiserverBin string) *rest.Config {
	t.Helper()
	dir := t.TempDir()

	clientURL := "http://127.0.0.1:" + strconv.Itoa(testenv.FreePort(t))
	peerURL := "http://127.0.0.1:" + strconv.Itoa(testenv.FreePort(t))
	etcd := testenv.NewProc(t, "etcd", etcdBin, []string{
		"--name=wick-test",
		"--data-dir=" + filepath.Join(dir, "etcd"),
		"--listen-client-urls=" + clientURL,
		"--advertise-client-urls=" + clientURL,
		"--listen-peer-urls=" + peerURL,
		"--initial-advertise-peer-urls=" + peerURL,
		"--initial-cluster=wick-test=" + peerURL,
		"--log-level=warn",
	}, httpReady(clientURL+"/health", nil, ""))
	etcd.Start()

	token := randomHex(t)
	tokens := filepath.Join(dir, "tokens.csv")
	// The admin: system:masters passes every authorization check.
	writeFile(t, tokens, token+",wick-admin,wick-admin,system:masters\n")
	saKey := filepath.Join(dir, "sa.key")
	saPub := filepath.Join(dir, "sa.pub")
	serviceAccountKey(t, saKey, saPub)

	port := testenv.FreePort(t)
	base := "https://127.0.0.1:" + strconv.Itoa(port)
	insecure := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{
		// The apiserver signs its own certificate into --cert-dir; the test
		// reaches it on loopback only.
		TLSClientConfig: &tls.Config{InsecureSkipVerify: true},
	}}
	apiserver := testenv.NewProc(t, "kube-apiserver", apiserverBin, []string{
		"--etcd-servers=" + clientURL,
		"--bind-address=127.0.0.1",
		"--advertise-address=127.0.0.1",
		"--secure-port=" + strconv.Itoa(port),
		"--cert-dir=" + filepath.Join(dir, "certs"),
		"--token-auth-file=" + tokens,
		"--authorization-mode=RBAC",
		"--service-account-issuer=https://kubernetes.default.svc.cluster.local",
		"--service-account-key-file=" + saPub,
		"--service-account-signing-key-file=" + saKey,
		"--service-cluster-ip-range=10.96.0.0/16",
		// As every cluster that runs privileged pods sets it (kubeadm does):
		// without it the sandbox engine is refused before Pod Security runs.
		"--allow-privileged=true",
		// Pod Security is on by default; named so that a changed default
		// cannot turn the test's point off.
		"--enable-admission-plugins=PodSecurity",
	}, httpReady(base+"/readyz", insecure, token))
	apiserver.Start()

	return &rest.Config{
		Host:            base,
		BearerToken:     token,
		TLSClientConfig: rest.TLSClientConfig{Insecure: true},
		Timeout:         30 * time.Second,
	}
}

// httpReady waits until a GET of url answers 200, within controlPlaneTimeout.
func httpReady(url string, c *http.Client, token string) testenv.Ready {
	if c == nil {
		c = &http.Client{Timeout: 5 * time.Second}
	}
	return func(t testing.TB, exited <-chan error) {
		t.Helper()
		deadline := time.Now().Add(controlPlaneTimeout)
		var last error
		for time.Now().Before(deadline) {
			req, err := http.NewRequest(http.MethodGet, url, nil)
			if err != nil {
				t.Fatal(err)
			}
			if token != "" {
				req.Header.Set("Authorization", "Bearer "+token)
			}
			resp, err := c.Do(req)
			if err == nil {
				resp.Body.Close()
				if resp.StatusCode == http.StatusOK {
					return
				}
				err = fmt.Errorf("status %s", resp.Status)
			}
			last = err
			select {
			case err := <-exited:
				t.Fatalf("exited before %s answered 200: %v", url, err)
			case <-time.After(100 * time.Millisecond):
			}
		}
		t.Fatalf("%s did not answer 200 within %s: %v", url, controlPlaneTimeout, last)
	}
}

func kubeAPIServer(t *testing.T) string {
	t.Helper()
	bin, err := cluster.Pins[0].Build(t)
	if err != nil {
		testenv.Missing(t, "kube-apiserver does not build here: %v", err)
	}
	return bin
}

// serviceAccountKey writes an ECDSA key pair for signing service-account
// tokens, which kube-apiserver requires to start.
func serviceAccountKey(t *testing.T, keyFile, pubFile string) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	der, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	pub, err := x509.MarshalPKIXPublicKey(&key.PublicKey)
	if err != nil {
		t.Fatal(err)
	}
	writeFile(t, keyFile, string(pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: der})))
	writeFile(t, pubFile, string(pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: pub})))
}

func writeFile(t *testing.T, name, content string) {
	t.Helper()
	if err := os.WriteFile(name, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
}
