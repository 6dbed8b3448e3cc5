package sse

import (
	"github.com/grpc-ecosystem/grpc-gateway/v2/runtime"

	agentv1 "github.com/wick-agent/wick/gen/wick/agent/v1"
	"github.com/wick-agent/wick/platform/runevent"
)

// EventJSON is the REST API's JSON marshaler that writes a run event as
// JSON clients get it, {event, name, run_id, data, thread_id, id} with data
// the typed payload's JSON (runevent), in the stream envelopes grpc-gateway
// hands it ({"result": event}); everything else is JSONPb's.
type EventJSON struct {
	*runtime.JSONPb
}

var _ runtime.Marshaler = EventJSON{}

// Marshal writes a run event, or a stream envelope holding one, itself.
func (j EventJSON) Marshal(v any) ([]byte, error) {
	switch t := v.(type) {
	case *agentv1.StreamEvent:
		return runevent.AppendEvent(nil, t)
	case map[string]any:
		if ev, ok := t["result"].(*agentv1.StreamEvent); ok && len(t) == 1 {
			b := append(make([]byte, 0, 256), `{"result":`...)
			b, err := runevent.AppendEvent(b, ev)
			if err != nil {
				return nil, err
			}
			return append(b, '}'), nil
		}
	}
	return j.JSONPb.Marshal(v)
}

// eventFrame is the SSE frame of a run event.
func eventFrame(ev *agentv1.StreamEvent) ([]byte, error) {
	id, name := field(ev.GetId()), field(ev.GetEvent())
	// A text delta's frame (ids, names and a few words) fits in one buffer.
	b := make([]byte, 0, 256)
	if id != "" {
		b = append(b, "id: "...)
		b = append(b, id...)
		b = append(b, '\n')
	}
	if name != "" {
		b = append(b, "event: "...)
		b = append(b, name...)
		b = append(b, '\n')
	}
	b = append(b, "data: "...)
	b, err := runevent.AppendEvent(b, ev)
	if err != nil {
		return nil, err
	}
	return append(b, '\n'), nil
}
