//go:build k8scluster

package cluster_test

import (
	"cmp"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	k8sruntime "k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/restmapper"
	"k8s.io/utils/ptr"

	"github.com/wick-agent/wick/deploy/k8s/internal/cluster"
	"github.com/wick-agent/wick/deploy/k8s/internal/suiteapi"
	"github.com/wick-agent/wick/platform/identity"
	"github.com/wick-agent/wick/platform/testenv"
	"github.com/wick-agent/wick/services/sandbox/kubebox"
)

// The images `make images` builds that overlays/dev runs, and the sandboxes'
// runtime image it names.
var devImages = []string{"wick-gateway:latest", "wick-agent:latest", "wick-llmgw:latest", "wick-sandbox:latest", "wick-sandbox-runtime:latest"}

// TestOverlaysDevConversation runs the whole of overlays/dev on the real
// single-node cluster, with the sandbox service's Kubernetes engine and two
// agent replicas: every object server-side applied into namespaces that
// enforce Pod Security "restricted", every pod Ready, Services reached by
// their names (CoreDNS) and cluster addresses (kube-proxy), Redis from an
// image of Debian's redis-server under the name the manifest gives. Through
// the gateway a scripted model writes a file and runs a command in a sandbox
// pod; the agent replica that holds the run is deleted in the middle of it,
// and the thread keeps every completed round with no call left without its
// result, the run ends with an error and the next message runs to the end on
// the other replica; then the sandbox pod is deleted and the next call runs
// on a new pod that has the workspace.
func TestOverlaysDevConversation(t *testing.T) {
	for _, img := range devImages {
		if out, err := exec.Command("docker", "image", "inspect", "--format", "{{.Id}}", img).CombinedOutput(); err != nil {
			cluster.Unavailable(t, "no %s on the Docker engine (make images builds it): %v %s", img, err, strings.TrimSpace(string(out)))
		}
	}
	redisFiles, err := cluster.ProgramFiles("/usr/local/bin", "/usr/bin/redis-server", "/usr/bin/redis-cli")
	if err != nil {
		cluster.Unavailable(t, "no redis-server and redis-cli to build the redis image from (Debian: redis-server): %v", err)
	}

	objs := renderDevWithSandboxPods(t)
	redisImage := devRedisImage(t, objs)

	begin := time.Now()
	c := cluster.Start(t)
	ctx := t.Context()
	t.Logf("cluster up (control plane, node Ready, kube-proxy, CoreDNS) in %s", time.Since(begin).Round(time.Millisecond))

	imported := time.Now()
	for _, img := range devImages {
		if err := c.ImportDockerImage(img); err != nil {
			t.Fatal(err)
		}
	}
	// As the official image's entrypoint starts it when no configuration
	// file is given: without protected mode, which would refuse every
	// client but loopback ones.
	if err := c.ImportImage(cluster.Image{Name: redisImage, Files: redisFiles, Entrypoint: []string{"/usr/local/bin/redis-server", "--protected-mode", "no"},
		Env: []string{"PATH=/usr/local/bin:/usr/bin:/bin"}, WorkingDir: "/data"}); err != nil {
		t.Fatal(err)
	}
	t.Logf("images imported into containerd in %s", time.Since(imported).Round(time.Millisecond))

	const ns = "wick"
	restrictedNamespace(t, c, ns)
	restrictedNamespace(t, c, sandboxNS)
	// The Secrets the operator creates (docs/deploy.md#install).
	const token = "tok-alice"
	for name, data := range map[string]map[string]string{
		"wick-identity": {"WICK_IDENTITY_KEY": identity.RandomKey().String()},
		"wick-tokens":   {"tokens": token + " alice\n"},
		"wick-llm-http": {"token": strings.Repeat("cd", 32)},
	} {
		if _, err := c.Client.CoreV1().Secrets(ns).Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: name}, StringData: data}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	// Volumes a provisioner would make, as host directories: Redis's claim
	// (no storage class: the cluster has no default one) owned by the redis
	// user, and the sandboxes' workspace claims owned by the sandboxes' user
	// (a hostPath volume gets no fsGroup).
	hostPV(t, c, "redis-data", "", 999, "10Gi")
	for i := range 2 {
		hostPV(t, c, fmt.Sprintf("workspace-%d", i), storageClass, 1000, "10Gi")
	}

	// On a failure, what the suite's pods said (registered after the
	// cluster's own cleanups, so it runs before them).
	t.Cleanup(func() {
		if !t.Failed() {
			return
		}
		l, err := c.Client.CoreV1().Pods(ns).List(context.Background(), metav1.ListOptions{})
		if err != nil {
			return
		}
		for _, p := range l.Items {
			for _, ct := range p.Spec.Containers {
				b, _ := c.Client.CoreV1().Pods(ns).GetLogs(p.Name, &corev1.PodLogOptions{Container: ct.Name, TailLines: ptr.To(int64(15))}).DoRaw(context.Background())
				t.Logf("log of %s/%s:\n%s", p.Name, ct.Name, b)
			}
		}
	})

	objs = forTestNode(t, objs)
	applied := time.Now()
	apply(t, c, objs)
	pods := waitAllReady(t, c, ns, objs)
	t.Logf("overlays/dev applied, its %d pods Ready with every probe passing, in %s (%s since the start)", len(pods),
		time.Since(applied).Round(time.Millisecond), time.Since(begin).Round(time.Millisecond))

	waitSandboxPlaced(t, c, ns)

	// The gateway Service's endpoint, as kubectl port-forward svc/gateway
	// picks it: the API server streams to the pod through the kubelet.
	gwPod := serviceEndpointPod(t, c, ns, "gateway")
	api := suiteapi.New(t, fmt.Sprintf("http://127.0.0.1:%d", portForward(t, c, ns, gwPod, 8000)), token)
	redisPod := serviceEndpointPod(t, c, ns, "redis")
	rdb := redis.NewClient(&redis.Options{Addr: fmt.Sprintf("127.0.0.1:%d", portForward(t, c, ns, redisPod, 6379))})
	t.Cleanup(func() { rdb.Close() })

	talked := time.Now()
	devConversation(ctx, t, c, api, rdb, ns)
	t.Logf("conversation (a replica deleted mid-run, the sandbox pod replaced) in %s; whole test %s",
		time.Since(talked).Round(time.Millisecond), time.Since(begin).Round(time.Millisecond))
}

// devConversation is TestTopology's scenario on the cluster's pods: round 1
// writes a file, round 2 waits in the sandbox pod until the test lets it go.
func devConversation(ctx context.Context, t *testing.T, c *cluster.Cluster, api *suiteapi.Client, rdb *redis.Client, ns string) {
	model := `script:{"turns":[` +
		`{"text":"Writing.","tool_calls":[{"name":"write_file","arguments":{"path":"/workspace/round1.txt","content":"kept\n"}}]},` +
		`{"text":"Waiting.","tool_calls":[{"name":"execute","arguments":{"command":"cat /proc/sys/kernel/hostname > ran-in; while [ ! -f release ]; do sleep 0.05; done; echo released"}}]},` +
		`{"text":"All rounds done."}],"end_text":"All rounds done."}`
	api.Do("POST", "/agents", map[string]any{"agent_id": "dev", "model": model, "backend": map[string]any{"type": "docker"}}, nil)

	stream := api.SSE(ctx, "POST", "/agents/dev/stream", map[string]any{"messages": []map[string]string{{"role": "user", "content": "start"}}})
	var runID, threadID string
	wroteRound1 := false
	for {
		ev, err := stream.Next()
		if err != nil {
			t.Fatalf("stream ended before round 2 started: %v", err)
		}
		runID, threadID = cmp.Or(runID, ev.Str("run_id")), cmp.Or(threadID, ev.Str("thread_id"))
		if ev.Type == "on_tool_end" && ev.Str("name") == "write_file" {
			wroteRound1 = true
		}
		if ev.Type == "on_tool_start" && ev.Str("name") == "execute" {
			break
		}
		if ev.Type == "error" || ev.Type == "done" {
			t.Fatalf("run ended before round 2: %s %s", ev.Type, ev.Data)
		}
	}
	if !wroteRound1 || runID == "" || threadID == "" {
		t.Fatalf("round 1 done %v, run %q, thread %q", wroteRound1, runID, threadID)
	}

	// The file and the command are in the sandbox's pod, in its own
	// namespace: read there through the API server's exec, not the suite.
	box := devSandboxPod(t, c)
	if got := execIn(t, c, sandboxNS, box.Name, "cat", "/workspace/round1.txt"); got != "kept" {
		t.Fatalf("round1.txt in the sandbox pod %s: %q", box.Name, got)
	}
	var ranIn string
	if err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, time.Minute, true, func(context.Context) (bool, error) {
		ranIn = execIn(t, c, sandboxNS, box.Name, "sh", "-c", "cat /workspace/ran-in 2>/dev/null || true")
		return ranIn != "", nil
	}); err != nil || ranIn != box.Spec.Hostname {
		t.Fatalf("round 2's command in the sandbox pod %s: wrote host name %q (pod host name %q): %v", box.Name, ranIn, box.Spec.Hostname, err)
	}

	// The thread's lock names the replica that holds the run: its pod's
	// name (the host name) and pid, after the lock's own token.
	holder, err := rdb.Get(ctx, "wick:{alice}:lock:"+threadID).Result()
	if err != nil {
		t.Fatalf("read the thread's lock: %v", err)
	}
	agents, err := c.Client.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: "app.kubernetes.io/name=agent"})
	if err != nil {
		t.Fatal(err)
	}
	var victim, survivor string
	for _, p := range agents.Items {
		if strings.Contains(holder, p.Name+":") {
			victim = p.Name
		} else {
			survivor = p.Name
		}
	}
	if victim == "" || survivor == "" || len(agents.Items) != 2 {
		t.Fatalf("lock token %q names none of two agent replicas (%d pods)", holder, len(agents.Items))
	}
	t.Logf("run %s is on %s; deleting the pod now (no grace period)", runID, victim)
	if err := c.Client.CoreV1().Pods(ns).Delete(ctx, victim, metav1.DeleteOptions{GracePeriodSeconds: ptr.To(int64(0))}); err != nil {
		t.Fatal(err)
	}

	// The stream the user had ends, without a done.
	for {
		ev, err := stream.Next()
		if err != nil || ev.Type == "error" {
			break
		}
		if ev.Type == "done" {
			t.Fatalf("the stream of a run whose replica was deleted says done: %s", ev.Data)
		}
	}
	// Re-joined (on the survivor), the run ends with an error once its
	// lease expired, and says so.
	rejoin := api.SSE(ctx, "GET", "/runs/"+runID+"/events", nil)
	var last suiteapi.Event
	for {
		ev, err := rejoin.Next()
		if err != nil {
			break
		}
		last = ev
	}
	if last.Type != "error" {
		t.Fatalf("the re-joined run ended with %q %s, want an error event", last.Type, last.Data)
	}
	var run map[string]any
	api.Do("GET", "/runs/"+runID, nil, &run)
	if st := fmt.Sprint(run["status"]); st == "running" || st == "done" || st == "completed" {
		t.Fatalf("the deleted replica's run's status is %q", st)
	}
	msgs := api.Thread(threadID)
	suiteapi.CheckPaired(t, msgs)
	if !suiteapi.HasToolResult(msgs, "write_file") {
		t.Fatalf("round 1 (write_file) is not in the thread: %+v", msgs)
	}

	// The next message runs to the end on the other replica; the file lets
	// a replayed round 2 through.
	api.Do("PUT", "/agents/dev/files/write", map[string]any{"path": "/workspace/release", "content": "go"}, nil)
	next := api.SSE(ctx, "POST", "/agents/dev/stream", map[string]any{"thread_id": threadID,
		"messages": []map[string]string{{"role": "user", "content": "go on"}}})
	var end suiteapi.Event
	for {
		ev, err := next.Next()
		if err != nil {
			break
		}
		end = ev
		if ev.Type == "done" || ev.Type == "error" {
			break
		}
	}
	if end.Type != "done" {
		t.Fatalf("the next run ended with %q %s, want done", end.Type, end.Data)
	}
	msgs = api.Thread(threadID)
	suiteapi.CheckPaired(t, msgs)
	if !suiteapi.HasToolResult(msgs, "write_file") || msgs[len(msgs)-1].Role != "assistant" || !strings.Contains(msgs[len(msgs)-1].Content, "All rounds done.") {
		t.Fatalf("after the next run the thread is %+v", msgs)
	}
	if holder, err := rdb.Get(ctx, "wick:{alice}:lock:"+threadID).Result(); err == nil {
		t.Errorf("the thread is still locked by %q after its run ended", holder)
	}

	// The sandbox pod deleted: the next call makes a new pod on the same
	// workspace claim.
	box = devSandboxPod(t, c)
	if err := c.Client.CoreV1().Pods(sandboxNS).Delete(ctx, box.Name, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, 2*time.Minute, true, func(ctx context.Context) (bool, error) {
		p, err := c.Client.CoreV1().Pods(sandboxNS).Get(ctx, box.Name, metav1.GetOptions{})
		return apierrors.IsNotFound(err) || (err == nil && p.UID != box.UID), nil
	}); err != nil {
		t.Fatalf("sandbox pod %s still there: %v", box.Name, err)
	}
	var file struct{ Content string }
	api.Do("GET", "/agents/dev/files/read?path=/workspace/round1.txt", nil, &file)
	if file.Content != "kept\n" {
		t.Fatalf("round1.txt after the sandbox pod was deleted holds %q", file.Content)
	}
	again := devSandboxPod(t, c)
	if again.UID == box.UID {
		t.Fatalf("the call after the delete did not run on a new pod")
	}
	if got := execIn(t, c, sandboxNS, again.Name, "cat", "/workspace/round1.txt", "/workspace/release"); got != "kept\ngo" {
		t.Errorf("the new sandbox pod's workspace: %q", got)
	}
}

// waitSandboxPlaced waits until every agent replica has resolved the
// sandbox service's address. An agent that started before the pod sandbox-0
// had one resolves it again only every 30 s (its placement refresh), and
// fails sandbox calls Unavailable until then; being Ready does not wait for
// it. The agent logs each resolution.
func waitSandboxPlaced(t *testing.T, c *cluster.Cluster, ns string) {
	t.Helper()
	var missing []string
	if err := wait.PollUntilContextTimeout(t.Context(), 500*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		l, err := c.Client.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: "app.kubernetes.io/name=agent"})
		if err != nil {
			return false, nil
		}
		missing = missing[:0]
		for _, p := range l.Items {
			b, err := c.Client.CoreV1().Pods(ns).GetLogs(p.Name, &corev1.PodLogOptions{Container: "agent"}).DoRaw(ctx)
			if err != nil || !strings.Contains(string(b), `"endpoints":["`) && !strings.Contains(string(b), `"added":["`) {
				missing = append(missing, p.Name)
			}
		}
		return len(missing) == 0, nil
	}); err != nil {
		t.Fatalf("agents that have not resolved the sandbox service: %v: %v", missing, err)
	}
}

// devSandboxPod is the one sandbox pod (of any manager), Ready.
func devSandboxPod(t *testing.T, c *cluster.Cluster) *corev1.Pod {
	t.Helper()
	var pod *corev1.Pod
	var seen []string
	if err := wait.PollUntilContextTimeout(t.Context(), 200*time.Millisecond, 2*time.Minute, true, func(ctx context.Context) (bool, error) {
		l, err := c.Client.CoreV1().Pods(sandboxNS).List(ctx, metav1.ListOptions{LabelSelector: kubebox.LabelManager})
		if err != nil {
			return false, nil
		}
		seen = seen[:0]
		for _, p := range l.Items {
			seen = append(seen, fmt.Sprintf("%s %s ready %v deleting %v labels %v", p.Name, p.Status.Phase, podReady(&p), p.DeletionTimestamp != nil, p.Labels))
		}
		if len(l.Items) != 1 || l.Items[0].DeletionTimestamp != nil || !podReady(&l.Items[0]) {
			return false, nil
		}
		pod = &l.Items[0]
		return true, nil
	}); err != nil {
		t.Fatalf("one Ready sandbox pod in %s: %v; pods: %v", sandboxNS, err, seen)
	}
	return pod
}

// devRedisImage is the image overlays/dev's redis runs.
func devRedisImage(t *testing.T, objs []*unstructured.Unstructured) string {
	t.Helper()
	for _, o := range objs {
		if o.GetKind() == "StatefulSet" && o.GetName() == "redis" {
			var s appsv1.StatefulSet
			fromUnstructured(t, o, &s)
			ref := s.Spec.Template.Spec.Containers[0].Image
			// As the kubelet asks containerd for it: a first component
			// without a dot or a port is no registry.
			first, _, found := strings.Cut(ref, "/")
			switch {
			case !found:
				ref = "docker.io/library/" + ref
			case !strings.ContainsAny(first, ".:") && first != "localhost":
				ref = "docker.io/" + ref
			}
			return ref
		}
	}
	t.Fatal("overlays/dev has no StatefulSet redis")
	return ""
}

// hostPV makes a PersistentVolume of class class on a host directory owned
// by uid, as a provisioner would for a claim.
func hostPV(t *testing.T, c *cluster.Cluster, name, class string, uid int, size string) {
	t.Helper()
	dir := filepath.Join(c.Dir, "pv", name)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Chown(dir, uid, uid); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Client.CoreV1().PersistentVolumes().Create(t.Context(), &corev1.PersistentVolume{
		ObjectMeta: metav1.ObjectMeta{Name: "wick-test-" + name},
		Spec: corev1.PersistentVolumeSpec{
			StorageClassName:              class,
			Capacity:                      corev1.ResourceList{corev1.ResourceStorage: resource.MustParse(size)},
			AccessModes:                   []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
			PersistentVolumeReclaimPolicy: corev1.PersistentVolumeReclaimRetain,
			PersistentVolumeSource:        corev1.PersistentVolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: dir}},
		},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
}

// renderDevWithSandboxPods builds overlays/dev with the component
// sandbox-pods, as an operator's kustomization that adds it would: the
// sandbox service's Kubernetes engine, its account and Role, the namespace
// wick-sandboxes.
func renderDevWithSandboxPods(t *testing.T) []*unstructured.Unstructured {
	t.Helper()
	k8s := filepath.Join(testenv.RepoRoot(t), "deploy", "k8s")
	dir := t.TempDir()
	// kustomize takes no absolute path of a base or component.
	rel := func(p string) string {
		r, err := filepath.Rel(dir, p)
		if err != nil {
			t.Fatal(err)
		}
		return r
	}
	if err := os.WriteFile(filepath.Join(dir, "kustomization.yaml"), []byte(fmt.Sprintf(`apiVersion: kustomize.config.k8s.io/v1beta1
kind: Kustomization
resources: [%q]
components: [%q]
`, rel(filepath.Join(k8s, "overlays", "dev")), rel(filepath.Join(k8s, "components", "sandbox-pods")))), 0o600); err != nil {
		t.Fatal(err)
	}
	return renderKustomization(t, dir)
}

// forTestNode sets what differs on the test's node: the sandboxes' claims
// of the test's storage class, one CPU a sandbox, two agent replicas, and
// CPU requests that fit two cores.
func forTestNode(t *testing.T, objs []*unstructured.Unstructured) []*unstructured.Unstructured {
	t.Helper()
	for i, o := range objs {
		switch {
		case o.GetKind() == "StatefulSet" && o.GetName() == "sandbox":
			var s appsv1.StatefulSet
			fromUnstructured(t, o, &s)
			ctr := &s.Spec.Template.Spec.Containers[0]
			ctr.Args = append(ctr.Args, "-kube-storage-class="+storageClass,
				// Its pod's request and limit: room for one on two cores.
				"-default-nano-cpus=1000000000")
			objs[i] = toUnstructured(t, &s)
		case o.GetKind() == "Deployment" && o.GetName() == "agent":
			var d appsv1.Deployment
			fromUnstructured(t, o, &d)
			d.Spec.Replicas = ptr.To(int32(2))
			objs[i] = toUnstructured(t, &d)
		}
	}
	for _, o := range objs {
		lowerCPURequests(t, o)
	}
	return objs
}

// lowerCPURequests requests 100m for each container of a workload: the
// requests of overlays/dev sum to more than the two cores of a test node.
// Limits stay as they are.
func lowerCPURequests(t *testing.T, o *unstructured.Unstructured) {
	t.Helper()
	if o.GetKind() != "Deployment" && o.GetKind() != "StatefulSet" {
		return
	}
	for _, field := range []string{"containers", "initContainers"} {
		path := []string{"spec", "template", "spec", field}
		ctrs, found, err := unstructured.NestedSlice(o.Object, path...)
		if err != nil || !found {
			continue
		}
		for _, ct := range ctrs {
			if err := unstructured.SetNestedField(ct.(map[string]any), "100m", "resources", "requests", "cpu"); err != nil {
				t.Fatal(err)
			}
		}
		if err := unstructured.SetNestedSlice(o.Object, ctrs, path...); err != nil {
			t.Fatal(err)
		}
	}
}

func toUnstructured(t *testing.T, obj k8sruntime.Object) *unstructured.Unstructured {
	t.Helper()
	gvks, _, err := scheme.Scheme.ObjectKinds(obj)
	if err != nil {
		t.Fatal(err)
	}
	m, err := k8sruntime.DefaultUnstructuredConverter.ToUnstructured(obj)
	if err != nil {
		t.Fatal(err)
	}
	u := &unstructured.Unstructured{Object: m}
	u.SetGroupVersionKind(gvks[0])
	unstructured.RemoveNestedField(u.Object, "status")
	unstructured.RemoveNestedField(u.Object, "metadata", "creationTimestamp")
	return u
}

// apply server-side applies every object, as `kubectl apply --server-side`.
func apply(t *testing.T, c *cluster.Cluster, objs []*unstructured.Unstructured) {
	t.Helper()
	dc, err := discovery.NewDiscoveryClientForConfig(c.Config)
	if err != nil {
		t.Fatal(err)
	}
	groups, err := restmapper.GetAPIGroupResources(dc)
	if err != nil {
		t.Fatal(err)
	}
	mapper := restmapper.NewDiscoveryRESTMapper(groups)
	dyn, err := dynamic.NewForConfig(c.Config)
	if err != nil {
		t.Fatal(err)
	}
	// What a pod needs before the workloads that make pods, as kubectl
	// orders its objects.
	first := map[string]int{"Namespace": 0, "ServiceAccount": 1, "Role": 1, "RoleBinding": 1, "Deployment": 3, "StatefulSet": 3}
	rank := func(o *unstructured.Unstructured) int {
		if r, ok := first[o.GetKind()]; ok {
			return r
		}
		return 2
	}
	objs = slices.Clone(objs)
	slices.SortStableFunc(objs, func(a, b *unstructured.Unstructured) int { return rank(a) - rank(b) })
	for _, o := range objs {
		gvk := o.GroupVersionKind()
		m, err := mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
		if err != nil {
			t.Fatalf("%s %s: %v", gvk, o.GetName(), err)
		}
		var ri dynamic.ResourceInterface = dyn.Resource(m.Resource)
		if o.GetNamespace() != "" {
			ri = dyn.Resource(m.Resource).Namespace(o.GetNamespace())
		}
		if _, err := ri.Apply(t.Context(), o.GetName(), o, metav1.ApplyOptions{FieldManager: "wick-test", Force: true}); err != nil {
			t.Fatalf("apply %s %s/%s: %v", gvk.Kind, o.GetNamespace(), o.GetName(), err)
		}
	}
}

func lastExit(cs corev1.ContainerStatus) string {
	if term := cs.LastTerminationState.Terminated; term != nil {
		return fmt.Sprintf("%s, code %d", term.Reason, term.ExitCode)
	}
	return "none"
}

func podReady(p *corev1.Pod) bool {
	for _, cond := range p.Status.Conditions {
		if cond.Type == corev1.PodReady {
			return cond.Status == corev1.ConditionTrue
		}
	}
	return false
}

// waitAllReady waits until every workload of objs in ns has all its
// replicas, each pod Ready: every container running and passing its
// readiness probe. A container may have restarted on the way (the agents
// and llmgw exit at their start while Redis does not answer yet, as they
// would on any cluster); the restarts are logged.
func waitAllReady(t *testing.T, c *cluster.Cluster, ns string, objs []*unstructured.Unstructured) []corev1.Pod {
	t.Helper()
	want := 0
	for _, o := range objs {
		if o.GetKind() == "Deployment" || o.GetKind() == "StatefulSet" {
			r, found, _ := unstructured.NestedInt64(o.Object, "spec", "replicas")
			if !found {
				r = 1
			}
			want += int(r)
		}
	}
	var pods []corev1.Pod
	var last string
	if err := wait.PollUntilContextTimeout(t.Context(), 500*time.Millisecond, 6*time.Minute, true, func(ctx context.Context) (bool, error) {
		l, err := c.Client.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{})
		if err != nil {
			last = err.Error()
			return false, nil
		}
		pods = l.Items
		var notReady []string
		for _, p := range l.Items {
			if !podReady(&p) {
				notReady = append(notReady, p.Name+" "+string(p.Status.Phase))
			}
		}
		last = fmt.Sprintf("%d of %d pods, not Ready: %v", len(l.Items), want, notReady)
		return len(l.Items) == want && len(notReady) == 0, nil
	}); err != nil {
		ev, _ := c.Client.CoreV1().Events(ns).List(t.Context(), metav1.ListOptions{})
		var msgs []string
		if ev != nil {
			for _, e := range ev.Items {
				if e.Type != corev1.EventTypeNormal {
					msgs = append(msgs, e.InvolvedObject.Name+": "+e.Reason+": "+e.Message)
				}
			}
		}
		for _, p := range pods {
			for _, cs := range p.Status.ContainerStatuses {
				if cs.Ready && cs.RestartCount == 0 {
					continue
				}
				opts := &corev1.PodLogOptions{Container: cs.Name, Previous: cs.RestartCount > 0, TailLines: ptr.To(int64(20))}
				b, _ := c.Client.CoreV1().Pods(ns).GetLogs(p.Name, opts).DoRaw(context.Background())
				msgs = append(msgs, fmt.Sprintf("log of %s/%s:\n%s", p.Name, cs.Name, b))
			}
		}
		t.Fatalf("overlays/dev Ready: %v; %s; warnings:\n%s", err, last, strings.Join(msgs, "\n"))
	}
	for _, p := range pods {
		for _, cs := range p.Status.ContainerStatuses {
			if cs.RestartCount > 0 {
				t.Logf("pod %s: container %s restarted %d times before it was Ready (last exit: %s)", p.Name, cs.Name, cs.RestartCount, lastExit(cs))
			}
		}
	}
	return pods
}

// serviceEndpointPod is the pod behind a ready endpoint of the Service.
func serviceEndpointPod(t *testing.T, c *cluster.Cluster, ns, svc string) string {
	t.Helper()
	pod, err := c.ServiceEndpointPod(t.Context(), ns, svc, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	return pod
}
