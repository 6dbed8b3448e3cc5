package sandbox

import (
	"errors"
	"strings"
	"testing"

	"k8s.io/client-go/rest"

	sandboxv1 "github.com/wick-agent/wick/gen/wick/sandbox/v1"
	"github.com/wick-agent/wick/platform/backend"
	"github.com/wick-agent/wick/services/sandbox/kubebox"
)

// TestKubeSpecs checks what a spec may ask of a sandbox pod. The engine's
// pods themselves run in make test-k8s (deploy/k8s/internal/cluster).
func TestKubeSpecs(t *testing.T) {
	kc, err := kubebox.New(&rest.Config{Host: "https://127.0.0.1:1"}, kubebox.Config{Namespace: "sb", DaemonImage: "wick-sandbox",
		RunAs: kubebox.RunAs{UID: 1000, GID: 1001}})
	if err != nil {
		t.Fatal(err)
	}
	svc, err := New(Config{StateDir: shortTemp(t), ManagerID: "kube-specs", DefaultType: backend.Docker, AllowBridge: true,
		EgressAllow: []string{"*.example.com:443"}}, WithKubernetes(kc))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = svc.Close(t.Context()) })

	for _, tc := range []struct {
		name string
		spec *sandboxv1.SandboxSpec
		want string // "" accepts
	}{
		{"defaults", nil, ""},
		{"its numeric user", &sandboxv1.SandboxSpec{User: "1000"}, ""},
		{"its user and group", &sandboxv1.SandboxSpec{User: "1000:1001"}, ""},
		{"bridge", &sandboxv1.SandboxSpec{Network: "bridge"}, ""},
		{"another user", &sandboxv1.SandboxSpec{User: "root"}, `user "root": sandbox pods run as 1000:1001`},
		{"a docker host", &sandboxv1.SandboxSpec{DockerHost: "tcp://10.0.0.1:2376"}, "docker_host: this service runs sandboxes as Kubernetes pods"},
		{"egress", &sandboxv1.SandboxSpec{EgressAllow: []string{"api.example.com:443"}}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			st, err := svc.resolve(tc.spec)
			if tc.want == "" {
				if err != nil || !st.onKube() {
					t.Fatalf("refused: %v (settings %+v)", err, st)
				}
				return
			}
			if !errors.Is(err, errInvalid) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("got %v, want InvalidArgument with %q", err, tc.want)
			}
		})
	}
	// Local sandboxes are not the engine's business.
	local, err := New(Config{StateDir: shortTemp(t), ManagerID: "kube-local", DefaultType: backend.Local, AllowLocal: true}, WithKubernetes(kc))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = local.Close(t.Context()) })
	if st, err := local.resolve(nil); err != nil || st.onKube() {
		t.Fatalf("a local sandbox: %+v %v", st, err)
	}
}
