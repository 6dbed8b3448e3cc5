// Package fakellm holds fake OpenAI and Anthropic servers for tests and
// benchmarks: handlers that replay recorded provider streams byte for byte,
// fail with a given status, or cut a stream, plus the recorded fixtures (see
// testdata/SOURCES.md for where each comes from).
package fakellm

import (
	"embed"
	"net/http"
	"sync"
	"sync/atomic"
	"time"
)

//go:embed testdata/openai/*.sse testdata/anthropic/*.txt
var fixtures embed.FS

// Fixture returns a recorded stream: "openai/text_stream.sse",
// "anthropic/tool_use_response.txt", …
func Fixture(name string) []byte {
	b, err := fixtures.ReadFile("testdata/" + name)
	if err != nil {
		panic(err) // a test names a fixture that does not exist
	}
	return b
}

// Request is what a fake saw of one request.
type Request struct {
	Path   string
	Header http.Header
	Body   []byte
}

// Server is a fake provider: each request is answered by the next handler of
// its script, the last one repeating. It records every request.
type Server struct {
	mu       sync.Mutex
	handlers []http.HandlerFunc
	reqs     []Request
	n        atomic.Int64
}

// New returns a fake that answers with handlers in turn.
func New(handlers ...http.HandlerFunc) *Server { return &Server{handlers: handlers} }

// ServeHTTP implements http.Handler.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body := make([]byte, 0, 1024)
	buf := make([]byte, 32<<10)
	for {
		n, err := r.Body.Read(buf)
		body = append(body, buf[:n]...)
		if err != nil {
			break
		}
	}
	i := int(s.n.Add(1) - 1)
	s.mu.Lock()
	s.reqs = append(s.reqs, Request{Path: r.URL.Path, Header: r.Header.Clone(), Body: body})
	h := s.handlers[min(i, len(s.handlers)-1)]
	s.mu.Unlock()
	h(w, r)
}

// Count is the number of requests served.
func (s *Server) Count() int { return int(s.n.Load()) }

// Requests returns what the fake saw.
func (s *Server) Requests() []Request {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Request(nil), s.reqs...)
}

// SSE replays body byte for byte as an event stream.
func SSE(body []byte) http.HandlerFunc {
	return func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		w.WriteHeader(http.StatusOK)
		_, _ = w.Write(body)
	}
}

// SSEAfter replays body after a fixed latency (for benchmarks).
func SSEAfter(latency time.Duration, body []byte) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		t := time.NewTimer(latency)
		defer t.Stop()
		select {
		case <-t.C:
		case <-r.Context().Done():
			return
		}
		SSE(body)(w, r)
	}
}

// Status answers with an HTTP error, headers and a JSON body.
func Status(code int, headers map[string]string, body string) http.HandlerFunc {
	return func(w http.ResponseWriter, _ *http.Request) {
		for k, v := range headers {
			w.Header().Set(k, v)
		}
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(code)
		_, _ = w.Write([]byte(body))
	}
}

// Cut sends the first part of body and then drops the connection without
// ending the response, as a network failure would.
func Cut(body []byte) http.HandlerFunc {
	return func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		w.WriteHeader(http.StatusOK)
		_, _ = w.Write(body)
		w.(http.Flusher).Flush()
		conn, _, err := http.NewResponseController(w).Hijack()
		if err == nil {
			_ = conn.Close()
		}
	}
}

// Hang sends the first part of body, then waits until the request is
// cancelled and closes canceled: it shows that cancelling a call reaches the
// provider.
func Hang(body []byte, canceled chan<- struct{}) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		w.WriteHeader(http.StatusOK)
		_, _ = w.Write(body)
		w.(http.Flusher).Flush()
		<-r.Context().Done()
		close(canceled)
	}
}
