// Package kubebox runs sandboxes as Kubernetes pods: one Pod per sandbox,
// its workspace on a PersistentVolumeClaim, its daemon token in a Secret and
// a NetworkPolicy that gives it no more network than its spec asks for. The
// daemon listens on the pod's loopback only and is reached through the API
// server's port-forward, so no pod-network path to it exists.
package kubebox

import (
	"fmt"
	"path"
	"slices"
	"sort"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// Labels and annotations every object of a sandbox carries. Label values
// are at most 63 characters, so user and agent ids (and the settings) are
// annotations.
const (
	LabelManagedBy = "app.kubernetes.io/managed-by"
	ManagedBy      = "wick-sandbox"
	LabelManager   = "wick.dev/manager"
	LabelKey       = "wick.dev/key"
	// LabelName is the sandbox's object name, which its NetworkPolicy
	// selects: it never changes, so claiming a warm pod (a new key) never
	// leaves the pod unselected for a moment.
	LabelName = "wick.dev/name"
	// LabelWarm marks the objects of a warm pod nobody has claimed.
	LabelWarm = "wick.dev/warm"

	AnnotationUser  = "wick.dev/user"
	AnnotationAgent = "wick.dev/agent"
	AnnotationSpec  = "wick.dev/spec"
)

// In-pod paths and the daemon's port.
const (
	// BinDir holds wick-daemon and wickfs, placed by the init container.
	BinDir = "/opt/wick/bin"
	// RunDir holds the daemon's Unix socket, which nothing outside uses.
	RunDir = "/run/wick"
	// DaemonPort is the daemon's TCP port on the pod's loopback.
	DaemonPort = 7070
	// TokenKey is the daemon token's key in the sandbox's Secret.
	TokenKey = "token"
	// EndpointTokenKey is the endpoints' token's key in the sandbox's Secret.
	EndpointTokenKey = "endpoint-token"
	// TokenEnv is how the daemon reads its token (wick-daemon's TokenEnv).
	TokenEnv = "WICK_DAEMON_TOKEN"
	// InstallerPath is wick-daemon in the daemon image.
	InstallerPath = "/usr/local/bin/wick-daemon"
)

// Spec is one sandbox to run.
type Spec struct {
	// Name names the Pod, its Secret, NetworkPolicy and (with the
	// "ws-" prefix) its claim: a DNS label.
	Name string
	// Key identifies the sandbox among the manager's (a short hash).
	Key         string
	User, Agent string
	// Settings is the service's record of the spec, kept in an annotation
	// so a restarted service adopts the pod as it was built.
	Settings string
	Image    string
	Workdir  string
	// Network is "none" (no egress) or "bridge" (egress to public
	// addresses, never to the cluster's private or link-local ranges).
	Network        string
	Memory         int64
	NanoCPUs       int64
	ReadOnly       bool
	TmpfsMB        int64
	WorkspaceBytes int64
	Env            map[string]string
	// EndpointToken is what the sandbox's endpoints require. It is kept in
	// the sandbox's Secret, out of the pod's spec and annotations, and the
	// variables SecretEnv names are given it.
	EndpointToken string
	SecretEnv     []string
	// DaemonArgs follow the daemon binary on its command line.
	DaemonArgs []string
	// Skills, when set, is mounted read-only at SkillsDir in the workdir.
	Skills *Skills
	// Warm marks a pod of the warm pool.
	Warm bool
}

// SkillsDir is where the skills library appears in the workdir.
const SkillsDir = "skills"

// ClaimName is the workspace claim of the sandbox named name.
func ClaimName(name string) string { return "ws-" + name }

// privateRanges are never reachable from a sandbox, bridge or not: the
// cluster's pods and services, the node network and cloud metadata live
// there.
var privateRanges = []string{"10.0.0.0/8", "172.16.0.0/12", "192.168.0.0/16", "169.254.0.0/16", "100.64.0.0/10"}

func (c *Client) meta(s Spec, name string) metav1.ObjectMeta {
	m := metav1.ObjectMeta{
		Name: name, Namespace: c.cfg.Namespace,
		Labels: map[string]string{LabelManagedBy: ManagedBy, LabelManager: c.cfg.ManagerID, LabelKey: s.Key, LabelName: s.Name},
		Annotations: map[string]string{
			AnnotationUser: s.User, AnnotationAgent: s.Agent, AnnotationSpec: s.Settings,
		},
	}
	if s.Warm {
		m.Labels[LabelWarm] = "1"
	}
	return m
}

// Secret holds the sandbox's daemon token and its endpoints' token.
func (c *Client) Secret(s Spec, token string) *corev1.Secret {
	return &corev1.Secret{ObjectMeta: c.meta(s, s.Name), Type: corev1.SecretTypeOpaque, Data: secretData(s, token)}
}

func secretData(s Spec, token string) map[string][]byte {
	d := map[string][]byte{TokenKey: []byte(token)}
	if s.EndpointToken != "" {
		d[EndpointTokenKey] = []byte(s.EndpointToken)
	}
	return d
}

// Claim is the sandbox's workspace.
func (c *Client) Claim(s Spec) *corev1.PersistentVolumeClaim {
	pvc := &corev1.PersistentVolumeClaim{ObjectMeta: c.meta(s, ClaimName(s.Name)),
		Spec: corev1.PersistentVolumeClaimSpec{
			AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
			Resources: corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{
				corev1.ResourceStorage: *resource.NewQuantity(s.WorkspaceBytes, resource.BinarySI)}},
		}}
	if c.cfg.StorageClass != "" {
		sc := c.cfg.StorageClass
		pvc.Spec.StorageClassName = &sc
	}
	return pvc
}

// Policy is the sandbox pod's NetworkPolicy: no ingress at all (the daemon
// is reached through port-forward, which no policy governs), and egress
// only as its network allows.
func (c *Client) Policy(s Spec) *networkingv1.NetworkPolicy {
	np := &networkingv1.NetworkPolicy{ObjectMeta: c.meta(s, s.Name),
		Spec: networkingv1.NetworkPolicySpec{
			PodSelector: metav1.LabelSelector{MatchLabels: map[string]string{LabelManager: c.cfg.ManagerID, LabelName: s.Name}},
			PolicyTypes: []networkingv1.PolicyType{networkingv1.PolicyTypeIngress, networkingv1.PolicyTypeEgress},
		}}
	if s.Network == "bridge" {
		udp, tcp, dns := corev1.ProtocolUDP, corev1.ProtocolTCP, intstr.FromInt32(53)
		np.Spec.Egress = []networkingv1.NetworkPolicyEgressRule{
			{To: []networkingv1.NetworkPolicyPeer{{IPBlock: &networkingv1.IPBlock{CIDR: "0.0.0.0/0", Except: privateRanges}}}},
			// Names resolve through the cluster's DNS, which lives at a
			// private address.
			{
				To: []networkingv1.NetworkPolicyPeer{{
					NamespaceSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"kubernetes.io/metadata.name": "kube-system"}},
					PodSelector:       &metav1.LabelSelector{MatchLabels: map[string]string{"k8s-app": "kube-dns"}},
				}},
				Ports: []networkingv1.NetworkPolicyPort{{Protocol: &udp, Port: &dns}, {Protocol: &tcp, Port: &dns}},
			},
		}
	}
	return np
}

// Pod is the sandbox's pod. It passes Pod Security "restricted".
func (c *Client) Pod(s Spec) *corev1.Pod {
	no, yes := false, true
	uid, gid := c.cfg.RunAs.UID, c.cfg.RunAs.GID
	restricted := &corev1.SecurityContext{
		AllowPrivilegeEscalation: &no,
		Capabilities:             &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}},
		RunAsNonRoot:             &yes,
		SeccompProfile:           &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault},
	}
	sandboxCtx := restricted.DeepCopy()
	sandboxCtx.ReadOnlyRootFilesystem = &s.ReadOnly
	installCtx := restricted.DeepCopy()
	installCtx.ReadOnlyRootFilesystem = &yes

	env := []corev1.EnvVar{{Name: TokenEnv, ValueFrom: &corev1.EnvVarSource{SecretKeyRef: &corev1.SecretKeySelector{
		LocalObjectReference: corev1.LocalObjectReference{Name: s.Name}, Key: TokenKey}}}}
	names := make([]string, 0, len(s.Env))
	for k := range s.Env {
		names = append(names, k)
	}
	sort.Strings(names)
	for _, k := range names {
		if k != TokenEnv && !slices.Contains(s.SecretEnv, k) {
			env = append(env, corev1.EnvVar{Name: k, Value: s.Env[k]})
		}
	}
	for _, k := range s.SecretEnv {
		env = append(env, corev1.EnvVar{Name: k, ValueFrom: &corev1.EnvVarSource{SecretKeyRef: &corev1.SecretKeySelector{
			LocalObjectReference: corev1.LocalObjectReference{Name: s.Name}, Key: EndpointTokenKey}}})
	}
	limits := corev1.ResourceList{
		corev1.ResourceMemory: *resource.NewQuantity(s.Memory, resource.BinarySI),
		corev1.ResourceCPU:    *resource.NewMilliQuantity(s.NanoCPUs/1_000_000, resource.DecimalSI),
	}
	mounts := []corev1.VolumeMount{
		{Name: "workspace", MountPath: s.Workdir},
		{Name: "bin", MountPath: BinDir, ReadOnly: true},
		{Name: "run", MountPath: RunDir},
	}
	volumes := []corev1.Volume{
		{Name: "workspace", VolumeSource: corev1.VolumeSource{PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: ClaimName(s.Name)}}},
		{Name: "bin", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{SizeLimit: resource.NewQuantity(64<<20, resource.BinarySI)}}},
		{Name: "run", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{Medium: corev1.StorageMediumMemory, SizeLimit: resource.NewQuantity(1<<20, resource.BinarySI)}}},
	}
	if s.Skills != nil {
		mounts = append(mounts, corev1.VolumeMount{Name: "skills", MountPath: path.Join(s.Workdir, SkillsDir), ReadOnly: true})
		volumes = append(volumes, corev1.Volume{Name: "skills", VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{
			LocalObjectReference: corev1.LocalObjectReference{Name: s.Skills.ConfigMap}, Items: s.Skills.Items}}})
	}
	if s.ReadOnly {
		size := s.TmpfsMB
		if size <= 0 {
			size = 64
		}
		mounts = append(mounts, corev1.VolumeMount{Name: "tmp", MountPath: "/tmp"})
		volumes = append(volumes, corev1.Volume{Name: "tmp", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{
			Medium: corev1.StorageMediumMemory, SizeLimit: resource.NewQuantity(size<<20, resource.BinarySI)}}})
	}
	p := &corev1.Pod{ObjectMeta: c.meta(s, s.Name), Spec: corev1.PodSpec{
		RestartPolicy:                corev1.RestartPolicyAlways,
		AutomountServiceAccountToken: &no,
		EnableServiceLinks:           &no,
		// The pause container is PID 1 and reaps what the sandbox's
		// commands orphan; the daemon is not an init.
		ShareProcessNamespace: &yes,
		Hostname:              "sandbox",
		SecurityContext: &corev1.PodSecurityContext{
			RunAsNonRoot: &yes, RunAsUser: &uid, RunAsGroup: &gid, FSGroup: &gid,
			SeccompProfile: &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault},
		},
		InitContainers: []corev1.Container{{
			Name: "install-daemon", Image: c.cfg.DaemonImage, ImagePullPolicy: corev1.PullIfNotPresent,
			Command:         []string{InstallerPath, "-install", BinDir},
			SecurityContext: installCtx,
			Resources: corev1.ResourceRequirements{Limits: corev1.ResourceList{
				corev1.ResourceMemory: resource.MustParse("64Mi"), corev1.ResourceCPU: resource.MustParse("200m")}},
			VolumeMounts: []corev1.VolumeMount{{Name: "bin", MountPath: BinDir}},
		}},
		Containers: []corev1.Container{{
			Name: "sandbox", Image: s.Image, ImagePullPolicy: corev1.PullIfNotPresent,
			Command:         append([]string{path.Join(BinDir, "wick-daemon")}, s.DaemonArgs...),
			WorkingDir:      s.Workdir,
			Env:             env,
			SecurityContext: sandboxCtx,
			Resources:       corev1.ResourceRequirements{Limits: limits, Requests: limits},
			VolumeMounts:    mounts,
		}},
		Volumes: volumes,
	}}
	if c.cfg.RuntimeClass != "" {
		rc := c.cfg.RuntimeClass
		p.Spec.RuntimeClassName = &rc
	}
	return p
}

// DaemonAddr is the daemon's -tcp-addr in the pod.
func DaemonAddr() string { return "127.0.0.1:" + strconv.Itoa(DaemonPort) }

// ParseRunAs parses "uid:gid" (or "uid", the group then equal), refusing
// root: a sandbox pod must pass Pod Security "restricted".
func ParseRunAs(s string) (RunAs, error) {
	var r RunAs
	u, g, ok := strings.Cut(s, ":")
	uid, err := strconv.ParseInt(u, 10, 64)
	if err != nil || uid <= 0 {
		return r, fmt.Errorf("run-as %q: the user must be a number above 0", s)
	}
	gid := uid
	if ok {
		if gid, err = strconv.ParseInt(g, 10, 64); err != nil || gid <= 0 {
			return r, fmt.Errorf("run-as %q: the group must be a number above 0", s)
		}
	}
	return RunAs{UID: uid, GID: gid}, nil
}
