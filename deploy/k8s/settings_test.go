package k8s

import (
	"fmt"
	"regexp"
	"strings"

	corev1 "k8s.io/api/core/v1"
)

// setting is one flag's value as a container gives it.
type setting struct {
	Value string
	// Secret is where the value comes from when a Secret holds it.
	Secret *corev1.SecretKeySelector
	// Where says how it is given, for messages: "arg" or the variable name.
	Where string
	// PodName is set when the value is the pod's own name (a fieldRef to
	// metadata.name): Value is then empty, and each pod has its own.
	PodName bool
}

// argForm is the one form of an argument the manifests use: -name or
// -name=value, so that a value never passes for a flag or the reverse.
var argForm = regexp.MustCompile(`^-([A-Za-z0-9][A-Za-z0-9._-]*)(?:=(.*))?$`)

// otherEnv are the variables a service container may have besides WICK_*:
// read by the Go runtime, the Docker client or OpenTelemetry.
var otherEnv = regexp.MustCompile(`^(OTEL_[A-Z0-9_]+|DOCKER_HOST|GOMAXPROCS|GOMEMLIMIT|GOGC)$`)

// settingsOf returns the flags a service container sets, by flag name, from
// its arguments and environment (an argument wins, as in platform/config),
// and what is wrong with them: a flag or WICK_* variable the binary does not
// know, an argument in another form, a variable nothing reads.
func settingsOf(c corev1.Container, flags binaryFlags, r *rendered) (map[string]setting, []string) {
	var problems []string
	out := map[string]setting{}
	if len(c.Command) > 0 {
		problems = append(problems, fmt.Sprintf("command %q: the image's entrypoint is the binary; give flags in args", c.Command))
	}
	for _, a := range c.Args {
		m := argForm.FindStringSubmatch(a)
		if m == nil {
			problems = append(problems, fmt.Sprintf("argument %q is not -flag or -flag=value", a))
			continue
		}
		f, ok := flags[m[1]]
		if !ok {
			problems = append(problems, fmt.Sprintf("flag -%s is not a flag of %s", m[1], imageName(c.Image)))
			continue
		}
		if !f.Bool && !strings.Contains(a, "=") {
			problems = append(problems, fmt.Sprintf("flag -%s takes a value: write -%s=value", m[1], m[1]))
		}
		if _, dup := out[m[1]]; dup {
			problems = append(problems, fmt.Sprintf("flag -%s is given twice", m[1]))
		}
		v := m[2]
		if f.Bool && !strings.Contains(a, "=") {
			v = "true"
		}
		out[m[1]] = setting{Value: v, Where: "arg"}
	}
	env := func(name, value string, secret *corev1.SecretKeySelector, podName bool) {
		if !strings.HasPrefix(name, "WICK_") {
			if !otherEnv.MatchString(name) {
				problems = append(problems, fmt.Sprintf("variable %s is read by nothing in %s", name, imageName(c.Image)))
			}
			return
		}
		flag, ok := flags.envFlag(name)
		if !ok {
			problems = append(problems, fmt.Sprintf("variable %s sets no flag of %s", name, imageName(c.Image)))
			return
		}
		if prev, given := out[flag]; given {
			problems = append(problems, fmt.Sprintf("flag -%s is given twice (%s and %s)", flag, prev.Where, name))
			return
		}
		out[flag] = setting{Value: value, Secret: secret, Where: name, PodName: podName}
	}
	for _, ef := range c.EnvFrom {
		switch {
		case ef.ConfigMapRef != nil:
			cm := r.configMap(ef.ConfigMapRef.Name)
			if cm == nil {
				if ef.ConfigMapRef.Optional == nil || !*ef.ConfigMapRef.Optional {
					problems = append(problems, fmt.Sprintf("envFrom ConfigMap %s is not in the manifests", ef.ConfigMapRef.Name))
				}
				continue
			}
			for k, v := range cm.Data {
				env(ef.Prefix+k, v, nil, false)
			}
		default:
			// A Secret's keys are not in the manifests: which variables it
			// sets could not be checked.
			problems = append(problems, "envFrom other than a ConfigMap: name each variable of a Secret with secretKeyRef")
		}
	}
	for _, e := range c.Env {
		var secret *corev1.SecretKeySelector
		podName := false
		if vf := e.ValueFrom; vf != nil {
			switch {
			case vf.SecretKeyRef != nil:
				secret = vf.SecretKeyRef
			case vf.FieldRef != nil && vf.FieldRef.FieldPath == "metadata.name":
				podName = true
			default:
				problems = append(problems, fmt.Sprintf("variable %s: only a value, a secretKeyRef or the pod's name (fieldRef metadata.name)", e.Name))
				continue
			}
		}
		env(e.Name, e.Value, secret, podName)
	}
	return out, problems
}

// configMap returns the ConfigMap called name, or nil.
func (r *rendered) configMap(name string) *corev1.ConfigMap {
	for _, cm := range r.ConfigMaps {
		if cm.Name == name {
			return cm
		}
	}
	return nil
}

// envValue returns what a container's variable name is set to, directly or
// through a ConfigMap, and whether it is set.
func envValue(c corev1.Container, name string, r *rendered) (string, bool) {
	for _, e := range c.Env {
		if e.Name == name {
			return e.Value, true
		}
	}
	for _, ef := range c.EnvFrom {
		if ef.ConfigMapRef == nil {
			continue
		}
		if cm := r.configMap(ef.ConfigMapRef.Name); cm != nil {
			if v, ok := cm.Data[strings.TrimPrefix(name, ef.Prefix)]; ok && strings.HasPrefix(name, ef.Prefix) {
				return v, true
			}
		}
	}
	return "", false
}
