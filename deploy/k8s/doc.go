// Package k8s holds the Kubernetes manifests' proof: its test builds every
// kustomize overlay, decodes each object strictly into the Kubernetes API
// types, and checks the suite's deployment rules and that every flag and
// WICK_* variable the manifests give a binary is one the binary knows.
package k8s
