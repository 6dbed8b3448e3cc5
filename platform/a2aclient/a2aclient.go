// Package a2aclient calls a remote Agent2Agent agent (A2A 0.3, JSON-RPC
// binding) with one text message and returns its task's final text: the
// client side of Wick's A2A sub-agents. It streams (message/stream), so it
// learns the task's id at once and can cancel the remote task
// (tasks/cancel) when the caller gives up, and it bounds what it reads.
package a2aclient

import (
	"bufio"
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"
)

// Defaults of a Client; each has an option.
const (
	// DefaultMaxBytes bounds everything one call reads from the remote
	// agent, so that an endless or huge stream cannot fill the caller's
	// memory.
	DefaultMaxBytes = 4 << 20
	// DefaultCancelTimeout bounds the tasks/cancel sent after the caller
	// gave up: its own context is already done by then.
	DefaultCancelTimeout = 5 * time.Second
)

// Task states of A2A 0.3 that end a task.
const (
	StateCompleted     = "completed"
	StateCanceled      = "canceled"
	StateFailed        = "failed"
	StateRejected      = "rejected"
	StateInputRequired = "input-required"
	StateAuthRequired  = "auth-required"
)

// Errors of a call, wrapped with what the remote agent said.
var (
	// ErrRemote is a JSON-RPC error object of the remote agent.
	ErrRemote = errors.New("the A2A agent answered an error")
	// ErrTaskFailed is a task that ended other than completed.
	ErrTaskFailed = errors.New("the A2A agent's task did not complete")
	// ErrProtocol is an answer that does not follow the protocol.
	ErrProtocol = errors.New("the A2A agent's answer does not follow the protocol")
	// ErrTooLarge is an answer past the client's bound.
	ErrTooLarge = errors.New("the A2A agent's answer is larger than its bound")
)

// Client calls remote A2A agents.
type Client struct {
	http          *http.Client
	maxBytes      int64
	cancelTimeout time.Duration
}

// Option configures a Client.
type Option func(*Client)

// WithMaxBytes bounds what one call reads (default DefaultMaxBytes).
func WithMaxBytes(n int64) Option {
	return func(c *Client) {
		if n > 0 {
			c.maxBytes = n
		}
	}
}

// WithCancelTimeout bounds the tasks/cancel of an abandoned call.
func WithCancelTimeout(d time.Duration) Option {
	return func(c *Client) {
		if d > 0 {
			c.cancelTimeout = d
		}
	}
}

// New returns a client that sends its requests with hc, which decides
// where they may go (the agent service gives it the tool network guard's
// client); nil uses http.DefaultClient.
func New(hc *http.Client, opts ...Option) *Client {
	if hc == nil {
		hc = http.DefaultClient
	}
	c := &Client{http: hc, maxBytes: DefaultMaxBytes, cancelTimeout: DefaultCancelTimeout}
	for _, o := range opts {
		o(c)
	}
	return c
}

// Result is what a completed task answered.
type Result struct {
	// TaskID and ContextID name the remote task and its conversation.
	TaskID, ContextID string
	// Text is the task's final text: its completed status message, or
	// else its last artifact's text parts.
	Text string
}

// Send sends text to the agent at url (its JSON-RPC endpoint) with token
// as bearer (none when empty) and waits for the task to end. When ctx
// ends first, the remote task is cancelled (tasks/cancel), best effort.
func (c *Client) Send(ctx context.Context, url, token, text string) (*Result, error) {
	params := map[string]any{"message": map[string]any{
		"kind": "message", "role": "user", "messageId": newID(),
		"parts": []any{map[string]any{"kind": "text", "text": text}},
	}}
	resp, err := c.post(ctx, url, token, "message/stream", params, "text/event-stream")
	if err != nil {
		return nil, err
	}
	defer func() { _ = resp.Body.Close() }()
	var st stream
	body := &limited{r: resp.Body, left: c.maxBytes}
	// A read cut at the bound ends the scan with a partial frame, whose
	// own error would hide why.
	failed := func(err error) error {
		if body.left <= 0 {
			err = fmt.Errorf("%w (%d bytes)", ErrTooLarge, c.maxBytes)
		}
		return c.fail(ctx, url, token, &st, err)
	}
	if ct := resp.Header.Get("Content-Type"); !strings.HasPrefix(ct, "text/event-stream") {
		// An agent may answer message/stream with one JSON-RPC response,
		// an error above all.
		raw, err := io.ReadAll(body)
		if err == nil {
			err = st.frame(raw)
		}
		if err != nil {
			return nil, failed(err)
		}
		return st.finish(nil)
	}
	sc := bufio.NewScanner(body)
	sc.Buffer(make([]byte, 0, 64<<10), int(min(c.maxBytes, 1<<30)))
	var data bytes.Buffer
	for sc.Scan() {
		line := sc.Bytes()
		switch {
		case bytes.HasPrefix(line, []byte("data:")):
			data.Write(bytes.TrimPrefix(bytes.TrimPrefix(line, []byte("data:")), []byte(" ")))
		case len(line) == 0 && data.Len() > 0:
			if err := st.frame(data.Bytes()); err != nil {
				return nil, failed(err)
			}
			data.Reset()
			if st.final {
				return st.finish(nil)
			}
		}
	}
	if data.Len() > 0 {
		if err := st.frame(data.Bytes()); err != nil {
			return nil, failed(err)
		}
	}
	err = sc.Err()
	if err == nil && !st.final {
		err = fmt.Errorf("%w: the stream ended before the task did", ErrProtocol)
	}
	if err != nil {
		return nil, failed(err)
	}
	return st.finish(nil)
}

// fail cancels the remote task when the call was given up on, and returns
// err, or ctx's error when that is why the call ended.
func (c *Client) fail(ctx context.Context, url, token string, st *stream, err error) error {
	if err == nil {
		return nil
	}
	if ctx.Err() != nil && st.taskID != "" && !st.final {
		cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), c.cancelTimeout)
		defer cancel()
		if resp, cerr := c.post(cctx, url, token, "tasks/cancel", map[string]any{"id": st.taskID}, "application/json"); cerr == nil {
			_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
			_ = resp.Body.Close()
		}
		return fmt.Errorf("cancelled task %s: %w", st.taskID, context.Cause(ctx))
	}
	if ctx.Err() != nil {
		return context.Cause(ctx)
	}
	return err
}

// post sends one JSON-RPC request and returns the response of a 2xx
// status; any other status is an error with the start of its body.
func (c *Client) post(ctx context.Context, url, token, method string, params any, accept string) (*http.Response, error) {
	body, err := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": newID(), "method": method, "params": params})
	if err != nil {
		return nil, err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(body))
	if err != nil {
		return nil, err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", accept)
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := c.http.Do(req)
	if err != nil {
		return nil, err
	}
	if resp.StatusCode/100 != 2 {
		defer func() { _ = resp.Body.Close() }()
		head, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
		return nil, fmt.Errorf("%w: HTTP %s: %s", ErrRemote, resp.Status, strings.TrimSpace(string(head)))
	}
	return resp, nil
}

// stream is what the frames of one call told so far.
type stream struct {
	taskID, contextID string
	state             string
	statusText        string
	artifact          strings.Builder
	final             bool
}

// event is a JSON-RPC response whose result is a task, a status or
// artifact update, or a message, told apart by kind.
type event struct {
	Result *struct {
		Kind      string     `json:"kind"`
		ID        string     `json:"id"`
		TaskID    string     `json:"taskId"`
		ContextID string     `json:"contextId"`
		Status    *status    `json:"status"`
		Final     bool       `json:"final"`
		Artifact  *artifact  `json:"artifact"`
		Artifacts []artifact `json:"artifacts"`
		Append    bool       `json:"append"`
		Parts     []part     `json:"parts"`
	} `json:"result"`
	Error *struct {
		Code    int    `json:"code"`
		Message string `json:"message"`
	} `json:"error"`
}

type status struct {
	State   string `json:"state"`
	Message *struct {
		Parts []part `json:"parts"`
	} `json:"message"`
}

type artifact struct {
	Parts []part `json:"parts"`
}

type part struct {
	Kind string `json:"kind"`
	Text string `json:"text"`
}

func texts(parts []part) string {
	var b strings.Builder
	for _, p := range parts {
		if p.Kind == "text" {
			b.WriteString(p.Text)
		}
	}
	return b.String()
}

// frame applies one JSON-RPC response of the stream.
func (s *stream) frame(raw []byte) error {
	var ev event
	if err := json.Unmarshal(raw, &ev); err != nil {
		return fmt.Errorf("%w: %v", ErrProtocol, err)
	}
	if ev.Error != nil {
		return fmt.Errorf("%w: %s (code %d)", ErrRemote, ev.Error.Message, ev.Error.Code)
	}
	r := ev.Result
	if r == nil {
		return fmt.Errorf("%w: a response with neither result nor error", ErrProtocol)
	}
	switch r.Kind {
	case "task":
		s.taskID, s.contextID = r.ID, r.ContextID
		if len(r.Artifacts) > 0 {
			s.artifact.Reset()
			s.artifact.WriteString(texts(r.Artifacts[len(r.Artifacts)-1].Parts))
		}
		if r.Status != nil {
			s.setStatus(r.Status, terminal(r.Status.State))
		}
	case "status-update":
		s.taskID, s.contextID = r.TaskID, r.ContextID
		if r.Status != nil {
			s.setStatus(r.Status, r.Final || terminal(r.Status.State))
		}
	case "artifact-update":
		s.taskID, s.contextID = r.TaskID, r.ContextID
		if !r.Append {
			s.artifact.Reset()
		}
		if r.Artifact != nil {
			s.artifact.WriteString(texts(r.Artifact.Parts))
		}
	case "message":
		// An agent that answers without a task answers with its message.
		s.state, s.statusText, s.final = StateCompleted, texts(r.Parts), true
	default:
		return fmt.Errorf("%w: a result of kind %q", ErrProtocol, r.Kind)
	}
	return nil
}

func (s *stream) setStatus(st *status, final bool) {
	s.state = st.State
	if st.Message != nil {
		s.statusText = texts(st.Message.Parts)
	}
	s.final = s.final || final
}

// finish turns the ended stream into the call's result.
func (s *stream) finish(err error) (*Result, error) {
	if err != nil {
		return nil, err
	}
	switch s.state {
	case StateCompleted:
		text := s.statusText
		if text == "" {
			text = s.artifact.String()
		}
		return &Result{TaskID: s.taskID, ContextID: s.contextID, Text: text}, nil
	case StateInputRequired, StateAuthRequired:
		return nil, fmt.Errorf("%w: task %s is %s, and a sub-agent cannot be answered: %s", ErrTaskFailed, s.taskID, s.state, s.statusText)
	default:
		return nil, fmt.Errorf("%w: task %s is %s: %s", ErrTaskFailed, s.taskID, s.state, s.statusText)
	}
}

func terminal(state string) bool {
	switch state {
	case StateCompleted, StateCanceled, StateFailed, StateRejected, StateInputRequired, StateAuthRequired:
		return true
	}
	return false
}

// limited fails a read past its bound instead of reading on.
type limited struct {
	r    io.Reader
	left int64
}

func (l *limited) Read(p []byte) (int, error) {
	if l.left <= 0 {
		return 0, ErrTooLarge
	}
	if int64(len(p)) > l.left {
		p = p[:l.left]
	}
	n, err := l.r.Read(p)
	l.left -= int64(n)
	return n, err
}

func newID() string {
	var b [12]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}
