// Package llmtest provides a scripted model for tests of code that calls an
// llm.Provider (the agent loop, its hooks): it replays turns in order and
// records the requests it received.
package llmtest

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"

	"github.com/wick-agent/wick/llm"
)

// ErrScriptEnded is returned when the model is called more often than scripted.
var ErrScriptEnded = errors.New("llmtest: script ended")

// Turn is one scripted reply.
type Turn struct {
	// Deltas are streamed in order; Content of the reply is their concatenation.
	Deltas    []string
	ToolCalls []llm.ToolCall
	Usage     *llm.Usage
	// Err fails the call.
	Err error
	// Block makes the call wait for its context to end, then return ctx.Err().
	Block bool
	// Started, when set, is closed when the call begins.
	Started chan struct{}
}

// Text is a reply with one delta.
func Text(s string) Turn { return Turn{Deltas: []string{s}} }

// Call is a reply requesting the given tool calls.
func Call(calls ...llm.ToolCall) Turn { return Turn{ToolCalls: calls} }

// Script is an llm.Provider replaying turns in order, with the Call method
// (a whole reply at once) the agent's summarizer uses. Streamed calls consume
// the script; Call uses CallFn when set, or the script otherwise.
type Script struct {
	mu       sync.Mutex
	turns    []Turn
	next     int
	requests []llm.Request
	calls    []llm.Request

	// Repeat, when set, is replayed forever once the script has ended.
	Repeat *Turn
	// CallFn answers Call requests.
	CallFn func(ctx context.Context, req llm.Request) (*llm.Result, error)
}

var _ llm.Provider = (*Script)(nil)

// New returns a script of the given turns.
func New(turns ...Turn) *Script { return &Script{turns: turns} }

func (s *Script) take(req llm.Request) (Turn, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.requests = append(s.requests, req)
	if s.next >= len(s.turns) {
		if s.Repeat != nil {
			return *s.Repeat, nil
		}
		return Turn{}, fmt.Errorf("%w after %d turns", ErrScriptEnded, len(s.turns))
	}
	t := s.turns[s.next]
	s.next++
	return t, nil
}

// Requests returns the streamed requests received so far.
func (s *Script) Requests() []llm.Request {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]llm.Request(nil), s.requests...)
}

// Calls returns the Call requests received so far.
func (s *Script) Calls() []llm.Request {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]llm.Request(nil), s.calls...)
}

// Call returns the whole reply of the next turn (or of CallFn).
func (s *Script) Call(ctx context.Context, req llm.Request) (*llm.Result, error) {
	s.mu.Lock()
	s.calls = append(s.calls, req)
	fn := s.CallFn
	s.mu.Unlock()
	if fn != nil {
		return fn(ctx, req)
	}
	t, err := s.take(req)
	if err != nil {
		return nil, err
	}
	if err := t.begin(ctx); err != nil {
		return nil, err
	}
	res := t.result()
	return &res, nil
}

// begin signals Started, then blocks or fails as the turn says.
func (t Turn) begin(ctx context.Context) error {
	if t.Started != nil {
		close(t.Started)
	}
	if t.Block {
		<-ctx.Done()
		return ctx.Err()
	}
	return t.Err
}

func (t Turn) result() llm.Result {
	res := llm.Result{Content: strings.Join(t.Deltas, ""), ToolCalls: t.ToolCalls, FinishReason: llm.FinishStop}
	if len(t.ToolCalls) > 0 {
		res.FinishReason = llm.FinishToolCalls
	}
	if t.Usage != nil {
		res.Usage = *t.Usage
	}
	return res
}

// Stream implements llm.Provider: the turn's deltas go to emit, then the
// whole reply is returned.
func (s *Script) Stream(ctx context.Context, req llm.Request, emit llm.Emit) (llm.Result, error) {
	t, err := s.take(req)
	if err != nil {
		return llm.Result{}, err
	}
	if err := t.begin(ctx); err != nil {
		return llm.Result{}, err
	}
	for _, d := range t.Deltas {
		if err := ctx.Err(); err != nil {
			return llm.Result{}, err
		}
		if err := emit(llm.Event{Delta: d}); err != nil {
			return llm.Result{}, err
		}
	}
	return t.result(), nil
}
