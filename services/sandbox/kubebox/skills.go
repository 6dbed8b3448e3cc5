package kubebox

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// skillsPrefix begins the name of every skills library's ConfigMap.
const skillsPrefix = "wick-skills-"

// MaxSkillsBytes bounds the skills library a pod can get: it travels as one
// ConfigMap, which the API server keeps under 1 MiB.
const MaxSkillsBytes = 900 << 10

// Skills is the skills library as a ConfigMap volume: read-only in the pod
// whatever the sandbox's user does, shared by every pod of the namespace.
type Skills struct {
	ConfigMap string
	Items     []corev1.KeyToPath
}

// EnsureSkills makes the ConfigMap of the library in dir (named by a hash of
// its content, so each version is made once) and returns how pods mount it.
func (c *Client) EnsureSkills(ctx context.Context, dir string) (*Skills, error) {
	type file struct {
		rel  string
		mode fs.FileMode
		data []byte
	}
	var files []file
	total := 0
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || !d.Type().IsRegular() {
			return err
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		total += len(data)
		files = append(files, file{rel: filepath.ToSlash(rel), mode: info.Mode().Perm(), data: data})
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("skills library: %w", err)
	}
	if total > MaxSkillsBytes {
		return nil, fmt.Errorf("skills library of %d bytes: sandbox pods take at most %d (one ConfigMap)", total, MaxSkillsBytes)
	}
	sort.Slice(files, func(i, j int) bool { return files[i].rel < files[j].rel })
	h := sha256.New()
	for _, f := range files {
		fmt.Fprintf(h, "%s\x00%o\x00%d\x00", f.rel, f.mode, len(f.data))
		h.Write(f.data)
	}
	name := skillsPrefix + hex.EncodeToString(h.Sum(nil))[:16]
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: c.cfg.Namespace,
		Labels: map[string]string{LabelManagedBy: ManagedBy}}, BinaryData: map[string][]byte{}}
	sk := &Skills{ConfigMap: name}
	for i, f := range files {
		// Keys are flat names; the items give each file its path and mode.
		key := "f" + strconv.Itoa(i)
		cm.BinaryData[key] = f.data
		mode := int32(0o444)
		if f.mode&0o111 != 0 {
			mode = 0o555
		}
		sk.Items = append(sk.Items, corev1.KeyToPath{Key: key, Path: f.rel, Mode: &mode})
	}
	if _, err := c.cs.CoreV1().ConfigMaps(c.cfg.Namespace).Create(ctx, cm, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return nil, fmt.Errorf("skills library: create config map %s: %w", name, err)
	}
	return sk, nil
}

// PruneSkills deletes the skills ConfigMaps of earlier library versions:
// those no pod of the namespace mounts (whichever service made the pod),
// other than keep, and older than minAge, so a version another replica has
// just made for a pod it is about to create stays. It returns the names
// deleted.
func (c *Client) PruneSkills(ctx context.Context, keep string, minAge time.Duration) ([]string, error) {
	sel := metav1.ListOptions{LabelSelector: LabelManagedBy + "=" + ManagedBy}
	cms, err := c.cs.CoreV1().ConfigMaps(c.cfg.Namespace).List(ctx, sel)
	if err != nil {
		return nil, fmt.Errorf("list skills libraries: %w", err)
	}
	pods, err := c.cs.CoreV1().Pods(c.cfg.Namespace).List(ctx, sel)
	if err != nil {
		return nil, fmt.Errorf("list sandbox pods: %w", err)
	}
	used := map[string]bool{keep: true}
	for _, p := range pods.Items {
		for _, v := range p.Spec.Volumes {
			if v.ConfigMap != nil {
				used[v.ConfigMap.Name] = true
			}
		}
	}
	var deleted []string
	for _, cm := range cms.Items {
		if !strings.HasPrefix(cm.Name, skillsPrefix) || used[cm.Name] || time.Since(cm.CreationTimestamp.Time) < minAge {
			continue
		}
		err := c.cs.CoreV1().ConfigMaps(c.cfg.Namespace).Delete(ctx, cm.Name, metav1.DeleteOptions{
			Preconditions: &metav1.Preconditions{UID: &cm.UID}})
		if err != nil && !apierrors.IsNotFound(err) {
			return deleted, fmt.Errorf("delete skills library %s: %w", cm.Name, err)
		}
		deleted = append(deleted, cm.Name)
	}
	return deleted, nil
}
