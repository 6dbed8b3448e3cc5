package agent_test

import (
	"slices"
	"strconv"
	"testing"
	"time"

	agentv1 "github.com/wick-agent/wick/gen/wick/agent/v1"
	llmv1 "github.com/wick-agent/wick/gen/wick/llm/v1"
	"github.com/wick-agent/wick/services/agent"
)

// TestListAvailableSkillsStartsNoSandbox: listing skills reads only running
// sandboxes and names the agents whose sandbox is not running; it never
// calls EnsureSandbox.
func TestListAvailableSkillsStartsNoSandbox(t *testing.T) {
	t.Parallel()
	s := newSuite(t, calcThenAnswer)
	a := memoryReplica(t, s)
	ctx := withTimeout(t, as("alice"), 30*time.Second)
	for _, id := range []string{"idle-b", "idle-a"} {
		if _, err := a.client.CreateAgent(ctx, &agentv1.CreateAgentRequest{Agent: &agentv1.Agent{
			AgentId: id, Backend: &agentv1.BackendConfig{Type: "local"}, Skills: &agentv1.PathsConfig{Paths: []string{"/workspace/skills"}},
		}}); err != nil {
			t.Fatal(err)
		}
	}
	before := s.sandbox.ensureCount()
	for _, id := range []string{"", "idle-a"} {
		resp, err := a.client.ListAvailableSkills(ctx, &agentv1.ListAvailableSkillsRequest{AgentId: id})
		if err != nil {
			t.Fatal(err)
		}
		// The default agent, with a sandbox, reads the skills library too.
		want := []string{"default", "idle-a", "idle-b"}
		if id != "" {
			want = []string{id}
		}
		if len(resp.GetSkills()) != 0 || !slices.Equal(resp.GetNotRunningAgentIds(), want) {
			t.Errorf("ListAvailableSkills(%q) = %v, want no skills and not running %v", id, resp, want)
		}
	}
	if n := s.sandbox.ensureCount() - before; n != 0 {
		t.Fatalf("ListAvailableSkills called EnsureSandbox %d times, want 0", n)
	}
}

// TestDeleteAgentCancelsItsRuns: deleting an agent cancels its unfinished
// runs, also when another replica runs them, and the answer names them.
func TestDeleteAgentCancelsItsRuns(t *testing.T) {
	t.Parallel()
	blocks := func(int, *llmv1.StreamRequest) reply { return reply{block: true} }
	tests := []struct {
		name     string
		replicas func(t *testing.T, s *suite) (runner, deleter *replica)
	}{
		{"one replica", func(t *testing.T, s *suite) (*replica, *replica) {
			a := memoryReplica(t, s)
			return a, a
		}},
		{"another replica runs it", func(t *testing.T, s *suite) (*replica, *replica) {
			addr := needRedis(t)
			st1, rdb1 := redisStores(t, addr, 5*time.Second)
			st2, rdb2 := redisStores(t, addr, 5*time.Second)
			poll := agent.WithPollInterval(50 * time.Millisecond)
			return s.agent(st1, rdb1, poll), s.agent(st2, rdb2, poll)
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			s := newSuite(t, blocks)
			runner, deleter := tc.replicas(t, s)
			// The Redis may be shared with other tests: the user is this test's own.
			user := "alice-" + strconv.FormatInt(time.Now().UnixNano(), 36)
			ctx := withTimeout(t, as(user), 30*time.Second)
			if _, err := runner.client.CreateAgent(ctx, &agentv1.CreateAgentRequest{Agent: &agentv1.Agent{AgentId: "doomed"}}); err != nil {
				t.Fatal(err)
			}
			st, err := runner.client.Stream(ctx, &agentv1.StreamRequest{AgentId: "doomed", Messages: human("go"), Background: true})
			if err != nil {
				t.Fatal(err)
			}
			first, err := st.Recv()
			if err != nil || first.GetEvent().GetEvent() != "on_run_start" {
				t.Fatalf("first event = %v, %v", first, err)
			}
			runID := first.GetEvent().GetRunId()
			waitCall(t, s, 0)

			resp, err := deleter.client.DeleteAgent(ctx, &agentv1.DeleteAgentRequest{AgentId: "doomed"})
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(resp.GetCancelledRunIds(), []string{runID}) || resp.GetSandboxDeleted() {
				t.Fatalf("DeleteAgent = %v, want cancelled [%s] and no sandbox", resp, runID)
			}
			rest := collect(t, st.Recv)
			if last := rest[len(rest)-1]; last.GetEvent() != "error" || last.GetData().GetStructValue().GetFields()["code"].GetStringValue() != "cancelled" {
				t.Fatalf("last event after delete = %v", last)
			}
			run, err := deleter.client.GetRun(ctx, &agentv1.GetRunRequest{RunId: runID})
			if err != nil || run.GetRun().GetStatus() != "cancelled" {
				t.Fatalf("GetRun = %v, %v; want cancelled", run, err)
			}
		})
	}
}
