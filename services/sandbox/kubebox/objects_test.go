package kubebox

import (
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/rest"
)

func testClient(t *testing.T, cfg Config) *Client {
	t.Helper()
	c, err := New(&rest.Config{Host: "https://127.0.0.1:1"}, cfg)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func testSpec() Spec {
	return Spec{Name: "wick-0123456789abcdef0123", Key: "0123456789abcdef0123", User: "alice", Agent: "a/b",
		Settings: `{"type":"docker"}`, Image: "runtime:1", Workdir: "/workspace", Network: "none",
		Memory: 512 << 20, NanoCPUs: 1_500_000_000, WorkspaceBytes: 1 << 30,
		Env: map[string]string{"B": "2", "A": "1", TokenEnv: "forged"}, DaemonArgs: []string{"-root", "/workspace"}}
}

func TestPodHardening(t *testing.T) {
	c := testClient(t, Config{Namespace: "sb", ManagerID: "m1", DaemonImage: "wick-sandbox:1", RunAs: RunAs{1000, 1001}, RuntimeClass: "gvisor"})
	p := c.Pod(testSpec())
	sp := p.Spec
	if *sp.AutomountServiceAccountToken || *sp.EnableServiceLinks || !*sp.ShareProcessNamespace {
		t.Errorf("service account token %v, service links %v, shared pid namespace %v", *sp.AutomountServiceAccountToken, *sp.EnableServiceLinks, *sp.ShareProcessNamespace)
	}
	if *sp.SecurityContext.RunAsUser != 1000 || *sp.SecurityContext.RunAsGroup != 1001 || *sp.SecurityContext.FSGroup != 1001 || !*sp.SecurityContext.RunAsNonRoot {
		t.Errorf("pod security context %+v", sp.SecurityContext)
	}
	if sp.RuntimeClassName == nil || *sp.RuntimeClassName != "gvisor" {
		t.Errorf("runtime class %v", sp.RuntimeClassName)
	}
	for _, ctr := range append(sp.InitContainers, sp.Containers...) {
		sc := ctr.SecurityContext
		if *sc.AllowPrivilegeEscalation || !*sc.RunAsNonRoot || !slices.Equal(sc.Capabilities.Drop, []corev1.Capability{"ALL"}) ||
			len(sc.Capabilities.Add) > 0 || sc.SeccompProfile.Type != corev1.SeccompProfileTypeRuntimeDefault {
			t.Errorf("container %s security context %+v", ctr.Name, sc)
		}
		if ctr.Resources.Limits.Memory().IsZero() || ctr.Resources.Limits.Cpu().IsZero() {
			t.Errorf("container %s has no limits", ctr.Name)
		}
	}
	box := sp.Containers[0]
	if got := box.Resources.Limits.Cpu().MilliValue(); got != 1500 {
		t.Errorf("cpu limit %dm, want 1500m", got)
	}
	if got := box.Resources.Limits.Memory().Value(); got != 512<<20 {
		t.Errorf("memory limit %d", got)
	}
	if box.Command[0] != BinDir+"/wick-daemon" || box.Command[1] != "-root" {
		t.Errorf("command %v", box.Command)
	}
	// The token comes from the Secret, never from the spec's env.
	var names []string
	for _, e := range box.Env {
		names = append(names, e.Name)
		if e.Name == TokenEnv && (e.ValueFrom == nil || e.ValueFrom.SecretKeyRef.Name != p.Name) {
			t.Errorf("token env %+v", e)
		}
	}
	if !slices.Equal(names, []string{TokenEnv, "A", "B"}) {
		t.Errorf("env names %v", names)
	}
	if *box.SecurityContext.ReadOnlyRootFilesystem {
		t.Error("read-only root without the spec asking")
	}
	if p.Labels[LabelManager] != "m1" || p.Labels[LabelKey] != "0123456789abcdef0123" || p.Annotations[AnnotationAgent] != "a/b" {
		t.Errorf("labels %v annotations %v", p.Labels, p.Annotations)
	}
}

func TestReadOnlyRootGetsTmp(t *testing.T) {
	c := testClient(t, Config{Namespace: "sb", ManagerID: "m1", DaemonImage: "d", RunAs: RunAs{1000, 1000}})
	s := testSpec()
	s.ReadOnly, s.TmpfsMB = true, 16
	p := c.Pod(s)
	if !*p.Spec.Containers[0].SecurityContext.ReadOnlyRootFilesystem {
		t.Fatal("root not read-only")
	}
	for _, v := range p.Spec.Volumes {
		if v.Name == "tmp" {
			if v.EmptyDir == nil || v.EmptyDir.SizeLimit.Value() != 16<<20 {
				t.Fatalf("tmp volume %+v", v)
			}
			return
		}
	}
	t.Fatal("no /tmp volume")
}

func TestPolicyFollowsNetwork(t *testing.T) {
	c := testClient(t, Config{Namespace: "sb", ManagerID: "m1", DaemonImage: "d", RunAs: RunAs{1000, 1000}})
	s := testSpec()
	none := c.Policy(s)
	if len(none.Spec.Ingress) != 0 || len(none.Spec.Egress) != 0 || len(none.Spec.PolicyTypes) != 2 {
		t.Fatalf("network none: %+v", none.Spec)
	}
	s.Network = "bridge"
	bridge := c.Policy(s)
	if len(bridge.Spec.Ingress) != 0 || len(bridge.Spec.Egress) != 2 || bridge.Spec.Egress[1].Ports[0].Port.IntValue() != 53 {
		t.Fatalf("network bridge: %+v", bridge.Spec)
	}
	block := bridge.Spec.Egress[0].To[0].IPBlock
	if block.CIDR != "0.0.0.0/0" || !slices.Contains(block.Except, "169.254.0.0/16") || !slices.Contains(block.Except, "10.0.0.0/8") {
		t.Fatalf("bridge egress %+v", block)
	}
	if got := bridge.Spec.PodSelector.MatchLabels; got[LabelName] != s.Name || got[LabelManager] != "m1" || len(got) != 2 {
		t.Fatalf("selector %v", got)
	}
}

func TestClaimSize(t *testing.T) {
	c := testClient(t, Config{Namespace: "sb", ManagerID: "m1", DaemonImage: "d", RunAs: RunAs{1000, 1000}, StorageClass: "fast"})
	pvc := c.Claim(testSpec())
	if pvc.Name != "ws-wick-0123456789abcdef0123" || *pvc.Spec.StorageClassName != "fast" ||
		pvc.Spec.Resources.Requests.Storage().Value() != 1<<30 {
		t.Fatalf("claim %+v", pvc)
	}
}

func TestConfigRefused(t *testing.T) {
	for name, cfg := range map[string]Config{
		"bad namespace": {Namespace: "Not_A_Label", DaemonImage: "d", RunAs: RunAs{1000, 1000}},
		"no image":      {Namespace: "sb", RunAs: RunAs{1000, 1000}},
		"root":          {Namespace: "sb", DaemonImage: "d", RunAs: RunAs{0, 0}},
	} {
		if _, err := New(&rest.Config{Host: "https://127.0.0.1:1"}, cfg); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
}

func TestParseRunAs(t *testing.T) {
	for in, want := range map[string]RunAs{"1000": {1000, 1000}, "1000:2000": {1000, 2000}} {
		if got, err := ParseRunAs(in); err != nil || got != want {
			t.Errorf("%q: %v %v", in, got, err)
		}
	}
	for _, in := range []string{"0", "0:0", "root", "1000:0", "-1", ""} {
		if _, err := ParseRunAs(in); err == nil {
			t.Errorf("%q accepted", in)
		}
	}
}

// TestEndpointTokenInTheSecret: the endpoints' token is in the Secret and
// reaches the variables that carry it from there, never as a value in the
// pod's spec.
func TestEndpointTokenInTheSecret(t *testing.T) {
	c := testClient(t, Config{Namespace: "sb", ManagerID: "m1", DaemonImage: "wick-sandbox:1", RunAs: RunAs{1000, 1001}})
	s := testSpec()
	s.EndpointToken = "e0e0"
	s.Env = map[string]string{"OPENAI_API_KEY": "e0e0", "OPENAI_BASE_URL": "http://127.0.0.1:47100/v1"}
	s.SecretEnv = []string{"OPENAI_API_KEY"}
	if got := string(c.Secret(s, "d0d0").Data[EndpointTokenKey]); got != "e0e0" {
		t.Errorf("secret's endpoint token %q", got)
	}
	var key, base *corev1.EnvVar
	for i, e := range c.Pod(s).Spec.Containers[0].Env {
		switch e.Name {
		case "OPENAI_API_KEY":
			key = &c.Pod(s).Spec.Containers[0].Env[i]
		case "OPENAI_BASE_URL":
			base = &c.Pod(s).Spec.Containers[0].Env[i]
		}
	}
	if key == nil || key.Value != "" || key.ValueFrom == nil || key.ValueFrom.SecretKeyRef.Key != EndpointTokenKey || key.ValueFrom.SecretKeyRef.Name != s.Name {
		t.Errorf("OPENAI_API_KEY %+v, want it from the Secret's %s", key, EndpointTokenKey)
	}
	if base == nil || base.Value != "http://127.0.0.1:47100/v1" {
		t.Errorf("OPENAI_BASE_URL %+v", base)
	}
	if _, ok := c.Secret(testSpec(), "d0d0").Data[EndpointTokenKey]; ok {
		t.Error("a sandbox without endpoints has an endpoint token")
	}
}
