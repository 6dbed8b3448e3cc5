package mcpserver

import (
	"context"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// progress sends a call's progress notifications: at most one per
// interval, each with the latest activity, so a fast token stream costs the
// client a few messages a second, and the last activity of a quiet spell
// still goes out (flush).
type progress struct {
	session  *mcp.ServerSession
	token    any
	interval time.Duration
	n        float64
	last     time.Time
	pending  string
	has      bool
}

// newProgress returns the progress of a call with token; without a token
// (the client asked for none) it sends nothing.
func newProgress(s *mcp.ServerSession, token any, interval time.Duration) *progress {
	return &progress{session: s, token: token, interval: interval}
}

// update records msg as the latest activity and sends it if the interval
// since the last notification has passed.
func (p *progress) update(ctx context.Context, msg string) {
	if p.token == nil || p.session == nil {
		return
	}
	p.n++
	p.pending, p.has = msg, true
	if time.Since(p.last) >= p.interval {
		p.flush(ctx)
	}
}

// flush sends the latest activity if it has not been sent.
func (p *progress) flush(ctx context.Context) {
	if !p.has || time.Since(p.last) < p.interval {
		return
	}
	p.has = false
	p.last = time.Now()
	// A notification that cannot be written is lost with its stream; the
	// call's result will say how the run ended.
	_ = p.session.NotifyProgress(ctx, &mcp.ProgressNotificationParams{
		ProgressToken: p.token,
		Progress:      p.n,
		Message:       p.pending,
	})
}
