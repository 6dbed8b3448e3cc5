// Package ids validates the names clients choose (agent ids, tool names,
// thread ids) and makes the ids the service chooses (threads, runs, leases).
package ids

import (
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"regexp"
)

// MaxLen bounds every client-chosen name.
const MaxLen = 64

var namePattern = regexp.MustCompile(`^[A-Za-z0-9_-]{1,64}$`)

// Valid reports whether name is 1–64 letters, digits, '-' or '_': safe in
// Redis keys, file paths and URLs.
func Valid(name string) bool { return namePattern.MatchString(name) }

// Check returns an error naming field when value is not a valid name.
func Check(field, value string) error {
	if value == "" {
		return fmt.Errorf("%s is required", field)
	}
	if !Valid(value) {
		return fmt.Errorf("%s %q must be 1-%d letters, digits, '-' or '_'", field, truncate(value), MaxLen)
	}
	return nil
}

func truncate(s string) string {
	if len(s) > 80 {
		return s[:80] + "…"
	}
	return s
}

// New returns prefix followed by 24 random hex digits, e.g. "th_3f…".
func New(prefix string) string {
	b := make([]byte, 12)
	if _, err := rand.Read(b); err != nil {
		panic(fmt.Sprintf("ids: crypto/rand failed: %v", err))
	}
	return prefix + hex.EncodeToString(b)
}
