package sandbox

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"runtime"
	"strconv"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	sandboxv1 "github.com/wick-agent/wick/gen/wick/sandbox/v1"
	"github.com/wick-agent/wick/platform/backend"
)

// BenchmarkModelEndpoint measures one GET /v1/models through a sandbox's
// model endpoint against the same handler called directly over loopback,
// in the same run: "direct" (an HTTP client and the handler on host
// loopback), "local" (a local sandbox's endpoint port: token check,
// signing, the endpoint's own server) and "docker" (from inside a
// network-none container: 127.0.0.1:47100 in its network namespace,
// wick-daemon's forward, the Unix socket, the service). Each client keeps
// its connection alive, as an SDK does. The docker client dials from the
// container's network namespace (setns, so the benchmark needs root) and
// then runs on the host like the others.
func BenchmarkModelEndpoint(b *testing.B) {
	llm := newFakeLLM()
	var directP50 time.Duration
	run := func(name string, client *http.Client, url, token string) {
		b.Run(name, func(b *testing.B) {
			get := func() {
				req, _ := http.NewRequest(http.MethodGet, url, nil)
				if token != "" {
					req.Header.Set("x-api-key", token)
				}
				resp, err := client.Do(req)
				if err != nil {
					b.Fatal(err)
				}
				_, _ = io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				if resp.StatusCode != http.StatusOK {
					b.Fatalf("status %d", resp.StatusCode)
				}
			}
			get() // warm the connection
			samples := make([]time.Duration, 0, b.N)
			b.ResetTimer()
			for range b.N {
				start := time.Now()
				get()
				samples = append(samples, time.Since(start))
			}
			b.StopTimer()
			p50 := percentiles(b, samples, time.Microsecond, "")
			if name == "direct" {
				directP50 = p50
			} else if directP50 > 0 {
				b.ReportMetric(float64(p50-directP50)/float64(time.Microsecond), "added-p50-µs")
			}
		})
	}

	// The direct call signs as the endpoint would, so both do the same work upstream.
	direct := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		llm.sign(r.Header, "bench")
		llm.ServeHTTP(w, r)
	}))
	b.Cleanup(direct.Close)
	run("direct", &http.Client{}, direct.URL+"/v1/models", "")

	svc, err := New(Config{AllowLocal: true, StateDir: shortTemp(b), ManagerID: "wick-bench-" + randomID()},
		WithEngineDialer(noDocker), WithModelEndpoint(llm, llm.sign), withLandlockProbe(func() int { return 0 }),
		WithLogger(slog.New(slog.DiscardHandler)))
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = svc.Close(context.Background()) })
	cli := serve(b, svc)
	ctx := as("bench")
	if _, err := cli.EnsureSandbox(ctx, &sandboxv1.EnsureSandboxRequest{AgentId: "dev", Spec: &sandboxv1.SandboxSpec{Type: backend.Local, ModelEndpoint: true}}); err != nil {
		b.Fatal(err)
	}
	lb := svc.boxes[sandboxKey(svc.cfg.ManagerID, "bench", "dev")]
	lb.mu.Lock()
	port, token := lb.endpoints["model"].srv.Port(), lb.set.EndpointToken
	lb.mu.Unlock()
	run("local", &http.Client{}, "http://127.0.0.1:"+strconv.Itoa(port)+"/v1/models", token)

	h := newHarnessWith(b, []Option{WithModelEndpoint(llm, llm.sign)})
	sb := h.ensure(ctx, "coder", &sandboxv1.SandboxSpec{ModelEndpoint: true})
	in, err := h.inspect(sb.GetContainerName())
	if err != nil {
		b.Fatal(err)
	}
	h.svc.mu.Lock()
	db := h.svc.boxes[sandboxKey(h.manager, "bench", "coder")]
	h.svc.mu.Unlock()
	db.mu.Lock()
	token = db.set.EndpointToken
	db.mu.Unlock()
	inside := &http.Client{Transport: &http.Transport{DialContext: func(ctx context.Context, network, addr string) (net.Conn, error) {
		return dialInNetns(ctx, in.State.Pid, network, addr)
	}}}
	run("docker", inside, "http://127.0.0.1:"+strconv.Itoa(ModelEndpointPort)+"/v1/models", token)
}

// dialInNetns dials addr from the network namespace of process pid: a
// socket belongs to the namespace it was made in, whichever thread uses it
// later.
func dialInNetns(ctx context.Context, pid int, network, addr string) (net.Conn, error) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	self, err := unix.Open("/proc/thread-self/ns/net", unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, err
	}
	defer unix.Close(self)
	target, err := unix.Open(fmt.Sprintf("/proc/%d/ns/net", pid), unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, err
	}
	defer unix.Close(target)
	if err := unix.Setns(target, unix.CLONE_NEWNET); err != nil {
		return nil, fmt.Errorf("setns: %w", err)
	}
	// The thread goes back before anything else may run on it.
	defer func() {
		if err := unix.Setns(self, unix.CLONE_NEWNET); err != nil {
			panic(fmt.Sprintf("setns back: %v", err))
		}
	}()
	fd, err := unix.Socket(unix.AF_INET, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return nil, err
	}
	host, port, _ := net.SplitHostPort(addr)
	p, _ := strconv.Atoi(port)
	sa := &unix.SockaddrInet4{Port: p}
	copy(sa.Addr[:], net.ParseIP(host).To4())
	if err := unix.Connect(fd, sa); err != nil {
		unix.Close(fd)
		return nil, err
	}
	f := os.NewFile(uintptr(fd), "netns-conn")
	defer f.Close()
	return net.FileConn(f)
}
