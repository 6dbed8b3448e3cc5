package k8s

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	authorizationv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/wick-agent/wick/services/sandbox/kubebox"
)

// sandboxAccess are requests the sandbox service's account makes or must
// never be able to make, asked of the API server's authorizer. The namespace
// "" is the sandbox namespace; "*" is every namespace (a cluster-wide call).
var sandboxAccess = []struct {
	verb, group, resource, sub, namespace string
	allow                                 bool
}{
	{"create", "", "pods", "portforward", "", true},
	{"get", "", "pods", "portforward", "", true},
	{"watch", "", "pods", "", "", false},
	{"create", "", "pods", "exec", "", false},
	{"create", "", "pods", "attach", "", false},
	{"get", "", "pods", "log", "", false},
	{"update", "", "pods", "", "", false},
	{"patch", "", "pods", "", "", true},
	{"deletecollection", "", "pods", "", "", false},
	{"update", "", "secrets", "", "", true},
	{"list", "", "secrets", "", "", false},
	{"create", "", "serviceaccounts", "token", "", false},
	{"create", "rbac.authorization.k8s.io", "roles", "", "", false},
	{"create", "rbac.authorization.k8s.io", "rolebindings", "", "", false},
	{"create", "", "configmaps", "", "", true},
	{"list", "", "configmaps", "", "", true},
	{"delete", "", "configmaps", "", "", true},
	{"update", "", "configmaps", "", "", false},
	{"get", "", "configmaps", "", "", false},
	{"create", "", "configmaps", "", "wick", false},
	{"get", "", "secrets", "", "wick", false},
	{"create", "", "pods", "portforward", "wick", false},
	{"list", "", "pods", "", "*", false},
	{"list", "", "secrets", "", "*", false},
	{"create", "", "namespaces", "", "*", false},
	{"get", "", "nodes", "", "*", false},
}

// checkSandboxServiceRBAC acts as the sandbox service's account (the rendered
// StatefulSet sandbox's serviceAccountName, impersonated) on the real API
// server, whose RBAC the overlay's Role and RoleBinding configure: it creates,
// reads and deletes a sandbox's Secret, claim, NetworkPolicy and Pod (and
// lists pods and claims)
// in the sandbox namespace, and is refused the same in the suite's namespace,
// cluster-wide, and everything else sandboxAccess lists.
func checkSandboxServiceRBAC(t *testing.T, ctx context.Context, admin *rest.Config, dir string, r *rendered) {
	t.Helper()
	sts := r.statefulSet("sandbox")
	sandboxNS := r.sandboxNamespace()
	user := "system:serviceaccount:" + sts.Namespace + ":" + sts.Spec.Template.Spec.ServiceAccountName
	asService := rest.CopyConfig(admin)
	asService.Impersonate = rest.ImpersonationConfig{UserName: user,
		Groups: []string{"system:serviceaccounts", "system:serviceaccounts:" + sts.Namespace, "system:authenticated"}}
	cs, err := kubernetes.NewForConfig(asService)
	if err != nil {
		t.Fatal(err)
	}
	adminCS, err := kubernetes.NewForConfig(admin)
	if err != nil {
		t.Fatal(err)
	}

	// The objects of one sandbox as the service builds them, with the
	// settings the overlay gives it.
	c := sts.Spec.Template.Spec.Containers[0]
	setting := func(flag string) string {
		if v, ok := containerSetting(c, flag); ok {
			return v
		}
		return flagsOf["wick-sandbox"][flag].Default
	}
	runAs, err := kubebox.ParseRunAs(setting("kube-run-as"))
	if err != nil {
		t.Fatalf("%s: %v", dir, err)
	}
	kc, err := kubebox.New(asService, kubebox.Config{
		Namespace: sandboxNS, ManagerID: "sandbox-0", DaemonImage: setting("kube-daemon-image"), RunAs: runAs,
	})
	if err != nil {
		t.Fatalf("%s: %v", dir, err)
	}
	// The skills library's ConfigMap, as the service makes it.
	library := t.TempDir()
	if err := os.WriteFile(filepath.Join(library, "SKILL.md"), []byte("# a skill\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	skills, err := kc.EnsureSkills(ctx, library)
	if err != nil {
		t.Errorf("%s: as %s, the skills library in %s: %v", dir, user, sandboxNS, err)
	} else {
		defer func() {
			if err := adminCS.CoreV1().ConfigMaps(sandboxNS).Delete(ctx, skills.ConfigMap, metav1.DeleteOptions{}); err != nil {
				t.Errorf("delete ConfigMap %s: %v", skills.ConfigMap, err)
			}
		}()
	}
	// An earlier library version no pod mounts is removed; the current one
	// stays.
	if skills != nil {
		if err := os.WriteFile(filepath.Join(library, "SKILL.md"), []byte("# the skill, edited\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		newer, err := kc.EnsureSkills(ctx, library)
		if err != nil {
			t.Errorf("%s: as %s, a second version of the skills library: %v", dir, user, err)
		} else if deleted, err := kc.PruneSkills(ctx, newer.ConfigMap, 0); err != nil || !slices.Equal(deleted, []string{skills.ConfigMap}) {
			t.Errorf("%s: as %s, prune the skills libraries but %s: deleted %v, %v; want %s", dir, user, newer.ConfigMap, deleted, err, skills.ConfigMap)
		} else {
			skills = newer // deleted at the end
		}
	}
	for _, network := range []string{"none", "bridge"} {
		s := kubebox.Spec{
			Name: "wick-rbac-" + network, Key: "k-" + network, User: "alice", Agent: "coder",
			Image: "wick-sandbox-runtime:latest", Workdir: "/workspace", Network: network,
			Memory: 512 << 20, NanoCPUs: 1_000_000_000, WorkspaceBytes: 1 << 30, ReadOnly: network == "none",
			DaemonArgs: []string{"-root=/workspace", "-tcp-addr=" + kubebox.DaemonAddr()},
			Skills:     skills,
		}
		secret, err := cs.CoreV1().Secrets(sandboxNS).Create(ctx, kc.Secret(s, "token"), metav1.CreateOptions{})
		if err != nil {
			t.Errorf("%s: as %s, create Secret in %s: %v", dir, user, sandboxNS, err)
		} else {
			defer deleteAs(t, ctx, "Secret", secret.Name, cs.CoreV1().Secrets(sandboxNS).Delete)
		}
		pvc, err := cs.CoreV1().PersistentVolumeClaims(sandboxNS).Create(ctx, kc.Claim(s), metav1.CreateOptions{})
		if err != nil {
			t.Errorf("%s: as %s, create PersistentVolumeClaim in %s: %v", dir, user, sandboxNS, err)
		} else {
			defer deleteAs(t, ctx, "PersistentVolumeClaim", pvc.Name, cs.CoreV1().PersistentVolumeClaims(sandboxNS).Delete)
		}
		np, err := cs.NetworkingV1().NetworkPolicies(sandboxNS).Create(ctx, kc.Policy(s), metav1.CreateOptions{})
		if err != nil {
			t.Errorf("%s: as %s, create NetworkPolicy in %s: %v", dir, user, sandboxNS, err)
		} else {
			defer deleteAs(t, ctx, "NetworkPolicy", np.Name, cs.NetworkingV1().NetworkPolicies(sandboxNS).Delete)
		}
		if err := admitSandboxPod(ctx, cs, kc.Pod(s), sandboxNS); err != nil {
			t.Errorf("%s: %s sandbox pod: %v", dir, network, err)
		}
	}
	for _, list := range []func() error{
		func() error { _, err := cs.CoreV1().Pods(sandboxNS).List(ctx, metav1.ListOptions{}); return err },
		func() error {
			_, err := cs.CoreV1().PersistentVolumeClaims(sandboxNS).List(ctx, metav1.ListOptions{})
			return err
		},
	} {
		if err := list(); err != nil {
			t.Errorf("%s: as %s, list in %s: %v", dir, user, sandboxNS, err)
		}
	}

	// The same in the suite's namespace: refused by RBAC (dry-run: were it
	// allowed, nothing would be left behind).
	dry := metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}}
	refused := func(what string, err error) {
		t.Helper()
		if !apierrors.IsForbidden(err) {
			t.Errorf("%s: as %s, %s: %v, want Forbidden", dir, user, what, err)
		}
	}
	elsewhere := kubebox.Spec{Name: "wick-rbac", Key: "k", Image: "wick-sandbox-runtime:latest", Workdir: "/workspace",
		Network: "none", Memory: 512 << 20, NanoCPUs: 1_000_000_000, WorkspaceBytes: 1 << 30}
	suite := sts.Namespace
	secret := kc.Secret(elsewhere, "token")
	secret.Namespace = suite
	_, err = cs.CoreV1().Secrets(suite).Create(ctx, secret, dry)
	refused("create Secret in "+suite, err)
	pod := kc.Pod(elsewhere)
	pod.Namespace = suite
	_, err = cs.CoreV1().Pods(suite).Create(ctx, pod, dry)
	refused("create Pod in "+suite, err)
	claim := kc.Claim(elsewhere)
	claim.Namespace = suite
	_, err = cs.CoreV1().PersistentVolumeClaims(suite).Create(ctx, claim, dry)
	refused("create PersistentVolumeClaim in "+suite, err)
	policy := kc.Policy(elsewhere)
	policy.Namespace = suite
	_, err = cs.NetworkingV1().NetworkPolicies(suite).Create(ctx, policy, dry)
	refused("create NetworkPolicy in "+suite, err)
	_, err = cs.CoreV1().Pods("").List(ctx, metav1.ListOptions{})
	refused("list Pods in every namespace", err)
	_, err = cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "wick-rbac"}}, dry)
	refused("create Namespace", err)

	for _, a := range sandboxAccess {
		ns := a.namespace
		switch ns {
		case "":
			ns = sandboxNS
		case "*":
			ns = ""
		case "wick":
			ns = sts.Namespace
		}
		sar := &authorizationv1.SubjectAccessReview{Spec: authorizationv1.SubjectAccessReviewSpec{
			User: user, Groups: asService.Impersonate.Groups,
			ResourceAttributes: &authorizationv1.ResourceAttributes{
				Namespace: ns, Verb: a.verb, Group: a.group, Resource: a.resource, Subresource: a.sub,
			},
		}}
		got, err := adminCS.AuthorizationV1().SubjectAccessReviews().Create(ctx, sar, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		what := strings.TrimSuffix(a.verb+" "+a.resource+"/"+a.sub, "/") + " in " + map[bool]string{true: ns, false: "every namespace"}[ns != ""]
		if got.Status.Allowed != a.allow {
			t.Errorf("%s: %s may %s: %v, want %v (%s)", dir, user, what, got.Status.Allowed, a.allow, got.Status.Reason)
		}
	}
}

// admitSandboxPod creates pod in namespace as the sandbox service (cs acts
// as its account) on the real API server: RBAC, validation and Pod Security
// "restricted" of the sandbox namespace must all let it through. It reads
// the pod back and deletes it. No kubelet runs, so the pod stays Pending.
func admitSandboxPod(ctx context.Context, cs kubernetes.Interface, pod *corev1.Pod, namespace string) error {
	pod = pod.DeepCopy()
	pod.Namespace = namespace
	created, err := cs.CoreV1().Pods(namespace).Create(ctx, pod, metav1.CreateOptions{})
	if err != nil {
		return err
	}
	if _, err := cs.CoreV1().Pods(namespace).Get(ctx, created.Name, metav1.GetOptions{}); err != nil {
		return err
	}
	zero := int64(0)
	return cs.CoreV1().Pods(namespace).Delete(ctx, created.Name, metav1.DeleteOptions{GracePeriodSeconds: &zero})
}

// deleteAs deletes a sandbox object with the service's own rights.
func deleteAs(t *testing.T, ctx context.Context, kind, name string, del func(context.Context, string, metav1.DeleteOptions) error) {
	t.Helper()
	if err := del(ctx, name, metav1.DeleteOptions{}); err != nil {
		t.Errorf("delete %s %s as the sandbox service: %v", kind, name, err)
	}
}
