package kubebox

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"net/http"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/client-go/transport/spdy"
)

// RunAs is the user and group a sandbox pod runs as.
type RunAs struct{ UID, GID int64 }

// Config is where and how sandbox pods run.
type Config struct {
	// Namespace holds every sandbox object; the service needs rights in it
	// only.
	Namespace string
	// ManagerID labels the objects of one sandbox service, so replicas and
	// installations sharing a namespace never touch each other's.
	ManagerID string
	// DaemonImage holds wick-daemon and wickfs at /usr/local/bin; its
	// wick-daemon -install places both in the pod.
	DaemonImage string
	// RuntimeClass, when set, is the pods' runtimeClassName (gVisor, Kata).
	RuntimeClass string
	// StorageClass of the workspace claims; empty: the cluster default.
	StorageClass string
	RunAs        RunAs
	// PollInterval paces the wait for a pod to run or go.
	PollInterval time.Duration
}

// ErrPodFailed says a sandbox pod cannot run as specified (an image that
// is not there, a claim that cannot bind); the message says why.
var ErrPodFailed = errors.New("sandbox pod cannot run")

// Client creates and removes sandbox pods and dials their daemons.
type Client struct {
	cfg  Config
	rest *rest.Config
	cs   clientset
	spdy struct {
		rt       http.RoundTripper
		upgrader spdy.Upgrader
	}
}

// LoadConfig reads a kubeconfig file, or the pod's service account when
// path is empty.
func LoadConfig(path string) (*rest.Config, error) {
	if path == "" {
		c, err := rest.InClusterConfig()
		if err != nil {
			return nil, fmt.Errorf("kubernetes in-cluster config (give -kubeconfig outside a cluster): %w", err)
		}
		return c, nil
	}
	c, err := clientcmd.BuildConfigFromFlags("", path)
	if err != nil {
		return nil, fmt.Errorf("kubeconfig %s: %w", path, err)
	}
	return c, nil
}

// New returns a client of the API server rc names.
func New(rc *rest.Config, cfg Config) (*Client, error) {
	if errs := validation.IsDNS1123Label(cfg.Namespace); len(errs) > 0 {
		return nil, fmt.Errorf("kubernetes namespace %q: %v", cfg.Namespace, errs)
	}
	if cfg.DaemonImage == "" {
		return nil, errors.New("kubernetes engine: the daemon image is required (the wick-sandbox image, which carries wick-daemon)")
	}
	if cfg.RunAs.UID <= 0 || cfg.RunAs.GID <= 0 {
		return nil, errors.New("kubernetes engine: sandboxes must run as a user and group above 0")
	}
	if cfg.PollInterval <= 0 {
		cfg.PollInterval = 250 * time.Millisecond
	}
	rc = rest.CopyConfig(rc)
	cs, err := newClientset(rc)
	if err != nil {
		return nil, fmt.Errorf("kubernetes client: %w", err)
	}
	c := &Client{cfg: cfg, rest: rc, cs: cs}
	if c.spdy.rt, c.spdy.upgrader, err = spdy.RoundTripperFor(rc); err != nil {
		return nil, fmt.Errorf("kubernetes port-forward transport: %w", err)
	}
	return c, nil
}

// SetManager sets the manager id the client labels and selects by.
func (c *Client) SetManager(id string) { c.cfg.ManagerID = id }

// RunAs is the user and group sandbox pods run as.
func (c *Client) RunAs() RunAs { return c.cfg.RunAs }

// Namespace is where the sandbox objects live.
func (c *Client) Namespace() string { return c.cfg.Namespace }

// NewToken returns a fresh daemon token.
func NewToken() string {
	b := make([]byte, 32)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// Started is a sandbox pod that runs.
type Started struct {
	// UID is the pod's; a pod made anew under the same name has another.
	UID string
	// NewWorkspace says the claim was created by this start.
	NewWorkspace bool
	Tokens
}

// Tokens are what a sandbox's Secret holds.
type Tokens struct {
	// Token is the daemon's.
	Token string
	// EndpointToken is the endpoints' (Spec.EndpointToken).
	EndpointToken string
}

// Start makes the sandbox's objects that are missing and waits until its
// pod runs. A pod of the name that has ended, or is going, is replaced; the
// workspace claim is kept.
func (c *Client) Start(ctx context.Context, s Spec) (Started, error) {
	var (
		st  Started
		err error
	)
	if st.Tokens, err = c.ensureSecret(ctx, s); err != nil {
		return st, err
	}
	if st.NewWorkspace, err = c.ensureClaim(ctx, s); err != nil {
		return st, err
	}
	if err := c.ensurePolicy(ctx, s); err != nil {
		return st, err
	}
	pods := c.cs.CoreV1().Pods(c.cfg.Namespace)
	for {
		_, err := pods.Create(ctx, c.Pod(s), metav1.CreateOptions{})
		if err == nil || !apierrors.IsAlreadyExists(err) {
			if err != nil {
				return st, fmt.Errorf("create pod %s: %w", s.Name, err)
			}
			break
		}
		p, err := pods.Get(ctx, s.Name, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			continue
		}
		if err != nil {
			return st, fmt.Errorf("get pod %s: %w", s.Name, err)
		}
		if p.DeletionTimestamp == nil && p.Status.Phase != corev1.PodSucceeded && p.Status.Phase != corev1.PodFailed &&
			p.Labels[LabelManager] == c.cfg.ManagerID {
			break // a start of ours that a restart of the service interrupted
		}
		if err := c.DeletePod(ctx, s.Name); err != nil {
			return st, err
		}
	}
	p, err := c.waitRunning(ctx, s.Name)
	if err != nil {
		return st, err
	}
	st.UID = string(p.UID)
	return st, nil
}

func (c *Client) ensureSecret(ctx context.Context, s Spec) (Tokens, error) {
	secrets := c.cs.CoreV1().Secrets(c.cfg.Namespace)
	// A new pod gets a new token: one a previous pod's processes knew is
	// worth nothing now. The pod reads it at start, so it is replaced
	// before the pod is made.
	t := Tokens{Token: NewToken(), EndpointToken: s.EndpointToken}
	_, err := secrets.Create(ctx, c.Secret(s, t.Token), metav1.CreateOptions{})
	if apierrors.IsAlreadyExists(err) {
		sec, gerr := secrets.Get(ctx, s.Name, metav1.GetOptions{})
		if gerr != nil {
			return Tokens{}, fmt.Errorf("get secret %s: %w", s.Name, gerr)
		}
		if p, perr := c.cs.CoreV1().Pods(c.cfg.Namespace).Get(ctx, s.Name, metav1.GetOptions{}); perr == nil && p.DeletionTimestamp == nil &&
			p.Status.Phase != corev1.PodSucceeded && p.Status.Phase != corev1.PodFailed {
			// The pod that runs knows the stored tokens.
			return tokensOf(sec), nil
		}
		sec.Data = secretData(s, t.Token)
		if _, err := secrets.Update(ctx, sec, metav1.UpdateOptions{}); err != nil {
			return Tokens{}, fmt.Errorf("update secret %s: %w", s.Name, err)
		}
		return t, nil
	}
	if err != nil {
		return Tokens{}, fmt.Errorf("create secret %s: %w", s.Name, err)
	}
	return t, nil
}

func tokensOf(sec *corev1.Secret) Tokens {
	return Tokens{Token: string(sec.Data[TokenKey]), EndpointToken: string(sec.Data[EndpointTokenKey])}
}

func (c *Client) ensureClaim(ctx context.Context, s Spec) (bool, error) {
	_, err := c.cs.CoreV1().PersistentVolumeClaims(c.cfg.Namespace).Create(ctx, c.Claim(s), metav1.CreateOptions{})
	switch {
	case err == nil:
		return true, nil
	case apierrors.IsAlreadyExists(err):
		return false, nil
	default:
		return false, fmt.Errorf("create workspace claim %s: %w", ClaimName(s.Name), err)
	}
}

func (c *Client) ensurePolicy(ctx context.Context, s Spec) error {
	policies := c.cs.NetworkingV1().NetworkPolicies(c.cfg.Namespace)
	want := c.Policy(s)
	_, err := policies.Create(ctx, want, metav1.CreateOptions{})
	if apierrors.IsAlreadyExists(err) {
		// The spec's network may have changed since the policy was made.
		have, gerr := policies.Get(ctx, s.Name, metav1.GetOptions{})
		if gerr != nil {
			return fmt.Errorf("get network policy %s: %w", s.Name, gerr)
		}
		have.Spec, have.Labels, have.Annotations = want.Spec, want.Labels, want.Annotations
		_, err = policies.Update(ctx, have, metav1.UpdateOptions{})
	}
	if err != nil {
		return fmt.Errorf("network policy %s: %w", s.Name, err)
	}
	return nil
}

// waitRunning waits until the pod's sandbox container runs. A pod that
// cannot start (its image missing, its claim unbound for long) fails with
// the kubelet's or scheduler's reason instead of waiting out ctx.
func (c *Client) waitRunning(ctx context.Context, name string) (*corev1.Pod, error) {
	var last *corev1.Pod
	err := wait.PollUntilContextCancel(ctx, c.cfg.PollInterval, true, func(ctx context.Context) (bool, error) {
		p, err := c.cs.CoreV1().Pods(c.cfg.Namespace).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return false, fmt.Errorf("get pod %s: %w", name, err)
		}
		last = p
		switch p.Status.Phase {
		case corev1.PodSucceeded, corev1.PodFailed:
			return false, fmt.Errorf("%w: pod %s ended (%s): %s", ErrPodFailed, name, p.Status.Phase, p.Status.Message)
		}
		for _, cs := range append(p.Status.InitContainerStatuses, p.Status.ContainerStatuses...) {
			if w := cs.State.Waiting; w != nil {
				switch w.Reason {
				case "ErrImagePull", "ImagePullBackOff", "ErrImageNeverPull", "InvalidImageName", "CreateContainerConfigError", "CreateContainerError":
					return false, fmt.Errorf("%w: pod %s, container %s: %s: %s", ErrPodFailed, name, cs.Name, w.Reason, w.Message)
				}
			}
			if t := cs.State.Terminated; t != nil && cs.Name == "install-daemon" && t.ExitCode != 0 {
				return false, fmt.Errorf("%w: pod %s: placing wick-daemon failed (exit %d): %s", ErrPodFailed, name, t.ExitCode, t.Message)
			}
		}
		for _, cs := range p.Status.ContainerStatuses {
			if cs.Name == "sandbox" && cs.State.Running != nil {
				return true, nil
			}
		}
		return false, nil
	})
	if err != nil {
		if ctx.Err() != nil && last != nil {
			return nil, fmt.Errorf("pod %s did not run (phase %s%s): %w", name, last.Status.Phase, conditionText(last), err)
		}
		return nil, err
	}
	return last, nil
}

// conditionText is the reason a pod is not scheduled or ready, for errors.
func conditionText(p *corev1.Pod) string {
	for _, c := range p.Status.Conditions {
		if c.Status != corev1.ConditionTrue && c.Message != "" {
			return "; " + string(c.Type) + ": " + c.Message
		}
	}
	return ""
}

// GetPod returns the sandbox's pod, or nil when there is none.
func (c *Client) GetPod(ctx context.Context, name string) (*corev1.Pod, error) {
	p, err := c.cs.CoreV1().Pods(c.cfg.Namespace).Get(ctx, name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("get pod %s: %w", name, err)
	}
	return p, nil
}

// Running reports whether p's sandbox container runs and p is not going.
func Running(p *corev1.Pod) bool {
	if p == nil || p.DeletionTimestamp != nil || p.Status.Phase != corev1.PodRunning {
		return false
	}
	for _, cs := range p.Status.ContainerStatuses {
		if cs.Name == "sandbox" {
			return cs.State.Running != nil
		}
	}
	return false
}

// Tokens are the tokens the sandbox's Secret holds.
func (c *Client) Tokens(ctx context.Context, name string) (Tokens, error) {
	sec, err := c.cs.CoreV1().Secrets(c.cfg.Namespace).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return Tokens{}, fmt.Errorf("get secret %s: %w", name, err)
	}
	return tokensOf(sec), nil
}

// DeletePod deletes the sandbox's pod and waits until it is gone, so a
// new pod can take its name; the workspace claim stays.
func (c *Client) DeletePod(ctx context.Context, name string) error {
	pods := c.cs.CoreV1().Pods(c.cfg.Namespace)
	err := pods.Delete(ctx, name, metav1.DeleteOptions{})
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("delete pod %s: %w", name, err)
	}
	// A pod on a node that is lost stays terminating until the node
	// controller gives up on it; the caller hears that instead of waiting.
	err = wait.PollUntilContextTimeout(ctx, c.cfg.PollInterval, PodGoneTimeout, true, func(ctx context.Context) (bool, error) {
		_, err := pods.Get(ctx, name, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return true, nil
		}
		return false, err
	})
	if err != nil {
		return fmt.Errorf("pod %s is still going after %s: %w", name, PodGoneTimeout, err)
	}
	return nil
}

// PodGoneTimeout bounds the wait for a deleted pod to go (its grace period
// is the default 30 s).
const PodGoneTimeout = 2 * time.Minute

// Remove deletes every object of the sandbox, its workspace included.
func (c *Client) Remove(ctx context.Context, name string) error {
	if err := c.DeletePod(ctx, name); err != nil {
		return err
	}
	del := []func() error{
		func() error {
			return c.cs.CoreV1().PersistentVolumeClaims(c.cfg.Namespace).Delete(ctx, ClaimName(name), metav1.DeleteOptions{})
		},
		func() error {
			return c.cs.NetworkingV1().NetworkPolicies(c.cfg.Namespace).Delete(ctx, name, metav1.DeleteOptions{})
		},
		func() error { return c.cs.CoreV1().Secrets(c.cfg.Namespace).Delete(ctx, name, metav1.DeleteOptions{}) },
	}
	for _, d := range del {
		if err := d(); err != nil && !apierrors.IsNotFound(err) {
			return fmt.Errorf("remove sandbox %s: %w", name, err)
		}
	}
	return nil
}

// Pods lists the manager's sandbox pods.
func (c *Client) Pods(ctx context.Context) ([]corev1.Pod, error) {
	l, err := c.cs.CoreV1().Pods(c.cfg.Namespace).List(ctx, metav1.ListOptions{
		LabelSelector: LabelManagedBy + "=" + ManagedBy + "," + LabelManager + "=" + c.cfg.ManagerID})
	if err != nil {
		return nil, fmt.Errorf("list sandbox pods: %w", err)
	}
	return l.Items, nil
}

// Claims lists the manager's workspace claims.
func (c *Client) Claims(ctx context.Context) ([]corev1.PersistentVolumeClaim, error) {
	l, err := c.cs.CoreV1().PersistentVolumeClaims(c.cfg.Namespace).List(ctx, metav1.ListOptions{
		LabelSelector: LabelManagedBy + "=" + ManagedBy + "," + LabelManager + "=" + c.cfg.ManagerID})
	if err != nil {
		return nil, fmt.Errorf("list workspace claims: %w", err)
	}
	return l.Items, nil
}
