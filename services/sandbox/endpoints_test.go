package sandbox

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	sandboxv1 "github.com/wick-agent/wick/gen/wick/sandbox/v1"
	"github.com/wick-agent/wick/platform/backend"
	"github.com/wick-agent/wick/platform/identity"
	"github.com/wick-agent/wick/platform/testenv"
	"github.com/wick-agent/wick/platform/usage"
)

// fakeLLM stands for the LLM gateway's HTTP API: it answers every request
// with the user its signed identity headers assert, and streams
// /v1/messages in two pieces, the second only once the test saw the first
// (or after a bound, so a buffering proxy fails the test instead of hanging).
type fakeLLM struct {
	key     *identity.Key
	release chan struct{}
}

func newFakeLLM() *fakeLLM {
	return &fakeLLM{key: identity.RandomKey(), release: make(chan struct{})}
}

func (f *fakeLLM) sign(h http.Header, user string) { f.key.SetHTTP(h, user, nil) }

func (f *fakeLLM) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	ctx, err := f.key.FromHTTP(r)
	if err != nil {
		http.Error(w, err.Error(), http.StatusUnauthorized)
		return
	}
	user, _ := identity.User(ctx)
	if r.URL.Path == "/v1/messages" {
		w.Header().Set("Content-Type", "text/event-stream")
		_, _ = io.WriteString(w, "event: first\n\n")
		w.(http.Flusher).Flush()
		select {
		case <-f.release:
			_, _ = io.WriteString(w, "event: second\n\n")
		case <-time.After(20 * time.Second):
			_, _ = io.WriteString(w, "event: late\n\n")
		}
		return
	}
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(map[string]string{"user": user, "agent": r.Header.Get(usage.AgentHeader), "path": r.URL.Path,
		"leaked_key": r.Header.Get("x-api-key") + r.Header.Get("Authorization")})
}

// endpointCase is one request made from inside a sandbox.
type endpointCase struct {
	name   string
	header string // "" sends no token
	path   string
	want   string // in stdout (status 200) or in stderr (an error status)
	ok     bool
}

func endpointCases(own, other, agent string) []endpointCase {
	return []endpointCase{
		{"the sandbox's agent is named", "x-api-key: " + own, "/v1/models", `"agent":"` + agent + `"`, true},
		{"own token as x-api-key", "x-api-key: " + own, "/v1/models", `"user":"alice"`, true},
		{"own token as bearer", "Authorization: Bearer " + own, "/v1/models", `"path":"/v1/models"`, true},
		{"the token goes no further", "x-api-key: " + own, "/v1/models", `"leaked_key":""`, true},
		{"no token", "", "/v1/models", "401", false},
		{"wrong token", "x-api-key: " + strings.Repeat("0", 64), "/v1/models", "401", false},
		{"another sandbox's token", "x-api-key: " + other, "/v1/models", "401", false},
		{"not a model API path", "x-api-key: " + own, "/v1/agents", "404", false},
	}
}

// wget is the command that makes c's request to the endpoint at base, with
// busybox's wget in a container and the host's (GNU) on the local backend:
// both write the body to stdout and name an error status on stderr; GNU
// wget is told not to retry.
func (c endpointCase) wget(base string) string {
	cmd := "wget -O - "
	if !strings.Contains(base, ":"+strconv.Itoa(ModelEndpointPort)) {
		cmd += "--tries=1 "
	}
	if c.header != "" {
		cmd += "--header '" + c.header + "' "
	}
	return cmd + base + c.path
}

// sandboxEnv runs env in the sandbox and returns it as a map.
func sandboxEnvOf(t *testing.T, ctx context.Context, cli sandboxv1.SandboxServiceClient, agent string) map[string]string {
	t.Helper()
	r, err := execOn(ctx, cli, &sandboxv1.ExecRequest{AgentId: agent, Command: "env"})
	if err != nil || r.exit.GetExitCode() != 0 {
		t.Fatalf("env: %v %+v", err, r)
	}
	env := map[string]string{}
	sc := bufio.NewScanner(strings.NewReader(r.stdout))
	for sc.Scan() {
		k, v, _ := strings.Cut(sc.Text(), "=")
		env[k] = v
	}
	return env
}

func checkEndpointCases(t *testing.T, ctx context.Context, cli sandboxv1.SandboxServiceClient, agent, base, own, other string) {
	t.Helper()
	for _, tc := range endpointCases(own, other, agent) {
		t.Run(tc.name, func(t *testing.T) {
			r, err := execOn(ctx, cli, &sandboxv1.ExecRequest{AgentId: agent, Command: tc.wget(base)})
			if err != nil {
				t.Fatal(err)
			}
			ok := r.exit.GetExitCode() == 0
			out := r.stdout
			if !ok {
				out = r.stderr
			}
			if ok != tc.ok || !strings.Contains(out, tc.want) {
				t.Fatalf("%s: exit %d, stdout %q, stderr %q; want ok=%v and %q", tc.wget(base), r.exit.GetExitCode(), r.stdout, r.stderr, tc.ok, tc.want)
			}
		})
	}
}

// TestModelEndpointDocker reaches the model endpoint from network-none
// Docker sandboxes: with the sandbox's own token as its user, with none, a
// wrong one or another sandbox's not at all; a sandbox without
// model_endpoint has neither the variables nor the port; a restart makes a
// new token and the old one stops working.
func TestModelEndpointDocker(t *testing.T) {
	t.Parallel()
	llm := newFakeLLM()
	h := newHarnessWith(t, []Option{WithModelEndpoint(llm, llm.sign)})
	ctx, cancel := context.WithTimeout(as("alice"), 3*time.Minute)
	defer cancel()
	spec := &sandboxv1.SandboxSpec{ModelEndpoint: true, Env: map[string]string{"OPENAI_BASE_URL": "http://override"}}
	if sb := h.ensure(ctx, "coder", spec); sb.GetNetwork() != "none" {
		t.Fatalf("network %q, want none", sb.GetNetwork())
	}
	h.ensure(ctx, "other", &sandboxv1.SandboxSpec{ModelEndpoint: true})
	h.ensure(ctx, "plain", nil)
	env := sandboxEnvOf(t, ctx, h.cli, "coder")
	own := env["ANTHROPIC_API_KEY"]
	base := "http://127.0.0.1:" + strconv.Itoa(ModelEndpointPort)
	if len(own) != 64 || env["OPENAI_API_KEY"] != own || env["ANTHROPIC_BASE_URL"] != base {
		t.Fatalf("endpoint env: %v", env)
	}
	if env["OPENAI_BASE_URL"] != "http://override" {
		t.Fatalf("the spec's env must win: OPENAI_BASE_URL=%q", env["OPENAI_BASE_URL"])
	}
	other := sandboxEnvOf(t, ctx, h.cli, "other")["ANTHROPIC_API_KEY"]
	if other == "" || other == own {
		t.Fatalf("tokens of two sandboxes: %q, %q", own, other)
	}
	checkEndpointCases(t, ctx, h.cli, "coder", base, own, other)

	t.Run("sandbox without model_endpoint", func(t *testing.T) {
		for k := range sandboxEnvOf(t, ctx, h.cli, "plain") {
			if strings.HasPrefix(k, "ANTHROPIC_") || strings.HasPrefix(k, "OPENAI_") {
				t.Fatalf("%s set in a sandbox without model_endpoint", k)
			}
		}
		if r, err := h.exec(ctx, "plain", "wget -q -O - -T 5 "+base+"/v1/models"); err != nil || r.exit.GetExitCode() == 0 {
			t.Fatalf("endpoint reachable without model_endpoint: %v %+v", err, r)
		}
	})

	t.Run("streaming arrives in pieces", func(t *testing.T) {
		p := procs{t: t, ctx: ctx, cli: h.cli, agent: "coder"}
		argv := []string{"wget", "-q", "-O", "-", "--header", "x-api-key: " + own, "--post-data", `{"stream":true}`, base + "/v1/messages"}
		released := false
		out, err := p.stream(&sandboxv1.AttachProcessRequest{Msg: &sandboxv1.AttachProcessRequest_Start{Start: &sandboxv1.StartProcessRequest{
			AgentId: "coder", Argv: argv}}}, 0, nil, true, func(o *procOut) bool {
			// Only once the first piece is out of the sandbox may the second be written.
			if !released && strings.Contains(o.stdout.String(), "event: first") {
				released = true
				close(llm.release)
			}
			return false
		})
		if err != nil {
			t.Fatal(err)
		}
		if got := out.stdout.String(); got != "event: first\n\nevent: second\n\n" || out.exit.GetExitCode() != 0 {
			t.Fatalf("stream: stdout %q, stderr %q, exit %v", got, out.stderr.String(), out.exit)
		}
	})

	t.Run("a replaced socket is bound again when the daemon comes back", func(t *testing.T) {
		sb := h.ensure(ctx, "coder", nil)
		h.svc.mu.Lock()
		b := h.svc.boxes[sandboxKey(h.manager, "alice", "coder")]
		h.svc.mu.Unlock()
		sock := filepath.Join(b.hostDir, "model.sock")
		// What the sandbox could do while a re-injection hands it the
		// directory: replace the service's socket.
		h.killDaemon(ctx, sb.GetContainerId())
		if err := os.Remove(sock); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(sock, []byte("not a socket"), 0o644); err != nil {
			t.Fatal(err)
		}
		h.mustExec(ctx, "coder", "true") // meets the dead daemon: fallback and re-injection
		testenv.Eventually(t, 30*time.Second, func() bool {
			g, err := h.cli.GetSandbox(ctx, &sandboxv1.GetSandboxRequest{AgentId: "coder"})
			return err == nil && g.GetSandbox().GetTransport() == transportDaemon
		}, "daemon back")
		if fi, err := os.Lstat(sock); err != nil || fi.Mode()&os.ModeSocket == 0 {
			t.Fatalf("model.sock after re-injection: %v %v", fi, err)
		}
		c := endpointCase{header: "x-api-key: " + own, path: "/v1/models"}
		if out := h.mustExec(ctx, "coder", c.wget(base)); !strings.Contains(out, `"user":"alice"`) {
			t.Fatalf("after re-injection: %q", out)
		}
	})

	t.Run("restart makes a new token", func(t *testing.T) {
		if _, err := h.cli.RestartSandbox(ctx, &sandboxv1.RestartSandboxRequest{AgentId: "coder"}); err != nil {
			t.Fatal(err)
		}
		fresh := sandboxEnvOf(t, ctx, h.cli, "coder")["ANTHROPIC_API_KEY"]
		if fresh == "" || fresh == own {
			t.Fatalf("token after restart %q (before %q)", fresh, own)
		}
		old := endpointCase{header: "x-api-key: " + own, path: "/v1/models"}
		if r, err := h.exec(ctx, "coder", old.wget(base)); err != nil || r.exit.GetExitCode() == 0 || !strings.Contains(r.stderr, "401") {
			t.Fatalf("old token after restart: %v %+v", err, r)
		}
		now := endpointCase{header: "x-api-key: " + fresh, path: "/v1/models"}
		if out := h.mustExec(ctx, "coder", now.wget(base)); !strings.Contains(out, `"user":"alice"`) {
			t.Fatalf("new token after restart: %q", out)
		}
	})

	t.Run("a restarted service serves the running container", func(t *testing.T) {
		tok := sandboxEnvOf(t, ctx, h.cli, "coder")["ANTHROPIC_API_KEY"]
		cctx, ccancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer ccancel()
		if err := h.svc.Close(cctx); err != nil {
			t.Fatal(err)
		}
		h.start(WithModelEndpoint(llm, llm.sign))
		c := endpointCase{header: "x-api-key: " + tok, path: "/v1/models"}
		if out := h.mustExec(ctx, "coder", c.wget(base)); !strings.Contains(out, `"user":"alice"`) {
			t.Fatalf("after the service restarted: %q", out)
		}
	})
}

// TestModelEndpointLocal is the same on the local backend, where the
// endpoint is a host loopback port that Landlock opens to the sandbox, and
// shows that a streamed answer arrives in pieces.
func TestModelEndpointLocal(t *testing.T) {
	t.Parallel()
	llm := newFakeLLM()
	_, cli := newLocal(t, Config{AllowLocal: true}, WithModelEndpoint(llm, llm.sign))
	ctx, cancel := context.WithTimeout(as("alice"), 2*time.Minute)
	defer cancel()
	for _, agent := range []string{"coder", "other", "plain"} {
		spec := &sandboxv1.SandboxSpec{Type: backend.Local, ModelEndpoint: agent != "plain"}
		if _, err := cli.EnsureSandbox(ctx, &sandboxv1.EnsureSandboxRequest{AgentId: agent, Spec: spec}); err != nil {
			t.Fatal(err)
		}
	}
	env := sandboxEnvOf(t, ctx, cli, "coder")
	own, base := env["ANTHROPIC_API_KEY"], env["ANTHROPIC_BASE_URL"]
	if len(own) != 64 || !strings.HasPrefix(base, "http://127.0.0.1:") || env["OPENAI_BASE_URL"] != base+"/v1" {
		t.Fatalf("endpoint env: %v", env)
	}
	other := sandboxEnvOf(t, ctx, cli, "other")
	checkEndpointCases(t, ctx, cli, "coder", base, own, other["ANTHROPIC_API_KEY"])

	t.Run("another sandbox's port with its own token", func(t *testing.T) {
		c := endpointCase{header: "x-api-key: " + own, path: "/v1/models"}
		r, err := execOn(ctx, cli, &sandboxv1.ExecRequest{AgentId: "coder", Command: c.wget(other["ANTHROPIC_BASE_URL"])})
		if err != nil || r.exit.GetExitCode() == 0 {
			t.Fatalf("reached another sandbox's endpoint: %v %+v", err, r)
		}
	})
	t.Run("sandbox without model_endpoint", func(t *testing.T) {
		for k := range sandboxEnvOf(t, ctx, cli, "plain") {
			if strings.HasPrefix(k, "ANTHROPIC_") || strings.HasPrefix(k, "OPENAI_") {
				t.Fatalf("%s set in a sandbox without model_endpoint", k)
			}
		}
	})
	t.Run("streaming arrives in pieces", func(t *testing.T) {
		req, err := http.NewRequestWithContext(ctx, http.MethodPost, base+"/v1/messages", strings.NewReader(`{"stream":true}`))
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("x-api-key", own)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		rd := bufio.NewReader(resp.Body)
		first, err := rd.ReadString('\n')
		if err != nil || first != "event: first\n" {
			t.Fatalf("first piece %q, %v", first, err)
		}
		close(llm.release) // only now may the second piece be written
		rest, err := io.ReadAll(rd)
		if err != nil || !strings.Contains(string(rest), "event: second") {
			t.Fatalf("rest %q, %v", rest, err)
		}
	})
}

// TestModelEndpointRefused: a spec that asks for the endpoint where the
// service has no LLM gateway, or on a remote engine, is refused.
func TestModelEndpointRefused(t *testing.T) {
	t.Parallel()
	_, cli := newLocal(t, Config{AllowLocal: true})
	ctx, cancel := context.WithTimeout(as("alice"), time.Minute)
	defer cancel()
	_, err := cli.EnsureSandbox(ctx, &sandboxv1.EnsureSandboxRequest{AgentId: "a", Spec: &sandboxv1.SandboxSpec{Type: backend.Local, ModelEndpoint: true}})
	if err == nil || !strings.Contains(err.Error(), "no LLM gateway") {
		t.Fatalf("model_endpoint without a gateway: %v", err)
	}
}
