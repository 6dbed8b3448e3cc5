package k8s

import (
	"cmp"
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	corev1 "k8s.io/api/core/v1"

	"github.com/wick-agent/wick/deploy/k8s/internal/suiteapi"
	"github.com/wick-agent/wick/platform/identity"
	"github.com/wick-agent/wick/platform/testenv"
	"github.com/wick-agent/wick/services/sandbox"
	"github.com/wick-agent/wick/services/sandbox/sandboximage"
)

// The topology test runs the prod-docker overlay (production with the Docker
// sandbox engine, which this machine has) as processes on this machine:
// each container of the suite is its binary, started with exactly the
// arguments and environment its rendered pod spec gives it. Only the values
// that name the cluster change, through the explicit mapping below, and any
// such value the mapping does not know fails the test, so the manifests
// cannot name a thing the test did not stand up.

// topologyReplicas is how many pods of each workload the test runs. Two
// agents are what the kill needs; every sandbox pod runs, since the agents
// place sandboxes over all of them by name. One gateway and one llmgw carry
// the traffic of this test.
var topologyReplicas = map[string]int{"gateway": 1, "agent": 2, "llmgw": 1, "sandbox": 3}

// topologyOrder is the order the services start in: each after what it dials.
var topologyOrder = []string{"llmgw", "sandbox", "agent", "gateway"}

// pod is one replica of a workload the test runs.
type pod struct {
	w     workload
	index int
	name  string           // the pod's name: <statefulset>-<i>, or <deployment>-<i> here
	ports map[int32]string // containerPort → loopback address it listens on
	proc  *testenv.Proc
}

// topology is the overlay as the test runs it.
type topology struct {
	r       *rendered
	pods    map[string][]*pod // by workload name
	secrets map[string]string // "secret/key" → test value
	// exact maps values that name a file, an image or an endpoint outside the
	// suite to what stands for it here.
	exact map[string]string
	// stateDirs gives each sandbox pod its own disk, as its claim would.
	stateDirs map[string]string
	// run tags this run's pod names (podName).
	run string
}

// podName is the name p's processes see as their pod's (metadata.name): p's
// name with the run's tag, as two clusters' pods are different pods.
func (tp *topology) podName(p *pod) string { return p.name + "-" + tp.run }

func TestTopology(t *testing.T) {
	if testing.Short() {
		t.Skip("starts the suite as processes on Docker")
	}
	redisBin, err := exec.LookPath("redis-server")
	if err != nil {
		testenv.Missing(t, "redis-server not found in PATH")
	}
	cli := testenv.Docker(t)
	if _, err := os.Stat(sandboximage.BusyboxPath); err != nil {
		testenv.Missing(t, "static busybox at %s", sandboximage.BusyboxPath)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 4*time.Minute)
	defer cancel()

	r, err := render("overlays/prod-docker")
	if err != nil {
		t.Fatal(err)
	}
	// A short directory: the sandboxes' daemon sockets live under it.
	tmp, err := os.MkdirTemp("", "wkt")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = sandbox.RemoveStateDir(tmp) })
	daemonBin, wickfsBin, err := sandboximage.Binaries(ctx, testenv.RepoRoot(t), tmp)
	if err != nil {
		t.Fatal(err)
	}
	image, err := sandboximage.Build(ctx, cli, map[string]string{"wick.k8s-topology": "1"})
	if err != nil {
		t.Fatal(err)
	}

	// Secrets: what `kubectl create secret` would hold (docs/deploy.md#install).
	redisPass := randomHex(t)
	redisPort := strconv.Itoa(testenv.FreePort(t))
	redisAddr := "127.0.0.1:" + redisPort
	tokensFile := filepath.Join(tmp, "tokens")
	if err := os.WriteFile(tokensFile, []byte("tok-alice alice\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	keysDir := filepath.Join(tmp, "llm-keys") // no provider keys: scripted models only
	agentSecretsDir := filepath.Join(tmp, "agent-secrets")
	for _, d := range []string{keysDir, agentSecretsDir} {
		if err := os.Mkdir(d, 0o700); err != nil {
			t.Fatal(err)
		}
	}
	dockerHost := os.Getenv("DOCKER_HOST")
	if dockerHost == "" {
		dockerHost = "unix:///var/run/docker.sock"
	}
	topo := &topology{
		r:    r,
		pods: map[string][]*pod{},
		secrets: map[string]string{
			"wick-identity/WICK_IDENTITY_KEY": identity.RandomKey().String(),
			"wick-llm-http/token":             randomHex(t),
			// A managed Redis that requires a password, as prod's Secret names it.
			"wick-redis/addr": "redis://:" + redisPass + "@" + redisAddr + "/0",
		},
		exact: map[string]string{
			"/etc/wick/tokens/tokens":    tokensFile,
			"/run/secrets/llm":           keysDir,
			"/run/secrets/agent":         agentSecretsDir,
			"/usr/local/bin/wick-daemon": daemonBin,
			"/usr/local/bin/wickfs":      wickfsBin,
			// The engine of each sandbox pod is its dockerd sidecar; here all
			// three share this machine's engine, each with its own manager id.
			"unix:///var/run/wick-docker/docker.sock":               dockerHost,
			"registry.example.com/wick/wick-sandbox-runtime:latest": image,
			// No collector runs here: traces go to a port nothing listens on,
			// and the exporters drop them.
			"http://otel-collector.observability.svc.cluster.local:4317": "http://127.0.0.1:" + strconv.Itoa(testenv.FreePort(t)),
		},
		stateDirs: map[string]string{},
		run:       randomHex(t)[:8],
	}
	topo.layout(t, tmp)
	// The sandbox pods name their manager ids after themselves: a run gives
	// its pods names of its own (podName), so the engine's containers of
	// another run, or of an instance beside it, are never this run's; what
	// this run made goes when it ends, after its processes have stopped.
	for _, p := range topo.pods["sandbox"] {
		testenv.RemoveLabelled(t, cli, "wick.manager="+topo.podName(p))
	}

	testenv.NewProc(t, "redis-server", redisBin, []string{"--port", redisPort, "--bind", "127.0.0.1", "--save", "",
		"--requirepass", redisPass, "--dir", t.TempDir(), "--loglevel", "warning"}, testenv.RedisServing(redisAddr, redisPass)).Start()
	for _, name := range topologyOrder {
		for _, p := range topo.pods[name] {
			p.proc = topo.start(t, p)
			p.proc.Start()
		}
	}
	rdb := redis.NewClient(&redis.Options{Addr: redisAddr, Password: redisPass})
	t.Cleanup(func() { rdb.Close() })

	gw := "http://" + topo.pods["gateway"][0].ports[httpPort(t, topo.pods["gateway"][0])]
	api := suiteapi.New(t, gw, "tok-alice")
	runTopologyScenario(ctx, t, api, rdb, topo.pods["agent"])
}

// runTopologyScenario holds a run on one agent replica in the middle of a
// tool round, SIGKILLs that replica, and checks what the user keeps: the
// run ends with an error, the thread has every completed round and no call
// without its result, and the next message runs to the end on the other
// replica.
func runTopologyScenario(ctx context.Context, t *testing.T, api *suiteapi.Client, rdb *redis.Client, agents []*pod) {
	// Round 1 writes a file; round 2 waits in the sandbox until the test
	// writes "release"; then the model answers.
	model := `script:{"turns":[` +
		`{"text":"Writing.","tool_calls":[{"name":"write_file","arguments":{"path":"/workspace/round1.txt","content":"kept\n"}}]},` +
		`{"text":"Waiting.","tool_calls":[{"name":"execute","arguments":{"command":"while [ ! -f release ]; do sleep 0.05; done; echo released"}}]},` +
		`{"text":"All rounds done."}],"end_text":"All rounds done."}`
	api.Do("POST", "/agents", map[string]any{"agent_id": "topo", "model": model, "backend": map[string]any{"type": "docker"}}, nil)

	stream := api.SSE(ctx, "POST", "/agents/topo/stream", map[string]any{"messages": []map[string]string{{"role": "user", "content": "start"}}})
	var runID, threadID string
	wroteRound1 := false
	for {
		ev, err := stream.Next()
		if err != nil {
			t.Fatalf("stream ended before round 2 started: %v", err)
		}
		runID, threadID = cmp.Or(runID, ev.Str("run_id")), cmp.Or(threadID, ev.Str("thread_id"))
		if ev.Type == "on_tool_end" && ev.Str("name") == "write_file" {
			wroteRound1 = true
		}
		if ev.Type == "on_tool_start" && ev.Str("name") == "execute" {
			break
		}
		if ev.Type == "error" || ev.Type == "done" {
			t.Fatalf("run ended before round 2: %s %s", ev.Type, ev.Data)
		}
	}
	if !wroteRound1 || runID == "" || threadID == "" {
		t.Fatalf("round 1 done %v, run %q, thread %q", wroteRound1, runID, threadID)
	}

	// The thread's lock names the replica that holds the run.
	holder, err := rdb.Get(ctx, "wick:{alice}:lock:"+threadID).Result()
	if err != nil {
		t.Fatalf("read the thread's lock: %v", err)
	}
	var victim, survivor *pod
	for _, p := range agents {
		if strings.HasSuffix(holder, ":"+strconv.Itoa(p.proc.Pid())) {
			victim = p
		} else {
			survivor = p
		}
	}
	if victim == nil || survivor == nil {
		t.Fatalf("lock token %q names none of the agent replicas", holder)
	}
	t.Logf("run %s is on %s; SIGKILL", runID, victim.name)
	victim.proc.Kill()

	// The stream the user had ends, without a done.
	for {
		ev, err := stream.Next()
		if err != nil {
			break
		}
		if ev.Type == "done" {
			t.Fatalf("the stream of a run whose replica was killed says done: %s", ev.Data)
		}
		if ev.Type == "error" {
			break
		}
	}
	// Re-joined on the survivor, the run ends with an error once its lease
	// expired, and says so.
	rejoin := api.SSE(ctx, "GET", "/runs/"+runID+"/events", nil)
	var last suiteapi.Event
	for {
		ev, err := rejoin.Next()
		if err != nil {
			break
		}
		last = ev
	}
	if last.Type != "error" {
		t.Fatalf("the re-joined run ended with %q %s, want an error event", last.Type, last.Data)
	}
	var run map[string]any
	api.Do("GET", "/runs/"+runID, nil, &run)
	if st := fmt.Sprint(run["status"]); st == "running" || st == "done" || st == "completed" {
		t.Fatalf("the killed run's status is %q", st)
	}

	// What the user kept: round 1 in the thread with its result, the file on
	// the engine, and no call without a result.
	msgs := api.Thread(threadID)
	suiteapi.CheckPaired(t, msgs)
	if !suiteapi.HasToolResult(msgs, "write_file") {
		t.Fatalf("round 1 (write_file) is not in the thread: %+v", msgs)
	}
	var file struct{ Content string }
	api.Do("GET", "/agents/topo/files/read?path=/workspace/round1.txt", nil, &file)
	if file.Content != "kept\n" {
		t.Fatalf("round1.txt holds %q", file.Content)
	}

	// The next message runs on the other replica to the end. The file lets a
	// replayed round 2 through; it goes to the sandbox through the survivor.
	api.Do("PUT", "/agents/topo/files/write", map[string]any{"path": "/workspace/release", "content": "go"}, nil)
	next := api.SSE(ctx, "POST", "/agents/topo/stream", map[string]any{"thread_id": threadID,
		"messages": []map[string]string{{"role": "user", "content": "go on"}}})
	var end suiteapi.Event
	for {
		ev, err := next.Next()
		if err != nil {
			break
		}
		end = ev
		if ev.Type == "done" || ev.Type == "error" {
			break
		}
	}
	if end.Type != "done" {
		t.Fatalf("the next run ended with %q %s, want done", end.Type, end.Data)
	}
	msgs = api.Thread(threadID)
	suiteapi.CheckPaired(t, msgs)
	if !suiteapi.HasToolResult(msgs, "write_file") || msgs[len(msgs)-1].Role != "assistant" || !strings.Contains(msgs[len(msgs)-1].Content, "All rounds done.") {
		t.Fatalf("after the next run the thread is %+v", msgs)
	}
}

// layout gives every pod its name, its listen addresses and, for sandbox
// pods, a state directory.
func (tp *topology) layout(t *testing.T, tmp string) {
	t.Helper()
	for _, w := range tp.r.workloads() {
		n, ok := topologyReplicas[w.Name]
		if !ok {
			t.Fatalf("%s: the topology test does not know how many to run", w)
		}
		for i := range n {
			p := &pod{w: w, index: i, name: fmt.Sprintf("%s-%d", w.Name, i), ports: map[int32]string{}}
			for _, cp := range suiteContainer(t, w).Ports {
				p.ports[cp.ContainerPort] = "127.0.0.1:" + strconv.Itoa(testenv.FreePort(t))
			}
			if w.Name == "sandbox" {
				dir := filepath.Join(tmp, "s"+strconv.Itoa(i))
				if err := os.Mkdir(dir, 0o700); err != nil {
					t.Fatal(err)
				}
				tp.stateDirs[p.name] = dir
			}
			tp.pods[w.Name] = append(tp.pods[w.Name], p)
		}
	}
}

// suiteContainer is the container of w that runs a suite binary.
func suiteContainer(t *testing.T, w workload) corev1.Container {
	t.Helper()
	for _, c := range w.Pod.Spec.Containers {
		if _, ok := binaries[imageName(c.Image)]; ok {
			return c
		}
	}
	t.Fatalf("%s runs no suite binary", w)
	return corev1.Container{}
}

func httpPort(t *testing.T, p *pod) int32 {
	t.Helper()
	for _, cp := range suiteContainer(t, p.w).Ports {
		if cp.Name == "http" {
			return cp.ContainerPort
		}
	}
	t.Fatalf("%s has no http port", p.name)
	return 0
}

// start describes p's process: its binary, its arguments and its
// environment, each value mapped.
func (tp *topology) start(t *testing.T, p *pod) *testenv.Proc {
	t.Helper()
	c := suiteContainer(t, p.w)
	bin := imageName(c.Image)
	if _, probs := settingsOf(c, flagsOf[bin], tp.r); len(probs) > 0 {
		t.Fatalf("%s: %q", p.name, probs)
	}
	var args []string
	for _, a := range c.Args {
		name, value, hasValue := strings.Cut(a, "=")
		if !hasValue {
			args = append(args, a)
			continue
		}
		args = append(args, name+"="+tp.mapValue(t, p, name, value))
	}
	env := map[string]string{}
	raw := map[string]bool{} // test values and pod names: nothing to map
	for _, ef := range c.EnvFrom {
		for k, v := range tp.r.configMap(ef.ConfigMapRef.Name).Data {
			env[ef.Prefix+k] = v
		}
	}
	for _, e := range c.Env {
		switch {
		case e.ValueFrom == nil:
			env[e.Name] = e.Value
		case e.ValueFrom.SecretKeyRef != nil:
			ref := e.ValueFrom.SecretKeyRef
			v, ok := tp.secrets[ref.Name+"/"+ref.Key]
			if !ok {
				t.Fatalf("%s: %s reads Secret %s key %s, which the test does not make", p.name, e.Name, ref.Name, ref.Key)
			}
			env[e.Name], raw[e.Name] = v, true
		case e.ValueFrom.FieldRef != nil && e.ValueFrom.FieldRef.FieldPath == "metadata.name":
			env[e.Name], raw[e.Name] = tp.podName(p), true
		default:
			t.Fatalf("%s: %s: a source the test does not know", p.name, e.Name)
		}
	}
	var environ []string
	for k, v := range env {
		if !raw[k] {
			v = tp.mapValue(t, p, k, v)
		}
		environ = append(environ, k+"="+v)
	}
	slices.Sort(environ)
	grpcAddr := p.ports[grpcPort(t, c)]
	return testenv.NewProc(t, p.name, filepath.Join(binDir, bin), args, testenv.GRPCServing(grpcAddr), testenv.WithEnv(environ))
}

func grpcPort(t *testing.T, c corev1.Container) int32 {
	t.Helper()
	for _, cp := range c.Ports {
		if cp.Name == "grpc" {
			return cp.ContainerPort
		}
	}
	t.Fatalf("container %s has no grpc port", c.Name)
	return 0
}

// mapValue turns a value of p's spec into its value here, failing the test
// on one that names the cluster and that no rule maps.
func (tp *topology) mapValue(t *testing.T, p *pod, name, v string) string {
	t.Helper()
	if m, ok := tp.exact[v]; ok {
		return m
	}
	if p.w.Name == "sandbox" && v == "/var/lib/wick/sandbox" {
		return tp.stateDirs[p.name]
	}
	// A listen address ":port" is the pod's own port.
	if port, ok := strings.CutPrefix(v, ":"); ok {
		n, _ := strconv.Atoi(port)
		if a, ok := p.ports[int32(n)]; ok {
			return a
		}
		t.Fatalf("%s %s=%s: no containerPort %s", p.name, name, v, port)
	}
	if rest, ok := strings.CutPrefix(v, "dns:///"); ok {
		return strings.Join(tp.serviceAddrs(t, p, name, rest), ",")
	}
	if rest, ok := strings.CutPrefix(v, "http://"); ok && strings.Contains(rest, ".svc.cluster.local") {
		return "http://" + tp.serviceAddrs(t, p, name, strings.TrimSuffix(rest, "/"))[0]
	}
	if strings.Contains(v, ".svc.cluster.local") {
		var out []string
		for e := range strings.SplitSeq(v, ",") {
			out = append(out, tp.podAddr(t, p, name, e))
		}
		return strings.Join(out, ",")
	}
	if strings.HasPrefix(v, "/") || strings.Contains(v, "registry.example.com") || strings.Contains(v, "://") {
		t.Fatalf("%s %s=%q names something of the cluster that the topology test does not map", p.name, name, v)
	}
	return v
}

// serviceAddrs resolves "<service>.<namespace>.svc.cluster.local:<port>" to
// the loopback addresses of the pods the Service selects, as a headless
// Service's DNS name resolves to them.
func (tp *topology) serviceAddrs(t *testing.T, p *pod, flag, hostport string) []string {
	t.Helper()
	host, port, _ := strings.Cut(hostport, ":")
	parts := strings.Split(host, ".")
	if len(parts) != 5 || strings.Join(parts[2:], ".") != "svc.cluster.local" {
		t.Fatalf("%s %s: %q is not a Service name", p.name, flag, hostport)
	}
	svc := tp.r.service(parts[0], parts[1])
	if svc == nil {
		t.Fatalf("%s %s: no Service %s", p.name, flag, parts[0])
	}
	n, _ := strconv.Atoi(port)
	var addrs []string
	for _, sp := range svc.Spec.Ports {
		if sp.Port != int32(n) {
			continue
		}
		for _, pods := range tp.pods {
			for _, q := range pods {
				if selectsLabels(svc.Spec.Selector, q.w.Pod.Labels) {
					addrs = append(addrs, q.ports[containerPortOf(t, q, sp.TargetPort.String())])
				}
			}
		}
	}
	if len(addrs) == 0 {
		t.Fatalf("%s %s: Service %s port %s reaches no pod", p.name, flag, parts[0], port)
	}
	slices.Sort(addrs)
	return addrs
}

// podAddr resolves "<pod>.<service>.<namespace>.svc.cluster.local:<port>",
// a StatefulSet pod's own name.
func (tp *topology) podAddr(t *testing.T, p *pod, flag, hostport string) string {
	t.Helper()
	host, port, _ := strings.Cut(hostport, ":")
	podName, _, _ := strings.Cut(host, ".")
	n, _ := strconv.Atoi(port)
	for _, pods := range tp.pods {
		for _, q := range pods {
			if q.name == podName && q.w.Kind == "StatefulSet" {
				if a, ok := q.ports[int32(n)]; ok {
					return a
				}
			}
		}
	}
	t.Fatalf("%s %s: %q names no pod the test runs", p.name, flag, hostport)
	return ""
}

// containerPortOf resolves a Service's targetPort (a number or a port name)
// in q's suite container.
func containerPortOf(t *testing.T, q *pod, target string) int32 {
	t.Helper()
	for _, cp := range suiteContainer(t, q.w).Ports {
		if cp.Name == target || strconv.Itoa(int(cp.ContainerPort)) == target {
			return cp.ContainerPort
		}
	}
	t.Fatalf("%s has no port %s", q.name, target)
	return 0
}

func randomHex(t *testing.T) string {
	t.Helper()
	b := make([]byte, 16)
	if _, err := rand.Read(b); err != nil {
		t.Fatal(err)
	}
	return hex.EncodeToString(b)
}
