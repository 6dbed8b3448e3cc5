package main

import (
	"flag"
	"testing"

	"github.com/wick-agent/wick/services/agent"
)

// TestFlagsShared checks that every flag of wick-agent is either one of
// the agent service's shared flags (agent.Flags, which wick defines too) or
// one that depends on how this binary is deployed, listed here with wick's
// counterpart in cmd/wick's TestAgentFlagsShared. A new flag must be added
// to agent.Flags, or here and to wick.
func TestFlagsShared(t *testing.T) {
	perDeployment := map[string]bool{
		"llm-addr": true, "sandbox-addr": true, "redis-addr": true, "agents-file": true, "secrets-dir": true,
		"default-model": true, "default-backend": true, "default-image": true,
		"sandbox-placement": true, "sandbox-refresh": true,
	}
	own := flag.NewFlagSet("wick-agent", flag.ContinueOnError)
	defineFlags(own)
	shared := flag.NewFlagSet("agent", flag.ContinueOnError)
	f := agent.DefaultFlags()
	f.RegisterFlags(shared)
	own.VisitAll(func(fl *flag.Flag) {
		if shared.Lookup(fl.Name) == nil && !perDeployment[fl.Name] {
			t.Errorf("-%s is neither in agent.Flags nor a per-deployment flag: wick would lack it", fl.Name)
		}
	})
	shared.VisitAll(func(fl *flag.Flag) {
		if own.Lookup(fl.Name) == nil {
			t.Errorf("wick-agent lacks the shared flag -%s", fl.Name)
		}
	})
	for name := range perDeployment {
		if own.Lookup(name) == nil {
			t.Errorf("-%s is listed but wick-agent does not define it", name)
		}
	}
}
