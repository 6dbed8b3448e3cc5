package k8s

import (
	"fmt"
	"os"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// flagsOf are the flags of every binary, read once by TestMain from the
// binaries it built into binDir.
var (
	flagsOf map[string]binaryFlags
	binDir  string
)

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "wick-k8s-bin-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	binDir = dir
	flagsOf, err = buildBinaries(dir)
	if err != nil {
		os.RemoveAll(dir)
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// overlays are the kustomizations to apply, with their own rules.
var overlays = []struct {
	dir   string
	check func(*problems, *rendered)
}{
	{"overlays/dev", checkDev},
	{"overlays/prod", checkProd},
	{"overlays/prod-docker", checkProd},
}

// allProblems is every rule applied to an overlay.
func allProblems(r *rendered, overlay func(*problems, *rendered)) problems {
	p := check(r, flagsOf)
	checkRollout(&p, r)
	overlay(&p, r)
	return p
}

func TestOverlays(t *testing.T) {
	for _, o := range overlays {
		t.Run(o.dir, func(t *testing.T) {
			t.Parallel()
			r, err := render(o.dir)
			if err != nil {
				t.Fatal(err)
			}
			if len(r.workloads()) < 4 {
				t.Fatalf("%d workloads, want the four services at least", len(r.workloads()))
			}
			for _, msg := range allProblems(r, o.check) {
				t.Error(msg)
			}
		})
	}
}

// TestFlagsRead guards the usage parser: were it to read nothing, no flag
// would be checked.
func TestFlagsRead(t *testing.T) {
	for bin, want := range map[string][]string{
		"wick-gateway": {"agent-addr", "tokens-file", "grpc-allow-plaintext", "drain-delay"},
		"wick-agent":   {"default-backend", "redis-addr", "sandbox-addr"},
		"wick-sandbox": {"allow-local", "daemon-bin", "state-dir", "container-engine", "kube-daemon-image"},
		"wick-llmgw":   {"http-addr", "http-token", "secrets-dir"},
	} {
		for _, f := range want {
			if _, ok := flagsOf[bin][f]; !ok {
				t.Errorf("%s: flag -%s not read from its usage", bin, f)
			}
		}
	}
	if !flagsOf["wick-gateway"]["grpc-allow-plaintext"].Bool || flagsOf["wick-gateway"]["agent-addr"].Bool {
		t.Error("bool flags told apart wrongly")
	}
	if got := flagsOf["wick-agent"]["drain-delay"].Default; got != "2s" {
		t.Errorf("wick-agent -drain-delay default %q, want 2s", got)
	}
}

// TestChecksCatchBreakage breaks prod one way at a time and expects the
// rule it breaks to be reported: each rule can fail.
func TestChecksCatchBreakage(t *testing.T) {
	type breakage struct {
		name   string
		mutate func(*rendered)
		want   string
	}
	cases := []breakage{
		{"unknown flag", func(r *rendered) { addArg(r, "agent", "-no-such-flag=1") }, "flag -no-such-flag is not a flag of wick-agent"},
		{"unknown variable", func(r *rendered) { addEnv(r, "llmgw", corev1.EnvVar{Name: "WICK_NO_SUCH", Value: "x"}) }, "variable WICK_NO_SUCH sets no flag"},
		{"flag without value", func(r *rendered) { addArg(r, "agent", "-redis-addr") }, "flag -redis-addr takes a value"},
		{"allow-local", func(r *rendered) { addArg(r, "sandbox", "-allow-local") }, "-allow-local lets sandboxes run"},
		{"local backend", func(r *rendered) { setArg(r, "agent", "default-backend", "local") }, "-default-backend=local"},
		{"loopback listener", func(r *rendered) { setArg(r, "llmgw", "grpc-addr", "127.0.0.1:7003") }, `-grpc-addr="127.0.0.1:7003": want :PORT`},
		{"no limits", func(r *rendered) { container(r, "gateway").Resources.Limits = nil }, "no memory limit"},
		{"http probe", func(r *rendered) {
			container(r, "agent").ReadinessProbe.ProbeHandler = corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{Port: intstr.FromInt32(7001)}}
		}, "readiness probe must be grpc:"},
		{"probe on the TLS port", func(r *rendered) {
			addArg(r, "agent", "-tls-cert=/etc/wick/tls/tls.crt")
			addArg(r, "agent", "-health-addr=:7101")
		}, "probe on port 7001, want 7101"},
		{"root", func(r *rendered) {
			container(r, "agent").SecurityContext.RunAsNonRoot = nil
			r.deployment("agent").Spec.Template.Spec.SecurityContext.RunAsNonRoot = nil
		}, "runAsNonRoot must be true"},
		{"writable root", func(r *rendered) { f := false; container(r, "llmgw").SecurityContext.ReadOnlyRootFilesystem = &f }, "readOnlyRootFilesystem must be true"},
		{"capabilities", func(r *rendered) { container(r, "llmgw").SecurityContext.Capabilities.Drop = nil }, "capabilities must drop ALL"},
		{"escalation", func(r *rendered) { container(r, "gateway").SecurityContext.AllowPrivilegeEscalation = nil }, "allowPrivilegeEscalation must be false"},
		{"privileged", func(r *rendered) { yes := true; container(r, "agent").SecurityContext.Privileged = &yes }, "agent: privileged"},
		{"short grace", func(r *rendered) {
			g := int64(20)
			r.deployment("agent").Spec.Template.Spec.TerminationGracePeriodSeconds = &g
		}, "terminationGracePeriodSeconds 20 must be more than"},
		{"key as an argument", func(r *rendered) { addArg(r, "llmgw", "-http-token=abc") }, "-http-token is a secret"},
		{"key in a ConfigMap", func(r *rendered) { r.ConfigMaps[0].Data["OPENAI_API_KEY"] = "sk-x" }, "key OPENAI_API_KEY looks secret"},
		{"key as a value", func(r *rendered) {
			addEnv(r, "llmgw", corev1.EnvVar{Name: "OPENAI_API_KEY", Value: "sk-x"})
		}, "variable OPENAI_API_KEY looks secret"},
		{"a Secret in the manifests", func(r *rendered) { r.Secrets = append(r.Secrets, &corev1.Secret{}) }, "Secrets are created in the cluster"},
		{"no identity key", func(r *rendered) { dropEnv(r, "sandbox", "WICK_IDENTITY_KEY") }, "needs WICK_IDENTITY_KEY"},
		{"no tokens", func(r *rendered) { dropArg(r, "gateway", "tokens-file") }, "no bearer tokens"},
		{"open llmgw HTTP API", func(r *rendered) { dropEnv(r, "llmgw", "WICK_HTTP_TOKEN") }, "needs WICK_HTTP_TOKEN from a Secret"},
		{"no telemetry", func(r *rendered) { container(r, "agent").EnvFrom = nil }, "no OTEL_EXPORTER_OTLP_ENDPOINT"},
		{"not headless", func(r *rendered) { r.service("agent-headless", "wick").Spec.ClusterIP = "" }, "is not headless"},
		{"wrong address form", func(r *rendered) { setArg(r, "gateway", "agent-addr", "agent:7001") }, `"agent:7001": want dns:///`},
		{"wrong port", func(r *rendered) {
			setArg(r, "agent", "llm-addr", "dns:///llmgw-headless.wick.svc.cluster.local:7013")
		}, "Service llmgw-headless has no port 7013"},
		{"agents ×2", func(r *rendered) { n := int32(2); r.deployment("agent").Spec.Replicas = &n }, "replicas 2, want 3"},
		{"outside the namespace", func(r *rendered) { r.PDBs[0].Namespace = "" }, `namespace "", want "wick"`},
		{"no PDB", func(r *rendered) { r.PDBs = nil }, "no PodDisruptionBudget"},
		{"no HPA", func(r *rendered) { r.HPAs = nil }, "no HorizontalPodAutoscaler"},
		{"surge by stopping", func(r *rendered) {
			one := intstr.FromInt32(1)
			r.deployment("agent").Spec.Strategy.RollingUpdate.MaxUnavailable = &one
		}, "maxUnavailable: 0"},
		{"no metrics listener", func(r *rendered) { dropArg(r, "sandbox", "metrics-addr") }, "-metrics-addr is not set"},
		{"metrics port not scraped", func(r *rendered) { r.deployment("agent").Spec.Template.Annotations["prometheus.io/port"] = "9090" }, `want "true", "9461", "/metrics"`},
		{"usage not recorded", func(r *rendered) { dropEnv(r, "llmgw", "WICK_USAGE_REDIS_ADDR") }, "no -usage-redis-addr"},
		{"usage in another Redis", func(r *rendered) {
			dropEnv(r, "llmgw", "WICK_USAGE_REDIS_ADDR")
			addEnv(r, "llmgw", corev1.EnvVar{Name: "WICK_USAGE_REDIS_ADDR", Value: "redis.elsewhere:6379"})
		}, "is not the agents' -redis-addr"},
		{"metrics closed to Prometheus", func(r *rendered) { dropPolicy(r, "metrics-ingress") }, "prometheus → agent TCP/9461 is refused, want allowed"},
		{"no default deny", func(r *rendered) { dropPolicy(r, "default-deny") }, "no default-deny NetworkPolicy"},
		{"llmgw open to anyone", func(r *rendered) { policy(r, "llmgw").Spec.Ingress[0].From = nil }, "outside → llmgw TCP/7013 is allowed, want refused"},
		{"sandbox open to anyone", func(r *rendered) { policy(r, "sandbox").Spec.Ingress[0].From = nil }, "outside → sandbox TCP/7002 is allowed"},
		{"gateway egress open", func(r *rendered) {
			policy(r, "gateway").Spec.Egress = append(policy(r, "gateway").Spec.Egress, networkingv1.NetworkPolicyEgressRule{})
		}, "gateway → outside TCP/443 is allowed"},
		{"no sandbox policy", func(r *rendered) { dropPolicy(r, "sandbox") }, "agent → sandbox TCP/7002 is refused, want allowed"},
		{"llmgw egress to private networks", func(r *rendered) { policy(r, "llmgw").Spec.Egress[0].To[0].IPBlock.Except = nil }, "llmgw → private TCP/443 is allowed"},
		{"engines scaled, list not", func(r *rendered) { n := int32(4); r.statefulSet("sandbox").Spec.Replicas = &n }, "names 3 sandbox services but StatefulSet sandbox has 4 replicas"},
		{"engines out of order", func(r *rendered) {
			setEngines(r, "sandbox-1.sandbox-headless.wick.svc.cluster.local:7002,sandbox-0.sandbox-headless.wick.svc.cluster.local:7002,sandbox-2.sandbox-headless.wick.svc.cluster.local:7002")
		}, "element 0 is pod sandbox-1"},
		{"engines by a Service name", func(r *rendered) { setEngines(r, "dns:///sandbox-headless.wick.svc.cluster.local:7002") }, "want <statefulset>-<i>"},
		{"engines under another Service", func(r *rendered) {
			setEngines(r, "sandbox-0.agent-headless.wick.svc.cluster.local:7002,sandbox-1.agent-headless.wick.svc.cluster.local:7002,sandbox-2.agent-headless.wick.svc.cluster.local:7002")
		}, `named under Service "sandbox-headless"`},
		{"a variable from the node", func(r *rendered) {
			addEnv(r, "sandbox", corev1.EnvVar{Name: "WICK_IDLE_TIMEOUT", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: "spec.nodeName"}}})
		}, "only a value, a secretKeyRef or the pod's name"},
	}
	// The sandbox engine's own rules, each on the overlay that runs it.
	kubeCases := []breakage{
		{"daemon image not the service's", func(r *rendered) {
			dropEnv(r, "sandbox", "WICK_KUBE_DAEMON_IMAGE")
			addEnv(r, "sandbox", corev1.EnvVar{Name: "WICK_KUBE_DAEMON_IMAGE", Value: "registry.example.com/wick/wick-sandbox:old"})
		}, "is not the service's own image"},
		{"sandboxes as root", func(r *rendered) { setArg(r, "sandbox", "kube-run-as", "0:0") }, "never root"},
		{"sandboxes beside the suite", func(r *rendered) { setArg(r, "sandbox", "kube-namespace", "wick") }, "is the suite's own"},
		{"a kubeconfig file", func(r *rendered) { addArg(r, "sandbox", "-kubeconfig=/etc/kube/config") }, "in-cluster configuration"},
		{"engine as root", func(r *rendered) {
			root := int64(0)
			container(r, "sandbox").SecurityContext.RunAsUser = &root
		}, "sandbox: runAsUser must be set and not 0"},
		{"engine with a capability", func(r *rendered) {
			container(r, "sandbox").SecurityContext.Capabilities.Add = []corev1.Capability{"CHOWN"}
		}, "capabilities added [CHOWN], want []"},
		{"engine without its token", func(r *rendered) {
			no := false
			r.statefulSet("sandbox").Spec.Template.Spec.AutomountServiceAccountToken = &no
		}, "automountServiceAccountToken must be true"},
		{"engine under another account", func(r *rendered) { r.statefulSet("sandbox").Spec.Template.Spec.ServiceAccountName = "" }, "want wick-sandbox"},
		{"a token on the agent", func(r *rendered) {
			yes := true
			r.deployment("agent").Spec.Template.Spec.AutomountServiceAccountToken = &yes
		}, "Deployment/agent: automountServiceAccountToken must be false"},
		{"the engine's account on the agent", func(r *rendered) {
			r.deployment("agent").Spec.Template.Spec.ServiceAccountName = sandboxAccount
		}, "only its pods take that account's rights"},
		{"Role too wide", func(r *rendered) {
			ro := r.role(sandboxAccount, "wick-sandboxes")
			ro.Rules[0].Verbs = append(ro.Rules[0].Verbs, "update")
		}, "may map["},
		{"Role short", func(r *rendered) { r.role(sandboxAccount, "wick-sandboxes").Rules[1].Verbs = []string{"create"} }, "may map["},
		{"bound in the suite namespace", func(r *rendered) { r.RoleBindings[0].Namespace = "wick" }, "binds wick-sandbox in namespace \"wick\""},
		{"sandbox namespace not restricted", func(r *rendered) {
			for _, n := range r.Namespaces {
				if n.Name == "wick-sandboxes" {
					n.Labels["pod-security.kubernetes.io/enforce"] = "baseline"
				}
			}
		}, "pod-security.kubernetes.io/enforce is \"baseline\", want restricted"},
		{"sandboxes open by default", func(r *rendered) {
			r.Policies = slices.DeleteFunc(r.Policies, func(p *networkingv1.NetworkPolicy) bool { return p.Namespace == "wick-sandboxes" })
		}, "no default-deny NetworkPolicy: a sandbox"},
		{"daemon on the pod network", func(r *rendered) {
			r.Policies = append(r.Policies, &networkingv1.NetworkPolicy{
				ObjectMeta: metav1.ObjectMeta{Name: "open", Namespace: "wick-sandboxes"},
				Spec: networkingv1.NetworkPolicySpec{
					PolicyTypes: []networkingv1.PolicyType{networkingv1.PolicyTypeIngress},
					Ingress:     []networkingv1.NetworkPolicyIngressRule{{}},
				},
			})
		}, "outside → sandbox-pod TCP/7070 is allowed"},
		{"API server closed", func(r *rendered) { policy(r, "sandbox").Spec.Egress = policy(r, "sandbox").Spec.Egress[:1] }, "sandbox → apiserver TCP/6443 is refused"},
	}
	dockerCases := []breakage{
		{"no daemon binary", func(r *rendered) { dropArg(r, "sandbox", "daemon-bin") }, "-daemon-bin is not set"},
		{"engine off its node pool", func(r *rendered) { r.statefulSet("sandbox").Spec.Template.Spec.NodeSelector = nil }, "privileged container outside"},
		{"engine registry on a private network", func(r *rendered) { policy(r, "sandbox").Spec.Egress[1].To[0].IPBlock.Except = nil }, "sandbox → private TCP/443 is allowed"},
	}
	for _, o := range []struct {
		dir   string
		cases []breakage
	}{
		{"overlays/prod", slices.Concat(cases, kubeCases)},
		{"overlays/prod-docker", dockerCases},
	} {
		for _, tc := range o.cases {
			t.Run(o.dir+"/"+tc.name, func(t *testing.T) {
				t.Parallel()
				r, err := render(o.dir)
				if err != nil {
					t.Fatal(err)
				}
				if p := allProblems(r, checkProd); len(p) != 0 {
					t.Fatalf("%s has problems before breaking it: %q", o.dir, p)
				}
				tc.mutate(r)
				p := allProblems(r, checkProd)
				if !slices.ContainsFunc(p, func(s string) bool { return strings.Contains(s, tc.want) }) {
					t.Errorf("no problem says %q; got %q", tc.want, p)
				}
			})
		}
	}
}

// container returns the suite container of workload name.
func container(r *rendered, name string) *corev1.Container {
	for _, w := range r.workloads() {
		if w.Name == name {
			for i := range w.Pod.Spec.Containers {
				if _, ok := flagsOf[imageName(w.Pod.Spec.Containers[i].Image)]; ok {
					return &w.Pod.Spec.Containers[i]
				}
			}
		}
	}
	panic("no suite container in workload " + name)
}

func addArg(r *rendered, name, arg string) {
	c := container(r, name)
	c.Args = append(c.Args, arg)
}

func dropArg(r *rendered, name, flag string) {
	c := container(r, name)
	c.Args = slices.DeleteFunc(c.Args, func(a string) bool { return strings.HasPrefix(a, "-"+flag+"=") || a == "-"+flag })
}

func setArg(r *rendered, name, flag, value string) {
	dropArg(r, name, flag)
	addArg(r, name, "-"+flag+"="+value)
}

func addEnv(r *rendered, name string, e corev1.EnvVar) {
	c := container(r, name)
	c.Env = append(c.Env, e)
}

func dropEnv(r *rendered, name, env string) {
	c := container(r, name)
	c.Env = slices.DeleteFunc(c.Env, func(e corev1.EnvVar) bool { return e.Name == env })
}

// setEngines sets the list of sandbox services the agents place sandboxes on.
func setEngines(r *rendered, list string) {
	for _, cm := range r.ConfigMaps {
		if _, ok := cm.Data["WICK_SANDBOX_ADDR"]; ok {
			cm.Data["WICK_SANDBOX_ADDR"] = list
			return
		}
	}
	panic("no ConfigMap sets WICK_SANDBOX_ADDR")
}

func policy(r *rendered, name string) *networkingv1.NetworkPolicy {
	for _, p := range r.Policies {
		if p.Name == name {
			return p
		}
	}
	panic("no NetworkPolicy " + name)
}

func dropPolicy(r *rendered, name string) {
	r.Policies = slices.DeleteFunc(r.Policies, func(p *networkingv1.NetworkPolicy) bool { return p.Name == name })
}
