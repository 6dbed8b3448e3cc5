package k8s

import (
	"fmt"
	"net"
	"net/url"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"

	"github.com/wick-agent/wick/platform/config"
)

// serviceUser is the user of the wick images (deploy/images): nonroot.
const serviceUser = 65532

// gatewayHTTPShutdown is wick-gateway's HTTP server's own bound on its
// shutdown (services/gateway DefaultShutdownTimeout), which -shutdown-timeout
// does not set.
const gatewayHTTPShutdown = 15 * time.Second

// rootContainers may run as root, with exactly these capabilities added:
// the sandbox service gives workspace volumes and daemon socket directories
// to the sandbox user on the engine's disk (docs/sandbox.md).
var rootContainers = map[string][]corev1.Capability{
	"sandbox/sandbox": {"CHOWN", "DAC_OVERRIDE", "FOWNER"},
}

// privilegedContainers may be privileged: the Docker-in-Docker engine.
var privilegedContainers = map[string]bool{"sandbox/dockerd": true}

// writableRoot may write their root file system: dockerd writes /etc/docker,
// /run and more outside its volumes.
var writableRoot = map[string]bool{"sandbox/dockerd": true}

// secretFlags carry secrets: never an argument (visible in the pod spec and
// `ps`), only a variable from a Secret.
var secretFlags = []string{"identity-key", "tokens", "http-token", "llm-http-token"}

// secretName looks like the name of something secret, in a ConfigMap or a
// plain variable.
var secretName = regexp.MustCompile(`(?i)(^|_)(KEY|TOKEN|TOKENS|SECRET|PASSWORD|CREDENTIALS?)($|_)|PRIVATE|API_KEY`)

// addressFlags name another service's gRPC address, and the binary it is.
var addressFlags = map[string]string{
	"agent-addr":   "wick-agent",
	"llm-addr":     "wick-llmgw",
	"sandbox-addr": "wick-sandbox",
}

// headlessTarget is the form of an address flag in a cluster: a headless
// Service, fully qualified, through gRPC's DNS resolver.
var headlessTarget = regexp.MustCompile(`^dns:///([a-z0-9-]+)\.([a-z0-9-]+)\.svc\.cluster\.local:(\d+)$`)

// service is a container that runs one of the suite's binaries.
type service struct {
	W      workload
	C      corev1.Container
	Binary string
	Flags  binaryFlags
	Set    map[string]setting
}

// value returns the flag's value as the container sets it, else its default.
func (s service) value(flag string) string {
	if v, ok := s.Set[flag]; ok {
		return v.Value
	}
	return s.Flags[flag].Default
}

func (s service) duration(flag string) (time.Duration, error) {
	d, err := time.ParseDuration(s.value(flag))
	if err != nil {
		return 0, fmt.Errorf("-%s: %w", flag, err)
	}
	return d, nil
}

// problems collects what is wrong, each prefixed with where.
type problems []string

func (p *problems) add(where, format string, args ...any) {
	*p = append(*p, where+": "+fmt.Sprintf(format, args...))
}

// check applies every rule to a rendered overlay and returns what breaks them.
func check(r *rendered, bins map[string]binaryFlags) problems {
	var p problems
	if len(r.Secrets) > 0 {
		for _, s := range r.Secrets {
			p.add("Secret/"+s.Name, "Secrets are created in the cluster, never kept in the manifests")
		}
	}
	for _, cm := range r.ConfigMaps {
		for k, v := range cm.Data {
			if secretName.MatchString(k) || strings.Contains(v, "PRIVATE KEY") {
				p.add("ConfigMap/"+cm.Name, "key %s looks secret: keep it in a Secret", k)
			}
		}
	}
	checkNamespaces(&p, r)
	var svcs []service
	for _, w := range r.workloads() {
		checkPod(&p, w)
		for _, c := range w.Pod.Spec.Containers {
			flags, ok := bins[imageName(c.Image)]
			if !ok {
				continue
			}
			set, ps := settingsOf(c, flags, r)
			for _, msg := range ps {
				p.add(w.String()+" "+c.Name, "%s", msg)
			}
			svcs = append(svcs, service{W: w, C: c, Binary: imageName(c.Image), Flags: flags, Set: set})
		}
	}
	for _, s := range svcs {
		checkService(&p, s, r, svcs)
	}
	return p
}

// checkPod applies the rules every container has, the suite's or not.
func checkPod(p *problems, w workload) {
	spec := w.Pod.Spec
	if spec.TerminationGracePeriodSeconds == nil {
		p.add(w.String(), "no terminationGracePeriodSeconds")
	}
	kube := onKubeEngine(spec)
	switch {
	case kube:
		if spec.AutomountServiceAccountToken == nil || !*spec.AutomountServiceAccountToken {
			p.add(w.String(), "automountServiceAccountToken must be true: the Kubernetes sandbox engine calls the API server with its account's token")
		}
		if spec.ServiceAccountName != sandboxAccount {
			p.add(w.String(), "serviceAccountName %q, want %s, the account its Role is bound to", spec.ServiceAccountName, sandboxAccount)
		}
	case spec.AutomountServiceAccountToken == nil || *spec.AutomountServiceAccountToken:
		p.add(w.String(), "automountServiceAccountToken must be false: nothing here but the Kubernetes sandbox engine calls the API server")
	case spec.ServiceAccountName == sandboxAccount:
		p.add(w.String(), "serviceAccountName %s is the sandbox engine's: only its pods take that account's rights", sandboxAccount)
	}
	all := append(append([]corev1.Container(nil), spec.InitContainers...), spec.Containers...)
	for _, c := range all {
		where := w.String() + " " + c.Name
		key := w.Name + "/" + c.Name
		if kube {
			// The exemptions are the Docker engine's: without it, none holds.
			key = ""
		}
		res := c.Resources
		for _, name := range []corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory} {
			if _, ok := res.Requests[name]; !ok {
				p.add(where, "no %s request", name)
			}
			if _, ok := res.Limits[name]; !ok {
				p.add(where, "no %s limit", name)
			}
		}
		if c.LivenessProbe == nil || (c.ReadinessProbe == nil && c.StartupProbe == nil) {
			p.add(where, "needs a liveness probe and a readiness (or startup) probe")
		}
		checkSecurity(p, where, key, spec.SecurityContext, c.SecurityContext)
		for _, e := range c.Env {
			if e.ValueFrom == nil && secretName.MatchString(e.Name) {
				p.add(where, "variable %s looks secret: give it from a Secret with secretKeyRef", e.Name)
			}
			if e.ValueFrom != nil && e.ValueFrom.ConfigMapKeyRef != nil && secretName.MatchString(e.Name) {
				p.add(where, "variable %s looks secret and comes from a ConfigMap", e.Name)
			}
		}
	}
	if w.Pod.Spec.SecurityContext == nil || w.Pod.Spec.SecurityContext.SeccompProfile == nil ||
		w.Pod.Spec.SecurityContext.SeccompProfile.Type != corev1.SeccompProfileTypeRuntimeDefault {
		p.add(w.String(), "pod seccompProfile must be RuntimeDefault")
	}
}

// checkSecurity checks one container's effective security context: the
// container's fields, else the pod's.
func checkSecurity(p *problems, where, key string, pod *corev1.PodSecurityContext, c *corev1.SecurityContext) {
	if c == nil {
		p.add(where, "no securityContext")
		return
	}
	if privilegedContainers[key] {
		if c.Privileged == nil || !*c.Privileged {
			p.add(where, "listed as privileged but is not: remove it from privilegedContainers")
		}
		return
	}
	if c.Privileged != nil && *c.Privileged {
		p.add(where, "privileged")
	}
	if c.AllowPrivilegeEscalation == nil || *c.AllowPrivilegeEscalation {
		p.add(where, "allowPrivilegeEscalation must be false")
	}
	if !writableRoot[key] && (c.ReadOnlyRootFilesystem == nil || !*c.ReadOnlyRootFilesystem) {
		p.add(where, "readOnlyRootFilesystem must be true")
	}
	if c.Capabilities == nil || !slices.Equal(c.Capabilities.Drop, []corev1.Capability{"ALL"}) {
		p.add(where, "capabilities must drop ALL")
	}
	var added []corev1.Capability
	if c.Capabilities != nil {
		added = slices.Sorted(slices.Values(c.Capabilities.Add))
	}
	if !slices.Equal(added, rootContainers[key]) {
		p.add(where, "capabilities added %v, want %v", added, rootContainers[key])
	}
	seccomp := c.SeccompProfile
	if seccomp == nil && pod != nil {
		seccomp = pod.SeccompProfile
	}
	if seccomp == nil || seccomp.Type != corev1.SeccompProfileTypeRuntimeDefault {
		p.add(where, "seccompProfile must be RuntimeDefault")
	}
	nonRoot, user := c.RunAsNonRoot, c.RunAsUser
	if nonRoot == nil && pod != nil {
		nonRoot = pod.RunAsNonRoot
	}
	if user == nil && pod != nil {
		user = pod.RunAsUser
	}
	if _, root := rootContainers[key]; root {
		if user == nil || *user != 0 {
			p.add(where, "listed as root but does not run as user 0: remove it from rootContainers")
		}
		return
	}
	if nonRoot == nil || !*nonRoot {
		p.add(where, "runAsNonRoot must be true")
	}
	if user == nil || *user == 0 {
		p.add(where, "runAsUser must be set and not 0")
	}
}

// checkService applies the rules of a container that runs a suite binary.
func checkService(p *problems, s service, r *rendered, all []service) {
	where := s.W.String() + " " + s.C.Name
	if s.C.SecurityContext != nil && s.C.SecurityContext.RunAsUser != nil && *s.C.SecurityContext.RunAsUser != serviceUser {
		if _, root := rootContainers[s.W.Name+"/"+s.C.Name]; !root {
			p.add(where, "runAsUser %d, want the image's user %d", *s.C.SecurityContext.RunAsUser, serviceUser)
		}
	}
	// Secrets only from Secrets, and the identity key everywhere: without it
	// a service makes up a random key and refuses every other's calls.
	for _, f := range secretFlags {
		if v, ok := s.Set[f]; ok && v.Secret == nil {
			p.add(where, "-%s is a secret: give %s from a Secret (secretKeyRef)", f, config.EnvName(f))
		}
	}
	if v, ok := s.Set["identity-key"]; !ok || v.Secret == nil {
		p.add(where, "needs WICK_IDENTITY_KEY from the Secret wick-identity")
	}
	// Listen addresses: the binaries default to loopback.
	grpcPort := listenPort(p, where, s, "grpc-addr")
	if grpcPort != 0 && !hasPort(s.C, "grpc", grpcPort) {
		p.add(where, "-grpc-addr port %d is not its containerPort named grpc", grpcPort)
	}
	if _, ok := s.Flags["http-addr"]; ok {
		if port := listenPort(p, where, s, "http-addr"); port != 0 && !hasPort(s.C, "http", port) {
			p.add(where, "-http-addr port %d is not its containerPort named http", port)
		}
	}
	// Metrics: on a port of their own, beyond loopback, named for the
	// NetworkPolicies and announced to Prometheus's pod discovery.
	if port := listenPort(p, where, s, "metrics-addr"); port != 0 {
		if !hasPort(s.C, "metrics", port) {
			p.add(where, "-metrics-addr port %d is not its containerPort named metrics", port)
		}
		a := s.W.Pod.Annotations
		if a["prometheus.io/scrape"] != "true" || a["prometheus.io/port"] != strconv.Itoa(int(port)) || a["prometheus.io/path"] != "/metrics" {
			p.add(where, "pod annotations prometheus.io/scrape, port, path are %q, %q, %q; want \"true\", \"%d\", \"/metrics\"",
				a["prometheus.io/scrape"], a["prometheus.io/port"], a["prometheus.io/path"], port)
		}
	}
	// Probes: gRPC health, on -health-addr when the gRPC port speaks TLS
	// (the kubelet's probe cannot).
	probePort := grpcPort
	if s.value("tls-cert") != "" || (s.Binary == "wick-gateway" && s.value("grpc-tls-cert") != "") {
		probePort = listenPort(p, where, s, "health-addr")
	}
	for name, pr := range map[string]*corev1.Probe{"readiness": s.C.ReadinessProbe, "liveness": s.C.LivenessProbe} {
		if pr == nil || pr.GRPC == nil {
			p.add(where, "%s probe must be grpc:", name)
			continue
		}
		if pr.GRPC.Port != probePort {
			p.add(where, "%s probe on port %d, want %d", name, pr.GRPC.Port, probePort)
		}
	}
	checkGrace(p, where, s)
	// Telemetry.
	if v, ok := envValue(s.C, "OTEL_EXPORTER_OTLP_ENDPOINT", r); !ok || v == "" {
		p.add(where, "no OTEL_EXPORTER_OTLP_ENDPOINT")
	}
	for flag, binary := range addressFlags {
		v, ok := s.Set[flag]
		if !ok {
			continue
		}
		if flag == "sandbox-addr" && s.value("sandbox-placement") == "rendezvous" {
			checkEngines(p, where+" -"+flag, v.Value, r, all)
			continue
		}
		checkTarget(p, where+" -"+flag, v.Value, binary, r, all)
	}
	switch s.Binary {
	case "wick-gateway":
		_, tokens := s.Set["tokens"]
		if !tokens && s.value("verifier-url") == "" && !fileFromSecret(s, s.value("tokens-file")) {
			p.add(where, "no bearer tokens (-tokens-file from a Secret volume, WICK_TOKENS or -verifier-url): every request would act as one user")
		}
		if u := s.value("llm-http-addr"); u != "" {
			checkURL(p, where+" -llm-http-addr", u, "wick-llmgw", "http-addr", r, all)
			if v, ok := s.Set["llm-http-token"]; !ok || v.Secret == nil {
				p.add(where, "-llm-http-addr without WICK_LLM_HTTP_TOKEN from a Secret: llmgw refuses its calls")
			}
		}
	case "wick-llmgw":
		checkUsageRedis(p, where, s, all)
		if host, _, _ := net.SplitHostPort(s.value("http-addr")); s.value("http-addr") != "" && !isLoopback(host) {
			if v, ok := s.Set["http-token"]; !ok || v.Secret == nil {
				p.add(where, "-http-addr beyond loopback needs WICK_HTTP_TOKEN from a Secret")
			}
		}
	case "wick-agent":
		if got := s.value("default-backend"); got != "docker" {
			p.add(where, "-default-backend=%s: wick-sandbox refuses local sandboxes, so tools would fail PermissionDenied; want docker", got)
		}
	case "wick-sandbox":
		for _, f := range []string{"allow-local", "single-user", "local-fallback"} {
			if b, _ := strconv.ParseBool(s.value(f)); b {
				p.add(where, "-%s lets sandboxes run on the service's own pod", f)
			}
		}
		if engineOf(s.C) == kubeEngine {
			checkKubeEngine(p, where, s, r)
			break
		}
		if s.value("default-type") != "docker" {
			p.add(where, "-default-type=%s, want docker", s.value("default-type"))
		}
		for _, f := range []string{"daemon-bin", "wickfs-bin"} {
			if s.value(f) == "" {
				p.add(where, "-%s is not set: every Docker sandbox would fail FailedPrecondition", f)
			}
		}
	}
}

// checkUsageRedis checks that llmgw records its HTTP APIs' usage in the
// agents' Redis (their -redis-addr), from the same source, where GET /usage
// and the budgets read it.
func checkUsageRedis(p *problems, where string, s service, all []service) {
	u, ok := s.Set["usage-redis-addr"]
	if !ok {
		p.add(where, "no -usage-redis-addr: calls through the HTTP APIs would not count in users' usage")
		return
	}
	for _, a := range all {
		if a.Binary != "wick-agent" {
			continue
		}
		r, ok := a.Set["redis-addr"]
		same := ok && u.Value == r.Value && (u.Secret == nil) == (r.Secret == nil)
		if same && u.Secret != nil {
			same = u.Secret.Name == r.Secret.Name && u.Secret.Key == r.Secret.Key
		}
		if !same {
			p.add(where, "-usage-redis-addr (%s) is not the agents' -redis-addr (%s)", describe(u), describe(r))
		}
	}
}

func describe(v setting) string {
	if v.Secret != nil {
		return "Secret " + v.Secret.Name + " key " + v.Secret.Key
	}
	return strconv.Quote(v.Value)
}

// listenPort checks that flag is an explicit ":port" (all interfaces) and
// returns the port.
func listenPort(p *problems, where string, s service, flag string) int32 {
	v, ok := s.Set[flag]
	if !ok {
		p.add(where, "-%s is not set: the binary's default (%q) is loopback or unchosen", flag, s.Flags[flag].Default)
		return 0
	}
	host, port, err := net.SplitHostPort(v.Value)
	n, perr := strconv.ParseUint(port, 10, 16)
	if err != nil || perr != nil || n == 0 || isLoopback(host) {
		p.add(where, "-%s=%q: want :PORT", flag, v.Value)
		return 0
	}
	return int32(n)
}

func isLoopback(host string) bool {
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

func hasPort(c corev1.Container, name string, port int32) bool {
	for _, cp := range c.Ports {
		if cp.Name == name && cp.ContainerPort == port {
			return true
		}
	}
	return false
}

// checkGrace: the pod must outlive the binary's own shutdown: the preStop
// wait, then NOT_SERVING for -drain-delay, then a GracefulStop bounded by
// -shutdown-timeout. A shorter grace period SIGKILLs it midway.
func checkGrace(p *problems, where string, s service) {
	drain, err1 := s.duration("drain-delay")
	shutdown, err2 := s.duration("shutdown-timeout")
	if err1 != nil || err2 != nil {
		p.add(where, "%v %v", err1, err2)
		return
	}
	if s.Binary == "wick-gateway" {
		shutdown = max(shutdown, gatewayHTTPShutdown)
	}
	var preStop time.Duration
	if lc := s.C.Lifecycle; lc != nil && lc.PreStop != nil {
		if lc.PreStop.Sleep == nil {
			p.add(where, "preStop other than sleep: the images have no shell")
		} else {
			preStop = time.Duration(lc.PreStop.Sleep.Seconds) * time.Second
		}
	}
	need := preStop + drain + shutdown
	if g := s.W.Pod.Spec.TerminationGracePeriodSeconds; g != nil && time.Duration(*g)*time.Second <= need {
		p.add(where, "terminationGracePeriodSeconds %d must be more than preStop %s + -drain-delay %s + shutdown %s", *g, preStop, drain, shutdown)
	}
}

// fileFromSecret reports whether file is in a volume of s's pod that a
// Secret fills.
func fileFromSecret(s service, file string) bool {
	if file == "" {
		return false
	}
	for _, m := range s.C.VolumeMounts {
		if !strings.HasPrefix(file, strings.TrimSuffix(m.MountPath, "/")+"/") {
			continue
		}
		for _, v := range s.W.Pod.Spec.Volumes {
			if v.Name == m.Name && v.Secret != nil {
				return true
			}
		}
	}
	return false
}

// checkTarget checks a service address: a headless Service of the rendered
// namespace that selects the pods running binary, on their gRPC port.
func checkTarget(p *problems, where, target, binary string, r *rendered, all []service) {
	m := headlessTarget.FindStringSubmatch(target)
	if m == nil {
		p.add(where, "%q: want dns:///<headless Service>.<namespace>.svc.cluster.local:<port>", target)
		return
	}
	svc := r.service(m[1], m[2])
	if svc == nil {
		p.add(where, "%q: no Service %s in namespace %s", target, m[1], m[2])
		return
	}
	if svc.Spec.ClusterIP != corev1.ClusterIPNone {
		p.add(where, "%q: Service %s is not headless (clusterIP: None): calls would not spread over the replicas", target, m[1])
	}
	port, _ := strconv.Atoi(m[3])
	checkServicePort(p, where, target, svc, int32(port), binary, "grpc-addr", all)
}

// enginePod is one element of a rendezvous -sandbox-addr: a StatefulSet
// pod's own name under its headless Service.
var enginePod = regexp.MustCompile(`^([a-z0-9-]+)-(\d+)\.([a-z0-9-]+)\.([a-z0-9-]+)\.svc\.cluster\.local:(\d+)$`)

// checkEngines checks the sandbox services an agent places sandboxes over:
// every pod of one StatefulSet, by its stable name, in order. Placement
// hashes these names, so a missing or extra one would send sandboxes to an
// engine that does not hold them or to none.
func checkEngines(p *problems, where, list string, r *rendered, all []service) {
	elems := strings.Split(list, ",")
	var sts *appsv1.StatefulSet
	for i, e := range elems {
		m := enginePod.FindStringSubmatch(e)
		if m == nil {
			p.add(where, "%q: want <statefulset>-<i>.<headless Service>.<namespace>.svc.cluster.local:<port>, one per replica", e)
			return
		}
		if idx, _ := strconv.Atoi(m[2]); idx != i {
			p.add(where, "element %d is pod %s-%s: want the pods in order from 0", i, m[1], m[2])
			return
		}
		if sts == nil {
			sts = r.statefulSet(m[1])
			if sts == nil || sts.Namespace != m[4] {
				p.add(where, "%q: no StatefulSet %s in namespace %s", e, m[1], m[4])
				return
			}
			if sts.Spec.ServiceName != m[3] {
				p.add(where, "%q: StatefulSet %s's pods are named under Service %q, not %q", e, m[1], sts.Spec.ServiceName, m[3])
				return
			}
			checkTarget(p, where, "dns:///"+m[3]+"."+m[4]+".svc.cluster.local:"+m[5], "wick-sandbox", r, all)
		} else if m[1] != sts.Name {
			p.add(where, "%q: every engine must be a pod of StatefulSet %s", e, sts.Name)
			return
		}
	}
	if sts != nil {
		if n := replicas(r, workload{Kind: "StatefulSet", Name: sts.Name}); int(n) != len(elems) {
			p.add(where, "names %d sandbox services but StatefulSet %s has %d replicas: change both together", len(elems), sts.Name, n)
		}
	}
}

// checkURL checks an http:// URL of a Service in front of binary's flag port.
func checkURL(p *problems, where, raw, binary, flag string, r *rendered, all []service) {
	u, err := url.Parse(raw)
	if err != nil || u.Scheme != "http" {
		p.add(where, "%q: want http://<Service>.<namespace>.svc.cluster.local:<port>", raw)
		return
	}
	parts := strings.Split(u.Hostname(), ".")
	port, _ := strconv.Atoi(u.Port())
	if len(parts) != 5 || strings.Join(parts[2:], ".") != "svc.cluster.local" || port == 0 {
		p.add(where, "%q: want http://<Service>.<namespace>.svc.cluster.local:<port>", raw)
		return
	}
	svc := r.service(parts[0], parts[1])
	if svc == nil {
		p.add(where, "%q: no Service %s in namespace %s", raw, parts[0], parts[1])
		return
	}
	checkServicePort(p, where, raw, svc, int32(port), binary, flag, all)
}

// checkServicePort checks that svc's port leads to the port binary listens on
// with flag, in pods it selects.
func checkServicePort(p *problems, where, target string, svc *corev1.Service, port int32, binary, flag string, all []service) {
	var sp *corev1.ServicePort
	for i := range svc.Spec.Ports {
		if svc.Spec.Ports[i].Port == port {
			sp = &svc.Spec.Ports[i]
		}
	}
	if sp == nil {
		p.add(where, "%q: Service %s has no port %d", target, svc.Name, port)
		return
	}
	found := false
	for _, s := range all {
		if s.Binary != binary || s.W.Namespace != svc.Namespace || !selectsLabels(svc.Spec.Selector, s.W.Pod.Labels) {
			continue
		}
		found = true
		_, lp, _ := net.SplitHostPort(s.value(flag))
		want, _ := strconv.Atoi(lp)
		got := sp.TargetPort.IntValue()
		if sp.TargetPort.StrVal != "" {
			got = 0
			for _, cp := range s.C.Ports {
				if cp.Name == sp.TargetPort.StrVal {
					got = int(cp.ContainerPort)
				}
			}
		} else if got == 0 {
			got = int(sp.Port)
		}
		if got != want {
			p.add(where, "%q: Service %s port %d leads to %d, but %s listens on %d (-%s)", target, svc.Name, port, got, binary, want, flag)
		}
	}
	if !found {
		p.add(where, "%q: Service %s selects no %s pods", target, svc.Name, binary)
	}
}

func (r *rendered) service(name, namespace string) *corev1.Service {
	for _, s := range r.Services {
		if s.Name == name && s.Namespace == namespace {
			return s
		}
	}
	return nil
}

// selectsLabels reports whether a Service's selector matches labels.
func selectsLabels(sel, labels map[string]string) bool {
	if len(sel) == 0 {
		return false
	}
	for k, v := range sel {
		if labels[k] != v {
			return false
		}
	}
	return true
}

// checkNamespaces: every object is in the one Namespace of the suite, but the
// sandbox namespace's own policies and RBAC; an object kustomize left without
// one lands in "default", beside nothing it serves.
func checkNamespaces(p *problems, r *rendered) {
	ns := r.namespace()
	if ns == "" {
		p.add("manifests", "want exactly one Namespace for the suite (and the sandboxes' of the Kubernetes engine), got %d", len(r.Namespaces))
		return
	}
	sandboxes := r.sandboxNamespace()
	for _, m := range r.objectMetas() {
		if m.Namespace != ns && (m.Namespace != sandboxes || !sandboxNamespaceKinds[m.Kind]) {
			p.add(m.Kind+"/"+m.Name, "namespace %q, want %q", m.Namespace, ns)
		}
	}
}
