package runexec

import (
	"math"
	"testing"

	"google.golang.org/protobuf/proto"

	agentv1 "github.com/wick-agent/wick/gen/wick/agent/v1"
)

func TestUsageTotal(t *testing.T) {
	call := func(in, out int32, cost *int32) *agentv1.UsageData {
		return &agentv1.UsageData{InputTokens: proto.Int32(in), OutputTokens: proto.Int32(out), CostMicroUsd: cost}
	}
	for _, tc := range []struct {
		name  string
		calls []*agentv1.UsageData
		want  *agentv1.UsageData
	}{
		{"no call", nil, nil},
		{"unpriced calls have no cost", []*agentv1.UsageData{call(10, 2, nil), call(30, 4, nil)}, call(40, 6, nil)},
		{"a priced call gives the cost", []*agentv1.UsageData{call(10, 2, nil), call(30, 4, proto.Int32(140))}, call(40, 6, proto.Int32(140))},
		{"clamped, never negative", []*agentv1.UsageData{call(math.MaxInt32, 1, proto.Int32(math.MaxInt32)), call(5, 1, proto.Int32(1))},
			call(math.MaxInt32, 2, proto.Int32(math.MaxInt32))},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var total usageTotal
			for _, c := range tc.calls {
				total.add(c)
			}
			if got := total.data(); !proto.Equal(got, tc.want) {
				t.Errorf("total %v, want %v", got, tc.want)
			}
		})
	}
}
