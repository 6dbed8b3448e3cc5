package mcp

import (
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
	"google.golang.org/protobuf/proto"

	agentv1 "github.com/wick-agent/wick/gen/wick/agent/v1"
	"github.com/wick-agent/wick/services/agent/internal/loop"
)

// Bounds of the progress a call reports as run events: a server may send
// notifications as fast as it likes, and each event goes to every client
// of the run and into its log.
const (
	// ProgressInterval is the least time between two progress events of
	// one call; notifications in between are dropped, except one that
	// says the call is complete.
	ProgressInterval = 250 * time.Millisecond
	// MaxProgressEvents bounds the progress events of one call.
	MaxProgressEvents = 200
	// maxProgressMessage bounds a progress message's text.
	maxProgressMessage = 256
)

// progressTokens numbers the progress tokens of the pool's calls.
var progressTokens atomic.Uint64

// progressSink turns one call's progress notifications into events,
// rate-limited and bounded.
type progressSink struct {
	emit func(loop.StreamEvent)
	tool string
	call string
	now  func() time.Time

	mu   sync.Mutex
	last time.Time
	sent int
}

func newProgressSink(tool, callID string, emit func(loop.StreamEvent)) *progressSink {
	return &progressSink{emit: emit, tool: tool, call: callID, now: time.Now}
}

// notify handles one notification; it reports whether an event went out.
func (p *progressSink) notify(n *sdk.ProgressNotificationParams) bool {
	done := n.Total > 0 && n.Progress >= n.Total
	p.mu.Lock()
	now := p.now()
	if p.sent >= MaxProgressEvents || (!done && p.sent > 0 && now.Sub(p.last) < ProgressInterval) {
		p.mu.Unlock()
		return false
	}
	p.sent++
	p.last = now
	p.mu.Unlock()
	p.emit(progressEvent(p.tool, p.call, n))
	return true
}

// progressEvent is the run event of one notification.
func progressEvent(tool, callID string, n *sdk.ProgressNotificationParams) loop.StreamEvent {
	d := &agentv1.ToolProgressData{ToolCallId: callID, Progress: n.Progress}
	if n.Total > 0 {
		d.Total = proto.Float64(n.Total)
	}
	if n.Message != "" {
		d.Message = proto.String(truncate(n.Message, maxProgressMessage))
	}
	return loop.StreamEvent{Name: tool, Data: &agentv1.RunEventData{Kind: &agentv1.RunEventData_OnToolProgress{OnToolProgress: d}}}
}

// newProgressToken returns a token unique in this process.
func newProgressToken() string {
	return "wick-" + strconv.FormatUint(progressTokens.Add(1), 10)
}

// progressRoutes sends each notification to the sink of its call's token.
type progressRoutes struct {
	mu    sync.Mutex
	sinks map[string]*progressSink
}

func (r *progressRoutes) add(token string, s *progressSink) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.sinks == nil {
		r.sinks = map[string]*progressSink{}
	}
	r.sinks[token] = s
}

func (r *progressRoutes) remove(token string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	delete(r.sinks, token)
}

// route hands a notification to its call; one for a call that ended, or
// with a token this client never gave, is dropped.
func (r *progressRoutes) route(n *sdk.ProgressNotificationParams) {
	token, _ := n.ProgressToken.(string)
	r.mu.Lock()
	s := r.sinks[token]
	r.mu.Unlock()
	if s != nil {
		s.notify(n)
	}
}
