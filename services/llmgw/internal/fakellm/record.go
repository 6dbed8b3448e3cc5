package fakellm

import (
	"context"
	"strings"

	"github.com/wick-agent/wick/llm"
)

// Recording is what a provider emitted during one streamed reply.
type Recording struct {
	Text   strings.Builder
	Deltas []llm.ToolCallDelta
	Events int
}

// Record streams req through p and records every event it emits, for tests
// of the providers' parsing.
func Record(ctx context.Context, p llm.Provider, req llm.Request) (llm.Result, *Recording, error) {
	rec := &Recording{}
	res, err := p.Stream(ctx, req, func(ev llm.Event) error {
		rec.Events++
		rec.Text.WriteString(ev.Delta)
		if ev.ToolCallDelta != nil {
			rec.Deltas = append(rec.Deltas, *ev.ToolCallDelta)
		}
		return nil
	})
	return res, rec, err
}
