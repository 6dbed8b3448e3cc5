package main

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/redis/go-redis/v9"
	"gopkg.in/yaml.v3"

	"github.com/wick-agent/wick/platform/testenv"
)

// TestObservabilityAsCode checks deploy/observability: the alert rules
// load in Prometheus's own rule checker (tools/rulecheck: the parser and
// validator of `promtool check rules`, pinned), so do the dashboard's queries, and every metric
// either names is in a live scrape of the suite after it did what each
// metric counts. Not parallel: it stops wick with a signal to the process.
func TestObservabilityAsCode(t *testing.T) {
	root := testenv.RepoRoot(t)
	obs := filepath.Join(root, "deploy", "observability")
	checker := buildRulecheck(t, root)

	rules := filepath.Join(obs, "alerts.yml")
	if out, err := exec.Command(checker, rules).CombinedOutput(); err != nil {
		t.Fatalf("rulecheck %s: %v\n%s", rules, err, out)
	}
	ruleExprs := alertExprs(t, rules)
	dashExprs := dashboardExprs(t, filepath.Join(obs, "grafana-dashboard.json"))
	// The dashboard's queries, as recording rules, go through the same
	// checker: a typo in one is a failed check, not an empty panel.
	checkAsRules(t, checker, dashExprs)

	named := map[string]bool{}
	for _, e := range slices.Concat(ruleExprs, dashExprs) {
		names := metricNames(e)
		if len(names) == 0 {
			t.Errorf("query names no wick metric: %s", e)
		}
		for _, n := range names {
			named[n] = true
		}
	}

	exported := scrapeAfterEverything(t)
	var missing []string
	for n := range named {
		if !exported[n] {
			missing = append(missing, n)
		}
	}
	slices.Sort(missing)
	if len(missing) > 0 {
		t.Fatalf("metrics the dashboard or the alert rules name but the suite does not export: %v", missing)
	}
}

// buildRulecheck builds tools/rulecheck (its own module, so that
// Prometheus's dependencies move no other pin); the Go build cache makes
// every build after the first take a second.
func buildRulecheck(t *testing.T, root string) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "rulecheck")
	cmd := exec.Command("go", "build", "-o", bin, ".")
	cmd.Dir = filepath.Join(root, "tools", "rulecheck")
	cmd.Env = append(os.Environ(), "GOWORK=off", "GOFLAGS=-mod=readonly")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("build rulecheck: %v\n%s", err, out)
	}
	return bin
}

// alertExprs are the expressions of a rules file.
func alertExprs(t *testing.T, rules string) []string {
	t.Helper()
	b, err := os.ReadFile(rules)
	if err != nil {
		t.Fatal(err)
	}
	var f struct {
		Groups []struct {
			Rules []struct {
				Alert string `yaml:"alert"`
				Expr  string `yaml:"expr"`
			} `yaml:"rules"`
		} `yaml:"groups"`
	}
	if err := yaml.Unmarshal(b, &f); err != nil {
		t.Fatalf("%s: %v", rules, err)
	}
	var exprs []string
	for _, g := range f.Groups {
		for _, r := range g.Rules {
			exprs = append(exprs, r.Expr)
		}
	}
	if len(exprs) == 0 {
		t.Fatalf("%s has no rules", rules)
	}
	return exprs
}

// dashboardExprs are the queries of every panel of a Grafana dashboard, with
// Grafana's interval variable replaced by a duration.
func dashboardExprs(t *testing.T, path string) []string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var d struct {
		Panels []struct {
			Title   string `json:"title"`
			Targets []struct {
				Expr string `json:"expr"`
			} `json:"targets"`
		} `json:"panels"`
	}
	if err := json.Unmarshal(b, &d); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	var exprs []string
	for _, p := range d.Panels {
		for _, tg := range p.Targets {
			if tg.Expr == "" {
				t.Errorf("panel %q has a target without a query", p.Title)
			}
			exprs = append(exprs, strings.ReplaceAll(tg.Expr, "$__rate_interval", "5m"))
		}
	}
	if len(exprs) == 0 {
		t.Fatalf("%s has no queries", path)
	}
	return exprs
}

func checkAsRules(t *testing.T, checker string, exprs []string) {
	t.Helper()
	type rule struct {
		Record string `json:"record"`
		Expr   string `json:"expr"`
	}
	rules := make([]rule, len(exprs))
	for i, e := range exprs {
		rules[i] = rule{Record: fmt.Sprintf("dashboard:query_%d", i), Expr: e}
	}
	// JSON is YAML.
	b, err := json.Marshal(map[string]any{"groups": []any{map[string]any{"name": "dashboard", "rules": rules}}})
	if err != nil {
		t.Fatal(err)
	}
	f := filepath.Join(t.TempDir(), "dashboard-rules.yml")
	if err := os.WriteFile(f, b, 0o600); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command(checker, f).CombinedOutput(); err != nil {
		t.Fatalf("the dashboard's queries do not parse: %v\n%s", err, out)
	}
}

var metricName = regexp.MustCompile(`\bwick_[a-zA-Z0-9_]+`)

func metricNames(expr string) []string { return metricName.FindAllString(expr, -1) }

// scrapeAfterEverything starts wick on Redis and a models file, makes it do
// what each instrument counts (a run with tools in a sandbox, a model call
// retried and then moved to a priced fallback, a quota and a budget
// refusal, failing Redis calls), and returns the metric names of a scrape
// of -metrics-addr.
func scrapeAfterEverything(t *testing.T) map[string]bool {
	t.Helper()
	dir := t.TempDir()
	scripts := filepath.Join(dir, "scripts")
	if err := os.Mkdir(scripts, 0o700); err != nil {
		t.Fatal(err)
	}
	// A model that always answers 529 (overloaded): retried, then left.
	write(t, filepath.Join(scripts, "overloaded"), `{"turns":[{"error":{"status":529,"message":"overloaded"}}]}`)
	write(t, filepath.Join(scripts, "answer"), `{"turns":[{"text":"an answer"}]}`)
	models := filepath.Join(dir, "models.yaml")
	write(t, models, `models:
  - id: overloaded
    spec: script:overloaded
  - id: priced
    spec: script:answer
    price: {input: 2.5, output: 10}
  - id: chain
    fallback: [overloaded, priced]
`)
	redisAddr := testenv.Redis(t)
	rest, metricsURL := startWick(t, "-metrics-addr", "127.0.0.1:0", "-allow-local", "-model", "script:demo",
		"-redis-addr", redisAddr, "-script-dir", scripts, "-models-file", models,
		"-usage-budget-tokens", "100", "-max-agents-per-user", "1")

	post := func(path, body string, want int) {
		t.Helper()
		resp, err := http.Post(rest+path, "application/json", strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != want {
			t.Fatalf("POST %s = %s, want %d", path, resp.Status, want)
		}
	}
	// A run whose tools start a local sandbox; it spends the token budget.
	post("/agents/default/invoke", `{"messages":[{"role":"user","content":"hi"}]}`, http.StatusOK)
	// The next run is refused by the budget.
	post("/agents/default/invoke", `{"messages":[{"role":"user","content":"again"}]}`, http.StatusTooManyRequests)
	// Retries on the overloaded model, a fallback to the priced one.
	post("/v1/chat/completions", `{"model":"chain","messages":[{"role":"user","content":"hi"}]}`, http.StatusOK)
	// A second agent of the user is over -max-agents-per-user.
	post("/agents", `{"agent_id":"one","name":"one"}`, http.StatusOK)
	post("/agents", `{"agent_id":"two","name":"two"}`, http.StatusTooManyRequests)

	// Redis refuses the agent service's calls until the password goes.
	ctx := context.Background()
	rdb := redis.NewClient(&redis.Options{Addr: redisAddr})
	t.Cleanup(func() { rdb.Close() })
	if err := rdb.ConfigSet(ctx, "requirepass", "locked-out").Err(); err != nil {
		t.Fatal(err)
	}
	// Connections made before keep their login: end them all (this one too).
	_ = rdb.ClientKillByFilter(ctx, "TYPE", "normal").Err()
	t.Cleanup(func() {
		admin := redis.NewClient(&redis.Options{Addr: redisAddr, Password: "locked-out"})
		defer admin.Close()
		if err := admin.ConfigSet(ctx, "requirepass", "").Err(); err != nil {
			t.Errorf("unlock redis: %v", err)
		}
	})
	resp, err := http.Get(rest + "/threads")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode < 500 {
		t.Fatalf("GET /threads with Redis refusing = %s, want a server error", resp.Status)
	}

	code, body := get(t, metricsURL)
	if code != http.StatusOK {
		t.Fatalf("GET %s = %d", metricsURL, code)
	}
	names := map[string]bool{}
	for _, l := range strings.Split(body, "\n") {
		if l == "" || strings.HasPrefix(l, "#") {
			continue
		}
		n, _, _ := strings.Cut(l, "{")
		n, _, _ = strings.Cut(n, " ")
		names[n] = true
	}
	return names
}

func write(t *testing.T, path, content string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
}
