package kubebox

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// ClaimWarm makes the warm sandbox named name the sandbox s: its objects
// keep their names and take s's key, user, agent and settings. The pod
// keeps running; its NetworkPolicy selects it by name throughout.
func (c *Client) ClaimWarm(ctx context.Context, name string, s Spec) error {
	patch, err := json.Marshal(map[string]any{"metadata": map[string]any{
		"labels":      map[string]any{LabelKey: s.Key, LabelWarm: nil},
		"annotations": map[string]any{AnnotationUser: s.User, AnnotationAgent: s.Agent, AnnotationSpec: s.Settings},
	}})
	if err != nil {
		return err
	}
	ns, mp := c.cfg.Namespace, types.MergePatchType
	for _, p := range []struct {
		what  string
		patch func() error
	}{
		{"secret", func() error {
			_, err := c.cs.CoreV1().Secrets(ns).Patch(ctx, name, mp, patch, metav1.PatchOptions{})
			return err
		}},
		{"claim", func() error {
			_, err := c.cs.CoreV1().PersistentVolumeClaims(ns).Patch(ctx, ClaimName(name), mp, patch, metav1.PatchOptions{})
			return err
		}},
		{"network policy", func() error {
			_, err := c.cs.NetworkingV1().NetworkPolicies(ns).Patch(ctx, name, mp, patch, metav1.PatchOptions{})
			return err
		}},
		// The pod last: a claim that fails before leaves it warm-labelled,
		// and the clean-up of warm objects finds it.
		{"pod", func() error {
			_, err := c.cs.CoreV1().Pods(ns).Patch(ctx, name, mp, patch, metav1.PatchOptions{})
			return err
		}},
	} {
		if err := p.patch(); err != nil {
			return fmt.Errorf("claim warm %s %s: %w", p.what, name, err)
		}
	}
	return nil
}

// HasWorkspace reports whether the sandbox of key has a workspace claim.
func (c *Client) HasWorkspace(ctx context.Context, key string) (bool, error) {
	l, err := c.cs.CoreV1().PersistentVolumeClaims(c.cfg.Namespace).List(ctx, metav1.ListOptions{
		LabelSelector: LabelManager + "=" + c.cfg.ManagerID + "," + LabelKey + "=" + key})
	if err != nil {
		return false, fmt.Errorf("list workspace claims: %w", err)
	}
	return len(l.Items) > 0, nil
}

// RemoveWarm removes every warm sandbox of the manager nobody claimed: a
// previous life's pool.
func (c *Client) RemoveWarm(ctx context.Context) error {
	sel := metav1.ListOptions{LabelSelector: LabelManager + "=" + c.cfg.ManagerID + "," + LabelWarm + "=1"}
	names := map[string]bool{}
	pods, err := c.cs.CoreV1().Pods(c.cfg.Namespace).List(ctx, sel)
	if err != nil {
		return fmt.Errorf("list warm pods: %w", err)
	}
	for _, p := range pods.Items {
		names[p.Name] = true
	}
	claims, err := c.cs.CoreV1().PersistentVolumeClaims(c.cfg.Namespace).List(ctx, sel)
	if err != nil {
		return fmt.Errorf("list warm claims: %w", err)
	}
	for _, pvc := range claims.Items {
		names[strings.TrimPrefix(pvc.Name, "ws-")] = true
	}
	for n := range names {
		if err := c.Remove(ctx, n); err != nil && !apierrors.IsNotFound(err) {
			return err
		}
	}
	return nil
}
