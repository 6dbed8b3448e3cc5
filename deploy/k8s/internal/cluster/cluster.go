// Package cluster starts a real single-node Kubernetes cluster for tests:
// etcd, kube-apiserver, kube-controller-manager, kube-scheduler, a private
// containerd, a kubelet, kube-proxy, CoreDNS and kube-router enforcing
// NetworkPolicy, with the node and its pods in a network namespace of their
// own, and removes every trace of it from the host when the test ends, also
// after a failure and after a run that was killed.
package cluster

import (
	"context"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"encoding/hex"
	"fmt"
	"math/big"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/wick-agent/wick/platform/testenv"
)

// KubeVersion is the Kubernetes release tools/kube pins; the programs are
// built with it as their version so that clients can parse what they report.
const KubeVersion = "v1.36.3"

// PauseImage is the pod sandbox image: the test's own pause program, never
// pulled.
const PauseImage = "wick.local/pause:test"

// clusterCIDR is the pods' address range; the node gets a /24 of it. Pod
// addresses exist only inside the node's network namespace, so it cannot
// clash with the host's networks.
const clusterCIDR = "10.244.0.0/16"

// serviceCIDR is the Services' virtual range; kube-proxy routes it inside
// the node's network namespace.
const serviceCIDR = "10.96.0.0/16"

// kubernetesServiceIP is the Service kubernetes's address in serviceCIDR.
const kubernetesServiceIP = "10.96.0.1"

// ClusterDNS is the address of the cluster's DNS Service (kube-system/
// kube-dns), which the kubelet writes into every pod's resolv.conf; its one
// endpoint is CoreDNS on the node's address. ClusterDomain is the suffix of
// Service names (redis.wick.svc.cluster.local).
const (
	ClusterDNS    = "10.96.0.10"
	ClusterDomain = "cluster.local"
)

// startTimeout bounds each component's start on a busy two-core machine.
const startTimeout = 2 * time.Minute

// pin is a Kubernetes program built from tools/kube.
func pin(name string) testenv.Pinned {
	return testenv.Pinned{Name: name, Module: "tools/kube", Package: "k8s.io/kubernetes/cmd/" + name,
		LDFlags: "-X k8s.io/component-base/version.gitVersion=" + KubeVersion}
}

// Pins are the programs the cluster builds from tools/kube, tools/coredns
// and tools/kuberouter (cold: minutes), kube-apiserver first (the manifest
// test of deploy/k8s runs it alone).
var Pins = []testenv.Pinned{pin("kube-apiserver"), pin("kube-controller-manager"), pin("kube-scheduler"), pin("kubelet"), pin("kube-proxy"),
	{Name: "coredns", Module: "tools/coredns", Package: "github.com/wick-agent/wick/tools/coredns"},
	{Name: "kube-router", Module: "tools/kuberouter", Package: "github.com/cloudnativelabs/kube-router/v2/cmd/kube-router"}}

// Cluster is a running single-node cluster.
type Cluster struct {
	// Name names the run: its directory, network namespace and cgroups.
	Name string
	// Dir holds the state of every component.
	Dir string
	// NodeName is the one node's name; NodeIP its address, which lives in
	// the network namespace Name (the kubelet and containerd run there).
	NodeName string
	NodeIP   net.IP
	// HostIP is the host's end of the veth to the node: the apiserver
	// listens there.
	HostIP net.IP
	// Config is an administrator's client configuration (system:masters).
	Config *rest.Config
	Client kubernetes.Interface

	containerdSock string
	procs          []*testenv.Proc
}

// Unavailable skips t because the machine cannot run a cluster, or fails it
// when WICK_TEST_K8S=1 says it must.
func Unavailable(t testing.TB, format string, args ...any) {
	t.Helper()
	msg := fmt.Sprintf(format, args...)
	if os.Getenv("WICK_TEST_K8S") == "1" {
		t.Fatalf("WICK_TEST_K8S=1 but no cluster can run here: %s", msg)
	}
	t.Skipf("skipping the single-node cluster: %s (WICK_TEST_K8S=1 makes this a failure)", msg)
}

// cniPlugins are the Debian containernetworking-plugins the node uses.
var cniPlugins = []string{"bridge", "host-local", "loopback"}

// cniSource is where Debian installs the CNI plugins.
const cniSource = "/usr/lib/cni"

// Require skips (or fails, see Unavailable) t when the machine lacks what a
// cluster needs: root, cgroup v1, the programs that run the node and pods.
func Require(t testing.TB) {
	t.Helper()
	if os.Geteuid() != 0 {
		Unavailable(t, "not root: the kubelet and containerd need root")
	}
	if _, err := os.Stat(filepath.Join(cgroupRoot, "memory", "memory.limit_in_bytes")); err != nil {
		Unavailable(t, "no cgroup v1 memory hierarchy at %s: the cluster is set up for cgroup v1 (%v)", cgroupRoot, err)
	}
	var missing []string
	for _, bin := range []string{"etcd", "containerd", "containerd-shim-runc-v2", "runc", "ctr", "ip", "nsenter", "iptables", "ipset"} {
		if _, err := exec.LookPath(bin); err != nil {
			missing = append(missing, bin)
		}
	}
	for _, p := range cniPlugins {
		if _, err := os.Stat(filepath.Join(cniSource, p)); err != nil {
			missing = append(missing, cniSource+"/"+p)
		}
	}
	// kube-router's rules see the traffic between pods on one bridge only
	// through br_netfilter, a module only the host can load.
	if _, err := os.Stat("/proc/sys/" + bridgeNFCall); err != nil {
		missing = append(missing, "br_netfilter (modprobe br_netfilter)")
	}
	if len(missing) > 0 {
		Unavailable(t, "missing %s (Debian: etcd-server containerd runc iproute2 util-linux iptables ipset containernetworking-plugins; scripts/test-deps.sh k8s installs them)", strings.Join(missing, ", "))
	}
}

// lockFile serialises clusters on one machine: the kubelet's sysctls are
// the machine's, and Sweep takes every cluster directory for a killed run's.
var lockFile = filepath.Join(os.TempDir(), Prefix+"lock")

// Start starts a cluster and registers its removal with t. It waits while
// another process's cluster runs; leftovers of a run that was killed are
// removed first.
func Start(t *testing.T) *Cluster {
	t.Helper()
	Require(t)
	lock, err := os.OpenFile(lockFile, os.O_CREATE|os.O_RDWR, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	// Registered first, so it runs after the cluster's own removal.
	t.Cleanup(func() { lock.Close() })
	if err := syscall.Flock(int(lock.Fd()), syscall.LOCK_EX); err != nil {
		t.Fatalf("lock %s: %v", lockFile, err)
	}
	if err := Sweep(); err != nil {
		t.Fatalf("remove leftovers of an earlier run: %v", err)
	}
	bins := map[string]string{}
	for _, p := range Pins {
		bin, err := p.Build(t)
		if err != nil {
			Unavailable(t, "%s does not build here: %v", p.Name, err)
		}
		bins[p.Name] = bin
	}
	etcd, _ := exec.LookPath("etcd")

	id := make([]byte, 3)
	if _, err := rand.Read(id); err != nil {
		t.Fatal(err)
	}
	c := &Cluster{Name: Prefix + hex.EncodeToString(id)}
	c.Dir = filepath.Join(os.TempDir(), c.Name)
	c.NodeName = c.Name
	if err := os.Mkdir(c.Dir, 0o700); err != nil {
		t.Fatal(err)
	}

	// Removal of everything on the host, last of all the cleanups; what
	// the host looked like before is what it must look like after.
	sysctlsBefore, err := ReadSysctls()
	if err != nil {
		t.Fatal(err)
	}
	if err := saveSysctls(c.Dir, sysctlsBefore); err != nil {
		t.Fatal(err)
	}
	podNetnsBefore := podNetnsNames()
	rulesBefore, err := kubeRules()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := teardown(c.Name, c.Dir); err != nil {
			t.Errorf("cluster teardown: %v", err)
		}
		after, err := ReadSysctls()
		if err != nil {
			t.Error(err)
		}
		for k, v := range sysctlsBefore {
			if after[k] != v {
				t.Errorf("sysctl %s is %s after the cluster, was %s", k, after[k], v)
			}
		}
		if m, err := MountsUnder(c.Dir); err != nil || len(m) > 0 {
			t.Errorf("mounts left under %s: %v %v", c.Dir, m, err)
		}
		if left := CgroupsLeft(c.Name); len(left) > 0 {
			t.Errorf("cgroups left: %v", left)
		}
		if NetnsExists(c.Name) {
			t.Errorf("network namespace %s left", c.Name)
		}
		if rules, err := kubeRules(); err != nil || rules != rulesBefore {
			t.Errorf("the host's iptables rules of Kubernetes and CNI changed:\nbefore:\n%s\nafter:\n%s %v", rulesBefore, rules, err)
		}
		for ns := range podNetnsNames() {
			if !podNetnsBefore[ns] {
				t.Errorf("pod network namespace %s made in %s and left", ns, netnsDir)
			}
		}
	})

	c.network(t)
	if err := makeCgroups(c.Name); err != nil {
		Unavailable(t, "cannot create cgroups %s: %v", c.Name, err)
	}
	p, err := newPKI(c.Dir)
	if err != nil {
		t.Fatal(err)
	}
	c.startControlPlane(t, p, etcd, bins)
	c.startContainerd(t)
	if err := c.ImportImage(Image{Name: PauseImage, Files: []File{{Path: "/pause", Mode: 0o755, Data: buildPause(t, c.Dir)}}, Entrypoint: []string{"/pause"}}); err != nil {
		t.Fatal(err)
	}
	c.startKubelet(t, p, bins["kubelet"])
	c.waitNodeReady(t)
	c.startKubeProxy(t, p, bins["kube-proxy"])
	c.startNetworkPolicy(t, p, bins["kube-router"])
	c.startDNS(t, bins["coredns"])

	// First of the cleanups: pods end as the kubelet ends them, so their
	// sandboxes, network namespaces and mounts go through the real path;
	// whatever is left then is removed by force.
	t.Cleanup(c.drain)
	return c
}

// network creates the node's network namespace and a veth pair to it, with
// a /30 of 10.250.0.0/16 that no address of the host is in.
func (c *Cluster) network(t *testing.T) {
	t.Helper()
	addrs, err := net.InterfaceAddrs()
	if err != nil {
		t.Fatal(err)
	}
	var subnet *net.IPNet
	for range 100 {
		n, err := rand.Int(rand.Reader, big.NewInt(1<<14))
		if err != nil {
			t.Fatal(err)
		}
		v := n.Int64() * 4
		cand := &net.IPNet{IP: net.IPv4(10, 250, byte(v>>8), byte(v)).To4(), Mask: net.CIDRMask(30, 32)}
		taken := false
		for _, a := range addrs {
			if ipn, ok := a.(*net.IPNet); ok && (cand.Contains(ipn.IP) || ipn.Contains(cand.IP)) {
				taken = true
			}
		}
		if !taken {
			subnet = cand
			break
		}
	}
	if subnet == nil {
		t.Fatal("no free /30 in 10.250.0.0/16")
	}
	c.HostIP = net.IPv4(subnet.IP[0], subnet.IP[1], subnet.IP[2], subnet.IP[3]+1).To4()
	c.NodeIP = net.IPv4(subnet.IP[0], subnet.IP[1], subnet.IP[2], subnet.IP[3]+2).To4()
	suffix := strings.TrimPrefix(c.Name, Prefix)
	hostEnd, nodeEnd := "wkh"+suffix, "wkn"+suffix
	for _, args := range [][]string{
		{"netns", "add", c.Name},
		{"link", "add", hostEnd, "type", "veth", "peer", "name", nodeEnd, "netns", c.Name},
		{"addr", "add", c.HostIP.String() + "/30", "dev", hostEnd},
		{"link", "set", hostEnd, "up"},
		{"-n", c.Name, "addr", "add", c.NodeIP.String() + "/30", "dev", nodeEnd},
		{"-n", c.Name, "link", "set", nodeEnd, "up"},
		{"-n", c.Name, "link", "set", "lo", "up"},
		{"-n", c.Name, "route", "add", "default", "via", c.HostIP.String()},
	} {
		if err := ip(args...); err != nil {
			Unavailable(t, "network namespace: %v", err)
		}
	}
}

// inNetns runs bin in the node's network namespace, and in the host's
// mount namespace: the kubelet's volume mounts must be what runc sees.
func (c *Cluster) inNetns(bin string, args ...string) (string, []string) {
	return "nsenter", append([]string{"--net=" + filepath.Join(netnsDir, c.Name), "--", bin}, args...)
}

func (c *Cluster) proc(t *testing.T, name, bin string, args []string, ready testenv.Ready) {
	t.Helper()
	p := testenv.NewProc(t, name, bin, args, ready)
	p.Start()
	c.procs = append(c.procs, p)
}

// writeKubeconfig writes a kubeconfig for a client certificate.
func (c *Cluster) writeKubeconfig(name, server, ca, cert, key string) (string, error) {
	f := filepath.Join(c.Dir, name+".kubeconfig")
	return f, os.WriteFile(f, []byte(fmt.Sprintf(`apiVersion: v1
kind: Config
clusters:
- name: wick
  cluster: {server: %q, certificate-authority: %q}
users:
- name: %s
  user: {client-certificate: %q, client-key: %q}
contexts:
- name: %s
  context: {cluster: wick, user: %s}
current-context: %s
`, server, ca, name, cert, key, name, name, name)), 0o600)
}

func (c *Cluster) startControlPlane(t *testing.T, p *pki, etcdBin string, bins map[string]string) {
	t.Helper()
	clientURL := "http://127.0.0.1:" + strconv.Itoa(testenv.FreePort(t))
	peerURL := "http://127.0.0.1:" + strconv.Itoa(testenv.FreePort(t))
	c.proc(t, "etcd", etcdBin, []string{
		"--name=" + c.Name,
		"--data-dir=" + filepath.Join(c.Dir, "etcd"),
		"--listen-client-urls=" + clientURL,
		"--advertise-client-urls=" + clientURL,
		"--listen-peer-urls=" + peerURL,
		"--initial-advertise-peer-urls=" + peerURL,
		"--initial-cluster=" + c.Name + "=" + peerURL,
		"--log-level=warn",
	}, httpOK(clientURL+"/health", nil))

	must := func(a, b string, err error) (string, string) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
		return a, b
	}
	saKey, saPub := must(p.serviceAccountKeys())
	// In-cluster clients (the sandbox service) reach the API server at the
	// Service kubernetes's address, the first of the Service range.
	serveCert, serveKey := must(p.issue("apiserver", "kube-apiserver", nil, c.HostIP, net.ParseIP(kubernetesServiceIP)))
	kubeletClientCert, kubeletClientKey := must(p.issue("apiserver-kubelet-client", "kube-apiserver-kubelet-client", []string{"system:masters"}))
	adminCert, adminKey := must(p.issue("admin", "wick-admin", []string{"system:masters"}))

	port := testenv.FreePort(t)
	server := "https://" + net.JoinHostPort(c.HostIP.String(), strconv.Itoa(port))
	tlsCfg, err := clientTLS(p.caFile(), adminCert, adminKey)
	if err != nil {
		t.Fatal(err)
	}
	c.proc(t, "kube-apiserver", bins["kube-apiserver"], []string{
		"--etcd-servers=" + clientURL,
		"--bind-address=" + c.HostIP.String(),
		"--advertise-address=" + c.HostIP.String(),
		"--secure-port=" + strconv.Itoa(port),
		"--tls-cert-file=" + serveCert,
		"--tls-private-key-file=" + serveKey,
		"--client-ca-file=" + p.caFile(),
		"--authorization-mode=Node,RBAC",
		"--enable-admission-plugins=NodeRestriction,PodSecurity",
		"--service-account-issuer=https://kubernetes.default.svc.cluster.local",
		"--service-account-key-file=" + saPub,
		"--service-account-signing-key-file=" + saKey,
		"--service-cluster-ip-range=" + serviceCIDR,
		"--kubelet-client-certificate=" + kubeletClientCert,
		"--kubelet-client-key=" + kubeletClientKey,
		"--kubelet-certificate-authority=" + p.caFile(),
		"--kubelet-preferred-address-types=InternalIP",
	}, httpOK(server+"/readyz", &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{TLSClientConfig: tlsCfg}}))

	c.Config = &rest.Config{
		Host: server,
		TLSClientConfig: rest.TLSClientConfig{
			CAFile: p.caFile(), CertFile: adminCert, KeyFile: adminKey,
		},
		Timeout: 30 * time.Second,
	}
	if c.Client, err = kubernetes.NewForConfig(c.Config); err != nil {
		t.Fatal(err)
	}

	insecure := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{
		// Their serving certificates are self-signed, on loopback.
		TLSClientConfig: &tls.Config{InsecureSkipVerify: true},
	}}
	cmCert, cmKey := must(p.issue("controller-manager", "system:kube-controller-manager", nil))
	cmConfig, err := c.writeKubeconfig("controller-manager", server, p.caFile(), cmCert, cmKey)
	if err != nil {
		t.Fatal(err)
	}
	cmPort := testenv.FreePort(t)
	c.proc(t, "kube-controller-manager", bins["kube-controller-manager"], []string{
		"--kubeconfig=" + cmConfig,
		"--authentication-kubeconfig=" + cmConfig,
		"--authorization-kubeconfig=" + cmConfig,
		"--bind-address=127.0.0.1",
		"--secure-port=" + strconv.Itoa(cmPort),
		"--cert-dir=" + filepath.Join(c.Dir, "controller-manager"),
		"--leader-elect=false",
		"--use-service-account-credentials=true",
		"--service-account-private-key-file=" + saKey,
		"--root-ca-file=" + p.caFile(),
		"--allocate-node-cidrs=true",
		"--cluster-cidr=" + clusterCIDR,
		"--node-cidr-mask-size=24",
		"--service-cluster-ip-range=" + serviceCIDR,
	}, httpOK("https://127.0.0.1:"+strconv.Itoa(cmPort)+"/healthz", insecure))

	schedCert, schedKey := must(p.issue("scheduler", "system:kube-scheduler", nil))
	schedConfig, err := c.writeKubeconfig("scheduler", server, p.caFile(), schedCert, schedKey)
	if err != nil {
		t.Fatal(err)
	}
	schedPort := testenv.FreePort(t)
	c.proc(t, "kube-scheduler", bins["kube-scheduler"], []string{
		"--kubeconfig=" + schedConfig,
		"--authentication-kubeconfig=" + schedConfig,
		"--authorization-kubeconfig=" + schedConfig,
		"--bind-address=127.0.0.1",
		"--secure-port=" + strconv.Itoa(schedPort),
		"--cert-dir=" + filepath.Join(c.Dir, "scheduler"),
		"--leader-elect=false",
	}, httpOK("https://127.0.0.1:"+strconv.Itoa(schedPort)+"/healthz", insecure))
}

func clientTLS(caFile, certFile, keyFile string) (*tls.Config, error) {
	ca, err := os.ReadFile(caFile)
	if err != nil {
		return nil, err
	}
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(ca)
	cert, err := tls.LoadX509KeyPair(certFile, keyFile)
	if err != nil {
		return nil, err
	}
	return &tls.Config{RootCAs: pool, Certificates: []tls.Certificate{cert}}, nil
}

// httpOK waits until a GET of url answers 200, within startTimeout.
func httpOK(url string, c *http.Client) testenv.Ready {
	if c == nil {
		c = &http.Client{Timeout: 5 * time.Second}
	}
	return ready(url+" answering 200", func() error {
		resp, err := c.Get(url)
		if err != nil {
			return err
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			return fmt.Errorf("status %s", resp.Status)
		}
		return nil
	})
}

// ready polls check until it succeeds, failing when the process exits or
// startTimeout passes: a process start has no event to wait on.
func ready(what string, check func() error) testenv.Ready {
	return func(t testing.TB, exited <-chan error) {
		t.Helper()
		deadline := time.Now().Add(startTimeout)
		for {
			err := check()
			if err == nil {
				return
			}
			if time.Now().After(deadline) {
				t.Fatalf("no %s within %s: %v", what, startTimeout, err)
			}
			select {
			case err := <-exited:
				t.Fatalf("exited before %s: %v", what, err)
			case <-time.After(100 * time.Millisecond):
			}
		}
	}
}

// startContainerd starts a containerd of the cluster's own: its root, state,
// sockets and plugin directories are under Dir, so that it shares nothing
// with the Docker engine's containerd.
func (c *Cluster) startContainerd(t *testing.T) {
	t.Helper()
	d := filepath.Join(c.Dir, "containerd")
	cniBin, cniConf := filepath.Join(c.Dir, "cni", "bin"), filepath.Join(c.Dir, "cni", "conf")
	for _, dir := range []string{d, cniBin, cniConf} {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	for _, p := range cniPlugins {
		if err := os.Symlink(filepath.Join(cniSource, p), filepath.Join(cniBin, p)); err != nil {
			t.Fatal(err)
		}
	}
	c.containerdSock = filepath.Join(d, "containerd.sock")
	// The pods' network: a bridge with host-local addresses from the node's
	// pod CIDR, which the kubelet hands to containerd once the controller
	// manager has allocated it (containerd then writes the configuration
	// from this template into conf_dir). The bridge, the pods' veths and
	// their addresses are made in containerd's network namespace: the node's.
	// Pods get a route to the Service range through the bridge, where
	// kube-proxy's rules translate it, and no default route: nothing beyond
	// the node.
	template := filepath.Join(c.Dir, "cni", "template.conflist")
	if err := os.WriteFile(template, []byte(`{
  "cniVersion": "0.4.0",
  "name": "wick-k8s",
  "plugins": [{
    "type": "bridge",
    "bridge": "cni0",
    "isGateway": true,
    "ipMasq": false,
    "hairpinMode": true,
    "ipam": {"type": "host-local", "ranges": [[{"subnet": "{{.PodCIDR}}"}]], "routes": [{"dst": "`+serviceCIDR+`"}], "dataDir": "`+filepath.Join(c.Dir, "cni", "ipam")+`"}
  }]
}
`), 0o600); err != nil {
		t.Fatal(err)
	}
	config := filepath.Join(d, "config.toml")
	// restrict_oom_score_adj: the VM withholds CAP_SYS_RESOURCE, so a
	// container cannot get an OOM score below containerd's own.
	// netns_mounts_under_state_dir: the pods' network namespaces are mounted
	// under Dir, not /run/netns, so that a killed run's are found as its own.
	if err := os.WriteFile(config, []byte(fmt.Sprintf(`version = 2
root = %[1]q
state = %[2]q
disabled_plugins = ["io.containerd.snapshotter.v1.aufs", "io.containerd.snapshotter.v1.btrfs", "io.containerd.snapshotter.v1.devmapper", "io.containerd.snapshotter.v1.zfs", "io.containerd.tracing.processor.v1.otlp", "io.containerd.internal.v1.tracing"]

[grpc]
  address = %[3]q

[ttrpc]
  address = %[4]q

[plugins."io.containerd.internal.v1.opt"]
  path = %[5]q

[plugins."io.containerd.grpc.v1.cri"]
  sandbox_image = %[6]q
  restrict_oom_score_adj = true
  netns_mounts_under_state_dir = true
  stream_server_address = "127.0.0.1"
  stream_server_port = "0"
  [plugins."io.containerd.grpc.v1.cri".containerd]
    snapshotter = "overlayfs"
    default_runtime_name = "runc"
    [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc]
      runtime_type = "io.containerd.runc.v2"
      [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc.options]
        SystemdCgroup = false
  [plugins."io.containerd.grpc.v1.cri".cni]
    bin_dir = %[7]q
    conf_dir = %[8]q
    conf_template = %[9]q
`, filepath.Join(d, "root"), filepath.Join(d, "state"), c.containerdSock, c.containerdSock+".ttrpc",
		filepath.Join(d, "opt"), PauseImage, cniBin, cniConf, template)), 0o600); err != nil {
		t.Fatal(err)
	}
	bin, args := c.inNetns("containerd", "--config", config)
	c.proc(t, "containerd", bin, args, ready("containerd answering on "+c.containerdSock, func() error {
		return c.ctr("version")
	}))
}

// buildPause builds the pause program, static, into dir.
func buildPause(t *testing.T, dir string) []byte {
	t.Helper()
	goBin, err := exec.LookPath("go")
	if err != nil {
		goBin = filepath.Join(os.Getenv("GOROOT"), "bin", "go")
	}
	out := filepath.Join(dir, "pause")
	cmd := exec.Command(goBin, "build", "-trimpath", "-ldflags=-s -w", "-o", out, "./internal/cluster/pause")
	cmd.Dir = filepath.Join(testenv.RepoRoot(t), "deploy", "k8s")
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("build pause: %v\n%s", err, b)
	}
	b, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func (c *Cluster) startKubelet(t *testing.T, p *pki, bin string) {
	t.Helper()
	d := filepath.Join(c.Dir, "kubelet")
	if err := os.MkdirAll(d, 0o755); err != nil {
		t.Fatal(err)
	}
	cert, key, err := p.issue("kubelet-client", "system:node:"+c.NodeName, []string{"system:nodes"})
	if err != nil {
		t.Fatal(err)
	}
	kubeconfig, err := c.writeKubeconfig("kubelet", c.Config.Host, p.caFile(), cert, key)
	if err != nil {
		t.Fatal(err)
	}
	serveCert, serveKey, err := p.issue("kubelet-serving", "system:node:"+c.NodeName, []string{"system:nodes"}, c.NodeIP)
	if err != nil {
		t.Fatal(err)
	}
	endpoint := "unix://" + c.containerdSock
	config := filepath.Join(c.Dir, "kubelet.yaml")
	// failCgroupV1: false, the VM has cgroup v1. cgroupRoot: the pods'
	// cgroups go under the run's own. The thresholds: the disk of a shared
	// machine is often fuller than the defaults allow, and eviction or image
	// garbage collection would act on a disk the test does not own.
	if err := os.WriteFile(config, []byte(fmt.Sprintf(`apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
failCgroupV1: false
failSwapOn: false
cgroupDriver: cgroupfs
cgroupRoot: /%[1]s
cgroupsPerQOS: true
cpuManagerPolicy: none
memoryManagerPolicy: None
containerRuntimeEndpoint: %[2]q
imageServiceEndpoint: %[2]q
podLogsDir: %[3]q
address: %[4]q
port: 10250
readOnlyPort: 0
healthzBindAddress: %[4]q
healthzPort: 10248
tlsCertFile: %[5]q
tlsPrivateKeyFile: %[6]q
authentication:
  anonymous: {enabled: false}
  webhook: {enabled: true}
  x509: {clientCAFile: %[7]q}
authorization:
  mode: Webhook
evictionHard:
  memory.available: "50Mi"
  nodefs.available: "1%%"
  imagefs.available: "1%%"
  nodefs.inodesFree: "1%%"
imageGCHighThresholdPercent: 100
imageGCLowThresholdPercent: 99
registerNode: true
clusterDNS: [%[8]q]
clusterDomain: %[9]q
`, c.Name, endpoint, filepath.Join(c.Dir, "pod-logs"), c.NodeIP.String(), serveCert, serveKey, p.caFile(), ClusterDNS, ClusterDomain)), 0o600); err != nil {
		t.Fatal(err)
	}
	nsBin, args := c.inNetns(bin,
		"--config="+config,
		"--kubeconfig="+kubeconfig,
		"--root-dir="+d,
		"--cert-dir="+filepath.Join(d, "pki"),
		"--hostname-override="+c.NodeName,
		"--node-ip="+c.NodeIP.String(),
	)
	c.proc(t, "kubelet", nsBin, args, httpOK("http://"+net.JoinHostPort(c.NodeIP.String(), "10248")+"/healthz", nil))
}

// waitNodeReady waits for the node to register, get its pod CIDR and be
// Ready (its network is configured from that CIDR).
func (c *Cluster) waitNodeReady(t *testing.T) {
	t.Helper()
	ctx := t.Context()
	if err := wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, startTimeout, true, func(ctx context.Context) (bool, error) {
		n, err := c.Client.CoreV1().Nodes().Get(ctx, c.NodeName, metav1.GetOptions{})
		if err != nil {
			return false, nil
		}
		return n.Spec.PodCIDR != "", nil
	}); err != nil {
		t.Fatalf("node %s registered with a pod CIDR: %v", c.NodeName, err)
	}
	var last string
	if err := wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, startTimeout, true, func(ctx context.Context) (bool, error) {
		n, err := c.Client.CoreV1().Nodes().Get(ctx, c.NodeName, metav1.GetOptions{})
		if err != nil {
			last = err.Error()
			return false, nil
		}
		for _, cond := range n.Status.Conditions {
			if cond.Type == corev1.NodeReady {
				last = string(cond.Status) + ": " + cond.Message
				return cond.Status == corev1.ConditionTrue, nil
			}
		}
		return false, nil
	}); err != nil {
		t.Fatalf("node %s Ready: %v (last: %s)", c.NodeName, err, last)
	}
}

// drain stops the controller manager, deletes every pod and waits until
// the kubelet has ended them and containerd has stopped their sandboxes;
// then it stops the kubelet, containerd and the rest of the control plane. What does not end in time is removed by force afterwards.
func (c *Cluster) drain() {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	// Without the controller manager no ReplicaSet or StatefulSet makes a
	// new pod for one deleted here.
	for _, p := range c.procs {
		if p.Name() == "kube-controller-manager" && p.Running() {
			p.Kill()
		}
	}
	pods, err := c.Client.CoreV1().Pods("").List(ctx, metav1.ListOptions{})
	if err == nil {
		grace := int64(1)
		for _, p := range pods.Items {
			_ = c.Client.CoreV1().Pods(p.Namespace).Delete(ctx, p.Name, metav1.DeleteOptions{GracePeriodSeconds: &grace})
		}
		_ = wait.PollUntilContextCancel(ctx, 200*time.Millisecond, true, func(ctx context.Context) (bool, error) {
			left, err := c.Client.CoreV1().Pods("").List(ctx, metav1.ListOptions{})
			if err != nil || len(left.Items) > 0 {
				return false, nil
			}
			out, err := exec.CommandContext(ctx, "ctr", "--address", c.containerdSock, "--namespace", "k8s.io", "tasks", "ls", "-q").Output()
			return err == nil && strings.TrimSpace(string(out)) == "", nil
		})
	}
	for i := len(c.procs) - 1; i >= 0; i-- {
		if c.procs[i].Running() {
			c.procs[i].Kill()
		}
	}
}
