package placement_test

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/wick-agent/wick/services/agent/internal/placement"
)

// key is one (user, agent) sandbox.
type key struct{ user, agent string }

// keys returns n sandboxes: 30 users with n/30 agents each, names as the
// service makes them.
func keys(n int) []key {
	out := make([]key, 0, n)
	for i := range n {
		out = append(out, key{fmt.Sprintf("user-%d", i%30), fmt.Sprintf("agent-%d", i/30)})
	}
	return out
}

func place(eps []string, ks []key) map[key]string {
	out := make(map[key]string, len(ks))
	for _, k := range ks {
		out[k] = placement.Pick(eps, k.user, k.agent)
	}
	return out
}

// endpointSets are the shapes of endpoint sets met in practice: pod IPs on
// one port, and loopback ports that differ in one digit.
var endpointSets = map[string][]string{
	"pod ips":        {"10.0.0.1:7002", "10.0.0.2:7002", "10.0.0.3:7002"},
	"loopback ports": {"127.0.0.1:40001", "127.0.0.1:40002", "127.0.0.1:40003"},
	"node names":     {"node-a.sandbox:7002", "node-b.sandbox:7002", "node-c.sandbox:7002"},
}

// TestScoreGolden pins the hash: a change would move every sandbox away
// from its workspace on the next deploy.
func TestScoreGolden(t *testing.T) {
	for _, tc := range []struct {
		endpoint, user, agent string
		want                  uint64
	}{
		{"10.0.0.1:7002", "alice", "coder", 0x884242c7751f5e18},
		{"", "", "", 0x6bc537b46c7f7baf},
	} {
		if got := placement.Score(tc.endpoint, tc.user, tc.agent); got != tc.want {
			t.Errorf("Score(%q, %q, %q) = %#x, want %#x", tc.endpoint, tc.user, tc.agent, got, tc.want)
		}
	}
}

// TestPickStable: a fresh list in another order, as a restarted agent
// replica or another replica resolves it, places every key alike.
func TestPickStable(t *testing.T) {
	ks := keys(300)
	for name, eps := range endpointSets {
		t.Run(name, func(t *testing.T) {
			want := place(eps, ks)
			r := rand.New(rand.NewPCG(1, 2))
			for range 5 {
				shuffled := slices.Clone(eps)
				r.Shuffle(len(shuffled), func(i, j int) { shuffled[i], shuffled[j] = shuffled[j], shuffled[i] })
				for k, e := range place(shuffled, ks) {
					if want[k] != e {
						t.Fatalf("%v: %s with %v, %s with %v", k, want[k], eps, e, shuffled)
					}
				}
			}
		})
	}
}

// TestSpread: 300 sandboxes over three endpoints put 100 ± 20 % on each.
func TestSpread(t *testing.T) {
	for name, eps := range endpointSets {
		t.Run(name, func(t *testing.T) {
			count := map[string]int{}
			for _, e := range place(eps, keys(300)) {
				count[e]++
			}
			for _, e := range eps {
				if n := count[e]; n < 80 || n > 120 {
					t.Errorf("%s holds %d of 300 sandboxes, want 80..120 (all: %v)", e, n, count)
				}
			}
		})
	}
}

// TestAddRemove: a fourth endpoint takes about a quarter of the sandboxes,
// all from the others, and moves no sandbox between the old ones; removing
// one moves only its own.
func TestAddRemove(t *testing.T) {
	ks := keys(300)
	for name, eps := range endpointSets {
		t.Run(name, func(t *testing.T) {
			before := place(eps, ks)
			added := eps[0][:len(eps[0])-1] + "9" // same shape, a new endpoint
			after := place(append(slices.Clone(eps), added), ks)
			moved := 0
			for k, e := range after {
				if e == before[k] {
					continue
				}
				if e != added {
					t.Fatalf("%v moved from %s to %s, not to the new endpoint", k, before[k], e)
				}
				moved++
			}
			if moved < 60 || moved > 90 {
				t.Errorf("adding a fourth endpoint moved %d of 300 sandboxes, want 75 ± 20 %%", moved)
			}
			gone := eps[1]
			for k, e := range place([]string{eps[0], eps[2]}, ks) {
				if before[k] != gone && e != before[k] {
					t.Fatalf("%v moved from %s to %s although only %s was removed", k, before[k], e, gone)
				}
			}
		})
	}
}

func TestPickEmpty(t *testing.T) {
	if got := placement.Pick(nil, "u", "a"); got != "" {
		t.Fatalf("Pick(nil) = %q, want \"\"", got)
	}
}
