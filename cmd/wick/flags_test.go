package main

import (
	"flag"
	"testing"

	"github.com/wick-agent/wick/services/agent"
)

// TestAgentFlagsShared checks that wick defines every flag of the agent
// service that wick-agent shares (agent.Flags), with the same meaning and
// default, and a flag of its own for each that wick-agent defines per
// deployment; wick-agent's test checks it defines no others.
func TestAgentFlagsShared(t *testing.T) {
	wick, _ := defineFlags()
	shared := flag.NewFlagSet("agent", flag.ContinueOnError)
	f := agent.DefaultFlags()
	f.RegisterFlags(shared)
	n := 0
	shared.VisitAll(func(want *flag.Flag) {
		n++
		got := wick.Lookup(want.Name)
		switch {
		case got == nil:
			t.Errorf("wick has no -%s (wick-agent has: %s)", want.Name, want.Usage)
		case got.DefValue != want.DefValue || got.Usage != want.Usage:
			t.Errorf("-%s: wick has (%q, %q), wick-agent (%q, %q)", want.Name, got.DefValue, got.Usage, want.DefValue, want.Usage)
		}
	})
	if n < 10 {
		t.Errorf("agent.Flags defines %d flags; the shared set looks lost", n)
	}
	// wick-agent's flags that depend on its deployment, and wick's flag for
	// the same thing.
	for _, tc := range []struct{ agentFlag, wickFlag string }{
		{"llm-addr", "llm-addr"},
		{"sandbox-addr", "sandbox-addr"},
		{"redis-addr", "redis-addr"},
		{"agents-file", "agents-file"},
		{"secrets-dir", "secrets-dir"},
		{"default-model", "model"},
		{"default-backend", "sandbox"},
		{"default-image", "sandbox-image"},
		// -sandbox-placement and -sandbox-refresh choose among several
		// sandbox services; wick runs exactly one.
	} {
		if wick.Lookup(tc.wickFlag) == nil {
			t.Errorf("wick has no -%s, its counterpart of wick-agent's -%s", tc.wickFlag, tc.agentFlag)
		}
	}
}

// TestToolAllowNets checks that -tool-allow-nets reaches the agent
// service's options and that a bad CIDR is refused.
func TestToolAllowNets(t *testing.T) {
	for _, tc := range []struct {
		value   string
		wantErr bool
	}{
		{"127.0.0.0/8", false},
		{"127.0.0.0/8,10.0.0.0/8", false},
		{"not-a-cidr", true},
	} {
		t.Run(tc.value, func(t *testing.T) {
			o, err := parseFlags([]string{"-tool-allow-nets", tc.value})
			if err != nil {
				t.Fatal(err)
			}
			if o.agent.ToolAllowNets != tc.value {
				t.Fatalf("ToolAllowNets = %q", o.agent.ToolAllowNets)
			}
			_, err = o.config(nil)
			if (err != nil) != tc.wantErr {
				t.Fatalf("config: err = %v, want error %v", err, tc.wantErr)
			}
		})
	}
}
