package gateway

import (
	"flag"
	"maps"
	"strings"

	"github.com/wick-agent/wick/services/gateway/internal/auth"
)

// LoadTokens merges the bearer tokens of a token file (lines "token user",
// or a JSON object {"token": "user"}) and of a "token:user,…" list (the
// WICK_TOKENS form). Either may be empty.
func LoadTokens(file, list string) (map[string]string, error) {
	out := map[string]string{}
	if file != "" {
		m, err := auth.LoadTokensFile(file)
		if err != nil {
			return nil, err
		}
		maps.Copy(out, m)
	}
	if list != "" {
		m, err := auth.ParseTokens(list)
		if err != nil {
			return nil, err
		}
		maps.Copy(out, m)
	}
	return out, nil
}

// LoadOrgs returns the organisations a token file gives its users (lines
// "token user org1,org2", or JSON values {"user": …, "orgs": […]}); none
// without a file.
func LoadOrgs(file string) (map[string][]string, error) {
	if file == "" {
		return nil, nil
	}
	_, orgs, err := auth.LoadTokensAndOrgs(file)
	return orgs, err
}

// SplitList splits a comma-separated flag value, dropping empty items.
func SplitList(s string) []string {
	var out []string
	for item := range strings.SplitSeq(s, ",") {
		if item = strings.TrimSpace(item); item != "" {
			out = append(out, item)
		}
	}
	return out
}

// RegisterMetricsFlags defines -public-metrics and -metrics-token on fs, into
// c.PublicMetrics and c.MetricsToken.
func (c *Config) RegisterMetricsFlags(fs *flag.FlagSet) {
	fs.BoolVar(&c.PublicMetrics, "public-metrics", false, "also serve the Prometheus metrics at /metrics on the public HTTP listener (default: 404 there; scrape -metrics-addr); they show every user's traffic, models and errors, so set -metrics-token unless only trusted hosts reach the listener")
	fs.StringVar(&c.MetricsToken, "metrics-token", "", "bearer token that /metrics on the public listener requires with -public-metrics (prefer WICK_METRICS_TOKEN)")
}
