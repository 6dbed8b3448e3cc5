package gateway

import (
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
