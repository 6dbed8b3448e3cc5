package a2a

import agentv1 "github.com/wick-agent/wick/gen/wick/agent/v1"

// EncodeEvent is what one run event costs the A2A stream: its mapping to an
// A2A event and the JSON-RPC response's JSON.
func EncodeEvent(tr *Tracker, ev *agentv1.StreamEvent) ([]byte, error) {
	out, _ := tr.apply(ev)
	return encodeFrame(&Response{JSONRPC: "2.0", ID: []byte("1"), Result: out})
}

// Tracker is tracker, for the benchmark.
type Tracker = tracker

// NewTracker is newTracker.
func NewTracker(runID, threadID string) *Tracker { return newTracker(runID, threadID) }
