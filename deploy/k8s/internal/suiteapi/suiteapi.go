// Package suiteapi is a test client of the gateway's REST and SSE API, used
// by the topology and cluster tests. Every call that does not get the answer
// it must have fails the test it was made for.
package suiteapi

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"slices"
	"strings"
	"testing"
)

// Client calls the gateway's REST API as one user.
type Client struct {
	t     testing.TB
	base  string
	token string
}

// New is a client of the gateway at base (scheme, host and port) that sends
// token as its bearer token and fails t on any call that goes wrong.
func New(t testing.TB, base, token string) *Client {
	return &Client{t: t, base: base, token: token}
}

func (c *Client) request(ctx context.Context, method, path string, body any) *http.Request {
	c.t.Helper()
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			c.t.Fatal(err)
		}
		rd = strings.NewReader(string(b))
	}
	req, err := http.NewRequestWithContext(ctx, method, c.base+path, rd)
	if err != nil {
		c.t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+c.token)
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	return req
}

// Do sends a request that must succeed and decodes its answer into out
// (nil: the answer is not read).
func (c *Client) Do(method, path string, body, out any) {
	c.t.Helper()
	resp, err := http.DefaultClient.Do(c.request(c.t.Context(), method, path, body))
	if err != nil {
		c.t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK {
		c.t.Fatalf("%s %s: %s %s", method, path, resp.Status, b)
	}
	if out != nil {
		if err := json.Unmarshal(b, out); err != nil {
			c.t.Fatalf("%s %s: %v: %s", method, path, err, b)
		}
	}
}

// Message is a thread message as GET /threads/{id} gives it.
type Message struct {
	Role       string `json:"role"`
	Content    string `json:"content"`
	ToolCallID string `json:"tool_call_id"`
	Name       string `json:"name"`
	ToolCalls  []struct {
		ID   string `json:"id"`
		Name string `json:"name"`
	} `json:"tool_calls"`
}

// Thread is the messages of the thread id.
func (c *Client) Thread(id string) []Message {
	c.t.Helper()
	var resp struct {
		Thread struct {
			Messages []Message `json:"messages"`
		} `json:"thread"`
	}
	c.Do("GET", "/threads/"+id, nil, &resp)
	return resp.Thread.Messages
}

// CheckPaired fails t when an assistant's tool call has no result, or a
// result answers no call: providers refuse such a history.
func CheckPaired(t testing.TB, msgs []Message) {
	t.Helper()
	calls := map[string]string{}
	for _, m := range msgs {
		for _, tc := range m.ToolCalls {
			calls[tc.ID] = tc.Name
		}
		if m.Role == "tool" {
			if _, ok := calls[m.ToolCallID]; !ok {
				t.Fatalf("tool result %q answers no call", m.ToolCallID)
			}
			delete(calls, m.ToolCallID)
		}
	}
	if len(calls) > 0 {
		t.Fatalf("tool calls without a result: %v", calls)
	}
}

// HasToolResult reports whether msgs hold a result of the tool.
func HasToolResult(msgs []Message, tool string) bool {
	return slices.ContainsFunc(msgs, func(m Message) bool { return m.Role == "tool" && m.Name == tool })
}

// Event is one Server-Sent Event.
type Event struct {
	Type string // the event field
	Data string
}

// Str is a top-level string field of the event's JSON data ("" when there is
// none).
func (e Event) Str(field string) string {
	var m map[string]any
	_ = json.Unmarshal([]byte(e.Data), &m)
	s, _ := m[field].(string)
	return s
}

// Stream reads the events of one response.
type Stream struct {
	r *bufio.Reader
}

// SSE opens an event stream, which must answer 200, closed when the test
// ends.
func (c *Client) SSE(ctx context.Context, method, path string, body any) *Stream {
	c.t.Helper()
	req := c.request(ctx, method, path, body)
	req.Header.Set("Accept", "text/event-stream")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		c.t.Fatal(err)
	}
	c.t.Cleanup(func() { resp.Body.Close() })
	if resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(resp.Body)
		c.t.Fatalf("%s %s: %s %s", method, path, resp.Status, b)
	}
	return &Stream{r: bufio.NewReaderSize(resp.Body, 64<<10)}
}

// Next returns the next event (comments and heartbeats skipped), or an
// error at the end of the stream.
func (s *Stream) Next() (Event, error) {
	var ev Event
	for {
		line, err := s.r.ReadString('\n')
		if err != nil {
			if err == io.EOF {
				err = errors.New("end of stream")
			}
			return ev, err
		}
		line = strings.TrimRight(line, "\r\n")
		switch {
		case line == "":
			if ev.Type != "" || ev.Data != "" {
				return ev, nil
			}
		case strings.HasPrefix(line, "event:"):
			ev.Type = strings.TrimSpace(strings.TrimPrefix(line, "event:"))
		case strings.HasPrefix(line, "data:"):
			ev.Data += strings.TrimPrefix(strings.TrimPrefix(line, "data:"), " ")
		}
	}
}
