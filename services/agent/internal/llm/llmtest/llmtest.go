// Package llmtest provides a scripted llm.Client for tests of the agent loop
// and its hooks.
package llmtest

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"github.com/wick-agent/wick/services/agent/internal/llm"
)

// ErrScriptEnded is returned when the model is called more often than scripted.
var ErrScriptEnded = errors.New("llmtest: script ended")

// Turn is one scripted reply.
type Turn struct {
	// Deltas are streamed in order; Content of the reply is their concatenation.
	Deltas    []string
	ToolCalls []llm.ToolCallResult
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
func Call(calls ...llm.ToolCallResult) Turn { return Turn{ToolCalls: calls} }

// Script is an llm.Client replaying turns in order. Streamed calls consume
// the script; Call (used by the summarizer) uses CallFn when set, or the
// script otherwise.
type Script struct {
	mu       sync.Mutex
	turns    []Turn
	next     int
	requests []llm.Request
	calls    []llm.Request

	// Repeat, when set, is replayed forever once the script has ended.
	Repeat *Turn
	// CallFn answers Call requests.
	CallFn func(ctx context.Context, req llm.Request) (*llm.Response, error)
}

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

// Call implements llm.Client.
func (s *Script) Call(ctx context.Context, req llm.Request) (*llm.Response, error) {
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
	return t.response(ctx)
}

func (t Turn) response(ctx context.Context) (*llm.Response, error) {
	if t.Started != nil {
		close(t.Started)
	}
	if t.Block {
		<-ctx.Done()
		return nil, ctx.Err()
	}
	if t.Err != nil {
		return nil, t.Err
	}
	resp := &llm.Response{ToolCalls: t.ToolCalls}
	for _, d := range t.Deltas {
		resp.Content += d
	}
	if t.Usage != nil {
		resp.Usage = *t.Usage
	}
	return resp, nil
}

// Stream implements llm.Client.
func (s *Script) Stream(ctx context.Context, req llm.Request, ch chan<- llm.StreamChunk) error {
	t, err := s.take(req)
	if err != nil {
		return err
	}
	if t.Started != nil {
		close(t.Started)
	}
	if t.Block {
		<-ctx.Done()
		return ctx.Err()
	}
	if t.Err != nil {
		return t.Err
	}
	send := func(c llm.StreamChunk) error {
		select {
		case ch <- c:
			return nil
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	for _, d := range t.Deltas {
		if err := send(llm.StreamChunk{Delta: d}); err != nil {
			return err
		}
	}
	final := llm.StreamChunk{ToolCalls: t.ToolCalls, Usage: t.Usage, FinishReason: llm.FinishStop}
	if len(t.ToolCalls) > 0 {
		final.FinishReason = llm.FinishToolCalls
	}
	return send(final)
}
