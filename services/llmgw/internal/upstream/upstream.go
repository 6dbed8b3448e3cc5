// Package upstream is what the gateway's providers share about talking to a
// model vendor: the classified errors (Kind says whether to retry or fall
// back), the accumulator that assembles a streamed reply from its fragments,
// the parsing of tool-call arguments, the token estimate, and a context-aware
// sleep. The provider-neutral types themselves are the shared llm package's.
package upstream

import (
	"context"
	"time"
)

// EstimateTokens counts about four bytes a token (len/4), for providers that
// do not count tokens themselves.
func EstimateTokens(s string) int64 {
	return int64((len(s) + 3) / 4)
}

// Sleep waits for d or until ctx ends, whichever is first.
func Sleep(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return ctx.Err()
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}
