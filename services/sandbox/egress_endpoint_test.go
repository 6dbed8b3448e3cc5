package sandbox

import (
	"context"
	"encoding/base64"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	sandboxv1 "github.com/wick-agent/wick/gen/wick/sandbox/v1"
	"github.com/wick-agent/wick/platform/backend"
	"github.com/wick-agent/wick/platform/netguard"
)

// destination is an HTTP server on the host that a sandbox may or may not
// reach through its egress proxy. It listens on 127.0.0.2, which no
// sandbox's NO_PROXY names, so every client goes through the proxy.
func destination(t *testing.T, body string) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.2:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		_, _ = fmt.Fprint(w, body)
	}))
	_ = srv.Listener.Close()
	srv.Listener = ln
	srv.Start()
	t.Cleanup(srv.Close)
	return ln.Addr().String()
}

// loopbackGuard lets the egress proxies reach the tests' loopback servers.
func loopbackGuard() Option {
	return WithEgressGuard(netguard.New(netip.MustParsePrefix("127.0.0.0/8")))
}

// egressSetup is two destinations, both within the operator's bound; a
// sandbox asks for allowed only.
type egressSetup struct {
	allowed, denied string
	bound           []string
}

func newEgressSetup(t *testing.T) egressSetup {
	allowed, denied := destination(t, "hello from the allowed server"), destination(t, "the denied server answered")
	return egressSetup{allowed: allowed, denied: denied, bound: []string{allowed, denied}}
}

// rawProxyGet sends a plain-HTTP proxy request for url to the proxy
// $HTTP_PROXY names and prints the whole answer, body included (busybox
// wget names only the status of an error).
func rawProxyGet(url string) string {
	return `p=${HTTP_PROXY#http://}; printf 'GET ` + url + ` HTTP/1.0\r\n\r\n' | nc "${p%:*}" "${p##*:}"`
}

// checkEgress runs, in agent's sandbox, a request to the allowed
// destination through the proxy and one to the denied one.
func checkEgress(t *testing.T, ctx context.Context, cli sandboxv1.SandboxServiceClient, agent string, e egressSetup, wget string, raw bool) {
	t.Helper()
	run := func(cmd string) execResult {
		t.Helper()
		r, err := execOn(ctx, cli, &sandboxv1.ExecRequest{AgentId: agent, Command: cmd})
		if err != nil {
			t.Fatal(err)
		}
		return r
	}
	t.Run("allowed destination", func(t *testing.T) {
		r := run(wget + " http://" + e.allowed + "/")
		if r.exit.GetExitCode() != 0 || r.stdout != "hello from the allowed server" {
			t.Fatalf("exit %d, stdout %q, stderr %q", r.exit.GetExitCode(), r.stdout, r.stderr)
		}
	})
	t.Run("denied destination", func(t *testing.T) {
		r := run(wget + " http://" + e.denied + "/")
		if r.exit.GetExitCode() == 0 || strings.Contains(r.stdout, "denied server answered") || !strings.Contains(r.stdout+r.stderr, "403") {
			t.Fatalf("exit %d, stdout %q, stderr %q; want a 403", r.exit.GetExitCode(), r.stdout, r.stderr)
		}
		want := "egress to " + e.denied + " is not allowed for this sandbox; allowed: " + e.allowed
		if !raw {
			if !strings.Contains(r.stdout+r.stderr, want) {
				t.Fatalf("stdout %q, stderr %q; want %q", r.stdout, r.stderr, want)
			}
			return
		}
		r = run(rawProxyGet("http://" + e.denied + "/"))
		if !strings.Contains(r.stdout, "403 Forbidden") || !strings.Contains(r.stdout, want) {
			t.Fatalf("raw proxy request: stdout %q, stderr %q; want a 403 saying %q", r.stdout, r.stderr, want)
		}
	})
}

// checkProxyEnv checks the proxy variables of a sandbox with egress and
// returns the proxy's port.
func checkProxyEnv(t *testing.T, env map[string]string) int {
	t.Helper()
	proxy := env["HTTP_PROXY"]
	port, err := strconv.Atoi(strings.TrimPrefix(proxy, "http://127.0.0.1:"))
	if err != nil || env["HTTPS_PROXY"] != proxy || env["http_proxy"] != proxy || env["https_proxy"] != proxy ||
		env["NO_PROXY"] != "127.0.0.1,localhost" || env["no_proxy"] != "127.0.0.1,localhost" {
		t.Fatalf("proxy env: %v", env)
	}
	return port
}

func checkNoProxyEnv(t *testing.T, env map[string]string) {
	t.Helper()
	for _, k := range []string{"HTTP_PROXY", "HTTPS_PROXY", "http_proxy", "https_proxy", "NO_PROXY", "no_proxy"} {
		if _, ok := env[k]; ok {
			t.Fatalf("%s set in a sandbox without egress: %v", k, env)
		}
	}
}

// TestEgressDocker: a network-none Docker sandbox whose spec allows one
// destination reaches it through the egress proxy its environment names,
// and is refused another with the proxy's message; a sandbox without
// egress has neither the variables nor the proxy.
func TestEgressDocker(t *testing.T) {
	t.Parallel()
	e := newEgressSetup(t)
	h := newHarnessWith(t, []Option{loopbackGuard()}, func(c *Config) { c.EgressAllow = e.bound })
	ctx, cancel := context.WithTimeout(as("alice"), 3*time.Minute)
	defer cancel()
	if sb := h.ensure(ctx, "coder", &sandboxv1.SandboxSpec{EgressAllow: []string{e.allowed}}); sb.GetNetwork() != "none" {
		t.Fatalf("network %q, want none", sb.GetNetwork())
	}
	h.ensure(ctx, "plain", nil)
	if port := checkProxyEnv(t, sandboxEnvOf(t, ctx, h.cli, "coder")); port != EgressProxyPort {
		t.Fatalf("proxy port %d, want %d", port, EgressProxyPort)
	}
	checkEgress(t, ctx, h.cli, "coder", e, "wget -q -O -", true)

	t.Run("sandbox without egress", func(t *testing.T) {
		checkNoProxyEnv(t, sandboxEnvOf(t, ctx, h.cli, "plain"))
		proxy := "http://127.0.0.1:" + strconv.Itoa(EgressProxyPort)
		if r, err := h.exec(ctx, "plain", "HTTP_PROXY="+proxy+" http_proxy="+proxy+" wget -q -O - -T 5 http://"+e.allowed+"/"); err != nil || r.exit.GetExitCode() == 0 {
			t.Fatalf("reached the destination without egress: %v %+v", err, r)
		}
	})
}

// TestEgressLocal is the same on the local backend, where the proxy is a
// host loopback port that Landlock opens to the sandbox.
func TestEgressLocal(t *testing.T) {
	t.Parallel()
	e := newEgressSetup(t)
	_, cli := newLocal(t, Config{AllowLocal: true, EgressAllow: e.bound}, loopbackGuard())
	ctx, cancel := context.WithTimeout(as("alice"), 2*time.Minute)
	defer cancel()
	for agent, allow := range map[string][]string{"coder": {e.allowed}, "plain": nil} {
		spec := &sandboxv1.SandboxSpec{Type: backend.Local, EgressAllow: allow}
		if _, err := cli.EnsureSandbox(ctx, &sandboxv1.EnsureSandboxRequest{AgentId: agent, Spec: spec}); err != nil {
			t.Fatal(err)
		}
	}
	checkProxyEnv(t, sandboxEnvOf(t, ctx, cli, "coder"))
	// The host's GNU wget prints an error answer's body with
	// --content-on-error, and its status on stderr without -q.
	checkEgress(t, ctx, cli, "coder", e, "wget -O - --tries=1 --content-on-error", false)
	t.Run("sandbox without egress", func(t *testing.T) {
		checkNoProxyEnv(t, sandboxEnvOf(t, ctx, cli, "plain"))
	})
}

// TestModelEndpointKeepsSecrets: the secrets behind the model endpoint —
// the provider key the LLM gateway holds and the service's token for the
// gateway — are nowhere in a sandbox that used the endpoint: not in its
// processes' environments or command lines, not in its files, neither as
// they are nor reversed nor in base64. Values planted on purpose are found
// by the same search, so it does look.
func TestModelEndpointKeepsSecrets(t *testing.T) {
	t.Parallel()
	const (
		providerKey = "sk-ant-fake-provider-key-7f3a9c1e5b"
		gwToken     = "llmgw-token-for-the-sandbox-service-4d2e"
	)
	// The LLM gateway: it takes the service's token and would call the
	// provider with its key.
	gw := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") != "Bearer "+gwToken {
			http.Error(w, "bad gateway token", http.StatusUnauthorized)
			return
		}
		req, _ := http.NewRequest(http.MethodGet, "http://provider.invalid/v1/models", nil)
		req.Header.Set("x-api-key", providerKey) // what it would send on
		w.Header().Set("Content-Type", "application/json")
		_, _ = fmt.Fprint(w, `{"data":[{"id":"fake-model"}]}`)
	}))
	t.Cleanup(gw.Close)
	upstream, err := RemoteLLM(gw.URL, gwToken)
	if err != nil {
		t.Fatal(err)
	}
	e := newEgressSetup(t)
	h := newHarnessWith(t, []Option{WithModelEndpoint(upstream, func(http.Header, string) {}), loopbackGuard()},
		func(c *Config) { c.EgressAllow = e.bound })
	ctx, cancel := context.WithTimeout(as("alice"), 3*time.Minute)
	defer cancel()
	const plantedEnv, plantedFile = "planted-in-the-env-81c2", "planted-in-a-file-93d4"
	h.ensure(ctx, "coder", &sandboxv1.SandboxSpec{ModelEndpoint: true, EgressAllow: []string{e.allowed},
		Env: map[string]string{"PLANTED": plantedEnv}})
	h.mustExec(ctx, "coder", "echo "+plantedFile+" > /workspace/planted")

	// A model call the way an agent's SDK makes it. Busybox wget ignores
	// NO_PROXY, which keeps the endpoint away from the egress proxy for
	// clients that read it: -Y off does the same.
	out := h.mustExec(ctx, "coder", `wget -q -O - -Y off --header "x-api-key: $ANTHROPIC_API_KEY" "$ANTHROPIC_BASE_URL/v1/models"`)
	if !strings.Contains(out, "fake-model") {
		t.Fatalf("model call: %q", out)
	}

	needles := map[string]bool{plantedEnv: true, plantedFile: true} // whether it must be found
	for _, s := range []string{providerKey, gwToken} {
		for _, v := range []string{s, reverse(s), base64.StdEncoding.EncodeToString([]byte(s)), base64.RawURLEncoding.EncodeToString([]byte(s))} {
			needles[v] = false
		}
	}
	for needle, planted := range needles {
		t.Run(needle, func(t *testing.T) {
			found := searchSandbox(t, ctx, h, "coder", needle)
			if planted && len(found) == 0 {
				t.Fatalf("the planted %q was not found: the search does not look", needle)
			}
			if !planted && len(found) > 0 {
				t.Fatalf("%q found in the sandbox: %v", needle, found)
			}
		})
	}
}

// searchSandbox looks for needle in the environment of the command it runs
// and in every process's environ and cmdline and every file outside /proc,
// /sys and /dev, and returns where it was found. The needle travels in the
// command as octal escapes that printf, a shell builtin, turns back into
// it, and grep reads it from stdin: no process's command line holds it.
func searchSandbox(t *testing.T, ctx context.Context, h *harness, agent, needle string) []string {
	t.Helper()
	var esc strings.Builder
	for _, c := range []byte(needle) {
		fmt.Fprintf(&esc, `\%03o`, c)
	}
	n := `"$(printf '` + esc.String() + `')"`
	script := `n=` + n + `
case "$(env)" in *"$n"*) echo "env of the command";; esac
printf '%s\n' "$n" | grep -lF -f /proc/self/fd/0 /proc/[0-9]*/environ /proc/[0-9]*/cmdline 2>/dev/null
printf '%s\n' "$n" | grep -rlF -f /proc/self/fd/0 $(ls -d /* /.[!.]* 2>/dev/null | grep -v -e '^/proc$' -e '^/sys$' -e '^/dev$') 2>/dev/null
true`
	r, err := h.exec(ctx, agent, script)
	if err != nil || r.exit.GetExitCode() != 0 {
		t.Fatalf("search: %v %+v", err, r)
	}
	return slices.DeleteFunc(strings.Split(r.stdout, "\n"), func(s string) bool { return s == "" })
}
