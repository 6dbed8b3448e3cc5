package a2a_test

import (
	"context"
	"errors"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"

	"github.com/wick-agent/wick/platform/a2aclient"
	"github.com/wick-agent/wick/services/gateway/internal/a2a"
)

// TestClientAgainstServer drives Wick's A2A client (what a remote A2A
// sub-agent uses) against Wick's own A2A handler.
func TestClientAgainstServer(t *testing.T) {
	t.Parallel()
	ts := newServer(t)
	tests := []struct {
		name, agent, text string
		want              string
		wantErr           error
		errHas            string
	}{
		{name: "reply", agent: "helper", text: "hi", want: "Hello"},
		{name: "final answer after a tool", agent: "helper", text: "tool", want: "b"},
		{name: "failed task", agent: "helper", text: "fail", wantErr: a2aclient.ErrTaskFailed, errHas: "the model failed"},
		{name: "input required", agent: "helper", text: "ask", wantErr: a2aclient.ErrTaskFailed, errHas: "input-required"},
		{name: "unknown agent", agent: "nope", text: "hi", wantErr: a2aclient.ErrRemote, errHas: "not found"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			c := a2aclient.New(ts.Client())
			res, err := c.Send(t.Context(), ts.URL+a2a.Prefix+tt.agent, "alice", tt.text)
			if tt.wantErr != nil {
				if !errors.Is(err, tt.wantErr) || !strings.Contains(err.Error(), tt.errHas) {
					t.Fatalf("err = %v, want %v containing %q", err, tt.wantErr, tt.errHas)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if res.Text != tt.want || !strings.HasPrefix(res.TaskID, "run_") || !strings.HasPrefix(res.ContextID, "th_") {
				t.Fatalf("result = %+v, want text %q", res, tt.want)
			}
		})
	}
}

// TestClientCancelsRemoteTask gives up on a call whose task is running:
// the client cancels the remote task with tasks/cancel.
func TestClientCancelsRemoteTask(t *testing.T) {
	t.Parallel()
	ts := newServer(t)
	started := make(chan struct{})
	hc := &http.Client{Transport: firstByte{next: ts.Client().Transport, seen: started}}
	ctx, cancel := context.WithCancel(t.Context())
	t.Cleanup(cancel)
	go func() {
		<-started
		cancel()
	}()
	_, err := a2aclient.New(hc).Send(ctx, ts.URL+a2a.Prefix+"helper", "alice", "slow")
	if !errors.Is(err, context.Canceled) || !strings.Contains(err.Error(), "cancelled task run_") {
		t.Fatalf("err = %v, want the cancelled task named", err)
	}
	id := strings.TrimSuffix(strings.Fields(strings.SplitN(err.Error(), "cancelled task ", 2)[1])[0], ":")
	if tk := task(t, call(t, ts, "alice", "helper", "tasks/get", map[string]any{"id": id})); tk.Status.State != a2a.StateCanceled {
		t.Fatalf("remote task %s is %s, want %s", id, tk.Status.State, a2a.StateCanceled)
	}
}

// firstByte closes seen when the first response body sends its first
// bytes: the task has started.
type firstByte struct {
	next http.RoundTripper
	seen chan struct{}
}

func (f firstByte) RoundTrip(r *http.Request) (*http.Response, error) {
	resp, err := f.next.RoundTrip(r)
	if err != nil {
		return nil, err
	}
	resp.Body = &notifyBody{ReadCloser: resp.Body, seen: f.seen}
	return resp, nil
}

type notifyBody struct {
	io.ReadCloser
	seen chan struct{}
	once sync.Once
}

func (b *notifyBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	if n > 0 {
		b.once.Do(func() {
			select {
			case <-b.seen:
			default:
				close(b.seen)
			}
		})
	}
	return n, err
}
