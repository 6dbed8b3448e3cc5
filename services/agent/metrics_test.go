package agent_test

import (
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	agentv1 "github.com/wick-agent/wick/gen/wick/agent/v1"
	"github.com/wick-agent/wick/services/agent"
)

// TestRunLogAppendMetric: with a registry, every logged event of a run is
// observed in wick_agent_run_log_append_seconds.
func TestRunLogAppendMetric(t *testing.T) {
	t.Parallel()
	reg := prometheus.NewRegistry()
	s := newSuite(t, calcThenAnswer)
	a := memoryReplica(t, s, agent.WithMetrics(reg))
	ctx := withTimeout(t, as("alice"), 30*time.Second)
	if n, err := testutil.GatherAndCount(reg, "wick_agent_run_log_append_seconds"); err != nil || n != 1 {
		t.Fatalf("registered histograms: %d, %v", n, err)
	}
	if _, err := a.client.Invoke(ctx, &agentv1.InvokeRequest{AgentId: "default", Messages: human("what is 2+3?")}); err != nil {
		t.Fatal(err)
	}
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	var count uint64
	for _, mf := range mfs {
		if mf.GetName() == "wick_agent_run_log_append_seconds" {
			count = mf.GetMetric()[0].GetHistogram().GetSampleCount()
		}
	}
	// A tool round and an answer: at least the tool's start and end and
	// the streamed tokens.
	if count < 3 {
		t.Fatalf("appends observed: %d", count)
	}
}
