package loop

import (
	"context"
	"encoding/json"
	"sync"
	"sync/atomic"
)

// runScope is what the loop hands to tools and hooks through the context of
// one tool round: a way to emit events and to change the state safely while
// other tools of the round run in parallel.
type runScope struct {
	emit func(StreamEvent)
	// stop is the run's stop check (WithStopCheck), nil when it has none.
	stop  func(context.Context) bool
	mu    sync.Mutex
	state *AgentState
	// closed is set when the round is over (finished or cancelled), so a tool
	// that outlives a cancelled round cannot change the state being saved.
	closed bool
	// ended mirrors closed for Emit, which must not take mu (a tool may emit
	// from inside MutateState).
	ended atomic.Bool
}

type scopeKey struct{}

func withScope(ctx context.Context, s *runScope) context.Context {
	return context.WithValue(ctx, scopeKey{}, s)
}

func scopeFrom(ctx context.Context) *runScope {
	s, _ := ctx.Value(scopeKey{}).(*runScope)
	return s
}

// Emit sends an event of the running loop (a hook's or tool's own event, such
// as on_todos). Outside a loop it does nothing.
func Emit(ctx context.Context, ev StreamEvent) {
	if s := scopeFrom(ctx); s != nil && s.emit != nil && !s.ended.Load() {
		s.emit(ev)
	}
}

// StopRequested asks the stop check of the running loop (WithStopCheck)
// whether a graceful stop was requested. A tool that runs a loop of its own
// (a sub-agent) passes it on, so that stopping the run stops its children
// at their next step boundary too. Outside a loop, or without a stop
// check, it reports false.
func StopRequested(ctx context.Context) bool {
	if s := scopeFrom(ctx); s != nil && s.stop != nil {
		return s.stop(ctx)
	}
	return false
}

// MutateState applies fn to state. Inside a loop's tool round it is
// serialised with the other tools of the round and with the loop's own
// writes, and does nothing (returning false) once the round is over — a
// cancelled tool that finishes late cannot touch the state being saved.
// Outside a loop it calls fn directly.
func MutateState(ctx context.Context, state *AgentState, fn func(*AgentState)) bool {
	s := scopeFrom(ctx)
	if s == nil || s.state != state {
		fn(state)
		return true
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return false
	}
	fn(state)
	return true
}

// close ends the round: later MutateState calls are no-ops.
func (s *runScope) close() {
	s.ended.Store(true)
	s.mu.Lock()
	s.closed = true
	s.mu.Unlock()
}

// JSONValue turns v into plain JSON values (maps, slices, strings, float64,
// bool, nil), the shape event consumers convert to protobuf Values.
func JSONValue(v any) any {
	b, err := json.Marshal(v)
	if err != nil {
		return nil
	}
	var out any
	if err := json.Unmarshal(b, &out); err != nil {
		return nil
	}
	return out
}

// CallInfo identifies the tool call a tool is executing, for tools that pass
// it on (HTTP callbacks).
type CallInfo struct {
	ToolCallID string
	ThreadID   string
	RunID      string
}

type callInfoKey struct{}

// WithCallInfo returns ctx carrying info.
func WithCallInfo(ctx context.Context, info CallInfo) context.Context {
	return context.WithValue(ctx, callInfoKey{}, info)
}

// CallInfoFromContext returns the tool call being executed, if any.
func CallInfoFromContext(ctx context.Context) (CallInfo, bool) {
	info, ok := ctx.Value(callInfoKey{}).(CallInfo)
	return info, ok
}
