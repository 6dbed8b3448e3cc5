package runexec

import (
	"math"

	"google.golang.org/protobuf/proto"

	agentv1 "github.com/wick-agent/wick/gen/wick/agent/v1"
)

// usageTotal sums a run's on_usage events for its final event.
type usageTotal struct {
	calls         int
	input, output int64
	costMicroUSD  int64
	priced        bool
}

func (t *usageTotal) add(u *agentv1.UsageData) {
	t.calls++
	t.input += int64(u.GetInputTokens())
	t.output += int64(u.GetOutputTokens())
	if u.CostMicroUsd != nil {
		t.priced = true
		t.costMicroUSD += int64(u.GetCostMicroUsd())
	}
}

// data is the total as the final event carries it; nil when no call
// reported usage. The fields are int32, like each call's: a run that
// overflows them reads the largest value, never a negative one.
func (t *usageTotal) data() *agentv1.UsageData {
	if t.calls == 0 {
		return nil
	}
	clamp := func(n int64) *int32 { return proto.Int32(int32(min(n, math.MaxInt32))) }
	u := &agentv1.UsageData{InputTokens: clamp(t.input), OutputTokens: clamp(t.output)}
	if t.priced {
		u.CostMicroUsd = clamp(t.costMicroUSD)
	}
	return u
}
