package registry

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"
)

// Config event names.
const (
	EventAgentCreated     = "agent_created"
	EventAgentUpdated     = "agent_updated"
	EventAgentDeleted     = "agent_deleted"
	EventToolRegistered   = "tool_registered"
	EventToolDeleted      = "tool_deleted"
	EventBackendSwitched  = "backend_switched"
	EventContainerChanged = "container_changed"
)

// DefaultWatchBuffer is how many events a watcher may fall behind before it
// is disconnected.
const DefaultWatchBuffer = 64

// ErrSlowWatcher ends a subscription that fell too far behind, so one slow
// watcher never holds up the others.
var ErrSlowWatcher = errors.New("watcher fell too far behind and was disconnected")

// ConfigEvent is a configuration change. An empty User reaches every user
// (template changes).
type ConfigEvent struct {
	User    string    `json:"user"`
	Event   string    `json:"event"`
	AgentID string    `json:"agent_id,omitempty"`
	Name    string    `json:"name,omitempty"`
	Data    any       `json:"data,omitempty"` // already redacted
	Time    time.Time `json:"time"`
}

// Subscription receives one user's events until Err is closed.
type Subscription struct {
	C    <-chan ConfigEvent
	c    chan ConfigEvent
	user string
	done chan struct{}
	err  error
	once sync.Once
}

// Done is closed when the subscription ended; Err then says why.
func (s *Subscription) Done() <-chan struct{} { return s.done }

// Err is the reason the subscription ended (nil when cancelled).
func (s *Subscription) Err() error { return s.err }

func (s *Subscription) end(err error) {
	s.once.Do(func() { s.err = err; close(s.done) })
}

// Hub fans configuration events out to local watchers. Events published on
// any replica reach every replica's watchers through Redis pub/sub when it
// has a client, and stay in the process otherwise.
type Hub struct {
	rdb     redis.UniversalClient
	channel string
	buffer  int
	logger  *slog.Logger

	mu   sync.Mutex
	subs map[*Subscription]struct{}
}

// NewHub returns a hub; rdb may be nil. Call Run when rdb is set.
func NewHub(rdb redis.UniversalClient, prefix string, buffer int, logger *slog.Logger) *Hub {
	if buffer <= 0 {
		buffer = DefaultWatchBuffer
	}
	if prefix == "" {
		prefix = "wick"
	}
	return &Hub{rdb: rdb, channel: prefix + ":config-events", buffer: buffer, logger: logger, subs: map[*Subscription]struct{}{}}
}

// Start subscribes to the shared channel (when there is one) and relays its
// events to local watchers until ctx ends. It returns once subscribed.
func (h *Hub) Start(ctx context.Context) error {
	if h.rdb == nil {
		return nil
	}
	ps := h.rdb.Subscribe(ctx, h.channel)
	if _, err := ps.Receive(ctx); err != nil {
		ps.Close()
		return fmt.Errorf("subscribe to config events: %w", err)
	}
	go func() {
		defer ps.Close()
		ch := ps.Channel()
		for {
			select {
			case <-ctx.Done():
				return
			case m, ok := <-ch:
				if !ok {
					return
				}
				var ev ConfigEvent
				if err := unmarshal([]byte(m.Payload), &ev); err != nil {
					h.logger.Warn("bad config event", "error", err)
					continue
				}
				h.deliver(ev)
			}
		}
	}()
	return nil
}

// Publish sends ev to every watcher of its user on every replica.
func (h *Hub) Publish(ctx context.Context, ev ConfigEvent) {
	if ev.Time.IsZero() {
		ev.Time = time.Now().UTC()
	}
	if h.rdb == nil {
		h.deliver(ev)
		return
	}
	data, err := marshal(ev)
	if err == nil {
		err = h.rdb.Publish(ctx, h.channel, data).Err()
	}
	if err != nil {
		// The change itself is stored; only live watchers miss it.
		h.logger.Warn("publish config event", "event", ev.Event, "error", err)
	}
}

func (h *Hub) deliver(ev ConfigEvent) {
	h.mu.Lock()
	defer h.mu.Unlock()
	for s := range h.subs {
		if ev.User != "" && ev.User != s.user {
			continue
		}
		select {
		case s.c <- ev:
		default:
			delete(h.subs, s)
			s.end(ErrSlowWatcher)
		}
	}
}

// Subscribe watches user's events until cancel is called.
func (h *Hub) Subscribe(user string) (sub *Subscription, cancel func()) {
	c := make(chan ConfigEvent, h.buffer)
	s := &Subscription{C: c, c: c, user: user, done: make(chan struct{})}
	h.mu.Lock()
	h.subs[s] = struct{}{}
	h.mu.Unlock()
	return s, func() {
		h.mu.Lock()
		delete(h.subs, s)
		h.mu.Unlock()
		s.end(nil)
	}
}
