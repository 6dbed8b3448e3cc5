// Package sse turns grpc-gateway's server streams into Server-Sent Events: a
// marshaler that writes one SSE frame per streamed message, and a
// ResponseWriter that keeps an idle stream alive with comment heartbeats.
package sse

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/grpc-ecosystem/grpc-gateway/v2/runtime"

	agentv1 "github.com/wick-agent/wick/gen/wick/agent/v1"
	"github.com/wick-agent/wick/services/gateway/internal/httperr"
	statuspb "google.golang.org/genproto/googleapis/rpc/status"
	"google.golang.org/protobuf/proto"
)

// ContentType is the media type of an event stream; grpc-gateway picks the
// marshaler registered for it only on an exact Accept match.
const ContentType = "text/event-stream"

// DefaultHeartbeat is how long a stream may stay silent before a comment
// frame is sent, so that proxies and browsers do not time it out.
const DefaultHeartbeat = 15 * time.Second

// Event is what an SSE frame needs from a streamed message: the StreamEvent
// and ConfigEvent messages both have it.
type Event interface {
	proto.Message
	GetId() string
	GetEvent() string
}

// Marshaler writes grpc-gateway's stream envelopes as SSE frames. Each
// {"result": event} becomes `id:`, `event:` and `data:` lines; an
// {"error": status} becomes an `event: error` frame whose data is
// {"code", "status", "message", "trace_id"}. The frame's closing blank line is the
// delimiter grpc-gateway writes after each message.
type Marshaler struct {
	// JSON encodes the data line and decodes request bodies.
	JSON runtime.Marshaler
}

var _ runtime.Marshaler = (*Marshaler)(nil)

// ContentType answers text/event-stream for every message.
func (*Marshaler) ContentType(any) string { return ContentType }

// StreamContentType is the Content-Type of a stream.
func (*Marshaler) StreamContentType(any) string { return ContentType }

// Delimiter ends an SSE frame with the blank line after its last field.
func (*Marshaler) Delimiter() []byte { return []byte("\n") }

// Marshal encodes one stream envelope as an SSE frame.
func (m *Marshaler) Marshal(v any) ([]byte, error) {
	switch env := v.(type) {
	case map[string]any:
		if r, ok := env["result"]; ok {
			return m.frame(r)
		}
	case map[string]proto.Message:
		if e, ok := env["error"]; ok {
			return m.errorFrame(e)
		}
	}
	// Anything else (a unary answer from a misrouted Accept header) is sent
	// as a single data frame rather than dropped.
	data, err := m.JSON.Marshal(v)
	if err != nil {
		return nil, err
	}
	return appendData(nil, data), nil
}

func (m *Marshaler) frame(v any) ([]byte, error) {
	if ev, ok := v.(*agentv1.StreamEvent); ok {
		return eventFrame(ev)
	}
	data, err := m.JSON.Marshal(v)
	if err != nil {
		return nil, err
	}
	var b []byte
	if ev, ok := v.(Event); ok {
		if id := field(ev.GetId()); id != "" {
			b = append(b, "id: "...)
			b = append(b, id...)
			b = append(b, '\n')
		}
		if name := field(ev.GetEvent()); name != "" {
			b = append(b, "event: "...)
			b = append(b, name...)
			b = append(b, '\n')
		}
	}
	return appendData(b, data), nil
}

func (m *Marshaler) errorFrame(v proto.Message) ([]byte, error) {
	st, ok := v.(*statuspb.Status)
	if !ok {
		return nil, fmt.Errorf("sse: error envelope holds %T, want a status", v)
	}
	data, err := json.Marshal(httperr.FromStatus(st))
	if err != nil {
		return nil, err
	}
	return appendData([]byte("event: error\n"), data), nil
}

// field keeps a value on one line: a CR or LF would end the field early and
// let a value inject frames of its own.
func field(s string) string {
	if !strings.ContainsAny(s, "\r\n") {
		return s
	}
	return strings.NewReplacer("\r", "", "\n", "").Replace(s)
}

// appendData writes data as `data:` lines; compact JSON has no line breaks,
// but a data line per input line keeps any payload well formed.
func appendData(b, data []byte) []byte {
	for line := range bytes.SplitSeq(data, []byte("\n")) {
		b = append(b, "data: "...)
		b = append(b, bytes.TrimSuffix(line, []byte("\r"))...)
		b = append(b, '\n')
	}
	return b
}

// Unmarshal decodes a request body as JSON.
func (m *Marshaler) Unmarshal(data []byte, v any) error { return m.JSON.Unmarshal(data, v) }

// NewDecoder decodes request bodies as JSON.
func (m *Marshaler) NewDecoder(r io.Reader) runtime.Decoder { return m.JSON.NewDecoder(r) }

// NewEncoder writes SSE frames to w.
func (m *Marshaler) NewEncoder(w io.Writer) runtime.Encoder {
	return runtime.EncoderFunc(func(v any) error {
		b, err := m.Marshal(v)
		if err != nil {
			return err
		}
		_, err = w.Write(append(b, '\n'))
		return err
	})
}

// Heartbeat is the comment frame sent on an idle stream.
var Heartbeat = []byte(": ping\n\n")

// Writer is the ResponseWriter of one SSE response. It sets the stream's
// headers, serialises the stream's writes with heartbeats, and once the
// first event went out sends a heartbeat whenever the stream was silent for
// the interval. Headers are left to the stream until its first write, so an
// early failure can still answer with a plain HTTP error.
type Writer struct {
	w        http.ResponseWriter
	rc       *http.ResponseController
	interval time.Duration

	mu      sync.Mutex
	started bool
	last    time.Time
	// errStatus is set when the stream fails before its first event; its
	// error frame is then held back and sent as a plain JSON body.
	errStatus int
	errBuf    []byte
	// received is when the event being written arrived (Received); the
	// flush that sends it reports the time since to forwarded.
	received  time.Time
	forwarded func(time.Duration)

	// beat sends the next heartbeat (set by the first write when the
	// interval is positive); closed stops it for good.
	beat   *time.Timer
	closed bool
}

// WriterOption configures a Writer.
type WriterOption func(*Writer)

// WithForwarded has the writer report, for each event, the time from its
// arrival (Received) to its frame flushed to the client.
func WithForwarded(f func(time.Duration)) WriterOption { return func(s *Writer) { s.forwarded = f } }

// NewWriter wraps w for an SSE response and sets the stream's headers.
func NewWriter(w http.ResponseWriter, interval time.Duration, opts ...WriterOption) *Writer {
	h := w.Header()
	h.Set("Content-Type", ContentType)
	h.Set("Cache-Control", "no-cache")
	h.Set("X-Accel-Buffering", "no")
	s := &Writer{
		w:        w,
		rc:       http.NewResponseController(w),
		interval: interval,
	}
	for _, o := range opts {
		o(s)
	}
	return s
}

// Received notes that the stream's next event has just arrived from the
// service behind the gateway.
func (s *Writer) Received() {
	s.mu.Lock()
	s.received = time.Now()
	s.mu.Unlock()
}

// Header returns the response headers.
func (s *Writer) Header() http.Header { return s.w.Header() }

// WriteHeader sends the status line; an error status before the first event
// turns the response into a plain JSON error.
func (s *Writer) WriteHeader(code int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.started && code >= 400 {
		s.errStatus = code
		return
	}
	s.w.WriteHeader(code)
}

// Write writes part of a frame; the first write starts the heartbeats.
func (s *Writer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.errStatus != 0 {
		s.errBuf = append(s.errBuf, p...)
		return len(p), nil
	}
	n, err := s.w.Write(p)
	s.last = time.Now()
	if !s.started && err == nil {
		s.started = true
		if s.interval > 0 {
			// A timer rather than a goroutine per stream: an idle stream
			// holds no stack for its heartbeats.
			s.beat = time.AfterFunc(s.interval, s.heartbeat)
		}
	}
	return n, err
}

// Flush sends what was written; grpc-gateway flushes after every frame.
func (s *Writer) Flush() { _ = s.FlushError() }

// FlushError is Flush with its error, for http.ResponseController.
func (s *Writer) FlushError() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.errStatus != 0 {
		return nil
	}
	err := s.rc.Flush()
	if err == nil && !s.received.IsZero() && s.forwarded != nil {
		s.forwarded(time.Since(s.received))
	}
	s.received = time.Time{}
	return err
}

// Unwrap gives http.ResponseController the underlying writer.
func (s *Writer) Unwrap() http.ResponseWriter { return s.w }

// Close stops the heartbeats, or sends a held-back early error; it must be
// called before the handler returns, since the ResponseWriter may not be
// used after that.
func (s *Writer) Close() {
	s.mu.Lock()
	started, errStatus := s.started, s.errStatus
	s.mu.Unlock()
	if errStatus != 0 {
		s.writeError()
		return
	}
	if !started {
		return
	}
	// A heartbeat running now finishes before the lock is ours; one that
	// fires later finds the writer closed.
	s.mu.Lock()
	s.closed = true
	if s.beat != nil {
		s.beat.Stop()
	}
	s.mu.Unlock()
}

// writeError sends the data of a held-back error frame as the body.
func (s *Writer) writeError() {
	var body []byte
	for line := range bytes.SplitSeq(s.errBuf, []byte("\n")) {
		if d, ok := bytes.CutPrefix(line, []byte("data: ")); ok {
			body = append(body, d...)
		}
	}
	h := s.w.Header()
	h.Set("Content-Type", "application/json")
	h.Del("Cache-Control")
	h.Del("X-Accel-Buffering")
	h.Del("Transfer-Encoding")
	s.w.WriteHeader(s.errStatus)
	_, _ = s.w.Write(append(body, '\n'))
}

// heartbeat sends a comment frame if the stream was silent for the
// interval, and sets the timer for the next one.
func (s *Writer) heartbeat() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return
	}
	wait := s.interval - time.Since(s.last)
	if wait <= 0 {
		if _, err := s.w.Write(Heartbeat); err == nil {
			_ = s.rc.Flush()
		}
		s.last = time.Now()
		wait = s.interval
	}
	s.beat.Reset(wait)
}
